//! `revalidate`, `pool_size` and `revalidate_batch`: arguments checked in the reference's order,
//! the plan, rebuild and compaction in Rust (`crate::revalidate`), Python called only for the
//! lookup, `where` and `is_live`.

use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray1, PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use super::args::{
    as_tuple, describe, index, integer, integer_setting, items_of, mapping_type, real, type_name,
    Arg,
};
use super::arrays::{borrow, contiguous, matrix, numpy, slice};
use super::errors::{type_error, value_error};
use super::keys::{as_i64, hashable_type, PyInterner};
use super::results::{REVALIDATED, REVALIDATED_BATCH};
use super::signals::Signals;
use crate::fusion::IdTable;
use crate::revalidate::{self as core, Plan};

/// Is `exc` an `Exception` (as opposed to a bare BaseException such as KeyboardInterrupt)?
fn is_exception(py: Python<'_>, exc: &PyErr) -> bool {
    exc.is_instance_of::<PyException>(py)
}

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
        Arg::Missing => core::MULTIPLIER as usize,
        Arg::Given(v) => integer(v, "multiplier", 1)?,
    };
    let pre = filtering.is_instance_of::<PyString>() && filtering.eq("pre")?;
    // `integer` saturates beyond i64; such sizes (and overflowing products) are computed exactly
    // with Python ints, as the reference does.
    let fits = |x: usize| x <= i64::MAX as usize;
    if fits(n) && fits(m) {
        if let Some(size) = core::pool_size(n as u64, pre, m as u64) {
            return Ok(size.into_pyobject(py)?.into_any());
        }
    }
    let limit = index(limit, "limit")?;
    if pre {
        return Ok(limit);
    }
    match multiplier {
        Arg::Missing => limit.mul(core::MULTIPLIER),
        Arg::Given(v) => limit.mul(index(&v, "multiplier")?),
    }
}

// --- revalidate ------------------------------------------------------------------------------------

/// One candidate: an iterable of exactly two items (str/bytes are not pairs).
fn pair<'py>(
    value: &Bound<'py, PyAny>,
    i: usize,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    if let Ok(t) = value.cast_exact::<PyTuple>() {
        if t.len() == 2 {
            // SAFETY: a tuple of two items.
            return unsafe {
                Ok((
                    t.get_borrowed_item_unchecked(0).to_owned(),
                    t.get_borrowed_item_unchecked(1).to_owned(),
                ))
            };
        }
    }
    let name = format!("candidates[{i}]");
    let items = items_of(value, |_| {
        let message = format!(
            "{name} must be an (id, score) pair, got {}",
            describe(value)
        );
        type_error(&name, message)
    })?;
    if items.len() != 2 {
        let message = format!(
            "{name} must be an (id, score) pair, got {} items",
            items.len()
        );
        return Err(value_error(&name, message));
    }
    // SAFETY: a tuple of two items.
    unsafe {
        Ok((
            items.get_borrowed_item_unchecked(0).to_owned(),
            items.get_borrowed_item_unchecked(1).to_owned(),
        ))
    }
}

/// The candidates' ids, their values when every one is an exact int that fits in i64, and
/// their scores (float objects), checked like the reference.
struct Candidates<'py> {
    ids: Vec<Bound<'py, PyAny>>,
    ints: Option<Vec<i64>>,
    scores: Vec<Bound<'py, PyAny>>,
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
    let mut ids = Vec::with_capacity(outer.len());
    let mut ints = Some(Vec::with_capacity(outer.len()));
    let mut scores = Vec::with_capacity(outer.len());
    for i in 0..outer.len() {
        if i % SIGNALS_EVERY == SIGNALS_EVERY - 1 {
            py.check_signals()?;
        }
        // SAFETY: i < len.
        let candidate = unsafe { outer.get_borrowed_item_unchecked(i) };
        let (id, score) = pair(&candidate, i)?;
        let exact_int = id.is_exact_instance_of::<PyInt>();
        if !exact_int
            && !id.is_exact_instance_of::<PyString>()
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
        ids.push(id);
        // The score as a float object: the candidate's own when it is one.
        scores.push(if score.is_exact_instance_of::<PyFloat>() {
            score
        } else {
            PyFloat::new(py, real(&score, &format!("candidates[{i}][1]"))?).into_any()
        });
    }
    Ok(Candidates { ids, ints, scores })
}

thread_local! {
    /// The table exact-int ids are planned with, kept between calls on this thread.
    static TABLE: std::cell::RefCell<IdTable> = std::cell::RefCell::new(IdTable::default());
}

/// The dedup plan: exact-int ids hashed in Rust, any other ids interned with Python's hash/==.
fn plan_ids(py: Python<'_>, candidates: &Candidates<'_>) -> PyResult<Plan> {
    if let Some(ints) = &candidates.ints {
        return Ok(TABLE.with(|t| match t.try_borrow_mut() {
            Ok(mut table) => core::plan_ints(ints, &mut table),
            Err(_) => core::plan_ints(ints, &mut IdTable::default()),
        })?);
    }
    let ids = PyTuple::new(py, &candidates.ids)?;
    let lists = std::slice::from_ref(&ids);
    let mut interner = PyInterner::new(py, lists)?;
    core::plan_with(ids.len(), |i| interner.intern(0, i))
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
    let get = match lookup.getattr_opt(intern!(py, "get"))? {
        Some(get) if get.is_callable() => get,
        _ => {
            return Err(type_error(
                "lookup",
                format!(
                    "lookup must have a get(id) method (or be a Mapping), got {}",
                    type_name(lookup)
                ),
            ))
        }
    };
    let get_many = lookup.getattr_opt(intern!(py, "get_many"))?;
    if let Some(g) = &get_many {
        if !g.is_callable() {
            return Err(type_error(
                "lookup.get_many",
                format!("lookup.get_many must be callable, got {}", type_name(g)),
            ));
        }
    }
    if let Some(w) = &r#where {
        if !w.is_callable() {
            return Err(type_error(
                "where",
                format!("where must be callable or None, got {}", describe(w)),
            ));
        }
    }
    let limit = limit.map(|l| integer(&l, "limit", 0)).transpose()?;

    // 2. The plan. No ids, or limit 0: the lookup is not called at all.
    let plan = plan_ids(py, &candidates)?;
    if !core::asks(plan.n_unique(), limit) {
        return Ok(PyList::empty(py));
    }
    let cap = limit.unwrap_or(usize::MAX);
    let mut out = Vec::new();
    // Keeps a live record unless `where` rejects it; true once `limit` are kept.
    let mut keep = |(id, score), record: Bound<'py, PyAny>| -> PyResult<bool> {
        if let Some(w) = &r#where {
            if !w.call1((&record,))?.is_truthy()? {
                return Ok(false);
            }
        }
        out.push(REVALIDATED.make_array(py, [id, record, score], true)?);
        Ok(out.len() >= cap)
    };
    let Candidates { ids, scores, .. } = candidates;

    // 3. Batch path: ONE call with the unique ids; an Exception falls back to the per-id path.
    if let Some(get_many) = get_many {
        let unique = PyList::new(py, plan.first.iter().map(|&p| &ids[p as usize]))?;
        match get_many.call1((&unique,)) {
            Ok(found) => {
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
                let get_found = intern!(py, "get");
                // The records of the unique ids (the list passed is the lookup's to keep).
                let mut records = Vec::with_capacity(plan.n_unique());
                for u in plan.first.iter().map(|&p| &ids[p as usize]) {
                    let record = match dict {
                        Some(d) => d.get_item(u)?,
                        None => Some(found.call_method1(get_found, (u,))?),
                    };
                    records.push(record.filter(|r| !r.is_none()));
                }
                // 4. The rebuild, in input order (in Rust).
                let present: Vec<bool> = records.iter().map(Option::is_some).collect();
                let filtered = r#where.is_some();
                for (p, u) in core::rebuild(&plan.slots, &present, limit, filtered) {
                    let (p, u) = (p as usize, u as usize);
                    let (Some(id), Some(score), Some(Some(record))) =
                        (ids.get(p), scores.get(p), records.get(u))
                    else {
                        // (rebuild keeps present records of candidates only: a bug, raised.)
                        let bug = "rankfusion internal error: the rebuild kept a missing record";
                        return Err(pyo3::exceptions::PyRuntimeError::new_err(bug));
                    };
                    if keep((id.clone(), score.clone()), record.clone())? {
                        break;
                    }
                }
                return PyList::new(py, out);
            }
            Err(e) if is_exception(py, &e) => {}
            Err(e) => return Err(e),
        }
    }

    // Per-id path: one get() per candidate; an Exception or None drops it.
    for (id, score) in ids.into_iter().zip(scores) {
        let record = match get.call1((&id,)) {
            Ok(r) => r,
            Err(e) if is_exception(py, &e) => continue,
            Err(e) => return Err(e),
        };
        if record.is_none() {
            continue;
        }
        if keep((id, score), record)? {
            break;
        }
    }
    PyList::new(py, out)
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
    let ids = matrix(
        ids,
        "ids",
        b"iu",
        "an integer array (an integer dtype that fits in int64)",
    )?;
    if ids.dtype().kind() == b'u' && ids.dtype().itemsize() == 8 && !ids.is_empty() {
        let max = ids.call_method0(intern!(py, "max"))?;
        if max.gt(i64::MAX)? {
            return Err(value_error(
                "ids",
                format!("ids must fit in int64, got {}", max.repr()?),
            ));
        }
    }
    let scores = matrix(
        scores,
        "scores",
        b"iuf",
        "a real array (integer or float dtype)",
    )?;
    core::check_shapes(scores.shape(), ids.shape())?;
    if !is_live.is_callable() {
        return Err(type_error(
            "is_live",
            format!("is_live must be callable, got {}", describe(is_live)),
        ));
    }
    let limit = limit.map(|l| integer(&l, "limit", 0)).transpose()?;
    let pad = pad.or(crate::batch::PAD, |v| {
        Ok(core::pad(integer_setting(v, "pad")?)?)
    })?;

    // int64 ids and float32/float64 scores are read in place (other dtypes are converted by
    // numpy first), through read-only borrows held across the GIL-free work: like numpy's own
    // GIL-free loops, the call assumes no other thread writes them meanwhile (if one does, the
    // result is unspecified, but nothing panics or reads out of bounds).
    let (n_rows, n_cols) = (ids.shape()[0], ids.shape()[1]);
    let ids = contiguous(&ids, "int64")?;
    let ids = borrow::<i64>(&ids)?;
    let ids = slice(&ids)?;
    if scores.dtype().kind() == b'f' && scores.dtype().itemsize() == 4 {
        let scores = contiguous(&scores, "float32")?;
        let scores = borrow::<f32>(&scores)?;
        let batch = core::Batch::new(ids, slice(&scores)?, n_rows, n_cols, pad)?;
        revalidate_rows(py, &batch, is_live, limit)
    } else {
        let scores = contiguous(&scores, "float64")?;
        let scores = borrow::<f64>(&scores)?;
        let batch = core::Batch::new(ids, slice(&scores)?, n_rows, n_cols, pad)?;
        revalidate_rows(py, &batch, is_live, limit)
    }
}

/// The plan (GIL released), ONE `is_live` call, then the per-row compaction (in parallel, GIL
/// released), and the result arrays.
fn revalidate_rows<'py, S: Copy + Into<f64> + Sync>(
    py: Python<'py>,
    batch: &core::Batch<'_, S>,
    is_live: &Bound<'py, PyAny>,
    limit: Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    let signals = Signals::new(py)?;
    let cancel = signals.cancel();
    let plan = py.detach(|| batch.plan(&cancel));
    signals.raise()?;
    let mut plan = plan?;
    let live = if !core::asks(plan.unique.len(), limit) {
        Vec::new()
    } else {
        let unique = std::mem::take(&mut plan.unique);
        let n_unique = unique.len();
        let answer = is_live.call1((PyArray1::from_vec(py, unique),))?;
        live_mask(&answer, n_unique)?
    };
    let out = py.detach(|| core::compact(batch, &plan, &live, limit, &cancel));
    if out.is_err() {
        crate::pool::free_later(plan); // a large plan takes a while to free
    }
    signals.raise()?;
    let out = out?;
    let shape = (out.counts.len(), out.width);
    let to_py = |e: numpy::ndarray::ShapeError| PyValueError::new_err(e.to_string());
    let ids = Array2::from_shape_vec(shape, out.ids).map_err(to_py)?;
    let scores = Array2::from_shape_vec(shape, out.scores).map_err(to_py)?;
    REVALIDATED_BATCH.make(
        py,
        [
            ids.into_pyarray(py).into_any(),
            scores.into_pyarray(py).into_any(),
            out.counts.into_pyarray(py).into_any(),
        ],
    )
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
