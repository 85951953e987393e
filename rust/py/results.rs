//! The result types: immutable, unpackable, picklable, with a useful repr.

use pyo3::exceptions::PyIndexError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

/// One counted occurrence of a key: `weight / (k + rank)` from list `list_index`.
#[pyclass(frozen, module = "rankfusion._core")]
pub struct Contribution {
    #[pyo3(get)]
    pub list_index: usize,
    #[pyo3(get)]
    pub rank: usize,
    #[pyo3(get)]
    pub weight: f64,
    #[pyo3(get)]
    pub contribution: f64,
    /// The list's own raw score for this item, when the caller passed `scores=`.
    #[pyo3(get)]
    pub score: Option<f64>,
}

impl Contribution {
    fn fields(&self) -> (usize, usize, f64, f64, Option<f64>) {
        (
            self.list_index,
            self.rank,
            self.weight,
            self.contribution,
            self.score,
        )
    }
}

#[pymethods]
impl Contribution {
    #[new]
    #[pyo3(signature = (list_index, rank, weight, contribution, score=None))]
    fn new(
        list_index: usize,
        rank: usize,
        weight: f64,
        contribution: f64,
        score: Option<f64>,
    ) -> Self {
        Contribution {
            list_index,
            rank,
            weight,
            contribution,
            score,
        }
    }

    /// Plain JSON-ready data; "score" only where known.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("list_index", self.list_index)?;
        d.set_item("rank", self.rank)?;
        d.set_item("weight", self.weight)?;
        d.set_item("contribution", self.contribution)?;
        if let Some(s) = self.score {
            d.set_item("score", s)?;
        }
        Ok(d)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let score = match self.score {
            Some(s) => s.into_pyobject(py)?.repr()?.to_string(),
            None => "None".to_owned(),
        };
        Ok(format!(
            "Contribution(list_index={}, rank={}, weight={}, contribution={}, score={})",
            self.list_index,
            self.rank,
            self.weight.into_pyobject(py)?.repr()?,
            self.contribution.into_pyobject(py)?.repr()?,
            score
        ))
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        match other.cast::<Contribution>() {
            Ok(o) => self.fields() == o.get().fields(),
            Err(_) => false,
        }
    }

    fn __hash__(&self, py: Python<'_>) -> PyResult<isize> {
        self.fields().into_pyobject(py)?.hash()
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let c = slf.get();
        (slf.get_type(), c.fields()).into_pyobject(slf.py())
    }
}

/// A fused hit. Unpacks as `key, score`; `contributions` is None unless `trace=True`.
#[pyclass(frozen, module = "rankfusion._core")]
pub struct Hit {
    #[pyo3(get)]
    pub key: Py<PyAny>,
    #[pyo3(get)]
    pub score: f64,
    /// A tuple of Contribution, ordered by list index then rank; None unless traced.
    #[pyo3(get)]
    pub contributions: Option<Py<PyTuple>>,
}

#[pymethods]
impl Hit {
    #[new]
    #[pyo3(signature = (key, score, contributions=None))]
    fn new(key: Py<PyAny>, score: f64, contributions: Option<Py<PyTuple>>) -> Self {
        Hit {
            key,
            score,
            contributions,
        }
    }

    fn __len__(&self) -> usize {
        2
    }

    fn __getitem__(&self, py: Python<'_>, index: isize) -> PyResult<Py<PyAny>> {
        match index {
            0 | -2 => Ok(self.key.clone_ref(py)),
            1 | -1 => Ok(self.score.into_pyobject(py)?.into_any().unbind()),
            _ => Err(PyIndexError::new_err("Hit index out of range")),
        }
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        (self.key.clone_ref(py), self.score)
            .into_pyobject(py)?
            .try_iter()
            .map(|it| it.into_any())
    }

    /// Plain JSON-ready data: {"key", "score"} and, when traced, "contributions".
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("key", self.key.bind(py))?;
        d.set_item("score", self.score)?;
        if let Some(cs) = &self.contributions {
            let list = PyList::empty(py);
            for c in cs.bind(py).iter() {
                list.append(c.cast::<Contribution>()?.get().to_dict(py)?)?;
            }
            d.set_item("contributions", list)?;
        }
        Ok(d)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let contributions = match &self.contributions {
            Some(c) => c.bind(py).repr()?.to_string(),
            None => "None".to_owned(),
        };
        Ok(format!(
            "Hit(key={}, score={}, contributions={})",
            self.key.bind(py).repr()?,
            self.score.into_pyobject(py)?.repr()?,
            contributions
        ))
    }

    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        let Ok(o) = other.cast::<Hit>() else {
            return Ok(false);
        };
        let o = o.get();
        Ok(self.score == o.score
            && self.key.bind(py).eq(o.key.bind(py))?
            && match (&self.contributions, &o.contributions) {
                (None, None) => true,
                (Some(a), Some(b)) => a.bind(py).eq(b.bind(py))?,
                _ => false,
            })
    }

    fn __hash__(&self, py: Python<'_>) -> PyResult<isize> {
        (
            self.key.clone_ref(py),
            self.score,
            self.contributions.as_ref().map(|c| c.clone_ref(py)),
        )
            .into_pyobject(py)?
            .hash()
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let h = slf.get();
        let args = (
            h.key.clone_ref(py),
            h.score,
            h.contributions.as_ref().map(|c| c.clone_ref(py)),
        );
        (slf.get_type(), args).into_pyobject(py)
    }
}
