//! The method table: every fusion method as one row of properties — what its values come from,
//! what one counted occurrence adds (its [`Term`]), how a key's terms become its score (its
//! [`Combine`]), whether it is weighted, which parameters it takes and the normalisation it
//! applies itself — and every normalisation as one row too. The checker ([`super::params`]), the
//! kernel ([`super::kernel`]) and the Python table `rankfusion.METHODS` all read these rows;
//! nothing else names a method. docs/semantics.md, "Fusion methods", is the same table in words.
//!
//! Adding a method: its row in [`methods!`] below (and, when its term or combination is new, a
//! variant of [`Term`] or [`Combine`] with its formula in the kernel), its row in the reference's
//! `METHODS`, its row in docs/semantics.md.

/// What a method's values come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The ranks: no normalisation, no scores needed.
    Rank,
    /// The lists' scores, normalised per list by `norm`.
    Score,
}

impl Kind {
    /// Its name in `rankfusion.METHODS`: "rank" or "score".
    pub fn name(self) -> &'static str {
        match self {
            Kind::Rank => "rank",
            Kind::Score => "score",
        }
    }
}

/// What one counted occurrence of a key at rank `r` of a list of weight `w` adds, `v` being its
/// normalised value (or, for [`Term::Points`], its BordaFuse points).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Term {
    /// `w / (k + r)` (RRF).
    Reciprocal,
    /// `w (1 − φ) φ^(r−1)`, the power by repeated squaring (RBC).
    RankBiased,
    /// `1 / r²` (the ISR family).
    InverseSquare,
    /// `w · points`: `|C| − r + 1` in a list holding the key, `(|C| − n + 1) / 2` in one that
    /// does not (BordaFuse).
    Points,
    /// `w`, the list's vote (Condorcet's pairwise comparisons read the ranks).
    Vote,
    /// `v`.
    Value,
    /// `w v`.
    Weighted,
    /// `w ln v` for `v > 0`, else 0.0 (the geometric mean).
    WeightedLog,
    /// `w / v` for `v > 0`, else 0.0 (the harmonic mean).
    WeightedInverse,
}

/// What the canonical sum of a key's terms is multiplied by, a function of the lists holding it
/// (`|present|`) and their weights.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Factor {
    /// `|present|` (CombMNZ, ISR).
    Present,
    /// `ln |present|` (log_ISR).
    LogPresent,
    /// `ln(|present| + σ)` (logn_ISR).
    LogPresentSigma,
    /// `|present|^γ` (gmnz).
    PresentPowGamma,
    /// `√|present|` (mixed).
    SqrtPresent,
    /// `Σ_present w`, a canonical sum (wmnz).
    PresentWeights,
}

impl Factor {
    /// The factor for `present` lists holding a key, from the count alone (`None` for
    /// [`Factor::PresentWeights`], which reads the lists' weights): the one formula, which
    /// `Plan` tabulates once per call.
    pub fn of_count(self, present: usize, sigma: f64, gamma: f64) -> Option<f64> {
        let p = present as f64;
        Some(match self {
            Factor::Present => p,
            Factor::LogPresent => p.ln(),
            Factor::LogPresentSigma => (p + sigma).ln(),
            Factor::PresentPowGamma => p.powf(gamma),
            Factor::SqrtPresent => p.sqrt(),
            Factor::PresentWeights => return None,
        })
    }
}

/// How a key's terms become its score.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Combine {
    /// The canonical sum of the terms.
    Sum,
    /// The sum times a [`Factor`].
    Times(Factor),
    /// The sum divided by `|present|` (CombANZ).
    PerList,
    /// The largest normalised value (CombMAX).
    Max,
    /// The smallest normalised value (CombMIN).
    Min,
    /// The median normalised value (CombMED).
    Median,
    /// `Σ w v / Σ w` over the lists read, negative values skipped with their weight (OpenSearch).
    ArithmeticMean,
    /// `exp(Σ w ln v / Σ w)` over the values above 0 (OpenSearch).
    GeometricMean,
    /// `Σ w / Σ (w / v)` over the values above 0 (OpenSearch).
    HarmonicMean,
    /// Copeland: one plus the number of keys it beats (Condorcet).
    Copeland,
}

impl Term {
    /// Whether it is a term of the rank alone (the plan's rank terms: RRF, RBC, the ISR
    /// family), computed once per position for every query ([`super::params::Plan`]).
    pub fn of_rank(self) -> bool {
        match self {
            Term::Reciprocal | Term::RankBiased | Term::InverseSquare => true,
            Term::Points
            | Term::Vote
            | Term::Value
            | Term::Weighted
            | Term::WeightedLog
            | Term::WeightedInverse => false,
        }
    }

    /// Whether a normalised value that is not finite always gives a term that is not finite,
    /// whatever the weight: `v`, `w v`, `w · points` (a product with ±inf or NaN is ±inf or
    /// NaN, 0 · inf too), so that checking the terms checks the values. Not for `w` (the value
    /// unread), `w ln v` and `w / v` (0.0 or `w / inf` = 0 where v is not above 0 or is inf), nor
    /// the rank terms (of no value).
    pub fn shows_non_finite(self) -> bool {
        match self {
            Term::Value | Term::Weighted | Term::Points => true,
            Term::Reciprocal
            | Term::RankBiased
            | Term::InverseSquare
            | Term::Vote
            | Term::WeightedLog
            | Term::WeightedInverse => false,
        }
    }

    /// The formula, as docs/semantics.md writes it.
    pub fn formula(self) -> &'static str {
        match self {
            Term::Reciprocal => "w / (k + r)",
            Term::RankBiased => "w (1 - phi) phi^(r - 1)",
            Term::InverseSquare => "1 / r^2",
            Term::Points => "w * points",
            Term::Vote => "w",
            Term::Value => "v",
            Term::Weighted => "w v",
            Term::WeightedLog => "w ln v (v > 0)",
            Term::WeightedInverse => "w / v (v > 0)",
        }
    }
}

impl Combine {
    /// The formula, as docs/semantics.md writes it (`S`: the canonical sum of the terms).
    pub fn formula(self) -> &'static str {
        match self {
            Combine::Sum => "S",
            Combine::Times(Factor::Present) => "S * |present|",
            Combine::Times(Factor::LogPresent) => "S * ln |present|",
            Combine::Times(Factor::LogPresentSigma) => "S * ln(|present| + sigma)",
            Combine::Times(Factor::PresentPowGamma) => "S * |present|^gamma",
            Combine::Times(Factor::SqrtPresent) => "S * sqrt(|present|)",
            Combine::Times(Factor::PresentWeights) => "S * sum of the present lists' weights",
            Combine::PerList => "S / |present|",
            Combine::Max => "max v",
            Combine::Min => "min v",
            Combine::Median => "median v",
            Combine::ArithmeticMean => "S / sum of w (v >= 0)",
            Combine::GeometricMean => "exp(S / sum of w (v > 0))",
            Combine::HarmonicMean => "sum of w (v > 0) / S",
            Combine::Copeland => "1 + the number of keys it beats",
        }
    }

    /// Whether the score is one of the key's normalised values (or the mean of two).
    pub fn picks_a_value(self) -> bool {
        matches!(self, Combine::Max | Combine::Min | Combine::Median)
    }

    /// Whether it is one of OpenSearch's means (whose weights must not be negative).
    pub fn is_mean(self) -> bool {
        matches!(
            self,
            Combine::ArithmeticMean | Combine::GeometricMean | Combine::HarmonicMean
        )
    }
}

/// A parameter a method may take besides the weights.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param {
    K,
    Normalize,
    Phi,
    Gamma,
    Sigma,
}

impl Param {
    pub fn name(self) -> &'static str {
        match self {
            Param::K => "k",
            Param::Normalize => "normalize",
            Param::Phi => "phi",
            Param::Gamma => "gamma",
            Param::Sigma => "sigma",
        }
    }
}

/// One row of the method table.
#[derive(Clone, Copy, Debug)]
pub struct MethodInfo {
    pub method: Method,
    pub name: &'static str,
    pub kind: Kind,
    /// Whether it takes `weights`.
    pub weighted: bool,
    /// The parameters it takes besides the weights.
    pub params: &'static [Param],
    /// The normalisation it applies itself (the caller's `norm` is then refused).
    pub own_norm: Option<Norm>,
    /// Whether a list read that does not hold a key still gives it a term (BordaFuse's unranked
    /// points, the arithmetic mean's zero). The `borda` norm fills too, whatever the method.
    pub fills: bool,
    pub term: Term,
    pub combine: Combine,
    /// Where the definition comes from.
    pub anchor: &'static str,
}

macro_rules! methods {
    ($($variant:ident $name:literal: $kind:ident, weighted $weighted:literal, params [$($param:ident),*],
       norm $norm:expr, fills $fills:literal, $term:ident, $combine:expr, $anchor:literal;)*) => {
        /// How a fusion scores keys (docs/semantics.md, "Fusion methods"): one variant per row of
        /// [`METHODS`].
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Method {
            $($variant,)*
        }

        /// The method table, in [`Method`]'s order.
        pub const METHODS: &[MethodInfo] = &[
            $(MethodInfo {
                method: Method::$variant,
                name: $name,
                kind: Kind::$kind,
                weighted: $weighted,
                params: &[$(Param::$param),*],
                own_norm: $norm,
                fills: $fills,
                term: Term::$term,
                combine: $combine,
                anchor: $anchor,
            },)*
        ];
    };
}

use Combine::*;
use Factor::*;

methods! {
    Rrf "rrf": Rank, weighted true, params [K, Normalize], norm None, fills false,
        Reciprocal, Sum, "Cormack et al.; ranx, Elasticsearch, OpenSearch, Qdrant";
    Rbc "rbc": Rank, weighted true, params [Phi], norm None, fills false,
        RankBiased, Sum, "ranx";
    Isr "isr": Rank, weighted false, params [], norm None, fills false,
        InverseSquare, Times(Present), "ranx";
    LogIsr "log_isr": Rank, weighted false, params [], norm None, fills false,
        InverseSquare, Times(LogPresent), "ranx";
    LognIsr "logn_isr": Rank, weighted false, params [Sigma], norm None, fills false,
        InverseSquare, Times(LogPresentSigma), "ranx";
    Bordafuse "bordafuse": Rank, weighted true, params [], norm None, fills true,
        Points, Sum, "ranx (w_bordafuse when weighted)";
    Condorcet "condorcet": Rank, weighted true, params [], norm None, fills false,
        Vote, Copeland, "ranx (w_condorcet when weighted)";
    Sum "sum": Score, weighted false, params [], norm None, fills false,
        Value, Sum, "CombSUM";
    Wsum "wsum": Score, weighted true, params [], norm None, fills false,
        Weighted, Sum, "ranx wsum; Elasticsearch's linear retriever";
    Mnz "mnz": Score, weighted false, params [], norm None, fills false,
        Value, Times(Present), "CombMNZ";
    Anz "anz": Score, weighted false, params [], norm None, fills false,
        Value, PerList, "CombANZ";
    Gmnz "gmnz": Score, weighted false, params [Gamma], norm None, fills false,
        Value, Times(PresentPowGamma), "ranx";
    Max "max": Score, weighted false, params [], norm None, fills false,
        Value, Max, "CombMAX";
    Min "min": Score, weighted false, params [], norm None, fills false,
        Value, Min, "CombMIN";
    Med "med": Score, weighted false, params [], norm None, fills false,
        Value, Median, "CombMED";
    Wmnz "wmnz": Score, weighted true, params [], norm None, fills false,
        Value, Times(PresentWeights), "ranx";
    Mixed "mixed": Score, weighted true, params [], norm None, fills false,
        Weighted, Times(SqrtPresent), "ranx";
    Dbsf "dbsf": Score, weighted false, params [], norm Some(Norm::Dbsf), fills false,
        Value, Sum, "Qdrant's Fusion::Dbsf";
    RelativeScore "relative_score": Score, weighted true, params [], norm Some(Norm::MinMax),
        fills false, Weighted, Sum, "Weaviate's relativeScoreFusion";
    ArithmeticMean "arithmetic_mean": Score, weighted true, params [], norm None, fills true,
        Weighted, ArithmeticMean, "OpenSearch";
    GeometricMean "geometric_mean": Score, weighted true, params [], norm None, fills false,
        WeightedLog, GeometricMean, "OpenSearch";
    HarmonicMean "harmonic_mean": Score, weighted true, params [], norm None, fills false,
        WeightedInverse, HarmonicMean, "OpenSearch";
}

impl Method {
    /// Its row of the table.
    #[inline]
    pub fn info(self) -> &'static MethodInfo {
        &METHODS[self as usize]
    }

    pub fn from_name(name: &str) -> Option<Self> {
        METHODS.iter().find(|m| m.name == name).map(|m| m.method)
    }

    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// The names, in the table's order.
    pub fn names() -> impl Iterator<Item = &'static str> {
        METHODS.iter().map(|m| m.name)
    }

    /// Whether `optimize` can score its settings from one traced fusion
    /// ([`crate::optimize`]): a sum of its terms, perhaps times a factor of the lists holding
    /// the key, each term a function of one list's rank or normalised value (not BordaFuse's
    /// points, which count the keys).
    pub fn scored_from_trace(self) -> bool {
        let info = self.info();
        matches!(info.combine, Combine::Sum | Combine::Times(_)) && info.term != Term::Points
    }

    /// Whether the values come from the ranks (no normalisation, no scores needed).
    #[inline]
    pub fn is_rank_based(self) -> bool {
        self.info().kind == Kind::Rank
    }

    pub fn is_weighted(self) -> bool {
        self.info().weighted
    }

    pub fn takes(self, param: Param) -> bool {
        self.info().params.contains(&param)
    }

    #[inline]
    pub fn term(self) -> Term {
        self.info().term
    }

    #[inline]
    pub fn combine(self) -> Combine {
        self.info().combine
    }
}

/// A list's normalisation (score-based methods), per list and query, over the raw scores of its
/// counted occurrences (docs/semantics.md, "Normalisations"); the formulas are in
/// [`super::kernel::list_norm`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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

/// One row of the normalisation table.
#[derive(Clone, Copy, Debug)]
pub struct NormInfo {
    pub norm: Norm,
    pub name: &'static str,
    /// Whether it reads the lists' scores (`rank` and `borda` read the ranks only).
    pub reads_scores: bool,
    /// Whether its value depends on the number of keys of the query (borda), so that every key
    /// gets a value in every list read.
    pub fills: bool,
}

/// The normalisation table, in [`Norm`]'s order.
pub const NORMS: &[NormInfo] = &[
    norm(Norm::None, "none", true),
    norm(Norm::MinMax, "min-max", true),
    norm(Norm::Max, "max", true),
    norm(Norm::Sum, "sum", true),
    norm(Norm::ZScore, "z-score", true),
    norm(Norm::L2, "l2", true),
    norm(Norm::Rank, "rank", false),
    NormInfo {
        fills: true,
        ..norm(Norm::Borda, "borda", false)
    },
    norm(Norm::Dbsf, "dbsf", true),
];

const fn norm(norm: Norm, name: &'static str, reads_scores: bool) -> NormInfo {
    NormInfo {
        norm,
        name,
        reads_scores,
        fills: false,
    }
}

impl Norm {
    #[inline]
    pub fn info(self) -> &'static NormInfo {
        &NORMS[self as usize]
    }

    pub fn from_name(name: &str) -> Option<Self> {
        NORMS.iter().find(|n| n.name == name).map(|n| n.norm)
    }

    pub fn name(self) -> &'static str {
        self.info().name
    }

    pub fn names() -> impl Iterator<Item = &'static str> {
        NORMS.iter().map(|n| n.name)
    }

    /// Whether it reads the lists' scores (`rank` and `borda` read the ranks only).
    #[inline]
    pub fn reads_scores(self) -> bool {
        self.info().reads_scores
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tables_are_in_their_enums_order() {
        for (i, m) in METHODS.iter().enumerate() {
            assert_eq!(m.method as usize, i, "{}", m.name);
            assert_eq!(Method::from_name(m.name), Some(m.method));
            // A method's own norm is a norm that reads scores.
            assert!(m.own_norm.is_none_or(|n| n.reads_scores()), "{}", m.name);
            // A mean's weights are checked >= 0; a rank method takes no norm.
            assert!(!(m.kind == Kind::Rank && m.own_norm.is_some()));
        }
        for (i, n) in NORMS.iter().enumerate() {
            assert_eq!(n.norm as usize, i, "{}", n.name);
            assert_eq!(Norm::from_name(n.name), Some(n.norm));
        }
        assert_eq!(Method::from_name("nope"), None);
    }

    /// `Term::shows_non_finite` (the dense path checks only the terms where it holds) against
    /// the terms themselves: every value that is not finite, with any weight, gives a term
    /// that is not finite; where it does not hold, some value and weight give a finite term.
    #[test]
    fn a_term_shows_a_value_not_finite_where_it_says_so() {
        use super::super::kernel::value_term;
        let values = [f64::INFINITY, f64::NEG_INFINITY, f64::NAN];
        let weights = [1.0, -0.5, 0.0, 1e-300, 1e300, f64::MIN_POSITIVE / 4.0];
        let terms = [
            Term::Points,
            Term::Vote,
            Term::Value,
            Term::Weighted,
            Term::WeightedLog,
            Term::WeightedInverse,
        ];
        for t in terms {
            let shown = values
                .iter()
                .all(|&v| weights.iter().all(|&w| !value_term(t, w, v).is_finite()));
            assert_eq!(t.shows_non_finite(), shown, "{t:?}");
        }
        for t in [Term::Reciprocal, Term::RankBiased, Term::InverseSquare] {
            assert!(!t.shows_non_finite(), "{t:?}");
        }
    }
}
