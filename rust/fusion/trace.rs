//! The one trace layout: what each hit of a page owes to each list. The engine fills it
//! ([`super::Workspace::trace`]); the binding turns it into Python `Contribution` objects
//! (`rrf`, `fuse`) or per-list arrays (`rrf_batch`, `fuse_batch`, with [`per_list`]).

use super::canonical_sum;
use super::kernel::UNRANKED;

/// What one list gave a hit: the occurrence at `position` (rank `position + 1`; [`UNRANKED`]
/// when the key is not in the list and the method still gives it a value there) of list `list`,
/// worth `value` (the term the method adds: RRF's `weight / (k + rank)`), the list's raw score
/// there (`raw`, NaN when unknown) and its normalised value (`normalized`, NaN for methods that
/// do not normalise).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Contribution {
    pub list: u32,
    pub position: u32,
    pub value: f64,
    pub raw: f64,
    pub normalized: f64,
}

impl Contribution {
    /// The 1-based rank, or 0 when the key is not in the list.
    pub fn rank(&self) -> usize {
        if self.position == UNRANKED {
            0
        } else {
            self.position as usize + 1
        }
    }
}

/// The contributions of the hits of a page: hit j's are
/// `contributions[offsets[j]..offsets[j + 1]]` (`offsets[0]` is 0), ordered by list then
/// position; and what the method did with them (NaN: nothing): `factors[j]` multiplied their
/// sum, `divisors[j]` divided it, `boosts[j]` was added by the boost.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    pub offsets: Vec<usize>,
    pub contributions: Vec<Contribution>,
    pub factors: Vec<f64>,
    pub divisors: Vec<f64>,
    pub boosts: Vec<f64>,
}

impl Trace {
    pub fn clear(&mut self) {
        self.offsets.clear();
        self.offsets.push(0);
        self.contributions.clear();
        self.factors.clear();
        self.divisors.clear();
        self.boosts.clear();
    }

    /// The number of hits traced.
    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Hit `j`'s contributions.
    pub fn hit(&self, j: usize) -> &[Contribution] {
        &self.contributions[self.offsets[j]..self.offsets[j + 1]]
    }
}

/// Per list a hit has contributions from, in list order: (list, best rank (0 when the key is
/// not in the list), the canonical sum of the contributions from that list, the normalised
/// value of the first), given the hit's contributions ordered by list then position (so a list's
/// first is its best). `values` is scratch space.
pub fn per_list(
    contributions: &[Contribution],
    values: &mut Vec<f64>,
    mut out: impl FnMut(u32, usize, f64, f64),
) {
    let mut i = 0;
    while i < contributions.len() {
        let first = contributions[i];
        let mut j = i + 1;
        while j < contributions.len() && contributions[j].list == first.list {
            j += 1;
        }
        let sum = if j == i + 1 {
            0.0 + first.value
        } else {
            values.clear();
            values.extend(contributions[i..j].iter().map(|c| c.value));
            canonical_sum(values)
        };
        out(first.list, first.rank(), sum, first.normalized);
        i = j;
    }
}
