//! TREC files for `rankfusion.trec` (private functions): `_parse_run` and `_parse_qrels` run the
//! core's parsers with the GIL released, then build the Python objects.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use super::args::choice;
use super::errors::trec_error;
use crate::trec::{self, Number, Order, ReadDuplicates};

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(parse_run, m)?)?;
    m.add_function(wrap_pyfunction!(parse_qrels, m)?)?;
    Ok(())
}

/// `bytes` as the reader decodes them: UTF-8, each undecodable byte a lone surrogate
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

/// A new list of `n` items, item `i` made by `item(i)`.
fn new_list<'py>(
    py: Python<'py>,
    n: usize,
    mut item: impl FnMut(usize) -> PyResult<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyList>> {
    // SAFETY: PyList_New returns a new reference or NULL with an exception set; PyList_SetItem
    // steals the item's reference, in bounds. Slots not yet set are NULL, which a list's
    // deallocation allows.
    unsafe {
        let list = Bound::from_owned_ptr_or_err(py, ffi::PyList_New(n as ffi::Py_ssize_t))?
            .cast_into_unchecked::<PyList>();
        for i in 0..n {
            let value = item(i)?;
            ffi::PyList_SetItem(list.as_ptr(), i as ffi::Py_ssize_t, value.into_ptr());
        }
        Ok(list)
    }
}

/// A score field: the core's parser, and Python's `float()` for what the core leaves to it
/// (a field with a non-ASCII byte, e.g. full-width digits).
fn score(field: &[u8]) -> Option<f64> {
    match trec::parse_score(field) {
        Number::Value(v) => Some(v),
        Number::Invalid => None,
        Number::Unknown => Python::attach(|py| {
            let value = py
                .get_type::<PyFloat>()
                .call1((text(py, field).ok()?,))
                .ok()?;
            value.extract::<f64>().ok()
        }),
    }
}

/// Parses a run file's bytes (decompressed) into `[(qid, docids, scores), ...]`, queries in
/// order of first appearance. `order` is "score" or "file", `duplicates` "error", "first" or
/// "keep". Raises `rankfusion.trec.TrecFormatError(path, line, reason)` for a malformed file.
#[pyfunction]
#[pyo3(name = "_parse_run")]
fn parse_run<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyBytes>,
    path: &Bound<'py, PyAny>,
    order: &Bound<'py, PyAny>,
    duplicates: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    let order = Order::parse(choice(order, "order", &["score", "file"])?).unwrap_or(Order::Score);
    let duplicates = ReadDuplicates::parse(choice(
        duplicates,
        "duplicates",
        &["error", "first", "keep"],
    )?)
    .unwrap_or(ReadDuplicates::Error);
    let bytes = data.as_bytes();
    let queries = py
        .detach(|| trec::parse_run(bytes, order, duplicates, score))
        .map_err(|e| trec_error(py, path, &e))?;
    new_list(py, queries.len(), |i| {
        let q = &queries[i];
        let docids = new_list(py, q.docids.len(), |j| {
            Ok(text(py, &bytes[q.docids[j].clone()])?.into_any())
        })?;
        let scores = new_list(py, q.scores.len(), |j| {
            Ok(PyFloat::new(py, q.scores[j]).into_any())
        })?;
        let qid = text(py, &bytes[q.qid.clone()])?;
        Ok(PyTuple::new(py, [qid.into_any(), docids.into_any(), scores.into_any()])?.into_any())
    })
}

/// A gain: an i64, or the Python int that `int()` makes of a field the core leaves to it.
enum Gain {
    Small(i64),
    Big(Py<PyAny>),
}

fn gain(field: &[u8]) -> Option<Gain> {
    match trec::parse_gain(field) {
        Number::Value(v) => Some(Gain::Small(v)),
        Number::Invalid => None,
        Number::Unknown => Python::attach(|py| {
            let value = py
                .get_type::<PyInt>()
                .call1((text(py, field).ok()?,))
                .ok()?;
            Some(Gain::Big(value.unbind()))
        }),
    }
}

/// Parses a qrels file's bytes into `{qid: {docid: gain}}`. `duplicates` is "error" or "first".
/// Raises `rankfusion.trec.TrecFormatError(path, line, reason)` for a malformed file.
#[pyfunction]
#[pyo3(name = "_parse_qrels")]
fn parse_qrels<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyBytes>,
    path: &Bound<'py, PyAny>,
    duplicates: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyDict>> {
    let duplicates = ReadDuplicates::parse(choice(duplicates, "duplicates", &["error", "first"])?)
        .unwrap_or(ReadDuplicates::Error);
    let bytes = data.as_bytes();
    let queries = py
        .detach(|| trec::parse_qrels(bytes, duplicates, gain))
        .map_err(|e| trec_error(py, path, &e))?;
    let out = PyDict::new(py);
    for q in queries {
        let judged = PyDict::new(py);
        for (docid, g) in q.judged {
            let docid = text(py, &bytes[docid])?;
            match g {
                Gain::Small(v) => judged.set_item(docid, v)?,
                Gain::Big(v) => judged.set_item(docid, v)?,
            }
        }
        out.set_item(text(py, &bytes[q.qid])?, judged)?;
    }
    Ok(out)
}
