//! The glue of `rankfusion.hybrid.hybrid_search` for candidates as this package's indexes return
//! them (lists of `(id, float)` tuples): the union of both lists' ids, and the fusion of their
//! live candidates, each one call instead of a dozen Python-level passes. Private (`_core`):
//! `hybrid_search` decides when they apply and does everything else in Python.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFloat, PyList, PyTuple};

use super::args::{integer, pair_of};
use super::fusion::fusion_arg;
use super::query;
use crate::revalidate::take_kept;

/// The candidates of every search, if each search is a list of `(id, float)` 2-tuples (exact
/// types): then nothing but the ids needs checking, and they were checked by hashing them here.
fn tuple_pairs<'py>(searches: &Bound<'py, PyAny>) -> PyResult<Option<Vec<Bound<'py, PyList>>>> {
    let Ok(searches) = searches.cast_exact::<PyList>() else {
        return Ok(None);
    };
    let mut out = Vec::with_capacity(searches.len());
    for search in searches.iter() {
        let Ok(list) = search.cast_exact::<PyList>() else {
            return Ok(None);
        };
        let pairs = list.iter().all(|item| {
            pair_of(&item).is_some_and(|p| p.score().is_exact_instance_of::<PyFloat>())
        });
        if !pairs {
            return Ok(None);
        }
        out.push(list.clone());
    }
    Ok(Some(out))
}

/// The ids of the candidates of every list in `searches`, each once, in first-seen order (dict
/// semantics: 1, 1.0 and True are one id), when every list is a list of `(id, float)` 2-tuples
/// and every id is hashable; else None (the caller checks the candidates the slow way, which
/// names a bad one). An id's own exception other than TypeError propagates.
#[pyfunction]
pub fn _pairs_union<'py>(
    py: Python<'py>,
    searches: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyList>>> {
    let Some(lists) = tuple_pairs(searches)? else {
        return Ok(None);
    };
    let seen = PyDict::new(py);
    let none = py.None();
    for list in &lists {
        for item in list.iter() {
            // A pair (`tuple_pairs`), unless an id's `__hash__` or `__eq__` changed the list
            // since: then the general path names the bad candidate.
            let Some(pair) = pair_of(&item) else {
                return Ok(None);
            };
            let id = pair.id();
            match seen.set_item(id, &none) {
                Ok(()) => {}
                Err(e) if e.is_instance_of::<PyTypeError>(py) => return Ok(None),
                Err(e) => return Err(e),
            }
        }
    }
    Ok(Some(seen.keys()))
}

/// The fusion of the live candidates of each search: each list keeps, in order, its candidates
/// whose id is `in alive`, up to `window` of them, and is fused as `fusion(ids, scores)` — the
/// same hits, the same errors. None when a search is not a list of `(id, float)` 2-tuples, or no
/// longer is (an id's `__eq__` changed it): the caller fuses the general way, which names the
/// bad candidate.
#[pyfunction]
#[pyo3(signature = (searches, alive, window, fusion))]
pub fn _fuse_live_pairs<'py>(
    py: Python<'py>,
    searches: &Bound<'py, PyAny>,
    alive: &Bound<'py, PyAny>,
    window: &Bound<'py, PyAny>,
    fusion: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyList>>> {
    let fusion = fusion_arg(fusion)?;
    let Some(searches) = tuple_pairs(searches)? else {
        return Ok(None);
    };
    let window = integer(window, "window", 0)?;
    let mut lists = Vec::with_capacity(searches.len());
    let mut scores = Vec::with_capacity(searches.len());
    for search in &searches {
        // The list is the caller's: `alive.__contains__` may have changed it.
        let mut changed = false;
        let live = take_kept(search.iter(), window, |item| -> PyResult<_> {
            let pair = pair_of(&item).filter(|p| p.score().is_exact_instance_of::<PyFloat>());
            let Some(pair) = pair.filter(|_| !changed) else {
                changed = true;
                return Ok(None);
            };
            let (id, score) = (pair.id(), pair.score());
            let live = alive.contains(id)?;
            Ok(live.then(|| (id.to_owned(), score.to_owned())))
        })?;
        if changed {
            return Ok(None);
        }
        let (ids, values): (Vec<_>, Vec<_>) = live.into_iter().unzip();
        lists.push(PyTuple::new(py, ids)?);
        scores.push(PyTuple::new(py, values)?);
    }
    let lists = PyTuple::new(py, lists)?;
    let scores = PyTuple::new(py, scores)?.into_any();
    query::call(py, &fusion, None, lists.as_any(), Some(&scores), None).map(Some)
}
