//! The one error type of the core. Every bad input is a value of this enum; the Python binding maps
//! it to an exception in one place (`py::errors`). Errors about a key carry the key's position
//! (list index, 0-based position in the list) so the caller can render the key however it likes.

use std::fmt;

/// What kind of Python exception an error becomes: `TypeError` or `ValueError`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Type,
    Value,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Error {
    /// An argument of the wrong type (`TypeError`).
    Type { argument: String, message: String },
    /// An argument with a wrong value (`ValueError`).
    Value { argument: String, message: String },
    /// `duplicates="error"` and a key repeats inside one list. `position` is the repeat's 0-based
    /// index in list `list_index` (its rank is `position + 1`).
    DuplicateKey { list_index: usize, position: usize },
    /// A fused score overflowed (huge weights). `list_index`/`position` locate the key's first
    /// occurrence; `normalized` tells whether it was the score divided by the normaliser.
    NonFiniteScore {
        list_index: usize,
        position: usize,
        score: f64,
        normalized: bool,
    },
}

impl Error {
    pub fn value(argument: &str, message: impl Into<String>) -> Self {
        Error::Value {
            argument: argument.to_owned(),
            message: message.into(),
        }
    }

    pub fn type_(argument: &str, message: impl Into<String>) -> Self {
        Error::Type {
            argument: argument.to_owned(),
            message: message.into(),
        }
    }

    /// (list index, position) of the key the error is about: a repeated key, or the first
    /// occurrence of a key whose score is not finite.
    pub fn location(&self) -> Option<(usize, usize)> {
        match *self {
            Error::DuplicateKey {
                list_index,
                position,
            }
            | Error::NonFiniteScore {
                list_index,
                position,
                ..
            } => Some((list_index, position)),
            _ => None,
        }
    }

    pub fn kind(&self) -> Kind {
        match self {
            Error::Type { .. } => Kind::Type,
            _ => Kind::Value,
        }
    }

    /// The message, with `key` standing for the offending key where the error is about one.
    pub fn message_with_key(&self, key: &str) -> String {
        match self {
            Error::Type { message, .. } | Error::Value { message, .. } => message.clone(),
            Error::DuplicateKey {
                list_index,
                position,
            } => format!(
                "lists[{list_index}] has the key {key} more than once (rank {})",
                position + 1
            ),
            Error::NonFiniteScore {
                score, normalized, ..
            } => {
                if *normalized {
                    format!("the normalized score of key {key} is not finite ({score})")
                } else {
                    format!("the score of key {key} is not finite ({score}): weights too large")
                }
            }
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = self
            .location()
            .map(|(list_index, position)| format!("lists[{list_index}][{position}]"))
            .unwrap_or_default();
        f.write_str(&self.message_with_key(&key))
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;
