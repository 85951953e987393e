//! `rrf_batch` over numpy id matrices: argument checks in the reference's order, the batch core
//! (`crate::batch`) with the GIL released and on `threads` threads, and the result arrays.
//!
//! Input arrays: a native int64, C-contiguous, aligned array is copied (one memcpy) while the GIL
//! is held; any other accepted array is converted by numpy (`astype(int64, order="C")`) into a new
//! array that nobody else can see, which is then only read. Either way the core, which runs with
//! the GIL released, reads memory that no other Python thread can write to, so a thread mutating
//! an input array meanwhile cannot corrupt the call (a read-only borrow would not stop it: numpy
//! does not consult rust-numpy's borrow flags). The output arrays are allocated by numpy (so an
//! impossible size is numpy's MemoryError) and filled with the GIL released.

use numpy::{
    PyArray1, PyArray2, PyArray3, PyArrayDescrMethods, PyArrayMethods, PyReadonlyArray2,
    PyUntypedArray, PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyTuple;

use super::args::{as_tuple, flag, fusion_params, int64, integer, Arg};
use super::errors::core_error;
use super::results::BATCH_RESULT;
use super::rrf::query_plan;
use crate::batch::{self, IdMatrix, Output};
use crate::memory;
use crate::pool;

fn numpy(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    static NUMPY: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
    NUMPY
        .get_or_try_init(py, || py.import("numpy").map(Bound::unbind))
        .map(|m| m.bind(py))
}

/// The ids of one list, readable with the GIL released and by no one else writable.
enum Ids<'py> {
    /// A copy of the caller's int64 array.
    Copied(Vec<i64>),
    /// A new int64 array made by numpy from the caller's (other dtype or layout).
    Converted(PyReadonlyArray2<'py, i64>),
}

struct IdArray<'py> {
    ids: Ids<'py>,
    rows: usize,
    cols: usize,
}

impl IdArray<'_> {
    fn matrix(&self) -> PyResult<IdMatrix<'_>> {
        let data = match &self.ids {
            Ids::Copied(v) => v.as_slice(),
            Ids::Converted(a) => a
                .as_slice()
                .map_err(|e| PyRuntimeError::new_err(e.to_string()))?,
        };
        IdMatrix::new(data, self.rows, self.cols)
            .ok_or_else(|| PyRuntimeError::new_err("an id array does not match its shape"))
    }
}

/// A copy of `ids`, in a buffer marked for huge pages (see `crate::memory`): fresh memory
/// costs a page fault per 4 KiB page otherwise, a sizeable part of the copy.
fn copy_ids(ids: &[i64]) -> Vec<i64> {
    let mut copy: Vec<i64> = memory::vec_with_capacity(ids.len());
    copy.extend_from_slice(ids);
    copy
}

/// A 2-D integer array whose dtype widens to int64 without loss (int8..int64, uint8..uint32),
/// like the reference's `_id_matrix`: not an ndarray -> `numpy.asarray`; a wrong dtype is a
/// TypeError, a wrong number of dimensions a ValueError.
fn id_array<'py>(value: &Bound<'py, PyAny>, name: &str) -> PyResult<IdArray<'py>> {
    let py = value.py();
    let array = match value.cast::<PyUntypedArray>() {
        Ok(a) => a.clone(),
        Err(_) => match numpy(py)?.call_method1("asarray", (value,)) {
            Ok(a) => a.cast_into::<PyUntypedArray>()?,
            Err(e) if e.is_instance_of::<PyValueError>(py) => {
                return Err(PyValueError::new_err(format!(
                    "{name} is not a 2-D integer array: {}",
                    e.value(py)
                )))
            }
            Err(e) => return Err(e),
        },
    };
    let dtype = array.dtype();
    let (kind, size) = (dtype.kind(), dtype.itemsize());
    if !((kind == b'i' && size <= 8) || (kind == b'u' && size <= 4)) {
        return Err(PyTypeError::new_err(format!(
            "{name} must be an integer array that widens to int64, got dtype {}",
            dtype.str()?
        )));
    }
    if array.ndim() != 2 {
        return Err(PyValueError::new_err(format!(
            "{name} must be a 2-D array (queries, candidates), got shape {}",
            array.getattr("shape")?.repr()?
        )));
    }
    let (rows, cols) = (array.shape()[0], array.shape()[1]);
    let native = dtype.is_equiv_to(&numpy::dtype::<i64>(py));
    if native && array.is_c_contiguous() && array.is_aligned() {
        let typed = array.cast::<PyArray2<i64>>()?;
        let ro = typed
            .try_readonly()
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        let copy = copy_ids(
            ro.as_slice()
                .map_err(|e| PyRuntimeError::new_err(e.to_string()))?,
        );
        return Ok(IdArray {
            ids: Ids::Copied(copy),
            rows,
            cols,
        });
    }
    let int64 = numpy(py)?.getattr("int64")?;
    let kwargs = pyo3::types::PyDict::new(py);
    kwargs.set_item("order", "C")?;
    let converted = array
        .call_method("astype", (int64,), Some(&kwargs))?
        .cast_into::<PyArray2<i64>>()?;
    let ro = converted
        .try_readonly()
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    Ok(IdArray {
        ids: Ids::Converted(ro),
        rows,
        cols,
    })
}

fn thread_count(threads: Option<Bound<'_, PyAny>>) -> PyResult<usize> {
    let threads = threads.map(|t| integer(&t, "threads", 1)).transpose()?;
    Ok(pool::resolve_threads(threads))
}

/// A new numpy array of `shape` (`numpy.empty` or `numpy.zeros`), so that an impossible size is
/// numpy's own MemoryError.
fn new_array<'py>(
    py: Python<'py>,
    how: &str,
    shape: &[usize],
    dtype: &str,
) -> PyResult<Bound<'py, PyAny>> {
    numpy(py)?.call_method1(how, (PyTuple::new(py, shape)?, dtype))
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
    let outer = as_tuple(lists, "lists")?;
    let mut arrays: Vec<IdArray<'py>> = Vec::with_capacity(outer.len());
    for (i, item) in outer.iter().enumerate() {
        let a = id_array(&item, &format!("lists[{i}]"))?;
        if let Some(first) = arrays.first() {
            if a.rows != first.rows {
                return Err(PyValueError::new_err(format!(
                    "lists[{i}] has {} rows (queries), lists[0] has {}",
                    a.rows, first.rows
                )));
            }
        }
        arrays.push(a);
    }
    let pad = pad.or(-1, |v| int64(v, "pad"))?;
    let params = fusion_params(
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
    let plan = query_plan(&params, arrays.len())?;

    let matrices = arrays
        .iter()
        .map(IdArray::matrix)
        .collect::<PyResult<Vec<_>>>()?;
    let fused = py
        .detach(|| batch::fuse_batch(&matrices, &plan, pad, trace, n_threads))
        .map_err(|e| core_error(py, e, None))?;
    drop(matrices);
    drop(arrays);

    let (q, w, l) = (fused.rows(), fused.width(), fused.lists());
    let ids = new_array(py, "empty", &[q, w], "int64")?.cast_into::<PyArray2<i64>>()?;
    let scores = new_array(py, "empty", &[q, w], "float64")?.cast_into::<PyArray2<f64>>()?;
    let counts = new_array(py, "empty", &[q], "int64")?.cast_into::<PyArray1<i64>>()?;
    let traced = if trace {
        Some((
            new_array(py, "zeros", &[q, w, l], "int32")?.cast_into::<PyArray3<i32>>()?,
            new_array(py, "zeros", &[q, w, l], "float64")?.cast_into::<PyArray3<f64>>()?,
        ))
    } else {
        None
    };
    {
        let borrow = |e: numpy::BorrowError| PyRuntimeError::new_err(e.to_string());
        let slice = |e: numpy::AsSliceError| PyRuntimeError::new_err(e.to_string());
        let mut ids_rw = ids.try_readwrite().map_err(borrow)?;
        let mut scores_rw = scores.try_readwrite().map_err(borrow)?;
        let mut counts_rw = counts.try_readwrite().map_err(borrow)?;
        let mut trace_rw = match &traced {
            Some((r, c)) => Some((
                r.try_readwrite().map_err(borrow)?,
                c.try_readwrite().map_err(borrow)?,
            )),
            None => None,
        };
        let (ranks, contributions) = match trace_rw.as_mut() {
            Some((r, c)) => (
                Some(r.as_slice_mut().map_err(slice)?),
                Some(c.as_slice_mut().map_err(slice)?),
            ),
            None => (None, None),
        };
        let out = Output {
            ids: ids_rw.as_slice_mut().map_err(slice)?,
            scores: scores_rw.as_slice_mut().map_err(slice)?,
            counts: counts_rw.as_slice_mut().map_err(slice)?,
            ranks,
            contributions,
        };
        py.detach(|| fused.write(out));
    }
    let (ranks, contributions) = match traced {
        Some((r, c)) => (r.into_any(), c.into_any()),
        None => (py.None().into_bound(py), py.None().into_bound(py)),
    };
    BATCH_RESULT.make(
        py,
        [
            ids.into_any(),
            scores.into_any(),
            counts.into_any(),
            ranks,
            contributions,
        ],
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
    let fused = py
        .detach(|| batch::fuse_batch(&matrices, &plan, -1, false, n_threads))
        .map_err(|e| core_error(py, e, None))?;
    let (q, w) = (fused.rows(), fused.width());
    let (mut ids, mut scores, mut counts) = (vec![0i64; q * w], vec![0f64; q * w], vec![0i64; q]);
    let times = py
        .detach(|| {
            (0..repeat)
                .map(|_| {
                    let t = std::time::Instant::now();
                    let fused = batch::fuse_batch(&matrices, &plan, -1, false, n_threads)?;
                    fused.write(Output {
                        ids: &mut ids,
                        scores: &mut scores,
                        counts: &mut counts,
                        ranks: None,
                        contributions: None,
                    });
                    Ok(t.elapsed().as_secs_f64())
                })
                .collect::<Result<Vec<f64>, crate::Error>>()
        })
        .map_err(|e| core_error(py, e, None))?;
    Ok(times)
}
