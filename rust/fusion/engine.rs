//! The fusion engine: one reusable [`Workspace`] that fuses one query (a row of a batch) at a
//! time, for every caller (`rrf`/`fuse`/`Fusion`, the batch rows, the native fusion of run files):
//!
//! 1. **scan** ([`Workspace::fuse`]): the interleaved scan — rank 1 of every list, then rank 2,
//!    ... — over the lists read (weight not 0; the first `window` items), the key source turning
//!    items into dense ids in scan order. Duplicates inside a list are resolved here; holes
//!    (pads) are skipped without shifting the ranks behind them.
//! 2. **score** (also [`Workspace::fuse`]): every key's score by the kernel
//!    ([`super::kernel`]: each occurrence's value and term, a key's terms combined), checked
//!    finite, normalised with `normalize=True`; Condorcet's by [`super::condorcet`]. Then
//!    [`Workspace::boost`] when asked.
//! 3. **rank** ([`Workspace::rank`], or [`Workspace::rank_groups`] when the caller orders tied
//!    keys itself): `min_score`, the order (score descending, then the tie order), the page
//!    (`offset`, `limit`).
//!
//! Afterwards [`Workspace::page`] holds the key ids of the page, best first, and
//! [`Workspace::trace`] their contributions. [`Workspace::run`] does the three steps for a
//! caller that has nothing of its own to add between them. Nothing is allocated once the
//! workspace has grown.
//!
//! The scan has two layouts. *Dense* (each key counted at most once per list, at most
//! [`DENSE_MAX_LISTS`] lists read; the common case): every key has one slot per list read, filled
//! in scan order with its terms — the plan's rank terms, or terms made before the scan
//! ([`Terms`]) — or, when the terms can only be made after the scan (the borda norm, a repeat
//! skipped, a norm that fails), with its positions, slot s for the s-th list read; its
//! seen-lists bits live with the key source (in the hash slot just probed). *General* (more
//! lists, or `duplicates="sum"`): the counted occurrences are recorded in scan order and grouped
//! by key with a counting sort. Untraced dense queries are scored from the slots
//! ([`kernel::score_slots`]); traced ones, general ones and those with a value that is not
//! finite from every key's contributions ([`Scored::score_contributions`]); both combine a key's
//! terms by [`kernel::combine`].

use std::cell::RefCell;

use hashbrown::HashSet;

use super::condorcet::{self, Condorcet};
use super::kernel::{self, ones, Dense, Occurrences, Scored, Scores, Terms, Valuer, POLL_KEYS};
use super::keys::{IdTable, KeySource};
use super::methods::{Combine, Term};
use super::params::{Duplicates, Norm, Plan, TieBreak};
use super::trace::{Contribution, Trace};
use super::Hasher;
use crate::cancel::{self, Cancel};
use crate::error::{Error, KeyRef, Problem, Stage};

/// Dense mode is used with at most this many lists read (and duplicates "first" or "error").
pub const DENSE_MAX_LISTS: usize = 8;

/// A large query polls its [`Cancel`] every this many positions of the scan (times the lists
/// read), and every [`POLL_KEYS`] keys scored or ranked.
const POLL_POSITIONS: usize = 1 << 12;

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
    /// read; dense layout: the bits the source keeps, copied when something reads them). Terms
    /// made before the scan for the geometric and harmonic means set bit `8 + slot` too when
    /// the slot's normalised value is kept (see [`Terms`]).
    seen: u64,
    /// (list, position) of its first occurrence in scan order.
    first: (u32, u32),
}

/// What a caller adds to a query's fusion ([`Workspace::run`]): the values of its boost, and an
/// order of tied keys of its own.
pub trait Caller<E> {
    /// The boost's value of a fused key (its i64 value as the source gave it, its first
    /// occurrence), if it has one; asked for every fused key when the plan boosts.
    fn boost(&mut self, _key: i64, _first: (u32, u32)) -> Result<Option<f64>, E> {
        Ok(None)
    }

    /// Whether it orders tied keys itself with `tie_break="key"` (else: by the source's i64
    /// keys).
    fn orders_ties(&self) -> bool {
        false
    }

    /// Orders a group of tied keys (see [`Workspace::rank_groups`]).
    fn order_ties(&mut self, _group: &mut [u32], _firsts: &Firsts<'_>) -> Result<(), E> {
        Ok(())
    }
}

/// A caller that adds nothing: no boost values, ties by the source's i64 keys.
pub struct Nothing;

impl<E> Caller<E> for Nothing {}

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
    /// Whether the queries' traces are read: the scan records each occurrence's (list,
    /// position).
    keep_occurrences: bool,
    /// This query's: whether the scan records where each occurrence came from (traces, and the
    /// contributions' path), and what its dense slots hold.
    record: bool,
    source: Source,
    /// This query's scores came from every key's contributions (`scored`), not from its slots.
    by_contributions: bool,
    entry_offsets: Vec<u32>,
    entries: Vec<(u32, u32)>,
    firsts: Vec<(u32, u32)>,
    /// Per list (by index), the items read (holes not counted).
    n_read: Vec<u32>,
    scored: Scored,
    terms: Terms,
    copeland: Condorcet,
    /// Per key, what the boost added (NaN: nothing).
    boosts: Vec<f64>,
    seen_set: HashSet<(u32, u32), Hasher>,
    occurrences: Vec<Occurrence>,
    offsets: Vec<u32>,
    cursor: Vec<u32>,
    grouped: Vec<Occurrence>,
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
}

/// What a caller keeps from query to query: the workspace, the id table its i64 keys are hashed
/// in, and the buffer its traces are written to.
#[derive(Default)]
pub struct Engine {
    pub ws: Workspace,
    pub table: IdTable,
    pub trace: Trace,
}

/// The most engines kept per thread.
const KEPT_MAX: usize = 4;

thread_local! {
    /// Engines given back on this thread, for its next calls (their buffers have grown already).
    // Boxed: taking one and giving it back moves a pointer, not the workspace.
    #[allow(clippy::vec_box)]
    static KEPT: RefCell<Vec<Box<Engine>>> = const { RefCell::new(Vec::new()) };
}

impl Engine {
    /// A new engine whose queries' traces are (`trace`) or are not read.
    pub fn new(trace: bool) -> Self {
        Engine {
            ws: Workspace::new(trace),
            ..Engine::default()
        }
    }

    /// An engine kept on this thread, else a new one (a call may start while another call on
    /// this thread uses one: a key's `__eq__` that fuses).
    pub fn take(trace: bool) -> Box<Self> {
        // (None once the thread's storage is torn down: a new engine.)
        let kept = KEPT
            .try_with(|k| k.try_borrow_mut().ok()?.pop())
            .ok()
            .flatten();
        let mut engine = kept.unwrap_or_default();
        engine.ws.set_trace(trace);
        engine
    }

    /// Keeps the engine for this thread's next call.
    pub fn give_back(self: Box<Self>) {
        // (Dropped when the thread's storage is torn down.)
        let _ = KEPT.try_with(|k| match k.try_borrow_mut() {
            Ok(mut kept) if kept.len() < KEPT_MAX => kept.push(self),
            _ => {}
        });
    }
}

/// What the dense scan writes in a key's slots.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Source {
    /// The plan's rank terms (RRF, RBC, the ISR family), in scan order.
    #[default]
    RankTerms,
    /// The terms made before the scan ([`Terms`]), in scan order.
    Terms,
    /// Its positions, slot s for the s-th list read: the terms are made after the scan.
    Positions,
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

    /// One query's fusion, every step: scan and score `keys` (raw scores `scores`), boost when
    /// the plan has a boost weight (the values from `caller`), rank (tied keys with
    /// `tie_break="key"` by `caller`, or by the source's i64 keys) and page. Afterwards
    /// [`Workspace::page`] holds the page and [`Workspace::trace`] explains it. Errors: the
    /// steps' and `caller`'s, the first one stopping the query.
    pub fn run<S, C, E>(
        &mut self,
        plan: &Plan,
        keys: &mut S,
        scores: Scores<'_>,
        caller: &mut C,
        cancel: &Cancel<'_>,
    ) -> Result<(), E>
    where
        S: KeySource,
        C: Caller<E>,
        E: From<Error> + From<S::Error>,
    {
        self.fuse_cancellable(keys, scores, plan, cancel)?;
        if plan.fusion.boost_weight.is_some() {
            self.boost(plan, |_, key, first| caller.boost(key, first))?;
        }
        if plan.fusion.tie_break == TieBreak::Key && caller.orders_ties() {
            return self.rank_groups(plan, cancel, |group, firsts| {
                caller.order_ties(group, firsts)
            });
        }
        Ok(self.rank_cancellable(plan, cancel)?)
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
        self.boosts.clear();
        self.by_contributions = false;
        self.set_read(plan);
        let method = plan.fusion.method;
        let rank_terms = method.term().of_rank();
        let dense = plan.fusion.duplicates != Duplicates::Sum && self.read.len() <= DENSE_MAX_LISTS;
        // Traced rank terms are made again for the page from the occurrences (a page is often
        // short): every other traced method, and every method but those in the general layout,
        // is scored from its contributions.
        let contributions = if rank_terms {
            !dense && self.keep_occurrences
        } else {
            !dense || self.keep_occurrences
        };
        self.record = self.keep_occurrences || contributions || !rank_terms;
        self.count_read(keys, plan);
        if method.combine() == Combine::Copeland {
            self.source = Source::Positions;
            self.record = true;
            self.scan(keys, plan, cancel)?;
            return Ok(self.score_copeland(plan, scores, cancel)?);
        }
        if contributions {
            self.source = Source::Positions;
            self.scan(keys, plan, cancel)?;
            return Ok(self.score_by_contributions(plan, scores, cancel)?);
        }
        if rank_terms {
            self.source = Source::RankTerms;
            self.scan(keys, plan, cancel)?;
            if !self.dense {
                return Ok(self.score_grouped(plan, cancel)?);
            }
            return Ok(self.score_by_slots(plan, cancel)?);
        }
        if Terms::apply(plan, &self.read) && self.terms_before_scan(keys, scores, plan, cancel) {
            self.source = Source::Terms;
            self.record = self.keep_occurrences;
            self.scan(keys, plan, cancel)?;
            // A repeat skipped: each list's norm is over other items. Scanned again below.
            if (0..self.stride).all(|slot| self.skipped[slot] == self.terms.holes[slot]) {
                return Ok(self.score_by_slots(plan, cancel)?);
            }
        }
        self.source = Source::Positions;
        self.record = true;
        self.scan(keys, plan, cancel)?;
        Ok(self.score_deferred(plan, scores, cancel)?)
    }

    /// The terms of every list read, made before the scan ([`Terms::before_scan`]).
    fn terms_before_scan<S: KeySource>(
        &mut self,
        keys: &mut S,
        scores: Scores<'_>,
        plan: &Plan,
        cancel: &Cancel<'_>,
    ) -> bool {
        self.terms.before_scan(
            plan,
            &self.read,
            scores,
            |list| keys.len(list),
            |list, position| keys.is_hole(list, position),
            |list, n| keys.holes(list, n),
            cancel,
        )
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
        let needed = plan.fusion.method.term() == Term::Points
            || matches!(plan.norm, Norm::Rank | Norm::Borda);
        if !needed {
            return;
        }
        for &list in &self.read {
            let n = plan.read_len(list, keys.len(list));
            self.n_read[list] = n as u32 - keys.holes(list, n);
        }
    }

    /// Every key's counted occurrences (list, position), ordered by list then position, into
    /// `entries` (key k's at `entry_offsets[k]..`), and its first occurrence into `firsts`.
    fn collect_entries(&mut self) {
        self.entry_offsets.clear();
        self.entries.clear();
        self.firsts.clear();
        self.entry_offsets.push(0);
        if !self.dense {
            self.group();
        }
        for key in 0..self.n_keys {
            let start = self.entries.len();
            if self.dense {
                let at = key * self.stride;
                let n = ones(self.keys[key].seen);
                if self.source == Source::Positions {
                    // Slot s holds the position in the s-th list read.
                    let seen = self.keys[key].seen;
                    let read = &self.read;
                    let slots = &self.slot_values[at..at + self.stride];
                    self.entries.extend(
                        (0..self.stride)
                            .filter(|&s| seen >> s & 1 == 1)
                            .map(|s| (read[s] as u32, slots[s] as u32)),
                    );
                } else {
                    self.entries
                        .extend_from_slice(&self.slot_occurrences[at..at + n]);
                }
            } else {
                let (a, b) = (self.offsets[key] as usize, self.offsets[key + 1] as usize);
                let grouped = &self.grouped[a..b];
                self.entries
                    .extend(grouped.iter().map(|o| (o.list, o.position)));
            }
            self.entries[start..].sort_unstable();
            self.entry_offsets.push(self.entries.len() as u32);
            self.firsts.push(self.keys[key].first);
        }
    }

    /// Scores every key from its contributions ([`Scored::score_contributions`]), each list
    /// normalised over its counted items.
    fn score_by_contributions(
        &mut self,
        plan: &Plan,
        scores: Scores<'_>,
        cancel: &Cancel<'_>,
    ) -> Result<(), Error> {
        self.by_contributions = true;
        self.collect_entries();
        let (offsets, entries) = (&self.entry_offsets, &self.entries);
        self.scored.normalise(
            plan,
            &self.read,
            scores,
            |list, out| out.extend(entries.iter().filter(|e| e.0 as usize == list).map(|e| e.1)),
            cancel,
        )?;
        let q = Occurrences {
            read: &self.read,
            n_read: &self.n_read,
            offsets,
            entries,
            firsts: &self.firsts,
            scores,
        };
        self.scored.score_contributions(plan, &q, cancel)?;
        self.scores.clear();
        self.scores.extend_from_slice(&self.scored.scores);
        self.normalize(plan)
    }

    /// Scores rank terms in the general layout, untraced ([`kernel::score_rank_terms`]).
    fn score_grouped(&mut self, plan: &Plan, cancel: &Cancel<'_>) -> Result<(), Error> {
        self.group();
        let (offsets, grouped, info) = (&self.offsets, &self.grouped, &self.keys);
        let mut scores = std::mem::take(&mut self.scores);
        scores.clear();
        let scored = kernel::score_rank_terms(
            plan,
            self.n_keys,
            |k| {
                grouped[offsets[k] as usize..offsets[k + 1] as usize]
                    .iter()
                    .map(|o| (o.list, o.position))
            },
            |k| info[k].first,
            &mut scores,
            cancel,
        );
        self.scores = scores;
        scored?;
        self.normalize(plan)
    }

    /// Scores a dense query from its slots, untraced ([`kernel::score_slots`]).
    fn score_by_slots(&mut self, plan: &Plan, cancel: &Cancel<'_>) -> Result<(), Error> {
        let keys = &self.keys;
        let q = Dense {
            plan,
            read: &self.read,
            n_keys: self.n_keys,
            stride: self.stride,
            by_slot: self.source == Source::Positions,
            seen: |k: usize| keys[k].seen,
            first: |k: usize| keys[k].first,
        };
        self.scores.clear();
        if self.stride == 2 && !q.by_slot {
            kernel::score_slots::<true, _, _>(&q, &mut self.slot_values, &mut self.scores, cancel)?;
        } else {
            kernel::score_slots::<false, _, _>(
                &q,
                &mut self.slot_values,
                &mut self.scores,
                cancel,
            )?;
        }
        self.normalize(plan)
    }

    /// A dense query whose slots hold positions: each list normalised over its counted items,
    /// then its terms made in place and scored from the slots — or, when a normalised value is
    /// not finite (its error names the first, as the contributions' path finds it), or the mean
    /// needs to know which values it keeps, from every key's contributions.
    fn score_deferred(
        &mut self,
        plan: &Plan,
        scores: Scores<'_>,
        cancel: &Cancel<'_>,
    ) -> Result<(), Error> {
        let how = plan.fusion.method.combine();
        let means = how.is_mean();
        let (stride, read, n_keys) = (self.stride, &self.read, self.n_keys);
        let (slot_values, info) = (&self.slot_values, &self.keys);
        let counted = |list: usize, out: &mut Vec<u32>| {
            let Ok(slot) = read.binary_search(&list) else {
                return;
            };
            out.extend(
                (0..n_keys)
                    .filter(|&k| info[k].seen >> slot & 1 == 1)
                    .map(|k| slot_values[k * stride + slot] as u32),
            );
        };
        self.scored
            .normalise(plan, &self.read, scores, counted, cancel)?;
        let valuer = Valuer::new(plan, self.scored.norms(), &self.n_read, self.n_keys);
        let n_keys = self.n_keys;
        // A score fusion: each list's terms made at once, as before the scan but normalised
        // over the items counted.
        if plan.reads_scores()
            && self
                .terms
                .after_scan(plan, &self.read, scores, self.scored.norms())
        {
            let (read, terms) = (&self.read, &self.terms);
            let term_of = |slot: usize, position: u32| {
                if position == kernel::UNRANKED {
                    let v = valuer.value(read[slot], position, f64::NAN);
                    kernel::term(plan, read[slot], position, v)
                } else {
                    terms.term(slot, position as usize)
                }
            };
            let (info, slots) = (&mut self.keys, &mut self.slot_values);
            // The geometric and harmonic means: which values each key keeps (bit 8 + slot).
            if !terms.kept.is_empty() {
                for (k, info) in info.iter_mut().enumerate().take(n_keys) {
                    for s in 0..stride {
                        if info.seen >> s & 1 == 1 && terms.kept(s, slots[k * stride + s] as usize)
                        {
                            info.seen |= 1 << (8 + s);
                        }
                    }
                }
            }
            let seen = |k: usize| info[k].seen;
            kernel::fill_slots(plan, read, slots, n_keys, stride, seen, term_of, cancel)?;
            return self.score_by_slots(plan, cancel);
        }
        // The rank-based values (BordaFuse, the borda norm), or a value or term not finite.
        let (read, info, slot_values) = (&self.read, &self.keys, &self.slot_values);
        let raw = |slot: usize, position: u32| kernel::raw(scores, read[slot], position);
        let value =
            |slot: usize, position: u32| valuer.value(read[slot], position, raw(slot, position));
        // Every value the slots hold finite, and none a mean skips: else the contributions.
        let careful = means
            || (plan.reads_scores()
                && (0..n_keys).any(|k| {
                    (0..stride).any(|s| {
                        info[k].seen >> s & 1 == 1
                            && !value(s, slot_values[k * stride + s] as u32).is_finite()
                    })
                }));
        if careful {
            return self.score_by_contributions(plan, scores, cancel);
        }
        let seen = |k: usize| info[k].seen;
        let term_of = |slot: usize, position: u32| {
            kernel::term(plan, read[slot], position, value(slot, position))
        };
        kernel::fill_slots(
            plan,
            read,
            &mut self.slot_values,
            n_keys,
            stride,
            seen,
            term_of,
            cancel,
        )?;
        self.score_by_slots(plan, cancel)
    }

    /// Condorcet: its contributions (traced; the general layout) or none, then every key's
    /// wins ([`condorcet::copeland`]) from its counted occurrences.
    fn score_copeland(
        &mut self,
        plan: &Plan,
        scores: Scores<'_>,
        cancel: &Cancel<'_>,
    ) -> Result<(), Error> {
        if self.keep_occurrences || !self.dense {
            self.score_by_contributions(plan, scores, cancel)?;
            let (offsets, entries) = (&self.entry_offsets, &self.entries);
            condorcet::copeland(
                plan,
                &self.read,
                self.n_keys,
                |k| {
                    entries[offsets[k] as usize..offsets[k + 1] as usize]
                        .iter()
                        .copied()
                },
                &mut self.copeland,
                &mut self.scores,
                cancel,
            )?;
            self.scored.scores.clone_from(&self.scores);
            return Ok(());
        }
        // Untraced, from the scan's slots (by slot: the positions).
        let (stride, read) = (self.stride, &self.read);
        let (slots, info) = (&self.slot_values, &self.keys);
        condorcet::copeland(
            plan,
            &self.read,
            self.n_keys,
            |k| {
                let seen = info[k].seen;
                (0..stride)
                    .filter(move |&s| seen >> s & 1 == 1)
                    .map(move |s| (read[s] as u32, slots[k * stride + s] as u32))
            },
            &mut self.copeland,
            &mut self.scores,
            cancel,
        )
    }

    /// normalize=True: every score divided by the plan's normaliser, once every key's sum is
    /// known and finite (the order is by the sums, kept in `sums`); a quotient that is not finite
    /// is the error of the first such key.
    fn normalize(&mut self, plan: &Plan) -> Result<(), Error> {
        self.sums.clear();
        let Some(top) = plan.normalizer else {
            return Ok(());
        };
        self.sums.extend_from_slice(&self.scores);
        for (key, (score, &sum)) in self.scores.iter_mut().zip(&self.sums).enumerate() {
            *score = sum / top;
            if !score.is_finite() {
                let first = self.keys[key].first;
                return Err(Problem::NonFiniteScore {
                    key: KeyRef::at(first.0 as usize, first.1 as usize),
                    score: *score,
                    stage: Stage::Normalized,
                }
                .into());
            }
        }
        Ok(())
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
        let (source, terms) = (self.source, &self.terms);
        // Terms made before the scan for the geometric and harmonic means: which lists kept a
        // key's value, in the bits above its seen-lists bits.
        let track_kept = source == Source::Terms && !terms.kept.is_empty();
        // Positions: each item in its slot's own cell.
        let by_slot = source == Source::Positions;
        let keep_bits = !PAIR
            || self.record
            || track_kept
            || by_slot
            || plan.fusion.method.combine() != Combine::Sum;
        let keep_occurrences = self.record && !by_slot;
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
                    let c = match source {
                        Source::RankTerms => plan.rank_term(list, position),
                        Source::Terms => {
                            if track_kept {
                                kept = u64::from(terms.kept(slot, position)) << (8 + slot);
                            }
                            terms.term(slot, position)
                        }
                        Source::Positions => position as f64,
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

    /// In dense mode, how many lists hold key `id`.
    #[inline]
    fn count(&self, id: usize) -> usize {
        ones(self.keys[id].seen)
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

    /// Appends key `id`'s contributions, ordered by list then position, and returns what its
    /// method did with them (factor, divisor; NaN: nothing); `scores` are the raw scores the
    /// query was fused with. Needs a workspace made with `trace = true` (else the dense layout
    /// has not kept where they came from).
    #[inline(always)]
    pub fn contributions(
        &self,
        id: u32,
        plan: &Plan,
        scores: Scores<'_>,
        out: &mut Vec<Contribution>,
    ) -> (f64, f64) {
        let i = id as usize;
        if self.by_contributions {
            let s = &self.scored;
            let (a, b) = (s.offsets[i] as usize, s.offsets[i + 1] as usize);
            out.extend_from_slice(&s.contributions[a..b]);
            return (s.factors[i], s.divisors[i]);
        }
        // The rank terms of the key's occurrences, made again (see `fuse_cancellable`).
        debug_assert!(self.keep_occurrences, "a workspace without traces");
        let (at, n) = (i * self.stride, self.count(i));
        // With two lists the slots still hold the terms in scan order (a sum of two values does
        // not sort them); with more, the canonical sum may have sorted them: made again.
        let pair = self.stride == 2;
        let no_scores = scores.iter().all(Option::is_none);
        let start = out.len();
        for j in 0..n {
            let (list, position) = self.slot_occurrences[at + j];
            out.push(Contribution {
                list,
                position,
                value: if pair {
                    self.slot_values[at + j]
                } else {
                    plan.rank_term(list as usize, position as usize)
                },
                raw: if no_scores {
                    f64::NAN
                } else {
                    kernel::raw(scores, list as usize, position)
                },
                normalized: f64::NAN,
            });
        }
        match &mut out[start..] {
            [] | [_] => {}
            [a, b] => {
                if (b.list, b.position) < (a.list, a.position) {
                    std::mem::swap(a, b);
                }
            }
            mine => mine.sort_unstable_by_key(|c| (c.list, c.position)),
        }
        // (One contribution per list holding the key: its rank term.)
        match plan.fusion.method.combine() {
            Combine::Times(f) => (kernel::factor(plan, f, n, || f64::NAN), f64::NAN),
            _ => (f64::NAN, f64::NAN),
        }
    }

    /// The trace of the page: every hit's contributions and what its method did with them, in
    /// page order.
    pub fn trace(&self, plan: &Plan, scores: Scores<'_>, out: &mut Trace) {
        out.clear();
        let n = self.page.len();
        out.offsets.reserve(n);
        out.factors.reserve(n);
        out.divisors.reserve(n);
        out.boosts.reserve(n);
        out.contributions.reserve(n * self.stride.max(1));
        let at = |v: &[f64], id: u32| v.get(id as usize).copied().unwrap_or(f64::NAN);
        for &id in &self.page {
            let (factor, divisor) = self.contributions(id, plan, scores, &mut out.contributions);
            out.offsets.push(out.contributions.len());
            out.factors.push(factor);
            out.divisors.push(divisor);
            out.boosts.push(at(&self.boosts, id));
        }
    }
}
