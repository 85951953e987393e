//! rankfusion's core: Reciprocal Rank Fusion with traces, in plain Rust.
//!
//! The algorithms know nothing of Python; the `python` feature adds the PyO3 binding layer
//! (`py`), the only module that imports pyo3.

pub mod batch;
pub mod error;
pub mod fusion;
pub mod memory;
pub mod pool;
pub mod revalidate;
pub mod trec;
pub mod trec_fuse;

#[cfg(feature = "python")]
mod py;

pub use error::{Error, Result};
pub use fusion::{rrf, rrf_ord, Duplicates, Params, TieBreak};
