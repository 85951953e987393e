use super::resample::{bootstrap, quantile, randomization};
use super::rng::{below, splitmix, Xoshiro};
use super::student::{two_sided_p, two_sided_quantile};
use super::*;
use crate::testing::Rng;

#[test]
fn the_generators_give_their_published_outputs() {
    // Vigna's xoshiro256starstar.c from the state {1, 2, 3, 4}.
    let mut g = Xoshiro::from_state([1, 2, 3, 4]);
    let first: Vec<u64> = (0..6).map(|_| g.next()).collect();
    assert_eq!(
        first,
        [
            11520,
            0,
            1509978240,
            1215971899390074240,
            1216172134540287360,
            607988272756665600
        ]
    );
    // splitmix64.c from the seed 1234567.
    let outputs: Vec<u64> = (1..=3).map(|i| splitmix(1234567, i)).collect();
    assert_eq!(
        outputs,
        [
            6457827717110365317,
            3203168211198807973,
            9817491932198370423
        ]
    );
    // Test t's stream starts from outputs 4t+1..4t+4.
    let mut s = Xoshiro::stream(9, 2);
    let mut by_hand = Xoshiro::from_state([
        splitmix(9, 9),
        splitmix(9, 10),
        splitmix(9, 11),
        splitmix(9, 12),
    ]);
    assert_eq!(s.next(), by_hand.next());
}

#[test]
fn below_maps_words_to_indices_uniformly() {
    assert_eq!(below(0, 7), 0);
    assert_eq!(below(u64::MAX, 7), 6);
    assert_eq!(below(1 << 63, 2), 1);
    assert_eq!(below((1 << 63) - 1, 2), 0);
    let mut counts = [0usize; 5];
    let mut g = Xoshiro::stream(1, 0);
    for _ in 0..50_000 {
        counts[below(g.next(), 5)] += 1;
    }
    assert!(
        counts.iter().all(|&c| (9_500..10_500).contains(&c)),
        "{counts:?}"
    );
}

/// The randomization test's count as its definition says, with no lanes: every sign vector's
/// sum from 0.0 in query order.
fn brute_force(d: &[f64]) -> f64 {
    let n = d.len();
    let observed = d.iter().fold(0.0, |a, v| a + v).abs();
    let spread = d.iter().fold(0.0, |a, v| a + v.abs());
    let threshold = observed - n as f64 * spread * f64::EPSILON;
    let mut count = 0u64;
    for signs in 0..1u64 << n {
        let mut s = 0.0;
        for (i, v) in d.iter().enumerate() {
            s += if signs >> i & 1 == 1 { -v } else { *v };
        }
        count += u64::from(s.abs() >= threshold);
    }
    count as f64 / (1u64 << n) as f64
}

fn values(rng: &mut Rng, n: usize) -> Vec<f64> {
    let choices = [0.0, 0.1, 0.2, 0.25, 0.3, 1.0 / 3.0, 0.5, 0.7, 1.0];
    (0..n)
        .map(|_| rng.pick(&choices) - rng.pick(&choices))
        .collect()
}

#[test]
fn exact_randomization_is_the_enumeration_of_every_sign_vector() {
    let mut rng = Rng(0x5EED);
    for n in 1..=14 {
        for _ in 0..5 {
            let d = values(&mut rng, n);
            let mut words = Vec::new();
            let got = randomization(
                &d,
                1 << n,
                &mut Xoshiro::stream(0, 0),
                &mut words,
                &Cancel::none(),
            );
            assert_eq!(got, Some(brute_force(&d)), "{d:?}");
        }
    }
    // Sums equal in exact arithmetic count as equal: 0.1 + 0.2 and 0.3 (flipping the first two
    // or the third gives sums that differ in the last bit).
    let d = [0.1, 0.2, -0.3, 0.3];
    let p = randomization(
        &d,
        16,
        &mut Xoshiro::stream(0, 0),
        &mut Vec::new(),
        &Cancel::none(),
    );
    // |sum| = 0.3 (or more) for: all as given or negated, the first two flipped, the third
    // flipped... counted by hand: the sign vectors whose |sum| is 0.6 or 0.3.
    let exact_sums = (0..16u32)
        .filter(|s| {
            let v: [i32; 4] = [1, 2, -3, 3];
            let t: i32 = (0..4)
                .map(|i| if s >> i & 1 == 1 { -v[i] } else { v[i] })
                .sum();
            t.abs() >= 3
        })
        .count();
    assert_eq!(p, Some(exact_sums as f64 / 16.0));
}

#[test]
fn sampled_randomization_reads_its_words_in_order() {
    // 70 queries: two words a sign vector; 13 vectors: one full block of lanes and a part.
    let mut rng = Rng(3);
    let d = values(&mut rng, 70);
    let mut stream = Xoshiro::stream(42, 5);
    let observed = d.iter().fold(0.0, |a, v| a + v).abs();
    let spread = d.iter().fold(0.0, |a, v| a + v.abs());
    let threshold = observed - 70.0 * spread * f64::EPSILON;
    let mut count = 0;
    for _ in 0..13 {
        let words = [stream.next(), stream.next()];
        let mut s = 0.0;
        for (i, v) in d.iter().enumerate() {
            s += if words[i / 64] >> (i % 64) & 1 == 1 {
                -v
            } else {
                *v
            };
        }
        count += u64::from(s.abs() >= threshold);
    }
    let got = randomization(
        &d,
        13,
        &mut Xoshiro::stream(42, 5),
        &mut Vec::new(),
        &Cancel::none(),
    );
    assert_eq!(got, Some((count + 1) as f64 / 14.0));
}

#[test]
fn student_tails_match_closed_forms() {
    // One degree of freedom: the Cauchy distribution; two: 1 - t / sqrt(2 + t^2).
    for t in [0.0, 0.1, 0.5, 1.0, 2.0, 7.5, 40.0] {
        let cauchy = 1.0 - 2.0 * f64::atan(t) / std::f64::consts::PI;
        assert!((two_sided_p(t, 1.0) - cauchy).abs() <= 1e-14 * cauchy.max(1e-300) + 1e-16);
        let two = 1.0 - t / (2.0 + t * t).sqrt();
        assert!(
            (two_sided_p(t, 2.0) - two).abs() <= 1e-13 * two + 1e-16,
            "{t}"
        );
    }
    assert_eq!(two_sided_p(0.0, 10.0), 1.0);
    assert_eq!(two_sided_p(f64::INFINITY, 10.0), 0.0);
    assert_eq!(two_sided_p(1e200, 10.0), 0.0);
    // The quantile inverts the tail.
    for nu in [1.0, 2.0, 5.0, 30.0, 224.0, 5000.0] {
        for tail in [0.5, 0.1, 0.05, 0.01, 1e-6] {
            let q = two_sided_quantile(tail, nu);
            assert!(
                (two_sided_p(q, nu) - tail).abs() <= 1e-12 * tail,
                "{nu} {tail}"
            );
        }
    }
    // scipy.stats.t.ppf(0.975, 1) and (0.975, 10).
    assert!((two_sided_quantile(0.05, 1.0) - 12.706_204_736_174_694).abs() < 1e-11);
    assert!((two_sided_quantile(0.05, 10.0) - 2.228_138_851_986_274).abs() < 1e-12);
}

#[test]
fn corrections_by_hand() {
    let p = [0.01, 0.04, 0.03, 0.5];
    let close = |a: &[f64], b: &[f64]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-15);
    assert_eq!(correct(&p, Correction::None), p);
    assert!(close(
        &correct(&p, Correction::Bonferroni),
        &[0.04, 0.16, 0.12, 1.0]
    ));
    // Holm: 0.01 x 4, 0.03 x 3, 0.04 x 2, 0.5 x 1, each at least the one before.
    assert!(close(
        &correct(&p, Correction::Holm),
        &[0.04, 0.09, 0.09, 0.5]
    ));
    // BH: 0.01 / (1/4), 0.03 / (2/4), 0.04 / (3/4), 0.5; each at most the one after (0.06
    // becomes 0.16 / 3).
    assert!(close(
        &correct(&p, Correction::Bh),
        &[0.04, 0.16 / 3.0, 0.16 / 3.0, 0.5]
    ));
    assert_eq!(correct(&[], Correction::Holm), Vec::<f64>::new());
    assert_eq!(Correction::from_name("bh"), Some(Correction::Bh));
    assert_eq!(Correction::from_name("fdr"), None);
}

#[test]
fn bootstrap_of_one_sign_and_of_no_difference() {
    let mut means = Vec::new();
    let mut draws = Vec::new();
    let d = [0.1, 0.3, 0.2, 0.5];
    let b = bootstrap(
        &d,
        999,
        0.9,
        &mut Xoshiro::stream(1, 1),
        &mut means,
        &mut draws,
        &Cancel::none(),
    );
    let b = b.expect("not cancelled");
    assert_eq!(b.p, 2.0 / 1000.0);
    assert!(0.1 <= b.low && b.low < b.high && b.high <= 0.5);
    let z = [0.0; 6];
    let b = bootstrap(
        &z,
        100,
        0.95,
        &mut Xoshiro::stream(1, 1),
        &mut means,
        &mut draws,
        &Cancel::none(),
    );
    assert_eq!(
        b,
        Some(resample::Bootstrap {
            p: 1.0,
            low: 0.0,
            high: 0.0
        })
    );
    assert_eq!(quantile(&[1.0, 2.0, 4.0], 0.75), 3.0);
    assert_eq!(quantile(&[1.0, 2.0, 4.0], 1.0), 4.0);
    assert!(quantile(&[], 0.5).is_nan());
}

fn settings(test: Test, permutations: u64) -> Settings {
    Settings {
        test,
        permutations,
        seed: 7,
        confidence: 0.95,
    }
}

#[test]
fn tests_in_parallel_equal_tests_one_by_one() {
    let mut rng = Rng(11);
    let n = 90;
    let tests = 7;
    let x: Vec<f64> = (0..tests * n)
        .map(|_| rng.below(1000) as f64 / 999.0)
        .collect();
    let y: Vec<f64> = (0..tests * n)
        .map(|_| rng.below(1000) as f64 / 999.0)
        .collect();
    let streams: Vec<u64> = (0..tests as u64).map(|t| t * 3).collect();
    for test in [Test::Randomization, Test::T, Test::Bootstrap] {
        let s = settings(test, 2000);
        let all = paired_tests(&x, &y, n, &streams, &s, 4, &Cancel::none()).expect("valid");
        for t in 0..tests {
            let rows = t * n..(t + 1) * n;
            let one = paired_tests(
                &x[rows.clone()],
                &y[rows],
                n,
                &streams[t..=t],
                &s,
                1,
                &Cancel::none(),
            );
            assert_eq!(one, Ok(vec![all[t]]));
        }
        let o = all[0];
        assert_eq!(o.wins + o.ties + o.losses, n);
        assert!(o.low <= o.high && 0.0 < o.p && o.p <= 1.0);
    }
}

#[test]
fn bad_arguments_are_errors() {
    let ok = settings(Test::Randomization, 10);
    // (the argument named, the item (row, query) when one value is at fault)
    let run = |x: &[f64], y: &[f64], n, s: &Settings| {
        paired_tests(x, y, n, &[0], s, 1, &Cancel::none())
            .map(|_| ())
            .map_err(|e| {
                let item = e.item.map(|i| (i.list, i.position));
                (e.argument().map(str::to_owned), item, e.to_string())
            })
    };
    let argument = |r: std::result::Result<(), (Option<String>, _, String)>| {
        r.map_err(|(a, item, _)| (a.unwrap_or_default(), item))
    };
    assert_eq!(argument(run(&[], &[], 0, &ok)), Err(("x".into(), None)));
    assert_eq!(
        argument(run(&[1.0], &[1.0], 2, &ok)),
        Err(("x".into(), None))
    );
    assert_eq!(
        argument(run(&[1.0, 2.0], &[1.0], 2, &ok)),
        Err(("y".into(), None))
    );
    let nan = run(&[1.0, f64::NAN], &[1.0, 2.0], 2, &ok);
    assert_eq!(
        nan.clone().map_err(|(_, _, message)| message),
        Err("x[0][1] must be finite, got nan".into())
    );
    assert_eq!(argument(nan), Err(("x".into(), Some((0, Some(1))))));
    assert_eq!(
        argument(run(&[1.0, 2.0], &[f64::INFINITY, 2.0], 2, &ok)),
        Err(("y".into(), Some((0, Some(0)))))
    );
    assert_eq!(
        argument(run(&[1.0], &[0.0], 1, &settings(Test::T, 10))),
        Err(("test".into(), None))
    );
    assert_eq!(
        argument(run(&[1.0], &[0.0], 1, &settings(Test::Randomization, 0))),
        Err(("permutations".into(), None))
    );
    let mut s = ok;
    for c in [0.0, 1.0, f64::NAN, -0.5] {
        s.confidence = c;
        assert_eq!(
            argument(run(&[1.0], &[0.0], 1, &s)),
            Err(("confidence".into(), None)),
            "{c}"
        );
    }
    // One query: p from the two sign vectors (both as extreme), no effect size nor t interval.
    let one = paired_tests(&[1.0], &[0.0], 1, &[0], &ok, 1, &Cancel::none()).expect("valid");
    assert_eq!(one[0].p, 1.0);
    assert!(one[0].effect_size.is_nan() && one[0].low.is_nan());
}

#[test]
fn a_cancelled_comparison_stops() {
    let n = 300;
    let x: Vec<f64> = (0..n).map(|i| (i % 7) as f64 / 7.0).collect();
    let y: Vec<f64> = (0..n).map(|i| (i % 5) as f64 / 5.0).collect();
    let cancel = Cancel::none();
    cancel.stop();
    let r = paired_tests(
        &x,
        &y,
        n,
        &[0],
        &settings(Test::Randomization, 1 << 30),
        1,
        &cancel,
    );
    assert_eq!(r.map_err(|e| e.problem), Err(Problem::Interrupted));
}

#[test]
fn row_means_and_streams_are_checked() {
    assert_eq!(row_means(&[1.0, 2.0, 3.0, 5.0], 2), Ok(vec![1.5, 4.0]));
    assert_eq!(row_means(&[], 3), Ok(vec![]));
    let no_columns = row_means(&[], 0).map_err(|e| e.problem);
    let invalid = |argument: &str, message: &str| Problem::Invalid {
        argument: argument.into(),
        message: message.into(),
    };
    assert_eq!(no_columns, Err(invalid("values", "values has no columns")));
    assert_eq!(check_streams(2, 2), Ok(()));
    let wrong = "streams must hold one stream per row of x (3), got 2";
    assert_eq!(
        check_streams(2, 3).map_err(|e| e.problem),
        Err(invalid("streams", wrong))
    );
}

#[test]
fn outcomes_as_columns() {
    let outcome = |delta: f64, wins: usize| Paired {
        delta,
        p: 0.5,
        effect_size: f64::NAN,
        low: -1.0,
        high: 1.0,
        wins,
        ties: 2,
        losses: 3,
    };
    let (values, counts) = columns(&[outcome(0.25, 1), outcome(-1.0, usize::MAX)]);
    assert_eq!(values[0], [0.25, -1.0]);
    assert_eq!(values[1], [0.5, 0.5]);
    assert!(values[2].iter().all(|v| v.is_nan()));
    assert_eq!((&values[3], &values[4]), (&vec![-1.0; 2], &vec![1.0; 2]));
    assert_eq!(counts, [vec![1, i64::MAX], vec![2, 2], vec![3, 3]]);
    assert_eq!(columns(&[]), (Default::default(), Default::default()));
}

#[test]
fn exact_for_any_number_of_queries() {
    assert!(exact(3, 8) && !exact(3, 7) && exact(0, 1));
    assert!(!exact(64, u64::MAX) && !exact(u64::MAX, u64::MAX) && exact(63, 1 << 63));
}
