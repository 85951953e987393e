//! The floor: the bare Rust loop of rrf_batch on workloads (iii) 10,000 x 2 x 100 and (iv)
//! 1,000 x 5 x 1,000, on 1 thread and on every core: both phases (fuse every row, write the
//! output arrays), with the output buffers allocated once and reused, so that what is timed is
//! the loop itself, not Python, the input copy or fresh memory.
//!
//! `benches/batch_table.py` runs this with RANKFUSION_BENCH_DATA=<dir> holding the very arrays it
//! times from Python (`<name>.shape`: "Q L N"; `<name>_<i>.i64`: little-endian int64), so that the
//! ratio compares like with like; without it, the same kind of data is generated here.

use std::time::Duration;

use _core::batch::{fuse_batch, Extra, IdMatrix, Output};
use _core::cancel::Cancel;
use _core::pool::resolve_threads;
use _core::Params;
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
                    out.push((id >> 2) as i64);
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
        let plan = Params::default().plan(mats.len()).expect("plan");
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
                        .write(
                            Output {
                                ids: &mut ids,
                                scores: &mut scores,
                                counts: &mut counts,
                                ranks: None,
                                contributions: None,
                                normalized: None,
                            },
                            &none,
                        )
                        .expect("written");
                })
            });
            if cpus == 1 {
                break;
            }
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
