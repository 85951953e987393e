//! The fusion engine: one reusable [`Workspace`] that fuses one query (a row of a batch) at a
//! time, in three steps, for every caller (`rrf`, `rrf_many`, `rrf_batch`, the native fusion of
//! run files):
//!
//! 1. **scan** ([`Workspace::fuse`]): the interleaved scan — rank 1 of every list, then rank 2,
//!    ... — over the lists read (weight not 0; the first `window` items), the key source turning
//!    items into dense ids in scan order. Duplicates inside a list are resolved here; holes
//!    (pads) are skipped without shifting the ranks behind them.
//! 2. **score** (also [`Workspace::fuse`]): every key's contributions added in ascending order
//!    of value from 0.0 (the canonical sum), checked finite, optionally normalised.
//! 3. **rank** ([`Workspace::rank`], or [`Workspace::rank_groups`] when the caller orders tied
//!    keys itself): `min_score`, the order (score descending, then the tie order), the page
//!    (`offset`, `limit`).
//!
//! Afterwards [`Workspace::page`] holds the key ids of the page, best first, and
//! [`Workspace::trace`] their contributions. Nothing is allocated once the workspace has grown.
//!
//! The scan has two layouts. *Dense* (each key counted at most once per list, at most
//! [`DENSE_MAX_LISTS`] lists read; the common case): every key has one slot per list read for
//! its contributions, filled in scan order, and its seen-lists bits live with the key source (in
//! the hash slot just probed). *General* (more lists, or `duplicates="sum"`): the counted
//! occurrences are recorded in scan order and grouped by key with a counting sort.

use hashbrown::HashSet;

use super::keys::KeySource;
use super::method::{terms_need_count, Dense, Entry, PreTerms, Scanned, Scored, Scores};
use super::params::{Duplicates, Method, Norm, Plan, TieBreak};
use super::trace::{Contribution, Trace};
use super::{canonical_sum, Hasher};
use crate::cancel::{self, Cancel};
use crate::error::{Error, KeyRef, Problem, Stage};

/// Dense mode is used with at most this many lists read (and duplicates "first" or "error").
pub const DENSE_MAX_LISTS: usize = 8;

/// A large query polls its [`Cancel`] every this many positions of the scan (times the lists
/// read) ...
const POLL_POSITIONS: usize = 1 << 12;
/// ... and every this many keys scored or ranked.
pub(super) const POLL_KEYS: usize = 1 << 16;

/// Pages ending at most this far down the order (`offset + limit`), out of at least four times
/// as many keys, are ranked by keeping the best keys as they go by ([`Workspace::rank_top`])
/// rather than by selecting and sorting.
const TOP_MAX: usize = 32;

/// `0..n` in consecutive ranges of `size`.
fn blocks(n: usize, size: usize) -> impl Iterator<Item = std::ops::Range<usize>> {
    (0..n)
        .step_by(size)
        .map(move |start| start..(start + size).min(n))
}

fn interrupted() -> Error {
    Problem::Interrupted.into()
}

/// One counted occurrence of a key (general layout).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Occurrence {
    key: u32,
    list: u32,
    position: u32,
}

#[derive(Clone, Copy, Default)]
struct KeyInfo {
    /// The key's value as the source gave it (the i64 key, or the id).
    key: i64,
    /// Bit `slot` set: counted in the `slot`-th list read (general layout, at most 64 lists
    /// read; dense layout with two lists and traces: the bits the source keeps, copied). The
    /// pre-normalised geometric and harmonic means set bit `8 + slot` too when the slot's
    /// normalised value is kept (see [`PreTerms`]).
    seen: u64,
    /// (list, position) of its first occurrence in scan order.
    first: (u32, u32),
}

/// The first occurrence (list, position) of every key of a query, by id.
pub struct Firsts<'a>(&'a [KeyInfo]);

impl Firsts<'_> {
    pub fn get(&self, id: u32) -> (u32, u32) {
        self.0[id as usize].first
    }
}

/// The buffers of one query's fusion, reused from query to query.
#[derive(Default)]
pub struct Workspace {
    read: Vec<usize>,
    /// Key id -> its value, seen-lists bits and first occurrence. Only the first `n_keys`
    /// entries are the query's: the buffer is one longer, so that the dense scan can write the
    /// next entry before it knows whether the key is new (no branch to mispredict).
    keys: Vec<KeyInfo>,
    n_keys: usize,
    /// Whether the dense scan records each contribution's (list, position) for traces.
    keep_occurrences: bool,
    /// This query's: whether the scan records where each contribution came from (traces, and
    /// methods that are not sums of rank values), and whether it keeps every key's lists (the
    /// ISR family multiplies by their number).
    record: bool,
    count_present: bool,
    /// This query's score by [`super::method`] (anything but RRF, RBC and the ISR family): its
    /// inputs (keys' occurrences by key, items read per list) and results.
    generic: bool,
    entry_offsets: Vec<u32>,
    entries: Vec<Entry>,
    firsts: Vec<(u32, u32)>,
    n_read: Vec<u32>,
    scored: Scored,
    /// Per key, what the ISR family multiplied by, and what the boost added (NaN: nothing).
    factors: Vec<f64>,
    boosts: Vec<f64>,
    seen_set: HashSet<(u32, u32), Hasher>,
    occurrences: Vec<Occurrence>,
    offsets: Vec<u32>,
    cursor: Vec<u32>,
    grouped: Vec<Occurrence>,
    values: Vec<f64>,
    scores: Vec<f64>,
    /// With normalize=True, key id -> the canonical sum before division: hits are ordered by it,
    /// so normalising never reorders them. Empty otherwise.
    sums: Vec<f64>,
    /// Sort keys: score bits << 64 | key id.
    order: Vec<u128>,
    packed: Vec<u64>,
    /// `rank_all`: the full sort bits of each key of `packed`, in its order.
    fulls: Vec<u64>,
    page: Vec<u32>,
    /// Dense layout: per key `stride` slots for its contributions and their (list, position).
    dense: bool,
    stride: usize,
    slot_values: Vec<f64>,
    slot_occurrences: Vec<(u32, u32)>,
    /// Dense layout: per slot (list read), the items of its window not counted (holes and
    /// repeats).
    skipped: Vec<u32>,
    /// The fast path of score fusions (see [`Scored::pre_terms`]): this query's terms, and
    /// whether the scan adds them (instead of the plan's contributions).
    pre: PreTerms,
    prescored: bool,
}

/// The number of bits set in the seen-lists bits of a key in dense mode (below 2^8): a table,
/// since the portable x86-64 target has no popcount instruction and its emulation is slow.
#[inline]
pub(super) fn ones(seen: u64) -> usize {
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

/// Scores map to u64 sort keys that order like the scores, descending (finite scores only).
#[inline]
pub(crate) fn descending_bits(score: f64) -> u64 {
    let bits = (score + 0.0).to_bits(); // + 0.0 turns -0.0 into 0.0: they tie
    let ascending = if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    };
    !ascending
}

/// The end of the page `[offset, offset + limit)` of `n` ordered keys.
#[inline]
fn page_end(offset: usize, limit: Option<usize>, n: usize) -> usize {
    limit.map_or(n, |l| offset.saturating_add(l).min(n))
}

/// i64 keys map to u64 sort keys that order like the keys.
#[inline]
fn flip(key: i64) -> u64 {
    (key as u64) ^ (1 << 63)
}

fn duplicate(list: usize, position: usize) -> Error {
    Problem::DuplicateKey {
        key: KeyRef::at(list, position),
    }
    .into()
}

impl Workspace {
    /// A workspace whose queries' traces are (`trace`) or are not read: without traces the dense
    /// scan does not record where each contribution came from.
    pub fn new(trace: bool) -> Self {
        Workspace {
            keep_occurrences: trace,
            ..Self::default()
        }
    }

    /// Whether the queries' traces will be read (see [`Workspace::new`]).
    pub fn set_trace(&mut self, trace: bool) {
        self.keep_occurrences = trace;
    }

    /// Steps 1 and 2: scans and scores one query whose keys come from `keys` (one list per
    /// weight of `plan`) and whose raw scores, per list, are `scores` (needed by score-based
    /// methods; an empty slice: none). Errors: the source's own, a repeated key with
    /// `duplicates="error"` ([`Problem::DuplicateKey`]), a score or normalised value that is not
    /// finite; each names the key by its place. Then [`Workspace::boost`] if asked, and rank with
    /// [`Workspace::rank`] or [`Workspace::rank_groups`].
    pub fn fuse<S: KeySource>(
        &mut self,
        keys: &mut S,
        scores: Scores<'_>,
        plan: &Plan,
    ) -> Result<(), S::Error> {
        self.fuse_cancellable(keys, scores, plan, &Cancel::none())
    }

    /// [`Workspace::fuse`] that `cancel` can stop (`Problem::Interrupted`): it is polled every few
    /// thousand items of the scan and keys scored (for a single large query; a batch polls
    /// between rows instead).
    pub fn fuse_cancellable<S: KeySource>(
        &mut self,
        keys: &mut S,
        scores: Scores<'_>,
        plan: &Plan,
        cancel: &Cancel<'_>,
    ) -> Result<(), S::Error> {
        let method = plan.fusion.method;
        self.generic = !matches!(
            method,
            Method::Rrf | Method::Rbc | Method::Isr | Method::LogIsr | Method::LognIsr
        );
        self.record = self.keep_occurrences || self.generic;
        self.count_present = matches!(method, Method::Isr | Method::LogIsr | Method::LognIsr);
        self.factors.clear();
        self.boosts.clear();
        if self.generic && !self.keep_occurrences && self.prescore(keys, scores, plan, cancel)? {
            return Ok(());
        }
        self.scan(keys, plan, cancel)?;
        if self.generic {
            self.count_read(keys, plan);
            if self.dense && !self.keep_occurrences && method == Method::Condorcet {
                // Untraced, from the scan's slots: no per-key entries nor contributions.
                let (stride, occurrences) = (self.stride, &self.slot_occurrences);
                let keys = &self.keys;
                self.scored.condorcet_of(
                    plan,
                    &self.read,
                    self.n_keys,
                    |key: usize| {
                        let at = key * stride;
                        occurrences[at..at + ones(keys[key].seen)].iter().copied()
                    },
                    cancel,
                )?;
                self.scores.clear();
                self.scores.extend_from_slice(&self.scored.scores);
            } else if self.dense && !self.keep_occurrences {
                self.score_dense(plan, scores, cancel)?;
            } else {
                self.score_generic(plan, scores, cancel)?;
            }
        } else {
            self.score_keys(plan, cancel)?;
        }
        Ok(())
    }

    /// The fast path of the commonest score fusions, untraced: each list's terms computed
    /// before the scan ([`Scored::pre_terms`]), added by the scan as RRF's contributions are,
    /// and summed per key ([`Scored::score_terms`]). False when it does not apply, or when the
    /// scan skipped a repeat (a list's norm is then over other items): the caller scans again
    /// the general way. Errors: the scan's own (a repeat with `duplicates="error"`, an
    /// interruption), a score that is not finite.
    fn prescore<S: KeySource>(
        &mut self,
        keys: &mut S,
        scores: Scores<'_>,
        plan: &Plan,
        cancel: &Cancel<'_>,
    ) -> Result<bool, S::Error> {
        if plan.fusion.duplicates == Duplicates::Sum || plan.fusion.method == Method::Condorcet {
            return Ok(false);
        }
        self.set_read(plan);
        let mut pre = std::mem::take(&mut self.pre);
        let ready = self.scored.pre_terms(
            plan,
            &self.read,
            scores,
            |list| keys.len(list),
            |list, position| keys.is_hole(list, position),
            |list, n| keys.holes(list, n),
            &mut pre,
            cancel,
        );
        self.pre = pre;
        if !ready {
            return Ok(false);
        }
        self.record = false;
        self.prescored = true;
        let scanned = self.scan(keys, plan, cancel);
        self.prescored = false;
        self.record = true;
        scanned?;
        if !self.dense || (0..self.stride).any(|slot| self.skipped[slot] != self.pre.holes[slot]) {
            return Ok(false);
        }
        self.count_read(keys, plan);
        self.scores.clear();
        let keys_info = &self.keys;
        Scored::score_terms(
            plan,
            &self.read,
            &mut self.pre,
            self.n_keys,
            self.stride,
            &mut self.slot_values,
            |k| keys_info[k].seen,
            |k| keys_info[k].first,
            &mut self.scores,
            cancel,
        )?;
        Ok(true)
    }

    /// The lists read: those of weight not 0, ascending.
    fn set_read(&mut self, plan: &Plan) {
        self.read.clear();
        self.read
            .extend((0..plan.n_lists()).filter(|&i| plan.weights[i] != 0.0));
    }

    /// Per list read, its items read (holes not counted): what rank and borda normalisations
    /// and BordaFuse divide by.
    fn count_read<S: KeySource>(&mut self, keys: &S, plan: &Plan) {
        self.n_read.clear();
        self.n_read.resize(plan.n_lists(), 0);
        let needed = plan.fusion.method == Method::Bordafuse
            || matches!(plan.norm, Norm::Rank | Norm::Borda);
        if !needed {
            return;
        }
        for &list in &self.read {
            let n = plan.read_len(list, keys.len(list));
            self.n_read[list] = n as u32 - keys.holes(list, n);
        }
    }

    /// Scores by [`super::method`]: every key's occurrences, ordered by list then position.
    fn score_generic(
        &mut self,
        plan: &Plan,
        scores: Scores<'_>,
        cancel: &Cancel<'_>,
    ) -> Result<(), Error> {
        self.entry_offsets.clear();
        self.entries.clear();
        self.firsts.clear();
        self.entry_offsets.push(0);
        if !self.dense {
            self.group();
        }
        let mut group = Vec::new();
        for block in blocks(self.n_keys, POLL_KEYS) {
            cancel.check()?;
            for key in block {
                group.clear();
                if self.dense {
                    let at = key * self.stride;
                    group.extend(
                        self.slot_occurrences[at..at + self.count(key)]
                            .iter()
                            .map(|&(list, position)| Entry { list, position }),
                    );
                } else {
                    group.extend(self.grouped_of(key).iter().map(|o| Entry {
                        list: o.list,
                        position: o.position,
                    }));
                }
                group.sort_unstable_by_key(|e| (e.list, e.position));
                self.entries.extend_from_slice(&group);
                self.entry_offsets.push(self.entries.len() as u32);
                self.firsts.push(self.keys[key].first);
            }
        }
        self.scored.score(
            &Scanned {
                plan,
                read: &self.read,
                n_read: &self.n_read,
                offsets: &self.entry_offsets,
                entries: &self.entries,
                firsts: &self.firsts,
                scores,
            },
            cancel,
        )?;
        self.scores.clear();
        self.scores.extend_from_slice(&self.scored.scores);
        Ok(())
    }

    /// Scores by [`super::method`] in the dense layout without traces: from the scan's slots,
    /// with no per-key entries built.
    fn score_dense(
        &mut self,
        plan: &Plan,
        scores: Scores<'_>,
        cancel: &Cancel<'_>,
    ) -> Result<(), Error> {
        let keys = &self.keys;
        let q = Dense {
            plan,
            read: &self.read,
            n_read: &self.n_read,
            skipped: &self.skipped,
            n_keys: self.n_keys,
            stride: self.stride,
            occurrences: &self.slot_occurrences,
            count: |k: usize| ones(keys[k].seen),
            first: |k: usize| keys[k].first,
            scores,
        };
        self.scores.clear();
        self.scored.score_dense(&q, &mut self.scores, cancel)
    }

    /// The boost: adds `weight * (v - min) / (max - min)` to each key that has a value `v`
    /// (`value(id, key, first)`: the key as [`Workspace::key`] and [`Workspace::first_seen`] give
    /// it), min and max over those keys; a span of 0 adds 0. Before ranking; `value`'s error (a
    /// Python lookup's) stops it.
    pub fn boost<E: From<Error>>(
        &mut self,
        plan: &Plan,
        mut value: impl FnMut(u32, i64, (u32, u32)) -> Result<Option<f64>, E>,
    ) -> Result<(), E> {
        let weight = plan.fusion.boost_weight.unwrap_or(0.0);
        let n = self.scores.len();
        self.boosts.clear();
        self.boosts.resize(n, f64::NAN);
        let values = (0..n)
            .map(|id| value(id as u32, self.keys[id].key, self.keys[id].first))
            .collect::<Result<Vec<Option<f64>>, E>>()?;
        let (mut low, mut high) = (f64::INFINITY, f64::NEG_INFINITY);
        // Python's min and max: the first of the smallest (largest) values, whatever the sign
        // of a zero.
        for &v in values.iter().flatten() {
            if v < low {
                low = v;
            }
            if v > high {
                high = v;
            }
        }
        for (id, v) in values.iter().enumerate() {
            let Some(v) = v else { continue };
            let added = if high > low {
                weight * ((v - low) / (high - low))
            } else {
                0.0
            };
            let score = self.scores[id] + added;
            if !score.is_finite() {
                let first = self.keys[id].first;
                return Err(Error::from(Problem::NonFiniteScore {
                    key: KeyRef::at(first.0 as usize, first.1 as usize),
                    score,
                    stage: Stage::Boosted,
                })
                .into());
            }
            self.scores[id] = score;
            self.boosts[id] = added;
        }
        Ok(())
    }

    fn scan<S: KeySource>(
        &mut self,
        keys: &mut S,
        plan: &Plan,
        cancel: &Cancel<'_>,
    ) -> Result<(), S::Error> {
        let p = &plan.fusion;
        self.n_keys = 0;
        self.scores.clear();
        self.sums.clear();
        self.page.clear();
        self.seen_set.clear();
        self.occurrences.clear();
        self.set_read(plan);
        let mut depth = self.read.iter().map(|&i| keys.len(i)).max().unwrap_or(0);
        if let Some(w) = p.window {
            depth = depth.min(w);
        }
        let most_keys: usize = self.read.iter().map(|&i| keys.len(i).min(depth)).sum();
        keys.reset(most_keys, cancel)?;
        if self.keys.len() <= most_keys {
            cancel::resize(&mut self.keys, most_keys + 1, KeyInfo::default(), cancel)?;
        }
        let check = p.duplicates != Duplicates::Sum;
        self.dense = check && self.read.len() <= DENSE_MAX_LISTS;
        self.stride = self.read.len();
        if self.dense {
            // (The scan writes every slot it reads: no value needs keeping. Zeroed memory costs
            // nothing until touched.)
            let room = most_keys * self.stride;
            if self.slot_values.len() < room {
                self.slot_values = vec![0.0; room];
            }
            if self.record && self.slot_occurrences.len() < room {
                self.slot_occurrences = vec![(0, 0); room];
            }
            return if self.stride == 2 {
                self.scan_dense::<true, S>(keys, plan, depth, cancel)
            } else {
                self.scan_dense::<false, S>(keys, plan, depth, cancel)
            };
        }
        let bits = self.read.len() <= 64;
        for block in blocks(depth, POLL_POSITIONS) {
            if cancel.poll() {
                return Err(interrupted().into());
            }
            for position in block {
                for (slot, &list) in self.read.iter().enumerate() {
                    if position >= keys.len(list) {
                        continue;
                    }
                    let next = self.n_keys as u32;
                    let Some(found) = keys.find(list, position, next)? else {
                        continue;
                    };
                    let id = found.id;
                    if id == next {
                        self.keys[self.n_keys] = KeyInfo {
                            key: found.key,
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
                                return Err(duplicate(list, position).into());
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
        }
        Ok(())
    }

    /// The scan in dense mode: at most 8 lists read, each key counted at most once per list. A
    /// key's seen-lists bits live with the source (in the hash slot just probed) and also count
    /// its contributions (their popcount), so its contribution slots are written in place.
    /// Whether a key is new is random in fused lists, so the loop has no branch on it: the next
    /// key's entry is written every time and counts only when it is new.
    ///
    /// `PAIR`, exactly two lists read (hybrid search's lexical + vector, the commonest case), is
    /// trimmed further: a new key's second slot is written +0.0, which `score_keys` may add,
    /// instead of keeping the bits per key for [`Workspace::count`] (kept all the same when
    /// something reads them).
    fn scan_dense<const PAIR: bool, S: KeySource>(
        &mut self,
        keys: &mut S,
        plan: &Plan,
        depth: usize,
        cancel: &Cancel<'_>,
    ) -> Result<(), S::Error> {
        let stride = self.stride;
        let pre = &self.pre;
        let prescored = self.prescored;
        // The pre-normalised geometric and harmonic means: which lists kept a key's value,
        // in the bits above its seen-lists bits.
        let track_kept = prescored && !pre.kept.is_empty();
        // Deferred terms: each item in its slot's own cell (see `PreTerms::deferred`).
        let by_slot = prescored && pre.deferred;
        let keep_bits = !PAIR
            || self.record
            || self.count_present
            || track_kept
            || by_slot
            || (prescored && terms_need_count(plan.fusion.method));
        let keep_occurrences = self.record;
        let error_on_repeat = plan.fusion.duplicates == Duplicates::Error;
        // The lists read, in a fixed-size array: with `PAIR` the compiler knows there are two.
        let n_read = if PAIR { 2 } else { self.read.len() };
        let mut read = [0usize; DENSE_MAX_LISTS];
        read[..n_read].copy_from_slice(&self.read[..n_read]);
        let mut n_keys = 0;
        self.skipped.clear();
        self.skipped.resize(n_read, 0);
        for block in blocks(depth, POLL_POSITIONS) {
            if cancel.poll() {
                return Err(interrupted().into());
            }
            for position in block {
                for (slot, &list) in read[..n_read].iter().enumerate() {
                    if position >= keys.len(list) {
                        continue;
                    }
                    let next = n_keys as u32;
                    let Some(found) = keys.find(list, position, next)? else {
                        self.skipped[slot] += 1;
                        continue;
                    };
                    let (id, at) = (found.id, found.at);
                    let mask = 1 << slot;
                    let new = id == next;
                    self.keys[n_keys] = KeyInfo {
                        key: found.key,
                        seen: 0,
                        first: (list as u32, position as u32),
                    };
                    n_keys += new as usize;
                    let seen = keys.seen(at);
                    if seen & mask != 0 {
                        if error_on_repeat {
                            return Err(duplicate(list, position).into());
                        }
                        self.skipped[slot] += 1;
                        continue;
                    }
                    keys.set_seen(at, seen | mask);
                    let mut kept = 0u64;
                    let c = if prescored {
                        let at = pre.starts[slot] + position;
                        if track_kept {
                            kept = u64::from(pre.kept.get(at).copied().unwrap_or(0)) << (8 + slot);
                        }
                        pre.terms.get(at).copied().unwrap_or(f64::NAN)
                    } else {
                        plan.rank_term(list, position)
                    };
                    // With two lists a key not new has exactly the other list's bit.
                    let filled = if PAIR {
                        !new as usize
                    } else {
                        ones(u64::from(seen))
                    };
                    let at = id as usize * stride + if by_slot { slot } else { filled };
                    if PAIR && !by_slot {
                        // New: [c, +0.0]. Seen in the other list already: [first, c].
                        self.slot_values[at - filled + 1] = if new { 0.0 } else { c };
                    }
                    self.slot_values[at] = c;
                    if keep_bits {
                        let info = &mut self.keys[id as usize];
                        let kept = if track_kept {
                            info.seen & !0xFF | kept
                        } else {
                            0
                        };
                        info.seen = u64::from(seen | mask) | kept;
                    }
                    if keep_occurrences {
                        self.slot_occurrences[at] = (list as u32, position as u32);
                    }
                }
            }
        }
        self.n_keys = n_keys;
        Ok(())
    }

    /// In dense mode, how many contributions key `id` has.
    #[inline]
    fn count(&self, id: usize) -> usize {
        ones(self.keys[id].seen)
    }

    /// Scores RRF, RBC and the ISR family: every key's contributions (rank values) added
    /// canonically, times the ISR family's factor.
    fn score_keys(&mut self, plan: &Plan, cancel: &Cancel<'_>) -> Result<(), Error> {
        let n_keys = self.n_keys;
        self.scores.clear();
        self.sums.clear();
        if self.dense && self.stride == 2 {
            // Two lists (`scan_dense::<true>`): a key has one or two contributions, at random.
            // Without a branch on which: a missing second one is +0.0, and the canonical sum of
            // (a, +0.0) is bit for bit that of (a) (a sum started at +0.0 is never -0.0, so
            // adding +0.0 changes nothing).
            if !self.count_present && plan.normalizer.is_none() {
                // RRF and RBC, not normalised: the score is the sum.
                self.scores.reserve(n_keys);
                for block in blocks(n_keys, POLL_KEYS) {
                    cancel.check()?;
                    let start = block.start;
                    let values = &self.slot_values[2 * start..2 * block.end];
                    // (The canonical sum of two values: see `canonical_sum`.)
                    self.scores
                        .extend(values.chunks_exact(2).map(|pair| 0.0 + pair[0] + pair[1]));
                    let block_scores = &self.scores[start..];
                    if let Some(i) = block_scores.iter().position(|s| !s.is_finite()) {
                        let score = block_scores[i];
                        self.scores.truncate(start + i);
                        let stage = if plan.fusion.method == Method::Rrf {
                            Stage::Rrf
                        } else {
                            Stage::Fused
                        };
                        return Err(self.non_finite(start + i, score, stage));
                    }
                }
                return Ok(());
            }
            for block in blocks(n_keys, POLL_KEYS) {
                cancel.check()?;
                for key in block {
                    let at = key * 2;
                    let (a, b) = (self.slot_values[at], self.slot_values[at + 1]);
                    let (lo, hi) = if b < a { (b, a) } else { (a, b) };
                    let present = if self.count_present {
                        self.count(key)
                    } else {
                        0
                    };
                    self.push_score(key, 0.0 + lo + hi, plan, present)?;
                }
            }
            return Ok(());
        }
        if self.dense {
            for block in blocks(n_keys, POLL_KEYS) {
                cancel.check()?;
                for key in block {
                    let at = key * self.stride;
                    let n = self.count(key);
                    let values = &mut self.slot_values[at..at + n];
                    let s = match values {
                        [a] => 0.0 + *a,
                        _ => canonical_sum(values),
                    };
                    self.push_score(key, s, plan, n)?;
                }
            }
            return Ok(());
        }
        self.group();
        let mut lists = Vec::new();
        for block in blocks(n_keys, POLL_KEYS) {
            cancel.check()?;
            for key in block {
                let occs =
                    &self.grouped[self.offsets[key] as usize..self.offsets[key + 1] as usize];
                let value = |o: &Occurrence| plan.rank_term(o.list as usize, o.position as usize);
                let s = match occs {
                    [a] => 0.0 + value(a),
                    _ => {
                        self.values.clear();
                        self.values.extend(occs.iter().map(value));
                        canonical_sum(&mut self.values)
                    }
                };
                let present = if self.count_present {
                    lists.clear();
                    lists.extend(occs.iter().map(|o| o.list));
                    lists.sort_unstable();
                    lists.dedup();
                    lists.len()
                } else {
                    0
                };
                self.push_score(key, s, plan, present)?;
            }
        }
        Ok(())
    }

    /// Groups the occurrences (general layout) by key with a counting sort (stable: scan order
    /// within a key).
    fn group(&mut self) {
        let n_keys = self.n_keys;
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
        self.grouped
            .resize(self.occurrences.len(), Occurrence::default());
        for o in &self.occurrences {
            let c = &mut self.cursor[o.key as usize];
            self.grouped[*c as usize] = *o;
            *c += 1;
        }
    }

    /// Key `key`'s occurrences once grouped, in scan order.
    fn grouped_of(&self, key: usize) -> &[Occurrence] {
        &self.grouped[self.offsets[key] as usize..self.offsets[key + 1] as usize]
    }

    /// A key's score from the canonical sum of its contributions: times the ISR family's
    /// factor of its `present` lists, checked finite, then divided by the normaliser when there
    /// is one and checked again. Inlined in every loop of [`Workspace::score_keys`] (called for
    /// every key of every query); the errors are made out of line.
    #[inline(always)]
    fn push_score(
        &mut self,
        key: usize,
        sum: f64,
        plan: &Plan,
        present: usize,
    ) -> Result<(), Error> {
        let sum = if self.count_present {
            let p = present as f64;
            let factor = match plan.fusion.method {
                Method::Isr => p,
                Method::LogIsr => p.ln(),
                Method::LognIsr => (p + plan.fusion.sigma()).ln(),
                _ => f64::NAN,
            };
            self.factors.push(factor);
            if factor.is_nan() {
                sum
            } else {
                sum * factor
            }
        } else {
            sum
        };
        if !sum.is_finite() {
            let stage = if plan.fusion.method == Method::Rrf {
                Stage::Rrf
            } else {
                Stage::Fused
            };
            return Err(self.non_finite(key, sum, stage));
        }
        let score = match plan.normalizer {
            None => sum,
            Some(top) => {
                self.sums.push(sum);
                let s = sum / top;
                if !s.is_finite() {
                    return Err(self.non_finite(key, s, Stage::Normalized));
                }
                s
            }
        };
        self.scores.push(score);
        Ok(())
    }

    /// The error of key `key`'s score that is not finite.
    #[cold]
    #[inline(never)]
    fn non_finite(&self, key: usize, score: f64, stage: Stage) -> Error {
        let first = self.keys[key].first;
        Problem::NonFiniteScore {
            key: KeyRef::at(first.0 as usize, first.1 as usize),
            score,
            stage,
        }
        .into()
    }

    /// The values hits are ordered by: the canonical sums (the scores unless normalised).
    fn order_values(&self) -> &[f64] {
        if self.sums.is_empty() {
            &self.scores
        } else {
            &self.sums
        }
    }

    /// Step 3: drops the keys whose score is below `min_score`, orders the rest by score
    /// descending, ties by first appearance (`TieBreak::BestRank`) or by the keys' values
    /// ascending (`TieBreak::Key`: the i64 keys of [`super::keys::Rows`]; for other keys use
    /// [`Workspace::rank_groups`]), and keeps the page `[offset, offset + limit)`. Only the page
    /// is sorted fully when a limit is given.
    pub fn rank(&mut self, plan: &Plan) {
        // `Cancel::none()` never stops: the ranking always completes.
        let _ = self.rank_cancellable(plan, &Cancel::none());
    }

    /// [`Workspace::rank`] that `cancel` can stop (`Problem::Interrupted`, the page left empty):
    /// it is polled between pieces of the sorts (see [`cancel::sort_unstable_by_key`]).
    pub fn rank_cancellable(&mut self, plan: &Plan, cancel: &Cancel<'_>) -> Result<(), Error> {
        let p = &plan.fusion;
        let n_keys = self.scores.len();
        self.page.clear();
        let ranked = match p.tie_break {
            TieBreak::BestRank if p.limit.is_none() && n_keys < 1 << 31 => {
                self.rank_all(plan, cancel)
            }
            TieBreak::BestRank
                if page_end(p.offset, p.limit, n_keys) <= TOP_MAX
                    && page_end(p.offset, p.limit, n_keys) * 4 <= n_keys =>
            {
                self.rank_top(plan, cancel)
            }
            TieBreak::BestRank => {
                // Sort keys: the score's sort bits, then the id (unique: never equal).
                let mut order = std::mem::take(&mut self.order);
                order.clear();
                let by = self.order_values();
                for (id, &s) in self.scores.iter().enumerate() {
                    if p.min_score.is_none_or(|m| s >= m) {
                        order.push((descending_bits(by[id]) as u128) << 64 | id as u128);
                    }
                }
                let end = page_end(p.offset, p.limit, order.len());
                let mut sorted = Ok(());
                if p.offset < end {
                    if end < order.len() {
                        order.select_nth_unstable(end - 1);
                        order.truncate(end);
                    }
                    sorted = cancel::sort_unstable_by_key(&mut order, &|&e| e, cancel);
                    if sorted.is_ok() {
                        self.page
                            .extend(order[p.offset..].iter().map(|&e| e as u32));
                    }
                }
                self.order = order;
                sorted
            }
            TieBreak::Key => {
                // By score bits, then by key (keys are unique within a query).
                let mut page = std::mem::take(&mut self.page);
                let (by, keys, scores) = (self.order_values(), &self.keys, &self.scores);
                page.extend(
                    (0..n_keys as u32)
                        .filter(|&id| p.min_score.is_none_or(|m| scores[id as usize] >= m)),
                );
                let sort_key = |&id: &u32| {
                    (
                        descending_bits(by[id as usize]),
                        flip(keys[id as usize].key),
                    )
                };
                let end = page_end(p.offset, p.limit, page.len());
                if end < page.len() {
                    if end > 0 {
                        page.select_nth_unstable_by_key(end - 1, sort_key);
                    }
                    page.truncate(end);
                }
                let sorted = cancel::sort_unstable_by_key(&mut page, &sort_key, cancel);
                page.drain(..p.offset.min(page.len()));
                self.page = page;
                sorted
            }
        };
        if ranked.is_err() {
            self.page.clear();
        }
        ranked
    }

    /// `rank` of a short page with ties by first appearance (at most [`TOP_MAX`] keys up to its
    /// end): the best keys kept sorted in a small buffer as the keys go by, in id order, each
    /// rejected by one comparison once the buffer is full and it is no better than the last.
    fn rank_top(&mut self, plan: &Plan, cancel: &Cancel<'_>) -> Result<(), Error> {
        let p = &plan.fusion;
        let end = page_end(p.offset, p.limit, self.scores.len());
        let mut top = std::mem::take(&mut self.order);
        top.clear();
        let by = self.order_values();
        let mut checked = Ok(());
        if end > 0 {
            'scan: for block in blocks(self.scores.len(), POLL_KEYS) {
                if let Err(e) = cancel.check() {
                    checked = Err(e);
                    break 'scan;
                }
                for id in block {
                    if p.min_score.is_some_and(|m| self.scores[id] < m) {
                        continue;
                    }
                    // Sort keys as `rank`'s: the score's sort bits, then the id.
                    let e = (descending_bits(by[id]) as u128) << 64 | id as u128;
                    if top.len() == end {
                        if e >= top[end - 1] {
                            continue;
                        }
                        top.pop();
                    }
                    let mut i = top.len();
                    while i > 0 && top[i - 1] > e {
                        i -= 1;
                    }
                    top.insert(i, e);
                }
            }
        }
        if checked.is_ok() {
            self.page
                .extend(top.iter().skip(p.offset).map(|&e| e as u32));
        }
        self.order = top;
        checked
    }

    /// `rank` for the whole order with ties by first appearance: sorts u64 keys (the score's
    /// sort bits with the low bits replaced by the key id) rather than u128, then re-sorts, with
    /// the full score, each run of keys whose scores agree on every bit but those low ones.
    fn rank_all(&mut self, plan: &Plan, cancel: &Cancel<'_>) -> Result<(), Error> {
        let p = &plan.fusion;
        let n = self.scores.len() as u64;
        let bits = (64 - n.leading_zeros()).max(1);
        let low = (1u64 << bits) - 1;
        self.page.clear();
        let mut order = std::mem::take(&mut self.order);
        let mut packed = std::mem::take(&mut self.packed);
        let mut fulls = std::mem::take(&mut self.fulls);
        packed.clear();
        let by = self.order_values();
        for (id, (&s, &b)) in self.scores.iter().zip(by).enumerate() {
            if p.min_score.is_some_and(|m| s < m) {
                continue;
            }
            packed.push((descending_bits(b) & !low) | id as u64);
        }
        let sorted = cancel::sort_unstable_by_key(&mut packed, &|&x| x, cancel);
        // Usually the order by the high bits is already the order by the full scores (exact
        // ties are in id order by construction): one check of every neighbouring pair, with no
        // branch to mispredict (each key's full sort bits computed once, and kept).
        fulls.clear();
        fulls.extend(
            packed
                .iter()
                .map(|&x| descending_bits(by[(x & low) as usize])),
        );
        let ordered = fulls.windows(2).fold(true, |o, w| o & (w[0] <= w[1]));
        let mut sorted = sorted;
        if !ordered && sorted.is_ok() {
            // Scores that differ only in the replaced low bits (common when sums of a few
            // values are equal but for their rounding, as with the rank norm): each group of
            // equal high bits holding a pair out of order is sorted by the full score, then id.
            let mut i = 1;
            while i < packed.len() && sorted.is_ok() {
                if fulls[i - 1] <= fulls[i] {
                    i += 1;
                    continue;
                }
                let head = packed[i] & !low;
                let mut start = i - 1;
                while start > 0 && packed[start - 1] & !low == head {
                    start -= 1;
                }
                let mut end = i + 1;
                while end < packed.len() && packed[end] & !low == head {
                    end += 1;
                }
                order.clear();
                order.extend(
                    (start..end).map(|j| (fulls[j] as u128) << 64 | (packed[j] & low) as u128),
                );
                sorted = cancel::sort_unstable_by_key(&mut order, &|&e| e, cancel);
                for (j, &e) in (start..end).zip(&order) {
                    packed[j] = head | (e as u64 & low);
                    fulls[j] = (e >> 64) as u64;
                }
                // The next group starts at `end` (higher bits: ordered after this one).
                i = end + 1;
            }
        }
        if sorted.is_ok() {
            self.page
                .extend(packed.iter().skip(p.offset).map(|&x| (x & low) as u32));
        }
        self.order = order;
        self.packed = packed;
        self.fulls = fulls;
        sorted
    }

    /// Step 3 with tied keys ordered by the caller: like [`Workspace::rank`] with ties by first
    /// appearance, then `sort(group, firsts)` reorders every group of two or more keys of exactly
    /// equal score (ordering value), each group in order from the best, *before* the page is cut
    /// (so it sees the same groups whatever the page); `firsts` gives a key's first occurrence.
    /// `sort`'s error stops the ranking, and so does `cancel` (polled between pieces of the sort
    /// of all keys).
    pub fn rank_groups<E: From<Error>>(
        &mut self,
        plan: &Plan,
        cancel: &Cancel<'_>,
        mut sort: impl FnMut(&mut [u32], &Firsts<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let p = &plan.fusion;
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        let by = self.order_values();
        for (id, &s) in self.scores.iter().enumerate() {
            if p.min_score.is_none_or(|m| s >= m) {
                order.push((descending_bits(by[id]) as u128) << 64 | id as u128);
            }
        }
        self.page.clear();
        if let Err(e) = cancel::sort_unstable_by_key(&mut order, &|&e| e, cancel) {
            self.order = order;
            return Err(e.into());
        }
        self.page.extend(order.iter().map(|&e| e as u32));
        let mut start = 0;
        while start < order.len() {
            let head = order[start] >> 64;
            let mut end = start + 1;
            while end < order.len() && order[end] >> 64 == head {
                end += 1;
            }
            if end - start > 1 {
                let firsts = Firsts(&self.keys[..self.n_keys]);
                if let Err(e) = sort(&mut self.page[start..end], &firsts) {
                    self.order = order;
                    return Err(e);
                }
            }
            start = end;
        }
        self.order = order;
        let end = page_end(p.offset, p.limit, self.page.len());
        self.page.truncate(end);
        self.page.drain(..p.offset.min(end));
        Ok(())
    }

    /// The key ids of the page, best first.
    pub fn page(&self) -> &[u32] {
        &self.page
    }

    /// The value of key `id` (the i64 key for [`super::keys::Rows`]).
    pub fn key(&self, id: u32) -> i64 {
        self.keys[id as usize].key
    }

    /// The score of key `id`, as returned (normalised when asked).
    pub fn score(&self, id: u32) -> f64 {
        self.scores[id as usize]
    }

    /// (list, position) of key `id`'s first occurrence in scan order.
    pub fn first_seen(&self, id: u32) -> (u32, u32) {
        self.keys[id as usize].first
    }

    /// Appends key `id`'s contributions, ordered by list then position; `scores` are the raw
    /// scores the query was fused with. Needs a workspace made with `trace = true` (else the
    /// dense layout has not kept where they came from).
    pub fn contributions(
        &self,
        id: u32,
        plan: &Plan,
        scores: Scores<'_>,
        out: &mut Vec<Contribution>,
    ) {
        let i = id as usize;
        if self.generic {
            let (a, b) = (self.scored.offsets[i], self.scored.offsets[i + 1]);
            out.extend_from_slice(&self.scored.contributions[a as usize..b as usize]);
            return;
        }
        let raw = |list: u32, position: u32| {
            scores
                .get(list as usize)
                .copied()
                .flatten()
                .map_or(f64::NAN, |s| s[position as usize])
        };
        // (The values were sorted in place by the canonical sum: computed again.)
        let contribution = |list: u32, position: u32| Contribution {
            list,
            position,
            value: plan.rank_term(list as usize, position as usize),
            raw: raw(list, position),
            normalized: f64::NAN,
        };
        let start = out.len();
        if self.dense {
            debug_assert!(self.keep_occurrences, "a workspace without traces");
            let at = i * self.stride;
            let n = self.count(i);
            out.extend(
                self.slot_occurrences[at..at + n]
                    .iter()
                    .map(|&(list, position)| contribution(list, position)),
            );
        } else {
            out.extend(
                self.grouped_of(i)
                    .iter()
                    .map(|o| contribution(o.list, o.position)),
            );
        }
        out[start..].sort_unstable_by_key(|c| (c.list, c.position));
    }

    /// [`Workspace::trace`] of a rank-based method in the dense layout without raw scores: each
    /// hit's contributions straight from its slots (at most [`DENSE_MAX_LISTS`]).
    fn trace_dense(&self, plan: &Plan, out: &mut Trace) {
        debug_assert!(self.keep_occurrences, "a workspace without traces");
        let n = self.page.len();
        out.contributions.reserve(n * self.stride);
        out.offsets.reserve(n);
        for &id in &self.page {
            let i = id as usize;
            let at = i * self.stride;
            let start = out.contributions.len();
            let n = self.count(i);
            let occurrences = &self.slot_occurrences[at..at + n];
            if self.stride == 2 {
                // Two lists: the slots still hold the values in scan order (`score_keys` only
                // reads them).
                let values = &self.slot_values[at..at + n];
                out.contributions.extend(occurrences.iter().zip(values).map(
                    |(&(list, position), &value)| Contribution {
                        list,
                        position,
                        value,
                        raw: f64::NAN,
                        normalized: f64::NAN,
                    },
                ));
            } else {
                out.contributions
                    .extend(occurrences.iter().map(|&(list, position)| Contribution {
                        list,
                        position,
                        value: plan.rank_term(list as usize, position as usize),
                        raw: f64::NAN,
                        normalized: f64::NAN,
                    }));
            }
            let mine = &mut out.contributions[start..];
            match mine {
                [_] => {}
                [a, b] => {
                    if (b.list, b.position) < (a.list, a.position) {
                        std::mem::swap(a, b);
                    }
                }
                _ => mine.sort_unstable_by_key(|c| (c.list, c.position)),
            }
            out.offsets.push(out.contributions.len());
        }
        let at = |v: &[f64], id: u32| v.get(id as usize).copied().unwrap_or(f64::NAN);
        out.factors
            .extend(self.page.iter().map(|&id| at(&self.factors, id)));
        out.divisors.resize(n, f64::NAN);
        out.boosts
            .extend(self.page.iter().map(|&id| at(&self.boosts, id)));
    }

    /// The trace of the page: every hit's contributions and what its method did with them, in
    /// page order.
    pub fn trace(&self, plan: &Plan, scores: Scores<'_>, out: &mut Trace) {
        out.clear();
        if !self.generic && self.dense && scores.iter().all(Option::is_none) {
            self.trace_dense(plan, out);
            return;
        }
        let at = |v: &[f64], id: u32| v.get(id as usize).copied().unwrap_or(f64::NAN);
        for &id in &self.page {
            self.contributions(id, plan, scores, &mut out.contributions);
            out.offsets.push(out.contributions.len());
            let (factors, divisors) = if self.generic {
                (&self.scored.factors[..], &self.scored.divisors[..])
            } else {
                (&self.factors[..], &[][..])
            };
            out.factors.push(at(factors, id));
            out.divisors.push(at(divisors, id));
            out.boosts.push(at(&self.boosts, id));
        }
    }
}
