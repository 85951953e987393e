//! `rankfusion.Fusion`, the settings of a fusion as one immutable value checked once by the
//! core, and the functions users call (`rrf`, `fuse`, `rrf_many`, `rrf_batch`, `fuse_batch`),
//! each a `Fusion` made from its keyword arguments and called.

use std::sync::OnceLock;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use super::args::Arg;
use super::batch;
use super::query;
use super::settings::{self, fusion_of};
use crate::fusion as core;
use crate::fusion::params::Setting;

/// The settings of a fusion, checked once when it is made: call it on one query's lists
/// (`f(lists, scores=None, boost=None)`), on a batch of id arrays (`f.batch(ids, scores=None,
/// pad=-1)`), or on many queries (`f.many(queries)`).
///
/// Immutable, hashable, picklable; `repr()` and `Fusion(**f.to_dict())` give it back, and
/// `f.replace(**changes)` a changed copy. Two fusions that compute the same are equal (a
/// setting given at its default is the default).
///
/// Settings (docs/semantics.md): `method` (default "rrf"; `rankfusion.METHODS` lists them),
/// `norm` (a score-based method's normalisation, default "none"; `rankfusion.NORMS`), `k`
/// (rrf's constant, default 60), `weights` (one finite real per list; weighted methods),
/// `window` (only the first `window` items of each list are read), `duplicates` ("first",
/// "sum", "error"), `tie_break` ("best_rank", "key"), `offset` and `limit` (the page),
/// `min_score`, `normalize` (rrf only), `lower_is_better` (one bool per list: lists of
/// distances), `phi` (rbc, needed), `gamma` (gmnz, needed), `sigma` (logn_isr, default 0.01),
/// `boost_weight` (the weight of a call's `boost`), `trace` (every hit explained).
///
/// Raises FusionTypeError (a TypeError) or FusionError (a ValueError) naming the first bad
/// setting, in the order above; a setting the method does not use is an error naming both.
#[pyclass(frozen, module = "rankfusion", name = "Fusion")]
pub struct PyFusion {
    pub fusion: core::Fusion,
    /// The plan of the number of lists it was first called on (`Fusion::plan_kept`).
    plan: OnceLock<core::Plan>,
}

/// A setting's value as Python shows it (`to_dict`, `repr`).
fn setting_object<'py>(py: Python<'py>, value: Setting<'_>) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Setting::Name(n) => n.into_pyobject(py)?.into_any(),
        Setting::Real(x) => x.into_pyobject(py)?.into_any(),
        Setting::Reals(xs) => PyList::new(py, xs)?.into_any(),
        Setting::Count(n) => n.into_pyobject(py)?.into_any(),
        Setting::Flag(b) => b.into_pyobject(py)?.to_owned().into_any(),
        Setting::Flags(bs) => PyList::new(py, bs)?.into_any(),
    })
}

#[pymethods]
impl PyFusion {
    #[new]
    #[pyo3(
        signature = (**settings),
        text_signature = "(*, method='rrf', norm=None, k=60, weights=None, window=None, duplicates='first', tie_break='best_rank', offset=0, limit=None, min_score=None, normalize=False, lower_is_better=None, phi=None, gamma=None, sigma=None, boost_weight=None, trace=False)"
    )]
    fn new(settings: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        Ok(PyFusion {
            fusion: fusion_of(settings, settings::ALL, "Fusion")?,
            plan: OnceLock::new(),
        })
    }

    /// Fuses one query: `lists` (iterables of hashable keys, best first), `scores` (per list
    /// None or its raw scores, aligned with it: needed where the method reads them, carried into
    /// traces otherwise), `boost` (a mapping key -> finite value, with `boost_weight`). Returns
    /// the page of `Hit`s, best first. Errors: FusionTypeError / FusionError naming the input
    /// (checked in order: lists, their number against the settings, scores, boost); exceptions
    /// raised by the keys themselves propagate unchanged.
    #[pyo3(signature = (lists, scores=None, boost=None))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        lists: &Bound<'py, PyAny>,
        scores: Option<&Bound<'py, PyAny>>,
        boost: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        query::call(py, &self.fusion, Some(&self.plan), lists, scores, boost)
    }

    /// Fuses Q queries at once from id arrays: `ids` per list a 2-D integer array (Q, N_i)
    /// padded with `pad`, `scores` None or per list None or a real array of the same shape,
    /// `boost` a mapping id -> finite value. Row q of the result equals the fusion of row q of
    /// every list, bit for bit (docs/batch.md). Rows run in parallel on up to `threads` threads
    /// (default: every CPU) with the GIL released. Returns a `BatchResult`.
    #[pyo3(
        signature = (ids, scores=None, *, pad=Arg::Missing, boost=None, threads=None),
        text_signature = "($self, ids, scores=None, *, pad=-1, boost=None, threads=None)"
    )]
    fn batch<'py>(
        &self,
        py: Python<'py>,
        ids: &Bound<'py, PyAny>,
        scores: Option<&Bound<'py, PyAny>>,
        pad: Arg<'py>,
        boost: Option<&Bound<'py, PyAny>>,
        threads: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        batch::batch(
            py,
            &self.fusion,
            ids,
            "ids",
            scores,
            pad,
            boost,
            threads,
            true,
        )
    }

    /// Fuses many queries of any keys: `[f(lists, scores=scores[q]) for q, lists in
    /// enumerate(queries)]`, one after the other (`threads` is only checked). An error of query
    /// q is located there (`queries[q]: ...`).
    #[pyo3(signature = (queries, *, scores=None, threads=None))]
    fn many<'py>(
        &self,
        py: Python<'py>,
        queries: &Bound<'py, PyAny>,
        scores: Option<&Bound<'py, PyAny>>,
        threads: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        query::many(py, &self.fusion, queries, scores, threads)
    }

    /// Checks the settings against a call of `n_lists` lists, as every call does first: one
    /// weight and one `lower_is_better` flag per list, normalize's divisor. For callers that
    /// fuse many queries of the same lists (run files, tables) and want the error up front.
    fn check(&self, n_lists: usize) -> PyResult<()> {
        self.fusion.plan(n_lists)?;
        Ok(())
    }

    /// The settings that differ from the defaults (and `method`), as plain JSON-ready data:
    /// `Fusion(**f.to_dict()) == f`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (name, value) in self.fusion.given() {
            d.set_item(name, setting_object(py, value)?)?;
        }
        Ok(d)
    }

    /// A copy with some settings changed (checked as `Fusion(**f.to_dict(), **changes)`); a
    /// setting given as None goes back to its default.
    #[pyo3(signature = (**changes))]
    fn replace(&self, py: Python<'_>, changes: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let d = self.to_dict(py)?;
        if let Some(changes) = changes {
            d.update(changes.as_mapping())?;
        }
        Self::new(Some(&d))
    }

    fn __repr__(&self) -> String {
        self.fusion.repr()
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let py = other.py();
        Ok(match other.cast::<PyFusion>() {
            Ok(o) => (self.fusion.given() == o.get().fusion.given())
                .into_pyobject(py)?
                .to_owned()
                .into_any()
                .unbind(),
            Err(_) => py.NotImplemented(),
        })
    }

    fn __hash__(&self) -> u64 {
        self.fusion.hash_given()
    }

    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let make = py.import("rankfusion._core")?.getattr("_fusion")?;
        PyTuple::new(
            py,
            [make, PyTuple::new(py, [self.to_dict(py)?])?.into_any()],
        )
    }

    /// The method's name.
    #[getter]
    fn method(&self) -> &'static str {
        self.fusion.method.name()
    }

    /// The normalisation asked for (None: the method's own, or none).
    #[getter]
    fn norm(&self) -> Option<&'static str> {
        self.fusion.norm.map(|n| n.name())
    }

    /// The normalisation in effect: the method's own, the one asked for, or "none".
    #[getter]
    fn norm_in_effect(&self) -> &'static str {
        self.fusion.norm().name()
    }

    /// RRF's constant (60 unless given).
    #[getter]
    fn k(&self) -> f64 {
        self.fusion.k()
    }

    #[getter]
    fn weights<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        self.fusion
            .weights
            .as_deref()
            .map(|w| PyTuple::new(py, w))
            .transpose()
    }

    #[getter]
    fn window(&self) -> Option<usize> {
        self.fusion.window
    }

    #[getter]
    fn duplicates(&self) -> &'static str {
        self.fusion.duplicates.name()
    }

    #[getter]
    fn tie_break(&self) -> &'static str {
        self.fusion.tie_break.name()
    }

    #[getter]
    fn offset(&self) -> usize {
        self.fusion.offset
    }

    #[getter]
    fn limit(&self) -> Option<usize> {
        self.fusion.limit
    }

    #[getter]
    fn min_score(&self) -> Option<f64> {
        self.fusion.min_score
    }

    #[getter]
    fn normalize(&self) -> bool {
        self.fusion.normalize
    }

    #[getter]
    fn lower_is_better<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        self.fusion
            .lower_is_better
            .as_deref()
            .map(|l| PyTuple::new(py, l))
            .transpose()
    }

    #[getter]
    fn phi(&self) -> Option<f64> {
        self.fusion.phi
    }

    #[getter]
    fn gamma(&self) -> Option<f64> {
        self.fusion.gamma
    }

    /// logn_isr's sigma (0.01 unless given); None for the other methods.
    #[getter]
    fn sigma(&self) -> Option<f64> {
        self.fusion.sigma_setting()
    }

    #[getter]
    fn boost_weight(&self) -> Option<f64> {
        self.fusion.boost_weight
    }

    #[getter]
    fn trace(&self) -> bool {
        self.fusion.trace
    }

    /// Whether a call needs scores for every list it reads (a score-based method whose
    /// normalisation reads them).
    #[getter]
    fn reads_scores(&self) -> bool {
        self.fusion.reads_scores()
    }
}

/// `Fusion(**settings)`, for pickle.
#[pyfunction]
pub fn _fusion(settings: &Bound<'_, PyDict>) -> PyResult<PyFusion> {
    PyFusion::new(Some(settings))
}

/// Reciprocal Rank Fusion of ranked lists (each best first): `Fusion(**settings)(lists,
/// scores)` with RRF's settings (`k`, `weights`, `window`, `duplicates`, `tie_break`, `offset`,
/// `limit`, `min_score`, `normalize`, `trace`: see `Fusion`).
///
/// Every counted occurrence of a key at rank r (1-based position in the list as given) of list
/// i contributes weights[i] / (k + r); a key's score is the sum of its contributions added in
/// ascending order of value from 0.0, so list order never changes a score's bits. Hits are
/// ordered by score descending, ties by first appearance in the interleaved scan (or by key
/// with tie_break="key"). `scores` (per list None or raw scores aligned with it) are carried
/// into traces only. Returns a list of `Hit`, best first. Errors: as `Fusion`'s; the whole
/// contract: docs/semantics.md.
#[pyfunction]
#[pyo3(
    signature = (lists, *, scores=None, **settings),
    text_signature = "(lists, *, scores=None, **settings)"
)]
pub fn rrf<'py>(
    py: Python<'py>,
    lists: &Bound<'py, PyAny>,
    scores: Option<&Bound<'py, PyAny>>,
    settings: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyList>> {
    let fusion = fusion_of(settings, settings::RRF, "rrf")?;
    query::call(py, &fusion, None, lists, scores, None)
}

/// Fusion of ranked lists (each best first) by any method: `Fusion(**settings)(lists, scores,
/// boost)` (the settings: see `Fusion`). Returns a list of `Hit`, best first.
#[pyfunction]
#[pyo3(
    signature = (lists, *, scores=None, boost=None, **settings),
    text_signature = "(lists, *, scores=None, boost=None, **settings)"
)]
pub fn fuse<'py>(
    py: Python<'py>,
    lists: &Bound<'py, PyAny>,
    scores: Option<&Bound<'py, PyAny>>,
    boost: Option<&Bound<'py, PyAny>>,
    settings: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyList>> {
    let fusion = fusion_of(settings, settings::ALL, "fuse")?;
    query::call(py, &fusion, None, lists, scores, boost)
}

/// `[rrf(lists, scores=scores[q], **settings) for q, lists in enumerate(queries)]` with the
/// settings checked once: `Fusion(**settings).many(queries, scores=scores)`.
#[pyfunction]
#[pyo3(
    signature = (queries, *, scores=None, threads=None, **settings),
    text_signature = "(queries, *, scores=None, threads=None, **settings)"
)]
pub fn rrf_many<'py>(
    py: Python<'py>,
    queries: &Bound<'py, PyAny>,
    scores: Option<&Bound<'py, PyAny>>,
    threads: Option<&Bound<'py, PyAny>>,
    settings: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyList>> {
    let fusion = fusion_of(settings, settings::RRF, "rrf_many")?;
    query::many(py, &fusion, queries, scores, threads)
}

/// RRF of Q queries at once from id arrays: `Fusion(**settings).batch(lists, pad=pad,
/// threads=threads)` with RRF's settings. Returns a `BatchResult` (without `normalized`).
#[pyfunction]
#[pyo3(
    signature = (lists, *, pad=Arg::Missing, threads=None, **settings),
    text_signature = "(lists, *, pad=-1, threads=None, **settings)"
)]
pub fn rrf_batch<'py>(
    py: Python<'py>,
    lists: &Bound<'py, PyAny>,
    pad: Arg<'py>,
    threads: Option<&Bound<'py, PyAny>>,
    settings: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let fusion = fusion_of(settings, settings::RRF, "rrf_batch")?;
    batch::batch(py, &fusion, lists, "lists", None, pad, None, threads, false)
}

/// Fusion of Q queries at once by any method: `Fusion(**settings).batch(ids, scores, pad=pad,
/// boost=boost, threads=threads)`. Returns a `BatchResult`.
#[pyfunction]
#[pyo3(
    signature = (ids, scores=None, *, pad=Arg::Missing, boost=None, threads=None, **settings),
    text_signature = "(ids, scores=None, *, pad=-1, boost=None, threads=None, **settings)"
)]
#[allow(clippy::too_many_arguments)]
pub fn fuse_batch<'py>(
    py: Python<'py>,
    ids: &Bound<'py, PyAny>,
    scores: Option<&Bound<'py, PyAny>>,
    pad: Arg<'py>,
    boost: Option<&Bound<'py, PyAny>>,
    threads: Option<&Bound<'py, PyAny>>,
    settings: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let fusion = fusion_of(settings, settings::ALL, "fuse_batch")?;
    batch::batch(py, &fusion, ids, "ids", scores, pad, boost, threads, true)
}

/// The fusion of `value`: a `Fusion`, or its settings as a mapping (for the internal functions
/// of the command, tables and tuning, which take either).
pub fn fusion_arg(value: &Bound<'_, PyAny>) -> PyResult<core::Fusion> {
    if let Ok(f) = value.cast::<PyFusion>() {
        return Ok(f.get().fusion.clone());
    }
    match value.cast::<PyDict>() {
        Ok(d) => fusion_of(Some(d), settings::ALL, "Fusion"),
        Err(_) => Err(PyTypeError::new_err(format!(
            "fusion must be a rankfusion.Fusion, got {}",
            super::args::describe(value)
        ))),
    }
}

/// The core's tables, from which `rankfusion._tables` makes `METHODS` and `NORMS`: a row per
/// method (name, kind, weighted, params, own norm, fills, term, combine, anchor, traced) and per
/// normalisation (name, reads_scores).
pub fn register_tables(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let methods = PyList::empty(py);
    for info in core::METHODS {
        methods.append((
            info.name,
            info.kind.name(),
            info.weighted,
            PyTuple::new(py, info.params.iter().map(|p| p.name()))?,
            info.own_norm.map(|n| n.name()),
            info.fills,
            info.term.formula(),
            info.combine.formula(),
            info.anchor,
            info.method.scored_from_trace(),
        ))?;
    }
    let norms: Vec<_> = core::NORMS
        .iter()
        .map(|info| (info.name, info.reads_scores))
        .collect();
    m.add("_METHOD_ROWS", methods.to_tuple())?;
    m.add("_NORM_ROWS", norms)
}
