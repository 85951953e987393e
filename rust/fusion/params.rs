//! The arguments of a fusion: one value check per argument (the binding calls them in signature
//! order, as the reference checks, so that a call with several mistakes reports the first one;
//! [`Params::plan`] calls them all for Rust callers), and the [`Plan`] a checked call runs.

use crate::error::{Error, Result};
use crate::format;

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

/// How a fusion scores keys (docs/semantics.md, "Fusion methods").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    // Rank-based: the values come from the ranks.
    Rrf,
    Rbc,
    Isr,
    LogIsr,
    LognIsr,
    Bordafuse,
    Condorcet,
    // Score-based: the values come from the lists' scores, normalised.
    Sum,
    Wsum,
    Mnz,
    Anz,
    Gmnz,
    Max,
    Min,
    Med,
    Wmnz,
    Mixed,
    Dbsf,
    RelativeScore,
    ArithmeticMean,
    GeometricMean,
    HarmonicMean,
}

impl Method {
    pub const NAMES: [&'static str; 22] = [
        "rrf",
        "rbc",
        "isr",
        "log_isr",
        "logn_isr",
        "bordafuse",
        "condorcet",
        "sum",
        "wsum",
        "mnz",
        "anz",
        "gmnz",
        "max",
        "min",
        "med",
        "wmnz",
        "mixed",
        "dbsf",
        "relative_score",
        "arithmetic_mean",
        "geometric_mean",
        "harmonic_mean",
    ];
    const ALL: [Method; 22] = [
        Method::Rrf,
        Method::Rbc,
        Method::Isr,
        Method::LogIsr,
        Method::LognIsr,
        Method::Bordafuse,
        Method::Condorcet,
        Method::Sum,
        Method::Wsum,
        Method::Mnz,
        Method::Anz,
        Method::Gmnz,
        Method::Max,
        Method::Min,
        Method::Med,
        Method::Wmnz,
        Method::Mixed,
        Method::Dbsf,
        Method::RelativeScore,
        Method::ArithmeticMean,
        Method::GeometricMean,
        Method::HarmonicMean,
    ];

    pub fn from_name(name: &str) -> Option<Self> {
        Self::NAMES
            .iter()
            .position(|&n| n == name)
            .map(|i| Self::ALL[i])
    }

    pub fn name(self) -> &'static str {
        Self::NAMES[Self::ALL.iter().position(|&m| m == self).unwrap_or(0)]
    }

    /// Whether the values come from the ranks (no normalisation, no scores needed).
    pub fn is_rank_based(self) -> bool {
        matches!(
            self,
            Method::Rrf
                | Method::Rbc
                | Method::Isr
                | Method::LogIsr
                | Method::LognIsr
                | Method::Bordafuse
                | Method::Condorcet
        )
    }

    pub fn is_weighted(self) -> bool {
        matches!(
            self,
            Method::Rrf
                | Method::Rbc
                | Method::Bordafuse
                | Method::Condorcet
                | Method::Wsum
                | Method::Wmnz
                | Method::Mixed
                | Method::RelativeScore
                | Method::ArithmeticMean
                | Method::GeometricMean
                | Method::HarmonicMean
        )
    }

    pub fn is_mean(self) -> bool {
        matches!(
            self,
            Method::ArithmeticMean | Method::GeometricMean | Method::HarmonicMean
        )
    }

    /// The normalisation the method applies itself, if any.
    pub fn own_norm(self) -> Option<Norm> {
        match self {
            Method::Dbsf => Some(Norm::Dbsf),
            Method::RelativeScore => Some(Norm::MinMax),
            _ => None,
        }
    }

    /// Whether the method takes the parameter `name` ("k", "phi", "gamma", "sigma",
    /// "normalize").
    pub fn takes(self, name: &str) -> bool {
        matches!(
            (self, name),
            (Method::Rrf, "k" | "normalize")
                | (Method::Rbc, "phi")
                | (Method::Gmnz, "gamma")
                | (Method::LognIsr, "sigma")
        )
    }
}

/// A list's normalisation, for score-based methods.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Norm {
    None,
    MinMax,
    Max,
    Sum,
    ZScore,
    L2,
    Rank,
    Borda,
    Dbsf,
}

impl Norm {
    pub const NAMES: [&'static str; 9] = [
        "none", "min-max", "max", "sum", "z-score", "l2", "rank", "borda", "dbsf",
    ];
    const ALL: [Norm; 9] = [
        Norm::None,
        Norm::MinMax,
        Norm::Max,
        Norm::Sum,
        Norm::ZScore,
        Norm::L2,
        Norm::Rank,
        Norm::Borda,
        Norm::Dbsf,
    ];

    pub fn from_name(name: &str) -> Option<Self> {
        Self::NAMES
            .iter()
            .position(|&n| n == name)
            .map(|i| Self::ALL[i])
    }

    pub fn name(self) -> &'static str {
        Self::NAMES[Self::ALL.iter().position(|&m| m == self).unwrap_or(0)]
    }

    /// Whether it reads the lists' scores (`rank` and `borda` read the ranks only).
    pub fn reads_scores(self) -> bool {
        !matches!(self, Norm::Rank | Norm::Borda)
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
    pub method: Method,
    /// The normalisation asked for (None: the method's own, or none).
    pub norm: Option<Norm>,
    pub phi: Option<f64>,
    pub gamma: Option<f64>,
    pub sigma: Option<f64>,
    /// Per list, whether its scores are lower-is-better (negated before normalisation).
    pub lower_is_better: Option<Vec<bool>>,
    /// The weight of the boost (its values are the caller's, per key).
    pub boost_weight: Option<f64>,
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
            method: Method::Rrf,
            norm: None,
            phi: None,
            gamma: None,
            sigma: None,
            lower_is_better: None,
            boost_weight: None,
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
            format!("{name} must be finite, got {}", format::float(x)),
        ))
    }
}

/// A raw score: never NaN; infinite only where the method does not `read` it (a rank-based
/// method carries it into traces). `name` (`scores[i][j]`) is made only for the error.
pub fn raw_score(x: f64, read: bool, name: impl FnOnce() -> String) -> Result<f64> {
    if x.is_nan() {
        let name = name();
        return Err(Error::invalid(&name, format!("{name} must not be NaN")));
    }
    if read && !x.is_finite() {
        return finite(&name(), x);
    }
    Ok(x)
}

pub fn k(k: f64) -> Result<f64> {
    finite("k", k)?;
    if k < 0.0 {
        return Err(Error::invalid(
            "k",
            format!("k must be >= 0, got {}", format::float(k)),
        ));
    }
    Ok(k)
}

/// A parameter given to a method that does not use it.
pub fn unused(name: &str, method: Method) -> Error {
    Error::invalid(
        name,
        format!("{name} is not used by method '{}'", method.name()),
    )
}

/// The normalisation in effect for `method` given `norm` (None: not given).
pub fn norm(method: Method, norm: Option<Norm>) -> Result<Norm> {
    match (norm, method.own_norm()) {
        (Some(_), _) if method.is_rank_based() => Err(unused("norm", method)),
        (Some(_), Some(own)) => Err(Error::invalid(
            "norm",
            format!(
                "norm is not used by method '{}': it normalises with '{}'",
                method.name(),
                own.name()
            ),
        )),
        (_, Some(own)) => Ok(own),
        (Some(n), None) => Ok(n),
        (None, None) => Ok(Norm::None),
    }
}

/// A weight of a mean method, which must not be negative.
pub fn mean_weight(method: Method, i: usize, w: f64) -> Result<f64> {
    if method.is_mean() && w < 0.0 {
        return Err(Error::invalid(
            "weights",
            format!(
                "weights[{i}] must be >= 0 for method '{}', got {}",
                method.name(),
                format::float(w)
            ),
        ));
    }
    Ok(w)
}

/// `phi`: 0 <= phi < 1.
pub fn phi(phi: f64) -> Result<f64> {
    if (0.0..1.0).contains(&phi) {
        Ok(phi)
    } else {
        Err(Error::invalid(
            "phi",
            format!("phi must satisfy 0 <= phi < 1, got {}", format::float(phi)),
        ))
    }
}

/// `sigma`: 0 <= sigma <= 1.
pub fn sigma(sigma: f64) -> Result<f64> {
    if (0.0..=1.0).contains(&sigma) {
        Ok(sigma)
    } else {
        Err(Error::invalid(
            "sigma",
            format!(
                "sigma must satisfy 0 <= sigma <= 1, got {}",
                format::float(sigma)
            ),
        ))
    }
}

/// A method parameter that is required and was not given.
pub fn needed(name: &str, method: Method) -> Error {
    Error::invalid(name, format!("method '{}' needs {name}", method.name()))
}

/// A list read by a score-based method that has no scores.
pub fn scores_missing(method: Method, norm: Norm, list: usize) -> Error {
    Error::invalid(
        "scores",
        format!(
            "method '{}' with norm '{}' needs scores for every list: scores[{list}] is missing",
            method.name(),
            norm.name()
        ),
    )
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

/// `lower_is_better` holds one flag per list.
pub fn lower_is_better_len(n_values: usize, n_lists: usize) -> Result<()> {
    if n_values == n_lists {
        Ok(())
    } else {
        Err(Error::invalid(
            "lower_is_better",
            format!("lower_is_better has {n_values} values for {n_lists} lists"),
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
                format::float(top)
            ),
        ))
    }
}

impl Params {
    /// Checks every argument in signature order for `n_lists` lists and returns the plan.
    pub fn plan(&self, n_lists: usize) -> Result<Plan> {
        let method = self.method;
        let norm = norm(method, self.norm)?;
        k(self.k)?;
        let weights = match &self.weights {
            None => vec![1.0; n_lists],
            Some(w) => {
                if !method.is_weighted() {
                    return Err(unused("weights", method));
                }
                weights_len(w.len(), n_lists)?;
                for (i, &x) in w.iter().enumerate() {
                    mean_weight(method, i, weight(i, x)?)?;
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
        if self.normalize && !method.takes("normalize") {
            return Err(unused("normalize", method));
        }
        let normalizer = self
            .normalize
            .then(|| normalizer(&weights, self.k))
            .transpose()?;
        if let Some(lower) = &self.lower_is_better {
            if method.is_rank_based() || !norm.reads_scores() {
                return Err(unused("lower_is_better", method));
            }
            lower_is_better_len(lower.len(), n_lists)?;
        }
        for (name, value) in [
            ("phi", self.phi),
            ("gamma", self.gamma),
            ("sigma", self.sigma),
        ] {
            match (value, method.takes(name)) {
                (Some(_), false) => return Err(unused(name, method)),
                (None, true) if name != "sigma" => return Err(needed(name, method)),
                (Some(x), true) => {
                    finite(name, x)?;
                }
                _ => {}
            }
        }
        if let Some(p) = self.phi {
            phi(p)?;
        }
        if let Some(s) = self.sigma {
            sigma(s)?;
        }
        if let Some(w) = self.boost_weight {
            finite("boost_weight", w)?;
            if self.normalize {
                return Err(Error::invalid(
                    "boost",
                    "boost cannot be combined with normalize=True",
                ));
            }
        }
        let mut plan = Plan::checked(self.clone(), weights, normalizer);
        plan.norm = norm;
        Ok(plan)
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
    /// The normalisation in effect (`Norm::None` for rank-based methods).
    pub norm: Norm,
    /// Per list, its first contributions `weights[i] / (k + rank)`, computed once for every row.
    contributions: Vec<Vec<f64>>,
}

impl Plan {
    /// A plan of arguments the caller has checked (with the functions of this module).
    pub fn checked(params: Params, weights: Vec<f64>, normalizer: Option<f64>) -> Self {
        let norm = params
            .method
            .own_norm()
            .or(params.norm)
            .filter(|_| !params.method.is_rank_based())
            .unwrap_or(Norm::None);
        Plan {
            params,
            contributions: vec![Vec::new(); weights.len()],
            weights,
            normalizer,
            norm,
        }
    }

    /// Whether the method's values come from the lists' scores.
    pub fn reads_scores(&self) -> bool {
        !self.params.method.is_rank_based() && self.norm.reads_scores()
    }

    /// The sigma of `logn_isr` (default 0.01).
    pub fn sigma(&self) -> f64 {
        self.params.sigma.unwrap_or(0.01)
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
    /// a batch of rows computes them once per position, not once per row.
    pub fn with_contributions(mut self, lens: &[usize]) -> Self {
        for (list, &len) in lens.iter().enumerate().take(self.weights.len()) {
            let n = self.read_len(list, len);
            let c: Vec<f64> = (0..n).map(|p| self.rank_value(list, p)).collect();
            self.contributions[list] = c;
        }
        self
    }

    /// The contribution of the item at `position` of `list` for the methods that add values
    /// of ranks: RRF's `weight / (k + rank)`, RBC's `weight * ((1 - phi) * phi^(rank - 1))`,
    /// the ISR family's `1 / rank²`.
    #[inline]
    pub fn contribution(&self, list: usize, position: usize) -> f64 {
        match self.contributions[list].get(position) {
            Some(&c) => c,
            None => self.rank_value(list, position),
        }
    }

    fn rank_value(&self, list: usize, position: usize) -> f64 {
        let w = self.weights[list];
        match self.params.method {
            Method::Rbc => {
                let phi = self.params.phi.unwrap_or(0.0);
                w * ((1.0 - phi) * power(phi, position as u64))
            }
            Method::Isr | Method::LogIsr | Method::LognIsr => {
                let rank = position as u64 + 1;
                1.0 / (rank * rank) as f64
            }
            _ => contribution(w, self.params.k, position as u32),
        }
    }
}

/// RRF's contribution of an item at `position` (rank `position + 1`).
#[inline]
pub fn contribution(weight: f64, k: f64, position: u32) -> f64 {
    weight / (k + (position as f64 + 1.0))
}

/// `x^n` by repeated squaring: the products in a fixed order (the reference's `_power`), so
/// that every implementation gets the same bits (`powi` and `pow` may round differently).
pub fn power(mut x: f64, mut n: u64) -> f64 {
    let mut result = 1.0;
    while n != 0 {
        if n & 1 == 1 {
            result *= x;
        }
        n >>= 1;
        x *= x;
    }
    result
}
