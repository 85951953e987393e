//! `rrf_batch` and `fuse_batch` over numpy id (and score) matrices: argument checks in the
//! reference's order, the batch core (`crate::batch`) with the GIL released and on `threads`
//! threads, and the result arrays.
//!
//! Input arrays are copied (or converted by numpy into new arrays) while the GIL is held
//! (`super::arrays`), so the core, which runs with the GIL released, reads memory that no other
//! Python thread can write to. The output arrays are allocated by numpy (so an impossible size is
//! numpy's MemoryError) and filled with the GIL released.

use hashbrown::HashMap;
use numpy::ndarray::Dimension;
use numpy::{Element, PyArray, PyArray1, PyArray2, PyArray3, PyArrayMethods, PyReadwriteArray};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt};

use super::args::{as_tuple, describe, int64, Arg};
use super::arrays::{float_matrix, id_array, new_array, thread_count, unexpected, IdArray};
use super::errors::type_error;
use super::query::extract_boost;
use super::results::BATCH_RESULT;
use super::signals::Signals;
use crate::batch::{self, Extra, Output};
use crate::fusion::{params, Fusion, Hasher, Plan};
use crate::memory::Buffer;
use crate::pool;

/// `lists`: 2-D id arrays with the same number of rows.
fn id_arrays<'py>(lists: &Bound<'py, PyAny>, name: &str) -> PyResult<Vec<IdArray<'py>>> {
    let outer = as_tuple(lists, name)?;
    let mut arrays: Vec<IdArray<'py>> = Vec::with_capacity(outer.len());
    for (i, item) in outer.iter().enumerate() {
        let a = id_array(&item, &format!("{name}[{i}]"))?;
        if let Some(first) = arrays.first() {
            batch::check_rows(name, i, a.rows, first.rows)?;
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
            return Err(type_error(
                "boost",
                format!("boost's keys must be ids (ints), got {}", describe(&key)),
            ));
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
    plan: Plan,
    boost: Option<&HashMap<i64, f64, Hasher>>,
    trace: bool,
    n_threads: usize,
    with_normalized: bool,
) -> PyResult<Bound<'py, PyAny>> {
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
    let fused = fused?;

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
        let (mut ids_rw, mut scores_rw) = (writable(&ids)?, writable(&scores)?);
        let mut counts_rw = writable(&counts)?;
        let mut ranks_rw = ranks.as_ref().map(writable).transpose()?;
        let mut contributions_rw = contributions.as_ref().map(writable).transpose()?;
        let mut normalized_rw = normalized.as_ref().map(writable).transpose()?;
        let out = Output {
            ids: data(&mut ids_rw)?,
            scores: data(&mut scores_rw)?,
            counts: data(&mut counts_rw)?,
            ranks: ranks_rw.as_mut().map(data).transpose()?,
            contributions: contributions_rw.as_mut().map(data).transpose()?,
            normalized: normalized_rw.as_mut().map(data).transpose()?,
        };
        let written = py.detach(|| fused.write(out, &cancel));
        if written.is_err() {
            pool::free_later(fused); // as the copies above
        } else {
            drop(fused);
        }
        signals.raise()?;
        written?;
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

/// A writable borrow of a new output array.
fn writable<'py, T: Element, D: Dimension>(
    array: &Bound<'py, PyArray<T, D>>,
) -> PyResult<PyReadwriteArray<'py, T, D>> {
    array.try_readwrite().map_err(unexpected)
}

/// The data of a writable borrow (a new array: C-contiguous).
fn data<'a, T: Element, D: Dimension>(
    array: &'a mut PyReadwriteArray<'_, T, D>,
) -> PyResult<&'a mut [T]> {
    array.as_slice_mut().map_err(unexpected)
}

/// A batch fused by `fusion`: `ids` (named `name`: "ids", or rrf_batch's "lists") per list a
/// 2-D id array, `scores` None or per list None or a real array of the same shape, `pad`,
/// `boost` (ids -> values), `threads`; checked in that order, with the plan of the number of
/// lists after the ids and whether every list the method reads has scores after the scores.
/// The `BatchResult` holds `normalized` (with traces) when `with_normalized` (fuse_batch's).
#[allow(clippy::too_many_arguments)]
pub fn batch<'py>(
    py: Python<'py>,
    fusion: &Fusion,
    ids: &Bound<'py, PyAny>,
    name: &str,
    scores: Option<&Bound<'py, PyAny>>,
    pad: Arg<'py>,
    boost: Option<&Bound<'py, PyAny>>,
    threads: Option<&Bound<'py, PyAny>>,
    with_normalized: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let arrays = id_arrays(ids, name)?;
    let n = arrays.len();
    let plan = fusion.plan(n)?;
    let mut score_data: Vec<Option<Buffer<f64>>> = (0..n).map(|_| None).collect();
    if let Some(s) = scores.filter(|s| !s.is_none()) {
        let s = as_tuple(s, "scores")?;
        params::scores_len(s.len(), n)?;
        for (i, item) in s.iter().enumerate() {
            if item.is_none() {
                continue;
            }
            let (data, shape) = float_matrix(&item, &format!("scores[{i}]"))?;
            batch::check_scores_shape(name, i, shape, (arrays[i].rows, arrays[i].cols))?;
            score_data[i] = Some(data);
        }
    }
    plan.check_scores_given(|i| score_data[i].is_some())?;
    let pad = pad.or(batch::PAD, |v| Ok(int64(v, "pad")?))?;
    let boost = extract_boost(boost, fusion)?
        .map(|b| boost_ids(&b))
        .transpose()?;
    let n_threads = thread_count(threads.cloned())?;
    fuse_rows(
        py,
        arrays,
        score_data,
        pad,
        plan,
        boost.as_ref(),
        fusion.trace,
        n_threads,
        with_normalized,
    )
}

/// For benchmarks: `crate::batch::bare_loop` on `lists` (copied before; nothing is built for
/// Python), with the GIL released. Returns the seconds of each of the `repeat` runs, so that
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
    let arrays = id_arrays(lists, "lists")?;
    let n_threads = thread_count(threads)?;
    let matrices = arrays
        .iter()
        .map(IdArray::matrix)
        .collect::<PyResult<Vec<_>>>()?;
    Ok(py.detach(|| batch::bare_loop(&matrices, n_threads, repeat))?)
}
