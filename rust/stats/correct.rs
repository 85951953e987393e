//! Multiple-comparison corrections of a family of p-values, with statsmodels' arithmetic
//! (`statsmodels.stats.multitest.multipletests`), so that both give the same bits.

/// How a family of p-values is corrected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Correction {
    /// The p-values as they are.
    None,
    /// `min(1, p m)`: controls the family-wise error rate.
    Bonferroni,
    /// Holm's step-down: the k-th smallest (0-based) times `m - k`, made non-decreasing in that
    /// order by a running maximum, at most 1: controls the family-wise error rate, never less
    /// powerful than Bonferroni.
    Holm,
    /// Benjamini–Hochberg: the k-th smallest (1-based) divided by `k / m`, made non-decreasing
    /// by a running minimum from the largest, at most 1: controls the false discovery rate.
    Bh,
}

impl Correction {
    /// The names the Python API takes, in the order of the variants.
    pub const NAMES: [&'static str; 4] = ["none", "bonferroni", "holm", "bh"];

    /// The correction called `name`, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        let all = [
            Correction::None,
            Correction::Bonferroni,
            Correction::Holm,
            Correction::Bh,
        ];
        Self::NAMES.iter().position(|&n| n == name).map(|i| all[i])
    }
}

/// The corrected p-values of the family `p` (each in [0, 1]), in the same order. Ties keep
/// their order (a stable sort); it does not change the result.
pub fn correct(p: &[f64], method: Correction) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut out = p.to_vec();
    match method {
        Correction::None => {}
        Correction::Bonferroni => {
            for v in &mut out {
                *v = (*v * m as f64).min(1.0);
            }
        }
        Correction::Holm => {
            let mut running = f64::NEG_INFINITY;
            for (k, &i) in order.iter().enumerate() {
                running = running.max((m - k) as f64 * p[i]);
                out[i] = running.min(1.0);
            }
        }
        Correction::Bh => {
            let mut running = f64::INFINITY;
            for (k, &i) in order.iter().enumerate().rev() {
                running = running.min(p[i] / ((k + 1) as f64 / m as f64));
                out[i] = running.min(1.0);
            }
        }
    }
    out
}
