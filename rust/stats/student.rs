//! Student's t distribution, as the paired t-test and its interval need it: the two-sided tail
//! `P(|T| >= t)` with `nu` degrees of freedom, and the quantile that inverts it.
//!
//! The tail is the regularized incomplete beta function `I_x(nu / 2, 1 / 2)` at
//! `x = nu / (nu + t^2)`, evaluated by its continued fraction (modified Lentz, as in Numerical
//! Recipes' `betai`/`betacf`); the beta function's logarithm comes from the Lanczos
//! approximation (g = 7, 9 terms) written so that its large terms cancel exactly rather than in
//! floating point. Every operation is spelled out (and repeated in the reference,
//! `_reference.py`), so both compute the same bits on the same platform: only `+ - * /`, `sqrt`,
//! `ln`, `ln_1p` and `exp`, the last three from the platform's C library in both.

/// The Lanczos approximation's g and coefficients (g = 7, n = 9).
const LANCZOS_G: f64 = 7.0;
#[allow(clippy::excessive_precision, clippy::unreadable_literal)]
const LANCZOS: [f64; 9] = [
    0.99999999999980993,
    676.5203681218851,
    -1259.1392167224028,
    771.32342877765313,
    -176.61502916214059,
    12.507343278686905,
    -0.13857109526572012,
    9.9843695780195716e-6,
    1.5056327351493116e-7,
];
/// ln(2 pi) / 2.
#[allow(clippy::excessive_precision, clippy::unreadable_literal)]
const HALF_LN_2PI: f64 = 0.91893853320467274;

/// The Lanczos sum `A(z) = c0 + sum_k c_k / (z - 1 + k)`: `Gamma(z) = sqrt(2 pi) (z + g - 1/2)
/// ^ (z - 1/2) exp(-(z + g - 1/2)) A(z)` for z >= 1/2.
fn lanczos_sum(z: f64) -> f64 {
    let mut sum = LANCZOS[0];
    let mut k = 1.0;
    for c in &LANCZOS[1..] {
        sum += c / (z - 1.0 + k);
        k += 1.0;
    }
    sum
}

/// `ln B(a, b)` for a, b >= 1/2. With `ta = a + g - 1/2` (and tb, tc for b and c = a + b), the
/// exponentials' `-ta - tb + tc` is `-(g - 1/2)`, and `(a - 1/2) ln ta - (c - 1/2) ln tc` is
/// `(a - 1/2) ln_1p(-b / tc) - b ln tc`: nothing of the size of `a ln a` is formed, so a large
/// `a` (many queries) loses no precision to cancellation.
pub fn ln_beta(a: f64, b: f64) -> f64 {
    let half_g = LANCZOS_G - 0.5;
    let c = a + b;
    let tb = b + half_g;
    let tc = c + half_g;
    HALF_LN_2PI - half_g + (a - 0.5) * (-b / tc).ln_1p() - b * tc.ln()
        + (b - 0.5) * tb.ln()
        + (lanczos_sum(a) * lanczos_sum(b) / lanczos_sum(c)).ln()
}

const CF_TINY: f64 = 1e-300;
const CF_EPS: f64 = 1e-15;
const CF_MAX_TERMS: u32 = 100_000;

/// The continued fraction of `I_x(a, b)` (Numerical Recipes' `betacf`, modified Lentz): at most
/// `CF_MAX_TERMS` pairs of terms, until a pair changes the value by less than `CF_EPS`.
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    let qab = a + b;
    let qap = a + 1.0;
    let qam = a - 1.0;
    let tiny = |v: f64| if v.abs() < CF_TINY { CF_TINY } else { v };
    let mut c = 1.0;
    let mut d = 1.0 / tiny(1.0 - qab * x / qap);
    let mut h = d;
    let mut m = 1.0;
    for _ in 0..CF_MAX_TERMS {
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 / tiny(1.0 + aa * d);
        c = tiny(1.0 + aa / c);
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 / tiny(1.0 + aa * d);
        c = tiny(1.0 + aa / c);
        let step = d * c;
        h *= step;
        if (step - 1.0).abs() < CF_EPS {
            break;
        }
        m += 1.0;
    }
    h
}

/// `P(|T| >= t)` for Student's t with `nu > 0` degrees of freedom and `t >= 0` (or infinite):
/// `I_x(nu / 2, 1 / 2)`, `x = nu / (nu + t^2)`, `1 - x = t^2 / (nu + t^2)` computed as such.
pub fn two_sided_p(t: f64, nu: f64) -> f64 {
    let t2 = t * t;
    if t2.is_infinite() {
        return 0.0;
    }
    let (a, b) = (0.5 * nu, 0.5);
    let x = nu / (nu + t2);
    let y = t2 / (nu + t2);
    let front = (a * -(t2 / nu).ln_1p() + b * y.ln() - ln_beta(a, b)).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, y) / b
    }
}

/// The `t >= 0` whose two-sided tail is `tail` (0 < tail < 1): bisection, from `[0, 1]`
/// doubled until the tail at the right end is at most `tail`, halving until the ends are
/// neighbouring floats (or 2,000 halvings); the right end. [`two_sided_p`] decreases in `t`.
pub fn two_sided_quantile(tail: f64, nu: f64) -> f64 {
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    while two_sided_p(hi, nu) > tail && hi < f64::MAX / 2.0 {
        lo = hi;
        hi *= 2.0;
    }
    for _ in 0..2000 {
        let mid = lo + (hi - lo) / 2.0;
        if mid <= lo || mid >= hi {
            break;
        }
        if two_sided_p(mid, nu) > tail {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}
