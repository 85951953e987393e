//! The one error type of the core. Every bad input is a value: a [`Problem`] (what is wrong),
//! an [`At`] (where in a call: its arguments, a row of a batch, a query of a list of queries or
//! of run files, a line of a file) and, for an argument's item, an [`Item`] (which list, which
//! position). The Python binding maps it to an exception in one place (`py::errors`), whose
//! attributes are these fields (`argument`, `row`, `query`, `list`, `rank`, `key`).
//!
//! A problem about a key (a repeat, a score that overflows) names it by its place in the input
//! ([`KeyRef`]); the layer that holds the keys adds the key itself ([`Key`]), or, in the binding,
//! renders the `repr` of the key object found at that place.

use std::fmt;

use crate::format::{self, repr_approx};

/// The key an error is about: its place in the fused input and, once the layer that holds the
/// keys has looked it up, the key itself.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyRef {
    /// The list it is in (0-based) ...
    pub list: usize,
    /// ... and its 0-based position there (its rank is `position + 1`).
    pub position: usize,
    pub key: Option<Key>,
}

/// A key, as the core holds it.
#[derive(Clone, Debug, PartialEq)]
pub enum Key {
    /// An int key (a batch row's id).
    Int(i64),
    /// A key given as bytes (a doc id of a run file).
    Bytes(Vec<u8>),
}

impl KeyRef {
    pub fn at(list: usize, position: usize) -> Self {
        KeyRef {
            list,
            position,
            key: None,
        }
    }
}

/// Which item of a per-list argument an error is about: `weights[list]`, `scores[list]`,
/// `scores[list][position]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Item {
    pub list: usize,
    pub position: Option<usize>,
}

/// What is wrong.
#[derive(Clone, Debug, PartialEq)]
pub enum Problem {
    /// An argument with a wrong value (`ValueError`).
    Invalid { argument: String, message: String },
    /// An argument of a wrong type (`TypeError`).
    WrongType { argument: String, message: String },
    /// `duplicates="error"` and a key repeats inside one list: `key` is the repeat.
    DuplicateKey { key: KeyRef },
    /// A score that is not finite (huge weights, an overflowing normalisation); `stage` says
    /// which. `key` is the key's first occurrence.
    NonFiniteScore {
        key: KeyRef,
        score: f64,
        stage: Stage,
    },
    /// A normalised value of a key's occurrence in list `list` that is not finite.
    NonFiniteNormalized {
        key: KeyRef,
        list: usize,
        value: f64,
    },
    /// A malformed TREC file (`TrecFormatError`).
    Malformed(Reason),
    /// The caller's own object raised while `argument` was converted (an iterator, a
    /// `__float__`): the caller's layer keeps that exception (its `index`-th) and raises it when
    /// the checker reaches the argument, so that earlier mistakes are reported first.
    Raised { argument: String, index: usize },
    /// The computation was stopped by its [`crate::cancel::Cancel`] (Ctrl-C in the binding).
    Interrupted,
}

/// Which score of a key is not finite.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// RRF's sum of contributions (its weights are too large).
    Rrf,
    /// RRF's sum divided by normalize=True's normaliser.
    Normalized,
    /// Another method's fused score.
    Fused,
    /// The fused score plus the boost.
    Boosted,
}

/// Where it is wrong.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum At {
    /// The call's arguments, or its only query.
    #[default]
    Call,
    /// Row `q` of a batch.
    Row(usize),
    /// Query `q` of a list of queries.
    Query(usize),
    /// The query of run files with this id (bytes of the files).
    Qid(Vec<u8>),
    /// A line of a file (1-based); `None` for the file as a whole.
    Line(Option<usize>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Error {
    pub problem: Problem,
    pub at: At,
    /// The item of the argument it is about, if any.
    pub item: Option<Item>,
}

pub type Result<T> = std::result::Result<T, Error>;

impl From<Problem> for Error {
    fn from(problem: Problem) -> Self {
        Error {
            problem,
            at: At::Call,
            item: None,
        }
    }
}

impl Error {
    /// An argument with a wrong value.
    pub fn invalid(argument: &str, message: impl Into<String>) -> Self {
        Problem::Invalid {
            argument: argument.to_owned(),
            message: message.into(),
        }
        .into()
    }

    /// An argument of a wrong type.
    pub fn wrong_type(argument: &str, message: impl Into<String>) -> Self {
        Problem::WrongType {
            argument: argument.to_owned(),
            message: message.into(),
        }
        .into()
    }

    /// An error about the argument written `name`, of a wrong type or a wrong value: `weights`,
    /// its item 2 as `weights[2]`, position 3 of its list 1 as `scores[1][3]` (an index that is
    /// not a number, as in `boost['a']`, names no item).
    pub fn named(name: &str, wrong_type: bool, message: impl Into<String>) -> Self {
        let (argument, rest) = name.split_once('[').unwrap_or((name, ""));
        let mut indices = rest
            .split('[')
            .map(|i| i.trim_end_matches(']').parse::<usize>().ok());
        let e = if wrong_type {
            Self::wrong_type(argument, message)
        } else {
            Self::invalid(argument, message)
        };
        match (indices.next().flatten(), indices.next().flatten()) {
            (Some(list), Some(position)) => e.at_item(list, position),
            (Some(list), None) => e.for_list(list),
            _ => e,
        }
    }

    /// The same error, about item `list` of its argument (`weights[list]`, `scores[list]`).
    pub fn for_list(mut self, list: usize) -> Self {
        self.item = Some(Item {
            list,
            position: None,
        });
        self
    }

    /// The same error, about item `position` of list `list` of its argument
    /// (`scores[list][position]`).
    pub fn at_item(mut self, list: usize, position: usize) -> Self {
        self.item = Some(Item {
            list,
            position: Some(position),
        });
        self
    }

    /// The argument it is about, if any.
    pub fn argument(&self) -> Option<&str> {
        match &self.problem {
            Problem::Invalid { argument, .. }
            | Problem::WrongType { argument, .. }
            | Problem::Raised { argument, .. } => Some(argument),
            _ => None,
        }
    }

    /// Whether it is a wrong type (`TypeError`) rather than a wrong value.
    pub fn is_type_error(&self) -> bool {
        matches!(self.problem, Problem::WrongType { .. })
    }

    /// The same error, located at `at`.
    pub fn at(mut self, at: At) -> Self {
        self.at = at;
        self
    }

    /// The key the error is about, if any.
    pub fn key(&self) -> Option<&KeyRef> {
        match &self.problem {
            Problem::DuplicateKey { key }
            | Problem::NonFiniteScore { key, .. }
            | Problem::NonFiniteNormalized { key, .. } => Some(key),
            _ => None,
        }
    }

    /// The list and 0-based position in it of the input item the error is about: its
    /// argument's item (`weights[i]`, `scores[i][j]`), the list of a normalised value that is not
    /// finite, or a repeated key's place.
    pub fn place(&self) -> (Option<usize>, Option<usize>) {
        match (&self.item, &self.problem) {
            (Some(Item { list, position }), _) => (Some(*list), *position),
            (None, Problem::NonFiniteNormalized { list, .. }) => (Some(*list), None),
            (None, Problem::DuplicateKey { key }) => (Some(key.list), Some(key.position)),
            _ => (None, None),
        }
    }

    /// The same error with the key it is about (if any) looked up by `lookup(list, position)`.
    pub fn with_key(mut self, lookup: impl FnOnce(usize, usize) -> Option<Key>) -> Self {
        if let Problem::DuplicateKey { key }
        | Problem::NonFiniteScore { key, .. }
        | Problem::NonFiniteNormalized { key, .. } = &mut self.problem
        {
            key.key = lookup(key.list, key.position);
        }
        self
    }

    /// The message of the problem, `key` rendering the key and `text` the bytes quoted by a
    /// malformed file's reason, without the place (see [`Error::prefix`]).
    pub fn message(
        &self,
        key: &mut dyn FnMut(&KeyRef) -> String,
        text: &mut dyn FnMut(&[u8]) -> String,
    ) -> String {
        match &self.problem {
            Problem::Invalid { message, .. } | Problem::WrongType { message, .. } => {
                message.clone()
            }
            Problem::DuplicateKey { key: k } => format!(
                "lists[{}] has the key {} more than once (rank {})",
                k.list,
                key(k),
                k.position + 1
            ),
            Problem::NonFiniteScore {
                key: k,
                score,
                stage,
            } => {
                let (k, score) = (key(k), format::float(*score));
                match stage {
                    Stage::Rrf => {
                        format!("the score of key {k} is not finite ({score}): weights too large")
                    }
                    Stage::Normalized => {
                        format!("the normalized score of key {k} is not finite ({score})")
                    }
                    Stage::Fused => format!("the fused score of key {k} is not finite ({score})"),
                    Stage::Boosted => {
                        format!("the boosted score of key {k} is not finite ({score})")
                    }
                }
            }
            Problem::NonFiniteNormalized {
                key: k,
                list,
                value,
            } => format!(
                "the normalized score of key {} in lists[{list}] is not finite ({})",
                key(k),
                format::float(*value)
            ),
            Problem::Malformed(reason) => reason.render(text),
            Problem::Interrupted => "interrupted".to_owned(),
            Problem::Raised { argument, .. } => format!("converting {argument} raised"),
        }
    }

    /// The place as a message prefix: `"row 3: "`, `"queries[2]: "`, `"query '7': "`, or
    /// nothing (lines are shown by the caller, which knows the file).
    pub fn prefix(&self, text: &mut dyn FnMut(&[u8]) -> String) -> String {
        match &self.at {
            At::Call | At::Line(_) => String::new(),
            At::Row(q) => format!("row {q}: "),
            At::Query(q) => format!("queries[{q}]: "),
            At::Qid(qid) => format!("query {}: ", text(qid)),
        }
    }
}

/// A value of `n` items is a pair (a candidate, an item of `boost.items()`); else the error
/// `not_a_pair("{n} items", false)`.
pub fn check_pair(n: usize, not_a_pair: impl FnOnce(&str, bool) -> Error) -> Result<()> {
    if n == 2 {
        return Ok(());
    }
    Err(not_a_pair(&format!("{n} items"), false))
}

/// A key rendered without Python: ints as digits, bytes as Python would `repr` their text
/// (approximately), a key not looked up as its place `lists[i][j]`.
pub fn plain_key(key: &KeyRef) -> String {
    match &key.key {
        None => format!("lists[{}][{}]", key.list, key.position),
        Some(Key::Int(v)) => v.to_string(),
        Some(Key::Bytes(b)) => repr_approx(b),
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = |b: &[u8]| repr_approx(b);
        let prefix = self.prefix(&mut text);
        let line = match self.at {
            At::Line(Some(line)) => format!("line {line}: "),
            _ => String::new(),
        };
        let message = self.message(&mut plain_key, &mut text);
        write!(f, "{prefix}{line}{message}")
    }
}

impl std::error::Error for Error {}

/// Why a file cannot be read. Quoted texts are the input's bytes.
#[derive(Clone, Debug, PartialEq)]
pub enum Reason {
    /// A line with the wrong number of fields; `text` is the line without its leading and
    /// trailing whitespace, cut to 77 characters and `...` when it is longer than 80.
    Fields {
        expected: usize,
        format: &'static str,
        found: usize,
        text: Vec<u8>,
    },
    /// A run score that Python's `float()` rejects.
    NotANumber { text: Vec<u8> },
    /// A run score that is NaN.
    NaN { text: Vec<u8> },
    /// A doc id twice in one query of a run (`ReadDuplicates::Error`).
    DuplicateDoc {
        qid: Vec<u8>,
        docid: Vec<u8>,
        first_line: usize,
    },
    /// A qrels gain that Python's `int()` rejects.
    NotAnInteger { text: Vec<u8> },
    /// A doc judged twice for one query (`ReadDuplicates::Error`).
    DuplicateJudgment { qid: Vec<u8>, docid: Vec<u8> },
}

impl Reason {
    /// The message, each quoted text rendered by `repr`.
    pub fn render(&self, repr: &mut dyn FnMut(&[u8]) -> String) -> String {
        match self {
            Reason::Fields {
                expected,
                format,
                found,
                text,
            } => format!(
                "expected {expected} fields ({format}), found {found}: {}",
                repr(text)
            ),
            Reason::NotANumber { text } => format!("score is not a number, got {}", repr(text)),
            Reason::NaN { text } => format!("score is NaN, got {}", repr(text)),
            Reason::DuplicateDoc {
                qid,
                docid,
                first_line,
            } => format!(
                "query {} has doc {} twice (first on line {first_line})",
                repr(qid),
                repr(docid)
            ),
            Reason::NotAnInteger { text } => format!("gain is not an integer, got {}", repr(text)),
            Reason::DuplicateJudgment { qid, docid } => {
                format!("query {} judges doc {} twice", repr(qid), repr(docid))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_of_errors() {
        let e = Error::invalid("scores", "x").at_item(1, 3);
        assert_eq!(e.place(), (Some(1), Some(3)));
        assert_eq!(
            Error::invalid("weights", "x").for_list(2).place(),
            (Some(2), None)
        );
        assert_eq!(Error::invalid("k", "x").place(), (None, None));
        let repeat = Error::from(Problem::DuplicateKey {
            key: KeyRef::at(1, 4),
        });
        assert_eq!(repeat.place(), (Some(1), Some(4)));
        let normalized = Error::from(Problem::NonFiniteNormalized {
            key: KeyRef::at(0, 2),
            list: 1,
            value: f64::INFINITY,
        });
        assert_eq!(normalized.place(), (Some(1), None));
        let score = Error::from(Problem::NonFiniteScore {
            key: KeyRef::at(0, 2),
            score: f64::INFINITY,
            stage: Stage::Fused,
        });
        assert_eq!(score.place(), (None, None));
    }

    #[test]
    fn a_name_tells_the_argument_and_its_item() {
        let named = |name| Error::named(name, true, "m");
        assert_eq!(named("k").argument(), Some("k"));
        assert_eq!(named("k").place(), (None, None));
        assert!(named("k").is_type_error());
        assert!(!Error::named("k", false, "m").is_type_error());
        assert_eq!(named("weights[2]").argument(), Some("weights"));
        assert_eq!(named("weights[2]").place(), (Some(2), None));
        assert_eq!(named("scores[1][3]").argument(), Some("scores"));
        assert_eq!(named("scores[1][3]").place(), (Some(1), Some(3)));
        assert_eq!(named("boost['a']").argument(), Some("boost"));
        assert_eq!(named("boost['a']").place(), (None, None));
        assert_eq!(named("Hit.score").argument(), Some("Hit.score"));
    }
}
