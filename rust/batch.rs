//! Batched Reciprocal Rank Fusion over (queries × candidates) matrices of i64 ids, in plain Rust.
//!
//! Row q of the output is [`crate::fusion`]'s RRF of row q of every list, exactly: the same
//! interleaved scan (new key ids in first-appearance order), the same canonical sums, the same
//! order. One thing is added: an entry equal to the pad value is a hole, never a key, and skipping
//! it does not shift the ranks behind it (FAISS pads its (Q, k) id matrices with -1).
//!
//! The per-row work runs in a reusable [`Workspace`] (no allocation once it has grown), rows are
//! fused in parallel chunks on a [`crate::pool`] pool, and the output is written in two phases:
//! [`fuse_batch`] fuses every row into compact per-chunk buffers (the width of the output, the
//! largest count, is only known then), [`Fused::write`] fills caller-provided arrays.

use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

use hashbrown::HashSet;
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::fusion::{
    self, canonical_sum, contribution, returned_score, Duplicates, Hasher, Occurrence, Params,
    TieBreak,
};
use crate::memory;
use crate::pool;

/// One list of a batch: a (rows, cols) matrix of i64 ids in row-major order.
#[derive(Clone, Copy, Debug)]
pub struct IdMatrix<'a> {
    data: &'a [i64],
    rows: usize,
    cols: usize,
}

impl<'a> IdMatrix<'a> {
    /// `None` unless `data` holds exactly `rows * cols` ids.
    pub fn new(data: &'a [i64], rows: usize, cols: usize) -> Option<Self> {
        (rows.checked_mul(cols)? == data.len()).then_some(IdMatrix { data, rows, cols })
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn cols(&self) -> usize {
        self.cols
    }

    #[inline]
    pub fn row(&self, q: usize) -> &'a [i64] {
        &self.data[q * self.cols..(q + 1) * self.cols]
    }
}

/// The parameters shared by every row (or query) of a call, checked.
#[derive(Clone, Debug)]
pub struct RowParams {
    pub k: f64,
    pub window: Option<usize>,
    pub duplicates: Duplicates,
    pub tie_break: TieBreak,
    pub offset: usize,
    pub limit: Option<usize>,
    pub min_score: Option<f64>,
    /// Entries equal to it are holes (rrf_batch); `None` for plain lists (rrf_many).
    pub pad: Option<i64>,
}

impl RowParams {
    pub fn new(params: &Params, pad: Option<i64>) -> Self {
        RowParams {
            k: params.k,
            window: params.window,
            duplicates: params.duplicates,
            tie_break: params.tie_break,
            offset: params.offset,
            limit: params.limit,
            min_score: params.min_score,
            pad,
        }
    }
}

/// Scores map to u64 sort keys that order like the scores, descending (finite scores only).
#[inline]
fn descending_bits(score: f64) -> u64 {
    let bits = (score + 0.0).to_bits(); // + 0.0 turns -0.0 into 0.0: they tie, as in `rank`
    let ascending = if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    };
    !ascending
}

/// i64 keys map to u64 sort keys that order like the keys.
#[inline]
fn flip(key: i64) -> u64 {
    (key as u64) ^ (1 << 63)
}

/// An open-addressing table i64 key -> dense id for one row at a time: linear probing at most
/// half full, and a generation stamp per slot so that starting a new row costs nothing. The hash
/// is a folded multiply of the key with a per-table random seed (foldhash's mixing), so a
/// crafted set of ids cannot be made to collide without knowing the seed. Each slot also has 8
/// bits for its key's seen-lists bits (the dense scans keep them there, in the cache line they
/// have just read, rather than in a second array).
struct IdTable {
    slots: Vec<Slot>,
    generation: u32,
    mask: usize,
    seed: u64,
}

#[derive(Clone, Copy, Default)]
struct Slot {
    key: i64,
    id: u32,
    /// generation << 8 | seen-lists bits.
    tag: u32,
}

/// Generations are 24 bits (the tag's upper bits); at the wrap every slot is cleared.
const GENERATIONS: u32 = 1 << 24;

impl Default for IdTable {
    fn default() -> Self {
        use std::hash::BuildHasher;
        IdTable {
            slots: Vec::new(),
            generation: 0,
            mask: 0,
            seed: Hasher::default().hash_one(0x5EED_u64) | 1,
        }
    }
}

impl IdTable {
    /// Empties the table for at most `n` keys.
    fn reset(&mut self, n: usize) {
        let capacity = (n.max(8) * 3 / 2).next_power_of_two();
        if capacity > self.slots.len() {
            self.slots = vec![Slot::default(); capacity];
            self.generation = 0;
        }
        self.generation += 1;
        if self.generation == GENERATIONS {
            self.slots.fill(Slot::default());
            self.generation = 1;
        }
        // A smaller mask for a small row keeps its probes in a few cache lines.
        self.mask = capacity - 1;
    }

    #[inline]
    fn slot_of(&self, key: i64) -> usize {
        let m = ((key as u64) ^ self.seed) as u128 * 0x9E37_79B9_7F4A_7C15_u128;
        ((m as u64) ^ ((m >> 64) as u64)) as usize & self.mask
    }

    /// The id of `key`, inserting it with id `next` when it is new.
    #[inline]
    fn get_or_insert(&mut self, key: i64, next: u32) -> u32 {
        self.slot_of_key(key, next).1
    }

    /// (slot, id) of `key`, inserting it with id `next` and no seen-lists bits when it is new.
    #[inline]
    fn slot_of_key(&mut self, key: i64, next: u32) -> (usize, u32) {
        let mut i = self.slot_of(key);
        loop {
            let s = self.slots[i];
            let empty = s.tag >> 8 != self.generation;
            // Taken unless the slot holds another key; the slot is written either way
            // (unchanged when the key is there).
            if empty | (s.key == key) {
                let (id, tag) = if empty {
                    (next, self.generation << 8)
                } else {
                    (s.id, s.tag)
                };
                self.slots[i] = Slot { key, id, tag };
                return (i, id);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// The seen-lists bits of the key in `slot`.
    #[inline]
    fn seen(&self, slot: usize) -> u32 {
        self.slots[slot].tag & 0xFF
    }

    #[inline]
    fn set_seen(&mut self, slot: usize, seen: u32) {
        self.slots[slot].tag = self.generation << 8 | seen;
    }

    /// The id of a key that is in the table.
    fn get(&self, key: i64) -> u32 {
        let mut i = self.slot_of(key);
        loop {
            let s = &self.slots[i];
            if s.tag >> 8 != self.generation {
                debug_assert!(false, "get() of a key that is not in the table");
                return 0;
            }
            if s.key == key {
                return s.id;
            }
            i = (i + 1) & self.mask;
        }
    }
}

#[derive(Clone, Copy)]
struct KeyInfo {
    key: i64,
    /// Bit `slot` set: counted in the `slot`-th list read (when at most 64 lists are read).
    seen: u64,
    first: (u32, u32),
}

/// The buffers of one row's fusion, reused from row to row.
#[derive(Default)]
pub struct Workspace {
    ids: IdTable,
    read: Vec<usize>,
    /// Key id -> the key, the lists (slots among the lists read) it was counted in, and its
    /// first occurrence in scan order. Only the first `n_keys` entries are the row's: the
    /// buffer is longer, so that the scan can write the next entry before it knows whether
    /// the key is new (no branch to mispredict).
    keys: Vec<KeyInfo>,
    n_keys: usize,
    /// Whether the dense scan records each contribution's (list, position): only traces read
    /// them.
    keep_occurrences: bool,
    seen_set: HashSet<(u32, u32), Hasher>,
    occurrences: Vec<Occurrence>,
    offsets: Vec<u32>,
    cursor: Vec<u32>,
    grouped: Vec<Occurrence>,
    values: Vec<f64>,
    scores: Vec<f64>,
    /// With normalize=True, key id -> the canonical sum before division: hits are ordered by
    /// it, as `fusion::rank` does, so normalising never reorders. Empty otherwise.
    sums: Vec<f64>,
    order: Vec<u128>,
    packed: Vec<u64>,
    page: Vec<u32>,
    per_list: Vec<(u32, u32, f64)>,
    /// Dense mode (each key counted at most once per list, few lists): per key `stride` slots
    /// for its contributions and their (list, position), filled in scan order, instead of
    /// occurrences grouped by a counting sort.
    dense: bool,
    stride: usize,
    slot_values: Vec<f64>,
    slot_occurrences: Vec<(u32, u32)>,
}

/// Dense mode is used with at most this many lists read (and duplicates "first" or "error").
const DENSE_MAX_LISTS: usize = 8;

/// The number of bits set in the seen-lists bits of a key in dense mode (below 2^8): a table,
/// since the portable x86-64 target has no popcount instruction and its emulation is slow.
#[inline]
fn ones(seen: u64) -> usize {
    const ONES: [u8; 256] = {
        let mut t = [0u8; 256];
        let mut i = 0;
        while i < 256 {
            t[i] = (i as u32).count_ones() as u8;
            i += 1;
        }
        t
    };
    ONES[(seen & 0xFF) as usize] as usize
}

impl Workspace {
    /// A workspace for rows whose traces are (`trace`) or are not read: without traces the
    /// dense scan does not record where each contribution came from.
    pub fn for_trace(trace: bool) -> Self {
        Workspace {
            keep_occurrences: trace,
            ..Self::default()
        }
    }

    /// Fuses one row: `rows[i]` is list i's row (any length), `weights[i]` its weight. Afterwards
    /// [`Workspace::page`] holds the key ids of the page, best first. Errors as `fusion`: a
    /// repeated key with `duplicates = Error` ([`Error::DuplicateKey`]), a score that is not
    /// finite ([`Error::NonFiniteScore`]), both located by (list, position) in `rows`.
    pub fn fuse_row(
        &mut self,
        rows: &[&[i64]],
        weights: &[f64],
        normalizer: Option<f64>,
        p: &RowParams,
    ) -> Result<()> {
        self.fuse_row_with(rows, weights, normalizer, p, None)
    }

    /// [`Workspace::fuse_row`] with, optionally, every contribution computed in advance:
    /// `table[list][position] == contribution(weights[list], k, position)` for every position
    /// read (the same expression, so the same bits).
    pub fn fuse_row_with(
        &mut self,
        rows: &[&[i64]],
        weights: &[f64],
        normalizer: Option<f64>,
        p: &RowParams,
        table: Option<&[Vec<f64>]>,
    ) -> Result<()> {
        self.scan(rows, weights, p, table)?;
        self.score(weights, p.k, normalizer)?;
        self.rank(p);
        Ok(())
    }

    fn scan(
        &mut self,
        rows: &[&[i64]],
        weights: &[f64],
        p: &RowParams,
        table: Option<&[Vec<f64>]>,
    ) -> Result<()> {
        self.n_keys = 0;
        self.seen_set.clear();
        self.occurrences.clear();
        self.read.clear();
        self.read
            .extend((0..rows.len()).filter(|&i| weights[i] != 0.0));
        let mut depth = self.read.iter().map(|&i| rows[i].len()).max().unwrap_or(0);
        if let Some(w) = p.window {
            depth = depth.min(w);
        }
        let most_keys: usize = self.read.iter().map(|&i| rows[i].len().min(depth)).sum();
        self.ids.reset(most_keys);
        if self.keys.len() <= most_keys {
            self.keys.resize(
                most_keys + 1,
                KeyInfo {
                    key: 0,
                    seen: 0,
                    first: (0, 0),
                },
            );
        }
        let (has_pad, pad) = (p.pad.is_some(), p.pad.unwrap_or(0));
        let check = p.duplicates != Duplicates::Sum;
        let bits = self.read.len() <= 64;
        self.dense = check && self.read.len() <= DENSE_MAX_LISTS;
        self.stride = self.read.len();
        if self.dense {
            let room = most_keys * self.stride;
            if self.slot_values.len() < room {
                self.slot_values.resize(room, 0.0);
            }
            if self.keep_occurrences && self.slot_occurrences.len() < room {
                self.slot_occurrences.resize(room, (0, 0));
            }
            return if self.stride == 2 {
                self.scan_dense::<true>(rows, weights, p, table, depth)
            } else {
                self.scan_dense::<false>(rows, weights, p, table, depth)
            };
        }
        for position in 0..depth {
            for (slot, &list) in self.read.iter().enumerate() {
                let row = rows[list];
                let Some(&key) = row.get(position) else {
                    continue;
                };
                if has_pad && key == pad {
                    continue;
                }
                let next = self.n_keys as u32;
                let id = self.ids.get_or_insert(key, next);
                if id == next {
                    self.keys[self.n_keys] = KeyInfo {
                        key,
                        seen: 0,
                        first: (list as u32, position as u32),
                    };
                    self.n_keys += 1;
                }
                if check {
                    let repeated = if bits {
                        let mask = 1u64 << slot;
                        let b = &mut self.keys[id as usize].seen;
                        let repeated = *b & mask != 0;
                        *b |= mask;
                        repeated
                    } else {
                        !self.seen_set.insert((id, slot as u32))
                    };
                    if repeated {
                        if p.duplicates == Duplicates::Error {
                            return Err(Error::DuplicateKey {
                                list_index: list,
                                position,
                            });
                        }
                        continue;
                    }
                }
                self.occurrences.push(Occurrence {
                    key: id,
                    list: list as u32,
                    position: position as u32,
                });
            }
        }
        Ok(())
    }

    /// The scan in dense mode: at most 8 lists read, each key counted at most once per list.
    /// A key's seen-lists bits live in its hash slot (in the cache line just read) and also
    /// count its contributions (their popcount), so its contribution slots are written in
    /// place. Whether a key is new is random in fused lists, so the loop has no branch on it:
    /// the next key's entry is written every time and counts only when it is new.
    ///
    /// `PAIR`, exactly two lists read (hybrid search's lexical + vector, the commonest case),
    /// is trimmed further: a new key's second slot is written +0.0, which
    /// [`Workspace::score`] may add (see there), instead of keeping the bits per key for
    /// [`Workspace::dense_count`] (kept all the same with traces, which read them).
    fn scan_dense<const PAIR: bool>(
        &mut self,
        rows: &[&[i64]],
        weights: &[f64],
        p: &RowParams,
        table: Option<&[Vec<f64>]>,
        depth: usize,
    ) -> Result<()> {
        let (has_pad, pad) = (p.pad.is_some(), p.pad.unwrap_or(0));
        let (k, stride) = (p.k, self.stride);
        let keep_bits = !PAIR || self.keep_occurrences;
        let keep_occurrences = self.keep_occurrences;
        // The lists read, in a fixed-size array: with `PAIR` the compiler knows there are two.
        let n_read = if PAIR { 2 } else { self.read.len() };
        let mut read = [0usize; DENSE_MAX_LISTS];
        read[..n_read].copy_from_slice(&self.read[..n_read]);
        let mut n_keys = 0;
        for position in 0..depth {
            for (slot, &list) in read[..n_read].iter().enumerate() {
                let Some(&key) = rows[list].get(position) else {
                    continue;
                };
                if has_pad && key == pad {
                    continue;
                }
                let mask = 1 << slot;
                let next = n_keys as u32;
                let (at_slot, id) = self.ids.slot_of_key(key, next);
                let new = id == next;
                self.keys[n_keys] = KeyInfo {
                    key,
                    seen: 0,
                    first: (list as u32, position as u32),
                };
                n_keys += new as usize;
                let seen = self.ids.seen(at_slot);
                if seen & mask != 0 {
                    if p.duplicates == Duplicates::Error {
                        return Err(Error::DuplicateKey {
                            list_index: list,
                            position,
                        });
                    }
                    continue;
                }
                self.ids.set_seen(at_slot, seen | mask);
                let c = match table {
                    Some(t) => t[list][position],
                    None => contribution(weights[list], k, position as u32),
                };
                // With two lists a key not new has exactly the other list's bit.
                let filled = if PAIR {
                    !new as usize
                } else {
                    ones(u64::from(seen))
                };
                let at = id as usize * stride + filled;
                if PAIR {
                    // New: [c, +0.0]. Seen in the other list already: [first, c].
                    self.slot_values[at - filled + 1] = if new { 0.0 } else { c };
                }
                self.slot_values[at] = c;
                if keep_bits {
                    self.keys[id as usize].seen = u64::from(seen | mask);
                }
                if keep_occurrences {
                    self.slot_occurrences[at] = (list as u32, position as u32);
                }
            }
        }
        self.n_keys = n_keys;
        Ok(())
    }

    /// In dense mode, how many contributions key `id` has.
    #[inline]
    fn dense_count(&self, id: usize) -> usize {
        ones(self.keys[id].seen)
    }

    fn score(&mut self, weights: &[f64], k: f64, normalizer: Option<f64>) -> Result<()> {
        let n_keys = self.n_keys;
        self.scores.clear();
        self.sums.clear();
        if self.dense && self.stride == 2 {
            // Two lists (`scan_dense::<true>`): a key has one or two contributions, at random. Without
            // a branch on which: a missing second one is +0.0, and the canonical sum of
            // (a, +0.0) is bit for bit that of (a) (a sum started at +0.0 is never -0.0, so
            // adding +0.0 changes nothing).
            for key in 0..n_keys {
                let at = key * 2;
                let (a, b) = (self.slot_values[at], self.slot_values[at + 1]);
                let (lo, hi) = if b < a { (b, a) } else { (a, b) };
                self.push_score(key, 0.0 + lo + hi, normalizer)?;
            }
            return Ok(());
        }
        if self.dense {
            for key in 0..n_keys {
                let at = key * self.stride;
                let n = self.dense_count(key);
                let values = &mut self.slot_values[at..at + n];
                let s = match values {
                    [a] => 0.0 + *a,
                    _ => canonical_sum(values),
                };
                self.push_score(key, s, normalizer)?;
            }
            return Ok(());
        }
        // Group occurrences by key with a counting sort (stable: scan order within a key).
        self.offsets.clear();
        self.offsets.resize(n_keys + 1, 0);
        for o in &self.occurrences {
            self.offsets[o.key as usize + 1] += 1;
        }
        for i in 0..n_keys {
            self.offsets[i + 1] += self.offsets[i];
        }
        self.cursor.clear();
        self.cursor.extend_from_slice(&self.offsets[..n_keys]);
        self.grouped.clear();
        self.grouped.resize(
            self.occurrences.len(),
            Occurrence {
                key: 0,
                list: 0,
                position: 0,
            },
        );
        for o in &self.occurrences {
            let c = &mut self.cursor[o.key as usize];
            self.grouped[*c as usize] = *o;
            *c += 1;
        }
        for key in 0..n_keys {
            let occs = &self.grouped[self.offsets[key] as usize..self.offsets[key + 1] as usize];
            let s = match occs {
                [a] => 0.0 + contribution(weights[a.list as usize], k, a.position),
                _ => {
                    self.values.clear();
                    self.values.extend(
                        occs.iter()
                            .map(|o| contribution(weights[o.list as usize], k, o.position)),
                    );
                    canonical_sum(&mut self.values)
                }
            };
            self.push_score(key, s, normalizer)?;
        }
        Ok(())
    }

    /// Checks a key's score (and normalised score) finite, as `fusion::score` does.
    #[inline]
    fn push_score(&mut self, key: usize, sum: f64, normalizer: Option<f64>) -> Result<()> {
        let s = returned_score(sum, self.keys[key].first, normalizer)?;
        if normalizer.is_some() {
            self.sums.push(sum);
        }
        self.scores.push(s);
        Ok(())
    }

    fn rank(&mut self, p: &RowParams) {
        let n_keys = self.scores.len();
        if p.tie_break == TieBreak::BestRank && p.limit.is_none() && n_keys < 1 << 31 {
            return self.rank_all(p);
        }
        self.order.clear();
        let by = if self.sums.is_empty() {
            &self.scores
        } else {
            &self.sums
        };
        for (id, &s) in self.scores.iter().enumerate() {
            if p.min_score.is_some_and(|m| s < m) {
                continue;
            }
            let tie = match p.tie_break {
                TieBreak::BestRank => id as u64,
                TieBreak::Key => flip(self.keys[id].key),
            };
            self.order
                .push((descending_bits(by[id]) as u128) << 64 | tie as u128);
        }
        self.page.clear();
        let n = self.order.len();
        let end = p.limit.map_or(n, |l| p.offset.saturating_add(l).min(n));
        if p.offset >= end {
            return;
        }
        if end < n {
            self.order.select_nth_unstable(end - 1);
            self.order.truncate(end);
        }
        self.order.sort_unstable();
        for &e in &self.order[p.offset..] {
            let tie = e as u64;
            let id = match p.tie_break {
                TieBreak::BestRank => tie as u32,
                TieBreak::Key => self.ids.get((tie ^ (1 << 63)) as i64),
            };
            self.page.push(id);
        }
    }

    /// `rank` for the whole order with ties by first appearance: sorts u64 keys (the score's
    /// sort bits with the low bits replaced by the key id) rather than u128, then re-sorts, with
    /// the full score, each run of keys whose scores agree on every bit but those low ones.
    fn rank_all(&mut self, p: &RowParams) {
        let n = self.scores.len() as u64;
        let bits = (64 - n.leading_zeros()).max(1);
        let low = (1u64 << bits) - 1;
        self.page.clear();
        let mut order = std::mem::take(&mut self.order);
        let mut packed = std::mem::take(&mut self.packed);
        packed.clear();
        // Ordered by the sums (normalize=True) or the scores themselves; filtered by the scores.
        let by = if self.sums.is_empty() {
            &self.scores
        } else {
            &self.sums
        };
        for (id, &s) in self.scores.iter().enumerate() {
            if p.min_score.is_some_and(|m| s < m) {
                continue;
            }
            packed.push((descending_bits(by[id]) & !low) | id as u64);
        }
        packed.sort_unstable();
        // Usually the order by the high bits is already the order by the full scores (exact
        // ties are in id order by construction): one check of every neighbouring pair, with no
        // branch to mispredict, and the groups below are only walked when it fails.
        let full = |x: u64| descending_bits(by[(x & low) as usize]);
        let mut ordered = true;
        for pair in packed.windows(2) {
            ordered &= full(pair[0]) <= full(pair[1]);
        }
        if ordered {
            self.page
                .extend(packed.iter().skip(p.offset).map(|&x| (x & low) as u32));
            self.order = order;
            self.packed = packed;
            return;
        }
        let mut start = 0;
        while start < packed.len() {
            let head = packed[start] & !low;
            let mut end = start + 1;
            while end < packed.len() && packed[end] & !low == head {
                end += 1;
            }
            let exact_tie = || {
                let first = descending_bits(by[(packed[start] & low) as usize]);
                packed[start + 1..end]
                    .iter()
                    .all(|&x| descending_bits(by[(x & low) as usize]) == first)
            };
            if end - start > 1 && !exact_tie() {
                // Scores that differ only in the replaced low bits: sort them by the full score.
                order.clear();
                order.extend(packed[start..end].iter().map(|&x| {
                    let id = (x & low) as usize;
                    (descending_bits(by[id]) as u128) << 64 | id as u128
                }));
                order.sort_unstable();
                for (slot, &e) in packed[start..end].iter_mut().zip(&order) {
                    *slot = e as u64; // the id
                }
                for slot in &mut packed[start..end] {
                    *slot &= low;
                }
            } else {
                // One key, or keys of the very same score: already in id order.
                for slot in &mut packed[start..end] {
                    *slot &= low;
                }
            }
            start = end;
        }
        self.page
            .extend(packed.iter().skip(p.offset).map(|&id| id as u32));
        self.order = order;
        self.packed = packed;
    }

    /// The key ids of the page, best first.
    pub fn page(&self) -> &[u32] {
        &self.page
    }

    pub fn key(&self, id: u32) -> i64 {
        self.keys[id as usize].key
    }

    pub fn score_of(&self, id: u32) -> f64 {
        self.scores[id as usize]
    }

    /// (list, position) of the key's first occurrence in scan order.
    pub fn first_seen(&self, id: u32) -> (u32, u32) {
        self.keys[id as usize].first
    }

    /// The key's counted occurrences, in scan order (position, then list), appended to `out`.
    pub fn occurrences_into(&self, id: u32, out: &mut Vec<Occurrence>) {
        let id = id as usize;
        debug_assert!(
            self.keep_occurrences || !self.dense,
            "a workspace without traces"
        );
        if self.dense {
            let at = id * self.stride;
            out.extend(
                self.slot_occurrences[at..at + self.dense_count(id)]
                    .iter()
                    .map(|&(list, position)| Occurrence {
                        key: id as u32,
                        list,
                        position,
                    }),
            );
        } else {
            out.extend_from_slice(
                &self.grouped[self.offsets[id] as usize..self.offsets[id + 1] as usize],
            );
        }
    }

    /// Per list the key is in, ascending: (list, best rank, canonical sum of its contributions
    /// from that list), appended to `out`.
    pub fn per_list(&mut self, id: u32, weights: &[f64], k: f64, out: &mut Vec<(u32, u32, f64)>) {
        let entry = |(list, position): (u32, u32)| {
            (
                list,
                position + 1,
                contribution(weights[list as usize], k, position),
            )
        };
        self.per_list.clear();
        debug_assert!(
            self.keep_occurrences || !self.dense,
            "a workspace without traces"
        );
        let i = id as usize;
        if self.dense {
            let at = i * self.stride;
            let occs = &self.slot_occurrences[at..at + self.dense_count(i)];
            self.per_list.extend(occs.iter().map(|&o| entry(o)));
        } else {
            let occs = &self.grouped[self.offsets[i] as usize..self.offsets[i + 1] as usize];
            self.per_list
                .extend(occs.iter().map(|o| entry((o.list, o.position))));
        }
        // Stable: within a list, scan order is ascending rank, so the first is the best.
        self.per_list.sort_by_key(|e| e.0);
        let mut i = 0;
        while i < self.per_list.len() {
            let (list, rank, _) = self.per_list[i];
            let mut j = i + 1;
            while j < self.per_list.len() && self.per_list[j].0 == list {
                j += 1;
            }
            let c = if j == i + 1 {
                0.0 + self.per_list[i].2
            } else {
                self.values.clear();
                self.values.extend(self.per_list[i..j].iter().map(|e| e.2));
                canonical_sum(&mut self.values)
            };
            out.push((list, rank, c));
            i = j;
        }
    }
}

/// An error of [`fuse_batch`].
#[derive(Clone, Debug, PartialEq)]
pub enum BatchError {
    /// A bad argument, found before any row is fused.
    Argument(Error),
    /// The first row (in row order) that cannot be fused, and the key the error is about.
    Row {
        row: usize,
        error: Error,
        key: Option<i64>,
    },
}

impl BatchError {
    /// The message, as the Python reference words it: "row q: <rrf's message>".
    pub fn message(&self) -> String {
        match self {
            BatchError::Argument(e) => e.to_string(),
            BatchError::Row { row, error, key } => {
                let key = key.map(|k| k.to_string()).unwrap_or_default();
                format!("row {row}: {}", error.message_with_key(&key))
            }
        }
    }

    pub fn error(&self) -> &Error {
        match self {
            BatchError::Argument(e) | BatchError::Row { error: e, .. } => e,
        }
    }
}

impl From<Error> for BatchError {
    fn from(e: Error) -> Self {
        BatchError::Argument(e)
    }
}

/// The fused rows of one chunk, compact: `counts[r]` hits for row r, their ids and scores back
/// to back; with traces, per hit `trace_offsets` into (list, rank, contribution) entries.
#[derive(Default)]
struct Chunk {
    counts: Vec<usize>,
    ids: Vec<i64>,
    scores: Vec<f64>,
    trace_offsets: Vec<usize>,
    trace: Vec<(u32, u32, f64)>,
}

/// Every row fused, before the output arrays exist.
pub struct Fused {
    rows: usize,
    lists: usize,
    width: usize,
    chunk_rows: usize,
    chunks: Vec<Chunk>,
    pad: i64,
    trace: bool,
    n_threads: usize,
}

/// Rows whose total number of entries is below this are fused on the calling thread.
const PARALLEL_MIN_ENTRIES: usize = 1 << 11;

/// A parallel chunk holds at least about this many entries (small enough that a batch just
/// above [`PARALLEL_MIN_ENTRIES`] still splits into several chunks per thread, for balance).
const CHUNK_MIN_ENTRIES: usize = 1 << 9;

/// Outputs of fewer cells than this are written on the calling thread (waking the pool again
/// would cost more than the copy).
const PARALLEL_WRITE_MIN_CELLS: usize = 1 << 16;

/// How many threads a batch of `entries` entries uses, at most `n_threads`.
pub fn threads_for(entries: usize, n_threads: usize) -> usize {
    if entries < PARALLEL_MIN_ENTRIES {
        1
    } else {
        n_threads.max(1)
    }
}

/// Phase one of rrf_batch: checks the arguments, fuses every row (in parallel on `n_threads`
/// threads, see [`pool::resolve_threads`]), and decides the width of the output: with
/// `limit = None` the largest count of any row; with a limit, `min(limit, cap)` where cap is the
/// most keys a row can hold (the sum of `min(cols, window)` over the lists of non-zero weight).
pub fn fuse_batch(
    lists: &[IdMatrix<'_>],
    params: &Params,
    pad: i64,
    trace: bool,
    n_threads: usize,
) -> std::result::Result<Fused, BatchError> {
    let weights = params.check(lists.len())?;
    let rows = lists.first().map_or(0, |l| l.rows());
    if let Some((i, l)) = lists.iter().enumerate().find(|(_, l)| l.rows() != rows) {
        return Err(BatchError::Argument(Error::value(
            "lists",
            format!(
                "lists[{i}] has {} rows (queries), lists[0] has {rows}",
                l.rows()
            ),
        )));
    }
    let read_cols = |l: &IdMatrix<'_>| l.cols().min(params.window.unwrap_or(usize::MAX));
    let cap: usize = lists
        .iter()
        .zip(&weights)
        .filter(|(_, &w)| w != 0.0)
        .map(|(l, _)| read_cols(l))
        .sum();
    let mut out = Fused {
        rows,
        lists: lists.len(),
        width: 0,
        chunk_rows: rows.max(1),
        chunks: Vec::new(),
        pad,
        trace,
        n_threads: 1,
    };

    // normalize=True: the same normaliser for every row, checked with the arguments.
    let normalizer = if params.normalize {
        Some(fusion::normalizer(&weights, params.k)?)
    } else {
        None
    };

    let p = RowParams::new(params, Some(pad));
    // Every contribution a row can count, computed once for all rows.
    let table: Vec<Vec<f64>> = lists
        .iter()
        .zip(&weights)
        .map(|(l, &w)| {
            let n = if w == 0.0 { 0 } else { read_cols(l) };
            (0..n as u32)
                .map(|pos| contribution(w, params.k, pos))
                .collect()
        })
        .collect();
    let entries = rows.saturating_mul(lists.iter().map(read_cols).sum::<usize>());
    let n_threads = threads_for(entries, n_threads);
    out.n_threads = n_threads;
    out.chunk_rows = if n_threads > 1 {
        // About 8 chunks per thread (the threads finish within a chunk of each other), but
        // none below ~500 entries (each chunk has its own buffers).
        let per_row = (entries / rows.max(1)).max(1);
        rows.div_ceil(n_threads * 8)
            .max(CHUNK_MIN_ENTRIES.div_ceil(per_row))
            .max(1)
    } else {
        rows.max(1)
    };
    let n_chunks = rows.div_ceil(out.chunk_rows);
    let first_error = AtomicUsize::new(usize::MAX);
    let fuse_chunk = |ws: &mut Workspace, c: usize| {
        let start = c * out.chunk_rows;
        let end = (start + out.chunk_rows).min(rows);
        fuse_chunk(
            ws,
            lists,
            &table,
            &weights,
            normalizer,
            &p,
            trace,
            start..end,
            &first_error,
        )
    };
    let results = pool::map_indices(
        n_threads,
        n_chunks,
        || Workspace::for_trace(trace),
        fuse_chunk,
    );
    let mut error: Option<BatchError> = None;
    for r in results {
        match r {
            Ok(chunk) => out.chunks.push(chunk),
            Err(e) => {
                let row = |e: &BatchError| match e {
                    BatchError::Row { row, .. } => *row,
                    BatchError::Argument(_) => 0,
                };
                if error.as_ref().is_none_or(|old| row(&e) < row(old)) {
                    error = Some(e);
                }
            }
        }
    }
    if let Some(e) = error {
        return Err(e);
    }
    out.width = match params.limit {
        Some(l) => l.min(cap),
        None => out
            .chunks
            .iter()
            .flat_map(|c| c.counts.iter().copied())
            .max()
            .unwrap_or(0),
    };
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
fn fuse_chunk(
    ws: &mut Workspace,
    lists: &[IdMatrix<'_>],
    table: &[Vec<f64>],
    weights: &[f64],
    normalizer: Option<f64>,
    p: &RowParams,
    trace: bool,
    rows: std::ops::Range<usize>,
    first_error: &AtomicUsize,
) -> std::result::Result<Chunk, BatchError> {
    let mut chunk = Chunk::default();
    // Room for the most hits the rows can have, so the buffers never move (untouched capacity
    // costs no memory).
    let per_row: usize = lists
        .iter()
        .zip(weights)
        .filter(|(_, &w)| w != 0.0)
        .map(|(l, _)| l.cols().min(p.window.unwrap_or(usize::MAX)))
        .sum();
    let per_row = p.limit.map_or(per_row, |l| l.min(per_row));
    chunk.ids = memory::vec_with_capacity(rows.len() * per_row);
    chunk.scores = memory::vec_with_capacity(rows.len() * per_row);
    let mut row_lists: Vec<&[i64]> = Vec::with_capacity(lists.len());
    for q in rows {
        if q > first_error.load(AtomicOrdering::Relaxed) {
            break; // an earlier row failed: this chunk's result will not be used
        }
        row_lists.clear();
        row_lists.extend(lists.iter().map(|l| l.row(q)));
        if let Err(error) = ws.fuse_row_with(&row_lists, weights, normalizer, p, Some(table)) {
            first_error.fetch_min(q, AtomicOrdering::Relaxed);
            let key = error.location().map(|(l, pos)| row_lists[l][pos]);
            return Err(BatchError::Row { row: q, error, key });
        }
        chunk.counts.push(ws.page().len());
        chunk.ids.extend(ws.page().iter().map(|&id| ws.key(id)));
        chunk
            .scores
            .extend(ws.page().iter().map(|&id| ws.score_of(id)));
        if trace {
            for i in 0..ws.page().len() {
                chunk.trace_offsets.push(chunk.trace.len());
                ws.per_list(ws.page()[i], weights, p.k, &mut chunk.trace);
            }
        }
    }
    if trace {
        chunk.trace_offsets.push(chunk.trace.len());
    }
    Ok(chunk)
}

/// The output arrays of [`Fused::write`], row-major: ids and scores (rows, width), counts
/// (rows,), and with traces ranks and contributions (rows, width, lists), which must be zeroed.
pub struct Output<'a> {
    pub ids: &'a mut [i64],
    pub scores: &'a mut [f64],
    pub counts: &'a mut [i64],
    pub ranks: Option<&'a mut [i32]>,
    pub contributions: Option<&'a mut [f64]>,
}

impl Fused {
    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn width(&self) -> usize {
        self.width
    }

    pub fn lists(&self) -> usize {
        self.lists
    }

    pub fn trace(&self) -> bool {
        self.trace
    }

    /// Phase two: fills `out` (every id and score cell, pads and NaN past a row's count).
    /// Panics if the arrays do not have the sizes of [`Fused::rows`], [`Fused::width`] and
    /// [`Fused::lists`].
    pub fn write(&self, out: Output<'_>) {
        let (w, l) = (self.width, self.lists);
        assert_eq!(out.ids.len(), self.rows * w);
        assert_eq!(out.scores.len(), self.rows * w);
        assert_eq!(out.counts.len(), self.rows);
        let (cr, wl) = (self.chunk_rows, w * l);
        let (ranks, contributions) = (out.ranks, out.contributions);
        if self.trace {
            assert_eq!(ranks.as_deref().map(<[i32]>::len), Some(self.rows * wl));
            assert_eq!(
                contributions.as_deref().map(<[f64]>::len),
                Some(self.rows * wl)
            );
        }
        for (c, counts) in self.chunks.iter().zip(out.counts.chunks_mut(cr)) {
            for (dst, &n) in counts.iter_mut().zip(&c.counts) {
                *dst = n as i64;
            }
        }
        if w == 0 {
            return;
        }
        let write_chunk = |(c, (ids, scores)): (&Chunk, (&mut [i64], &mut [f64]))| {
            let mut at = 0;
            for ((ids, scores), &n) in ids.chunks_mut(w).zip(scores.chunks_mut(w)).zip(&c.counts) {
                ids[..n].copy_from_slice(&c.ids[at..at + n]);
                ids[n..].fill(self.pad);
                scores[..n].copy_from_slice(&c.scores[at..at + n]);
                scores[n..].fill(f64::NAN);
                at += n;
            }
        };
        let trace_chunk = |(c, (ranks, contributions)): (&Chunk, (&mut [i32], &mut [f64]))| {
            let mut hit = 0;
            for (r, &n) in c.counts.iter().enumerate() {
                for j in 0..n {
                    let entries = &c.trace[c.trace_offsets[hit]..c.trace_offsets[hit + 1]];
                    for &(list, rank, value) in entries {
                        let at = (r * w + j) * l + list as usize;
                        ranks[at] = rank as i32;
                        contributions[at] = value;
                    }
                    hit += 1;
                }
            }
        };
        let trace = match (ranks, contributions) {
            (Some(r), Some(c)) if self.trace && wl > 0 => Some((r, c)),
            _ => None,
        };
        let (ids, scores) = (out.ids, out.scores);
        let n_threads = if self.rows * w < PARALLEL_WRITE_MIN_CELLS {
            1
        } else {
            self.n_threads
        };
        pool::run(n_threads, |parallel| {
            if parallel {
                self.chunks
                    .par_iter()
                    .zip(
                        ids.par_chunks_mut(cr * w)
                            .zip(scores.par_chunks_mut(cr * w)),
                    )
                    .for_each(write_chunk);
                if let Some((r, c)) = trace {
                    self.chunks
                        .par_iter()
                        .zip(r.par_chunks_mut(cr * wl).zip(c.par_chunks_mut(cr * wl)))
                        .for_each(trace_chunk);
                }
            } else {
                self.chunks
                    .iter()
                    .zip(ids.chunks_mut(cr * w).zip(scores.chunks_mut(cr * w)))
                    .for_each(write_chunk);
                if let Some((r, c)) = trace {
                    self.chunks
                        .iter()
                        .zip(r.chunks_mut(cr * wl).zip(c.chunks_mut(cr * wl)))
                        .for_each(trace_chunk);
                }
            }
        });
    }
}

/// The output of [`rrf_batch`]: row-major arrays as described on [`Output`].
#[derive(Clone, Debug, PartialEq)]
pub struct BatchOutput {
    pub rows: usize,
    pub width: usize,
    pub ids: Vec<i64>,
    pub scores: Vec<f64>,
    pub counts: Vec<i64>,
    pub ranks: Option<Vec<i32>>,
    pub contributions: Option<Vec<f64>>,
}

/// RRF of every row of `lists` ((rows, cols_i) matrices), both phases, into new vectors.
pub fn rrf_batch(
    lists: &[IdMatrix<'_>],
    params: &Params,
    pad: i64,
    trace: bool,
    n_threads: usize,
) -> std::result::Result<BatchOutput, BatchError> {
    let fused = fuse_batch(lists, params, pad, trace, n_threads)?;
    let (q, w, l) = (fused.rows(), fused.width(), fused.lists());
    let mut out = BatchOutput {
        rows: q,
        width: w,
        ids: vec![0; q * w],
        scores: vec![0.0; q * w],
        counts: vec![0; q],
        ranks: trace.then(|| vec![0; q * w * l]),
        contributions: trace.then(|| vec![0.0; q * w * l]),
    };
    fused.write(Output {
        ids: &mut out.ids,
        scores: &mut out.scores,
        counts: &mut out.counts,
        ranks: out.ranks.as_deref_mut(),
        contributions: out.contributions.as_deref_mut(),
    });
    Ok(out)
}

/// One fused query of [`fuse_queries`]: per hit (list, position of its first occurrence, score),
/// and with traces its counted occurrences ordered by (list, position).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueryHits {
    pub hits: Vec<(u32, u32, f64)>,
    pub trace_offsets: Vec<usize>,
    pub trace: Vec<Occurrence>,
}

/// One query of [`fuse_queries`]: its lists (already cut to the part that is read; keys as i64,
/// or tokens standing for keys) with their weights and normaliser.
pub struct Query<'a> {
    pub lists: Vec<&'a [i64]>,
    pub weights: &'a [f64],
    pub normalizer: Option<f64>,
}

/// Fuses independent queries (rrf_many's int and str paths), in parallel. Returns every query's
/// hits up to the first query (in query order) that fails, and that query's index and error.
pub fn fuse_queries(
    queries: &[Query<'_>],
    p: &RowParams,
    trace: bool,
    n_threads: usize,
) -> (Vec<QueryHits>, Option<(usize, Error)>) {
    let first_error = AtomicUsize::new(usize::MAX);
    let entries: usize = queries
        .iter()
        .map(|q| q.lists.iter().map(|l| l.len()).sum::<usize>())
        .sum();
    let n_threads = threads_for(entries, n_threads);
    let fuse = |ws: &mut Workspace, (i, q): (usize, &Query<'_>)| {
        if i > first_error.load(AtomicOrdering::Relaxed) {
            return Err(None);
        }
        if let Err(e) = ws.fuse_row(&q.lists, q.weights, q.normalizer, p) {
            first_error.fetch_min(i, AtomicOrdering::Relaxed);
            return Err(Some((i, e)));
        }
        let mut out = QueryHits::default();
        for &id in ws.page() {
            let (l, pos) = ws.first_seen(id);
            out.hits.push((l, pos, ws.score_of(id)));
            if trace {
                out.trace_offsets.push(out.trace.len());
                let start = out.trace.len();
                ws.occurrences_into(id, &mut out.trace);
                out.trace[start..].sort_unstable_by_key(|o| (o.list, o.position));
            }
        }
        if trace {
            out.trace_offsets.push(out.trace.len());
        }
        Ok(out)
    };
    type One = std::result::Result<QueryHits, Option<(usize, Error)>>;
    let results: Vec<One> = pool::run(n_threads, |parallel| {
        if parallel {
            queries
                .par_iter()
                .enumerate()
                .with_min_len(16)
                .map_init(|| Workspace::for_trace(trace), fuse)
                .collect()
        } else {
            let mut ws = Workspace::for_trace(trace);
            queries
                .iter()
                .enumerate()
                .map(|q| fuse(&mut ws, q))
                .collect()
        }
    });
    let mut hits = Vec::with_capacity(results.len());
    let mut error = None;
    for r in results {
        match r {
            Ok(h) if error.is_none() => hits.push(h),
            Ok(_) | Err(None) => {}
            Err(Some(e)) => {
                if error.as_ref().is_none_or(|(i, _)| e.0 < *i) {
                    error = Some(e);
                }
            }
        }
    }
    if let Some((i, _)) = &error {
        hits.truncate(*i);
    }
    (hits, error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fusion::{rrf_ord, Hit};

    /// A tiny deterministic generator (xorshift), enough for differential tests.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    fn random_params(rng: &mut Rng, n_lists: usize) -> Params {
        let mut p = Params::default();
        if rng.below(2) == 0 {
            p.k = [0.0, 0.5, 1.0, 60.0][rng.below(4) as usize];
        }
        if rng.below(3) == 0 {
            p.weights = Some(
                (0..n_lists)
                    .map(|_| [0.0, 1.0, -1.0, 0.5, 2.0][rng.below(5) as usize])
                    .collect(),
            );
        }
        if rng.below(4) == 0 {
            p.window = Some(1 + rng.below(5) as usize);
        }
        p.duplicates =
            [Duplicates::First, Duplicates::Sum, Duplicates::Error][rng.below(3) as usize];
        if rng.below(3) == 0 {
            p.tie_break = TieBreak::Key;
        }
        if rng.below(4) == 0 {
            p.offset = rng.below(3) as usize;
        }
        if rng.below(3) == 0 {
            p.limit = Some(rng.below(5) as usize);
        }
        if rng.below(4) == 0 {
            p.min_score = Some([0.0, 0.02, -1.0][rng.below(3) as usize]);
        }
        if rng.below(4) == 0 {
            p.normalize = true;
        }
        p
    }

    /// Row q of `rrf_batch` equals `fusion::rrf_ord` on row q with trailing pads removed.
    #[test]
    fn rows_equal_rrf_on_the_row() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for _ in 0..3000 {
            let n_lists = 1 + rng.below(4) as usize;
            let rows = rng.below(5) as usize;
            let cols: Vec<usize> = (0..n_lists).map(|_| rng.below(7) as usize).collect();
            let data: Vec<Vec<i64>> = cols
                .iter()
                .map(|&c| {
                    let mut d: Vec<i64> = (0..rows * c).map(|_| rng.below(8) as i64).collect();
                    // Trailing pads in some rows.
                    for q in 0..rows {
                        let cut = rng.below(c as u64 + 2) as usize;
                        for x in d[q * c..(q + 1) * c].iter_mut().skip(cut) {
                            *x = -1;
                        }
                    }
                    d
                })
                .collect();
            let mats: Vec<IdMatrix> = data
                .iter()
                .zip(&cols)
                .map(|(d, &c)| IdMatrix::new(d, rows, c).unwrap())
                .collect();
            let params = random_params(&mut rng, n_lists);
            let trace = rng.below(2) == 0;
            let batch = rrf_batch(&mats, &params, -1, trace, 1 + rng.below(2) as usize);
            let per_row: Vec<_> = (0..rows)
                .map(|q| {
                    let trimmed: Vec<Vec<i64>> = mats
                        .iter()
                        .map(|m| m.row(q).iter().copied().take_while(|&x| x != -1).collect())
                        .collect();
                    let slices: Vec<&[i64]> = trimmed.iter().map(|v| v.as_slice()).collect();
                    rrf_ord(&slices, &params).map(|hits| {
                        hits.into_iter()
                            .map(
                                |Hit {
                                     list_index,
                                     position,
                                     score,
                                 }| {
                                    (slices[list_index][position], score)
                                },
                            )
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            match batch {
                Ok(out) => {
                    for (q, expected) in per_row.iter().enumerate() {
                        let expected = expected
                            .as_ref()
                            .expect("rrf fails where the batch did not");
                        let n = out.counts[q] as usize;
                        assert_eq!(n, expected.len());
                        for (j, &(key, score)) in expected.iter().enumerate() {
                            assert_eq!(out.ids[q * out.width + j], key);
                            assert_eq!(out.scores[q * out.width + j].to_bits(), score.to_bits());
                        }
                        for j in n..out.width {
                            assert_eq!(out.ids[q * out.width + j], -1);
                            assert!(out.scores[q * out.width + j].is_nan());
                        }
                    }
                    if params.limit.is_none() {
                        let widest = out.counts.iter().copied().max().unwrap_or(0) as usize;
                        assert_eq!(out.width, widest);
                    }
                }
                Err(BatchError::Row { row, error, .. }) => {
                    for expected in &per_row[..row] {
                        assert!(expected.is_ok());
                    }
                    let e = per_row[row]
                        .as_ref()
                        .expect_err("the batch fails where rrf did not");
                    assert_eq!(e.kind(), error.kind());
                }
                Err(BatchError::Argument(e)) => {
                    // Only normalize without a positive weight, which rrf raises for every row.
                    assert!(params.normalize, "unexpected argument error {e}");
                    for expected in &per_row {
                        assert_eq!(expected.as_ref().err(), Some(&e));
                    }
                }
            }
        }
    }

    /// Many lists: the general (not dense) path and, past 64 lists, the set of seen lists.
    #[test]
    fn many_lists_equal_rrf() {
        let mut rng = Rng(99);
        for n_lists in [9, 64, 65, 70] {
            for duplicates in [Duplicates::First, Duplicates::Sum, Duplicates::Error] {
                let rows = 20;
                let data: Vec<Vec<i64>> = (0..n_lists)
                    .map(|_| (0..rows * 6).map(|_| rng.below(40) as i64).collect())
                    .collect();
                let mats: Vec<IdMatrix> = data
                    .iter()
                    .map(|d| IdMatrix::new(d, rows, 6).unwrap())
                    .collect();
                let params = Params {
                    duplicates,
                    ..Params::default()
                };
                let batch = rrf_batch(&mats, &params, -1, false, 1);
                for q in 0..rows {
                    let row: Vec<&[i64]> = mats.iter().map(|m| m.row(q)).collect();
                    match (&batch, rrf_ord(&row, &params)) {
                        (Ok(out), Ok(hits)) => {
                            let w = out.width;
                            assert_eq!(out.counts[q] as usize, hits.len());
                            for (j, h) in hits.iter().enumerate() {
                                assert_eq!(out.ids[q * w + j], row[h.list_index][h.position]);
                                assert_eq!(out.scores[q * w + j].to_bits(), h.score.to_bits());
                            }
                        }
                        (Err(BatchError::Row { row: r, .. }), Err(_)) => {
                            assert_eq!(*r, q);
                            break;
                        }
                        (Err(BatchError::Row { row: r, .. }), Ok(_)) => assert!(q < *r),
                        (b, r) => panic!("{:?} vs {:?}", b.as_ref().err(), r.err()),
                    }
                }
            }
        }
    }

    #[test]
    fn the_id_table_forgets_every_row_across_the_generation_wrap() {
        let mut t = IdTable::default();
        t.reset(4);
        t.generation = GENERATIONS - 2;
        for round in 0..4u32 {
            t.reset(4);
            // Fresh ids from 0 every row, whatever the previous rows held.
            for (n, key) in [7, 8, 7, 9].into_iter().enumerate() {
                let (slot, id) = t.slot_of_key(key, n as u32);
                let fresh = [0, 1, 0, 3][n];
                assert_eq!(id, fresh, "round {round}");
                if id == n as u32 {
                    assert_eq!(t.seen(slot), 0);
                }
                t.set_seen(slot, t.seen(slot) | 1 << (n % 2));
            }
            assert_eq!(t.get(9), 3);
        }
        assert!(t.generation < 4);
    }

    #[test]
    fn scores_an_ulp_apart_are_ordered_by_the_full_score() {
        // k = 0: the scores are the weights, 1.0 and the next double. Their sort keys differ
        // only in the low bits that hold the key id, so the first sort puts the keys in id
        // order, the wrong way round; the full-score check must catch it.
        let (a, b) = ([10], [20]);
        let mats = [
            IdMatrix::new(&a, 1, 1).unwrap(),
            IdMatrix::new(&b, 1, 1).unwrap(),
        ];
        let p = Params {
            k: 0.0,
            weights: Some(vec![1.0, 1.000_000_000_000_000_2]),
            ..Params::default()
        };
        for limit in [None, Some(2)] {
            let p = Params { limit, ..p.clone() };
            let out = rrf_batch(&mats, &p, -1, false, 1).unwrap();
            assert_eq!(out.ids, vec![20, 10]);
            assert_eq!(out.scores, vec![1.000_000_000_000_000_2, 1.0]);
        }
    }

    #[test]
    fn interior_pads_do_not_shift_ranks() {
        // Row 0: list 0 = [7, pad, 8]; list 1 = [8]. 8 has ranks 3 and 1.
        let a = [7, -1, 8];
        let b = [8];
        let mats = [
            IdMatrix::new(&a, 1, 3).unwrap(),
            IdMatrix::new(&b, 1, 1).unwrap(),
        ];
        let out = rrf_batch(&mats, &Params::default(), -1, true, 1).unwrap();
        assert_eq!(out.width, 2);
        assert_eq!(out.ids, vec![8, 7]);
        let mut c = [1.0 / 63.0, 1.0 / 61.0];
        assert_eq!(out.scores[0], canonical_sum(&mut c));
        assert_eq!(out.scores[1], 0.0 + 1.0 / 61.0);
        assert_eq!(out.ranks.unwrap(), vec![3, 1, 1, 0]);
        assert_eq!(
            out.contributions.unwrap(),
            vec![1.0 / 63.0, 1.0 / 61.0, 1.0 / 61.0, 0.0]
        );
    }

    #[test]
    fn width_with_a_limit_and_empty_rows() {
        let a = [-1, -1, 1, 2];
        let mats = [IdMatrix::new(&a, 2, 2).unwrap()];
        let p = Params {
            limit: Some(10),
            ..Params::default()
        };
        let out = rrf_batch(&mats, &p, -1, false, 1).unwrap();
        assert_eq!((out.width, out.counts.clone()), (2, vec![0, 2]));
        let none: [IdMatrix; 0] = [];
        let out = rrf_batch(&none, &Params::default(), -1, false, 1).unwrap();
        assert_eq!((out.rows, out.width), (0, 0));
    }

    #[test]
    fn normalize_without_positive_weight_is_an_argument_error() {
        let p = Params {
            weights: Some(vec![-1.0]),
            normalize: true,
            ..Params::default()
        };
        for a in [[-1, -1, 1, 2], [-1, -1, -1, -1]] {
            let mats = [IdMatrix::new(&a, 2, 2).unwrap()];
            match rrf_batch(&mats, &p, -1, false, 1) {
                Err(BatchError::Argument(_)) => {}
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn first_failing_row_wins_in_parallel() {
        // Many rows; rows 5000 and 9000 repeat a key with duplicates = Error.
        let rows = 10_000;
        let mut a: Vec<i64> = (0..rows * 4).map(|i| i as i64).collect();
        a[5000 * 4 + 2] = a[5000 * 4];
        a[9000 * 4 + 3] = a[9000 * 4];
        let mats = [IdMatrix::new(&a, rows, 4).unwrap()];
        let p = Params {
            duplicates: Duplicates::Error,
            ..Params::default()
        };
        match rrf_batch(&mats, &p, -1, false, 2) {
            Err(e @ BatchError::Row { row: 5000, .. }) => {
                assert_eq!(
                    e.message(),
                    "row 5000: lists[0] has the key 20000 more than once (rank 3)"
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn parallel_equals_sequential() {
        let mut rng = Rng(42);
        let rows = 3000;
        let a: Vec<i64> = (0..rows * 50).map(|_| rng.below(120) as i64 - 1).collect();
        let b: Vec<i64> = (0..rows * 30).map(|_| rng.below(120) as i64 - 1).collect();
        let mats = [
            IdMatrix::new(&a, rows, 50).unwrap(),
            IdMatrix::new(&b, rows, 30).unwrap(),
        ];
        let p = Params::default();
        let one = rrf_batch(&mats, &p, -1, true, 1).unwrap();
        let two = rrf_batch(&mats, &p, -1, true, 2).unwrap();
        // Scores hold NaN pads: compare bits.
        let bits = |o: &BatchOutput| o.scores.iter().map(|s| s.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&one), bits(&two));
        assert_eq!(
            (&one.ids, &one.counts, &one.ranks, &one.contributions),
            (&two.ids, &two.counts, &two.ranks, &two.contributions)
        );
    }

    #[test]
    fn ragged_rows_are_an_argument_error() {
        let a = [1, 2];
        let b = [1, 2];
        let mats = [
            IdMatrix::new(&a, 2, 1).unwrap(),
            IdMatrix::new(&b, 1, 2).unwrap(),
        ];
        assert!(matches!(
            rrf_batch(&mats, &Params::default(), -1, false, 1),
            Err(BatchError::Argument(_))
        ));
    }

    #[test]
    fn queries_equal_rrf() {
        let mut rng = Rng(7);
        for _ in 0..500 {
            let n_lists = 1 + rng.below(3) as usize;
            let params = Params {
                weights: None,
                normalize: false,
                ..random_params(&mut rng, n_lists)
            };
            let data: Vec<Vec<Vec<i64>>> = (0..20)
                .map(|_| {
                    (0..n_lists)
                        .map(|_| (0..rng.below(6)).map(|_| rng.below(6) as i64).collect())
                        .collect()
                })
                .collect();
            let weights = vec![1.0; n_lists];
            let queries: Vec<Query> = data
                .iter()
                .map(|lists| Query {
                    lists: lists.iter().map(|l| l.as_slice()).collect(),
                    weights: &weights,
                    normalizer: None,
                })
                .collect();
            let p = RowParams::new(&params, None);
            let (hits, error) = fuse_queries(&queries, &p, false, 2);
            for (i, q) in queries.iter().enumerate() {
                let expected = rrf_ord(&q.lists, &params);
                if i < hits.len() {
                    let got: Vec<_> = hits[i].hits.iter().map(|h| h.2.to_bits()).collect();
                    let want: Vec<_> = expected
                        .unwrap()
                        .iter()
                        .map(|h| h.score.to_bits())
                        .collect();
                    assert_eq!(got, want);
                } else {
                    assert_eq!(error.as_ref().unwrap().0, i);
                    assert!(expected.is_err());
                    break;
                }
            }
        }
    }
}
