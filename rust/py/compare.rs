//! The statistics of `rankfusion.compare` (`python/rankfusion/_compare.py`): the paired tests of
//! many (system, baseline) rows in parallel with the GIL released (`crate::stats`), the
//! correction of a family of p-values, and the means of rows. Private functions of `_core`;
//! Python checks the arguments first, these only refuse what the core cannot take.

use numpy::{IntoPyArray, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyModule, PyTuple};

use super::signals::{self, Signals};
use crate::error::{Error, Problem};
use crate::stats::{self, Correction, Settings, Test};

/// A core error as the exception to raise: `KeyboardInterrupt` for a stopped computation, else
/// a ValueError with the core's message.
fn raised(e: Error) -> PyErr {
    match e.problem {
        Problem::Interrupted => signals::interrupted(),
        _ => PyValueError::new_err(e.to_string()),
    }
}

/// A C-contiguous 2-D float64 array's values (copied: other Python threads may write to the
/// array while the core reads with the GIL released) and its shape.
fn rows(array: &PyReadonlyArray2<'_, f64>, name: &str) -> PyResult<(Vec<f64>, usize, usize)> {
    let shape = array.shape();
    let values = array
        .as_slice()
        .map_err(|_| PyValueError::new_err(format!("{name} must be C-contiguous")))?;
    Ok((values.to_vec(), shape[0], shape[1]))
}

/// `(delta, p, effect_size, low, high, wins, ties, losses)`, arrays of T: the paired test of
/// row t of `x` (the system's per-query values, (T, n) float64) against row t of `y` (the
/// baseline's), drawing from stream `streams[t]` of `seed`; on up to `threads` threads.
/// Undefined values are NaN. Errors: ValueError for what the core refuses (docs/semantics.md,
/// "Comparing runs"); KeyboardInterrupt (or what the SIGINT handler raises) when interrupted.
#[pyfunction]
#[pyo3(signature = (x, y, streams, *, test, permutations, seed, confidence, threads=None))]
#[allow(clippy::too_many_arguments)]
fn _paired_tests<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    y: PyReadonlyArray2<'py, f64>,
    streams: PyReadonlyArray1<'py, u64>,
    test: &str,
    permutations: u64,
    seed: u64,
    confidence: f64,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyTuple>> {
    let test = Test::from_name(test)
        .ok_or_else(|| PyValueError::new_err(format!("unknown test {test:?}")))?;
    let (x, tests, n) = rows(&x, "x")?;
    let (y, _, _) = rows(&y, "y")?;
    let streams = streams
        .as_slice()
        .map_err(|_| PyValueError::new_err("streams must be C-contiguous"))?
        .to_vec();
    if streams.len() != tests {
        return Err(PyValueError::new_err(format!(
            "{} streams for {tests} tests",
            streams.len()
        )));
    }
    let settings = Settings {
        test,
        permutations,
        seed,
        confidence,
    };
    let n_threads = crate::pool::resolve_threads(threads);
    let signals = Signals::new(py)?;
    let cancel = signals.cancel();
    let outcomes =
        py.detach(|| stats::paired_tests(&x, &y, n, &streams, &settings, n_threads, &cancel));
    signals.raise()?;
    let outcomes = outcomes.map_err(raised)?;
    let column = |f: fn(&stats::Paired) -> f64| -> Vec<f64> { outcomes.iter().map(f).collect() };
    let count = |f: fn(&stats::Paired) -> usize| -> Vec<i64> {
        outcomes.iter().map(|o| f(o) as i64).collect()
    };
    PyTuple::new(
        py,
        [
            column(|o| o.delta).into_pyarray(py).into_any(),
            column(|o| o.p).into_pyarray(py).into_any(),
            column(|o| o.effect_size).into_pyarray(py).into_any(),
            column(|o| o.low).into_pyarray(py).into_any(),
            column(|o| o.high).into_pyarray(py).into_any(),
            count(|o| o.wins).into_pyarray(py).into_any(),
            count(|o| o.ties).into_pyarray(py).into_any(),
            count(|o| o.losses).into_pyarray(py).into_any(),
        ],
    )
}

/// The family of p-values `p` corrected by `method` (one of `_CORRECTIONS`), in order.
#[pyfunction]
fn _correct<'py>(
    py: Python<'py>,
    p: PyReadonlyArray1<'py, f64>,
    method: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let method = Correction::from_name(method)
        .ok_or_else(|| PyValueError::new_err(format!("unknown correction {method:?}")))?;
    let p = p
        .as_slice()
        .map_err(|_| PyValueError::new_err("p must be C-contiguous"))?;
    Ok(stats::correct(p, method).into_pyarray(py).into_any())
}

/// Each row's mean (its values added left to right from 0.0, over their number: ir-measures'
/// mean) of a 2-D float64 array with at least one column.
#[pyfunction]
fn _row_means<'py>(
    py: Python<'py>,
    values: PyReadonlyArray2<'py, f64>,
) -> PyResult<Bound<'py, PyAny>> {
    let (values, _, n) = rows(&values, "values")?;
    if n == 0 {
        return Err(PyValueError::new_err("values has no columns"));
    }
    let means: Vec<f64> = values.chunks_exact(n).map(stats::mean).collect();
    Ok(means.into_pyarray(py).into_any())
}

/// Whether the randomization test of `n` queries with `permutations` enumerates every sign
/// vector (`2**n <= permutations`).
#[pyfunction]
fn _exact(n: usize, permutations: u64) -> bool {
    stats::exact(n, permutations)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_paired_tests, m)?)?;
    m.add_function(wrap_pyfunction!(_correct, m)?)?;
    m.add_function(wrap_pyfunction!(_row_means, m)?)?;
    m.add_function(wrap_pyfunction!(_exact, m)?)?;
    m.add("_TESTS", PyTuple::new(m.py(), Test::NAMES)?)?;
    m.add("_CORRECTIONS", PyTuple::new(m.py(), Correction::NAMES)?)?;
    m.add("_MAX_PERMUTATIONS", stats::MAX_PERMUTATIONS)?;
    Ok(())
}
