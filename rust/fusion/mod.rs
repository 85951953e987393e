//! Reciprocal Rank Fusion, as docs/semantics.md defines it, in one engine.
//!
//! - [`params`]: the arguments, their checks, and the [`Plan`] of a checked call;
//! - [`keys`]: where keys come from ([`KeySource`]): i64 rows hashed in an [`IdTable`], or keys
//!   interned by the caller;
//! - [`engine`]: the [`Workspace`] that scans, scores, ranks and pages one query at a time;
//! - [`trace`]: the one layout of a page's contributions.
//!
//! [`rrf`] composes them for plain Rust keys of any `K: Hash + Eq + Ord`.

pub mod condorcet;
pub mod engine;
pub mod kernel;
pub mod keys;
#[cfg(test)]
mod method_tests;
pub mod methods;
pub mod norms;
pub mod params;
#[cfg(test)]
mod tests;
pub mod trace;

use std::hash::Hash;

pub use engine::{Caller, Engine, Firsts, Nothing, Workspace};
pub use kernel::Scores;
pub use keys::{IdTable, Interned, Interner, KeySource, Rows};
pub use methods::{Method, Norm, METHODS, NORMS};
pub use params::{Duplicates, Fusion, Plan, Settings, TieBreak};
pub use trace::{Contribution, Trace};

use crate::cancel::Cancel;
use crate::error::Result;

/// The hasher of the core's hash tables (seeded per process).
pub type Hasher = foldhash::fast::RandomState;

/// The canonical sum: ascending order of value, from 0.0, one f64 addition at a time. Sorts
/// `values` in place when there are more than 5. All values must be finite (contributions
/// always are).
#[inline(always)] // once per key in the kernel's loops
pub fn canonical_sum(values: &mut [f64]) -> f64 {
    match values.len() {
        0 => 0.0,
        1 => 0.0 + values[0],
        // Two values need no ordering: 0.0 + a is a (or +0.0 for -0.0), and one addition is
        // commutative, so (0.0 + a) + b and (0.0 + b) + a have the same bits.
        2 => 0.0 + values[0] + values[1],
        3 => sorted_sum([values[0], values[1], values[2]], NETWORK_3),
        4 => sorted_sum([values[0], values[1], values[2], values[3]], NETWORK_4),
        5 => sorted_sum(
            [values[0], values[1], values[2], values[3], values[4]],
            NETWORK_5,
        ),
        _ => sorted_sum_of_many(values),
    }
}

/// [`canonical_sum`] of more than 5 values (sorted in place): rare, kept out of the loops.
#[inline(never)]
fn sorted_sum_of_many(values: &mut [f64]) -> f64 {
    values.sort_unstable_by(f64::total_cmp);
    values.iter().fold(0.0, |acc, &v| acc + v)
}

/// Sorting networks of 3, 4 and 5 values (Knuth, TAOCP 5.3.4; optimal in comparators).
const NETWORK_3: &[(usize, usize)] = &[(0, 2), (0, 1), (1, 2)];
const NETWORK_4: &[(usize, usize)] = &[(0, 1), (2, 3), (0, 2), (1, 3), (1, 2)];
const NETWORK_5: &[(usize, usize)] = &[
    (0, 1),
    (3, 4),
    (2, 4),
    (2, 3),
    (0, 3),
    (0, 2),
    (1, 4),
    (1, 3),
    (1, 2),
];

/// The canonical sum of a key's few values, sorted by `network`, a sorting network, in
/// registers and with no branch on the values (an insertion sort mispredicts about every other
/// comparison). Equal values may end in either order, which changes no bit of the sum: they are
/// equal, or +0.0 and -0.0, neither of which changes a sum started at +0.0.
#[inline(always)]
fn sorted_sum<const N: usize>(v: [f64; N], network: &[(usize, usize)]) -> f64 {
    network_sort(v, network).iter().fold(0.0, |acc, &x| acc + x)
}

#[inline(always)]
fn network_sort<const N: usize>(mut v: [f64; N], network: &[(usize, usize)]) -> [f64; N] {
    for &(i, j) in network {
        let (a, b) = (v[i], v[j]);
        // (Not `min` and `max`, which would drop a NaN: this keeps every value.)
        let swap = b < a;
        v[i] = if swap { b } else { a };
        v[j] = if swap { a } else { b };
    }
    v
}

/// One fused hit of [`rrf`]: its key's first occurrence (list, position) and its score.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    pub list_index: usize,
    pub position: usize,
    pub score: f64,
}

/// Orders tied keys by `K`'s order: the key object at a key's first occurrence.
struct ByKey<'a, K>(&'a [&'a [K]]);

impl<K: Ord> Caller<crate::Error> for ByKey<'_, K> {
    fn orders_ties(&self) -> bool {
        true
    }

    fn order_ties(&mut self, group: &mut [u32], firsts: &Firsts<'_>) -> Result<()> {
        let key = |id: u32| {
            let (list, position) = firsts.get(id);
            &self.0[list as usize][position as usize]
        };
        group.sort_by(|&a, &b| key(a).cmp(key(b)));
        Ok(())
    }
}

/// A fusion of `lists` (plain Rust keys, equal keys being one key) with `fusion`'s settings,
/// checked: the page of hits, best first; with [`TieBreak::Key`] tied keys are ordered by
/// `K`'s order.
pub fn rrf<K: Hash + Eq + Ord>(lists: &[&[K]], fusion: &Fusion) -> Result<Vec<Hit>> {
    let plan = fusion.check_plan(lists.len())?;
    let lens: Vec<usize> = lists.iter().map(|l| l.len()).collect();
    let mut interner = Interner::new(lists);
    let mut ws = Workspace::new(false);
    ws.run(
        &plan,
        &mut Interned::new(&lens, |l, p, next| {
            Ok::<_, crate::Error>(interner.intern(l, p, next))
        }),
        &[],
        &mut ByKey(lists),
        &Cancel::none(),
    )?;
    Ok(ws
        .page()
        .iter()
        .map(|&id| {
            let (list, position) = ws.first_seen(id);
            Hit {
                list_index: list as usize,
                position: position as usize,
                score: ws.score(id),
            }
        })
        .collect())
}
