//! Core errors -> Python exceptions, in one place.
//!
//! Every core [`Error`] becomes a `ValueError` worded as the reference words it — its place as a
//! prefix (`row 3: `, `queries[2]: `, `query '7': `), the key it is about rendered as Python
//! renders it — except a malformed run or qrels file, which becomes a `TrecFormatError(path,
//! line, reason)`: a `ValueError` subclass created here, with the module, and re-exported by
//! `rankfusion.trec`.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString, PyTuple, PyType};
use pyo3::{ffi, PyTypeInfo};

use crate::error::{At, Error, Key, KeyRef, Problem};
use crate::format::repr_approx;

/// `bytes` as the TREC readers decode them: UTF-8, each undecodable byte a lone surrogate
/// (`surrogateescape`).
pub fn text<'py>(py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyString>> {
    // SAFETY: a valid buffer and a NUL-terminated error handler name; a new reference or NULL
    // with an exception set.
    unsafe {
        let s = ffi::PyUnicode_DecodeUTF8(
            bytes.as_ptr().cast(),
            bytes.len() as ffi::Py_ssize_t,
            c"surrogateescape".as_ptr(),
        );
        Ok(Bound::from_owned_ptr_or_err(py, s)?.cast_into_unchecked())
    }
}

/// Python's `repr` of the decoded text.
fn text_repr(py: Python<'_>, bytes: &[u8]) -> String {
    text(py, bytes)
        .and_then(|s| s.repr())
        .map(|r| r.to_string())
        .unwrap_or_else(|_| repr_approx(bytes))
}

/// A key the core looked up itself: an int's digits, a doc id's `repr`.
fn core_key(py: Python<'_>, key: &KeyRef) -> String {
    match &key.key {
        Some(Key::Int(v)) => v.to_string(),
        Some(Key::Bytes(b)) => text_repr(py, b),
        None => format!("lists[{}][{}]", key.list, key.position),
    }
}

/// The exception for `e`, whose keys (when not looked up by the core) are the items of `lists`.
pub fn fusion_error(py: Python<'_>, e: Error, lists: &[Bound<'_, PyTuple>]) -> PyErr {
    let mut key = |k: &KeyRef| match &k.key {
        Some(_) => core_key(py, k),
        None => lists
            .get(k.list)
            .and_then(|t| t.get_item(k.position).ok())
            .and_then(|item| item.repr().ok())
            .map(|r| r.to_string())
            .unwrap_or_else(|| core_key(py, k)),
    };
    exception(py, &e, &mut key, None)
}

/// The exception for `e`; a malformed file is reported as the file `path`.
pub fn core_error(py: Python<'_>, e: Error, path: Option<&Bound<'_, PyAny>>) -> PyErr {
    exception(py, &e, &mut |k| core_key(py, k), path)
}

fn exception(
    py: Python<'_>,
    e: &Error,
    key: &mut dyn FnMut(&KeyRef) -> String,
    path: Option<&Bound<'_, PyAny>>,
) -> PyErr {
    if e.problem == Problem::Interrupted {
        return super::signals::interrupted();
    }
    let mut render = |b: &[u8]| text_repr(py, b);
    let message = e.message(key, &mut render);
    if let Problem::Malformed(_) = e.problem {
        let line = match e.at {
            At::Line(line) => line,
            _ => None,
        };
        let path = path.map_or_else(|| PyString::new(py, "<file>").into_any(), Bound::clone);
        return match trec_format_error(py).and_then(|class| class.call1((path, line, message))) {
            Ok(instance) => PyErr::from_value(instance),
            Err(err) => err,
        };
    }
    PyValueError::new_err(format!("{}{message}", e.prefix(&mut render)))
}

impl From<Error> for PyErr {
    /// For errors that name no key object (argument checks): the message as the core words it.
    fn from(e: Error) -> PyErr {
        Python::attach(|py| core_error(py, e, None))
    }
}

/// A run or qrels file that cannot be read, naming the file and, where it applies, the line.
const TREC_FORMAT_ERROR: &std::ffi::CStr = cr#"
class TrecFormatError(ValueError):
    """A run or qrels file that cannot be read: names the file and, where it applies, the line.

    Attributes: ``path`` (the file as given), ``line`` (1-based line number, or None when the
    problem is the file as a whole, e.g. it is empty or its gzip data are corrupt) and ``reason``.
    """

    __module__ = "rankfusion.trec"

    def __init__(self, path, line, reason):
        self.path = os.fspath(path) if isinstance(path, (str, os.PathLike)) else str(path)
        self.line = line
        self.reason = reason
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{where}: {reason}")

    def __reduce__(self):
        return (type(self), (self.path, self.line, self.reason))
"#;

/// The class `TrecFormatError` (made once).
pub fn trec_format_error(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    static CLASS: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    CLASS
        .get_or_try_init(py, || {
            let namespace = PyDict::new(py);
            namespace.set_item("os", py.import("os")?)?;
            namespace.set_item("ValueError", PyValueError::type_object(py))?;
            namespace.set_item("__name__", "rankfusion.trec")?;
            py.run(TREC_FORMAT_ERROR, Some(&namespace), None)?;
            Ok::<_, PyErr>(
                namespace
                    .get_item("TrecFormatError")?
                    .ok_or_else(|| PyValueError::new_err("TrecFormatError was not defined"))?
                    .cast_into::<PyType>()?
                    .unbind(),
            )
        })
        .map(|c| c.bind(py))
}
