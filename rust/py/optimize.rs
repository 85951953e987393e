//! `_Trace`: a traced fusion of a batch of queries, held in Rust, from which `combine` scores
//! many settings of the method (the grid search of `rankfusion.optimize`; `crate::optimize`).
//!
//! The arrays are copied in once (so no other Python thread can write what the core reads with
//! the GIL released); each `combine` builds the settings' plans with the GIL held, scores them
//! with it released, and hands the kept hits back as new arrays.

use numpy::{
    IntoPyArray, PyArrayDescrMethods, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use super::args::integer;
use super::arrays::{contiguous, numpy, slice, thread_count};
use super::errors::of_setting;
use super::fusion::fusion_arg;
use crate::optimize::{self, Trace};

/// `value` as an array of `ndim` dimensions whose dtype kind is one of `kinds`, copied as a
/// C-contiguous `dtype` array; and its shape.
fn copied<T: numpy::Element + Copy>(
    value: &Bound<'_, PyAny>,
    name: &str,
    ndim: usize,
    kinds: &[u8],
    dtype: &str,
) -> PyResult<(Vec<T>, Vec<usize>)> {
    let py = value.py();
    let array = numpy(py)?
        .call_method1("asarray", (value,))?
        .cast_into::<PyUntypedArray>()?;
    if !kinds.contains(&array.dtype().kind()) {
        return Err(PyTypeError::new_err(format!(
            "{name} must be an array of {dtype}, got dtype {}",
            array.dtype().str()?
        )));
    }
    if array.ndim() != ndim {
        return Err(PyValueError::new_err(format!(
            "{name} must be a {ndim}-D array, got shape {}",
            crate::format::shape(array.shape())
        )));
    }
    let data = slice(&contiguous::<T>(&array)?)?.to_vec();
    Ok((data, array.shape().to_vec()))
}

/// A traced fusion of Q queries: `fuse_batch(..., trace=True)` with weight 1 for every list (so
/// that every list is read), given as its `ids` (Q, W), `counts` (Q,), `ranks` (Q, W, L) and,
/// for score-based methods, `normalized` (Q, W, L). See `combine`.
#[pyclass(frozen, module = "rankfusion._core", name = "_Trace")]
pub struct PyTrace {
    trace: Trace,
}

#[pymethods]
impl PyTrace {
    #[new]
    #[pyo3(signature = (ids, counts, ranks, normalized=None))]
    fn new(
        ids: &Bound<'_, PyAny>,
        counts: &Bound<'_, PyAny>,
        ranks: &Bound<'_, PyAny>,
        normalized: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let (ids, shape) = copied::<i64>(ids, "ids", 2, b"iu", "int64")?;
        let (counts, _) = copied::<i64>(counts, "counts", 1, b"iu", "int64")?;
        let (ranks, ranks_shape) = copied::<i32>(ranks, "ranks", 3, b"iu", "int32")?;
        let values = normalized
            .map(|v| copied::<f64>(v, "normalized", 3, b"f", "float64"))
            .transpose()?;
        let values_shape = values.as_ref().map(|(_, s)| s.as_slice());
        let shape = optimize::trace_shape(&shape, &ranks_shape, values_shape)
            .map_err(PyValueError::new_err)?;
        let trace = Trace::new(shape, ids, &counts, ranks, values.map(|(v, _)| v))?;
        Ok(PyTrace { trace })
    }

    /// Scores S settings (each a `Fusion`, or its settings as a dict) of the traced method from
    /// the trace, with the GIL released, on up to `threads` threads. Each row is cut at `cutoff`
    /// when given (its hits whose score as a C float is at least its cutoff-th's). Returns
    /// `(counts, ids, scores)`: counts (S, Q) int64, then the kept hits' ids and scores (int64,
    /// float64), setting after setting and row after row, each row in fuse's order. Errors: a
    /// setting that the checker refuses (FusionError / FusionTypeError), that is not scored
    /// from a trace (a method, norm or argument that needs the whole fusion), or that cannot be
    /// fused (FusionError at its row); the exception's `setting_index` attribute is its index.
    #[pyo3(signature = (settings, *, cutoff=None, threads=None))]
    fn combine<'py>(
        &self,
        py: Python<'py>,
        settings: &Bound<'py, PyAny>,
        cutoff: Option<&Bound<'py, PyAny>>,
        threads: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let (rows, lists) = (self.trace.rows(), self.trace.lists());
        let settings = super::args::as_tuple(settings, "settings")?;
        let n = settings.len();
        let cutoff = cutoff.map(|c| integer(c, "cutoff", 1)).transpose()?;
        let n_threads = thread_count(threads)?;
        let mut plans = Vec::with_capacity(n);
        for (s, setting) in settings.iter().enumerate() {
            let plan = fusion_arg(&setting).and_then(|f| Ok(f.plan(lists)?));
            plans.push(plan.map_err(|e| of_setting(py, s, e))?);
        }
        let combined = py.detach(|| optimize::combine(&self.trace, &plans, cutoff, n_threads))?;
        let counts = combined.counts.into_pyarray(py).reshape([n, rows])?;
        PyTuple::new(
            py,
            [
                counts.into_any(),
                combined.ids.into_pyarray(py).into_any(),
                combined.scores.into_pyarray(py).into_any(),
            ],
        )
    }
}
