//! Condorcet's Copeland scores: each key's score is one plus the number of keys it beats — x
//! beats y when the lists ranking x ahead of y weigh more than those ranking y ahead of x (a list
//! holding only one of them ranks it ahead; a list holding neither abstains; each side's weights
//! added as a canonical sum). Pairwise, so not a sum of terms: its own kernel, once, with three
//! algorithms for the same integers — every pair compared ([`pairwise_wins`]), two lists by
//! counting ([`pair_wins`]), equal weights 64 keys at a time ([`counted_wins`]).

use super::canonical_sum;
use super::params::Plan;
use crate::cancel::Cancel;
use crate::error::Error;

/// A key's position in a list that does not hold it (the largest: a present key is ahead).
pub const UNRANKED: u32 = u32::MAX;

/// Condorcet weighs the sets of lists from a table of their weights' sums up to this many lists
/// read.
const CONDORCET_TABLE_LISTS: usize = 8;

/// The buffers of [`copeland`], kept from query to query.
#[derive(Default)]
pub struct Condorcet {
    ranks: Vec<u32>,
    pair: PairScratch,
}

/// Condorcet's scores into `scores`, from each key's counted occurrences (list, position)
/// `occurrences(key)`, in any order; the lists read are `read`. `cancel` is polled as the keys
/// are compared (`Problem::Interrupted`).
pub fn copeland<I: Iterator<Item = (u32, u32)>>(
    plan: &Plan,
    read: &[usize],
    n_keys: usize,
    occurrences: impl Fn(usize) -> I,
    scratch: &mut Condorcet,
    scores: &mut Vec<f64>,
    cancel: &Cancel<'_>,
) -> Result<(), Error> {
    let l = read.len();
    // ranks[key * l + slot]: the key's best position in the slot-th list read, or UNRANKED.
    scratch.ranks.clear();
    scratch.ranks.resize(n_keys * l, UNRANKED);
    for key in 0..n_keys {
        for (list, position) in occurrences(key) {
            if let Ok(slot) = read.binary_search(&(list as usize)) {
                let best = &mut scratch.ranks[key * l + slot];
                *best = position.min(*best);
            }
        }
    }
    let weights: Vec<f64> = read.iter().map(|&i| plan.weights[i]).collect();
    // x beats y when the lists ranking x ahead of y weigh more than those ranking y ahead
    // of x (canonical sums of their weights): both answers from one comparison. With few
    // lists, the sums of every set of lists (by bits) in a table.
    let table: Vec<f64> = if l <= CONDORCET_TABLE_LISTS {
        (0..1usize << l)
            .map(|set| {
                let mut ws: Vec<f64> = (0..l)
                    .filter(|s| set >> s & 1 == 1)
                    .map(|s| weights[s])
                    .collect();
                canonical_sum(&mut ws)
            })
            .collect()
    } else {
        Vec::new()
    };
    if l == 2 {
        cancel.check()?;
        pair_wins(&scratch.ranks, n_keys, &table, scores, &mut scratch.pair);
        Ok(())
    } else if counts_decide(&table, l) {
        counted_wins(&scratch.ranks, l, n_keys, scores, &mut scratch.pair, cancel)
    } else {
        pairwise_wins(&scratch.ranks, l, n_keys, &weights, &table, scores, cancel)
    }
}

/// Condorcet's scores, one plus each key's wins, comparing every pair of keys: `ranks[key * l +
/// slot]` is the key's best position in the slot-th list read (or [`UNRANKED`]), `table` the
/// canonical sums of the weights of every set of lists (by bits; empty with more than
/// [`CONDORCET_TABLE_LISTS`] lists, then summed per pair).
fn pairwise_wins(
    ranks: &[u32],
    l: usize,
    n_keys: usize,
    weights: &[f64],
    table: &[f64],
    wins: &mut Vec<f64>,
    cancel: &Cancel<'_>,
) -> Result<(), Error> {
    let (mut ahead, mut behind) = (Vec::with_capacity(l), Vec::with_capacity(l));
    // x beats y when the lists ranking x ahead of y weigh more than those ranking y ahead of x
    // (canonical sums of their weights): both answers from one comparison.
    let mut weigh = |rx: &[u32], ry: &[u32]| -> (f64, f64) {
        if !table.is_empty() {
            let (mut a, mut b) = (0usize, 0usize);
            for s in 0..l {
                a |= usize::from(rx[s] < ry[s]) << s;
                b |= usize::from(ry[s] < rx[s]) << s;
            }
            return (table[a], table[b]);
        }
        ahead.clear();
        behind.clear();
        for s in 0..l {
            // UNRANKED is the largest position: a present key is ahead of a missing one.
            if rx[s] < ry[s] {
                ahead.push(weights[s]);
            } else if ry[s] < rx[s] {
                behind.push(weights[s]);
            }
        }
        (canonical_sum(&mut ahead), canonical_sum(&mut behind))
    };
    // Integer counts, added without a branch on who wins (which is as good as random).
    let mut won = vec![0u32; n_keys];
    for x in 0..n_keys {
        // Polled once per key: each compares itself with every key after it.
        if x % 64 == 0 {
            cancel.check()?;
        }
        let rx = &ranks[x * l..(x + 1) * l];
        let mut won_x = 0;
        for y in x + 1..n_keys {
            let (a, b) = weigh(rx, &ranks[y * l..(y + 1) * l]);
            won_x += u32::from(a > b);
            won[y] += u32::from(b > a);
        }
        won[x] += won_x;
    }
    wins.clear();
    wins.extend(won.iter().map(|&w| 1.0 + f64::from(w)));
    Ok(())
}

/// Whether x beats y exactly when more lists rank x ahead of y than y ahead of x: `table`'s sum
/// of a set of lists depends on their number only and grows with it (equal positive weights,
/// as unweighted Condorcet's).
fn counts_decide(table: &[f64], l: usize) -> bool {
    let by_count = |n: usize| table[(1 << n) - 1];
    table.len() == 1 << l
        && (0..table.len()).all(|set| table[set] == by_count(set.count_ones() as usize))
        && (0..l).all(|n| by_count(n) < by_count(n + 1))
}

/// [`pairwise_wins`] when the counts of lists decide (see [`counts_decide`]), 64 keys at a time:
/// per list, bitsets of the keys at the places before each place (prefixes); for key x, each
/// list gives the keys it ranks x ahead of (those not in the prefix through x's place: behind
/// it, or missing) and the keys it ranks ahead of x (the prefix before x's place; every key it
/// holds when x is missing), which bit-sliced counters add up per key y, and x beats the keys
/// whose first count exceeds the second. O(n² L / 64) for n keys and L lists; the same integers
/// as [`pairwise_wins`].
fn counted_wins(
    ranks: &[u32],
    l: usize,
    n_keys: usize,
    wins: &mut Vec<f64>,
    scratch: &mut PairScratch,
    cancel: &Cancel<'_>,
) -> Result<(), Error> {
    // Counts up to 15 lists in 4 bit slices (the table, and so this path, stops at 8).
    const SLICES: usize = 4;
    let words = n_keys.div_ceil(64);
    let PairScratch {
        prefixes,
        places,
        order,
        ..
    } = scratch;
    places.clear();
    places.resize(n_keys * l, u32::MAX);
    prefixes.clear();
    // Per list: where its prefixes start, and how many keys it holds.
    let mut lists = Vec::with_capacity(l);
    for s in 0..l {
        keys_by_position(ranks, l, s, n_keys, order);
        let start = prefixes.len();
        prefixes.resize(start + words, 0);
        for (place, &k) in order.iter().enumerate() {
            places[k as usize * l + s] = place as u32;
            let last = prefixes.len() - words;
            prefixes.extend_from_within(last..);
            let at = prefixes.len() - words + k as usize / 64;
            prefixes[at] |= 1 << (k % 64);
        }
        lists.push((start, order.len()));
    }
    let last_word = match n_keys % 64 {
        0 => !0u64,
        r => (1u64 << r) - 1,
    };
    // Per list, for the key at hand: the prefix rows of the keys it is ahead of (their
    // complement; None: no key) and of the keys ahead of it.
    let mut rows = Vec::with_capacity(l);
    wins.clear();
    wins.reserve(n_keys);
    for x in 0..n_keys {
        if x % 64 == 0 {
            cancel.check()?;
        }
        rows.clear();
        rows.extend(
            lists
                .iter()
                .enumerate()
                .map(|(s, &(start, held))| match places[x * l + s] {
                    u32::MAX => (None, start + held * words),
                    p => {
                        let p = p as usize;
                        (Some(start + (p + 1) * words), start + p * words)
                    }
                }),
        );
        let mut won = 0u32;
        for w in 0..words {
            let (mut ahead, mut behind) = ([0u64; SLICES], [0u64; SLICES]);
            for &(x_ahead, y_ahead) in &rows {
                let x_ahead = x_ahead.map_or(0, |row| !prefixes[row + w]);
                add_bits(&mut ahead, x_ahead);
                add_bits(&mut behind, prefixes[y_ahead + w]);
            }
            // ahead > behind, from the top slice down.
            let (mut greater, mut equal) = (0u64, !0u64);
            for i in (0..SLICES).rev() {
                greater |= equal & ahead[i] & !behind[i];
                equal &= !(ahead[i] ^ behind[i]);
            }
            let mask = if w + 1 == words { last_word } else { !0 };
            won += (greater & mask).count_ones();
        }
        wins.push(1.0 + f64::from(won));
    }
    Ok(())
}

/// The keys list `s` holds, in position order, into `order`: `ranks[key * l + s]` is the key's
/// position in it (its best: one key per position) or [`UNRANKED`]. No sort: each key goes to
/// its position in a table as long as the list, then the empty cells are dropped.
fn keys_by_position(ranks: &[u32], l: usize, s: usize, n_keys: usize, order: &mut Vec<u32>) {
    let rank = |k: usize| ranks[k * l + s];
    let len = (0..n_keys)
        .map(rank)
        .filter(|&r| r != UNRANKED)
        .max()
        .map_or(0, |r| r as usize + 1);
    order.clear();
    order.resize(len, u32::MAX);
    for k in 0..n_keys {
        let r = rank(k);
        if r != UNRANKED {
            order[r as usize] = k as u32;
        }
    }
    order.retain(|&k| k != u32::MAX);
}

/// Adds 1 to the bit-sliced counters (`counters[i]`: bit i of 64 counts) where `bits` is set.
#[inline(always)]
fn add_bits<const N: usize>(counters: &mut [u64; N], bits: u64) {
    let mut carry = bits;
    for c in counters.iter_mut() {
        let next = *c & carry;
        *c ^= carry;
        carry = next;
    }
}

/// The buffers of [`pair_wins`] and [`counted_wins`], kept from query to query.
#[derive(Default)]
pub struct PairScratch {
    /// [`counted_wins`]: every list's prefix bitsets, and each key's place in each list.
    prefixes: Vec<u64>,
    places: Vec<u32>,
    order: Vec<u32>,
    place: Vec<[u32; 2]>,
    by_position: [Vec<u32>; 2],
    joint: Vec<u64>,
    tree: Vec<u32>,
    only_in_1: Vec<u64>,
}

/// [`pairwise_wins`] with two lists, by counting instead of comparing every pair: in each list
/// another key is behind x (A), ahead of it (B) or, both missing, tied (T), and whether x
/// beats it depends only on that pair of relations (a 3 x 3 table from the weights). Per key,
/// the relations' totals per list are its place in that list, and one joint count — the keys
/// behind x in both lists, or behind it in one and missing with it from the other — found by
/// a sweep down list 0 with a Fenwick tree over places in list 1 — gives the other counts.
/// O(n log n) for n keys, the same integers as [`pairwise_wins`].
fn pair_wins(
    ranks: &[u32],
    n_keys: usize,
    table: &[f64],
    wins: &mut Vec<f64>,
    scratch: &mut PairScratch,
) {
    const A: usize = 0;
    const B: usize = 1;
    const T: usize = 2;
    let beats = |c0: usize, c1: usize| {
        let a = usize::from(c0 == A) | usize::from(c1 == A) << 1;
        let b = usize::from(c0 == B) | usize::from(c1 == B) << 1;
        table[a] > table[b]
    };
    let mut beat = [[false; 3]; 3];
    for (c0, row) in beat.iter_mut().enumerate() {
        for (c1, cell) in row.iter_mut().enumerate() {
            *cell = beats(c0, c1);
        }
    }
    let n = n_keys as u64;
    let rank = |key: usize, s: usize| ranks[key * 2 + s];
    // Each list's keys by position: a key's place is how many keys the list ranks ahead of it.
    let PairScratch {
        place,
        by_position,
        joint,
        tree,
        only_in_1,
        ..
    } = scratch;
    place.clear();
    place.resize(n_keys, [u32::MAX; 2]);
    for (s, order) in by_position.iter_mut().enumerate() {
        keys_by_position(ranks, 2, s, n_keys, order);
        for (i, &k) in order.iter().enumerate() {
            place[k as usize][s] = i as u32;
        }
    }
    let held = [by_position[0].len() as u64, by_position[1].len() as u64];
    // The joint count per key (see above), by a sweep from the bottom of list 0: first the keys
    // missing from it (all in list 1), then list 0's keys from its last.
    joint.clear();
    joint.resize(n_keys, 0);
    tree.clear();
    tree.resize(by_position[1].len() + 1, 0);
    // The Fenwick tree counts the keys inserted at each place in list 1.
    let insert = |tree: &mut [u32], place: u32| {
        let mut j = place as usize + 1;
        while j < tree.len() {
            tree[j] += 1;
            j += j & j.wrapping_neg();
        }
    };
    let (mut inserted, mut missing_from_1) = (0u64, 0u64);
    // List 1's keys missing from list 0, in list 1's order.
    only_in_1.clear();
    only_in_1.extend(
        by_position[1]
            .iter()
            .map(|&k| k as usize)
            .filter(|&k| rank(k, 0) == UNRANKED)
            .map(|k| u64::from(place[k][1]) << 32 | k as u64),
    );
    let m = only_in_1.len() as u64;
    for (i, &e) in only_in_1.iter().enumerate() {
        let key = e as u32 as usize;
        // Missing from list 0 with x, behind x in list 1.
        joint[key] = m - 1 - i as u64;
        insert(tree, place[key][1]);
        inserted += 1;
    }
    for &key in by_position[0].iter().rev() {
        let key = key as usize;
        let p1 = place[key][1];
        joint[key] = if p1 == u32::MAX {
            missing_from_1 // behind x in list 0, missing with x from list 1
        } else {
            // Behind x in both lists (a key missing from list 1 is behind x there).
            let mut ahead_or_at = 0u64;
            let mut j = p1 as usize + 1;
            while j > 0 {
                ahead_or_at += u64::from(tree[j]);
                j -= j & j.wrapping_neg();
            }
            inserted - ahead_or_at
        };
        if p1 == u32::MAX {
            missing_from_1 += 1;
        } else {
            insert(tree, p1);
        }
        inserted += 1;
    }
    wins.clear();
    wins.extend((0..n_keys).map(|x| {
        // Per list: keys ahead of x (B), tied with it (T), behind it (A).
        let mut ahead = [0u64; 2];
        let mut tied = [0u64; 2];
        let mut behind = [0u64; 2];
        for s in 0..2 {
            if place[x][s] == u32::MAX {
                (ahead[s], tied[s]) = (held[s], n - held[s] - 1);
            } else {
                ahead[s] = u64::from(place[x][s]);
            }
            behind[s] = n - 1 - ahead[s] - tied[s];
        }
        let k = joint[x];
        let mut count = [[0u64; 3]; 3];
        if place[x][0] != u32::MAX && place[x][1] != u32::MAX {
            count[A][A] = k;
            count[A][B] = behind[0] - k;
            count[B][A] = behind[1] - k;
            count[B][B] = ahead[0] - count[B][A];
        } else if place[x][1] == u32::MAX {
            count[A][T] = k;
            count[B][T] = tied[1] - k;
            count[A][B] = behind[0] - k;
            count[B][B] = ahead[0] - count[B][T];
        } else {
            count[T][A] = k;
            count[T][B] = tied[0] - k;
            count[B][A] = behind[1] - k;
            count[B][B] = ahead[1] - count[T][B];
        }
        let mut won = 0u64;
        for c0 in 0..3 {
            for c1 in 0..3 {
                if beat[c0][c1] {
                    won += count[c0][c1];
                }
            }
        }
        1.0 + won as f64
    }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Rng;

    /// The canonical sum as docs/semantics.md states it: sorted ascending, added from 0.0.
    fn sorted_sum(values: &[f64]) -> f64 {
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        v.iter().fold(0.0, |acc, &x| acc + x)
    }

    /// Condorcet's scores by [`pairwise_wins`], the loop the faster paths are held to.
    fn every_pair(ranks: &[u32], l: usize, n_keys: usize, w: &[f64], table: &[f64]) -> Vec<f64> {
        let mut wins = Vec::new();
        pairwise_wins(ranks, l, n_keys, w, table, &mut wins, &Cancel::none()).unwrap();
        wins
    }

    #[test]
    fn condorcet_by_bitsets_wins_as_every_pair_compared() {
        // 3 to 8 lists, keys in some of them at distinct positions with gaps, up to 150 keys
        // (three words of bits, the last one partial); equal weights of either sign, and
        // unequal ones (where counts do not decide: the pairwise loop runs).
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut scratch = PairScratch::default();
        let mut counted_rounds = 0;
        for round in 0..1500 {
            let l = 3 + rng.below(6) as usize;
            let n_keys = rng.pick(&[0usize, 1, 2, 5, 63, 64, 65, 100, 150]);
            let mut ranks = vec![UNRANKED; n_keys * l];
            for s in 0..l {
                let mut keys: Vec<usize> = (0..n_keys).collect();
                for i in (1..n_keys).rev() {
                    keys.swap(i, rng.below(i as u64 + 1) as usize);
                }
                let mut position = 0u32;
                for &key in &keys {
                    position += 1 + rng.below(2) as u32;
                    if rng.below(4) > 0 {
                        ranks[key * l + s] = position;
                    }
                }
            }
            for key in 0..n_keys {
                if ranks[key * l..(key + 1) * l].iter().all(|&r| r == UNRANKED) {
                    ranks[key * l + rng.below(l as u64) as usize] = 10_000 + key as u32;
                }
            }
            let w: Vec<f64> = match rng.below(3) {
                0 => vec![1.0; l],
                1 => vec![rng.pick(&[0.5, -1.0, 1e-300, 1e308]); l],
                _ => (0..l).map(|_| rng.pick(&[1.0, 0.5, 2.0, -1.0])).collect(),
            };
            let table: Vec<f64> = (0..1usize << l)
                .map(|set| {
                    let ws: Vec<f64> = (0..l).filter(|s| set >> s & 1 == 1).map(|s| w[s]).collect();
                    sorted_sum(&ws)
                })
                .collect();
            let compared = every_pair(&ranks, l, n_keys, &w, &table);
            let decide = counts_decide(&table, l);
            // Counts decide for equal positive weights that do not overflow, and only then.
            let equal_positive = w.iter().all(|&x| x == w[0] && x > 0.0 && x < 1e300);
            assert_eq!(decide, equal_positive, "round {round}: {w:?}");
            if decide {
                counted_rounds += 1;
                let mut counted = Vec::new();
                counted_wins(
                    &ranks,
                    l,
                    n_keys,
                    &mut counted,
                    &mut scratch,
                    &Cancel::none(),
                )
                .unwrap();
                assert_eq!(counted, compared, "round {round}: {l} lists, {ranks:?}");
            }
        }
        assert!(counted_rounds > 400);
    }

    #[test]
    fn condorcet_by_counting_wins_as_every_pair_compared() {
        // Two lists: keys in one list or both, distinct positions with gaps (holes, repeats),
        // weights of either sign, equal or summing to zero (ties: nobody wins).
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let weights = [1.0, 0.5, 2.0, -1.0, -0.5, 1e-300, 3.0];
        // One scratch for every round, as the engine keeps it from query to query.
        let mut scratch = PairScratch::default();
        for round in 0..3000 {
            let n_keys = rng.below(30) as usize;
            let mut ranks = vec![UNRANKED; n_keys * 2];
            for s in 0..2 {
                let mut position = 0u32;
                for key in 0..n_keys {
                    position += 1 + rng.below(3) as u32;
                    if rng.below(3) > 0 {
                        ranks[key * 2 + s] = position;
                    }
                }
            }
            for key in 0..n_keys {
                if ranks[key * 2] == UNRANKED && ranks[key * 2 + 1] == UNRANKED {
                    ranks[key * 2 + rng.below(2) as usize] = 1000 + key as u32;
                }
            }
            // Positions need not grow with the key: shuffle which key is where.
            for key in (1..n_keys).rev() {
                let other = rng.below(key as u64 + 1) as usize;
                ranks.swap(key * 2, other * 2);
                if ranks[key * 2] == UNRANKED && ranks[key * 2 + 1] == UNRANKED
                    || ranks[other * 2] == UNRANKED && ranks[other * 2 + 1] == UNRANKED
                {
                    ranks.swap(key * 2, other * 2); // undo: a key must be in some list
                }
            }
            let w = [rng.pick(&weights), rng.pick(&weights)];
            let table = [0.0, w[0], w[1], sorted_sum(&w)];
            let mut counted = Vec::new();
            pair_wins(&ranks, n_keys, &table, &mut counted, &mut scratch);
            let compared = every_pair(&ranks, 2, n_keys, &w, &table);
            assert_eq!(counted, compared, "round {round}: {ranks:?} {w:?}");
        }
    }
}
