//! Parts of CPython's objects read in place, which the stable ABI (abi3) reads only through a
//! call per object: a tuple's items, a list's item array, a float's value, a str's cached hash.
//! Where each lies is read from its type (`__basicsize__`) and checked on probe objects once, at
//! import ([`init`]); a part whose check fails (a CPython laid out otherwise) is read through the
//! C API instead. Only the tuple's is required: the result types are tuples (`super::results`).

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use pyo3::exceptions::PyImportError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyList, PyString, PyTuple};
use pyo3::{ffi, PyTypeInfo};

/// Byte offsets in the objects; 0 for a part read through the C API (no part is at offset 0).
static TUPLE_ITEMS: AtomicUsize = AtomicUsize::new(0);
static LIST_ITEMS: AtomicUsize = AtomicUsize::new(0);
static FLOAT_VALUE: AtomicUsize = AtomicUsize::new(0);
static STR_HASH: AtomicUsize = AtomicUsize::new(0);

const WORD: usize = std::mem::size_of::<usize>();

/// Finds and checks the offsets (called when the module is imported, before anything else).
pub fn init(py: Python<'_>) -> PyResult<()> {
    let basicsize = |ty: Bound<'_, pyo3::types::PyType>| -> PyResult<usize> {
        ty.getattr("__basicsize__")?.extract()
    };
    let probe = [
        py.None().into_bound(py),
        PyBool::new(py, true).to_owned().into_any(),
    ];
    let probe_ptrs = probe.each_ref().map(|o| o.as_ptr());
    // A tuple's items follow its header (`tuple.__basicsize__`: 24 bytes on 64-bit CPython up
    // to 3.13; 3.14 adds a field before them).
    let tuple = PyTuple::new(py, &probe)?;
    let offset = basicsize(PyTuple::type_object(py))?;
    // SAFETY: a live tuple of two items; `offset` is inside its allocation when the layout is
    // the expected one (checked on the pointers read, which are compared, never followed).
    let read = unsafe { *at::<[*mut ffi::PyObject; 2]>(tuple.as_ptr(), offset) };
    if read != probe_ptrs {
        return Err(PyImportError::new_err(
            "rankfusion: this Python's tuples are not laid out as CPython's",
        ));
    }
    TUPLE_ITEMS.store(offset, Relaxed);

    // A list's header, then its item array and its allocated size (`PyListObject`).
    let list = PyList::new(py, &probe)?;
    let offset = basicsize(PyList::type_object(py))?.saturating_sub(2 * WORD);
    // SAFETY: as above: a pointer read inside the list's header, then followed only when it
    // is not NULL (a list of two items has its array there on CPython), its two items compared.
    let array = unsafe { *at::<*mut [*mut ffi::PyObject; 2]>(list.as_ptr(), offset) };
    if offset >= 2 * WORD && !array.is_null() && unsafe { *array } == probe_ptrs {
        LIST_ITEMS.store(offset, Relaxed);
    }

    // A float's value is its last field (`PyFloatObject`).
    let probe = 0.1 + 2.0_f64.powi(-40);
    let float = PyFloat::new(py, probe);
    let offset = basicsize(PyFloat::type_object(py))?.saturating_sub(8);
    // SAFETY: a live float; 8 bytes before the end of its fixed size, read as bits and compared.
    if offset >= 2 * WORD && unsafe { *at::<u64>(float.as_ptr(), offset) } == probe.to_bits() {
        FLOAT_VALUE.store(offset, Relaxed);
    }

    // A str's hash follows its header and its length (`PyASCIIObject`), -1 until computed.
    let offset = 3 * WORD;
    let fresh = PyString::new(py, "rankfusion's probe"); // (a new str: no hash computed yet)
                                                         // SAFETY: a live str, larger than its header and length and hash; read, compared.
    let unset = unsafe { *at::<isize>(fresh.as_ptr(), offset) };
    let hash = fresh.hash()?;
    let set = unsafe { *at::<isize>(fresh.as_ptr(), offset) };
    if unset == -1 && set == hash && hash != -1 {
        STR_HASH.store(offset, Relaxed);
    }
    Ok(())
}

/// `offset` bytes into `obj`, as a `T`.
///
/// # Safety
/// A `T` must lie there, inside the object.
#[inline(always)]
unsafe fn at<T>(obj: *mut ffi::PyObject, offset: usize) -> *mut T {
    obj.cast::<u8>().add(offset).cast()
}

/// The items of a tuple, or of a record (whose items run on past the tuple's).
///
/// # Safety
/// `tuple` must be a live tuple (or a record), and [`init`] must have run.
#[inline(always)]
pub unsafe fn tuple_items(tuple: *mut ffi::PyObject) -> *mut *mut ffi::PyObject {
    at(tuple, TUPLE_ITEMS.load(Relaxed))
}

/// The items of an exact list, read in place (None when lists are read through the C API).
///
/// # Safety
/// The list may change whenever Python code runs (a finalizer run by an allocation included),
/// leaving the slice dangling: the caller reads it only while nothing of Python's runs and no
/// Python object is made.
#[inline(always)]
pub unsafe fn list_items<'a, 'py>(list: &'a Bound<'py, PyList>) -> Option<&'a [Bound<'py, PyAny>]> {
    let offset = LIST_ITEMS.load(Relaxed);
    if offset == 0 {
        return None;
    }
    let array = *at::<*const Bound<'py, PyAny>>(list.as_ptr(), offset);
    let n = list.len();
    // (An empty list may have no array.)
    Some(if n == 0 {
        &[]
    } else {
        std::slice::from_raw_parts(array, n)
    })
}

/// The value of a float (of an exact float or a subclass's).
#[inline(always)]
pub fn float_value(float: &Bound<'_, PyFloat>) -> f64 {
    let offset = FLOAT_VALUE.load(Relaxed);
    if offset == 0 {
        return float.value();
    }
    // SAFETY: a live float, whose value lies at `offset` (checked at import).
    unsafe { *at::<f64>(float.as_ptr(), offset) }
}

/// The hash of an exact str, when it has been computed and kept (as it is for most keys: a str
/// computes its hash once); None otherwise.
#[inline(always)]
pub fn str_hash(key: &Bound<'_, PyAny>) -> Option<isize> {
    let offset = STR_HASH.load(Relaxed);
    if offset == 0 || !key.is_exact_instance_of::<PyString>() {
        return None;
    }
    // SAFETY: a live exact str, whose hash lies at `offset` (checked at import).
    let hash = unsafe { *at::<isize>(key.as_ptr(), offset) };
    (hash != -1).then_some(hash)
}
