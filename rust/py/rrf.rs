//! `rrf`: argument extraction, the two key paths, result building.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use super::args::{as_tuple, optional_flag, real, shared_params, Arg};
use super::errors::{to_pyerr, BindError};
use super::keys::{exact_ints, PyInterner};
use super::results::{Contribution, Hit};
use crate::fusion::{self, Occurrence, Params, Plan, Scan, Scores, TieBreak};

/// Everything `rrf` needs, extracted and checked in the reference's order.
pub struct RrfArgs<'py> {
    pub lists: Vec<Bound<'py, PyTuple>>,
    pub params: Params,
    /// Per list, the caller's raw scores (only carried into traces).
    pub raw_scores: Vec<Option<Vec<f64>>>,
    pub trace: bool,
}

#[allow(clippy::too_many_arguments)]
pub fn extract_args<'py>(
    lists: &Bound<'py, PyAny>,
    k: Arg<'py>,
    weights: Option<Bound<'py, PyAny>>,
    window: Option<Bound<'py, PyAny>>,
    duplicates: Arg<'py>,
    tie_break: Arg<'py>,
    offset: Arg<'py>,
    limit: Option<Bound<'py, PyAny>>,
    min_score: Option<Bound<'py, PyAny>>,
    normalize: Arg<'py>,
    scores: Option<Bound<'py, PyAny>>,
    trace: Arg<'py>,
) -> PyResult<RrfArgs<'py>> {
    let outer = as_tuple(lists, "lists")?;
    let lists = outer
        .iter()
        .enumerate()
        .map(|(i, l)| as_tuple(&l, &format!("lists[{i}]")))
        .collect::<PyResult<Vec<_>>>()?;
    let n = lists.len();
    let params = shared_params(
        k,
        weights,
        Some(n),
        window,
        duplicates,
        tie_break,
        offset,
        limit,
        min_score,
        normalize,
    )?;
    let raw_scores = extract_raw_scores(scores, &lists)?;
    let trace = optional_flag(trace, "trace")?;
    Ok(RrfArgs {
        lists,
        params,
        raw_scores,
        trace,
    })
}

/// `scores=`: per list, None or the list's raw scores (finite reals), aligned with the list.
pub fn extract_raw_scores<'py>(
    scores: Option<Bound<'py, PyAny>>,
    lists: &[Bound<'py, PyTuple>],
) -> PyResult<Vec<Option<Vec<f64>>>> {
    let n = lists.len();
    let mut raw_scores = vec![None; n];
    let Some(s) = scores.filter(|s| !s.is_none()) else {
        return Ok(raw_scores);
    };
    let s = as_tuple(&s, "scores")?;
    if s.len() != n {
        return Err(PyValueError::new_err(format!(
            "scores has {} entries for {n} lists",
            s.len()
        )));
    }
    for (i, item) in s.iter().enumerate() {
        if item.is_none() {
            continue;
        }
        let name = format!("scores[{i}]");
        let values = as_tuple(&item, &name)?;
        if values.len() != lists[i].len() {
            return Err(PyValueError::new_err(format!(
                "{name} has {} values for {} keys",
                values.len(),
                lists[i].len()
            )));
        }
        raw_scores[i] = Some(
            values
                .iter()
                .enumerate()
                .map(|(j, x)| real(&x, &format!("{name}[{j}]"), true))
                .collect::<PyResult<Vec<f64>>>()?,
        );
    }
    Ok(raw_scores)
}

/// The fused result before Python objects are built: the scan, the scores, and the key ids of the
/// page in output order.
pub struct Fused {
    pub scan: Scan,
    pub scores: Scores,
    pub page: Vec<u32>,
}

/// Fuses checked arguments. Exact-int keys run entirely with the GIL released; any other keys
/// are interned with the GIL held (their `__hash__`/`__eq__` are Python), then scored and ranked
/// with the GIL released.
pub fn fuse(py: Python<'_>, args: &RrfArgs<'_>, plan: &Plan) -> Result<Fused, BindError> {
    let p = &args.params;
    if let Some(ints) = exact_ints(&args.lists, &plan.weights, p.window) {
        return py.detach(|| {
            let slices: Vec<&[i64]> = ints.iter().map(|v| v.as_slice()).collect();
            let lens: Vec<usize> = slices.iter().map(|s| s.len()).collect();
            let scan = fusion::scan(
                &lens,
                &plan.weights,
                p.window,
                p.duplicates,
                fusion::interner(&slices),
            )?;
            let scores = fusion::score(&scan, &plan.weights, p.k, plan.normalizer)?;
            let key = |id: u32| {
                let (l, pos) = scan.first_seen[id as usize];
                slices[l as usize][pos as usize]
            };
            let page = match p.tie_break {
                TieBreak::BestRank => {
                    fusion::rank(&scores, p.min_score, p.offset, p.limit, |a, b| a.cmp(&b))
                }
                TieBreak::Key => fusion::rank(&scores, p.min_score, p.offset, p.limit, |a, b| {
                    key(a).cmp(&key(b))
                }),
            };
            Ok(Fused { scan, scores, page })
        });
    }

    let lens: Vec<usize> = args.lists.iter().map(|t| t.len()).collect();
    let mut interner = PyInterner::new(&args.lists);
    let scan = fusion::scan(&lens, &plan.weights, p.window, p.duplicates, |l, pos| {
        interner.intern(l, pos).map_err(BindError::Py)
    })?;
    let (scores, order) = py.detach(|| -> Result<_, BindError> {
        let scores = fusion::score(&scan, &plan.weights, p.k, plan.normalizer)?;
        let order = match p.tie_break {
            TieBreak::BestRank => {
                fusion::rank(&scores, p.min_score, p.offset, p.limit, |a, b| a.cmp(&b))
            }
            // The whole order: tie groups are sorted by Python below, then the page is cut.
            TieBreak::Key => fusion::rank(&scores, p.min_score, 0, None, |a, b| a.cmp(&b)),
        };
        Ok((scores, order))
    })?;
    let page = match p.tie_break {
        TieBreak::BestRank => order,
        TieBreak::Key => {
            let sorted = sort_ties_by_key(py, &args.lists, &scan, scores.order(), order)?;
            let end = p.limit.map_or(sorted.len(), |l| {
                p.offset.saturating_add(l).min(sorted.len())
            });
            sorted
                .get(p.offset..end)
                .map(<[u32]>::to_vec)
                .unwrap_or_default()
        }
    };
    Ok(Fused { scan, scores, page })
}

/// Sorts each run of equal scores by key with Python's own `sorted` (the same comparisons, in the
/// same order, as the reference), so incomparable keys raise the same TypeError.
fn sort_ties_by_key(
    py: Python<'_>,
    lists: &[Bound<'_, PyTuple>],
    scan: &Scan,
    scores: &[f64],
    mut order: Vec<u32>,
) -> PyResult<Vec<u32>> {
    let sorted = py.import("builtins")?.getattr("sorted")?;
    let key_object = |id: u32| {
        let (l, pos) = scan.first_seen[id as usize];
        lists[l as usize].get_item(pos as usize)
    };
    let mut start = 0;
    while start < order.len() {
        let s = scores[order[start] as usize];
        let mut end = start + 1;
        while end < order.len() && scores[order[end] as usize] == s {
            end += 1;
        }
        if end - start > 1 {
            let run = &mut order[start..end];
            let keys = PyList::new(
                py,
                run.iter()
                    .map(|&id| key_object(id))
                    .collect::<PyResult<Vec<_>>>()?,
            )?;
            let kw = pyo3::types::PyDict::new(py);
            kw.set_item("key", keys.getattr("__getitem__")?)?;
            let perm: Vec<usize> = sorted
                .call(
                    (pyo3::types::PyRange::new(py, 0, run.len() as isize)?,),
                    Some(&kw),
                )
                .map_err(|e| incomparable_ties(py, e))?
                .extract()?;
            let before = run.to_vec();
            for (slot, &i) in run.iter_mut().zip(&perm) {
                *slot = before[i];
            }
        }
        start = end;
    }
    Ok(order)
}

/// A TypeError from comparing tied keys, re-raised naming `tie_break` (the original as cause).
fn incomparable_ties(py: Python<'_>, e: PyErr) -> PyErr {
    if !e.is_instance_of::<PyTypeError>(py) {
        return e;
    }
    let err = PyTypeError::new_err(format!(
        "tie_break='key': tied keys cannot be compared ({})",
        e.value(py)
    ));
    err.set_cause(py, Some(e));
    err
}

/// One Python hit: the key object at (`list`, `position`) of the input, its score and, when
/// tracing, its contributions from `occurrences` (already ordered by list, then position).
pub fn new_hit(
    py: Python<'_>,
    args: &RrfArgs<'_>,
    plan: &Plan,
    (list, position): (u32, u32),
    score: f64,
    occurrences: &[Occurrence],
) -> PyResult<Py<Hit>> {
    let key = args.lists[list as usize]
        .get_item(position as usize)?
        .unbind();
    let contributions = if args.trace {
        let items = occurrences
            .iter()
            .map(|o| {
                let w = plan.weights[o.list as usize];
                Py::new(
                    py,
                    Contribution {
                        list_index: o.list as usize,
                        rank: o.position as usize + 1,
                        weight: w,
                        contribution: fusion::contribution(w, args.params.k, o.position),
                        score: args.raw_scores[o.list as usize]
                            .as_ref()
                            .map(|v| v[o.position as usize]),
                    },
                )
            })
            .collect::<PyResult<Vec<_>>>()?;
        Some(PyTuple::new(py, items)?.unbind())
    } else {
        None
    };
    Py::new(
        py,
        Hit {
            key,
            score,
            contributions,
        },
    )
}

/// Builds the Python hits of the page.
pub fn build_hits<'py>(
    py: Python<'py>,
    args: &RrfArgs<'py>,
    plan: &Plan,
    fused: &Fused,
) -> PyResult<Bound<'py, PyList>> {
    let mut occs = Vec::new();
    let hits = fused
        .page
        .iter()
        .map(|&id| {
            occs.clear();
            if args.trace {
                let s = &fused.scores;
                let (a, b) = (s.offsets[id as usize], s.offsets[id as usize + 1]);
                occs.extend_from_slice(&s.occurrences[a as usize..b as usize]);
                occs.sort_unstable_by_key(|o: &Occurrence| (o.list, o.position));
            }
            new_hit(
                py,
                args,
                plan,
                fused.scan.first_seen[id as usize],
                fused.scores.scores[id as usize],
                &occs,
            )
        })
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, hits)
}

/// Reciprocal Rank Fusion of ranked lists (each best first).
///
/// Every counted occurrence of a key at rank r (1-based position in the list as given) of list i
/// contributes weights[i] / (k + r). A key's score is the sum of its contributions added in
/// ascending order of value from 0.0, so list order never changes a score's bits. Hits are
/// ordered by score descending; ties by first appearance in the interleaved scan (rank 1 of every
/// list, then rank 2, ...) or, with tie_break="key", by the key ascending.
///
/// Args:
///     lists: iterables of hashable keys (dict semantics: 1, 1.0 and True are one key).
///     k: finite real >= 0.
///     weights: one finite real per list (default 1.0); a list of weight 0 is skipped entirely.
///     window: read only the first `window` items of each list (int >= 1).
///     duplicates: "first" (only the best occurrence in a list counts), "sum" (all count) or
///         "error" (ValueError).
///     tie_break: "best_rank" or "key".
///     offset, limit: the page of the ordered hits (after min_score).
///     min_score: drop hits whose returned score is below it.
///     normalize: divide scores by the best possible score (sum of w/(k+1) over positive weights).
///     scores: per list, its raw scores (finite reals, or None for the list), aligned with the
///         list; carried into traces only.
///     trace: give every hit its contributions.
///
/// Returns:
///     A list of Hit, best first; a hit unpacks as (key, score).
///
/// Raises:
///     TypeError: an argument of the wrong type, an unhashable key, incomparable tied keys with
///         tie_break="key". The message names the argument.
///     ValueError: a wrong value (negative or non-finite k, weights of the wrong length or not
///         finite, window < 1, negative offset/limit, unknown duplicates/tie_break, normalize
///         without a positive weight, a repeated key with duplicates="error",
///         a score overflowing to infinity).
///     Exceptions raised by a key's __hash__ or __eq__ propagate unchanged. Empty input (no lists,
///     or only empty lists) is not an error: it gives [].
#[pyfunction]
#[pyo3(
    signature = (lists, *, k=Arg::Missing, weights=None, window=None, duplicates=Arg::Missing,
                 tie_break=Arg::Missing, offset=Arg::Missing, limit=None, min_score=None,
                 normalize=Arg::Missing, scores=None, trace=Arg::Missing),
    text_signature = "(lists, *, k=60, weights=None, window=None, duplicates='first', tie_break='best_rank', offset=0, limit=None, min_score=None, normalize=False, scores=None, trace=False)"
)]
#[allow(clippy::too_many_arguments)]
pub fn rrf<'py>(
    py: Python<'py>,
    lists: &Bound<'py, PyAny>,
    k: Arg<'py>,
    weights: Option<Bound<'py, PyAny>>,
    window: Option<Bound<'py, PyAny>>,
    duplicates: Arg<'py>,
    tie_break: Arg<'py>,
    offset: Arg<'py>,
    limit: Option<Bound<'py, PyAny>>,
    min_score: Option<Bound<'py, PyAny>>,
    normalize: Arg<'py>,
    scores: Option<Bound<'py, PyAny>>,
    trace: Arg<'py>,
) -> PyResult<Bound<'py, PyList>> {
    let args = extract_args(
        lists, k, weights, window, duplicates, tie_break, offset, limit, min_score, normalize,
        scores, trace,
    )?;
    let lens: Vec<usize> = args.lists.iter().map(|t| t.len()).collect();
    let Some(plan) = fusion::plan(&lens, &args.params)? else {
        return Ok(PyList::empty(py));
    };
    let fused = fuse(py, &args, &plan).map_err(|e| to_pyerr(e, &args.lists))?;
    build_hits(py, &args, &plan, &fused)
}
