//! Where the engine's keys come from: a [`KeySource`] turns the item at (list, position) of a
//! query into a dense key id, handing out new ids in scan order (so *id order is first-appearance
//! order*, the default tie order), and keeps each key's seen-lists bits for the scan.
//!
//! - [`Rows`]: i64 keys (a batch row, exact int keys, tokens), hashed in an [`IdTable`] reused
//!   from row to row; an entry equal to the pad is a hole.
//! - [`Interned`]: any other keys, interned by a caller-supplied function (Python objects in the
//!   binding; [`Interner`] for any `K: Hash + Eq`, such as the doc ids of run files).

use std::hash::{BuildHasher, Hash};
use std::hint;

use hashbrown::HashMap;

use crate::cancel::{self, Cancel};
use crate::error::Error;

/// The key at one place of the input, as the scan needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Found {
    /// Its dense id: an existing one, or the `next` id the scan offered for a new key.
    pub id: u32,
    /// Its value: the i64 key itself for [`Rows`], the id for [`Interned`].
    pub key: i64,
    /// Where its seen-lists bits are kept ([`KeySource::seen`]).
    pub at: usize,
}

/// The keys of one query. Lists are numbered as in the plan; positions are 0-based.
pub trait KeySource {
    /// Errors of the source itself (a Python key's `__hash__`), stopping the scan at once.
    type Error: From<Error>;
    /// The length of list `list`, holes included.
    fn len(&self, list: usize) -> usize;
    /// Makes room for at most `n` distinct keys; forgets the previous query's. `cancel` may stop
    /// the growth of a large table (`Problem::Interrupted`).
    fn reset(&mut self, n: usize, cancel: &Cancel<'_>) -> Result<(), Error>;
    /// The key at (`list`, `position`), or `None` for a hole. A key not met before in this
    /// query gets the id `next` (the number of distinct keys met so far) and no seen-lists bits.
    fn find(
        &mut self,
        list: usize,
        position: usize,
        next: u32,
    ) -> Result<Option<Found>, Self::Error>;
    /// Whether the item at (`list`, `position`) is a hole (a pad), not a key.
    fn is_hole(&self, list: usize, position: usize) -> bool;
    /// How many of the first `n` items of list `list` are holes.
    fn holes(&self, list: usize, n: usize) -> u32 {
        (0..n).filter(|&p| self.is_hole(list, p)).count() as u32
    }
    /// The seen-lists bits (8 of them) of the key whose [`Found::at`] is `at`.
    fn seen(&self, at: usize) -> u32;
    fn set_seen(&mut self, at: usize, seen: u32);
}

/// A hash table i64 key -> dense id for one row at a time: open addressing with linear probing,
/// at most half full, and a generation stamp per slot, so that starting a new row costs nothing.
/// The hash is a folded multiply of the key with a per-table random seed (foldhash's mixing), so
/// a crafted set of ids cannot be made to collide without knowing the seed. Each slot also has 8
/// bits for its key's seen-lists bits, in the cache line the probe has just read.
pub struct IdTable {
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
        IdTable {
            slots: Vec::new(),
            generation: 0,
            mask: 0,
            seed: super::Hasher::default().hash_one(0x5EED_u64) | 1,
        }
    }
}

impl IdTable {
    /// Empties the table for at most `n` keys (a larger table is filled in pieces, `cancel`
    /// polled between them: `Problem::Interrupted` leaves the table empty).
    pub fn reset(&mut self, n: usize, cancel: &Cancel<'_>) -> Result<(), Error> {
        let capacity = (n.max(8) * 3 / 2).next_power_of_two();
        if capacity > self.slots.len() {
            self.slots.clear();
            self.mask = 0;
            cancel::resize(&mut self.slots, capacity, Slot::default(), cancel)?;
            self.generation = 0;
        }
        self.generation += 1;
        if self.generation == GENERATIONS {
            self.slots.fill(Slot::default());
            self.generation = 1;
        }
        // A smaller mask for a small row keeps its probes in a few cache lines.
        self.mask = capacity - 1;
        Ok(())
    }

    #[inline]
    fn slot_of(&self, key: i64) -> usize {
        let m = ((key as u64) ^ self.seed) as u128 * 0x9E37_79B9_7F4A_7C15_u128;
        ((m as u64) ^ ((m >> 64) as u64)) as usize & self.mask
    }

    /// (slot, id) of `key`, inserting it with id `next` and no seen-lists bits when it is new.
    #[inline(always)]
    pub fn slot_of_key(&mut self, key: i64, next: u32) -> (usize, u32) {
        let mut i = self.slot_of(key);
        loop {
            let s = self.slots[i];
            let empty = s.tag >> 8 != self.generation;
            // Taken unless the slot holds another key; the slot is written either way
            // (unchanged when the key is there). Whether a key is new is as likely as not:
            // one branch on "empty or this key", almost always taken (`black_box` keeps LLVM
            // from splitting it into a branch on each, the first mispredicted about half the
            // time; rrf_batch B, 1 thread, 6-11% faster).
            if hint::black_box(empty | (s.key == key)) {
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
    pub fn seen(&self, slot: usize) -> u32 {
        self.slots[slot].tag & 0xFF
    }

    #[inline]
    pub fn set_seen(&mut self, slot: usize, seen: u32) {
        self.slots[slot].tag = self.generation << 8 | seen;
    }
}

/// i64 keys: every list's row of one query, hashed in a table the caller reuses across rows.
pub struct Rows<'a> {
    rows: &'a [&'a [i64]],
    pad: Option<i64>,
    table: &'a mut IdTable,
}

impl<'a> Rows<'a> {
    /// `rows[i]` is list i's row; entries equal to `pad` are holes.
    pub fn new(rows: &'a [&'a [i64]], pad: Option<i64>, table: &'a mut IdTable) -> Self {
        Rows { rows, pad, table }
    }
}

impl KeySource for Rows<'_> {
    type Error = Error;

    #[inline]
    fn len(&self, list: usize) -> usize {
        self.rows[list].len()
    }

    fn reset(&mut self, n: usize, cancel: &Cancel<'_>) -> Result<(), Error> {
        self.table.reset(n, cancel)
    }

    #[inline(always)]
    fn find(&mut self, list: usize, position: usize, next: u32) -> Result<Option<Found>, Error> {
        let key = self.rows[list][position];
        if self.pad == Some(key) {
            return Ok(None);
        }
        let (at, id) = self.table.slot_of_key(key, next);
        Ok(Some(Found { id, key, at }))
    }

    fn is_hole(&self, list: usize, position: usize) -> bool {
        self.pad == Some(self.rows[list][position])
    }

    /// One pass over the row's slice (vectorised), not a call per item.
    fn holes(&self, list: usize, n: usize) -> u32 {
        match self.pad {
            Some(pad) => self.rows[list]
                .iter()
                .take(n)
                .filter(|&&k| k == pad)
                .count() as u32,
            None => 0,
        }
    }

    #[inline]
    fn seen(&self, at: usize) -> u32 {
        self.table.seen(at)
    }

    #[inline]
    fn set_seen(&mut self, at: usize, seen: u32) {
        self.table.set_seen(at, seen);
    }
}

/// Keys interned by `intern(list, position, next)`, which returns the key's dense id: an id
/// already handed out for an equal key, or `next` for a new one. No holes.
pub struct Interned<'a, F> {
    lens: &'a [usize],
    intern: F,
    seen: Vec<u8>,
}

impl<'a, E: From<Error>, F: FnMut(usize, usize, u32) -> Result<u32, E>> Interned<'a, F> {
    /// `lens[i]` is the length of list i.
    pub fn new(lens: &'a [usize], intern: F) -> Self {
        Interned {
            lens,
            intern,
            seen: Vec::new(),
        }
    }
}

impl<E: From<Error>, F: FnMut(usize, usize, u32) -> Result<u32, E>> KeySource for Interned<'_, F> {
    type Error = E;

    #[inline]
    fn len(&self, list: usize) -> usize {
        self.lens[list]
    }

    fn reset(&mut self, n: usize, _: &Cancel<'_>) -> Result<(), Error> {
        self.seen.clear();
        self.seen.resize(n, 0); // one byte per key
        Ok(())
    }

    #[inline]
    fn find(&mut self, list: usize, position: usize, next: u32) -> Result<Option<Found>, E> {
        let id = (self.intern)(list, position, next)?;
        if id as usize >= self.seen.len() {
            self.seen.resize(id as usize + 1, 0);
        }
        Ok(Some(Found {
            id,
            key: i64::from(id),
            at: id as usize,
        }))
    }

    fn is_hole(&self, _: usize, _: usize) -> bool {
        false
    }

    #[inline]
    fn seen(&self, at: usize) -> u32 {
        u32::from(self.seen[at])
    }

    #[inline]
    fn set_seen(&mut self, at: usize, seen: u32) {
        self.seen[at] = seen as u8;
    }
}

/// Dense ids for any `K: Hash + Eq`, in order of first sight: the interning function of
/// [`Interned`] for plain Rust keys (equal keys get one id).
pub struct Interner<'a, K> {
    lists: &'a [&'a [K]],
    ids: HashMap<&'a K, u32, super::Hasher>,
}

impl<'a, K: Hash + Eq> Interner<'a, K> {
    pub fn new(lists: &'a [&'a [K]]) -> Self {
        let total = lists.iter().map(|l| l.len()).sum();
        Interner {
            lists,
            ids: HashMap::with_capacity_and_hasher(total, super::Hasher::default()),
        }
    }

    /// The id of the item at (`list`, `position`): its key's, or `next` when the key is new.
    #[inline]
    pub fn intern(&mut self, list: usize, position: usize, next: u32) -> u32 {
        *self.ids.entry(&self.lists[list][position]).or_insert(next)
    }

    /// The key with id `id` is the item at `first_seen(id)`; this gives the key itself.
    pub fn key(&self, (list, position): (u32, u32)) -> &'a K {
        &self.lists[list as usize][position as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_table_forgets_every_row_across_the_generation_wrap() {
        let none = Cancel::none();
        let mut t = IdTable::default();
        t.reset(4, &none).unwrap();
        t.generation = GENERATIONS - 2;
        for round in 0..4u32 {
            t.reset(4, &none).unwrap();
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
        }
        assert!(t.generation < 4);
    }

    #[test]
    fn the_interner_gives_equal_keys_one_id_in_order_of_first_sight() {
        let a: &[&str] = &["x", "y", "x"];
        let b: &[&str] = &["y", "z"];
        let lists = [a, b];
        let mut interner = Interner::new(&lists);
        let mut next = 0;
        let mut ids = Vec::new();
        for (l, p) in [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2)] {
            let id = interner.intern(l, p, next);
            if id == next {
                next += 1;
            }
            ids.push(id);
        }
        assert_eq!(ids, [0, 1, 1, 2, 0]);
        assert_eq!(*interner.key((1, 1)), "z");
    }
}
