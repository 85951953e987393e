//! rankfusion's core: rank fusion with traces, batched fusion, candidate revalidation and TREC
//! run files, in plain Rust.
//!
//! The algorithms know nothing of Python; the `python` feature adds the PyO3 binding layer
//! (`py`), the only module that imports pyo3. docs/architecture.md draws the whole house.

pub mod batch;
pub mod cancel;
pub mod error;
pub mod format;
pub mod fusion;
pub mod memory;
pub mod optimize;
pub mod pool;
pub mod revalidate;
pub mod stats;
#[cfg(test)]
mod testing;
pub mod trec;

#[cfg(feature = "python")]
mod py;

pub use error::{Error, Result};
pub use fusion::{rrf, Duplicates, Fusion, TieBreak};
