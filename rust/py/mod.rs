//! The PyO3 binding layer: the only module that knows about Python.
//!
//! Each function extracts its Python arguments into Rust values (a fusion's settings once, by
//! `settings`, checked by the core), runs the core with the GIL released where no Python object
//! is touched, and builds the Python results. Core errors become exceptions in one place
//! (`errors`).

mod args;
mod arrays;
mod batch;
mod compare;
mod errors;
mod fusion;
mod gc;
mod hybrid;
mod keys;
mod layout;
mod optimize;
mod query;
mod results;
mod revalidate;
mod settings;
mod signals;
mod trec;

use pyo3::prelude::*;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    layout::init(m.py())?;
    results::register(m)?;
    m.add_class::<fusion::PyFusion>()?;
    m.add_function(wrap_pyfunction!(fusion::_fusion, m)?)?;
    m.add_function(wrap_pyfunction!(fusion::rrf, m)?)?;
    m.add_function(wrap_pyfunction!(fusion::fuse, m)?)?;
    m.add_function(wrap_pyfunction!(fusion::rrf_many, m)?)?;
    m.add_function(wrap_pyfunction!(fusion::rrf_batch, m)?)?;
    m.add_function(wrap_pyfunction!(fusion::fuse_batch, m)?)?;
    #[cfg(feature = "bench-hooks")]
    m.add_function(wrap_pyfunction!(batch::_bare_loop, m)?)?;
    m.add_function(wrap_pyfunction!(revalidate::revalidate, m)?)?;
    m.add_function(wrap_pyfunction!(revalidate::pool_size, m)?)?;
    m.add_function(wrap_pyfunction!(revalidate::revalidate_batch, m)?)?;
    m.add_function(wrap_pyfunction!(hybrid::_pairs_union, m)?)?;
    m.add_function(wrap_pyfunction!(hybrid::_fuse_live_pairs, m)?)?;
    m.add_class::<optimize::PyTrace>()?;
    fusion::register_tables(m)?;
    compare::register(m)?;
    trec::register(m)
}
