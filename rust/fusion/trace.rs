//! The one trace layout: what each hit of a page owes to each list. The engine fills it
//! ([`super::Workspace::trace`]); the binding turns it into Python `Contribution` objects
//! (`rrf`) or per-list arrays (`rrf_batch`, with [`per_list`]).

use super::canonical_sum;

/// One counted occurrence of a hit's key: at `position` (rank `position + 1`) of list `list`,
/// worth `value` (`weight / (k + rank)`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Contribution {
    pub list: u32,
    pub position: u32,
    pub value: f64,
}

impl Contribution {
    /// The 1-based rank.
    pub fn rank(&self) -> usize {
        self.position as usize + 1
    }
}

/// The contributions of the hits of a page: hit j's are
/// `contributions[offsets[j]..offsets[j + 1]]` (`offsets[0]` is 0), ordered by list then
/// position.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    pub offsets: Vec<usize>,
    pub contributions: Vec<Contribution>,
}

impl Trace {
    pub fn clear(&mut self) {
        self.offsets.clear();
        self.offsets.push(0);
        self.contributions.clear();
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

/// Per list a hit is in, in list order: (list, best rank, the canonical sum of the hit's
/// contributions from that list), given the hit's contributions ordered by list then position
/// (so a list's first is its best). `values` is scratch space.
pub fn per_list(
    contributions: &[Contribution],
    values: &mut Vec<f64>,
    mut out: impl FnMut(u32, usize, f64),
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
        out(first.list, first.rank(), sum);
        i = j;
    }
}
