//! Candidate revalidation (docs/semantics.md, "Candidate revalidation"), in plain Rust.
//!
//! A vector index returns (id, score) candidates that may be stale. Revalidation asks the live store
//! about them in one batched call and keeps their order. The store is the caller's business (the
//! Python binding calls Python); this module does the bookkeeping around that call:
//! - [`plan`] / [`plan_with`]: the candidates' ids de-duplicated in first-seen order (the batch
//!   call's argument), and for each candidate the index of its id among them;
//! - [`revalidate`]: the walk of a revalidation around the caller's lookup and filter, the live
//!   candidates in input order, every occurrence of a duplicate kept ([`take_kept`]);
//! - [`batch_plan`] and [`compact`]: the same over a (Q, P) id matrix with a pad value, the
//!   compaction running in parallel over rows ([`revalidate_batch`]);
//! - [`pool_size`]: how many candidates to ask an index for.

use std::hash::Hash;

use hashbrown::HashMap;
use rayon::prelude::*;

use crate::cancel::{self, Cancel, Outside};
use crate::error::{Error, Result};
use crate::fusion::params::Integer;
use crate::fusion::{Hasher, IdTable};
use crate::pool;

/// The ids of a batch are read in pieces of this many, `cancel` polled between them.
const PIECE: usize = 1 << 16;

/// `pool_size`'s multiplier when none is given.
pub const MULTIPLIER: usize = 3;

/// `revalidate_batch`'s pad: an int that fits in int64 (the reference's message for both
/// bounds).
pub fn pad(n: Integer) -> Result<i64> {
    match n.digits {
        None => Ok(n.value),
        Some(digits) => Err(Error::invalid(
            "pad",
            format!("pad must fit in int64, got {digits}"),
        )),
    }
}

/// `revalidate_batch`'s ids of an unsigned dtype fit in int64: `max` is the largest, which the
/// message shows as `shown()` (numpy's repr).
pub fn check_ids_fit(max: u64, shown: impl FnOnce() -> String) -> Result<()> {
    if max <= i64::MAX as u64 {
        return Ok(());
    }
    Err(Error::invalid(
        "ids",
        format!("ids must fit in int64, got {}", shown()),
    ))
}

/// Candidate `i` of `revalidate` is not an (id, score) pair: `got` is what it is instead (the
/// value, of a wrong type; or its number of items).
pub fn not_a_pair(i: usize, got: &str, wrong_type: bool) -> Error {
    let name = format!("candidates[{i}]");
    Error::named(
        &name,
        wrong_type,
        format!("{name} must be an (id, score) pair, got {got}"),
    )
}

/// `revalidate_batch`'s scores have the shape of its ids.
pub fn check_shapes(scores: &[usize], ids: &[usize]) -> Result<()> {
    if scores == ids {
        return Ok(());
    }
    Err(Error::invalid(
        "scores",
        format!(
            "scores has shape {} but ids has shape {}",
            crate::format::shape(scores),
            crate::format::shape(ids)
        ),
    ))
}

/// `is_live`'s answer, of shape `shape`: one bool per unique id (`expected`).
pub fn check_live_shape(shape: &[usize], expected: usize) -> Result<()> {
    if shape == [expected] {
        return Ok(());
    }
    Err(Error::invalid(
        "is_live",
        format!(
            "is_live must return one bool per id ({expected}), got shape {}",
            crate::format::shape(shape)
        ),
    ))
}

/// What `pool_size` returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolSize {
    /// This many candidates.
    Exact(u64),
    /// The limit itself, too large to be held here (the caller's own integer).
    Limit,
    /// limit * multiplier, too large to be held here (the caller multiplies its integers).
    Product,
}

/// `limit` when the index filters before the scan (`pre_filtering`), else `limit * multiplier`,
/// of a limit and a multiplier read as counts (saturated to `usize::MAX` beyond i64, as
/// `params::count` reads them): [`PoolSize::Exact`] when both fit in an i64 and so does the
/// product, else what the caller computes with its own integers.
pub fn pool_size(limit: usize, pre_filtering: bool, multiplier: usize) -> PoolSize {
    let fits = |x: usize| x <= i64::MAX as usize;
    let exact = if !(fits(limit) && fits(multiplier)) {
        None
    } else if pre_filtering {
        Some(limit as u64)
    } else {
        (limit as u64).checked_mul(multiplier as u64)
    };
    match exact {
        Some(size) => PoolSize::Exact(size),
        None if pre_filtering => PoolSize::Limit,
        None => PoolSize::Product,
    }
}

/// The de-duplication plan of a list of candidates.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Candidate position -> index of its id among the unique ids.
    pub slots: Vec<u32>,
    /// Unique id index -> position of the id's first occurrence. Unique ids are numbered in
    /// first-seen order, so this is increasing.
    pub first: Vec<u32>,
}

/// Whether a revalidation of `n_unique` unique ids cut at `limit` asks the lookup at all (not
/// for no ids, nor for `limit=0`).
pub fn asks(n_unique: usize, limit: Option<usize>) -> bool {
    n_unique > 0 && limit != Some(0)
}

impl Plan {
    pub fn n_unique(&self) -> usize {
        self.first.len()
    }
}

/// Builds the plan of `n` candidates. `intern(position)` must return the unique index of the
/// candidate's id: an existing index for an id already met, or exactly the number of distinct
/// ids met so far for a new one (as the fusion scan hands out key ids). Its errors stop the plan at once.
pub fn plan_with<E: From<Error>>(
    n: usize,
    mut intern: impl FnMut(usize) -> std::result::Result<u32, E>,
) -> std::result::Result<Plan, E> {
    check_count(n, "candidates")?;
    let mut plan = Plan {
        slots: Vec::with_capacity(n),
        first: Vec::with_capacity(n),
    };
    for position in 0..n {
        let slot = intern(position)?;
        if slot as usize == plan.first.len() {
            plan.first.push(position as u32);
        }
        plan.slots.push(slot);
    }
    Ok(plan)
}

/// The plan of `ids` for any hashable Rust id type.
pub fn plan<K: Hash + Eq>(ids: &[K]) -> Result<Plan> {
    let mut seen: HashMap<&K, u32, Hasher> =
        HashMap::with_capacity_and_hasher(ids.len(), Hasher::default());
    plan_with(ids.len(), |position| {
        let next = seen.len() as u32;
        Ok::<u32, Error>(*seen.entry(&ids[position]).or_insert(next))
    })
}

/// The plan of i64 `ids`, hashed in `table` (reused from call to call: emptied first).
pub fn plan_ints(ids: &[i64], table: &mut IdTable) -> Result<Plan> {
    check_count(ids.len(), "candidates")?;
    table.reset(ids.len(), &Cancel::none())?;
    let mut n_unique = 0;
    plan_with(ids.len(), |position| {
        let (_, slot) = table.slot_of_key(ids[position], n_unique);
        if slot == n_unique {
            n_unique += 1;
        }
        Ok::<u32, Error>(slot)
    })
}

thread_local! {
    /// The table [`plan_ints_here`] plans with, kept between calls on this thread.
    static TABLE: std::cell::RefCell<IdTable> = std::cell::RefCell::new(IdTable::default());
}

/// [`plan_ints`] with this thread's table, kept from call to call (a fresh one if it is in use,
/// or once the thread's storage is torn down).
pub fn plan_ints_here(ids: &[i64]) -> Result<Plan> {
    let here = TABLE.try_with(|t| t.try_borrow_mut().ok().map(|mut t| plan_ints(ids, &mut t)));
    match here {
        Ok(Some(plan)) => plan,
        _ => plan_ints(ids, &mut IdTable::default()),
    }
}

/// The items that `keep` keeps (returns `Some` of), in order, at most `limit` of them: once
/// `limit` are kept, no further item is read nor given to `keep`. An error of `keep` stops the
/// walk.
#[inline]
pub fn take_kept<I, T, E>(
    items: impl IntoIterator<Item = I>,
    limit: usize,
    mut keep: impl FnMut(I) -> std::result::Result<Option<T>, E>,
) -> std::result::Result<Vec<T>, E> {
    let mut items = items.into_iter();
    let mut kept = Vec::with_capacity(items.size_hint().0.min(limit));
    while kept.len() < limit {
        let Some(item) = items.next() else {
            break;
        };
        if let Some(t) = keep(item)? {
            kept.push(t);
        }
    }
    Ok(kept)
}

/// The walk of `revalidate` over `candidates`, planned by `plan` (docs/semantics.md,
/// "Candidate revalidation"), the lookup and the filter being the caller's:
/// - no unique id, or `limit` 0: nothing is asked, nothing kept;
/// - `get_many(candidates, first)`, when given, is called once with the positions of the unique
///   ids' first occurrences: it returns each unique id's record (`None`: missing), or `None`
///   when the batch lookup failed, for the per-id walk;
/// - else `get(candidate)` is asked of each candidate in input order (`None`: dropped);
/// - `keep(candidate, record)` is given each candidate whose id has a record, in input order
///   (every occurrence of a duplicate id), and returns what is kept (`None`: filtered out);
///   the walk stops once `limit` are kept.
///
/// Each candidate is handed on or dropped as the walk passes it.
pub fn revalidate<C, R: Clone, T, E>(
    plan: &Plan,
    candidates: Vec<C>,
    limit: Option<usize>,
    get_many: Option<impl FnOnce(&[C], &[u32]) -> std::result::Result<Option<Vec<Option<R>>>, E>>,
    mut get: impl FnMut(&C) -> std::result::Result<Option<R>, E>,
    mut keep: impl FnMut(C, R) -> std::result::Result<Option<T>, E>,
) -> std::result::Result<Vec<T>, E> {
    if !asks(plan.n_unique(), limit) {
        return Ok(Vec::new());
    }
    let limit = limit.unwrap_or(usize::MAX);
    let records = get_many.map(|g| g(&candidates, &plan.first));
    if let Some(records) = records.transpose()?.flatten() {
        let live = candidates.into_iter().zip(&plan.slots);
        let live = live.filter_map(|(c, &slot)| Some((c, records.get(slot as usize)?.as_ref()?)));
        return take_kept(live, limit, |(c, record)| keep(c, record.clone()));
    }
    take_kept(candidates, limit, |c| match get(&c)? {
        Some(record) => keep(c, record),
        None => Ok(None),
    })
}

/// No unique id: a pad cell, or a table entry for an id that does not occur.
const NONE: u32 = u32::MAX;

/// Where the cells of a batch find the index of their id among the unique ids.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Index {
    /// Ids in a narrow range: `table[id - lo]` is the id's unique index (or [`NONE`]).
    Dense { lo: i64, table: Vec<u32> },
    /// Any ids: cell (row-major) -> unique index of its id ([`NONE`] for a pad).
    Cells(Vec<u32>),
}

/// The de-duplication plan of a (Q, P) id matrix, read row by row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchPlan {
    /// The unique ids of the whole batch, in first-seen order (row by row); never the pad value.
    pub unique: Vec<i64>,
    index: Index,
}

impl BatchPlan {
    /// The index in `unique` of the id `x` held by cell `c`; None for a pad (or for an id the
    /// plan never saw, which only a concurrent modification of the ids can produce).
    #[inline]
    pub fn slot(&self, c: usize, x: i64, pad: i64) -> Option<u32> {
        if x == pad {
            return None;
        }
        let slot = match &self.index {
            Index::Dense { lo, table } => *table.get(x.wrapping_sub(*lo) as u64 as usize)?,
            Index::Cells(slots) => *slots.get(c)?,
        };
        (slot != NONE).then_some(slot)
    }
}

fn check_count(n: usize, name: &str) -> Result<()> {
    if n >= NONE as usize {
        return Err(Error::invalid(
            name,
            format!("{name} has {n} entries, more than revalidation handles at once"),
        ));
    }
    Ok(())
}

/// `(min, span)` of the non-pad ids when they fit a direct-address table of at most about two
/// entries per cell, where a table beats hashing.
fn dense_range(ids: &[i64], pad: i64, cancel: &Cancel<'_>) -> Result<Option<(i64, usize)>> {
    let (lo, hi) = pool::install_cancellable(cancel, || {
        let range = ids
            .par_chunks(PIECE)
            .map(|piece| {
                let none = (i64::MAX, i64::MIN);
                if cancel.stopped() {
                    return none;
                }
                piece
                    .iter()
                    .filter(|&&x| x != pad)
                    .fold(none, |(lo, hi), &x| (lo.min(x), hi.max(x)))
            })
            .reduce(
                || (i64::MAX, i64::MIN),
                |(a, b), (c, d)| (a.min(c), b.max(d)),
            );
        cancel.check_stopped().map(|()| range)
    })?;
    if lo > hi {
        return Ok(None); // only pads
    }
    let span = (hi as i128 - lo as i128 + 1) as u128;
    let budget = 2 * ids.len() as u128 + 4096;
    Ok((span <= budget).then_some((lo, span as usize)))
}

/// Hash tables id -> unique index, one per shard of the ids (split by a hash of the id), for a
/// batch of many ids. A table grows by rehashing all it holds at once: with one table, the
/// growths of a batch of millions of ids take up to seconds each. The shards are grown ahead
/// of need ([`Shards::make_room`]), each at its own fill, so that they do not all grow in the
/// same piece of the ids: each growth is short, and a large batch's `Cancel` is polled between
/// pieces.
struct Shards {
    tables: Vec<HashMap<i64, u32, Hasher>>,
    /// 64 minus log2 of the number of tables.
    shift: u32,
}

impl Shards {
    /// Batches of at least this many ids are planned with [`Shards`] (smaller ones with one
    /// table, whose growths are short).
    const SPLIT_FROM: usize = 1 << 20;
    /// log2 of the number of tables.
    const BITS: u32 = 6;

    fn new() -> Self {
        Shards {
            tables: (0..1 << Self::BITS).map(|_| HashMap::default()).collect(),
            shift: 64 - Self::BITS,
        }
    }

    /// Before `n` more ids: grows each table that would pass its own fill limit, between 1/2
    /// and 7/8 of its capacity (shard i's limit grows with i), to twice its capacity.
    fn make_room(&mut self, n: usize) {
        let shards = self.tables.len();
        let each = 2 * n / shards;
        for (i, table) in self.tables.iter_mut().enumerate() {
            let capacity = table.capacity();
            let limit = capacity / 2 + capacity / 2 * 3 * i / (4 * shards);
            if table.len() + each > limit {
                table.reserve(capacity.max(each));
            }
        }
    }

    /// The table of id `x`.
    #[inline]
    fn of(&mut self, x: i64) -> &mut HashMap<i64, u32, Hasher> {
        let mixed = (x as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        &mut self.tables[((mixed as u128) >> self.shift) as usize]
    }
}

/// Plans a row-major id matrix: its unique ids in first-seen order, and where each cell finds
/// its id among them. Ids in a narrow range go through a direct-address table (no per-cell
/// memory), others through a hash table. Never panics, whatever the ids. `cancel` is polled
/// between pieces of the ids (`Problem::Interrupted` once it stops).
pub fn batch_plan(ids: &[i64], pad: i64, cancel: &Cancel<'_>) -> Result<BatchPlan> {
    check_count(ids.len(), "ids")?;
    if let Some((lo, span)) = dense_range(ids, pad, cancel)? {
        let mut unique = Vec::with_capacity(ids.len().min(span));
        let mut table = Vec::new();
        let planned = cancel::resize(&mut table, span, NONE, cancel).and_then(|()| {
            for piece in ids.chunks(PIECE) {
                cancel.check()?;
                for &x in piece {
                    if x == pad {
                        continue;
                    }
                    // Out of the range only if another thread changed the ids since
                    // `dense_range`.
                    if let Some(entry) = table.get_mut(x.wrapping_sub(lo) as u64 as usize) {
                        if *entry == NONE {
                            *entry = unique.len() as u32;
                            unique.push(x);
                        }
                    }
                }
            }
            Ok(())
        });
        let plan = BatchPlan {
            unique,
            index: Index::Dense { lo, table },
        };
        return finished(planned, plan);
    }
    let mut unique = Vec::new();
    let mut slots = Vec::with_capacity(ids.len());
    let mut planned = Ok(());
    // One table for a batch of fewer ids, whose growths are short; else shards.
    let mut one: HashMap<i64, u32, Hasher> = HashMap::default();
    let mut shards = (ids.len() >= Shards::SPLIT_FROM).then(Shards::new);
    for piece in ids.chunks(PIECE) {
        planned = cancel.check();
        if planned.is_err() {
            break;
        }
        if let Some(shards) = &mut shards {
            shards.make_room(piece.len());
        }
        for &x in piece {
            if x == pad {
                slots.push(NONE);
                continue;
            }
            let next = unique.len() as u32;
            let table = match &mut shards {
                Some(shards) => shards.of(x),
                None => &mut one,
            };
            let slot = *table.entry(x).or_insert(next);
            if slot == next {
                unique.push(x);
            }
            slots.push(slot);
        }
    }
    if planned.is_err() {
        pool::free_later((one, shards));
    }
    let plan = BatchPlan {
        unique,
        index: Index::Cells(slots),
    };
    finished(planned, plan)
}

/// The plan once built, or the error that stopped it (the plan's buffers then freed on another
/// thread: see [`pool::free_later`]).
fn finished(planned: Result<()>, plan: BatchPlan) -> Result<BatchPlan> {
    match planned {
        Ok(()) => Ok(plan),
        Err(e) => {
            pool::free_later(plan);
            Err(e)
        }
    }
}

/// A (n_rows, n_cols) batch of candidates: row-major ids (with a pad value) and their scores,
/// of any type that widens to f64 exactly (f64, f32).
#[derive(Clone, Copy, Debug)]
pub struct Batch<'a, S = f64> {
    ids: &'a [i64],
    scores: &'a [S],
    n_rows: usize,
    n_cols: usize,
    pad: i64,
}

impl<'a, S: Copy + Into<f64> + Sync> Batch<'a, S> {
    /// Checks that `ids` and `scores` both hold `n_rows * n_cols` values.
    pub fn new(
        ids: &'a [i64],
        scores: &'a [S],
        n_rows: usize,
        n_cols: usize,
        pad: i64,
    ) -> Result<Self> {
        if n_rows.checked_mul(n_cols) != Some(ids.len()) {
            return Err(Error::invalid(
                "ids",
                format!(
                    "ids has {} values for shape ({n_rows}, {n_cols})",
                    ids.len()
                ),
            ));
        }
        if scores.len() != ids.len() {
            return Err(Error::invalid(
                "scores",
                format!("scores has {} values for {} ids", scores.len(), ids.len()),
            ));
        }
        Ok(Batch {
            ids,
            scores,
            n_rows,
            n_cols,
            pad,
        })
    }

    /// The plan of the batch's ids (see [`batch_plan`]).
    pub fn plan(&self, cancel: &Cancel<'_>) -> Result<BatchPlan> {
        batch_plan(self.ids, self.pad, cancel)
    }
}

/// The live candidates of a batch, padded: `ids` (Q, width) row-major with the pad value,
/// `scores` (Q, width) with NaN, and the count of live candidates kept per row.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Compacted {
    pub ids: Vec<i64>,
    pub scores: Vec<f64>,
    pub counts: Vec<i64>,
    pub width: usize,
}

/// Compacts each row of `batch`, in parallel (in this process's pool, see `pool`): the cells
/// whose id is live, in input order, at most `limit` per row. The width is `min(limit, n_cols)`
/// with a limit, else the largest count. `plan` is the batch's plan and `live` has one entry
/// per unique id (it may be empty when `limit` is 0). `Problem::Interrupted` once `cancel` stops
/// (polled by the calling thread while the pool works, read between rows).
pub fn compact<S: Copy + Into<f64> + Sync>(
    batch: &Batch<'_, S>,
    plan: &BatchPlan,
    live: &[bool],
    limit: Option<usize>,
    cancel: &Cancel<'_>,
) -> Result<Compacted> {
    pool::install_cancellable(cancel, || {
        let out = compact_rows(batch, plan, live, limit, cancel);
        match cancel.check_stopped() {
            Ok(()) => Ok(out),
            Err(e) => {
                pool::free_later(out);
                Err(e)
            }
        }
    })
}

fn compact_rows<S: Copy + Into<f64> + Sync>(
    batch: &Batch<'_, S>,
    plan: &BatchPlan,
    live: &[bool],
    limit: Option<usize>,
    cancel: &Cancel<'_>,
) -> Compacted {
    let Batch {
        ids,
        scores,
        n_rows,
        n_cols,
        pad,
    } = *batch;
    let keeps = |c: usize, x: i64| match plan.slot(c, x, pad) {
        Some(slot) => live.get(slot as usize).copied().unwrap_or(false),
        None => false,
    };
    let width = match limit {
        Some(l) => l.min(n_cols),
        None => (0..n_rows)
            .into_par_iter()
            .map(|q| {
                if cancel.stopped() {
                    return 0;
                }
                (q * n_cols..(q + 1) * n_cols)
                    .filter(|&c| keeps(c, ids[c]))
                    .count()
            })
            .max()
            .unwrap_or(0),
    };
    let mut out_ids = vec![0i64; n_rows * width];
    let mut out_scores = vec![0f64; n_rows * width];
    let counts: Vec<i64> = if width == 0 {
        vec![0; n_rows]
    } else {
        out_ids
            .par_chunks_mut(width)
            .zip(out_scores.par_chunks_mut(width))
            .enumerate()
            .map(|(q, (row_ids, row_scores))| {
                if cancel.stopped() {
                    return 0;
                }
                let mut j = 0;
                for c in q * n_cols..(q + 1) * n_cols {
                    if j == width {
                        break;
                    }
                    let x = ids[c];
                    if keeps(c, x) {
                        row_ids[j] = x;
                        row_scores[j] = scores[c].into();
                        j += 1;
                    }
                }
                row_ids[j..].fill(pad);
                row_scores[j..].fill(f64::NAN);
                j as i64
            })
            .collect()
    };
    Compacted {
        ids: out_ids,
        scores: out_scores,
        counts,
        width,
    }
}

/// `revalidate_batch`: plans the batch (`outside`), calls `is_live` ONCE with its unique ids in
/// first-seen order (not at all when there are none, or `limit` is 0) and compacts the batch
/// (`outside`, in parallel). `cancel` stops the plan and the compaction.
pub fn revalidate_batch<S: Copy + Into<f64> + Sync, E: From<Error>>(
    batch: &Batch<'_, S>,
    limit: Option<usize>,
    cancel: &Cancel<'_>,
    outside: &impl Outside<E>,
    is_live: impl FnOnce(Vec<i64>) -> std::result::Result<Vec<bool>, E>,
) -> std::result::Result<Compacted, E> {
    let mut plan = outside.run(|| batch.plan(cancel))??;
    let mut live = Vec::new();
    if asks(plan.unique.len(), limit) {
        let unique = std::mem::take(&mut plan.unique);
        let n_unique = unique.len();
        live = is_live(unique)?;
        check_live_len(live.len(), n_unique)?;
    }
    let live = &live;
    Ok(outside.run(move || {
        let out = compact(batch, &plan, live, limit, cancel);
        if out.is_err() {
            pool::free_later(plan); // a large plan takes a while to free
        }
        out
    })??)
}

/// `is_live` must answer one bool per unique id.
pub fn check_live_len(got: usize, expected: usize) -> Result<()> {
    if got != expected {
        return Err(Error::invalid(
            "is_live",
            format!("is_live must return one bool per id ({expected}), got {got}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cancel::Here;

    #[test]
    fn the_lookup_is_asked_for_ids_and_a_limit_above_0() {
        assert!(asks(1, None) && asks(2, Some(1)));
        assert!(!asks(0, None) && !asks(3, Some(0)));
    }

    #[test]
    fn arguments() {
        let digits = |value, d: &str| Integer {
            value,
            digits: Some(d.to_owned()),
        };
        assert_eq!(pad(Integer::from(-1)), Ok(-1));
        let e = pad(digits(i64::MIN, "-99999999999999999999")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "pad must fit in int64, got -99999999999999999999"
        );
        assert_eq!(check_ids_fit(i64::MAX as u64, || unreachable!()), Ok(()));
        let e = check_ids_fit(1 << 63, || "np.uint64(9223372036854775808)".into()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "ids must fit in int64, got np.uint64(9223372036854775808)"
        );
        assert_eq!(e.argument(), Some("ids"));
        let check = |n| crate::error::check_pair(n, |got, t| not_a_pair(4, got, t));
        assert_eq!(check(2), Ok(()));
        let e = check(3).unwrap_err();
        assert_eq!(
            e.to_string(),
            "candidates[4] must be an (id, score) pair, got 3 items"
        );
        assert_eq!(
            (e.argument(), e.is_type_error()),
            (Some("candidates"), false)
        );
        assert_eq!(e.place(), (Some(4), None));
        let e = not_a_pair(0, "int 7", true);
        assert_eq!(
            (e.to_string().as_str(), e.is_type_error()),
            ("candidates[0] must be an (id, score) pair, got int 7", true)
        );
        assert_eq!(check_shapes(&[2, 3], &[2, 3]), Ok(()));
        assert_eq!(
            check_shapes(&[2], &[2, 3]).unwrap_err().to_string(),
            "scores has shape (2,) but ids has shape (2, 3)"
        );
        assert_eq!(check_live_shape(&[4], 4), Ok(()));
        let e = check_live_shape(&[2, 2], 4).unwrap_err();
        assert_eq!(
            e.to_string(),
            "is_live must return one bool per id (4), got shape (2, 2)"
        );
        assert_eq!(e.argument(), Some("is_live"));
    }

    #[test]
    fn pool_sizes() {
        use PoolSize::*;
        assert_eq!(pool_size(2, true, 3), Exact(2));
        assert_eq!(pool_size(2, false, 3), Exact(6));
        assert_eq!(pool_size(0, false, 3), Exact(0));
        let big = i64::MAX as usize;
        assert_eq!(pool_size(big, true, big), Exact(big as u64));
        assert_eq!(pool_size(big, false, 2), Exact(2 * big as u64));
        assert_eq!(pool_size(big, false, 3), Product);
        assert_eq!(pool_size(big + 1, false, 1), Product);
        assert_eq!(pool_size(2, false, usize::MAX), Product);
        assert_eq!(pool_size(usize::MAX, true, 2), Limit);
        assert_eq!(pool_size(2, true, usize::MAX), Limit);
    }

    /// `revalidate` over `ids` with the records `store` (by id), `get_many` or not, a filter
    /// `accept`: the kept (position, record), and the calls made.
    #[allow(clippy::type_complexity)]
    fn walk(
        ids: &[i64],
        store: &[(i64, &'static str)],
        batch: Option<bool>,
        limit: Option<usize>,
        accept: impl Fn(&str) -> bool,
    ) -> (Vec<(usize, &'static str)>, Vec<String>) {
        let calls = std::cell::RefCell::new(Vec::new());
        let record = |id: i64| store.iter().find(|(i, _)| *i == id).map(|(_, r)| *r);
        let p = plan(ids).unwrap();
        // Some(true): a batch lookup that answers; Some(false): one that fails.
        let (calls_ref, record_ref) = (&calls, &record);
        let get_many = batch.map(|answers| {
            move |_: &[(usize, i64)], first: &[u32]| {
                calls_ref.borrow_mut().push(format!("get_many {first:?}"));
                let records = first.iter().map(|&f| record_ref(ids[f as usize])).collect();
                Ok::<_, ()>(answers.then_some(records))
            }
        });
        let get = |&(position, id): &(usize, i64)| {
            calls.borrow_mut().push(format!("get {position}"));
            Ok(record(id))
        };
        let keep = |(position, _): (usize, i64), r: &'static str| {
            calls.borrow_mut().push(format!("where {r}"));
            Ok(accept(r).then_some((position, r)))
        };
        let candidates = ids.iter().copied().enumerate().collect();
        let kept = revalidate(&p, candidates, limit, get_many, get, keep).unwrap();
        (kept, calls.into_inner())
    }

    #[test]
    fn plan_is_first_seen_and_the_walk_keeps_every_occurrence() {
        let p = plan(&[1, 1, 2, 3, 2]).unwrap();
        assert_eq!(p.first, vec![0, 2, 3]);
        assert_eq!(p.slots, vec![0, 0, 1, 2, 1]);
        assert_eq!(plan::<i64>(&[]).unwrap(), Plan::default());
        // 1 and 2 live, 3 dead: every occurrence of 1 and 2, in input order.
        let ids = [1, 1, 2, 3, 2];
        let store = [(1, "a"), (2, "b")];
        let all = |_: &str| true;
        let (kept, calls) = walk(&ids, &store, Some(true), None, all);
        assert_eq!(kept, [(0, "a"), (1, "a"), (2, "b"), (4, "b")]);
        assert_eq!(calls[0], "get_many [0, 2, 3]");
        assert_eq!(calls.len(), 5);
        // The limit stops the walk: no more filter calls once it is reached.
        let (kept, calls) = walk(&ids, &store, Some(true), Some(3), |r| r != "a");
        assert_eq!(kept, [(2, "b"), (4, "b")]);
        assert_eq!(calls.len(), 5);
        let (kept, calls) = walk(&ids, &store, Some(true), Some(2), all);
        assert_eq!((kept.len(), calls.len()), (2, 3));
        // A failed batch lookup: one get per candidate, duplicates included, until the limit.
        let (kept, calls) = walk(&ids, &store, Some(false), Some(3), all);
        assert_eq!(kept, [(0, "a"), (1, "a"), (2, "b")]);
        let gets = ["get 0", "where a", "get 1", "where a", "get 2", "where b"];
        assert_eq!(calls[1..], gets);
        let (kept, calls) = walk(&ids, &store, None, None, all);
        assert_eq!((kept.len(), calls.len()), (4, 9));
        // Nothing asked for no ids, or limit 0.
        assert_eq!(walk(&[], &store, Some(true), None, all), (vec![], vec![]));
        assert_eq!(
            walk(&ids, &store, Some(true), Some(0), all),
            (vec![], vec![])
        );
    }

    #[test]
    fn take_kept_reads_no_item_past_the_limit() {
        let mut read = 0;
        let items = (0..10).inspect(|_| read += 1);
        let kept = take_kept(items, 2, |i| Ok::<_, ()>((i % 2 == 1).then_some(i)));
        assert_eq!((kept, read), (Ok(vec![1, 3]), 4));
        assert_eq!(take_kept(0..10, 0, |i| Ok(Some(i))), Ok::<_, ()>(vec![]));
        let all = take_kept(0..10, 100, |i| Ok(Some(i)));
        assert_eq!(all.map(|v| v.len()), Ok::<_, ()>(10));
        let failing = take_kept(
            0..10,
            100,
            |i| if i == 9 { Err("nine") } else { Ok(Some(i)) },
        );
        assert_eq!(failing, Err("nine"));
    }

    #[test]
    fn plan_ints_here_reuses_its_table() {
        let ids = [3, 1, 3, i64::MIN];
        assert_eq!(plan_ints_here(&ids).unwrap(), plan(&ids).unwrap());
        assert_eq!(plan_ints_here(&[]).unwrap(), Plan::default());
    }

    #[test]
    fn plan_ints_agrees_with_plan_on_a_reused_table() {
        let mut table = IdTable::default();
        let rows: [&[i64]; 4] = [
            &[1, 1, 2, 3, 2],
            &[],
            &[i64::MIN, -1, 0, i64::MAX, -1, i64::MIN],
            &[
                5, 6, 7, 8, 9, 10, 11, 12, 13, 5, 14, 15, 16, 17, 18, 19, 20, 6,
            ],
        ];
        for ids in rows {
            assert_eq!(plan_ints(ids, &mut table).unwrap(), plan(ids).unwrap());
        }
        let many: Vec<i64> = (0..5000).map(|i| (i * 7919) % 1237).collect();
        assert_eq!(plan_ints(&many, &mut table).unwrap(), plan(&many).unwrap());
    }

    #[test]
    fn plan_with_stops_at_the_first_error() {
        let r = plan_with(3, |i| {
            if i == 1 {
                Err(Error::invalid("candidates", "bad"))
            } else {
                Ok(0)
            }
        });
        assert!(r.is_err());
    }

    /// Per row, the kept (id, score bits).
    type Rows = Vec<Vec<(i64, u64)>>;

    /// The unique ids, counts and rows, by a plain reading of the spec.
    fn reference_batch(
        ids: &[i64],
        scores: &[f64],
        n_rows: usize,
        n_cols: usize,
        pad: i64,
        limit: Option<usize>,
        is_live: impl Fn(i64) -> bool,
    ) -> (Vec<i64>, Vec<i64>, Rows) {
        let mut unique = Vec::new();
        for &x in ids {
            if x != pad && !unique.contains(&x) {
                unique.push(x);
            }
        }
        let rows: Vec<Vec<(i64, u64)>> = (0..n_rows)
            .map(|q| {
                (q * n_cols..(q + 1) * n_cols)
                    .filter(|&c| ids[c] != pad && is_live(ids[c]))
                    .map(|c| (ids[c], scores[c].to_bits()))
                    .take(limit.unwrap_or(usize::MAX))
                    .collect()
            })
            .collect();
        let counts = rows.iter().map(|r| r.len() as i64).collect();
        (unique, counts, rows)
    }

    fn check_batch(ids: &[i64], n_rows: usize, n_cols: usize, pad: i64, limit: Option<usize>) {
        let scores: Vec<f64> = (0..ids.len()).map(|i| i as f64 * 0.5).collect();
        let alive = |x: i64| x.rem_euclid(3) != 0;
        let (unique, counts, rows) =
            reference_batch(ids, &scores, n_rows, n_cols, pad, limit, alive);
        let mut asked = None;
        let batch = Batch::new(ids, &scores, n_rows, n_cols, pad).unwrap();
        let out = revalidate_batch::<f64, Error>(&batch, limit, &Cancel::none(), &Here, |u| {
            let live = u.iter().map(|&x| alive(x)).collect();
            asked = Some(u);
            Ok(live)
        })
        .unwrap();
        let expected_asked = (!unique.is_empty() && limit != Some(0)).then_some(unique);
        assert_eq!(asked, expected_asked);
        assert_eq!(out.counts, counts);
        let width = limit.map_or(counts.iter().copied().max().unwrap_or(0) as usize, |l| {
            l.min(n_cols)
        });
        assert_eq!(out.width, width);
        for (q, row) in rows.iter().enumerate() {
            for j in 0..width {
                let (id, score) = (out.ids[q * width + j], out.scores[q * width + j]);
                match row.get(j) {
                    Some(&(x, bits)) => assert_eq!((id, score.to_bits()), (x, bits)),
                    None => assert!(id == pad && score.is_nan()),
                }
            }
        }
    }

    #[test]
    fn batch_matches_a_plain_reading_of_the_spec() {
        // Dense ids (direct table), duplicates, pads, an all-dead row, an all-pad row.
        let ids = [1, 2, -1, 3, 3, 3, 4, -1, 6, 9, 12, 0, -1, -1, -1, -1];
        for limit in [None, Some(0), Some(1), Some(2), Some(10)] {
            check_batch(&ids, 4, 4, -1, limit);
        }
        // Sparse ids (hash table), pad that is also a legal-looking id.
        let ids = [i64::MAX, 7, i64::MIN, 7, 0, i64::MAX, 5, 1 << 40, 0];
        for limit in [None, Some(1), Some(3)] {
            check_batch(&ids, 3, 3, 0, limit);
        }
        // No rows, no columns, nothing live.
        check_batch(&[], 0, 5, -1, None);
        check_batch(&[], 3, 0, -1, Some(2));
        check_batch(&[3, 6, 9], 1, 3, -1, None);
    }

    #[test]
    fn a_large_sparse_batch_is_planned_in_first_seen_order() {
        // Enough ids for the sharded tables; sparse (hashed), with repeats and pads.
        let n = Shards::SPLIT_FROM + 1000;
        let mut x = 0x2545_F491_4F6C_DD1D_u64;
        let ids: Vec<i64> = (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                match x % 10 {
                    0 => -1,
                    r => ((x >> 20) % (n as u64 / 3)) as i64 * 1_000_003 + r as i64 % 2,
                }
            })
            .collect();
        let plan = batch_plan(&ids, -1, &Cancel::none()).unwrap();
        let mut index: std::collections::HashMap<i64, u32> = Default::default();
        let mut unique = Vec::new();
        for (c, &id) in ids.iter().enumerate() {
            if id == -1 {
                assert_eq!(plan.slot(c, id, -1), None);
                continue;
            }
            let next = unique.len() as u32;
            let slot = *index.entry(id).or_insert(next);
            if slot == next {
                unique.push(id);
            }
            assert_eq!(plan.slot(c, id, -1), Some(slot));
        }
        assert_eq!(plan.unique, unique);
        assert!(matches!(plan.index, Index::Cells(_)));
    }

    #[test]
    fn a_stopped_plan_is_an_interruption() {
        let ids: Vec<i64> = (0..3 * PIECE as i64).map(|i| i * 1_000_003).collect();
        let cancel = Cancel::none();
        cancel.stop();
        let e = batch_plan(&ids, -1, &cancel).unwrap_err();
        assert_eq!(e.problem, crate::error::Problem::Interrupted);
        let scores = vec![0.0; ids.len()];
        let batch = Batch::new(&ids, &scores, 3, PIECE, -1).unwrap();
        let plan = batch.plan(&Cancel::none()).unwrap();
        let live = vec![true; plan.unique.len()];
        let e = compact(&batch, &plan, &live, None, &cancel).unwrap_err();
        assert_eq!(e.problem, crate::error::Problem::Interrupted);
    }

    #[test]
    fn f32_scores_widen_exactly() {
        let ids = [1, 2, -1, 2];
        let scores32 = [0.1f32, f32::NAN, 7.0, 1e30];
        let scores64: Vec<f64> = scores32.iter().map(|&x| x as f64).collect();
        fn all_live<S: Copy + Into<f64> + Sync>(ids: &[i64], scores: &[S]) -> Compacted {
            let batch = Batch::new(ids, scores, 2, 2, -1).unwrap();
            let all = |u: Vec<i64>| Ok::<_, Error>(vec![true; u.len()]);
            revalidate_batch(&batch, None, &Cancel::none(), &Here, all).unwrap()
        }
        let (a, b) = (all_live(&ids, &scores32), all_live(&ids, &scores64));
        // The bits of each number; a NaN is one NaN (Rust leaves the sign and payload of a
        // widened NaN unspecified, and Miri varies them).
        let bits = |v: &[f64]| {
            v.iter()
                .map(|x| if x.is_nan() { None } else { Some(x.to_bits()) })
                .collect::<Vec<_>>()
        };
        assert_eq!(
            (&a.ids, &a.counts, bits(&a.scores)),
            (&b.ids, &b.counts, bits(&b.scores))
        );
        assert_eq!(a.ids, vec![1, 2, 2, -1]);
        assert_eq!(
            bits(&a.scores),
            [
                Some(f64::from(0.1f32)),
                None,
                Some(f64::from(1e30f32)),
                None
            ]
            .map(|x| x.map(f64::to_bits))
        );
    }

    #[test]
    fn batch_rejects_wrong_lengths() {
        assert!(Batch::new(&[1, 2], &[0.0, 0.0], 1, 3, -1).is_err());
        assert!(Batch::new(&[1, 2], &[0.0], 1, 2, -1).is_err());
        assert!(Batch::<f64>::new(&[], &[], usize::MAX, 2, -1).is_err());
        let batch = Batch::new(&[1, 2], &[0.0, 0.0], 1, 2, -1).unwrap();
        let short = |_: Vec<i64>| Ok::<_, Error>(vec![true]);
        assert!(revalidate_batch(&batch, None, &Cancel::none(), &Here, short).is_err());
    }
}
