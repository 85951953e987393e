//! The arguments of a fusion: one value check per argument (the binding calls them in signature
//! order, as the reference checks, so that a call with several mistakes reports the first one;
//! [`Params::plan`] calls them all for Rust callers), and the [`Plan`] a checked call runs.

use crate::error::{Error, Result};
use crate::trec::pyrepr;

/// What a key that repeats inside one list does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Duplicates {
    /// Only the first (best) occurrence counts.
    First,
    /// Every occurrence counts at its own rank.
    Sum,
    /// A repeat is an error.
    Error,
}

impl Duplicates {
    pub const NAMES: [&'static str; 3] = ["first", "sum", "error"];

    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "first" => Some(Self::First),
            "sum" => Some(Self::Sum),
            "error" => Some(Self::Error),
            _ => None,
        }
    }
}

/// How hits with equal scores are ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TieBreak {
    /// First appearance in the interleaved scan.
    BestRank,
    /// The key itself, ascending.
    Key,
}

impl TieBreak {
    pub const NAMES: [&'static str; 2] = ["best_rank", "key"];

    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "best_rank" => Some(Self::BestRank),
            "key" => Some(Self::Key),
            _ => None,
        }
    }
}

/// The arguments of one fusion (docs/semantics.md), before the number of lists is known.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    pub k: f64,
    /// One weight per list; `None`: every list weighs 1.0.
    pub weights: Option<Vec<f64>>,
    /// Only the first `window` items of each list are read (>= 1).
    pub window: Option<usize>,
    pub duplicates: Duplicates,
    pub tie_break: TieBreak,
    pub offset: usize,
    pub limit: Option<usize>,
    pub min_score: Option<f64>,
    pub normalize: bool,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            k: 60.0,
            weights: None,
            window: None,
            duplicates: Duplicates::First,
            tie_break: TieBreak::BestRank,
            offset: 0,
            limit: None,
            min_score: None,
            normalize: false,
        }
    }
}

// --- one check per argument -------------------------------------------------------------------

/// A real argument that must be finite.
pub fn finite(name: &str, x: f64) -> Result<f64> {
    if x.is_finite() {
        Ok(x)
    } else {
        Err(Error::invalid(
            name,
            format!("{name} must be finite, got {}", pyrepr::float(x)),
        ))
    }
}

pub fn k(k: f64) -> Result<f64> {
    finite("k", k)?;
    if k < 0.0 {
        return Err(Error::invalid(
            "k",
            format!("k must be >= 0, got {}", pyrepr::float(k)),
        ));
    }
    Ok(k)
}

/// `weights` holds one value per list.
pub fn weights_len(n_weights: usize, n_lists: usize) -> Result<()> {
    if n_weights == n_lists {
        Ok(())
    } else {
        Err(Error::invalid(
            "weights",
            format!("weights has {n_weights} values for {n_lists} lists"),
        ))
    }
}

pub fn weight(i: usize, w: f64) -> Result<f64> {
    finite(&format!("weights[{i}]"), w)
}

pub fn window(window: usize) -> Result<usize> {
    if window >= 1 {
        Ok(window)
    } else {
        Err(Error::invalid("window", "window must be >= 1, got 0"))
    }
}

pub fn min_score(m: f64) -> Result<f64> {
    finite("min_score", m)
}

/// normalize=True's divisor: the values `w / (k + 1)` of the lists of positive weight, added
/// like a score; an error when there is no positive weight or the sum under- or overflows.
pub fn normalizer(weights: &[f64], k: f64) -> Result<f64> {
    let mut tops: Vec<f64> = weights
        .iter()
        .filter(|&&w| w > 0.0)
        .map(|&w| w / (k + 1.0))
        .collect();
    if tops.is_empty() {
        return Err(Error::invalid(
            "normalize",
            "normalize=True needs at least one list with a positive weight",
        ));
    }
    let top = super::canonical_sum(&mut tops);
    if top > 0.0 && top.is_finite() {
        Ok(top)
    } else {
        Err(Error::invalid(
            "normalize",
            format!(
                "normalize=True: the largest possible score is {}",
                pyrepr::float(top)
            ),
        ))
    }
}

impl Params {
    /// Checks every argument in signature order for `n_lists` lists and returns the plan.
    pub fn plan(&self, n_lists: usize) -> Result<Plan> {
        k(self.k)?;
        let weights = match &self.weights {
            None => vec![1.0; n_lists],
            Some(w) => {
                weights_len(w.len(), n_lists)?;
                for (i, &x) in w.iter().enumerate() {
                    weight(i, x)?;
                }
                w.clone()
            }
        };
        if let Some(w) = self.window {
            window(w)?;
        }
        if let Some(m) = self.min_score {
            min_score(m)?;
        }
        let normalizer = self
            .normalize
            .then(|| normalizer(&weights, self.k))
            .transpose()?;
        Ok(Plan::checked(self.clone(), weights, normalizer))
    }
}

/// A checked fusion: the arguments, the weight of every list and the normaliser. The same plan
/// serves every row or query of a call.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub params: Params,
    /// The weight of each list (`params.weights` resolved for the number of lists).
    pub weights: Vec<f64>,
    /// With normalize=True, the divisor of every score.
    pub normalizer: Option<f64>,
    /// Per list, its first contributions `weights[i] / (k + rank)`, computed once for every row.
    contributions: Vec<Vec<f64>>,
}

impl Plan {
    /// A plan of arguments the caller has checked (with the functions of this module).
    pub fn checked(params: Params, weights: Vec<f64>, normalizer: Option<f64>) -> Self {
        Plan {
            params,
            contributions: vec![Vec::new(); weights.len()],
            weights,
            normalizer,
        }
    }

    pub fn n_lists(&self) -> usize {
        self.weights.len()
    }

    /// The most items of a list of `len` items that are read (the window's).
    pub fn read_len(&self, list: usize, len: usize) -> usize {
        if self.weights[list] == 0.0 {
            0
        } else {
            len.min(self.params.window.unwrap_or(usize::MAX))
        }
    }

    /// Computes the contributions of the first `lens[i]` positions of list i in advance, so that
    /// a batch of rows divides once per position, not once per row.
    pub fn with_contributions(mut self, lens: &[usize]) -> Self {
        for (list, &len) in lens.iter().enumerate().take(self.weights.len()) {
            let n = self.read_len(list, len);
            let (w, k) = (self.weights[list], self.params.k);
            self.contributions[list] = (0..n as u32).map(|p| contribution(w, k, p)).collect();
        }
        self
    }

    /// The contribution of the item at `position` of `list`: `weight / (k + rank)`.
    #[inline]
    pub fn contribution(&self, list: usize, position: usize) -> f64 {
        match self.contributions[list].get(position) {
            Some(&c) => c,
            None => contribution(self.weights[list], self.params.k, position as u32),
        }
    }
}

/// RRF's contribution of an item at `position` (rank `position + 1`).
#[inline]
pub fn contribution(weight: f64, k: f64, position: u32) -> f64 {
    weight / (k + (position as f64 + 1.0))
}
