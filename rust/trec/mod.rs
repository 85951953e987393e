//! TREC run and qrels files: parsed from the whole (already decompressed) file in memory,
//! written back as Python writes them, and fused without a Python object per line.
//!
//! The semantics are those `rankfusion.trec` had when it read a file as text decoded from UTF-8
//! with `surrogateescape`, in universal-newlines mode, and split each line with `str.split()`
//! (docs/cli.md):
//! - a line ends at `\n`, `\r\n` or a lone `\r`; lines are numbered from 1, blank ones included;
//!   a UTF-8 byte-order mark at the very start is skipped;
//! - fields are separated by what Python calls whitespace: ASCII tab, `\x0b`, `\x0c`,
//!   `\x1c`-`\x1f` and space, and the Unicode spaces U+0085, U+00A0, U+1680, U+2000-U+200A,
//!   U+2028, U+2029, U+202F, U+205F and U+3000 (encoded in UTF-8; a byte that is not valid UTF-8
//!   is never whitespace);
//! - ids are byte ranges of the input. Two ids are equal when their bytes are (the
//!   `surrogateescape` decoding is one-to-one) and are ordered as Python orders the decoded
//!   strings (code point by code point; an undecodable byte `b` is the code point `0xDC00 + b`).
//!
//! Errors are values: a malformed file is [`crate::error::Problem::Malformed`] located at its
//! 1-based line, with a [`Reason`] whose quoted texts are bytes of the input, rendered by the
//! caller (the Python binding renders them with `repr`). When a file has several errors, the one
//! reported is the first line with the wrong number of fields, else the first score (gain) that
//! is not a number (an integer), else the first NaN score, else the first duplicate.
//!
//! - [`lex`]: lines, fields, whitespace, ids and their order;
//! - [`parse`]: run and qrels files;
//! - [`read`]: a file read whole, a piece at a time;
//! - [`write`]: run lines (scores by [`crate::format`], Python's `repr` of a float);
//! - [`fuse`]: the fused run of parsed run files, as lines.

pub mod fuse;
pub mod lex;
pub mod parse;
pub mod read;
#[cfg(test)]
mod tests;
pub mod write;

use std::ops::Range;

use crate::error::{At, Error, Problem};

pub use crate::error::Reason;
pub use lex::{is_id, py_str_cmp};
pub use parse::{
    check_points, gain_or, parse_gain, parse_qrels, parse_run, parse_run_cancellable, parse_runs,
    parse_score, score_or, Gain, CHECK_LINES,
};

/// A byte range of the input.
pub type Span = Range<usize>;

pub const RUN_FIELDS: usize = 6;
pub const RUN_FORMAT: &str = "qid Q0 docid rank score tag";
pub const QRELS_FIELDS: usize = 4;
pub const QRELS_FORMAT: &str = "qid 0 docid gain";

/// How a run ranks a query's documents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// trec_eval's order: score descending, ties by doc id descending.
    Score,
    /// The order of the lines.
    File,
}

impl Order {
    pub const NAMES: [&'static str; 2] = ["score", "file"];

    pub fn from_name(s: &str) -> Option<Self> {
        match s {
            "score" => Some(Self::Score),
            "file" => Some(Self::File),
            _ => None,
        }
    }
}

/// What a doc id on two lines of one query does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadDuplicates {
    /// An error naming both lines.
    Error,
    /// Only the best-ranked line (run) or the first line (qrels) is kept.
    First,
    /// Every line is kept.
    Keep,
}

impl ReadDuplicates {
    pub const NAMES: [&'static str; 3] = ["error", "first", "keep"];

    pub fn from_name(s: &str) -> Option<Self> {
        match s {
            "error" => Some(Self::Error),
            "first" => Some(Self::First),
            "keep" => Some(Self::Keep),
            _ => None,
        }
    }
}

/// One query of a run, ranked: `docids[i]` (a byte range of the input) has score `scores[i]`.
#[derive(Clone, Debug, PartialEq)]
pub struct RunQuery {
    pub qid: Span,
    pub docids: Vec<Span>,
    pub scores: Vec<f64>,
}

/// One query of a qrels file: its judged docs with their gains, in the order of the lines.
#[derive(Clone, Debug, PartialEq)]
pub struct QrelsQuery<G> {
    pub qid: Span,
    pub judged: Vec<(Span, G)>,
}

/// A number parsed from a field.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Number<T> {
    Value(T),
    /// Python rejects it.
    Invalid,
    /// Not decided here: the field holds a non-ASCII byte (Python maps every Unicode decimal
    /// digit to its ASCII digit before parsing), or an integer does not fit in an i64. The
    /// binding asks Python's own `float()` / `int()`.
    Unknown,
}

/// The error of a malformed file at 1-based line `line`.
pub fn malformed(line: usize, reason: Reason) -> Error {
    Error::from(Problem::Malformed(reason)).at(At::Line(Some(line)))
}
