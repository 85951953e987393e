//! The settings of a fusion and their one checker.
//!
//! [`Settings`] is what a caller gave, converted but not checked: each setting not given, a
//! value, or a value the caller's layer could not convert (the Python binding's `TypeError`,
//! kept as an error value so that it is reported in its turn). [`Settings::check`] checks them
//! in the reference's order — method, norm, k, weights, window, duplicates, tie_break, offset,
//! limit, min_score, normalize, lower_is_better, phi, gamma, sigma, boost_weight, trace — and
//! returns a [`Fusion`]: the checked settings of any number of calls (`rankfusion.Fusion`).
//! [`Fusion::plan`] adds what depends on a call's number of lists (the weights' and flags'
//! lengths, normalize's divisor): the [`Plan`] the engine runs. The checks of a call's own inputs
//! (raw scores, the boost) are here too ([`raw_score`], [`Fusion::check_boost`], ...).

use std::borrow::Cow;
use std::sync::OnceLock;

use super::canonical_sum;
pub use super::methods::{Combine, Factor, Kind, Method, Norm, Param, Term};
use crate::error::{Error, Result};
use crate::format;

/// What a key that repeats inside one list does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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

    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// How hits with equal scores are ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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

    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// A setting as the caller gave it.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Given<T> {
    /// Not given (or given as None where None means "not given").
    #[default]
    Missing,
    Value(T),
    /// Given, but not convertible: the error the caller's layer made of it (a wrong type, an
    /// unknown name, a number too large for a float).
    Bad(Error),
}

impl<T> Given<T> {
    fn is_given(&self) -> bool {
        !matches!(self, Given::Missing)
    }

    /// The value, `None` when not given, or the conversion's error.
    fn value(self) -> Result<Option<T>> {
        match self {
            Given::Missing => Ok(None),
            Given::Value(v) => Ok(Some(v)),
            Given::Bad(e) => Err(e),
        }
    }
}

impl<T> From<T> for Given<T> {
    fn from(value: T) -> Self {
        Given::Value(value)
    }
}

impl<T> From<Option<T>> for Given<T> {
    fn from(value: Option<T>) -> Self {
        value.map_or(Given::Missing, Given::Value)
    }
}

/// An integer setting: its value, saturated to the i64 range, and, when it did not fit, its
/// decimal digits (for a message).
#[derive(Clone, Debug, PartialEq)]
pub struct Integer {
    pub value: i64,
    pub digits: Option<String>,
}

impl From<i64> for Integer {
    fn from(value: i64) -> Self {
        Integer {
            value,
            digits: None,
        }
    }
}

/// The settings as given: a sequence setting holds its items, each given or not convertible.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Settings {
    pub method: Given<Method>,
    pub norm: Given<Norm>,
    pub k: Given<f64>,
    pub weights: Given<Vec<Given<f64>>>,
    pub window: Given<Integer>,
    pub duplicates: Given<Duplicates>,
    pub tie_break: Given<TieBreak>,
    pub offset: Given<Integer>,
    pub limit: Given<Integer>,
    pub min_score: Given<f64>,
    pub normalize: Given<bool>,
    pub lower_is_better: Given<Vec<Given<bool>>>,
    pub phi: Given<f64>,
    pub gamma: Given<f64>,
    pub sigma: Given<f64>,
    pub boost_weight: Given<f64>,
    pub trace: Given<bool>,
}

/// The names of the settings, in the checker's order (the order of `rankfusion.Fusion`'s
/// signature).
pub const SETTINGS: [&str; 17] = [
    "method",
    "norm",
    "k",
    "weights",
    "window",
    "duplicates",
    "tie_break",
    "offset",
    "limit",
    "min_score",
    "normalize",
    "lower_is_better",
    "phi",
    "gamma",
    "sigma",
    "boost_weight",
    "trace",
];

/// The settings `rrf` (and `rrf_batch`, `rrf_many`) accept: the others name what RRF has not.
pub const RRF_SETTINGS: [&str; 10] = [
    "k",
    "weights",
    "window",
    "duplicates",
    "tie_break",
    "offset",
    "limit",
    "min_score",
    "normalize",
    "trace",
];

/// The default of `k` (RRF's constant).
pub const K: f64 = 60.0;
/// The default of `sigma` (logn_isr's).
pub const SIGMA: f64 = 0.01;

/// The checked settings of a fusion: what `rankfusion.Fusion` holds. Each setting is canonical
/// (`None` where it is not given or equals the method's default), so that two fusions that
/// compute the same are equal. Made by [`Settings::check`] (or, from Rust, [`Fusion::check`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Fusion {
    pub method: Method,
    /// The normalisation asked for (None: the method's own, or none).
    pub norm: Option<Norm>,
    /// RRF's constant (None: [`K`]).
    pub k: Option<f64>,
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
    /// Per list, whether its scores are lower-is-better (negated before normalisation).
    pub lower_is_better: Option<Vec<bool>>,
    pub phi: Option<f64>,
    pub gamma: Option<f64>,
    /// logn_isr's (None: [`SIGMA`]).
    pub sigma: Option<f64>,
    /// The weight of the boost (its values are each call's, per key).
    pub boost_weight: Option<f64>,
    pub trace: bool,
}

impl Default for Fusion {
    fn default() -> Self {
        Fusion {
            method: Method::Rrf,
            norm: None,
            k: None,
            weights: None,
            window: None,
            duplicates: Duplicates::First,
            tie_break: TieBreak::BestRank,
            offset: 0,
            limit: None,
            min_score: None,
            normalize: false,
            lower_is_better: None,
            phi: None,
            gamma: None,
            sigma: None,
            boost_weight: None,
            trace: false,
        }
    }
}

// --- the checks -----------------------------------------------------------------------------

/// A value error about `argument`.
fn invalid(argument: &str, message: String) -> Error {
    Error::invalid(argument, message)
}

/// A real setting that must be finite (`name` is what the message calls it: `weights[2]`).
pub fn finite(argument: &str, name: &str, x: f64) -> Result<f64> {
    if x.is_finite() {
        Ok(x)
    } else {
        Err(invalid(
            argument,
            format!("{name} must be finite, got {}", format::float(x)),
        ))
    }
}

/// A raw score (`scores[i][j]` of `rank`): never NaN; infinite only where the method does not
/// `read` it (a rank-based method carries it into traces).
pub fn raw_score(x: f64, read: bool, list: usize, position: usize) -> Result<f64> {
    if x.is_nan() || (read && !x.is_finite()) {
        return Err(bad_raw_score(x, list, position));
    }
    Ok(x)
}

#[cold]
fn bad_raw_score(x: f64, list: usize, position: usize) -> Error {
    let name = format!("scores[{list}][{position}]");
    let message = if x.is_nan() {
        format!("{name} must not be NaN")
    } else {
        format!("{name} must be finite, got {}", format::float(x))
    };
    invalid("scores", message).at_item(list, position)
}

/// A parameter given to a method that does not use it.
pub fn unused(name: &str, method: Method) -> Error {
    invalid(
        name,
        format!("{name} is not used by method '{}'", method.name()),
    )
}

/// A list read by a score-based method that has no scores.
pub fn scores_missing(method: Method, norm: Norm, list: usize) -> Error {
    invalid(
        "scores",
        format!(
            "method '{}' with norm '{}' needs scores for every list: scores[{list}] is missing",
            method.name(),
            norm.name()
        ),
    )
    .for_list(list)
}

/// A per-list setting of `got` values for `n_lists` lists.
fn per_list(argument: &str, got: usize, n_lists: usize, what: &str) -> Result<()> {
    if got == n_lists {
        Ok(())
    } else {
        Err(invalid(
            argument,
            format!("{argument} has {got} {what} for {n_lists} lists"),
        ))
    }
}

/// `scores` of a query: one entry per list, each as long as its list.
pub fn scores_len(got: usize, n_lists: usize) -> Result<()> {
    per_list("scores", got, n_lists, "entries")
}

/// `scores` of a list of queries: one entry per query.
pub fn queries_scores_len(got: usize, n_queries: usize) -> Result<()> {
    if got == n_queries {
        Ok(())
    } else {
        Err(invalid(
            "scores",
            format!("scores has {got} entries for {n_queries} queries"),
        ))
    }
}

/// `scores[i]`'s length against its list's.
pub fn list_scores_len(list: usize, got: usize, keys: usize) -> Result<()> {
    if got == keys {
        Ok(())
    } else {
        Err(invalid(
            "scores",
            format!("scores[{list}] has {got} values for {keys} keys"),
        )
        .for_list(list))
    }
}

/// An item of `boost.items()` that is not a (key, value) pair: `got` shows it (its type and
/// repr: a `TypeError`) or its number of items (a `ValueError`).
pub fn not_a_boost_pair(got: &str, wrong_type: bool) -> Error {
    let message = format!("boost.items() must give (key, value) pairs, got {got}");
    Error::named("boost", wrong_type, message)
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
        return Err(invalid(
            "normalize",
            "normalize=True needs at least one list with a positive weight".into(),
        ));
    }
    let top = canonical_sum(&mut tops);
    if top > 0.0 && top.is_finite() {
        Ok(top)
    } else {
        Err(invalid(
            "normalize",
            format!(
                "normalize=True: the largest possible score is {}",
                format::float(top)
            ),
        ))
    }
}

/// An integer setting that must be >= `minimum`, as a count; one beyond the i64 range is
/// `usize::MAX` (no bound: no list is that long).
pub fn count(name: &str, n: Integer, minimum: i64) -> Result<usize> {
    if n.value < minimum {
        let shown = n.digits.unwrap_or_else(|| n.value.to_string());
        return Err(invalid(
            name,
            format!("{name} must be >= {minimum}, got {shown}"),
        ));
    }
    Ok(match n.digits {
        Some(_) => usize::MAX,
        None => usize::try_from(n.value).unwrap_or(usize::MAX),
    })
}

/// An integer that must fit in int64 (the reference's `_int64`).
pub fn int64(name: &str, n: Integer) -> Result<i64> {
    match n.digits {
        None => Ok(n.value),
        Some(digits) if n.value < 0 => Err(invalid(
            name,
            format!("{name} must be >= {}, got {digits}", i64::MIN),
        )),
        Some(digits) => Err(invalid(
            name,
            format!("{name} must fit in int64, got {digits}"),
        )),
    }
}

/// A choice argument `name` that is not one of `names`: `got` is the value as the message shows
/// it (a str's repr; a value that is not a str, `wrong_type`, its type and repr).
#[cold]
pub fn not_one_of<'n>(
    name: &str,
    names: impl IntoIterator<Item = &'n str>,
    got: &str,
    wrong_type: bool,
) -> Error {
    let listed: Vec<String> = names.into_iter().map(|c| format!("'{c}'")).collect();
    let message = format!("{name} must be one of ({}), got {got}", listed.join(", "));
    if wrong_type {
        Error::wrong_type(name, message)
    } else {
        invalid(name, message)
    }
}

/// A real parameter (phi, gamma, sigma, min_score, boost_weight): finite.
fn real(name: &str, x: Given<f64>) -> Result<Option<f64>> {
    x.value()?.map(|x| finite(name, name, x)).transpose()
}

/// `x + 0.0`: -0.0 as 0.0, so that equal settings have equal bits.
fn plain(x: f64) -> f64 {
    x + 0.0
}

impl Settings {
    /// Checks every setting in the reference's order (see the module's documentation) and
    /// returns the fusion. Errors name the argument (`Error::argument`).
    pub fn check(self) -> Result<Fusion> {
        let method = self.method.value()?.unwrap_or(Method::Rrf);
        let info = method.info();
        let norm = self.norm.value()?;
        if norm.is_some() {
            if info.kind == Kind::Rank {
                return Err(unused("norm", method));
            }
            if let Some(own) = info.own_norm {
                return Err(invalid(
                    "norm",
                    format!(
                        "norm is not used by method '{}': it normalises with '{}'",
                        method.name(),
                        own.name()
                    ),
                ));
            }
        }
        let norm = norm.filter(|&n| n != Norm::None);
        let effective_norm = info.own_norm.or(norm).unwrap_or(Norm::None);
        if self.k.is_given() && !method.takes(Param::K) {
            return Err(unused("k", method));
        }
        let k = self.k.value()?.map(|k| finite("k", "k", k)).transpose()?;
        if let Some(k) = k.filter(|&k| k < 0.0) {
            return Err(invalid(
                "k",
                format!("k must be >= 0, got {}", format::float(k)),
            ));
        }
        let k = k.map(plain).filter(|&k| k != K);
        if self.weights.is_given() && !info.weighted {
            return Err(unused("weights", method));
        }
        let weights = match self.weights.value()? {
            None => None,
            Some(items) => {
                let mut weights = Vec::with_capacity(items.len());
                for (i, w) in items.into_iter().enumerate() {
                    let name = format!("weights[{i}]");
                    let w = finite("weights", &name, w.value()?.unwrap_or(f64::NAN))
                        .map_err(|e| e.for_list(i))?;
                    weights.push(plain(w));
                }
                if info.combine.is_mean() {
                    if let Some((i, &w)) = weights.iter().enumerate().find(|(_, &w)| w < 0.0) {
                        return Err(invalid(
                            "weights",
                            format!(
                                "weights[{i}] must be >= 0 for method '{}', got {}",
                                method.name(),
                                format::float(w)
                            ),
                        )
                        .for_list(i));
                    }
                }
                Some(weights)
            }
        };
        let window = self
            .window
            .value()?
            .map(|w| count("window", w, 1))
            .transpose()?;
        let duplicates = self.duplicates.value()?.unwrap_or(Duplicates::First);
        let tie_break = self.tie_break.value()?.unwrap_or(TieBreak::BestRank);
        let offset = self
            .offset
            .value()?
            .map(|o| count("offset", o, 0))
            .transpose()?
            .unwrap_or(0);
        let limit = self
            .limit
            .value()?
            .map(|l| count("limit", l, 0))
            .transpose()?;
        let min_score = real("min_score", self.min_score)?.map(plain);
        let normalize = self.normalize.value()?.unwrap_or(false);
        if normalize && !method.takes(Param::Normalize) {
            return Err(unused("normalize", method));
        }
        if normalize {
            if let Some(w) = &weights {
                normalizer(w, k.unwrap_or(K))?;
            }
        }
        if self.lower_is_better.is_given() {
            if info.kind == Kind::Rank {
                return Err(unused("lower_is_better", method));
            }
            if !effective_norm.reads_scores() {
                // It reads the ranks, not the scores.
                return Err(invalid(
                    "lower_is_better",
                    format!(
                        "lower_is_better is not used by norm '{}'",
                        effective_norm.name()
                    ),
                ));
            }
        }
        let lower_is_better = match self.lower_is_better.value()? {
            None => None,
            Some(flags) => Some(
                flags
                    .into_iter()
                    .enumerate()
                    .map(|(i, f)| Ok(f.value().map_err(|e| e.for_list(i))?.unwrap_or(false)))
                    .collect::<Result<Vec<bool>>>()?,
            ),
        };
        let mut parameters = [None; 3];
        for (slot, (param, value)) in parameters.iter_mut().zip([
            (Param::Phi, self.phi),
            (Param::Gamma, self.gamma),
            (Param::Sigma, self.sigma),
        ]) {
            let name = param.name();
            let takes = method.takes(param);
            if value.is_given() && !takes {
                return Err(unused(name, method));
            }
            if !value.is_given() && takes && param != Param::Sigma {
                return Err(invalid(
                    name,
                    format!("method '{}' needs {name}", method.name()),
                ));
            }
            *slot = real(name, value)?.map(plain);
        }
        let [phi, gamma, sigma] = parameters;
        if let Some(phi) = phi.filter(|p| !(0.0..1.0).contains(p)) {
            return Err(invalid(
                "phi",
                format!("phi must satisfy 0 <= phi < 1, got {}", format::float(phi)),
            ));
        }
        if let Some(sigma) = sigma.filter(|s| !(0.0..=1.0).contains(s)) {
            return Err(invalid(
                "sigma",
                format!(
                    "sigma must satisfy 0 <= sigma <= 1, got {}",
                    format::float(sigma)
                ),
            ));
        }
        let sigma = sigma.filter(|&s| s != SIGMA);
        let boost_weight = real("boost_weight", self.boost_weight)?.map(plain);
        if boost_weight.is_some() && normalize {
            return Err(invalid(
                "boost",
                "boost cannot be combined with normalize=True".into(),
            ));
        }
        let trace = self.trace.value()?.unwrap_or(false);
        Ok(Fusion {
            method,
            norm,
            k,
            weights,
            window,
            duplicates,
            tie_break,
            offset,
            limit,
            min_score,
            normalize,
            lower_is_better,
            phi,
            gamma,
            sigma,
            boost_weight,
            trace,
        })
    }
}

impl From<Fusion> for Settings {
    fn from(f: Fusion) -> Self {
        let int = |n: usize| Integer::from(i64::try_from(n).unwrap_or(i64::MAX));
        fn items<T>(v: Vec<T>) -> Vec<Given<T>> {
            v.into_iter().map(Given::Value).collect()
        }
        Settings {
            method: f.method.into(),
            norm: f.norm.into(),
            k: f.k.into(),
            weights: f.weights.map(items).into(),
            window: f.window.map(int).into(),
            duplicates: f.duplicates.into(),
            tie_break: f.tie_break.into(),
            offset: int(f.offset).into(),
            limit: f.limit.map(int).into(),
            min_score: f.min_score.into(),
            normalize: f.normalize.into(),
            lower_is_better: f.lower_is_better.map(items).into(),
            phi: f.phi.into(),
            gamma: f.gamma.into(),
            sigma: f.sigma.into(),
            boost_weight: f.boost_weight.into(),
            trace: f.trace.into(),
        }
    }
}

impl Fusion {
    /// The same fusion, checked by the one checker (for settings written by hand in Rust).
    pub fn check(self) -> Result<Fusion> {
        Settings::from(self).check()
    }

    /// [`Fusion::check`] then [`Fusion::plan`]: for settings written by hand in Rust.
    pub fn check_plan(&self, n_lists: usize) -> Result<Plan> {
        self.clone().check()?.plan(n_lists)
    }

    /// RRF's constant.
    pub fn k(&self) -> f64 {
        self.k.unwrap_or(K)
    }

    /// logn_isr's sigma.
    pub fn sigma(&self) -> f64 {
        self.sigma.unwrap_or(SIGMA)
    }

    /// The normalisation in effect: the method's own, the one asked for, or none (rank-based
    /// methods: none).
    pub fn norm(&self) -> Norm {
        self.method
            .info()
            .own_norm
            .or(self.norm)
            .filter(|_| !self.method.is_rank_based())
            .unwrap_or(Norm::None)
    }

    /// Whether the method's values come from the lists' scores (a score-based method whose
    /// normalisation reads them): a call then needs scores for every list it reads.
    pub fn reads_scores(&self) -> bool {
        !self.method.is_rank_based() && self.norm().reads_scores()
    }

    /// The plan of a call of `n_lists` lists: the weights (and lower_is_better) checked against
    /// them, in that order, then normalize's divisor.
    pub fn plan(&self, n_lists: usize) -> Result<Plan> {
        if let Some(w) = &self.weights {
            per_list("weights", w.len(), n_lists, "values")?;
        }
        let weights = self.weights.clone().unwrap_or_else(|| vec![1.0; n_lists]);
        let normalizer = self
            .normalize
            .then(|| normalizer(&weights, self.k()))
            .transpose()?;
        if let Some(lower) = &self.lower_is_better {
            per_list("lower_is_better", lower.len(), n_lists, "values")?;
        }
        Ok(Plan::new(self.clone(), weights, normalizer))
    }

    /// [`Fusion::plan`], taken from `kept` when it holds the plan of `n_lists` lists, else made
    /// (and kept there when `kept` is empty): a fusion called query after query on the same
    /// number of lists plans once.
    pub fn plan_kept<'a>(&self, n_lists: usize, kept: &'a OnceLock<Plan>) -> Result<Cow<'a, Plan>> {
        if let Some(plan) = kept.get().filter(|p| p.weights.len() == n_lists) {
            return Ok(Cow::Borrowed(plan));
        }
        match kept.set(self.plan(n_lists)?) {
            Ok(()) => self.plan_kept(n_lists, kept), // (borrowed from `kept` now)
            Err(plan) => Ok(Cow::Owned(plan)),       // `kept` holds another's
        }
    }

    /// The `sigma` a fusion shows: logn_isr's (0.01 unless given); none for other methods.
    pub fn sigma_setting(&self) -> Option<f64> {
        (self.method == Method::LognIsr).then(|| self.sigma())
    }

    /// A call's boost against the setting: both or neither.
    pub fn check_boost(&self, boost_given: bool) -> Result<()> {
        match (boost_given, self.boost_weight) {
            (true, None) => Err(invalid("boost", "boost needs boost_weight".into())),
            (false, Some(_)) => Err(invalid(
                "boost_weight",
                "boost_weight is not used without boost".into(),
            )),
            _ => Ok(()),
        }
    }

    /// The settings that differ from the defaults, as (name, value) in the checker's order:
    /// what `repr`, `to_dict` and equality show (`method` always).
    pub fn given(&self) -> Vec<(&'static str, Setting<'_>)> {
        let name = |n: &'static str| Some(Setting::Name(n));
        let all: [(&'static str, Option<Setting<'_>>); 17] = [
            ("method", name(self.method.name())),
            ("norm", self.norm.and_then(|n| name(n.name()))),
            ("k", self.k.map(Setting::Real)),
            ("weights", self.weights.as_deref().map(Setting::Reals)),
            ("window", self.window.map(Setting::Count)),
            (
                "duplicates",
                (self.duplicates != Duplicates::First)
                    .then_some(Setting::Name(self.duplicates.name())),
            ),
            (
                "tie_break",
                (self.tie_break != TieBreak::BestRank)
                    .then_some(Setting::Name(self.tie_break.name())),
            ),
            (
                "offset",
                (self.offset != 0).then_some(Setting::Count(self.offset)),
            ),
            ("limit", self.limit.map(Setting::Count)),
            ("min_score", self.min_score.map(Setting::Real)),
            ("normalize", self.normalize.then_some(Setting::Flag(true))),
            (
                "lower_is_better",
                self.lower_is_better.as_deref().map(Setting::Flags),
            ),
            ("phi", self.phi.map(Setting::Real)),
            ("gamma", self.gamma.map(Setting::Real)),
            ("sigma", self.sigma.map(Setting::Real)),
            ("boost_weight", self.boost_weight.map(Setting::Real)),
            ("trace", self.trace.then_some(Setting::Flag(true))),
        ];
        let out: Vec<_> = all
            .into_iter()
            .filter_map(|(n, v)| v.map(|v| (n, v)))
            .collect();
        out
    }
}

impl Fusion {
    /// `Fusion(...)` as Python's `repr` of `rankfusion.Fusion` writes it: the settings given
    /// (see [`Fusion::given`]), each as Python writes its value.
    pub fn repr(&self) -> String {
        let settings: Vec<String> = self
            .given()
            .into_iter()
            .map(|(name, value)| format!("{name}={}", value.repr()))
            .collect();
        format!("Fusion({})", settings.join(", "))
    }

    /// A hash of the settings given: equal fusions (equal [`Fusion::given`]) hash alike.
    pub fn hash_given(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for (name, value) in self.given() {
            name.hash(&mut h);
            value.hash(&mut h);
        }
        h.finish()
    }
}

/// A setting's value, for [`Fusion::given`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Setting<'a> {
    Name(&'static str),
    Real(f64),
    Reals(&'a [f64]),
    Count(usize),
    Flag(bool),
    Flags(&'a [bool]),
}

impl Setting<'_> {
    /// The value as Python's `repr` writes it.
    pub fn repr(&self) -> String {
        let flag = |b: bool| if b { "True" } else { "False" };
        match *self {
            Setting::Name(n) => format!("'{n}'"),
            Setting::Real(x) => format::float(x),
            Setting::Reals(xs) => {
                let xs: Vec<String> = xs.iter().map(|&x| format::float(x)).collect();
                format!("[{}]", xs.join(", "))
            }
            Setting::Count(n) => n.to_string(),
            Setting::Flag(b) => flag(b).to_owned(),
            Setting::Flags(bs) => {
                let bs: Vec<&str> = bs.iter().map(|&b| flag(b)).collect();
                format!("[{}]", bs.join(", "))
            }
        }
    }
}

impl std::hash::Hash for Setting<'_> {
    /// The value's own hash (reals by their bits), without the variant.
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        match *self {
            Setting::Name(n) => n.hash(h),
            Setting::Real(x) => x.to_bits().hash(h),
            Setting::Reals(xs) => xs.iter().for_each(|x| x.to_bits().hash(h)),
            Setting::Count(n) => n.hash(h),
            Setting::Flag(b) => b.hash(h),
            Setting::Flags(bs) => bs.hash(h),
        }
    }
}

/// `f`'s factor for `present` lists under `fusion`'s sigma and gamma ([`Factor::of_count`]).
fn count_factor(fusion: &Fusion, f: Factor, present: usize) -> Option<f64> {
    f.of_count(present, fusion.sigma(), fusion.gamma.unwrap_or(1.0))
}

/// A checked fusion for a call of a known number of lists: the settings, the weight of every
/// list and the normaliser. The same plan serves every row or query of a call.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub fusion: Fusion,
    /// The weight of each list (`fusion.weights` resolved for the number of lists).
    pub weights: Vec<f64>,
    /// With normalize=True, the divisor of every score.
    pub normalizer: Option<f64>,
    /// The normalisation in effect (`Norm::None` for rank-based methods).
    pub norm: Norm,
    /// Per list, its first terms of rank (`weights[i] / (k + rank)`, ...), computed once for
    /// every row.
    terms: Vec<Vec<f64>>,
    /// A `Times` method's factor of a count (`Factor::of_count`) for 0 ..= the lists' count,
    /// computed once for the call rather than once per key (ln, powf); empty for the others.
    present_factors: Vec<f64>,
    /// The `Factor` `present_factors` tabulates.
    tabulated: Option<Factor>,
}

impl Plan {
    fn new(fusion: Fusion, weights: Vec<f64>, normalizer: Option<f64>) -> Self {
        let norm = fusion.norm();
        let tabulated = match fusion.method.combine() {
            Combine::Times(f) => Some(f),
            _ => None,
        };
        let present_factors = tabulated.map_or_else(Vec::new, |f| {
            (0..=weights.len())
                .map_while(|n| count_factor(&fusion, f, n))
                .collect()
        });
        Plan {
            fusion,
            present_factors,
            tabulated,
            terms: vec![Vec::new(); weights.len()],
            weights,
            normalizer,
            norm,
        }
    }

    /// The plan's method's factor for `present` lists holding a key (`f`: that method's
    /// `Factor`), from the table made once for the call.
    #[inline(always)]
    pub fn present_factor(&self, f: Factor, present: usize) -> Option<f64> {
        match self.present_factors.get(present) {
            Some(&v) if self.tabulated == Some(f) => Some(v),
            _ => f.of_count(
                present,
                self.fusion.sigma(),
                self.fusion.gamma.unwrap_or(1.0),
            ),
        }
    }

    /// Whether the method's values come from the lists' scores.
    pub fn reads_scores(&self) -> bool {
        self.fusion.reads_scores()
    }

    /// A method that reads scores needs them for every list it reads: `given(i)` says whether
    /// list i has them.
    pub fn check_scores_given(&self, given: impl Fn(usize) -> bool) -> Result<()> {
        if !self.reads_scores() {
            return Ok(());
        }
        match (0..self.n_lists()).find(|&i| self.weights[i] != 0.0 && !given(i)) {
            Some(i) => Err(scores_missing(self.fusion.method, self.norm, i)),
            None => Ok(()),
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
            len.min(self.fusion.window.unwrap_or(usize::MAX))
        }
    }

    /// Computes the rank terms of the first `lens[i]` positions of list i in advance, so that a
    /// batch of rows computes them once per position, not once per row.
    pub fn with_rank_terms(mut self, lens: &[usize]) -> Self {
        for (list, &len) in lens.iter().enumerate().take(self.weights.len()) {
            let n = self.read_len(list, len);
            let terms: Vec<f64> = (0..n).map(|p| self.rank_term_of(list, p)).collect();
            self.terms[list] = terms;
        }
        self
    }

    /// The term of the item at `position` of `list` for the methods whose terms are values of
    /// ranks: RRF's `weight / (k + rank)`, RBC's `weight * ((1 - phi) * phi^(rank - 1))`, the
    /// ISR family's `1 / rank²`.
    #[inline(always)] // in the scan's loop, once per occurrence
    pub fn rank_term(&self, list: usize, position: usize) -> f64 {
        match self.terms[list].get(position) {
            Some(&c) => c,
            None => self.rank_term_of(list, position),
        }
    }

    #[cold] // past the plan's table of terms: rare
    fn rank_term_of(&self, list: usize, position: usize) -> f64 {
        let w = self.weights[list];
        match self.fusion.method.term() {
            Term::RankBiased => {
                let phi = self.fusion.phi.unwrap_or(0.0);
                w * ((1.0 - phi) * power(phi, position as u64))
            }
            Term::InverseSquare => {
                let rank = position as u64 + 1;
                1.0 / (rank * rank) as f64
            }
            Term::Reciprocal => reciprocal(w, self.fusion.k(), position as u32),
            // Not terms of the rank: never asked.
            Term::Points
            | Term::Vote
            | Term::Value
            | Term::Weighted
            | Term::WeightedLog
            | Term::WeightedInverse => f64::NAN,
        }
    }
}

/// RRF's term of an item at `position` (rank `position + 1`).
#[inline]
pub fn reciprocal(weight: f64, k: f64, position: u32) -> f64 {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn integer(value: i64, digits: Option<&str>) -> Integer {
        Integer {
            value,
            digits: digits.map(str::to_owned),
        }
    }

    fn message(e: Error) -> String {
        e.to_string()
    }

    #[test]
    fn counts_and_int64s() {
        assert_eq!(count("limit", integer(3, None), 0), Ok(3));
        assert_eq!(
            count("limit", integer(i64::MAX, Some("9")), 0),
            Ok(usize::MAX)
        );
        assert_eq!(
            message(count("threads", integer(0, None), 1).unwrap_err()),
            "threads must be >= 1, got 0"
        );
        let huge = "-99999999999999999999";
        assert_eq!(
            message(count("limit", integer(i64::MIN, Some(huge)), 0).unwrap_err()),
            format!("limit must be >= 0, got {huge}")
        );
        assert_eq!(int64("pad", integer(-1, None)), Ok(-1));
        assert_eq!(
            message(int64("pad", integer(i64::MAX, Some("99999999999999999999"))).unwrap_err()),
            "pad must fit in int64, got 99999999999999999999"
        );
        assert_eq!(
            message(int64("pad", integer(i64::MIN, Some(huge))).unwrap_err()),
            format!("pad must be >= -9223372036854775808, got {huge}")
        );
    }

    #[test]
    fn choices_and_lengths() {
        let e = not_one_of("duplicates", Duplicates::NAMES, "'x'", false);
        assert!(!e.is_type_error());
        assert_eq!(
            message(e),
            "duplicates must be one of ('first', 'sum', 'error'), got 'x'"
        );
        let e = not_one_of("tie_break", TieBreak::NAMES, "int 3", true);
        assert!(e.is_type_error());
        assert_eq!(e.argument(), Some("tie_break"));
        assert_eq!(queries_scores_len(2, 2), Ok(()));
        assert_eq!(
            message(queries_scores_len(1, 2).unwrap_err()),
            "scores has 1 entries for 2 queries"
        );
    }

    #[test]
    fn repr_hash_and_sigma() {
        let f = Fusion {
            method: Method::Wsum,
            norm: Some(Norm::MinMax),
            weights: Some(vec![0.3, 0.7]),
            lower_is_better: Some(vec![false, true]),
            limit: Some(10),
            ..Fusion::default()
        };
        assert_eq!(
            f.repr(),
            "Fusion(method='wsum', norm='min-max', weights=[0.3, 0.7], limit=10, \
             lower_is_better=[False, True])"
        );
        assert_eq!(Fusion::default().repr(), "Fusion(method='rrf')");
        assert_eq!(f.hash_given(), f.clone().hash_given());
        assert_ne!(f.hash_given(), Fusion::default().hash_given());
        assert_eq!(f.sigma_setting(), None);
        let logn = Fusion {
            method: Method::LognIsr,
            ..Fusion::default()
        };
        assert_eq!(logn.sigma_setting(), Some(SIGMA));
    }
}
