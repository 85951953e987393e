//! `rrf` and `rrf_many`: the lists and raw scores extracted, one query fused by the engine, the
//! page built as `Hit` objects.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyFloat, PyList, PyTuple};

use super::args::{
    as_tuple, flag, fusion_params, integer, method_params, private_tuple, query_weights, real, Arg,
    Boost,
};
use super::errors::fusion_error;
use super::gc;
use super::keys::{exact_ints, PyInterner};
use super::results::{is_atomic, tuple_items, CONTRIBUTION, HIT};
use super::signals::{self, Signals};
use crate::error::Error;
use crate::fusion::params::{self, Params, Plan, TieBreak};
use crate::fusion::{IdTable, Interned, Rows, Scores, Trace, Workspace};

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
    let mut interrupted = None;
    for (i, l) in as_tuple(lists, "lists")?.iter().enumerate() {
        let l = private_tuple(&l, &format!("lists[{i}]"))?;
        items += l.len();
        out.push(l);
        // Long lists take a while to copy: signals are checked between them.
        if items >= DETACH_MIN_ITEMS {
            if let Err(e) = py.check_signals() {
                interrupted = Some(e);
                break;
            }
        }
    }
    match interrupted {
        None => Ok(out),
        Some(e) => {
            signals::free_later(py, out.into_iter().map(|l| l.into_any().unbind()).collect());
            Err(e)
        }
    }
}

/// `scores=`: per list, None or the list's raw scores (reals, not NaN), aligned with the list. A
/// method whose normalisation reads scores needs them for every list it reads.
pub fn extract_raw_scores(
    scores: Option<Bound<'_, PyAny>>,
    lists: &[Bound<'_, PyTuple>],
    plan: &Plan,
) -> PyResult<Vec<Option<Vec<f64>>>> {
    let raw = raw_scores(scores, lists, plan.reads_scores())?;
    if plan.reads_scores() {
        for (i, s) in raw.iter().enumerate() {
            if plan.weights[i] != 0.0 && s.is_none() {
                return Err(params::scores_missing(plan.params.method, plan.norm, i).into());
            }
        }
    }
    Ok(raw)
}

fn raw_scores(
    scores: Option<Bound<'_, PyAny>>,
    lists: &[Bound<'_, PyTuple>],
    read: bool,
) -> PyResult<Vec<Option<Vec<f64>>>> {
    let n = lists.len();
    let mut raw_scores = vec![None; n];
    let Some(s) = scores.filter(|s| !s.is_none()) else {
        return Ok(raw_scores);
    };
    let s = as_tuple(&s, "scores")?;
    if s.len() != n {
        return Err(PyValueError::new_err(format!(
            "scores has {} entries for {n} lists",
            s.len()
        )));
    }
    for (i, item) in s.iter().enumerate() {
        if item.is_none() {
            continue;
        }
        let name = format!("scores[{i}]");
        let values = private_tuple(&item, &name)?;
        if values.len() != lists[i].len() {
            return Err(PyValueError::new_err(format!(
                "{name} has {} values for {} keys",
                values.len(),
                lists[i].len()
            )));
        }
        let mut raw = Vec::with_capacity(values.len());
        let mut interrupted = None;
        for (j, x) in values.iter().enumerate() {
            // A long list, read with the GIL held: signals are checked as it goes.
            if j % SIGNALS_EVERY == SIGNALS_EVERY - 1 {
                if let Err(e) = x.py().check_signals() {
                    interrupted = Some(e);
                    break;
                }
            }
            // The name is made only for an error (a float, the usual case, is read without).
            let item_name = || format!("{name}[{j}]");
            let value = match x.cast_exact::<PyFloat>() {
                Ok(f) => f.value(),
                Err(_) => real(&x, &item_name())?,
            };
            raw.push(params::raw_score(value, read, item_name)?);
        }
        if let Some(e) = interrupted {
            // Raised at once: the copy of the list is freed on another thread.
            signals::free_later(values.py(), vec![values.into_any().unbind()]);
            return Err(e);
        }
        raw_scores[i] = Some(raw);
    }
    Ok(raw_scores)
}

/// The plan of a query of `n_lists` lists; with `check`, the weights checked against them and
/// the normaliser (rrf_many, whose number of lists is only known per query).
pub fn query_plan(params: &Params, n_lists: usize, check: bool) -> Result<Plan, Error> {
    let weights = query_weights(params, n_lists);
    if check {
        if let Some(w) = &params.weights {
            params::weights_len(w.len(), n_lists)?;
        }
    }
    let normalizer = params
        .normalize
        .then(|| params::normalizer(&weights, params.k))
        .transpose()?;
    Ok(Plan::checked(params.clone(), weights, normalizer))
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

/// The reusable state of a call: the engine's workspace, an id table, a trace buffer.
pub struct Engine {
    ws: Workspace,
    table: IdTable,
    trace: Trace,
}

/// Inputs below this many items are fused without releasing the GIL (releasing and taking it
/// back costs more than the work), nor checking for signals.
const DETACH_MIN_ITEMS: usize = 1 << 14;

/// Work done with the GIL held checks for signals every this many items (keys looked up, hits
/// built).
const SIGNALS_EVERY: usize = 1 << 12;

thread_local! {
    /// Engines kept between calls on this thread (their buffers have grown already).
    static ENGINES: std::cell::RefCell<Vec<Engine>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Engine {
    /// An engine of this thread's (a new one when none is free: a key's `__eq__` may call
    /// `rrf` while an engine is in use).
    pub fn take(trace: bool) -> Self {
        let mut engine = ENGINES
            .with(|e| e.borrow_mut().pop())
            .unwrap_or_else(|| Engine {
                ws: Workspace::default(),
                table: IdTable::default(),
                trace: Trace::default(),
            });
        engine.ws.set_trace(trace);
        engine
    }

    /// Gives the engine back for the next call.
    pub fn give_back(self) {
        ENGINES.with(|e| {
            let mut engines = e.borrow_mut();
            if engines.len() < 4 {
                engines.push(self);
            }
        });
    }

    /// Fuses one query and builds its page; the engine goes back to the thread's either way.
    pub fn fuse_once<'py>(
        trace: bool,
        py: Python<'py>,
        query: &Query<'py>,
        plan: &Plan,
        boost: &Boost<'py>,
    ) -> PyResult<Bound<'py, PyList>> {
        let mut engine = Engine::take(trace);
        let out = engine.fuse(py, query, plan, boost, trace);
        engine.give_back();
        out
    }

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
        boost: &Boost<'py>,
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
        let core = |e| fusion_error(py, e, lists);
        let ints = exact_ints(py, lists, &read)?;
        if let Some(ints) = &ints {
            let rows: Vec<&[i64]> = ints.iter().map(Vec::as_slice).collect();
            let mut fuse =
                || ws.fuse_cancellable(&mut Rows::new(&rows, None, table), &scores, plan, &cancel);
            let fused = if large { py.detach(fuse) } else { fuse() };
            signals.raise()?;
            fused.map_err(core)?;
        } else {
            let mut interner = PyInterner::new(py, lists)?;
            let fused = ws.fuse_cancellable(
                &mut Interned::new(&read, |l, p, _| interner.intern(l, p).map_err(Failed::Py)),
                &scores,
                plan,
                &cancel,
            );
            signals.raise()?;
            match fused {
                Ok(()) => {}
                Err(Failed::Core(e)) => return Err(core(e)),
                Err(Failed::Py(e)) => return Err(e),
            }
        }
        if let Some(values) = boost {
            let mut looked_up = 0usize;
            let boosted = ws.boost(plan, |_, _, (l, p)| {
                looked_up += 1;
                if looked_up % SIGNALS_EVERY == 0 {
                    py.check_signals().map_err(Failed::Py)?;
                }
                let key = lists[l as usize].get_item(p as usize).map_err(Failed::Py)?;
                let value = values.get_item(key).map_err(Failed::Py)?;
                value
                    .map(|v| v.extract::<f64>())
                    .transpose()
                    .map_err(Failed::Py)
            });
            match boosted {
                Ok(()) => {}
                Err(Failed::Core(e)) => return Err(core(e)),
                Err(Failed::Py(e)) => return Err(e),
            }
        }
        // Exact ints are ordered by value in Rust; other keys by Python.
        let ranked = if plan.params.tie_break == TieBreak::Key && ints.is_none() {
            let sorted = py.import("builtins")?.getattr("sorted")?;
            ws.rank_groups(plan, &cancel, |group, firsts| {
                let keys = group
                    .iter()
                    .map(|&id| {
                        let (l, p) = firsts.get(id);
                        lists[l as usize].get_item(p as usize)
                    })
                    .collect::<PyResult<Vec<_>>>()?;
                sort_by_key(py, &sorted, group, keys)
            })
        } else if large {
            py.detach(|| ws.rank_cancellable(plan, &cancel))
                .map_err(PyErr::from)
        } else {
            ws.rank_cancellable(plan, &cancel).map_err(PyErr::from)
        };
        signals.raise()?;
        ranked?;
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
                if let Err(e) = py.check_signals() {
                    signals::free_later(py, hits.into_iter().map(Bound::unbind).collect());
                    return Err(e);
                }
            }
            for (i, &id) in block.iter().enumerate() {
                let j = b * SIGNALS_EVERY + i;
                let (list, position) = self.ws.first_seen(id);
                // SAFETY: (list, position) is a place the scan read.
                let key = unsafe {
                    query.lists[list as usize].get_borrowed_item_unchecked(position as usize)
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
                let items = unsafe {
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
                    // SAFETY: `items` is a new tuple of `contributions.len()` slots, all NULL;
                    // `i` is in range (a record was made above: the items' offset is known).
                    unsafe {
                        *tuple_items(items.as_ptr()).add(i) = item.into_ptr();
                    }
                }
                let applied = [
                    self.trace.factors[j],
                    self.trace.divisors[j],
                    self.trace.boosts[j],
                ];
                let hit = if applied.iter().all(|x| x.is_nan()) {
                    HIT.make_array(py, [key.to_owned(), score, items], true) // factor .. boost unset: None
                } else {
                    let [factor, divisor, boost] = applied.map(float_or_none);
                    HIT.make_array(
                        py,
                        [key.to_owned(), score, items, factor, divisor, boost],
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
    if !e.is_instance_of::<PyTypeError>(py) {
        return e;
    }
    let err = PyTypeError::new_err(format!(
        "tie_break='key': tied keys cannot be compared ({})",
        e.value(py)
    ));
    err.set_cause(py, Some(e));
    err
}

/// Reciprocal Rank Fusion of ranked lists (each best first): `fuse(lists, method="rrf", ...)`.
///
/// Every counted occurrence of a key at rank r (1-based position in the list as given) of list i
/// contributes weights[i] / (k + r). A key's score is the sum of its contributions added in
/// ascending order of value from 0.0, so list order never changes a score's bits. Hits are
/// ordered by score descending; ties by first appearance in the interleaved scan (rank 1 of every
/// list, then rank 2, ...) or, with tie_break="key", by the key ascending. The whole contract:
/// docs/semantics.md.
///
/// Args:
///     lists: iterables of hashable keys (dict semantics: 1, 1.0 and True are one key).
///     k: finite real >= 0.
///     weights: one finite real per list (default 1.0); a list of weight 0 is skipped entirely.
///     window: read only the first `window` items of each list (int >= 1).
///     duplicates: "first" (only the best occurrence in a list counts), "sum" (all count) or
///         "error" (ValueError).
///     tie_break: "best_rank" or "key".
///     offset, limit: the page of the ordered hits (after min_score).
///     min_score: drop hits whose returned score is below it.
///     normalize: divide scores by the best possible score (sum of w/(k+1) over positive weights).
///     scores: per list, its raw scores (reals, not NaN; or None for the list), aligned with the
///         list; carried into traces only.
///     trace: give every hit its contributions.
///
/// Returns:
///     A list of Hit, best first; a hit is the tuple (key, score).
///
/// Raises:
///     TypeError: an argument of the wrong type, an unhashable key, incomparable tied keys with
///         tie_break="key". The message names the argument.
///     ValueError: a wrong value (negative or non-finite k, weights of the wrong length or not
///         finite, window < 1, negative offset/limit, unknown duplicates/tie_break, normalize
///         without a positive weight, a repeated key with duplicates="error", a score
///         overflowing to infinity).
///     Exceptions raised by a key's __hash__ or __eq__ propagate unchanged. Empty input (no lists,
///     or only empty lists) is not an error: it gives [].
#[pyfunction]
#[pyo3(
    signature = (lists, *, k=Arg::Missing, weights=None, window=None, duplicates=Arg::Missing,
                 tie_break=Arg::Missing, offset=Arg::Missing, limit=None, min_score=None,
                 normalize=Arg::Missing, scores=None, trace=Arg::Missing),
    text_signature = "(lists, *, k=60, weights=None, window=None, duplicates='first', tie_break='best_rank', offset=0, limit=None, min_score=None, normalize=False, scores=None, trace=False)"
)]
#[allow(clippy::too_many_arguments)]
pub fn rrf<'py>(
    py: Python<'py>,
    lists: &Bound<'py, PyAny>,
    k: Arg<'py>,
    weights: Option<Bound<'py, PyAny>>,
    window: Option<Bound<'py, PyAny>>,
    duplicates: Arg<'py>,
    tie_break: Arg<'py>,
    offset: Arg<'py>,
    limit: Option<Bound<'py, PyAny>>,
    min_score: Option<Bound<'py, PyAny>>,
    normalize: Arg<'py>,
    scores: Option<Bound<'py, PyAny>>,
    trace: Arg<'py>,
) -> PyResult<Bound<'py, PyList>> {
    fuse(
        py,
        lists,
        Arg::Missing,
        None,
        k,
        weights,
        window,
        duplicates,
        tie_break,
        offset,
        limit,
        min_score,
        normalize,
        scores,
        None,
        None,
        None,
        None,
        None,
        None,
        trace,
    )
}

/// Fusion of ranked lists (each best first) by `method`: Reciprocal Rank Fusion and the rank-
/// and score-based methods of ranx, Elasticsearch, OpenSearch, Qdrant and Weaviate, traced.
/// The whole contract, every formula and edge case: docs/semantics.md, "Fusion methods".
///
/// Args:
///     lists: iterables of hashable keys, best first (dict semantics: 1, 1.0 and True are one
///         key). A key's rank is its 1-based position in the list as given.
///     method: rank-based "rrf" (default), "rbc", "isr", "log_isr", "logn_isr", "bordafuse",
///         "condorcet"; score-based "sum", "wsum", "mnz", "anz", "gmnz", "max", "min", "med",
///         "wmnz", "mixed", "dbsf", "relative_score", "arithmetic_mean", "geometric_mean",
///         "harmonic_mean".
///     norm: a score-based method's normalisation of each list: "none" (default), "min-max",
///         "max", "sum", "z-score", "l2", "rank", "borda", "dbsf". dbsf and relative_score
///         normalise with their own ("dbsf", "min-max").
///     k: rrf's constant (default 60). weights: one finite real per list, for weighted methods
///         (rrf, rbc, bordafuse, condorcet, wsum, wmnz, mixed, relative_score and the means).
///     window, duplicates, tie_break, offset, limit, min_score: as rrf's. normalize: rrf only.
///     scores: per list, its raw scores (reals, not NaN), aligned with the list: needed (and
///         finite) where a score-based method's norm reads them, carried into traces otherwise.
///     lower_is_better: per list, True when its scores are distances (negated before the norm).
///     phi: rbc's persistence (0 <= phi < 1, needed). gamma: gmnz's exponent (needed).
///     sigma: logn_isr's (0 <= sigma <= 1, default 0.01).
///     boost, boost_weight: a mapping key -> finite value and its weight w (both or neither):
///         each fused key with a value gets w * (v - min) / (max - min) added (min and max over
///         those keys; a span of 0 adds 0).
///     trace: give every hit its contributions (with raw and normalised scores) and what its
///         method did with them (factor, divisor, boost).
///
/// Returns:
///     A list of Hit, best first; a hit is the tuple (key, score).
///
/// Raises:
///     TypeError / ValueError naming the argument, as rrf; a parameter given to a method that
///     does not use it (k with "wsum", weights with "sum", norm with "rrf", ...) is a ValueError
///     naming both; a score-based method without the scores it reads is a ValueError.
#[pyfunction]
#[pyo3(
    signature = (lists, *, method=Arg::Missing, norm=None, k=Arg::Missing, weights=None,
                 window=None, duplicates=Arg::Missing, tie_break=Arg::Missing,
                 offset=Arg::Missing, limit=None, min_score=None, normalize=Arg::Missing,
                 scores=None, lower_is_better=None, phi=None, gamma=None, sigma=None,
                 boost=None, boost_weight=None, trace=Arg::Missing),
    text_signature = "(lists, *, method='rrf', norm=None, k=60, weights=None, window=None, duplicates='first', tie_break='best_rank', offset=0, limit=None, min_score=None, normalize=False, scores=None, lower_is_better=None, phi=None, gamma=None, sigma=None, boost=None, boost_weight=None, trace=False)"
)]
#[allow(clippy::too_many_arguments)]
pub fn fuse<'py>(
    py: Python<'py>,
    lists: &Bound<'py, PyAny>,
    method: Arg<'py>,
    norm: Option<Bound<'py, PyAny>>,
    k: Arg<'py>,
    weights: Option<Bound<'py, PyAny>>,
    window: Option<Bound<'py, PyAny>>,
    duplicates: Arg<'py>,
    tie_break: Arg<'py>,
    offset: Arg<'py>,
    limit: Option<Bound<'py, PyAny>>,
    min_score: Option<Bound<'py, PyAny>>,
    normalize: Arg<'py>,
    scores: Option<Bound<'py, PyAny>>,
    lower_is_better: Option<Bound<'py, PyAny>>,
    phi: Option<Bound<'py, PyAny>>,
    gamma: Option<Bound<'py, PyAny>>,
    sigma: Option<Bound<'py, PyAny>>,
    boost: Option<Bound<'py, PyAny>>,
    boost_weight: Option<Bound<'py, PyAny>>,
    trace: Arg<'py>,
) -> PyResult<Bound<'py, PyList>> {
    let mut query = Query {
        lists: extract_lists(lists)?,
        raw_scores: Vec::new(),
    };
    let n = query.lists.len();
    let fuse = || {
        let mut params = fusion_params(
            method,
            norm,
            k,
            weights,
            Some(n),
            window,
            duplicates,
            tie_break,
            offset,
            limit,
            min_score,
            normalize,
        )?;
        let plan = query_plan(&params, n, false)?;
        query.raw_scores = extract_raw_scores(scores, &query.lists, &plan)?;
        let boost = method_params(
            &mut params,
            Some(n),
            lower_is_better,
            phi,
            gamma,
            sigma,
            boost,
            boost_weight,
        )?;
        let trace = trace.or(false, |v| flag(v, "trace"))?;
        let plan = query_plan(&params, n, false)?;
        Engine::fuse_once(trace, py, &query, &plan, &boost)
    };
    let out = fuse();
    if out.is_err() && query.lists.iter().map(|l| l.len()).sum::<usize>() >= DETACH_MIN_ITEMS {
        // Raised at once (Ctrl-C, say): the copies of large lists are freed on another thread.
        let Query { lists, raw_scores } = query;
        signals::free_later(
            py,
            lists.into_iter().map(|l| l.into_any().unbind()).collect(),
        );
        crate::pool::free_later(raw_scores);
    }
    out
}

/// "queries[q]: <message>" for a plain TypeError/ValueError of query q (the reference's rule);
/// any other exception (raised by a key itself) is returned unchanged.
fn in_query(py: Python<'_>, q: usize, e: PyErr) -> PyErr {
    let ty = e.get_type(py);
    let message = format!("queries[{q}]: {}", e.value(py));
    if ty.is(py.get_type::<PyTypeError>()) {
        PyTypeError::new_err(message)
    } else if ty.is(py.get_type::<PyValueError>()) {
        PyValueError::new_err(message)
    } else {
        e
    }
}

/// `[rrf(lists, **kwargs) for lists in queries]` in one call, with the keyword arguments checked
/// once.
///
/// `weights` applies to every query (one per list: a query with another number of lists is a
/// ValueError); `scores`, when given, holds one entry per query, passed as that query's `scores`.
/// A TypeError/ValueError of query q reads "queries[q]: <rrf's message>"; exceptions raised by the
/// keys themselves (their __hash__ or __eq__) propagate unchanged. The queries are fused one after
/// the other on the calling thread (a loop of `rrf` is as fast: the work per query is small), so
/// `threads` is only checked (an int >= 1).
#[pyfunction]
#[pyo3(
    signature = (queries, *, k=Arg::Missing, weights=None, window=None, duplicates=Arg::Missing,
                 tie_break=Arg::Missing, offset=Arg::Missing, limit=None, min_score=None,
                 normalize=Arg::Missing, scores=None, trace=Arg::Missing, threads=None),
    text_signature = "(queries, *, k=60, weights=None, window=None, duplicates='first', tie_break='best_rank', offset=0, limit=None, min_score=None, normalize=False, scores=None, trace=False, threads=None)"
)]
#[allow(clippy::too_many_arguments)]
pub fn rrf_many<'py>(
    py: Python<'py>,
    queries: &Bound<'py, PyAny>,
    k: Arg<'py>,
    weights: Option<Bound<'py, PyAny>>,
    window: Option<Bound<'py, PyAny>>,
    duplicates: Arg<'py>,
    tie_break: Arg<'py>,
    offset: Arg<'py>,
    limit: Option<Bound<'py, PyAny>>,
    min_score: Option<Bound<'py, PyAny>>,
    normalize: Arg<'py>,
    scores: Option<Bound<'py, PyAny>>,
    trace: Arg<'py>,
    threads: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyList>> {
    let queries = as_tuple(queries, "queries")?;
    let params = fusion_params(
        Arg::Missing,
        None,
        k,
        weights,
        None,
        window,
        duplicates,
        tie_break,
        offset,
        limit,
        min_score,
        normalize,
    )?;
    let scores = match scores {
        None => None,
        Some(s) => {
            let s = as_tuple(&s, "scores")?;
            if s.len() != queries.len() {
                return Err(PyValueError::new_err(format!(
                    "scores has {} entries for {} queries",
                    s.len(),
                    queries.len()
                )));
            }
            Some(s)
        }
    };
    let trace = trace.or(false, |v| flag(v, "trace"))?;
    if let Some(t) = threads {
        integer(&t, "threads", 1)?;
    }
    let mut engine = Engine::take(trace);
    let out = PyList::empty(py);
    let mut fuse_all = || {
        for (q, lists) in queries.iter().enumerate() {
            // Short fusions one after the other, the GIL held: signals are checked between them.
            py.check_signals()?;
            let mut one = || {
                let lists = extract_lists(&lists)?;
                let plan = query_plan(&params, lists.len(), true)?;
                let raw = scores.as_ref().map(|s| s.get_item(q)).transpose()?;
                let raw_scores = extract_raw_scores(raw, &lists, &plan)?;
                engine.fuse(py, &Query { lists, raw_scores }, &plan, &None, trace)
            };
            out.append(one().map_err(|e| in_query(py, q, e))?)?;
        }
        Ok::<_, PyErr>(())
    };
    let done = fuse_all();
    engine.give_back();
    done.map(|()| out)
}
