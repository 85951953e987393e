//! Errors -> Python exceptions, in one place.
//!
//! Every bad input the package reports is an instance of `rankfusion.errors`' classes, with its
//! fields as attributes: `FusionError` (a `ValueError`), `FusionTypeError` (a `TypeError`) and,
//! for a malformed run or qrels file, `TrecFormatError(path, line, reason)`. A core [`Error`]
//! becomes one by [`exception`] (its place and key as fields, the key rendered by Python's
//! `repr`); the binding's own conversion errors are made by [`type_error`] and [`value_error`].
//! `Problem::Interrupted` becomes `KeyboardInterrupt`. An exception about one of many settings
//! (`_Trace.combine`) carries the setting's index as `setting_index` ([`of_setting`]).

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString, PyTuple, PyType};
use pyo3::{ffi, intern};

use crate::error::{At, Error, Key, Problem};
use crate::optimize::SettingError;

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

/// The classes of `rankfusion.errors`: (FusionError, FusionTypeError, TrecFormatError).
fn classes(py: Python<'_>) -> PyResult<&(Py<PyType>, Py<PyType>, Py<PyType>)> {
    static CLASSES: PyOnceLock<(Py<PyType>, Py<PyType>, Py<PyType>)> = PyOnceLock::new();
    CLASSES.get_or_try_init(py, || {
        let module = py.import("rankfusion.errors")?;
        let class = |name: &str| -> PyResult<Py<PyType>> {
            Ok(module.getattr(name)?.cast_into::<PyType>()?.unbind())
        };
        Ok((
            class("FusionError")?,
            class("FusionTypeError")?,
            class("TrecFormatError")?,
        ))
    })
}

/// Our exception of class `type_error` or not, about `argument` (`list`, `rank`), at `at`.
#[allow(clippy::too_many_arguments)]
fn ours(
    py: Python<'_>,
    type_error: bool,
    reason: &str,
    argument: Option<&str>,
    at: &At,
    list: Option<usize>,
    rank: Option<usize>,
    key: Option<Bound<'_, PyAny>>,
) -> PyErr {
    let made = (|| {
        let (value, types, _) = classes(py)?;
        let class = if type_error { types } else { value };
        let (row, query, qid) = match at {
            At::Row(q) => (Some(*q), None, None),
            At::Query(q) => (None, Some(*q), None),
            At::Qid(qid) => (None, None, Some(text(py, qid)?.into_any().unbind())),
            At::Call | At::Line(_) => (None, None, None),
        };
        let args = (
            reason.to_owned(),
            argument.map(str::to_owned),
            row,
            query,
            qid,
            list,
            rank,
        );
        match key {
            // A lazy exception: made only if it is looked at (most are, but not all).
            None => Ok(PyErr::from_type(class.bind(py).clone(), args)),
            Some(key) => {
                let kwargs = PyDict::new(py);
                kwargs.set_item(intern!(py, "key"), key)?;
                Ok(PyErr::from_value(class.bind(py).call(args, Some(&kwargs))?))
            }
        }
    })();
    made.unwrap_or_else(|e| e)
}

/// Our `TypeError` about the argument written `name` (`weights[2]`: [`Error::named`]).
pub fn type_error(name: &str, reason: impl Into<String>) -> PyErr {
    Error::named(name, true, reason).into()
}

/// Our `ValueError` about the argument written `name` (`weights[2]`: [`Error::named`]).
pub fn value_error(name: &str, reason: impl Into<String>) -> PyErr {
    Error::named(name, false, reason).into()
}

/// A conversion of a caller's value that failed: our error, or an exception the value itself
/// raised (an iterator's, a `__float__`'s), kept as it was.
pub enum Bad {
    Ours(Error),
    Raised(PyErr),
}

impl From<Error> for Bad {
    fn from(e: Error) -> Self {
        Bad::Ours(e)
    }
}

impl From<PyErr> for Bad {
    fn from(e: PyErr) -> Self {
        Bad::Raised(e)
    }
}

impl From<Bad> for PyErr {
    fn from(bad: Bad) -> PyErr {
        match bad {
            Bad::Ours(e) => e.into(),
            Bad::Raised(e) => e,
        }
    }
}

/// Whether `e` is one of our exceptions (as opposed to one raised by the caller's own
/// objects: a key's `__eq__`, an iterator).
pub fn is_ours(py: Python<'_>, e: &PyErr) -> bool {
    classes(py).is_ok_and(|(value, types, _)| {
        e.is_instance(py, value.bind(py)) || e.is_instance(py, types.bind(py))
    })
}

/// Our exception `e` at `at` (query `q` of a list of queries, ...): a new exception with the same
/// fields and that place; any other exception unchanged.
pub fn located(py: Python<'_>, e: PyErr, at: At) -> PyErr {
    if !is_ours(py, &e) {
        return e;
    }
    let placed = (|| {
        let kwargs = PyDict::new(py);
        match &at {
            At::Row(q) => kwargs.set_item("row", q)?,
            At::Query(q) => kwargs.set_item("query", q)?,
            At::Qid(qid) => kwargs.set_item("qid", text(py, qid)?)?,
            At::Call | At::Line(_) => {}
        }
        let new = e
            .value(py)
            .call_method(intern!(py, "located"), (), Some(&kwargs))?;
        Ok::<_, PyErr>(PyErr::from_value(new))
    })();
    placed.unwrap_or_else(|err| err)
}

/// The exception `e` about setting `setting` of a list of settings, with the attribute
/// `setting_index` added.
pub fn of_setting(py: Python<'_>, setting: usize, e: PyErr) -> PyErr {
    let _ = e.value(py).setattr("setting_index", setting);
    e
}

/// The key object of a key the core looked up itself (an int, a doc id).
fn core_key<'py>(py: Python<'py>, key: &Key) -> PyResult<Bound<'py, PyAny>> {
    match key {
        Key::Int(v) => Ok(v.into_pyobject(py)?.into_any()),
        Key::Bytes(b) => Ok(text(py, b)?.into_any()),
    }
}

/// The exception for `e`. A key the core has not looked up is `key_at(list, position)`, the
/// caller's key object at that place; a malformed file is reported as the file `path`.
pub fn exception<'py>(
    py: Python<'py>,
    e: Error,
    key_at: &dyn Fn(usize, usize) -> Option<Bound<'py, PyAny>>,
    path: Option<&Bound<'py, PyAny>>,
) -> PyErr {
    if e.problem == Problem::Interrupted {
        return super::signals::interrupted();
    }
    let mut render = |b: &[u8]| {
        text(py, b)
            .and_then(|s| s.repr())
            .map(|r| r.to_string())
            .unwrap_or_else(|_| crate::format::repr_approx(b))
    };
    // A key goes into the message as `{key}`, for Python to render with `repr`.
    let reason = e.message(&mut |_| "{key}".to_owned(), &mut render);
    if let Problem::Malformed(_) = e.problem {
        let line = match e.at {
            At::Line(line) => line,
            _ => None,
        };
        let path = path.map_or_else(|| PyString::new(py, "<file>").into_any(), Bound::clone);
        let made = classes(py).and_then(|(_, _, trec)| trec.bind(py).call1((path, line, reason)));
        return match made {
            Ok(instance) => PyErr::from_value(instance),
            Err(err) => err,
        };
    }
    let (list, position) = e.place();
    // A key the error is about: the core's, else the caller's object at its place, else None.
    let key = e.key().map(|k| {
        let key = match &k.key {
            Some(key) => core_key(py, key).ok(),
            None => key_at(k.list, k.position),
        };
        key.unwrap_or_else(|| py.None().into_bound(py))
    });
    ours(
        py,
        e.is_type_error(),
        &reason,
        e.argument(),
        &e.at,
        list,
        position.map(|p| p + 1),
        key,
    )
}

/// The exception for `e` when no caller's key object is at hand (batches, run files, arguments).
pub fn core_error<'py>(py: Python<'py>, e: Error, path: Option<&Bound<'py, PyAny>>) -> PyErr {
    exception(py, e, &|_, _| None, path)
}

/// The exception for `e`, whose keys are the items of `lists`.
pub fn fusion_error<'py>(py: Python<'py>, e: Error, lists: &[Bound<'py, PyTuple>]) -> PyErr {
    exception(
        py,
        e,
        &|list, position| lists.get(list)?.get_item(position).ok(),
        None,
    )
}

impl From<SettingError> for PyErr {
    /// The core's error about one setting of many (`crate::optimize::combine`).
    fn from(e: SettingError) -> PyErr {
        Python::attach(|py| of_setting(py, e.setting, core_error(py, e.error, None)))
    }
}

impl From<Error> for PyErr {
    /// For errors that name no key object (argument checks).
    fn from(e: Error) -> PyErr {
        Python::attach(|py| core_error(py, e, None))
    }
}
