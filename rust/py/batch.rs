//! `rrf_batch` and `fuse_batch` over numpy id (and score) matrices: argument checks in the
//! reference's order, the batch core (`crate::batch`) with the GIL released and on `threads`
//! threads, and the result arrays.
//!
//! Input arrays are copied (or converted by numpy into new arrays) while the GIL is held
//! (`super::arrays`), so the core, which runs with the GIL released, reads memory that no other
//! Python thread can write to. The output arrays are allocated by numpy (so an impossible size is
//! numpy's MemoryError) and filled with the GIL released.

use hashbrown::HashMap;
use numpy::{PyArray1, PyArray2, PyArray3, PyArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt};

use super::args::{
    as_tuple, describe, flag, fusion_params, int64, method_params, repr, Arg, Boost,
};
use super::arrays::{float_matrix, id_array, new_array, thread_count, IdArray};
use super::errors::core_error;
use super::results::BATCH_RESULT;
use super::rrf::query_plan;
use super::signals::Signals;
use crate::batch::{self, Extra, Output};
use crate::fusion::{params, Hasher, Params};
use crate::memory::Buffer;
use crate::pool;

/// `lists`: 2-D id arrays with the same number of rows.
fn id_arrays<'py>(lists: &Bound<'py, PyAny>, name: &str) -> PyResult<Vec<IdArray<'py>>> {
    let outer = as_tuple(lists, name)?;
    let mut arrays: Vec<IdArray<'py>> = Vec::with_capacity(outer.len());
    for (i, item) in outer.iter().enumerate() {
        let a = id_array(&item, &format!("{name}[{i}]"))?;
        if let Some(first) = arrays.first() {
            if a.rows != first.rows {
                return Err(PyValueError::new_err(format!(
                    "{name}[{i}] has {} rows (queries), {name}[0] has {}",
                    a.rows, first.rows
                )));
            }
        }
        arrays.push(a);
    }
    Ok(arrays)
}

/// The boost of a batch: its keys must be ids (ints); those beyond int64 cannot be ids and are
/// left out.
fn boost_ids(boost: &Bound<'_, PyDict>) -> PyResult<HashMap<i64, f64, Hasher>> {
    let mut out = HashMap::with_capacity_and_hasher(boost.len(), Hasher::default());
    for (key, value) in boost.iter() {
        let index = if key.is_instance_of::<pyo3::types::PyBool>() {
            None
        } else if key.cast::<PyInt>().is_ok() {
            Some(key.clone())
        } else if key.get_type().hasattr("__index__")? {
            Some(key.call_method0("__index__")?) // a numpy integer
        } else {
            None
        };
        let Some(index) = index else {
            return Err(PyTypeError::new_err(format!(
                "boost's keys must be ids (ints), got {}",
                describe(&key)
            )));
        };
        if let Ok(id) = index.extract::<i64>() {
            out.insert(id, value.extract::<f64>()?); // an id beyond int64 is in no row
        }
    }
    Ok(out)
}

/// Fuses every row and builds the BatchResult (`normalized` with fuse_batch's traces).
#[allow(clippy::too_many_arguments)]
fn fuse_rows<'py>(
    py: Python<'py>,
    arrays: Vec<IdArray<'py>>,
    scores: Vec<Option<Buffer<f64>>>,
    pad: i64,
    params: &Params,
    boost: Option<&HashMap<i64, f64, Hasher>>,
    trace: bool,
    n_threads: usize,
    with_normalized: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let plan = query_plan(params, arrays.len(), false)?;
    let matrices = arrays
        .iter()
        .map(IdArray::matrix)
        .collect::<PyResult<Vec<_>>>()?;
    let score_slices: Vec<Option<&[f64]>> = scores
        .iter()
        .map(|s| s.as_deref().map(Vec::as_slice))
        .collect();
    let extra = Extra {
        scores: &score_slices,
        boost,
    };
    let signals = Signals::new(py)?;
    let cancel = signals.cancel();
    let fused =
        py.detach(|| batch::fuse_batch(&matrices, extra, &plan, pad, trace, n_threads, &cancel));
    drop(matrices);
    if fused.is_err() {
        // The call raises at once: its copies of the input, up to gigabytes, are freed on
        // another thread.
        for a in arrays {
            a.free_later();
        }
        pool::free_later(scores);
    } else {
        drop(arrays);
        drop(scores);
    }
    signals.raise()?;
    let fused = fused.map_err(|e| core_error(py, e, None))?;

    let (q, w, l) = (fused.rows(), fused.width(), fused.lists());
    let ids = new_array(py, "empty", &[q, w], "int64")?.cast_into::<PyArray2<i64>>()?;
    let scores = new_array(py, "empty", &[q, w], "float64")?.cast_into::<PyArray2<f64>>()?;
    let counts = new_array(py, "empty", &[q], "int64")?.cast_into::<PyArray1<i64>>()?;
    let zeros = |dtype| new_array(py, "zeros", &[q, w, l], dtype);
    let (ranks, contributions, normalized) = if trace {
        (
            Some(zeros("int32")?.cast_into::<PyArray3<i32>>()?),
            Some(zeros("float64")?.cast_into::<PyArray3<f64>>()?),
            if with_normalized {
                Some(zeros("float64")?.cast_into::<PyArray3<f64>>()?)
            } else {
                None
            },
        )
    } else {
        (None, None, None)
    };
    {
        let borrow = |e: numpy::BorrowError| PyRuntimeError::new_err(e.to_string());
        let slice = |e: numpy::AsSliceError| PyRuntimeError::new_err(e.to_string());
        let mut ids_rw = ids.try_readwrite().map_err(borrow)?;
        let mut scores_rw = scores.try_readwrite().map_err(borrow)?;
        let mut counts_rw = counts.try_readwrite().map_err(borrow)?;
        let mut ranks_rw = ranks
            .as_ref()
            .map(|a| a.try_readwrite())
            .transpose()
            .map_err(borrow)?;
        let mut contributions_rw = contributions
            .as_ref()
            .map(|a| a.try_readwrite())
            .transpose()
            .map_err(borrow)?;
        let mut normalized_rw = normalized
            .as_ref()
            .map(|a| a.try_readwrite())
            .transpose()
            .map_err(borrow)?;
        let out = Output {
            ids: ids_rw.as_slice_mut().map_err(slice)?,
            scores: scores_rw.as_slice_mut().map_err(slice)?,
            counts: counts_rw.as_slice_mut().map_err(slice)?,
            ranks: ranks_rw
                .as_mut()
                .map(|a| a.as_slice_mut())
                .transpose()
                .map_err(slice)?,
            contributions: contributions_rw
                .as_mut()
                .map(|a| a.as_slice_mut())
                .transpose()
                .map_err(slice)?,
            normalized: normalized_rw
                .as_mut()
                .map(|a| a.as_slice_mut())
                .transpose()
                .map_err(slice)?,
        };
        let written = py.detach(|| fused.write(out, &cancel));
        if written.is_err() {
            pool::free_later(fused); // as the copies above
        } else {
            drop(fused);
        }
        signals.raise()?;
        written.map_err(|e| core_error(py, e, None))?;
    }
    let none = || py.None().into_bound(py);
    let mut fields = vec![
        ids.into_any(),
        scores.into_any(),
        counts.into_any(),
        ranks.map_or_else(none, Bound::into_any),
        contributions.map_or_else(none, Bound::into_any),
    ];
    if with_normalized {
        fields.push(normalized.map_or_else(none, Bound::into_any));
    }
    BATCH_RESULT.make(py, fields)
}

/// RRF of Q queries at once: row q of the result is `rrf` of row q of every list.
///
/// Each list is a 2-D integer array (Q, N_i) (int64, or an integer dtype that widens to it
/// losslessly); an entry equal to `pad` is a hole, skipped without shifting the ranks behind it.
/// The other arguments are `rrf`'s. Returns a BatchResult: ids (Q, W) int64 padded with `pad`,
/// scores (Q, W) float64 padded with NaN, counts (Q,) int64; W is the largest count, or
/// min(limit, the most keys a row can hold) with a limit. With trace=True also ranks and
/// contributions (Q, W, L): the hit's best rank and summed contribution per list, 0 where absent.
/// Rows are fused in parallel on up to `threads` threads (default: every CPU) with the GIL
/// released. An error in row q is raised as "row q: <rrf's message>", for the first failing row.
/// See docs/batch.md.
#[pyfunction]
#[pyo3(
    signature = (lists, *, pad=Arg::Missing, k=Arg::Missing, weights=None, window=None,
                 duplicates=Arg::Missing, tie_break=Arg::Missing, offset=Arg::Missing, limit=None,
                 min_score=None, normalize=Arg::Missing, trace=Arg::Missing, threads=None),
    text_signature = "(lists, *, pad=-1, k=60, weights=None, window=None, duplicates='first', tie_break='best_rank', offset=0, limit=None, min_score=None, normalize=False, trace=False, threads=None)"
)]
#[allow(clippy::too_many_arguments)]
pub fn rrf_batch<'py>(
    py: Python<'py>,
    lists: &Bound<'py, PyAny>,
    pad: Arg<'py>,
    k: Arg<'py>,
    weights: Option<Bound<'py, PyAny>>,
    window: Option<Bound<'py, PyAny>>,
    duplicates: Arg<'py>,
    tie_break: Arg<'py>,
    offset: Arg<'py>,
    limit: Option<Bound<'py, PyAny>>,
    min_score: Option<Bound<'py, PyAny>>,
    normalize: Arg<'py>,
    trace: Arg<'py>,
    threads: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let arrays = id_arrays(lists, "lists")?;
    let pad = pad.or(-1, |v| int64(v, "pad"))?;
    let params = fusion_params(
        Arg::Missing,
        None,
        k,
        weights,
        Some(arrays.len()),
        window,
        duplicates,
        tie_break,
        offset,
        limit,
        min_score,
        normalize,
    )?;
    let trace = trace.or(false, |v| flag(v, "trace"))?;
    let n_threads = thread_count(threads)?;
    fuse_rows(
        py,
        arrays,
        Vec::new(),
        pad,
        &params,
        None,
        trace,
        n_threads,
        false,
    )
}

/// `fuse` of Q queries at once: row q of the result is `fuse` of row q of every list, bit for
/// bit.
///
/// `ids` as rrf_batch's lists: 2-D integer arrays (Q, N_i) padded with `pad`. `scores`: None,
/// or per list None or a (Q, N_i) real array aligned with the list's ids (the score of a pad is
/// never read; any other must be finite). The other arguments are `fuse`'s (`boost`'s keys are
/// ids). Returns a BatchResult as rrf_batch's; with trace=True also `normalized` (Q, W, L): the
/// normalised value of the hit's best occurrence in list l, 0.0 where absent. See
/// docs/semantics.md and docs/batch.md.
#[pyfunction]
#[pyo3(
    signature = (ids, scores=None, *, pad=Arg::Missing, method=Arg::Missing, norm=None,
                 k=Arg::Missing, weights=None, window=None, duplicates=Arg::Missing,
                 tie_break=Arg::Missing, offset=Arg::Missing, limit=None, min_score=None,
                 normalize=Arg::Missing, lower_is_better=None, phi=None, gamma=None, sigma=None,
                 boost=None, boost_weight=None, trace=Arg::Missing, threads=None),
    text_signature = "(ids, scores=None, *, pad=-1, method='rrf', norm=None, k=60, weights=None, window=None, duplicates='first', tie_break='best_rank', offset=0, limit=None, min_score=None, normalize=False, lower_is_better=None, phi=None, gamma=None, sigma=None, boost=None, boost_weight=None, trace=False, threads=None)"
)]
#[allow(clippy::too_many_arguments)]
pub fn fuse_batch<'py>(
    py: Python<'py>,
    ids: &Bound<'py, PyAny>,
    scores: Option<Bound<'py, PyAny>>,
    pad: Arg<'py>,
    method: Arg<'py>,
    norm: Option<Bound<'py, PyAny>>,
    k: Arg<'py>,
    weights: Option<Bound<'py, PyAny>>,
    window: Option<Bound<'py, PyAny>>,
    duplicates: Arg<'py>,
    tie_break: Arg<'py>,
    offset: Arg<'py>,
    limit: Option<Bound<'py, PyAny>>,
    min_score: Option<Bound<'py, PyAny>>,
    normalize: Arg<'py>,
    lower_is_better: Option<Bound<'py, PyAny>>,
    phi: Option<Bound<'py, PyAny>>,
    gamma: Option<Bound<'py, PyAny>>,
    sigma: Option<Bound<'py, PyAny>>,
    boost: Option<Bound<'py, PyAny>>,
    boost_weight: Option<Bound<'py, PyAny>>,
    trace: Arg<'py>,
    threads: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let arrays = id_arrays(ids, "ids")?;
    let n = arrays.len();
    let mut score_data: Vec<Option<Buffer<f64>>> = (0..n).map(|_| None).collect();
    if let Some(s) = scores.filter(|s| !s.is_none()) {
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
            let (data, shape) = float_matrix(&item, &format!("scores[{i}]"))?;
            let expected = (arrays[i].rows, arrays[i].cols);
            if shape != expected {
                return Err(PyValueError::new_err(format!(
                    "scores[{i}] has shape {} but ids[{i}] has shape {}",
                    repr(shape.into_pyobject(py)?.as_any()),
                    repr(expected.into_pyobject(py)?.as_any())
                )));
            }
            score_data[i] = Some(data);
        }
    }
    let pad = pad.or(-1, |v| int64(v, "pad"))?;
    let mut params = fusion_params(
        method,
        norm,
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
    let plan = query_plan(&params, n, false)?;
    if plan.reads_scores() {
        for (i, s) in score_data.iter().enumerate() {
            if plan.weights[i] != 0.0 && s.is_none() {
                return Err(params::scores_missing(plan.params.method, plan.norm, i).into());
            }
        }
    }
    let boost = method_params(
        &mut params,
        Some(n),
        lower_is_better,
        phi,
        gamma,
        sigma,
        boost,
        boost_weight,
    )?;
    let boost: Boost<'_> = boost;
    let boost = boost.map(|b| boost_ids(&b)).transpose()?;
    let trace = trace.or(false, |v| flag(v, "trace"))?;
    let n_threads = thread_count(threads)?;
    fuse_rows(
        py,
        arrays,
        score_data,
        pad,
        &params,
        boost.as_ref(),
        trace,
        n_threads,
        true,
    )
}

/// For benchmarks: the bare loop of `rrf_batch` (fuse every row and write the output) on
/// `lists`, run `repeat` times with the GIL released into buffers allocated once; the input is
/// copied before and nothing is built for Python. Returns the seconds of each run, so that
/// `benches/batch_table.py` can time the binding and its floor side by side in one process.
#[cfg(feature = "bench-hooks")]
#[pyfunction]
#[pyo3(signature = (lists, *, threads=None, repeat=1))]
pub fn _bare_loop(
    py: Python<'_>,
    lists: &Bound<'_, PyAny>,
    threads: Option<Bound<'_, PyAny>>,
    repeat: usize,
) -> PyResult<Vec<f64>> {
    let outer = as_tuple(lists, "lists")?;
    let arrays = outer
        .iter()
        .enumerate()
        .map(|(i, a)| id_array(&a, &format!("lists[{i}]")))
        .collect::<PyResult<Vec<_>>>()?;
    let n_threads = thread_count(threads)?;
    let matrices = arrays
        .iter()
        .map(IdArray::matrix)
        .collect::<PyResult<Vec<_>>>()?;
    let plan = crate::fusion::Params::default()
        .plan(matrices.len())
        .map_err(|e| core_error(py, e, None))?;
    let none = crate::cancel::Cancel::none();
    let fused = py
        .detach(|| {
            batch::fuse_batch(
                &matrices,
                Extra::default(),
                &plan,
                -1,
                false,
                n_threads,
                &none,
            )
        })
        .map_err(|e| core_error(py, e, None))?;
    let (q, w) = (fused.rows(), fused.width());
    let (mut ids, mut scores, mut counts) = (vec![0i64; q * w], vec![0f64; q * w], vec![0i64; q]);
    let times = py
        .detach(|| {
            (0..repeat)
                .map(|_| {
                    let t = std::time::Instant::now();
                    let fused = batch::fuse_batch(
                        &matrices,
                        Extra::default(),
                        &plan,
                        -1,
                        false,
                        n_threads,
                        &none,
                    )?;
                    fused.write(
                        Output {
                            ids: &mut ids,
                            scores: &mut scores,
                            counts: &mut counts,
                            ranks: None,
                            contributions: None,
                            normalized: None,
                        },
                        &none,
                    )?;
                    Ok(t.elapsed().as_secs_f64())
                })
                .collect::<Result<Vec<f64>, crate::Error>>()
        })
        .map_err(|e| core_error(py, e, None))?;
    Ok(times)
}
