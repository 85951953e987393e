//! The floor: the bare Rust loop of rrf_batch on workloads (iii) 10,000 x 2 x 100 and (iv)
//! 1,000 x 5 x 1,000, on 1 thread and on every core: both phases (fuse every row, write the
//! output arrays), with the output buffers allocated once and reused, so that what is timed is
//! the loop itself, not Python, the input copy or fresh memory.
//!
//! Beside it, `minimal`: RRF on the same rows written as plainly and tightly as one can by hand
//! (one thread, an open-addressing table with a seen-lists byte, two slots a key, the keys
//! sorted by (score, first appearance), the rows written padded), checked to give the engine's
//! ids and scores bit for bit: the floor the engine's loop is measured against.
//!
//! `benches/batch_table.py` runs this with RANKFUSION_BENCH_DATA=<dir> holding the very arrays it
//! times from Python (`<name>.shape`: "Q L N"; `<name>_<i>.i64`: little-endian int64), so that the
//! ratio compares like with like; without it, the same kind of data is generated here.

use std::time::Duration;

use _core::batch::{fuse_batch, Extra, IdMatrix, Output};
use _core::cancel::Cancel;
use _core::pool::resolve_threads;
use _core::Fusion;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

fn generated(q: usize, l: usize, n: usize, seed: u64) -> Vec<Vec<i64>> {
    let mut s = seed | 1;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let universe = n * 5 / 2;
    (0..l)
        .map(|_| {
            let mut out = Vec::with_capacity(q * n);
            for row in 0..q {
                // n distinct picks from the row's universe (partial Fisher-Yates).
                let mut u: Vec<u64> = (0..universe as u64).collect();
                for i in 0..n {
                    let j = i + (next() as usize) % (universe - i);
                    u.swap(i, j);
                    let id = (row as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ u[i];
                    out.push((id & (u64::MAX >> 2)) as i64); // distinct, non-negative
                }
            }
            out
        })
        .collect()
}

fn load(name: &str, q: usize, l: usize, n: usize) -> (usize, usize, Vec<usize>, Vec<Vec<i64>>) {
    if let Ok(dir) = std::env::var("RANKFUSION_BENCH_DATA") {
        let shape = std::fs::read_to_string(format!("{dir}/{name}.shape")).expect("shape file");
        let dims: Vec<usize> = shape
            .split_whitespace()
            .map(|x| x.parse().unwrap())
            .collect();
        let (q, l) = (dims[0], dims[1]);
        let cols = dims[2..].to_vec();
        let data = (0..l)
            .map(|i| {
                let bytes = std::fs::read(format!("{dir}/{name}_{i}.i64")).expect("data file");
                bytes
                    .chunks_exact(8)
                    .map(|b| i64::from_le_bytes(b.try_into().unwrap()))
                    .collect()
            })
            .collect();
        return (q, l, cols, data);
    }
    (q, l, vec![n; l], generated(q, l, n, 42))
}

/// RRF (k = 60, unweighted, duplicates "first", pad -1) of every row of `data` (L lists of
/// `q` rows, list i `cols[i]` wide) into `ids`/`scores` (`q` rows of `w`, padded with -1 and
/// NaN), by hand, on one thread; at most 8 lists.
fn minimal(data: &[Vec<i64>], q: usize, cols: &[usize], w: usize, out: &mut Minimal) {
    let l = data.len();
    let most: usize = cols.iter().sum();
    let cap = (most.max(8) * 3 / 2).next_power_of_two();
    let mask = cap - 1;
    out.table.resize(cap, (0, 0, 0));
    out.values.resize(most * l, 0.0);
    out.keys.resize(most, 0);
    out.counts.resize(most, 0);
    let depth = cols.iter().copied().max().unwrap_or(0);
    let contribution: Vec<f64> = (0..depth)
        .map(|p| 1.0 / (60.0 + (p as f64 + 1.0)))
        .collect();
    for row in 0..q {
        out.generation = out.generation.wrapping_add(1);
        let generation = out.generation;
        let mut n = 0usize;
        for p in 0..depth {
            for (list, d) in data.iter().enumerate() {
                if p >= cols[list] {
                    continue;
                }
                let key = d[row * cols[list] + p];
                if key == -1 {
                    continue;
                }
                let m = (key as u64 ^ 0x5EED) as u128 * 0x9E37_79B9_7F4A_7C15_u128;
                let mut i = ((m as u64) ^ ((m >> 64) as u64)) as usize & mask;
                loop {
                    let (k, id, tag) = out.table[i];
                    if tag >> 8 != generation {
                        out.table[i] = (key, n as u32, generation << 8 | 1 << list);
                        out.keys[n] = key;
                        out.values[n * l] = contribution[p];
                        out.counts[n] = 1;
                        n += 1;
                        break;
                    }
                    if k == key {
                        if tag & 1 << list == 0 {
                            out.table[i].2 = tag | 1 << list;
                            let c = &mut out.counts[id as usize];
                            out.values[id as usize * l + *c as usize] = contribution[p];
                            *c += 1;
                        }
                        break;
                    }
                    i = (i + 1) & mask;
                }
            }
        }
        out.order.clear();
        for id in 0..n {
            let v = &mut out.values[id * l..id * l + out.counts[id] as usize];
            v.sort_unstable_by(f64::total_cmp);
            let score = v.iter().fold(0.0, |a, &x| a + x);
            out.order.push((u64::MAX - score.to_bits(), id as u32));
        }
        out.order.sort_unstable();
        let (ids, scores) = (
            &mut out.ids[row * w..][..w],
            &mut out.scores[row * w..][..w],
        );
        for (j, &(bits, id)) in out.order.iter().enumerate() {
            ids[j] = out.keys[id as usize];
            scores[j] = f64::from_bits(u64::MAX - bits);
        }
        ids[n..].fill(-1);
        scores[n..].fill(f64::NAN);
    }
}

#[derive(Default)]
struct Minimal {
    table: Vec<(i64, u32, u32)>,
    generation: u32,
    values: Vec<f64>,
    keys: Vec<i64>,
    counts: Vec<u8>,
    order: Vec<(u64, u32)>,
    ids: Vec<i64>,
    scores: Vec<f64>,
}

fn bench(c: &mut Criterion) {
    let cpus = resolve_threads(None);
    let mut group = c.benchmark_group("core");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for (name, q, l, n) in [("iii", 10_000, 2, 100), ("iv", 1_000, 5, 1_000)] {
        let (q, _l, cols, data) = load(name, q, l, n);
        let mats: Vec<IdMatrix> = data
            .iter()
            .zip(&cols)
            .map(|(d, &c)| IdMatrix::new(d, q, c).expect("shape"))
            .collect();
        let entries: usize = data.iter().map(Vec::len).sum();
        group.throughput(Throughput::Elements(entries as u64));
        let plan = Fusion::default().plan(mats.len()).expect("plan");
        let none = Cancel::none();
        for threads in [1, cpus] {
            let first = fuse_batch(&mats, Extra::default(), &plan, -1, false, threads, &none)
                .expect("fused");
            let w = first.width();
            let (mut ids, mut scores, mut counts) =
                (vec![0i64; q * w], vec![0f64; q * w], vec![0i64; q]);
            group.bench_with_input(BenchmarkId::new(name, threads), &threads, |b, &t| {
                b.iter(|| {
                    let fused = fuse_batch(&mats, Extra::default(), &plan, -1, false, t, &none)
                        .expect("fused");
                    assert_eq!(fused.width(), w);
                    fused
                        .write(Output::untraced(&mut ids, &mut scores, &mut counts), &none)
                        .expect("written");
                })
            });
            if threads == 1 {
                // The hand-written floor, checked against the engine's output first.
                let mut m = Minimal {
                    ids: vec![0; q * w],
                    scores: vec![0.0; q * w],
                    ..Minimal::default()
                };
                minimal(&data, q, &cols, w, &mut m);
                if let Some(j) = (0..q * w)
                    .find(|&j| m.ids[j] != ids[j] || m.scores[j].to_bits() != scores[j].to_bits())
                {
                    panic!(
                        "minimal != engine at {j} (w {w}): {:?} vs {:?}",
                        (
                            &m.ids[j.saturating_sub(2)..j + 2],
                            &m.scores[j.saturating_sub(2)..j + 2]
                        ),
                        (
                            &ids[j.saturating_sub(2)..j + 2],
                            &scores[j.saturating_sub(2)..j + 2]
                        )
                    );
                }
                group.bench_with_input(
                    BenchmarkId::new(format!("{name}-minimal"), 1),
                    &1,
                    |b, _| b.iter(|| minimal(&data, q, &cols, w, &mut m)),
                );
            }
            if cpus == 1 {
                break;
            }
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
