//! TREC files for `rankfusion.trec` (private functions): `_parse_run` and `_parse_qrels` run the
//! core's parsers with the GIL released, then build the Python objects; `_run_lines` formats the
//! lines of one query of a run for the writer. `_parse_run_files` and `_fuse_run_files` are the
//! native path of `rankfusion fuse`: files parsed into `_RunFile`s (bytes and byte ranges, no
//! Python object per line), then fused and formatted into the fused run's bytes
//! (`crate::trec_fuse`), both with the GIL released.

use std::ffi::CStr;

use pyo3::exceptions::PyValueError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use rayon::prelude::*;

use super::args::choice;
use super::errors::{fuse_error, trec_error};
use super::results::Hit;
use crate::fusion::{Duplicates, Params};
use crate::pool;
use crate::trec::{self, Number, Order, ReadDuplicates, RunQuery, TrecError};
use crate::trec_fuse::{self, RunFile as CoreRunFile};

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(parse_run, m)?)?;
    m.add_function(wrap_pyfunction!(parse_qrels, m)?)?;
    m.add_function(wrap_pyfunction!(run_lines, m)?)?;
    m.add_class::<RunFile>()?;
    m.add_function(wrap_pyfunction!(parse_run_files, m)?)?;
    m.add_function(wrap_pyfunction!(fuse_run_files, m)?)?;
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

fn read_choices(
    order: &Bound<'_, PyAny>,
    duplicates: &Bound<'_, PyAny>,
) -> PyResult<(Order, ReadDuplicates)> {
    let order = Order::parse(choice(order, "order", &["score", "file"])?).unwrap_or(Order::Score);
    let duplicates = ReadDuplicates::parse(choice(
        duplicates,
        "duplicates",
        &["error", "first", "keep"],
    )?)
    .unwrap_or(ReadDuplicates::Error);
    Ok((order, duplicates))
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
    let (order, duplicates) = read_choices(order, duplicates)?;
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

/// `s` encoded in UTF-8, or None when it holds a lone surrogate (an undecodable byte read with
/// `surrogateescape`). (A bytes copy: the zero-copy `PyUnicode_AsUTF8AndSize` is not in the
/// limited API of Python 3.9.)
fn utf8<'py>(s: &Bound<'py, PyAny>) -> Option<Bound<'py, PyBytes>> {
    // SAFETY: a valid object; a new reference, or NULL with an exception set, which is cleared.
    unsafe {
        let b = ffi::PyUnicode_AsUTF8String(s.as_ptr());
        if b.is_null() {
            ffi::PyErr_Clear();
            return None;
        }
        Some(Bound::from_owned_ptr(s.py(), b).cast_into_unchecked())
    }
}

/// Appends Python's `repr(x)`: the core's exact fast path, else the function `float.__repr__`
/// itself calls.
fn push_repr(py: Python<'_>, out: &mut Vec<u8>, x: f64) -> PyResult<()> {
    if trec::push_float_repr(out, x) {
        return Ok(());
    }
    // SAFETY: GIL held; the result is NUL-terminated and PyMem-allocated, or NULL with an
    // exception set.
    unsafe {
        let p = ffi::PyOS_double_to_string(
            x,
            b'r' as _,
            0,
            ffi::Py_DTSF_ADD_DOT_0,
            std::ptr::null_mut(),
        );
        if p.is_null() {
            return Err(PyErr::fetch(py));
        }
        out.extend_from_slice(CStr::from_ptr(p).to_bytes());
        ffi::PyMem_Free(p.cast());
    }
    Ok(())
}

/// An exact str that is a valid id (non-empty, no whitespace), as UTF-8.
fn id_bytes<'py>(item: &Bound<'py, PyAny>) -> Option<Bound<'py, PyBytes>> {
    if !item.is_exact_instance_of::<PyString>() {
        return None;
    }
    utf8(item).filter(|b| trec::is_id(b.as_bytes()))
}

/// The TREC lines `qid Q0 docid rank score tag\n` of one query, ranks 1..n, scores as Python's
/// `repr` writes them: for a list of `Hit` (`scores` None), or for aligned doc ids and scores
/// (lists or tuples; lines for the shorter's length, like zip).
///
/// Returns None, writing nothing, for anything else: an item that is not a Hit, a doc id that
/// is not an exact str or is empty or contains whitespace or a lone surrogate, a score that is
/// not an exact float or is NaN (which the reader refuses). The caller then formats the query
/// itself (converting, or raising the error that names the bad id or score). `qid` and `tag`
/// are checked by the caller.
#[pyfunction]
#[pyo3(name = "_run_lines")]
fn run_lines<'py>(
    py: Python<'py>,
    qid: &Bound<'py, PyString>,
    docids: &Bound<'py, PyAny>,
    scores: Option<&Bound<'py, PyAny>>,
    tag: &Bound<'py, PyString>,
) -> PyResult<Option<Bound<'py, PyString>>> {
    let (Some(qid), Some(tag)) = (utf8(qid), utf8(tag)) else {
        return Ok(None);
    };
    let (qid, tag) = (qid.as_bytes(), tag.as_bytes());
    let mut out = Vec::new();
    let line = |out: &mut Vec<u8>, rank: usize, docid: &[u8], score: f64| {
        out.extend_from_slice(qid);
        out.extend_from_slice(b" Q0 ");
        out.extend_from_slice(docid);
        out.push(b' ');
        trec_fuse::push_usize(out, rank);
        out.push(b' ');
        push_repr(py, out, score)?;
        out.push(b' ');
        out.extend_from_slice(tag);
        out.push(b'\n');
        Ok::<_, PyErr>(())
    };
    let items = |seq: &Bound<'py, PyAny>| {
        seq.cast_exact::<PyList>()
            .map(|l| l.to_tuple())
            .or_else(|_| seq.cast_exact::<PyTuple>().cloned())
            .ok()
    };
    match scores {
        None => {
            let Ok(hits) = docids.cast_exact::<PyList>() else {
                return Ok(None);
            };
            let hits = hits.to_tuple();
            out.reserve(hits.len() * (qid.len() + tag.len() + 40));
            for (i, item) in hits.iter().enumerate() {
                let Ok(hit) = item.cast::<Hit>() else {
                    return Ok(None);
                };
                let hit = hit.get();
                let Some(docid) = id_bytes(hit.key.bind(py)) else {
                    return Ok(None);
                };
                if hit.score.is_nan() {
                    return Ok(None);
                }
                line(&mut out, i + 1, docid.as_bytes(), hit.score)?;
            }
        }
        Some(scores) => {
            let (Some(docids), Some(scores)) = (items(docids), items(scores)) else {
                return Ok(None);
            };
            let mut ids = Vec::with_capacity(docids.len());
            for item in docids.iter() {
                let Some(docid) = id_bytes(&item) else {
                    return Ok(None);
                };
                ids.push(docid);
            }
            let mut values = Vec::with_capacity(scores.len());
            for item in scores.iter() {
                let Ok(score) = item.cast_exact::<PyFloat>() else {
                    return Ok(None);
                };
                let value = score.value();
                if value.is_nan() {
                    return Ok(None);
                }
                values.push(value);
            }
            out.reserve(ids.len() * (qid.len() + tag.len() + 40));
            for (i, (docid, &score)) in ids.iter().zip(&values).enumerate() {
                line(&mut out, i + 1, docid.as_bytes(), score)?;
            }
        }
    }
    let text = std::str::from_utf8(&out)
        .map_err(|_| PyValueError::new_err("_run_lines: not UTF-8 (a bug)"))?;
    Ok(Some(PyString::new(py, text)))
}

// --- the native path of `rankfusion fuse` ----------------------------------------------------

/// A run file parsed for `_fuse_run_files`: its bytes and its queries as byte ranges of them,
/// without a Python object per line. `len()` is its number of queries.
#[pyclass(frozen, module = "rankfusion._core", name = "_RunFile")]
pub struct RunFile {
    data: Py<PyBytes>,
    queries: Vec<RunQuery>,
}

#[pymethods]
impl RunFile {
    fn __len__(&self) -> usize {
        self.queries.len()
    }

    /// The query ids in order of first appearance, decoded as `read_run` decodes them.
    fn qids<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let bytes = self.data.bind(py).as_bytes();
        new_list(py, self.queries.len(), |i| {
            Ok(text(py, &bytes[self.queries[i].qid.clone()])?.into_any())
        })
    }
}

/// Parses run files' bytes (decompressed), on the thread pool with the GIL released: per file,
/// in order, a `_RunFile`, or the `TrecFormatError` (not raised) that `read_run` raises for it.
/// `order` is "score" or "file", `duplicates` "error", "first" or "keep".
#[pyfunction]
#[pyo3(name = "_parse_run_files")]
fn parse_run_files<'py>(
    py: Python<'py>,
    datas: Vec<Bound<'py, PyBytes>>,
    paths: Vec<Bound<'py, PyAny>>,
    order: &Bound<'py, PyAny>,
    duplicates: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    if datas.len() != paths.len() {
        return Err(PyValueError::new_err(format!(
            "{} files for {} paths",
            datas.len(),
            paths.len()
        )));
    }
    let (order, duplicates) = read_choices(order, duplicates)?;
    let slices: Vec<&[u8]> = datas.iter().map(|d| d.as_bytes()).collect();
    let parse = |bytes: &&[u8]| trec::parse_run(bytes, order, duplicates, score);
    let parsed: Vec<Result<Vec<RunQuery>, TrecError>> = py.detach(|| {
        pool::run(pool::resolve_threads(None).min(slices.len()), |parallel| {
            if parallel {
                slices.par_iter().map(parse).collect()
            } else {
                slices.iter().map(parse).collect()
            }
        })
    });
    let mut parsed = parsed.into_iter();
    new_list(py, datas.len(), |i| match parsed.next() {
        Some(Ok(queries)) => Ok(Bound::new(
            py,
            RunFile {
                data: datas[i].clone().unbind(),
                queries,
            },
        )?
        .into_any()),
        Some(Err(e)) => Ok(trec_error(py, &paths[i], &e)
            .into_value(py)
            .into_bound(py)
            .into_any()),
        None => Err(PyValueError::new_err(
            "_parse_run_files: a file was not parsed (a bug)",
        )),
    })
}

/// The fused run of `files` (`_RunFile`s, in the order of the runs) as the bytes of its TREC
/// lines: what `write_run(fuse(runs, ...), tag=tag)` writes for the same files read by
/// `read_run`, with tie_break "best_rank", no offset, min_score or normalisation. Fused on the
/// thread pool with the GIL released. Raises ValueError / TypeError as `fuse` does (the message
/// prefixed with the query) for the first query that fails.
#[pyfunction]
#[pyo3(
    name = "_fuse_run_files",
    signature = (files, *, k, weights, window, duplicates, limit, tag)
)]
#[allow(clippy::too_many_arguments)]
fn fuse_run_files<'py>(
    py: Python<'py>,
    files: Vec<Bound<'py, RunFile>>,
    k: f64,
    weights: Option<Vec<f64>>,
    window: Option<usize>,
    duplicates: &Bound<'py, PyAny>,
    limit: Option<usize>,
    tag: &[u8],
) -> PyResult<Bound<'py, PyBytes>> {
    let duplicates = Duplicates::parse(choice(
        duplicates,
        "duplicates",
        &["first", "sum", "error"],
    )?)
    .unwrap_or(Duplicates::First);
    let params = Params {
        k,
        weights,
        window,
        duplicates,
        limit,
        ..Params::default()
    };
    let core: Vec<CoreRunFile<'_>> = files
        .iter()
        .map(|f| {
            let f = f.get();
            CoreRunFile {
                data: f.data.bind(py).as_bytes(),
                queries: &f.queries,
            }
        })
        .collect();
    let fallback = |out: &mut Vec<u8>, x: f64| Python::attach(|py| push_repr(py, out, x).is_ok());
    let out = py
        .detach(|| {
            pool::run(pool::resolve_threads(None), |parallel| {
                trec_fuse::fused_run(&core, &params, tag, parallel, &fallback)
            })
        })
        .map_err(|e| fuse_error(py, &e))?;
    Ok(PyBytes::new(py, &out))
}
