//! Reciprocal Rank Fusion, as docs/semantics.md defines it, in one engine.
//!
//! - [`params`]: the arguments, their checks, and the [`Plan`] of a checked call;
//! - [`keys`]: where keys come from ([`KeySource`]): i64 rows hashed in an [`IdTable`], or keys
//!   interned by the caller;
//! - [`engine`]: the [`Workspace`] that scans, scores, ranks and pages one query at a time;
//! - [`trace`]: the one layout of a page's contributions.
//!
//! [`rrf`] composes them for plain Rust keys of any `K: Hash + Eq + Ord`.

pub mod engine;
pub mod keys;
pub mod method;
#[cfg(test)]
mod method_tests;
pub mod params;
#[cfg(test)]
mod tests;
pub mod trace;

use std::hash::Hash;

pub use engine::{Firsts, Workspace};
pub use keys::{IdTable, Interned, Interner, KeySource, Rows};
pub use method::Scores;
pub use params::{Duplicates, Method, Norm, Params, Plan, TieBreak};
pub use trace::{Contribution, Trace};

use crate::cancel::Cancel;
use crate::error::Result;

/// The hasher of the core's hash tables (seeded per process).
pub type Hasher = foldhash::fast::RandomState;

/// The canonical sum: ascending order of value, from 0.0, one f64 addition at a time. Sorts
/// `values` in place. All values must be finite (contributions always are).
#[inline]
pub fn canonical_sum(values: &mut [f64]) -> f64 {
    match values.len() {
        0 => 0.0,
        1 => 0.0 + values[0],
        2 => {
            let (a, b) = (values[0], values[1]);
            let (lo, hi) = if b < a { (b, a) } else { (a, b) };
            0.0 + lo + hi
        }
        _ => {
            values.sort_unstable_by(f64::total_cmp);
            values.iter().fold(0.0, |acc, &v| acc + v)
        }
    }
}

/// One fused hit of [`rrf`]: its key's first occurrence (list, position) and its score.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    pub list_index: usize,
    pub position: usize,
    pub score: f64,
}

/// RRF of `lists` (plain Rust keys, equal keys being one key) with `params`, checked: the page of
/// hits, best first; with [`TieBreak::Key`] tied keys are ordered by `K`'s order.
pub fn rrf<K: Hash + Eq + Ord>(lists: &[&[K]], params: &Params) -> Result<Vec<Hit>> {
    let plan = params.plan(lists.len())?;
    let lens: Vec<usize> = lists.iter().map(|l| l.len()).collect();
    let mut interner = Interner::new(lists);
    let mut ws = Workspace::new(false);
    ws.fuse(
        &mut Interned::new(&lens, |l, p, next| {
            Ok::<_, crate::Error>(interner.intern(l, p, next))
        }),
        &[],
        &plan,
    )?;
    match plan.params.tie_break {
        TieBreak::BestRank => ws.rank(&plan),
        TieBreak::Key => {
            let key = |firsts: &engine::Firsts<'_>, id: u32| interner.key(firsts.get(id));
            ws.rank_groups(&plan, &Cancel::none(), |group, firsts| {
                group.sort_by(|&a, &b| key(firsts, a).cmp(key(firsts, b)));
                Ok::<(), crate::Error>(())
            })?;
        }
    }
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
