//! Batched fusion over (queries × candidates) matrices of i64 ids: row q of the output is the
//! engine's fusion ([`crate::fusion::Workspace`]) of row q of every list, with one thing added: an
//! entry equal to the pad value is a hole, never a key, and skipping it does not shift the ranks
//! behind it (FAISS pads its (Q, k) id matrices with -1).
//!
//! This module only batches: rows are fused in parallel chunks on a [`crate::pool`] pool, one
//! workspace per thread, and the output is written in two phases: [`fuse_batch`] fuses every row
//! into compact per-chunk buffers (the width of the output, the largest count, is only known
//! then), [`Fused::write`] fills caller-provided arrays.

use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use std::sync::Mutex;

use hashbrown::HashMap;

use crate::cancel::Cancel;
use crate::error::{At, Error, Key};
use crate::fusion::{params, trace, Caller, Engine, Hasher, Plan, Rows};
use crate::memory::Buffer;
use crate::pool;

/// The pad value of a batch when none is given.
pub const PAD: i64 = -1;

/// Whether integers of a type (`signed` or not, of `bytes` bytes) widen to i64 without loss: the
/// ids a batch takes (int8..int64, uint8..uint32).
pub fn widens_to_i64(signed: bool, bytes: usize) -> bool {
    bytes <= if signed { 8 } else { 4 }
}

/// An array argument of a batch (`name`: `ids`, `lists[2]`, `scores[1]`) is 2-D: its (rows,
/// columns), of its `shape`.
pub fn check_matrix(name: &str, shape: &[usize]) -> Result<(usize, usize), Error> {
    match *shape {
        [rows, cols] => Ok((rows, cols)),
        _ => Err(Error::named(
            name,
            false,
            format!(
                "{name} must be a 2-D array (queries, candidates), got shape {}",
                crate::format::shape(shape)
            ),
        )),
    }
}

/// List `i` of a batch's id arrays (the argument `name`: "ids", or rrf_batch's "lists") has
/// `rows` rows, as many as the first, which has `first`.
pub fn check_rows(name: &str, i: usize, rows: usize, first: usize) -> Result<(), Error> {
    if rows == first {
        return Ok(());
    }
    Err(Error::invalid(
        name,
        format!("{name}[{i}] has {rows} rows (queries), {name}[0] has {first}"),
    )
    .for_list(i))
}

/// `scores[i]` of a batch has the shape of its ids (`{name}[i]`).
pub fn check_scores_shape(
    name: &str,
    i: usize,
    shape: (usize, usize),
    ids: (usize, usize),
) -> Result<(), Error> {
    if shape == ids {
        return Ok(());
    }
    let show = |(a, b)| crate::format::shape(&[a, b]);
    Err(Error::invalid(
        "scores",
        format!(
            "scores[{i}] has shape {} but {name}[{i}] has shape {}",
            show(shape),
            show(ids)
        ),
    )
    .for_list(i))
}

/// The shapes of a batch result's arrays (`BatchResult`, `RevalidatedBatch`): ids (Q, W),
/// scores (Q, W), counts (Q,), and each (name, shape) of `traced` (Q, W, L); the message of the
/// first that is not.
pub fn check_result_shapes(
    ids: &[usize],
    scores: &[usize],
    counts: &[usize],
    traced: &[(&str, &[usize])],
) -> Result<(), String> {
    if scores != ids || ids.get(..1) != Some(counts) {
        return Err(format!(
            "ids, scores and counts must have shapes (Q, W), (Q, W) and (Q,), got {ids:?}, \
             {scores:?} and {counts:?}"
        ));
    }
    match traced.iter().find(|(_, shape)| shape.get(..2) != Some(ids)) {
        Some((name, _)) => Err(format!(
            "{name} must have shape (Q, W, L) with (Q, W) = {ids:?}"
        )),
        None => Ok(()),
    }
}

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

/// What a batch fuses besides its id matrices: per list None or its raw scores, a (rows, cols)
/// matrix aligned with the list's ids (row-major; the score of a pad is never read), and the
/// boost's values by id.
#[derive(Clone, Copy, Default)]
pub struct Extra<'a> {
    pub scores: &'a [Option<&'a [f64]>],
    pub boost: Option<&'a HashMap<i64, f64, Hasher>>,
}

/// One entry of a hit's trace per list: (list, best rank, contribution, normalised value).
type TraceEntry = (u32, u32, f64, f64);

/// The fused rows of one chunk, compact: `counts[r]` hits for row r, their ids and scores back
/// to back; with traces, per hit `trace_offsets` into its per-list entries.
#[derive(Default)]
struct Chunk {
    counts: Vec<usize>,
    ids: Buffer<i64>,
    scores: Buffer<f64>,
    trace_offsets: Vec<usize>,
    trace: Vec<TraceEntry>,
}

/// Every row fused, before the output arrays exist.
pub struct Fused {
    rows: usize,
    lists: usize,
    width: usize,
    chunk_rows: usize,
    /// The `Cancel` is polled every this many rows (see [`POLL_ENTRIES`]).
    poll_rows: usize,
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

/// Inside a chunk, the call's [`Cancel`] is polled every this many entries or so (a
/// millisecond of work or less): by the calling thread, which then checks for signals when they
/// are due, and by the pool's threads, which read its flag.
const POLL_ENTRIES: usize = 1 << 16;

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

/// Phase one: fuses every row of `lists` with `plan` (one weight per list; in parallel on
/// `n_threads` threads, see [`pool::resolve_threads`]), and decides the width of the output: with
/// no limit the largest count of any row; with a limit, `min(limit, cap)` where cap is the most
/// keys a row can hold (the sum of `min(cols, window)` over the lists of non-zero weight).
///
/// Errors: lists with different numbers of rows (an argument error), or the first row (in row
/// order) that cannot be fused, located `At::Row` with the key it is about; `Problem::Interrupted`
/// once `cancel` stops (polled every [`POLL_ENTRIES`] entries or so by every thread: the calling
/// thread then checks for signals when they are due, the others read the flag).
pub fn fuse_batch(
    lists: &[IdMatrix<'_>],
    extra: Extra<'_>,
    plan: &Plan,
    pad: i64,
    trace: bool,
    n_threads: usize,
    cancel: &Cancel<'_>,
) -> Result<Fused, Error> {
    let rows = lists.first().map_or(0, |l| l.rows());
    if let Some((i, l)) = lists.iter().enumerate().find(|(_, l)| l.rows() != rows) {
        return Err(Error::invalid(
            "lists",
            format!(
                "lists[{i}] has {} rows (queries), lists[0] has {rows}",
                l.rows()
            ),
        ));
    }
    let cols: Vec<usize> = lists.iter().map(|l| l.cols()).collect();
    let read: Vec<usize> = (0..lists.len())
        .map(|i| plan.read_len(i, cols[i]))
        .collect();
    let cap: usize = read.iter().sum();
    // Every contribution a row can count, computed once for all rows.
    let plan = plan.clone().with_rank_terms(&cols);
    let entries = rows.saturating_mul(cols.iter().sum::<usize>());
    let n_threads = threads_for(entries, n_threads);
    let row_entries = (entries / rows.max(1)).max(1);
    let chunk_rows = if n_threads > 1 {
        // About 8 chunks per thread (the threads finish within a chunk of each other), but
        // none below ~500 entries (each chunk has its own buffers).
        rows.div_ceil(n_threads * 8)
            .max(CHUNK_MIN_ENTRIES.div_ceil(row_entries))
            .max(1)
    } else {
        rows.max(1)
    };
    let poll_rows = (POLL_ENTRIES / row_entries).max(1);
    let per_row = plan.fusion.limit.map_or(cap, |l| l.min(cap));
    let n_chunks = rows.div_ceil(chunk_rows);
    let first_error = AtomicUsize::new(usize::MAX);
    let fuse_chunk = |state: &mut RowState, c: usize| {
        let start = c * chunk_rows;
        let end = (start + chunk_rows).min(rows);
        fuse_chunk(
            state,
            lists,
            extra,
            &plan,
            pad,
            trace,
            per_row,
            start..end,
            &first_error,
            (cancel, poll_rows),
        )
    };
    let results = pool::map_indices(
        n_threads,
        n_chunks,
        cancel,
        || RowState::new(trace),
        fuse_chunk,
    )?;
    let mut out = Fused {
        rows,
        lists: lists.len(),
        width: 0,
        chunk_rows,
        poll_rows,
        chunks: Vec::with_capacity(n_chunks),
        pad,
        trace,
        n_threads,
    };
    let mut error: Option<(usize, Error)> = None;
    for r in results {
        match r {
            Ok(chunk) => out.chunks.push(chunk),
            Err((row, e)) => {
                if error.as_ref().is_none_or(|(old, _)| row < *old) {
                    error = Some((row, e));
                }
            }
        }
    }
    if let Some((_, e)) = error {
        return Err(e);
    }
    out.width = match plan.fusion.limit {
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

/// What a thread keeps from row to row: an engine and a buffer of values.
struct RowState {
    engine: Engine,
    values: Vec<f64>,
}

impl RowState {
    fn new(trace: bool) -> Self {
        RowState {
            engine: Engine::new(trace),
            values: Vec::new(),
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn fuse_chunk(
    state: &mut RowState,
    lists: &[IdMatrix<'_>],
    extra: Extra<'_>,
    plan: &Plan,
    pad: i64,
    trace: bool,
    per_row: usize,
    rows: std::ops::Range<usize>,
    first_error: &AtomicUsize,
    (cancel, poll_rows): (&Cancel<'_>, usize),
) -> Result<Chunk, (usize, Error)> {
    // Room for the most hits the rows can have, so the buffers never move (untouched capacity
    // costs no memory).
    let mut chunk = Chunk {
        ids: Buffer::with_capacity(rows.len() * per_row),
        scores: Buffer::with_capacity(rows.len() * per_row),
        ..Chunk::default()
    };
    let RowState {
        engine: Engine {
            ws,
            table,
            trace: page_trace,
        },
        values,
    } = state;
    let mut row_lists: Vec<&[i64]> = Vec::with_capacity(lists.len());
    let mut row_scores: Vec<Option<&[f64]>> = Vec::with_capacity(extra.scores.len());
    let start = rows.start;
    for q in rows {
        if q > first_error.load(AtomicOrdering::Relaxed)
            || (q - start) % poll_rows == 0 && cancel.poll()
        {
            break; // an earlier row failed, or the call stops: this chunk will not be used
        }
        row_lists.clear();
        row_lists.extend(lists.iter().map(|l| l.row(q)));
        row_scores.clear();
        row_scores.extend(
            extra
                .scores
                .iter()
                .zip(lists)
                .map(|(s, l)| s.map(|s| &s[q * l.cols()..(q + 1) * l.cols()])),
        );
        let fused =
            check_row_scores(&row_lists, &row_scores, pad, plan.reads_scores()).and_then(|()| {
                ws.run(
                    plan,
                    &mut Rows::new(&row_lists, Some(pad), table),
                    &row_scores,
                    &mut BoostById(extra.boost),
                    &Cancel::none(),
                )
            });
        if let Err(error) = fused {
            first_error.fetch_min(q, AtomicOrdering::Relaxed);
            let error = error
                .with_key(|l, pos| Some(Key::Int(row_lists[l][pos])))
                .at(At::Row(q));
            return Err((q, error));
        }
        let page = ws.page();
        chunk.counts.push(page.len());
        chunk.ids.extend(page.iter().map(|&id| ws.key(id)));
        chunk.scores.extend(page.iter().map(|&id| ws.score(id)));
        if trace {
            ws.trace(plan, &row_scores, page_trace);
            for j in 0..page_trace.len() {
                chunk.trace_offsets.push(chunk.trace.len());
                trace::per_list(page_trace.hit(j), values, |list, rank, sum, normalized| {
                    chunk.trace.push((list, rank as u32, sum, normalized))
                });
            }
        }
    }
    if trace {
        chunk.trace_offsets.push(chunk.trace.len());
    }
    Ok(chunk)
}

/// A batch's boost: values by id.
struct BoostById<'a>(Option<&'a HashMap<i64, f64, Hasher>>);

impl Caller<Error> for BoostById<'_> {
    fn boost(&mut self, key: i64, _: (u32, u32)) -> Result<Option<f64>, Error> {
        Ok(self.0.and_then(|b| b.get(&key).copied()))
    }
}

/// The scores of one row are raw scores where an id is (the score of a pad is never read):
/// never NaN, and finite when the method `read`s them.
fn check_row_scores(
    rows: &[&[i64]],
    scores: &[Option<&[f64]>],
    pad: i64,
    read: bool,
) -> Result<(), Error> {
    for (i, (ids, s)) in rows.iter().zip(scores).enumerate() {
        let Some(s) = s else { continue };
        // Every score finite, the common case: one pass with no name formatted.
        if s.iter().all(|x| x.is_finite()) {
            continue;
        }
        for (j, (&id, &x)) in ids.iter().zip(s.iter()).enumerate() {
            if id != pad {
                params::raw_score(x, read, i, j)?;
            }
        }
    }
    Ok(())
}

/// The output arrays of [`Fused::write`], row-major: ids and scores (rows, width), counts
/// (rows,), and with traces ranks, contributions and (when wanted) normalised values (rows,
/// width, lists), which must be zeroed.
pub struct Output<'a> {
    pub ids: &'a mut [i64],
    pub scores: &'a mut [f64],
    pub counts: &'a mut [i64],
    pub ranks: Option<&'a mut [i32]>,
    pub contributions: Option<&'a mut [f64]>,
    pub normalized: Option<&'a mut [f64]>,
}

impl<'a> Output<'a> {
    /// The output of an untraced batch: ids, scores and counts only.
    pub fn untraced(ids: &'a mut [i64], scores: &'a mut [f64], counts: &'a mut [i64]) -> Self {
        Output {
            ids,
            scores,
            counts,
            ranks: None,
            contributions: None,
            normalized: None,
        }
    }
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

    /// Phase two: fills `out` (every id and score cell, pads and NaN past a row's count), chunk
    /// by chunk, `cancel` polled as in [`fuse_batch`] (`Err(Problem::Interrupted)` once it stops:
    /// the arrays are then partly written). Panics if the arrays do not have the sizes of
    /// [`Fused::rows`], [`Fused::width`] and [`Fused::lists`].
    pub fn write(&self, out: Output<'_>, cancel: &Cancel<'_>) -> Result<(), Error> {
        let (w, l) = (self.width, self.lists);
        assert_eq!(out.ids.len(), self.rows * w);
        assert_eq!(out.scores.len(), self.rows * w);
        assert_eq!(out.counts.len(), self.rows);
        let (cr, wl) = (self.chunk_rows, w * l);
        let (ranks, contributions, normalized) = (out.ranks, out.contributions, out.normalized);
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
            return Ok(());
        }
        let trace = match (ranks, contributions) {
            (Some(r), Some(c)) if self.trace && wl > 0 => Some((r, c)),
            _ => None,
        };
        let normalized = normalized.filter(|_| self.trace && wl > 0);
        // Each chunk's rows of every output array.
        let mut ranks = trace.map(|(r, c)| r.chunks_mut(cr * wl).zip(c.chunks_mut(cr * wl)));
        let mut normalized = normalized.map(|v| v.chunks_mut(cr * wl));
        let parts = out
            .ids
            .chunks_mut(cr * w)
            .zip(out.scores.chunks_mut(cr * w))
            .map(|(ids, scores)| Part {
                ids,
                scores,
                trace: ranks.as_mut().and_then(Iterator::next),
                normalized: normalized.as_mut().and_then(Iterator::next),
            });
        if self.rows * w < PARALLEL_WRITE_MIN_CELLS || self.n_threads <= 1 {
            for (chunk, part) in self.chunks.iter().zip(parts) {
                cancel.check()?;
                self.write_chunk(chunk, part, cancel);
            }
            return cancel.check_stopped();
        }
        // On the pool: each part taken by the thread that writes its chunk.
        let parts: Vec<Mutex<Option<Part<'_>>>> = parts.map(|p| Mutex::new(Some(p))).collect();
        pool::map_indices(
            self.n_threads,
            parts.len(),
            cancel,
            || (),
            |_, c| {
                // A poisoned lock only means a panic in another chunk, which the pool re-raises.
                let part = parts[c].lock().unwrap_or_else(|e| e.into_inner()).take();
                if let (Some(part), Some(chunk)) = (part, self.chunks.get(c)) {
                    self.write_chunk(chunk, part, cancel);
                }
            },
        )?;
        Ok(())
    }

    /// Writes one chunk's rows into its part of the output arrays; stops early once `cancel`
    /// (polled every `poll_rows` rows) stops.
    fn write_chunk(&self, c: &Chunk, part: Part<'_>, cancel: &Cancel<'_>) {
        let (w, l) = (self.width, self.lists);
        let stop = |r: usize| r % self.poll_rows == 0 && cancel.poll();
        let mut at = 0;
        for (r, ((ids, scores), &n)) in part
            .ids
            .chunks_mut(w)
            .zip(part.scores.chunks_mut(w))
            .zip(&c.counts)
            .enumerate()
        {
            if stop(r) {
                return;
            }
            ids[..n].copy_from_slice(&c.ids[at..at + n]);
            ids[n..].fill(self.pad);
            scores[..n].copy_from_slice(&c.scores[at..at + n]);
            scores[n..].fill(f64::NAN);
            at += n;
        }
        if let Some((ranks, contributions)) = part.trace {
            let mut hit = 0;
            for (r, &n) in c.counts.iter().enumerate() {
                if stop(r) {
                    return;
                }
                for j in 0..n {
                    let entries = &c.trace[c.trace_offsets[hit]..c.trace_offsets[hit + 1]];
                    for &(list, rank, value, _) in entries {
                        let at = (r * w + j) * l + list as usize;
                        ranks[at] = rank as i32;
                        contributions[at] = value;
                    }
                    hit += 1;
                }
            }
        }
        if let Some(normalized) = part.normalized {
            let mut hit = 0;
            for (r, &n) in c.counts.iter().enumerate() {
                if stop(r) {
                    return;
                }
                for j in 0..n {
                    let entries = &c.trace[c.trace_offsets[hit]..c.trace_offsets[hit + 1]];
                    for &(list, _, _, v) in entries {
                        if !v.is_nan() {
                            normalized[(r * w + j) * l + list as usize] = v;
                        }
                    }
                    hit += 1;
                }
            }
        }
    }
}

/// One chunk's rows of the output arrays of [`Fused::write`].
struct Part<'a> {
    ids: &'a mut [i64],
    scores: &'a mut [f64],
    trace: Option<(&'a mut [i32], &'a mut [f64])>,
    normalized: Option<&'a mut [f64]>,
}

/// The output of [`fuse_batch_into_vecs`]: row-major arrays as described on [`Output`].
#[derive(Clone, Debug, PartialEq)]
pub struct BatchOutput {
    pub rows: usize,
    pub width: usize,
    pub ids: Vec<i64>,
    pub scores: Vec<f64>,
    pub counts: Vec<i64>,
    pub ranks: Option<Vec<i32>>,
    pub contributions: Option<Vec<f64>>,
    pub normalized: Option<Vec<f64>>,
}

/// Both phases of a batch, into new vectors.
pub fn fuse_batch_into_vecs(
    lists: &[IdMatrix<'_>],
    extra: Extra<'_>,
    plan: &Plan,
    pad: i64,
    trace: bool,
    n_threads: usize,
) -> Result<BatchOutput, Error> {
    let cancel = Cancel::none();
    let fused = fuse_batch(lists, extra, plan, pad, trace, n_threads, &cancel)?;
    let (q, w, l) = (fused.rows(), fused.width(), fused.lists());
    let mut out = BatchOutput {
        rows: q,
        width: w,
        ids: vec![0; q * w],
        scores: vec![0.0; q * w],
        counts: vec![0; q],
        ranks: trace.then(|| vec![0; q * w * l]),
        contributions: trace.then(|| vec![0.0; q * w * l]),
        normalized: trace.then(|| vec![0.0; q * w * l]),
    };
    fused.write(
        Output {
            ids: &mut out.ids,
            scores: &mut out.scores,
            counts: &mut out.counts,
            ranks: out.ranks.as_deref_mut(),
            contributions: out.contributions.as_deref_mut(),
            normalized: out.normalized.as_deref_mut(),
        },
        &cancel,
    )?;
    Ok(out)
}

/// For benchmarks: the bare loop of `rrf_batch` (RRF's defaults, pad -1) — fuse every row and
/// write the output into buffers allocated once — run `repeat` times; the seconds of each run.
#[cfg(feature = "bench-hooks")]
pub fn bare_loop(
    lists: &[IdMatrix<'_>],
    n_threads: usize,
    repeat: usize,
) -> Result<Vec<f64>, Error> {
    let plan = crate::fusion::Fusion::default().plan(lists.len())?;
    let none = Cancel::none();
    let run = || fuse_batch(lists, Extra::default(), &plan, PAD, false, n_threads, &none);
    let fused = run()?;
    let (q, w) = (fused.rows(), fused.width());
    let (mut ids, mut scores, mut counts) = (vec![0i64; q * w], vec![0f64; q * w], vec![0i64; q]);
    (0..repeat)
        .map(|_| {
            let t = std::time::Instant::now();
            run()?.write(Output::untraced(&mut ids, &mut scores, &mut counts), &none)?;
            Ok(t.elapsed().as_secs_f64())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_types() {
        assert!(widens_to_i64(true, 8) && widens_to_i64(true, 1) && widens_to_i64(false, 4));
        assert!(!widens_to_i64(false, 8) && !widens_to_i64(true, 16));
    }

    #[test]
    fn argument_and_result_shapes() {
        assert_eq!(check_matrix("ids", &[2, 0]), Ok((2, 0)));
        let e = check_matrix("lists[1]", &[3]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "lists[1] must be a 2-D array (queries, candidates), got shape (3,)"
        );
        assert_eq!((e.argument(), e.place()), (Some("lists"), (Some(1), None)));
        assert!(!e.is_type_error() && check_matrix("scores", &[1, 2, 3]).is_err());
        assert_eq!(check_rows("ids", 1, 3, 3), Ok(()));
        let e = check_rows("lists", 2, 4, 3).unwrap_err();
        assert_eq!(
            e.to_string(),
            "lists[2] has 4 rows (queries), lists[0] has 3"
        );
        assert_eq!((e.argument(), e.place()), (Some("lists"), (Some(2), None)));
        assert_eq!(check_scores_shape("ids", 0, (2, 3), (2, 3)), Ok(()));
        let e = check_scores_shape("ids", 1, (2, 4), (2, 3)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "scores[1] has shape (2, 4) but ids[1] has shape (2, 3)"
        );
        assert_eq!((e.argument(), e.place()), (Some("scores"), (Some(1), None)));
        assert_eq!(check_result_shapes(&[2, 3], &[2, 3], &[2], &[]), Ok(()));
        assert_eq!(
            check_result_shapes(&[2, 3], &[2, 4], &[2], &[]),
            Err(
                "ids, scores and counts must have shapes (Q, W), (Q, W) and (Q,), got [2, 3], \
                 [2, 4] and [2]"
                    .into()
            )
        );
        let traced: [(&str, &[usize]); 2] = [("ranks", &[2, 3, 5]), ("normalized", &[2, 2, 5])];
        assert_eq!(
            check_result_shapes(&[2, 3], &[2, 3], &[2], &traced),
            Err("normalized must have shape (Q, W, L) with (Q, W) = [2, 3]".into())
        );
    }
    use crate::fusion::{self, canonical_sum, Duplicates, Fusion, Hit, TieBreak};

    use crate::testing::Rng;

    fn batch(
        mats: &[IdMatrix<'_>],
        params: &Fusion,
        trace: bool,
        threads: usize,
    ) -> Result<BatchOutput, Error> {
        let plan = params.check_plan(mats.len())?;
        fuse_batch_into_vecs(mats, Extra::default(), &plan, -1, trace, threads)
    }

    fn random_params(rng: &mut Rng, n_lists: usize) -> Fusion {
        let mut p = Fusion::default();
        if rng.below(2) == 0 {
            p.k = Some([0.0, 0.5, 1.0, 60.0][rng.below(4) as usize]);
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

    /// Row q of a batch equals `fusion::rrf` on row q with its pads removed (pads shift no
    /// rank: here they are trailing), in every thread count.
    #[test]
    fn rows_equal_rrf_on_the_row() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        // Under Miri, which interprets every step, the first cases only.
        for _ in 0..if cfg!(miri) { 40 } else { 3000 } {
            let n_lists = 1 + rng.below(4) as usize;
            let rows = rng.below(5) as usize;
            let cols: Vec<usize> = (0..n_lists).map(|_| rng.below(7) as usize).collect();
            let data: Vec<Vec<i64>> = cols
                .iter()
                .map(|&c| {
                    let mut d: Vec<i64> = (0..rows * c).map(|_| rng.below(8) as i64).collect();
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
            let out = batch(&mats, &params, trace, 1 + rng.below(2) as usize);
            let per_row: Vec<_> = (0..rows)
                .map(|q| {
                    let trimmed: Vec<Vec<i64>> = mats
                        .iter()
                        .map(|m| m.row(q).iter().copied().take_while(|&x| x != -1).collect())
                        .collect();
                    let slices: Vec<&[i64]> = trimmed.iter().map(|v| v.as_slice()).collect();
                    fusion::rrf(&slices, &params).map(|hits| {
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
            match out {
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
                Err(error) => match error.at {
                    At::Row(row) => {
                        for expected in &per_row[..row] {
                            assert!(expected.is_ok());
                        }
                        let e = per_row[row]
                            .as_ref()
                            .expect_err("the batch fails where rrf did not");
                        // The same problem at the same place; the batch also names the key.
                        let strip = |e: &Error| e.clone().with_key(|_, _| None).at(At::Call);
                        assert_eq!(strip(e), strip(&error));
                        if let Some(k) = error.key() {
                            let id = data[k.list][row * cols[k.list] + k.position];
                            assert_eq!(k.key, Some(Key::Int(id)));
                        }
                    }
                    _ => {
                        // Only normalize without a positive weight, which rrf raises for every row.
                        assert!(params.normalize, "unexpected argument error {error}");
                        for expected in &per_row {
                            assert_eq!(expected.as_ref().err(), Some(&error));
                        }
                    }
                },
            }
        }
    }

    /// Many lists: the general (not dense) layout and, past 64 lists, the set of seen lists.
    #[test]
    fn many_lists_equal_rrf() {
        let mut rng = Rng(99);
        for n_lists in [9, 64, 65, 70] {
            for duplicates in [Duplicates::First, Duplicates::Sum, Duplicates::Error] {
                let rows = if cfg!(miri) { 2 } else { 20 };
                let data: Vec<Vec<i64>> = (0..n_lists)
                    .map(|_| (0..rows * 6).map(|_| rng.below(40) as i64).collect())
                    .collect();
                let mats: Vec<IdMatrix> = data
                    .iter()
                    .map(|d| IdMatrix::new(d, rows, 6).unwrap())
                    .collect();
                let params = Fusion {
                    duplicates,
                    ..Fusion::default()
                };
                let out = batch(&mats, &params, false, 1);
                for q in 0..rows {
                    let row: Vec<&[i64]> = mats.iter().map(|m| m.row(q)).collect();
                    match (&out, fusion::rrf(&row, &params)) {
                        (Ok(out), Ok(hits)) => {
                            let w = out.width;
                            assert_eq!(out.counts[q] as usize, hits.len());
                            for (j, h) in hits.iter().enumerate() {
                                assert_eq!(out.ids[q * w + j], row[h.list_index][h.position]);
                                assert_eq!(out.scores[q * w + j].to_bits(), h.score.to_bits());
                            }
                        }
                        (Err(e), Err(_)) => {
                            assert_eq!(e.at, At::Row(q));
                            break;
                        }
                        (Err(e), Ok(_)) => assert!(matches!(e.at, At::Row(r) if q < r)),
                        (b, r) => panic!("{:?} vs {:?}", b.as_ref().err(), r.err()),
                    }
                }
            }
        }
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
        let p = Fusion {
            k: Some(0.0),
            weights: Some(vec![1.0, 1.000_000_000_000_000_2]),
            ..Fusion::default()
        };
        for limit in [None, Some(2)] {
            let p = Fusion { limit, ..p.clone() };
            let out = batch(&mats, &p, false, 1).unwrap();
            assert_eq!(out.ids, vec![20, 10]);
            assert_eq!(out.scores, vec![1.000_000_000_000_000_2, 1.0]);
        }
    }

    #[test]
    fn every_group_of_scores_an_ulp_apart_is_ordered_by_the_full_score() {
        // k = 0, one key per list: the scores are the weights. Two groups of scores equal but
        // for their last bits, each out of id order at a different place (the second only at
        // its end, so its group reaches back), between scores that are not close.
        let up = |x: f64| f64::from_bits(x.to_bits() + 1);
        let weights = vec![1.0, up(1.0), 1.0, 2.0, 2.0, up(2.0), 3.0];
        let keys: Vec<[i64; 1]> = (1..=7).map(|k| [k]).collect();
        let mats: Vec<IdMatrix> = keys
            .iter()
            .map(|k| IdMatrix::new(k, 1, 1).unwrap())
            .collect();
        let p = Fusion {
            k: Some(0.0),
            weights: Some(weights),
            ..Fusion::default()
        };
        let out = batch(&mats, &p, false, 1).unwrap();
        assert_eq!(out.ids, vec![7, 6, 4, 5, 2, 1, 3]);
        assert_eq!(out.scores, vec![3.0, up(2.0), 2.0, 2.0, up(1.0), 1.0, 1.0]);
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
        let out = batch(&mats, &Fusion::default(), true, 1).unwrap();
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
        let p = Fusion {
            limit: Some(10),
            ..Fusion::default()
        };
        let out = batch(&mats, &p, false, 1).unwrap();
        assert_eq!((out.width, out.counts.clone()), (2, vec![0, 2]));
        let none: [IdMatrix; 0] = [];
        let out = batch(&none, &Fusion::default(), false, 1).unwrap();
        assert_eq!((out.rows, out.width), (0, 0));
    }

    #[test]
    fn normalize_without_positive_weight_is_an_argument_error() {
        let p = Fusion {
            weights: Some(vec![-1.0]),
            normalize: true,
            ..Fusion::default()
        };
        for a in [[-1, -1, 1, 2], [-1, -1, -1, -1]] {
            let mats = [IdMatrix::new(&a, 2, 2).unwrap()];
            let e = batch(&mats, &p, false, 1).unwrap_err();
            assert_eq!(e.at, At::Call);
        }
    }

    #[test]
    fn first_failing_row_wins_in_parallel() {
        // Many rows (fewer under Miri, still several chunks on two threads); rows bad and
        // later repeat a key with duplicates = Error.
        let (rows, bad, later) = if cfg!(miri) {
            (1000, 500, 900)
        } else {
            (10_000, 5000, 9000)
        };
        let mut a: Vec<i64> = (0..rows * 4).map(|i| i as i64).collect();
        a[bad * 4 + 2] = a[bad * 4];
        a[later * 4 + 3] = a[later * 4];
        let mats = [IdMatrix::new(&a, rows, 4).unwrap()];
        let p = Fusion {
            duplicates: Duplicates::Error,
            ..Fusion::default()
        };
        let e = batch(&mats, &p, false, 2).unwrap_err();
        assert_eq!(e.at, At::Row(bad));
        assert_eq!(
            e.to_string(),
            format!(
                "row {bad}: lists[0] has the key {} more than once (rank 3)",
                bad * 4
            )
        );
    }

    #[test]
    fn parallel_equals_sequential() {
        let mut rng = Rng(42);
        // Enough rows for several chunks on two threads, fewer under Miri.
        let rows = if cfg!(miri) { 100 } else { 3000 };
        let a: Vec<i64> = (0..rows * 50).map(|_| rng.below(120) as i64 - 1).collect();
        let b: Vec<i64> = (0..rows * 30).map(|_| rng.below(120) as i64 - 1).collect();
        let mats = [
            IdMatrix::new(&a, rows, 50).unwrap(),
            IdMatrix::new(&b, rows, 30).unwrap(),
        ];
        let p = Fusion::default();
        let one = batch(&mats, &p, true, 1).unwrap();
        let two = batch(&mats, &p, true, 2).unwrap();
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
        let e = batch(&mats, &Fusion::default(), false, 1).unwrap_err();
        assert_eq!(e.at, At::Call);
    }
}
