//! The PyO3 binding layer: the only module that knows about Python.
//!
//! Each function extracts its Python arguments into Rust values (in the order the reference
//! checks them, so both raise the same exception for the same call), runs the core with the GIL
//! released where no Python object is touched, and builds the Python results. Core errors become
//! exceptions in one place (`errors`).

mod args;
mod arrays;
mod batch;
mod compare;
mod errors;
mod gc;
mod hybrid;
mod keys;
mod optimize;
mod results;
mod revalidate;
mod rrf;
mod signals;
mod trec;

use pyo3::prelude::*;
use pyo3::types::PyTuple;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    results::register(m)?;
    m.add_function(wrap_pyfunction!(rrf::rrf, m)?)?;
    m.add_function(wrap_pyfunction!(rrf::fuse, m)?)?;
    m.add_function(wrap_pyfunction!(rrf::rrf_many, m)?)?;
    m.add_function(wrap_pyfunction!(batch::rrf_batch, m)?)?;
    m.add_function(wrap_pyfunction!(batch::fuse_batch, m)?)?;
    #[cfg(feature = "bench-hooks")]
    m.add_function(wrap_pyfunction!(batch::_bare_loop, m)?)?;
    m.add_function(wrap_pyfunction!(revalidate::revalidate, m)?)?;
    m.add_function(wrap_pyfunction!(revalidate::pool_size, m)?)?;
    m.add_function(wrap_pyfunction!(revalidate::revalidate_batch, m)?)?;
    m.add_function(wrap_pyfunction!(hybrid::_pairs_union, m)?)?;
    m.add_function(wrap_pyfunction!(hybrid::_fuse_live_pairs, m)?)?;
    m.add_class::<optimize::PyTrace>()?;
    m.add("TrecFormatError", errors::trec_format_error(m.py())?)?;
    // The names `fuse` accepts, for the command's choices (without importing the reference).
    m.add(
        "_METHODS",
        PyTuple::new(m.py(), crate::fusion::Method::NAMES)?,
    )?;
    m.add("_NORMS", PyTuple::new(m.py(), crate::fusion::Norm::NAMES)?)?;
    compare::register(m)?;
    trec::register(m)
}
