//! `revalidate`, `pool_size` and `revalidate_batch`: arguments checked in the reference's order,
//! the plan, the walk and the compaction in Rust (`crate::revalidate`), Python called only for
//! the lookup, `where` and `is_live`.

use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray1, PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use super::args::{
    as_tuple, describe, index, integer, integer_setting, is_numpy_scalar, items, mapping_type,
    real_named, repr, two_items, type_name, Arg,
};
use super::arrays::{borrow, contiguous, matrix, numpy, slice};
use super::errors::type_error;
use super::keys::{as_i64, hashable_type, PyInterner};
use super::results::{REVALIDATED, REVALIDATED_BATCH};
use super::signals::{Detached, Signals};
use crate::revalidate::{self as core, Plan, PoolSize};

// --- pool_size -------------------------------------------------------------------------------------

/// How many candidates to ask a vector index for, to end with `limit` hits after filtering.
///
/// `limit` when the index filters before the scan (`filtering == "pre"`); `limit * multiplier`
/// for `"post"`, `"none"` and anything else, a non-str included (fail safe: widen the pool and
/// filter in-engine). `limit` is an int >= 0 and `multiplier` an int >= 1 (bool rejected); the
/// result is exact for any size.
#[pyfunction]
#[pyo3(
    signature = (limit, filtering, multiplier=Arg::Missing),
    text_signature = "(limit, filtering, multiplier=3)"
)]
pub fn pool_size<'py>(
    py: Python<'py>,
    limit: &Bound<'py, PyAny>,
    filtering: &Bound<'py, PyAny>,
    multiplier: Arg<'py>,
) -> PyResult<Bound<'py, PyAny>> {
    let n = integer(limit, "limit", 0)?;
    let m = match &multiplier {
        Arg::Missing => core::MULTIPLIER,
        Arg::Given(v) => integer(v, "multiplier", 1)?,
    };
    let pre = filtering.is_instance_of::<PyString>() && filtering.eq("pre")?;
    // Sizes beyond i64 are computed with Python ints, exactly, as the reference does.
    match core::pool_size(n, pre, m) {
        PoolSize::Exact(size) => Ok(size.into_pyobject(py)?.into_any()),
        PoolSize::Limit => Ok(index(limit, "limit")?),
        PoolSize::Product => index(limit, "limit")?.mul(match multiplier {
            Arg::Missing => core::MULTIPLIER.into_pyobject(py)?.into_any(),
            Arg::Given(v) => index(&v, "multiplier")?,
        }),
    }
}

// --- revalidate ------------------------------------------------------------------------------------

/// The candidates (id, score (a float object)), checked like the reference, and the ids' values
/// when every one is an exact int that fits in i64.
struct Candidates<'py> {
    pairs: Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)>,
    ints: Option<Vec<i64>>,
}

/// Signals are checked every this many candidates read.
const SIGNALS_EVERY: usize = 1 << 16;

fn extract_candidates<'py>(candidates: &Bound<'py, PyAny>) -> PyResult<Candidates<'py>> {
    let py = candidates.py();
    let plain =
        candidates.is_exact_instance_of::<PyList>() || candidates.is_exact_instance_of::<PyTuple>();
    if !plain && candidates.is_instance(mapping_type(py)?)? {
        return Err(type_error(
            "candidates",
            format!(
                "candidates must be an iterable of (id, score) pairs, not a mapping ({}): pass \
             mapping.items()",
                type_name(candidates)
            ),
        ));
    }
    let outer = as_tuple(candidates, "candidates")?;
    let mut pairs = Vec::with_capacity(outer.len());
    let mut ints = Some(Vec::with_capacity(outer.len()));
    for (i, candidate) in items(&outer).iter().enumerate() {
        if i % SIGNALS_EVERY == SIGNALS_EVERY - 1 {
            py.check_signals()?;
        }
        let (id, score) = two_items(candidate, |got, t| core::not_a_pair(i, got, t))?;
        let exact_int = id.is_exact_instance_of::<PyInt>();
        if !exact_int
            && !id.is_exact_instance_of::<PyString>()
            && !is_numpy_scalar(&id)
            && !id.is_instance(hashable_type(py)?)?
        {
            return Err(type_error(
                &format!("candidates[{i}][0]"),
                format!("candidates[{i}][0] is not hashable: {}", id.repr()?),
            ));
        }
        if let Some(values) = &mut ints {
            match exact_int.then(|| as_i64(&id.as_borrowed())).flatten() {
                Some(v) => values.push(v),
                None => ints = None,
            }
        }
        // The score as a float object: the candidate's own when it is one.
        let score = if score.is_exact_instance_of::<PyFloat>() {
            score
        } else {
            let x = real_named(&score, || format!("candidates[{i}][1]"))?;
            PyFloat::new(py, x).into_any()
        };
        pairs.push((id, score));
    }
    Ok(Candidates { pairs, ints })
}

/// The dedup plan: exact-int ids hashed in Rust, any other ids interned with Python's hash/==.
fn plan_ids(py: Python<'_>, candidates: &Candidates<'_>) -> PyResult<Plan> {
    if let Some(ints) = &candidates.ints {
        return Ok(core::plan_ints_here(ints)?);
    }
    let ids = PyTuple::new(py, candidates.pairs.iter().map(|(id, _)| id))?;
    let mut interner = PyInterner::new(py, std::slice::from_ref(&ids))?;
    core::plan_with(ids.len(), |i| interner.intern(0, i))
}

/// Our TypeError `{name} must be {must}, got {shown(value)}` for a value given that is not
/// callable.
fn callable(
    value: Option<&Bound<'_, PyAny>>,
    name: &str,
    must: &str,
    shown: fn(&Bound<'_, PyAny>) -> String,
) -> PyResult<()> {
    match value {
        Some(v) if !v.is_callable() => Err(type_error(
            name,
            format!("{name} must be {must}, got {}", shown(v)),
        )),
        _ => Ok(()),
    }
}

/// The live candidates, as (id, record, score) triples, in input order (docs/semantics.md, "Candidate
/// revalidation").
///
/// - `candidates`: an iterable of (id, score) pairs, best first, as the index returned them
///   (a Mapping is rejected: pass `mapping.items()`). Ids are hashable, with dict semantics
///   (`1`, `1.0` and `True` are one id); scores are real numbers, carried as float and never
///   compared, so NaN and infinities pass through.
/// - `lookup`: an object with `get(id)` (a Mapping qualifies; a missing key drops the candidate)
///   and optionally `get_many(ids)`. When `get_many` exists it is called ONCE with a fresh list of
///   the unique ids in first-seen order and must return a Mapping id -> record or None (anything
///   else is a TypeError: a bug of the lookup); ids it holds but nobody asked for are ignored. If
///   it raises an `Exception`, `get` is called once per candidate instead, duplicates included; an
///   `Exception` from `get` drops that candidate. BaseExceptions (KeyboardInterrupt, SystemExit)
///   always propagate. A None record drops the candidate.
/// - Every occurrence of a duplicate id is kept with its own score, in input order, never
///   re-sorted; each result carries the candidate's own id object.
/// - `where(record)`: the in-engine filter, called on each live record in input order; a falsy
///   answer drops it, an exception propagates.
/// - `limit`: None or an int >= 0; the walk (per-id `get` calls and `where` calls) stops once
///   `limit` results are kept. No candidates, or `limit=0`: the lookup is not called at all.
///
/// Bad arguments raise TypeError/ValueError naming the argument or the candidate's position,
/// before the lookup is called.
#[pyfunction]
#[pyo3(
    signature = (candidates, lookup, *, r#where=None, limit=None),
    text_signature = "(candidates, lookup, *, where=None, limit=None)"
)]
pub fn revalidate<'py>(
    py: Python<'py>,
    candidates: &Bound<'py, PyAny>,
    lookup: &Bound<'py, PyAny>,
    r#where: Option<Bound<'py, PyAny>>,
    limit: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyList>> {
    // 1. Arguments, in signature order.
    let candidates = extract_candidates(candidates)?;
    let get = lookup
        .getattr_opt(intern!(py, "get"))?
        .filter(|g| g.is_callable());
    let get = get.ok_or_else(|| {
        let got = type_name(lookup);
        let message = format!("lookup must have a get(id) method (or be a Mapping), got {got}");
        type_error("lookup", message)
    })?;
    let get_many = lookup.getattr_opt(intern!(py, "get_many"))?;
    callable(get_many.as_ref(), "lookup.get_many", "callable", type_name)?;
    callable(r#where.as_ref(), "where", "callable or None", describe)?;
    let limit = limit.map(|l| integer(&l, "limit", 0)).transpose()?;

    // 2. The walk (`core::revalidate`): the lookup, `where` and the results are Python's.
    let plan = plan_ids(py, &candidates)?;
    let get_many = get_many.map(|get_many| {
        move |pairs: &[(Bound<'py, PyAny>, Bound<'py, PyAny>)], first: &[u32]| {
            let unique = PyList::new(py, first.iter().map(|&p| &pairs[p as usize].0))?;
            let found = match get_many.call1((&unique,)) {
                Ok(found) => found,
                Err(e) if e.is_instance_of::<PyException>(py) => return Ok(None), // per id
                Err(e) => return Err(e),
            };
            if !found.is_instance(mapping_type(py)?)? {
                return Err(type_error(
                    "lookup.get_many",
                    format!(
                        "lookup.get_many must return a mapping id -> record or None, got {}",
                        type_name(&found)
                    ),
                ));
            }
            let dict = found.cast_exact::<PyDict>().ok();
            // (The list passed is the lookup's to keep.)
            let records = first.iter().map(|&p| {
                let id = &pairs[p as usize].0;
                let record = match dict {
                    Some(d) => d.get_item(id)?,
                    None => Some(found.call_method1(intern!(py, "get"), (id,))?),
                };
                Ok(record.filter(|r| !r.is_none()))
            });
            records.collect::<PyResult<_>>().map(Some)
        }
    });
    // A None, or an `Exception` (not a bare BaseException such as KeyboardInterrupt), drops it.
    let get = |(id, _): &(Bound<'py, PyAny>, Bound<'py, PyAny>)| match get.call1((id,)) {
        Ok(record) => Ok((!record.is_none()).then_some(record)),
        Err(e) if e.is_instance_of::<PyException>(py) => Ok(None),
        Err(e) => Err(e),
    };
    let keep = |(id, score), record: Bound<'py, PyAny>| {
        if let Some(w) = &r#where {
            if !w.call1((&record,))?.is_truthy()? {
                return Ok(None);
            }
        }
        REVALIDATED
            .make_array(py, [id, record, score], true)
            .map(Some)
    };
    let pairs = candidates.pairs;
    PyList::new(
        py,
        core::revalidate(&plan, pairs, limit, get_many, get, keep)?,
    )
}

// --- revalidate_batch ------------------------------------------------------------------------------

/// The live candidates of Q queries at once (docs/semantics.md, "Candidate revalidation").
///
/// - `ids`: (Q, P) integer array (or nested lists), padded with `pad`; int64 natively, other
///   integer dtypes are converted (uint64 when every value fits in int64, else ValueError; bool
///   is not an integer dtype: TypeError).
/// - `scores`: (Q, P) real array (integer or float dtype), converted to float64; NaN is carried.
/// - `is_live(ids)`: called ONCE with a 1-D int64 array of the batch's unique ids in first-seen
///   order, row by row, pads never included; it returns a boolean array (dtype bool, else
///   TypeError) of the same length (else ValueError). Not called when the batch holds no id or
///   `limit` is 0; its exceptions propagate.
/// - Row q keeps its live candidates in input order (duplicates included), truncated to `limit`.
///
/// Returns `RevalidatedBatch(ids, scores, counts)`: ids (Q, W) int64 padded with `pad`, scores
/// (Q, W) float64 padded with NaN, counts (Q,) int64. W is `min(limit, P)` with a limit, else
/// the largest count. The plan and the per-row compaction run in Rust with the GIL released
/// (the compaction in parallel); the inputs are copied first, never modified.
#[pyfunction]
#[pyo3(
    signature = (ids, scores, is_live, *, limit=None, pad=Arg::Missing),
    text_signature = "(ids, scores, is_live, *, limit=None, pad=-1)"
)]
pub fn revalidate_batch<'py>(
    py: Python<'py>,
    ids: &Bound<'py, PyAny>,
    scores: &Bound<'py, PyAny>,
    is_live: &Bound<'py, PyAny>,
    limit: Option<Bound<'py, PyAny>>,
    pad: Arg<'py>,
) -> PyResult<Bound<'py, PyAny>> {
    // 1. Arguments, in signature order.
    let (ids, shape) = matrix(
        ids,
        "ids",
        b"iu",
        "an integer array (an integer dtype that fits in int64)",
    )?;
    if ids.dtype().kind() == b'u' && ids.dtype().itemsize() == 8 && !ids.is_empty() {
        let max = ids.call_method0(intern!(py, "max"))?;
        core::check_ids_fit(max.extract()?, || repr(&max))?;
    }
    let (scores, _) = matrix(
        scores,
        "scores",
        b"iuf",
        "a real array (integer or float dtype)",
    )?;
    core::check_shapes(scores.shape(), ids.shape())?;
    callable(Some(is_live), "is_live", "callable", describe)?;
    let limit = limit.map(|l| integer(&l, "limit", 0)).transpose()?;
    let pad = pad.or(crate::batch::PAD, |v| {
        Ok(core::pad(integer_setting(v, "pad")?)?)
    })?;

    // int64 ids and float32/float64 scores are read in place (other dtypes are converted by
    // numpy first), through read-only borrows held across the GIL-free work: like numpy's own
    // GIL-free loops, the call assumes no other thread writes them meanwhile (if one does, the
    // result is unspecified, but nothing panics or reads out of bounds).
    let ids = contiguous::<i64>(&ids)?;
    let ids = slice(&ids)?;
    if scores.dtype().kind() == b'f' && scores.dtype().itemsize() == 4 {
        revalidate_rows::<f32>(py, ids, &scores, shape, pad, is_live, limit)
    } else {
        revalidate_rows::<f64>(py, ids, &scores, shape, pad, is_live, limit)
    }
}

/// `core::revalidate_batch` of the batch of `ids` and `scores` read as `S` (the plan and the
/// compaction with the GIL released), and the result arrays.
fn revalidate_rows<'py, S: numpy::Element + Copy + Into<f64> + Sync>(
    py: Python<'py>,
    ids: &[i64],
    scores: &Bound<'py, PyUntypedArray>,
    (n_rows, n_cols): (usize, usize),
    pad: i64,
    is_live: &Bound<'py, PyAny>,
    limit: Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    let scores = contiguous::<S>(scores)?;
    let batch = core::Batch::new(ids, slice(&scores)?, n_rows, n_cols, pad)?;
    let signals = Signals::new(py)?;
    let out = core::revalidate_batch(
        &batch,
        limit,
        &signals.cancel(),
        &Detached(py, &signals),
        |unique| {
            let n_unique = unique.len();
            live_mask(&is_live.call1((PyArray1::from_vec(py, unique),))?, n_unique)
        },
    )?;
    let shape = (out.counts.len(), out.width);
    REVALIDATED_BATCH.make(
        py,
        [
            matrix_of(py, shape, out.ids)?,
            matrix_of(py, shape, out.scores)?,
            out.counts.into_pyarray(py).into_any(),
        ],
    )
}

/// A (rows, columns) array of `values`.
fn matrix_of<T: numpy::Element>(
    py: Python<'_>,
    shape: (usize, usize),
    values: Vec<T>,
) -> PyResult<Bound<'_, PyAny>> {
    let array =
        Array2::from_shape_vec(shape, values).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(array.into_pyarray(py).into_any())
}

/// `is_live`'s answer: a boolean array with one entry per unique id, copied.
fn live_mask(answer: &Bound<'_, PyAny>, n_unique: usize) -> PyResult<Vec<bool>> {
    let py = answer.py();
    let array = numpy(py)?
        .call_method1(intern!(py, "asarray"), (answer,))?
        .cast_into::<PyUntypedArray>()?;
    if array.dtype().kind() != b'b' {
        return Err(type_error(
            "is_live",
            format!(
                "is_live must return a boolean array, got dtype {}",
                array.dtype().str()?
            ),
        ));
    }
    core::check_live_shape(array.shape(), n_unique)?;
    let typed = borrow::<bool>(&array)?;
    Ok(match typed.as_slice() {
        Ok(s) => s.to_vec(),
        Err(_) => typed.as_array().iter().copied().collect(),
    })
}
