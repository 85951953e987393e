//! The obviously-correct models the fuzz targets compare the core with.

pub mod fusion;
pub mod repr;
pub mod trec;

pub use repr::{py_repr, significant_digits};
