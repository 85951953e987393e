//! Core errors -> Python exceptions, in one place.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyTuple, PyType};

use crate::error::{Error, Kind};
use crate::trec::{repr_approx, TrecError};
use crate::trec_fuse::FuseError;

/// An error of a binding function: a core error, or a Python exception raised while extracting
/// arguments or hashing/comparing keys (those propagate unchanged).
pub enum BindError {
    Core(Error),
    Py(PyErr),
}

impl From<Error> for BindError {
    fn from(e: Error) -> Self {
        BindError::Core(e)
    }
}

impl From<PyErr> for BindError {
    fn from(e: PyErr) -> Self {
        BindError::Py(e)
    }
}

fn exception(kind: Kind, message: String) -> PyErr {
    match kind {
        Kind::Type => PyTypeError::new_err(message),
        Kind::Value => PyValueError::new_err(message),
    }
}

impl From<Error> for PyErr {
    fn from(e: Error) -> PyErr {
        exception(e.kind(), e.to_string())
    }
}

/// Converts `err`, rendering a key named by an error as the `repr` of the key object in `lists`.
pub fn to_pyerr(err: BindError, lists: &[Bound<'_, PyTuple>]) -> PyErr {
    match err {
        BindError::Py(e) => e,
        BindError::Core(e) => {
            let key = e
                .location()
                .map(|(list_index, position)| {
                    lists
                        .get(list_index)
                        .and_then(|t| t.get_item(position).ok())
                        .and_then(|k| k.repr().ok())
                        .map(|r| r.to_string())
                        .unwrap_or_else(|| format!("lists[{list_index}][{position}]"))
                })
                .unwrap_or_default();
            exception(e.kind(), e.message_with_key(&key))
        }
    }
}

impl From<crate::batch::BatchError> for PyErr {
    fn from(e: crate::batch::BatchError) -> PyErr {
        exception(e.error().kind(), e.message())
    }
}

/// A malformed TREC file -> `rankfusion.trec.TrecFormatError(path, line, reason)`, each text
/// quoted by the reason rendered by Python's `repr` of the text as the reader decodes it.
pub fn trec_error(py: Python<'_>, path: &Bound<'_, PyAny>, err: &TrecError) -> PyErr {
    let reason = err.reason.render(&mut |bytes| {
        super::trec::text(py, bytes)
            .and_then(|s| s.repr())
            .map(|r| r.to_string())
            .unwrap_or_else(|_| repr_approx(bytes))
    });
    static CLASS: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    match CLASS
        .import(py, "rankfusion.trec", "TrecFormatError")
        .and_then(|c| c.call1((path, err.line, reason)))
    {
        Ok(e) => PyErr::from_value(e),
        Err(e) => e,
    }
}

/// A fusion of run files that failed -> the exception `rankfusion.trec.fuse` raises for it: the
/// core error's kind and message, the key rendered by Python's `repr`, prefixed with the query.
pub fn fuse_error(py: Python<'_>, err: &FuseError) -> PyErr {
    let repr = |bytes: &[u8]| {
        super::trec::text(py, bytes)
            .and_then(|s| s.repr())
            .map(|r| r.to_string())
            .unwrap_or_else(|_| repr_approx(bytes))
    };
    match err {
        FuseError::Fusion { qid, key, error } => {
            let key = key.as_deref().map(repr).unwrap_or_default();
            let message = format!("query {}: {}", repr(qid), error.message_with_key(&key));
            exception(error.kind(), message)
        }
        FuseError::Format { value } => {
            PyValueError::new_err(format!("cannot write the fused score {value:?}"))
        }
    }
}
