//! TREC files for `rankfusion.trec` (private functions): `_parse_run` and `_parse_qrels` run the
//! core's parsers with the GIL released, then build the Python objects; `_run_lines` formats the
//! lines of one query of a run for the writer. `_parse_run_files` and `_fuse_run_files` are the
//! native path of `rankfusion fuse`: files parsed into `_RunFile`s (bytes and byte ranges, no
//! Python object per line), then fused and formatted into the fused run's bytes
//! (`crate::trec::fuse`), both with the GIL released.

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use pyo3::{ffi, Borrowed, PyTypeInfo};

use super::errors::{core_error, text};
use super::fusion::fusion_arg;
use super::layout::tuple_items;
use super::results::HIT;
use super::signals;
use crate::pool;
use crate::trec::fuse::{self, RunFile as CoreRunFile};
use crate::trec::{self, write, Gain, Order, ReadDuplicates, RunQuery};

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(join_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(read_file, m)?)?;
    m.add_function(wrap_pyfunction!(parse_run, m)?)?;
    m.add_function(wrap_pyfunction!(parse_qrels, m)?)?;
    m.add_function(wrap_pyfunction!(run_lines, m)?)?;
    m.add_class::<RunFile>()?;
    m.add_function(wrap_pyfunction!(parse_run_files, m)?)?;
    m.add_function(wrap_pyfunction!(fuse_run_files, m)?)?;
    Ok(())
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

/// What Python's `float` or `int` (`T`) makes of a field that the core leaves to it, read by `f`.
fn by_python<T: PyTypeInfo, R>(
    field: &[u8],
    f: impl FnOnce(Bound<'_, PyAny>) -> Option<R>,
) -> Option<R> {
    Python::attach(|py| f(py.get_type::<T>().call1((text(py, field).ok()?,)).ok()?))
}

/// A run score (see `trec::score_or`).
fn score(field: &[u8]) -> Option<f64> {
    trec::score_or(field, |t| by_python::<PyFloat, _>(t, |v| v.extract().ok()))
}

/// A qrels gain (see `trec::gain_or`).
fn gain(field: &[u8]) -> Option<Gain<Py<PyAny>>> {
    trec::gain_or(field, |t| by_python::<PyInt, _>(t, |v| Some(v.unbind())))
}

/// `b"".join(chunks)`, copied with the GIL released and Ctrl-C checked between chunks: a file
/// read in chunks (each read interruptible) becomes one bytes without a copy of hundreds of MB
/// that nothing can interrupt (a file of 18 M lines is 0.7 GB).
#[pyfunction]
#[pyo3(name = "_join_bytes")]
fn join_bytes<'py>(
    py: Python<'py>,
    chunks: Vec<Bound<'py, PyBytes>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let slices: Vec<&[u8]> = chunks.iter().map(|c| c.as_bytes()).collect();
    joined(py, &slices)
}

/// The bytes of the file at `path`, read `piece` bytes at a time with the GIL released, into
/// one bytes object of the file's size (no copy, no second buffer): Ctrl-C is handled between
/// pieces, and `progress(bytes_read)` called there (the GIL held) when given. None when the
/// file's size changed while it was read (the caller reads it another way). OSError as
/// `open()` and `read()` raise it.
#[pyfunction]
#[pyo3(name = "_read_file", signature = (path, piece, progress=None))]
fn read_file<'py>(
    py: Python<'py>,
    path: std::path::PathBuf,
    piece: usize,
    progress: Option<Bound<'py, PyAny>>,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    use std::io::Read;

    let os_error = |e: std::io::Error| match e.raw_os_error() {
        Some(errno) => PyOSError::new_err((errno, e.to_string())),
        None => PyOSError::new_err(e.to_string()),
    };
    let mut file = std::fs::File::open(&path).map_err(os_error)?;
    let size = usize::try_from(file.metadata().map_err(os_error)?.len()).ok();
    // SAFETY: `fill` writes (reads into) every byte of `buffer`, and `bytes` is returned only
    // once all were written; `buffer` is not used after.
    let (bytes, buffer) = unsafe { unset_bytes(py, size)? };
    let read = |file: &mut std::fs::File, piece: &mut [u8]| py.detach(|| file.read(piece));
    let between = |done: Option<usize>| {
        py.check_signals()?;
        match (&progress, done) {
            (Some(progress), Some(done)) => progress.call1((done,)).map(drop),
            _ => Ok(()),
        }
    };
    let whole = trec::read::fill(&mut file, buffer, piece, read, between, os_error)?;
    Ok(whole.then_some(bytes))
}

/// A new bytes object of `total` bytes (None: more than a size holds) whose contents are not
/// set yet, and its bytes to write.
///
/// # Safety
/// The object is the caller's alone until then: the caller writes every byte before it shares
/// the object (reading it first reads garbage), and does not use the slice after, nor once the
/// object is dropped (the slice is its buffer).
unsafe fn unset_bytes(
    py: Python<'_>,
    total: Option<usize>,
) -> PyResult<(Bound<'_, PyBytes>, &mut [u8])> {
    let too_many = || PyValueError::new_err("too many bytes for one bytes object");
    let total = total.ok_or_else(too_many)?;
    let size = ffi::Py_ssize_t::try_from(total).map_err(|_| too_many())?;
    // SAFETY: PyBytes_FromStringAndSize with NULL makes a bytes object of `size` bytes, unset;
    // its buffer lives as long as the object, which no one else sees yet.
    unsafe {
        let bytes = Bound::from_owned_ptr_or_err(
            py,
            ffi::PyBytes_FromStringAndSize(std::ptr::null(), size),
        )?
        .cast_into_unchecked::<PyBytes>();
        let start = ffi::PyBytes_AsString(bytes.as_ptr()).cast::<u8>();
        Ok((bytes, std::slice::from_raw_parts_mut(start, total)))
    }
}

/// The bytes of `slices` one after the other, as one new bytes object, copied with the GIL
/// released and Ctrl-C checked between slices.
fn joined<'py>(py: Python<'py>, slices: &[&[u8]]) -> PyResult<Bound<'py, PyBytes>> {
    // SAFETY: `concat_into` writes every byte of `out`, or fails (the object then dropped
    // unread); `out` is not used after.
    let (bytes, out) = unsafe { unset_bytes(py, trec::read::total_len(slices))? };
    signals::detached(py, |cancel| trec::read::concat_into(out, slices, cancel))??;
    Ok(bytes)
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
    order: Order,
    duplicates: ReadDuplicates,
) -> PyResult<Bound<'py, PyList>> {
    let bytes = data.as_bytes();
    let queries = signals::detached(py, |cancel| {
        trec::parse_run_cancellable(bytes, order, duplicates, score, cancel)
    })?;
    let queries = queries.map_err(|e| core_error(py, e, Some(path)))?;
    // The objects (a str and a float a line) are made with the GIL held: signals are checked
    // now and then (`trec::check_points`), and an interrupted call's objects are freed on another
    // thread.
    let mut built: Vec<Py<PyAny>> = Vec::with_capacity(queries.len());
    for (q, check) in queries.iter().zip(trec::check_points(&queries)) {
        if check {
            if let Err(e) = py.check_signals() {
                signals::free_later(py, built);
                return Err(e);
            }
        }
        let docids = new_list(py, q.docids.len(), |j| {
            Ok(text(py, &bytes[q.docids[j].clone()])?.into_any())
        })?;
        let scores = new_list(py, q.scores.len(), |j| {
            Ok(PyFloat::new(py, q.scores[j]).into_any())
        })?;
        let qid = text(py, &bytes[q.qid.clone()])?;
        let query = PyTuple::new(py, [qid.into_any(), docids.into_any(), scores.into_any()])?;
        built.push(query.into_any().unbind());
    }
    PyList::new(py, built)
}

/// Parses a qrels file's bytes into `{qid: {docid: gain}}`. `duplicates` is "error", "first" or
/// "keep" (every line: the last gain of a doc wins).
/// Raises `rankfusion.trec.TrecFormatError(path, line, reason)` for a malformed file.
#[pyfunction]
#[pyo3(name = "_parse_qrels")]
fn parse_qrels<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyBytes>,
    path: &Bound<'py, PyAny>,
    duplicates: ReadDuplicates,
) -> PyResult<Bound<'py, PyDict>> {
    let bytes = data.as_bytes();
    let queries = py
        .detach(|| trec::parse_qrels(bytes, duplicates, gain))
        .map_err(|e| core_error(py, e, Some(path)))?;
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

/// An exact str as UTF-8 (None for anything else).
fn id_bytes<'py>(item: &Bound<'py, PyAny>) -> Option<Bound<'py, PyBytes>> {
    item.is_exact_instance_of::<PyString>()
        .then(|| utf8(item))
        .flatten()
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
    let items = |seq: &Bound<'py, PyAny>| {
        seq.cast_exact::<PyList>()
            .map(|l| l.to_tuple())
            .or_else(|_| seq.cast_exact::<PyTuple>().cloned())
            .ok()
    };
    let mut ids = Vec::new();
    let mut values = Vec::new();
    match scores {
        None => {
            let Ok(hits) = docids.cast_exact::<PyList>() else {
                return Ok(None);
            };
            let hit_type = HIT.ty(py)?;
            for item in hits.to_tuple().iter() {
                if !item.is_exact_instance(&hit_type) {
                    return Ok(None);
                }
                // SAFETY: an exact Hit, made by `Spec::make`: a record whose items 0 and 1 are
                // its key and its score (never NULL).
                let (key, score) = unsafe {
                    let items = tuple_items(item.as_ptr());
                    (
                        Borrowed::from_ptr(py, *items),
                        Borrowed::from_ptr(py, *items.add(1)),
                    )
                };
                let (Some(docid), Ok(score)) = (id_bytes(&key), score.cast::<PyFloat>()) else {
                    return Ok(None);
                };
                ids.push(docid);
                values.push(score.value());
            }
        }
        Some(scores) => {
            let (Some(docids), Some(scores)) = (items(docids), items(scores)) else {
                return Ok(None);
            };
            for item in docids.iter() {
                let Some(docid) = id_bytes(&item) else {
                    return Ok(None);
                };
                ids.push(docid);
            }
            for item in scores.iter() {
                let Ok(score) = item.cast_exact::<PyFloat>() else {
                    return Ok(None);
                };
                values.push(score.value());
            }
        }
    }
    let ids: Vec<&[u8]> = ids.iter().map(|b| b.as_bytes()).collect();
    let Some(out) = write::query_lines(qid.as_bytes(), tag.as_bytes(), &ids, &values) else {
        return Ok(None);
    };
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
/// Ctrl-C raises `KeyboardInterrupt` within milliseconds.
/// `order` is "score" or "file", `duplicates` "error", "first" or "keep".
#[pyfunction]
#[pyo3(name = "_parse_run_files")]
fn parse_run_files<'py>(
    py: Python<'py>,
    datas: Vec<Bound<'py, PyBytes>>,
    paths: Vec<Bound<'py, PyAny>>,
    order: Order,
    duplicates: ReadDuplicates,
) -> PyResult<Bound<'py, PyList>> {
    if datas.len() != paths.len() {
        return Err(PyValueError::new_err(format!(
            "{} files for {} paths",
            datas.len(),
            paths.len()
        )));
    }
    let slices: Vec<&[u8]> = datas.iter().map(|d| d.as_bytes()).collect();
    let parsed = signals::detached(py, |cancel| {
        trec::parse_runs(&slices, order, duplicates, score, cancel)
    })??;
    let files = parsed.into_iter().zip(datas.iter().zip(&paths));
    let files = files.map(|(parsed, (data, path))| match parsed {
        Ok(queries) => {
            let data = data.clone().unbind();
            Ok(Bound::new(py, RunFile { data, queries })?.into_any())
        }
        Err(e) => Ok(core_error(py, e, Some(path))
            .into_value(py)
            .into_bound(py)
            .into_any()),
    });
    PyList::new(py, files.collect::<PyResult<Vec<_>>>()?)
}

/// The fused run of `files` (`_RunFile`s, in the order of the runs) as the bytes of its TREC
/// lines: what `write_run(fuse(runs, ...), tag=tag)` writes for the same files read by
/// `read_run`, with tie_break "best_rank", no offset, min_score, normalisation or boost (a huge
/// window or limit means no bound). The fusion arguments are `rankfusion.fuse`'s, checked as it
/// checks them; a score-based method reads the runs' scores. Fused on the thread pool with the
/// GIL released. Raises ValueError as `fuse` does (the message prefixed with the query) for the
/// first query that fails. Ctrl-C raises `KeyboardInterrupt` within milliseconds.
#[pyfunction]
#[pyo3(name = "_fuse_run_files", signature = (files, fusion, *, tag))]
fn fuse_run_files<'py>(
    py: Python<'py>,
    files: Vec<Bound<'py, RunFile>>,
    fusion: &Bound<'py, PyAny>,
    tag: &[u8],
) -> PyResult<Bound<'py, PyBytes>> {
    let plan = fuse::plan(&fusion_arg(fusion)?, files.len())?;
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
    let out = signals::detached(py, |cancel| {
        fuse::fused_run_pooled(&core, &plan, tag, cancel)
    })??;
    // Copied in pieces, Ctrl-C checked between them, and freed on another thread: the output
    // of 18 M lines is 0.45 GB, whose copy and release took up to 0.1 s each with the GIL held.
    let bytes = joined(py, &out.chunks(OUTPUT_PIECE).collect::<Vec<_>>());
    pool::free_later(out);
    bytes
}

/// The pieces `_fuse_run_files` copies its output in (see `joined`).
const OUTPUT_PIECE: usize = 1 << 22;
