//! One query's fusion: its lists and raw scores extracted (the checks the core makes of a call's
//! inputs, in order: lists, the plan, scores, boost), fused by the engine, and the page built as
//! `Hit` objects; a list of queries (`Fusion.many`) is a loop of it.

use std::sync::OnceLock;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFloat, PyList, PyString, PyTuple};

use numpy::{PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};

use super::args::{
    as_tuple, describe, items, mapping_type, plain_real, private_tuple, real, real_named, repr,
    two_items,
};
use super::arrays::{contiguous, slice};
use super::errors::{fusion_error, located, type_error};
use super::gc;
use super::keys::{exact_ints, PyInterner};
use super::layout::{float_value, list_items, tuple_items};
use super::results::{is_atomic, CONTRIBUTION, HIT};
use super::signals::{self, Signals};
use crate::error::{At, Error};
use crate::fusion::params;
use crate::fusion::{Caller, Engine, Firsts, Fusion, Interned, Nothing, Plan, Rows, Scores};

/// One query's input: its lists (tuples: they cannot change while the core reads them) and,
/// per list, the caller's raw scores (only carried into traces).
pub struct Query<'py> {
    pub lists: Vec<Bound<'py, PyTuple>>,
    pub raw_scores: Vec<Option<Vec<f64>>>,
}

/// `lists`: an iterable of iterables of keys.
pub fn extract_lists<'py>(lists: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyTuple>>> {
    let py = lists.py();
    let mut out = Vec::new();
    let mut items = 0;
    for (i, l) in as_tuple(lists, "lists")?.iter().enumerate() {
        let l = private_tuple(&l, || format!("lists[{i}]"))?;
        items += l.len();
        out.push(l);
        // Long lists take a while to copy: signals are checked between them.
        if items >= DETACH_MIN_ITEMS {
            check_signals_or_free(py, &mut out)?;
        }
    }
    Ok(out)
}

/// Runs the signal handlers; when one raised, the objects this call made so far (`made`: copies
/// of lists, hits) are freed on another thread (`signals::free_later`), so that the call raises
/// at once.
fn check_signals_or_free<'py, T>(py: Python<'py>, made: &mut Vec<Bound<'py, T>>) -> PyResult<()> {
    py.check_signals().inspect_err(|_| {
        let made = made.drain(..).map(|o| o.into_any().unbind()).collect();
        signals::free_later(py, made);
    })
}

/// `scores=`: per list, None or the list's raw scores (reals, not NaN), aligned with the list. A
/// method whose normalisation reads scores needs them for every list it reads.
pub fn extract_raw_scores(
    scores: Option<&Bound<'_, PyAny>>,
    lists: &[Bound<'_, PyTuple>],
    plan: &Plan,
) -> PyResult<Vec<Option<Vec<f64>>>> {
    let raw = raw_scores(scores, lists, plan.reads_scores())?;
    plan.check_scores_given(|i| raw[i].is_some())?;
    Ok(raw)
}

fn raw_scores(
    scores: Option<&Bound<'_, PyAny>>,
    lists: &[Bound<'_, PyTuple>],
    read: bool,
) -> PyResult<Vec<Option<Vec<f64>>>> {
    let n = lists.len();
    let mut raw_scores = vec![None; n];
    let Some(s) = scores.filter(|s| !s.is_none()) else {
        return Ok(raw_scores);
    };
    let s = as_tuple(s, "scores")?;
    params::scores_len(s.len(), n)?;
    for (i, item) in s.iter().enumerate() {
        if item.is_none() {
            continue;
        }
        if let Some(values) = exact_reals(&item, i, lists[i].len(), read) {
            raw_scores[i] = Some(values?);
            continue;
        }
        if let Some(values) = float_array(&item)? {
            params::list_scores_len(i, values.len(), lists[i].len())?;
            let raw = values.into_iter().enumerate();
            let raw = raw.map(|(j, x)| params::raw_score(x, read, i, j));
            raw_scores[i] = Some(raw.collect::<Result<_, _>>()?);
            continue;
        }
        let mut copy = vec![private_tuple(&item, || format!("scores[{i}]"))?];
        params::list_scores_len(i, copy[0].len(), lists[i].len())?;
        let mut raw = Vec::with_capacity(copy[0].len());
        for j in 0..copy[0].len() {
            // A long list, read with the GIL held: signals are checked as it goes.
            if j % SIGNALS_EVERY == SIGNALS_EVERY - 1 {
                check_signals_or_free(item.py(), &mut copy)?;
            }
            let value = real_named(&items(&copy[0])[j], || format!("scores[{i}][{j}]"))?;
            raw.push(params::raw_score(value, read, i, j)?);
        }
        raw_scores[i] = Some(raw);
    }
    Ok(raw_scores)
}

/// The raw scores of list `i` (of `len` keys) when `scores[i]` is an exact list of exact floats
/// and ints (see [`plain_real`]) shorter than `SIGNALS_EVERY`, checked as `raw_scores` checks
/// them: read in place, so the list needs no copy. Nothing of Python's runs while they are
/// read, until an int overflows a float (its exception is made, then the list is never read
/// again). None for any other value.
fn exact_reals(
    item: &Bound<'_, PyAny>,
    i: usize,
    len: usize,
    read: bool,
) -> Option<Result<Vec<f64>, Error>> {
    let list = item.cast_exact::<PyList>().ok()?;
    // SAFETY: read while nothing of Python's runs (above), the first failure ending the reads.
    let items = unsafe { list_items(list) }?;
    if items.len() >= SIGNALS_EVERY {
        return None;
    }
    if let Err(e) = params::list_scores_len(i, items.len(), len) {
        return Some(Err(e));
    }
    let mut values = Vec::with_capacity(items.len());
    for (j, x) in items.iter().enumerate() {
        match params::raw_score(plain_real(x)?, read, i, j) {
            Ok(v) => values.push(v),
            Err(e) => return Some(Err(e)),
        }
    }
    Some(Ok(values))
}

/// The values of `scores`' item when it is a 1-D numpy array of a real dtype (integers, floats
/// of up to 64 bits; not bool), as float64: what reading its items one by one as Python floats
/// gives, without making an object per item. None for any other value.
fn float_array(item: &Bound<'_, PyAny>) -> PyResult<Option<Vec<f64>>> {
    // (numpy is imported only for a value that may be an array.)
    let named_ndarray = |n: Bound<'_, PyString>| n.to_cow().is_ok_and(|n| n == "ndarray");
    if item.is_instance_of::<PyList>() || !item.get_type().name().is_ok_and(named_ndarray) {
        return Ok(None);
    }
    let Ok(array) = item.cast_exact::<PyUntypedArray>() else {
        return Ok(None);
    };
    let dtype = array.dtype();
    let real = match dtype.kind() {
        b'f' => dtype.itemsize() <= 8,
        b'i' | b'u' => true,
        _ => false,
    };
    if array.ndim() != 1 || !real {
        return Ok(None);
    }
    Ok(Some(slice(&contiguous::<f64>(array)?)?.to_vec()))
}

fn is_finite_float(value: &Bound<'_, PyAny>) -> bool {
    value
        .cast_exact::<PyFloat>()
        .is_ok_and(|f| float_value(f).is_finite())
}

/// `boost=` of a call of `fusion`: both or neither with `boost_weight`; a mapping key -> finite
/// real, its values as floats (in a new dict).
pub fn extract_boost<'py>(
    boost: Option<&Bound<'py, PyAny>>,
    fusion: &Fusion,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    let boost = boost.filter(|b| !b.is_none());
    fusion.check_boost(boost.is_some())?;
    let Some(b) = boost else {
        return Ok(None);
    };
    let py = b.py();
    if !b.is_instance(mapping_type(py)?)? {
        return Err(type_error(
            "boost",
            format!("boost must be a mapping key -> value, got {}", describe(b)),
        ));
    }
    if let Ok(dict) = b.cast_exact::<PyDict>() {
        // A dict of atomic keys (whose hash and `==` are Python's own: none runs a line of
        // Python, so skipping them cannot be seen) and finite floats, copied as it is. Nothing
        // here runs Python code, so the dict cannot change while it is read.
        let plain = |(key, value): (Bound<'_, PyAny>, Bound<'_, PyAny>)| {
            is_atomic(&key) && is_finite_float(&value)
        };
        if dict.iter().all(plain) {
            return Ok(Some(dict.copy()?));
        }
    }
    let values = PyDict::new(py);
    for item in b.call_method0("items")?.try_iter()? {
        let (key, value) = two_items(&item?, params::not_a_boost_pair)?;
        if is_finite_float(&value) {
            values.set_item(&key, &value)?; // (the name of an item is made only for its error)
            continue;
        }
        let name = format!("boost[{}]", repr(&key));
        let x = params::finite("boost", &name, real(&value, &name)?)?;
        values.set_item(&key, x)?;
    }
    Ok(Some(values))
}

/// A failure inside the scan of Python keys: the core's, or a key's own exception.
enum Failed {
    Core(Error),
    Py(PyErr),
}

impl From<Error> for Failed {
    fn from(e: Error) -> Self {
        Failed::Core(e)
    }
}

/// What a Python call adds to its fusion: the boost's values (a dict looked up with Python's
/// `==`, signals checked as it goes) and, for keys that are not exact ints, the order of tied
/// keys by Python's own `sorted`.
struct PyCaller<'a, 'py> {
    py: Python<'py>,
    lists: &'a [Bound<'py, PyTuple>],
    boost: Option<&'a Bound<'py, PyDict>>,
    looked_up: usize,
    orders_ties: bool,
}

impl Caller<Failed> for PyCaller<'_, '_> {
    fn boost(&mut self, _: i64, (l, p): (u32, u32)) -> Result<Option<f64>, Failed> {
        let Some(values) = self.boost else {
            return Ok(None);
        };
        self.looked_up += 1;
        if self.looked_up % SIGNALS_EVERY == 0 {
            self.py.check_signals().map_err(Failed::Py)?;
        }
        // SAFETY: (l, p) is a place the scan read.
        let key = unsafe { items(self.lists.get_unchecked(l as usize)).get_unchecked(p as usize) };
        let value = values.get_item(key).map_err(Failed::Py)?;
        value
            .map(|v| v.extract::<f64>())
            .transpose()
            .map_err(Failed::Py)
    }

    fn orders_ties(&self) -> bool {
        self.orders_ties
    }

    fn order_ties(&mut self, group: &mut [u32], firsts: &Firsts<'_>) -> Result<(), Failed> {
        let ordered = (|| {
            let sorted = self.py.import("builtins")?.getattr("sorted")?;
            let keys = group
                .iter()
                .map(|&id| {
                    let (l, p) = firsts.get(id);
                    self.lists[l as usize].get_item(p as usize)
                })
                .collect::<PyResult<Vec<_>>>()?;
            sort_by_key(self.py, &sorted, group, keys)
        })();
        ordered.map_err(Failed::Py)
    }
}

/// Inputs below this many items are fused without releasing the GIL (releasing and taking it
/// back costs more than the work), nor checking for signals.
const DETACH_MIN_ITEMS: usize = 1 << 14;

/// Work done with the GIL held checks for signals every this many items (keys looked up, hits
/// built).
const SIGNALS_EVERY: usize = 1 << 12;

/// The Python face of the core's [`Engine`]: a query's Python lists fused, its page built as
/// `Hit`s.
impl Engine {
    /// Fuses one query and builds its page of hits. Exact-int keys run with the GIL released
    /// (when the input is large); any other keys are interned with the GIL held (their
    /// `__hash__`/`__eq__` are Python), then ranked with it released — or, with
    /// tie_break="key", held (tied keys are compared by Python). The boost's values are looked
    /// up with the GIL held. A large input checks for signals as it goes (`super::signals`):
    /// Ctrl-C raises `KeyboardInterrupt` within milliseconds, and nothing is returned.
    pub fn fuse<'py>(
        &mut self,
        py: Python<'py>,
        query: &Query<'py>,
        plan: &Plan,
        boost: &Option<Bound<'py, PyDict>>,
        trace: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let lists = &query.lists;
        let read: Vec<usize> = (0..lists.len())
            .map(|i| plan.read_len(i, lists[i].len()))
            .collect();
        let scores: Vec<Option<&[f64]>> = query.raw_scores.iter().map(|s| s.as_deref()).collect();
        let Engine { ws, table, .. } = self;
        let large = read.iter().sum::<usize>() >= DETACH_MIN_ITEMS;
        let signals = if large {
            Signals::new(py)?
        } else {
            Signals::none()
        };
        let cancel = signals.cancel();
        let ints = exact_ints(py, lists, &read)?;
        let mut caller = PyCaller {
            py,
            lists,
            boost: boost.as_ref(),
            looked_up: 0,
            // Exact ints are ordered by value in Rust; other keys by Python.
            orders_ties: ints.is_none(),
        };
        let fused = if let Some(ints) = &ints {
            let rows: Vec<&[i64]> = ints.iter().map(Vec::as_slice).collect();
            let mut keys = Rows::new(&rows, None, table);
            if large && boost.is_none() {
                // Nothing of Python's in the way: every step with the GIL released.
                py.detach(|| ws.run(plan, &mut keys, &scores, &mut Nothing, &cancel))
                    .map_err(Failed::Core)
            } else {
                ws.run(plan, &mut keys, &scores, &mut caller, &cancel)
            }
        } else {
            let mut interner = PyInterner::new(py, lists)?;
            let mut keys =
                Interned::new(&read, |l, p, _| interner.intern(l, p).map_err(Failed::Py));
            ws.run(plan, &mut keys, &scores, &mut caller, &cancel)
        };
        signals.raise()?;
        match fused {
            Ok(()) => {}
            Err(Failed::Core(e)) => return Err(fusion_error(py, e, lists)),
            Err(Failed::Py(e)) => return Err(e),
        }
        self.hits(py, query, plan, &scores, trace)
    }

    /// The Python hits of the page just fused, signals checked as they are built (an
    /// interrupted page's hits are freed on another thread: `signals::free_later`).
    fn hits<'py>(
        &mut self,
        py: Python<'py>,
        query: &Query<'py>,
        plan: &Plan,
        scores: Scores<'_>,
        trace: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        if trace {
            self.ws.trace(plan, scores, &mut self.trace);
        }
        let page = self.ws.page();
        let none = py.None().into_bound(py);
        let float_or_none = |x: f64| {
            if x.is_nan() {
                none.clone()
            } else {
                PyFloat::new(py, x).into_any()
            }
        };
        let (weights, list_indices): (Vec<_>, Vec<_>) = if trace {
            plan.weights
                .iter()
                .enumerate()
                .map(|(i, &w)| {
                    Ok((
                        PyFloat::new(py, w).into_any(),
                        i.into_pyobject(py)?.into_any(),
                    ))
                })
                .collect::<PyResult<Vec<_>>>()?
                .into_iter()
                .unzip()
        } else {
            (Vec::new(), Vec::new())
        };
        let mut hits = Vec::with_capacity(page.len());
        let paused = gc::Paused::for_objects(py, page.len())?;
        for (b, block) in page.chunks(SIGNALS_EVERY).enumerate() {
            if b > 0 {
                check_signals_or_free(py, &mut hits)?;
            }
            for (i, &id) in block.iter().enumerate() {
                let j = b * SIGNALS_EVERY + i;
                let (list, position) = self.ws.first_seen(id);
                // SAFETY: (list, position) is a place the scan read.
                let key = unsafe {
                    items(query.lists.get_unchecked(list as usize)).get_unchecked(position as usize)
                };
                let score = PyFloat::new(py, self.ws.score(id)).into_any();
                if !trace {
                    let key = key.to_owned();
                    let tracked = !is_atomic(&key);
                    hits.push(HIT.make_array(py, [key, score], tracked)?);
                    continue;
                }
                let contributions = self.trace.hit(j);
                // SAFETY: a new tuple of that length; each slot is set once below, with a new
                // reference it steals (a tuple dropped half-filled releases only what it holds).
                let explained = unsafe {
                    Bound::from_owned_ptr_or_err(
                        py,
                        ffi::PyTuple_New(contributions.len() as ffi::Py_ssize_t),
                    )?
                };
                for (i, c) in contributions.iter().enumerate() {
                    let list = c.list as usize;
                    let fields = [
                        list_indices[list].clone(),
                        c.rank().into_pyobject(py)?.into_any(),
                        weights[list].clone(),
                        PyFloat::new(py, c.value).into_any(),
                        float_or_none(c.raw),
                    ];
                    let item = if c.normalized.is_nan() {
                        CONTRIBUTION.make_array(py, fields, false)? // `normalized` left unset: None
                    } else {
                        let [a, b, c2, d, e] = fields;
                        let normalized = PyFloat::new(py, c.normalized).into_any();
                        CONTRIBUTION.make_array(py, [a, b, c2, d, e, normalized], false)?
                    };
                    // SAFETY: `explained` is a new tuple of `contributions.len()` slots, all NULL;
                    // `i` is in range (a record was made above: the items' offset is known).
                    unsafe {
                        *tuple_items(explained.as_ptr()).add(i) = item.into_ptr();
                    }
                }
                let applied = [
                    self.trace.factors[j],
                    self.trace.divisors[j],
                    self.trace.boosts[j],
                ];
                let hit = if applied.iter().all(|x| x.is_nan()) {
                    // factor .. boost left unset: None
                    HIT.make_array(py, [key.to_owned(), score, explained], true)
                } else {
                    let [factor, divisor, boost] = applied.map(float_or_none);
                    HIT.make_array(
                        py,
                        [key.to_owned(), score, explained, factor, divisor, boost],
                        true,
                    )
                };
                hits.push(hit?);
            }
        }
        let hits = PyList::new(py, hits);
        drop(paused);
        hits
    }
}

/// Sorts a group of tied keys with Python's own `sorted` (the same comparisons, in the same
/// order, as the reference), so incomparable keys raise the same TypeError.
fn sort_by_key(
    py: Python<'_>,
    sorted: &Bound<'_, PyAny>,
    group: &mut [u32],
    keys: Vec<Bound<'_, PyAny>>,
) -> PyResult<()> {
    let keys = PyList::new(py, keys)?;
    let kwargs = pyo3::types::PyDict::new(py);
    kwargs.set_item("key", keys.getattr("__getitem__")?)?;
    let order: Vec<usize> = sorted
        .call(
            (pyo3::types::PyRange::new(py, 0, group.len() as isize)?,),
            Some(&kwargs),
        )
        .map_err(|e| incomparable_ties(py, e))?
        .extract()?;
    let before = group.to_vec();
    for (slot, &i) in group.iter_mut().zip(&order) {
        *slot = before[i];
    }
    Ok(())
}

/// A TypeError from comparing tied keys, re-raised naming `tie_break` (the original as cause).
fn incomparable_ties(py: Python<'_>, e: PyErr) -> PyErr {
    if !e.is_instance_of::<pyo3::exceptions::PyTypeError>(py) {
        return e;
    }
    let err = type_error(
        "tie_break",
        format!(
            "tie_break='key': tied keys cannot be compared ({})",
            e.value(py)
        ),
    );
    err.set_cause(py, Some(e));
    err
}

/// `fusion(lists, scores, boost)`: one query fused by an engine of this thread's, its plan
/// taken from `kept` (a `Fusion`'s: see `Fusion::plan_kept`) when given.
pub fn call<'py>(
    py: Python<'py>,
    fusion: &Fusion,
    kept: Option<&OnceLock<Plan>>,
    lists: &Bound<'py, PyAny>,
    scores: Option<&Bound<'py, PyAny>>,
    boost: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyList>> {
    let mut engine = Engine::take(fusion.trace);
    let own = OnceLock::new();
    let kept = kept.unwrap_or(&own);
    let out = fuse_query(&mut engine, py, fusion, kept, lists, scores, boost);
    engine.give_back();
    out
}

/// One query fused by `engine`, its inputs checked in order (the lists, the plan of their
/// number (kept in `kept`), the scores, the boost). On an error, a large input's copies are
/// freed on another thread so that the call raises at once (Ctrl-C, say).
fn fuse_query<'py>(
    engine: &mut Engine,
    py: Python<'py>,
    fusion: &Fusion,
    kept: &OnceLock<Plan>,
    lists: &Bound<'py, PyAny>,
    scores: Option<&Bound<'py, PyAny>>,
    boost: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyList>> {
    let mut query = Query {
        lists: extract_lists(lists)?,
        raw_scores: Vec::new(),
    };
    let mut fuse = |query: &mut Query<'py>| {
        let plan = fusion.plan_kept(query.lists.len(), kept)?;
        query.raw_scores = extract_raw_scores(scores, &query.lists, &plan)?;
        let boost = extract_boost(boost, fusion)?;
        engine.fuse(py, query, &plan, &boost, fusion.trace)
    };
    let out = fuse(&mut query);
    if out.is_err() && query.lists.iter().map(|l| l.len()).sum::<usize>() >= DETACH_MIN_ITEMS {
        let Query { lists, raw_scores } = query;
        signals::free_later(
            py,
            lists.into_iter().map(|l| l.into_any().unbind()).collect(),
        );
        crate::pool::free_later(raw_scores);
    }
    out
}

/// `[fusion(lists, scores=scores[q]) for q, lists in enumerate(queries)]`, fused one after the
/// other on the calling thread with one engine (a loop of calls is as fast: the work per query
/// is small), `threads` only checked. Our errors of query q are located there
/// (`queries[q]: ...`); exceptions raised by the keys themselves propagate unchanged.
pub fn many<'py>(
    py: Python<'py>,
    fusion: &Fusion,
    queries: &Bound<'py, PyAny>,
    scores: Option<&Bound<'py, PyAny>>,
    threads: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyList>> {
    let queries = as_tuple(queries, "queries")?;
    let scores = match scores.filter(|s| !s.is_none()) {
        None => None,
        Some(s) => {
            let s = as_tuple(s, "scores")?;
            params::queries_scores_len(s.len(), queries.len())?;
            Some(s)
        }
    };
    super::arrays::thread_count(threads.cloned())?;
    fusion.check_boost(false)?;
    let mut engine = Engine::take(fusion.trace);
    let kept = OnceLock::new(); // (the queries' plan, while they have the same number of lists)
    let out = PyList::empty(py);
    let mut fuse_all = || {
        for (q, lists) in queries.iter().enumerate() {
            // Short fusions one after the other, the GIL held: signals are checked between them.
            py.check_signals()?;
            let raw = scores.as_ref().map(|s| s.get_item(q)).transpose()?;
            let one = fuse_query(&mut engine, py, fusion, &kept, &lists, raw.as_ref(), None);
            out.append(one.map_err(|e| located(py, e, At::Query(q)))?)?;
        }
        Ok::<_, PyErr>(())
    };
    let done = fuse_all();
    engine.give_back();
    done.map(|()| out)
}
