//! numpy arrays in and out: 2-D matrices checked as the reference checks them, copied (or
//! converted) into memory no other Python thread can write while the core reads it, and new
//! output arrays.

use numpy::{
    PyArray2, PyArrayDescrMethods, PyArrayDyn, PyArrayMethods, PyReadonlyArray2,
    PyReadonlyArrayDyn, PyUntypedArray, PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyTuple, PyType};

use super::args::{imported, integer};
use super::errors::{type_error, value_error};
use crate::batch::{self, IdMatrix};
use crate::memory::Buffer;
use crate::pool;

pub fn numpy(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    static NUMPY: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
    NUMPY
        .get_or_try_init(py, || py.import("numpy").map(Bound::unbind))
        .map(|m| m.bind(py))
}

/// A masked array's mask would be ignored (its hidden entries read as data): a TypeError, as
/// the reference's `_not_masked`. No masked array exists before `numpy.ma` is imported, so a
/// call never imports it (an import of tens of millions of instructions on a first call).
fn not_masked(value: &Bound<'_, PyAny>, name: &str) -> PyResult<()> {
    let py = value.py();
    static MASKED_ARRAY: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    let masked = match MASKED_ARRAY.get(py) {
        Some(masked) => masked,
        None => {
            let Some(core) = imported(py, "numpy.ma.core")? else {
                return Ok(());
            };
            // (Absent while the module is still being imported: then no instance exists yet.)
            let Ok(masked) = core.getattr(intern!(py, "MaskedArray")) else {
                return Ok(());
            };
            let masked = masked.cast_into::<PyType>()?.unbind();
            MASKED_ARRAY.get_or_init(py, || masked)
        }
    };
    if value.is_instance(masked.bind(py))? {
        return Err(type_error(
            name,
            format!(
                "{name} is a masked array; its mask would be ignored: pass a plain array \
                 (e.g. ids.filled(pad), scores.filled(nan))"
            ),
        ));
    }
    Ok(())
}

/// A 2-D array whose dtype kind is accepted (checked before the shape), like the reference's
/// `_matrix`; and its (rows, columns).
pub fn matrix<'py>(
    value: &Bound<'py, PyAny>,
    name: &str,
    kinds: &[u8],
    what: &str,
) -> PyResult<(Bound<'py, PyUntypedArray>, (usize, usize))> {
    let accepts = |kind, _| kinds.contains(&kind);
    read_matrix(value, name, true, "must be a 2-D array", what, accepts)
}

/// A 2-D array whose dtype (kind, item size) `accepts`, checked before the shape: an ndarray as
/// it is unless `convert`, any other value through `numpy.asarray` (its ValueError is ours:
/// `{name} {not_array}: ...`); a dtype refused is a TypeError `{name} must be {what}, ...`,
/// a shape `batch::check_matrix` refuses its error. The array and its (rows, columns).
fn read_matrix<'py>(
    value: &Bound<'py, PyAny>,
    name: &str,
    convert: bool,
    not_array: &str,
    what: &str,
    accepts: impl Fn(u8, usize) -> bool,
) -> PyResult<(Bound<'py, PyUntypedArray>, (usize, usize))> {
    let py = value.py();
    not_masked(value, name)?;
    let array = match value.cast::<PyUntypedArray>() {
        Ok(a) if !convert => a.clone(),
        _ => match numpy(py)?.call_method1(intern!(py, "asarray"), (value,)) {
            Ok(a) => a.cast_into::<PyUntypedArray>()?,
            Err(e) if e.is_instance_of::<PyValueError>(py) => {
                let message = format!("{name} {not_array}: {}", e.value(py));
                return Err(value_error(name, message));
            }
            Err(e) => return Err(e),
        },
    };
    let dtype = array.dtype();
    if !accepts(dtype.kind(), dtype.itemsize()) {
        let message = format!("{name} must be {what}, got dtype {}", dtype.str()?);
        return Err(type_error(name, message));
    }
    let shape = batch::check_matrix(name, array.shape())?;
    Ok((array, shape))
}

/// `array` as a C-contiguous, aligned array of `T` (itself when it already is one), borrowed.
pub fn contiguous<'py, T: numpy::Element>(
    array: &Bound<'py, PyUntypedArray>,
) -> PyResult<PyReadonlyArrayDyn<'py, T>> {
    let py = array.py();
    let dtype = numpy::dtype::<T>(py);
    let converted = numpy(py)?
        .call_method1(intern!(py, "ascontiguousarray"), (array, dtype))?
        .cast_into::<PyUntypedArray>()?;
    if converted.is_aligned() {
        return borrow(&converted);
    }
    // A view of a buffer at an odd address, which `ascontiguousarray` keeps: a copy is aligned.
    borrow(&converted.call_method0(intern!(py, "copy"))?.cast_into()?)
}

/// A read-only borrow of an array of `T`.
pub fn borrow<'py, T: numpy::Element>(
    array: &Bound<'py, PyUntypedArray>,
) -> PyResult<PyReadonlyArrayDyn<'py, T>> {
    array
        .cast::<PyArrayDyn<T>>()?
        .try_readonly()
        .map_err(unexpected)
}

/// The data of a C-contiguous borrow.
pub fn slice<'a, T: numpy::Element>(array: &'a PyReadonlyArrayDyn<'_, T>) -> PyResult<&'a [T]> {
    array.as_slice().map_err(unexpected)
}

/// numpy's refusal of a borrow or a slice that cannot happen here (a new array, or one checked
/// C-contiguous): a RuntimeError.
pub fn unexpected(e: impl std::fmt::Display) -> PyErr {
    PyRuntimeError::new_err(e.to_string())
}

/// The ids of one list, readable with the GIL released and by no one else writable.
enum Ids<'py> {
    /// A copy of the caller's int64 array.
    Copied(Buffer<i64>),
    /// A new int64 array made by numpy from the caller's (other dtype or layout).
    Converted(PyReadonlyArray2<'py, i64>),
}

pub struct IdArray<'py> {
    ids: Ids<'py>,
    pub rows: usize,
    pub cols: usize,
}

impl IdArray<'_> {
    pub fn matrix(&self) -> PyResult<IdMatrix<'_>> {
        let data = match &self.ids {
            Ids::Copied(v) => v.as_slice(),
            Ids::Converted(a) => a.as_slice().map_err(unexpected)?,
        };
        IdMatrix::new(data, self.rows, self.cols)
            .ok_or_else(|| PyRuntimeError::new_err("an id array does not match its shape"))
    }

    /// Drops the array, a copy on another thread (see `crate::pool::free_later`).
    pub fn free_later(self) {
        if let Ids::Copied(copy) = self.ids {
            crate::pool::free_later(copy);
        }
    }
}

/// A copy of `ids`, in a buffer kept from an earlier call or else marked for huge pages (see
/// `crate::memory`): fresh memory costs a page fault per 4 KiB page otherwise, a sizeable part
/// of the copy. Signals are checked between pieces of it (a huge array takes a while to copy,
/// with the GIL held).
fn copy_ids(py: Python<'_>, ids: &[i64]) -> PyResult<Buffer<i64>> {
    const PIECE: usize = 1 << 20;
    let mut copy = Buffer::with_capacity(ids.len());
    for piece in ids.chunks(PIECE) {
        if piece.len() == PIECE {
            py.check_signals()?;
        }
        copy.extend_from_slice(piece);
    }
    Ok(copy)
}

/// A 2-D integer array whose dtype widens to int64 without loss (int8..int64, uint8..uint32),
/// like the reference's `_id_matrix`: not an ndarray -> `numpy.asarray`; a wrong dtype is a
/// TypeError, a wrong number of dimensions a ValueError.
pub fn id_array<'py>(value: &Bound<'py, PyAny>, name: &str) -> PyResult<IdArray<'py>> {
    let py = value.py();
    let not_array = "is not a 2-D integer array";
    let what = "an integer array that widens to int64";
    let widens =
        |kind, size| matches!(kind, b'i' | b'u') && batch::widens_to_i64(kind == b'i', size);
    let (array, (rows, cols)) = read_matrix(value, name, false, not_array, what, widens)?;
    let dtype = array.dtype();
    let native = dtype.is_equiv_to(&numpy::dtype::<i64>(py));
    if native && array.is_c_contiguous() && array.is_aligned() {
        let typed = array.cast::<PyArray2<i64>>()?;
        let ro = typed.try_readonly().map_err(unexpected)?;
        let copy = copy_ids(py, ro.as_slice().map_err(unexpected)?)?;
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
    let ro = converted.try_readonly().map_err(unexpected)?;
    Ok(IdArray {
        ids: Ids::Converted(ro),
        rows,
        cols,
    })
}

pub fn thread_count(threads: Option<Bound<'_, PyAny>>) -> PyResult<usize> {
    let threads = threads.map(|t| integer(&t, "threads", 1)).transpose()?;
    Ok(pool::resolve_threads(threads))
}

/// A new numpy array of `shape` (`numpy.empty` or `numpy.zeros`), so that an impossible size is
/// numpy's own MemoryError.
pub fn new_array<'py>(
    py: Python<'py>,
    how: &str,
    shape: &[usize],
    dtype: &str,
) -> PyResult<Bound<'py, PyAny>> {
    numpy(py)?.call_method1(how, (PyTuple::new(py, shape)?, dtype))
}

/// A 2-D real array (any integer or float dtype) as a float64 copy, and its shape, like the
/// reference's `_matrix(..., "iuf", ...)` then `astype(float64)`.
pub fn float_matrix(
    value: &Bound<'_, PyAny>,
    name: &str,
) -> PyResult<(Buffer<f64>, (usize, usize))> {
    let (array, shape) = matrix(value, name, b"iuf", "a real array (integer or float dtype)")?;
    let source = contiguous::<f64>(&array)?;
    let source = slice(&source)?;
    // A kept buffer or huge pages, as for the ids (`copy_ids`).
    let mut data = Buffer::with_capacity(source.len());
    data.extend_from_slice(source);
    Ok((data, shape))
}
