//! Numeric encoding of configurations for surrogate models.
//!
//! Models (Gaussian process, ridge regression) need points in a vector space where distance
//! means "similar performance". Tuning parameters are mostly powers of two (block sizes, tile
//! sizes), whose effect is multiplicative: 16→32 matters as much as 512→1024. So numeric
//! parameters whose values are all powers of two, or that span a ratio of 16 or more with all
//! values positive, are encoded as `log2(v)`; other numbers linearly. Every numeric column is
//! then scaled to `[0, 1]` so one length scale fits all. Booleans and two-valued strings become
//! one 0/1 column; strings with more values are one-hot encoded (they have no order).

use crate::space::{ConfigId, SearchSpace};
use crate::value::Value;

/// Maps configurations to feature vectors.
#[derive(Debug, Clone)]
pub struct FeatureEncoder {
    /// tables[p][value index] = that value's columns.
    tables: Vec<Vec<Vec<f64>>>,
    log_scaled: Vec<bool>,
    ordinal_columns: Vec<usize>,
    dim: usize,
}

fn is_pow2(x: f64) -> bool {
    x >= 1.0 && x.fract() == 0.0 && x < 9.0e15 && (x as u64).is_power_of_two()
}

impl FeatureEncoder {
    /// Builds the encoding for `space`.
    pub fn new(space: &SearchSpace) -> Self {
        let mut tables = Vec::new();
        let mut log_scaled = Vec::new();
        let mut ordinal_columns = Vec::new();
        let mut dim = 0;
        for p in 0..space.num_params() {
            let values = space.values(p);
            let nums: Option<Vec<f64>> = values.iter().map(Value::as_f64).collect();
            let (table, log, ordinal) = match nums {
                Some(xs) => {
                    let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
                    let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    let log = xs.len() > 1
                        && min > 0.0
                        && (xs.iter().all(|&x| is_pow2(x)) || max / min >= 16.0);
                    let t: Vec<f64> = xs.iter().map(|&x| if log { x.log2() } else { x }).collect();
                    let (lo, hi) = if log {
                        (min.log2(), max.log2())
                    } else {
                        (min, max)
                    };
                    let span = hi - lo;
                    let table: Vec<Vec<f64>> = t
                        .iter()
                        .map(|&v| vec![if span > 0.0 { (v - lo) / span } else { 0.5 }])
                        .collect();
                    (table, log, true)
                }
                None if values.len() <= 2 => {
                    let table: Vec<Vec<f64>> = (0..values.len()).map(|i| vec![i as f64]).collect();
                    (table, false, false)
                }
                None => {
                    let n = values.len();
                    let table = (0..n)
                        .map(|i| (0..n).map(|j| if i == j { 1.0 } else { 0.0 }).collect())
                        .collect();
                    (table, false, false)
                }
            };
            let width = table.first().map_or(0, |c: &Vec<f64>| c.len());
            if ordinal {
                ordinal_columns.push(dim);
            }
            dim += width;
            tables.push(table);
            log_scaled.push(log);
        }
        FeatureEncoder {
            tables,
            log_scaled,
            ordinal_columns,
            dim,
        }
    }

    /// Number of columns.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Whether parameter `p` is encoded on a log scale.
    pub fn is_log_scaled(&self, p: usize) -> bool {
        self.log_scaled.get(p).copied().unwrap_or(false)
    }

    /// Columns holding ordered numeric parameters (candidates for squares and interactions).
    pub fn ordinal_columns(&self) -> &[usize] {
        &self.ordinal_columns
    }

    /// Writes the features of `id` into `out` (cleared first).
    pub fn encode_into(&self, space: &SearchSpace, id: ConfigId, out: &mut Vec<f64>) {
        out.clear();
        for (p, table) in self.tables.iter().enumerate() {
            if let Some(cols) = table.get(space.value_index(id, p)) {
                out.extend_from_slice(cols);
            }
        }
    }

    /// The features of `id`.
    pub fn encode(&self, space: &SearchSpace, id: ConfigId) -> Vec<f64> {
        let mut v = Vec::with_capacity(self.dim);
        self.encode_into(space, id, &mut v);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn powers_of_two_are_log_scaled() {
        let space = SearchSpace::builder()
            .param("bs", [16, 32, 64, 128, 256])
            .param("unroll", [1, 2, 3, 4])
            .param("layout", ["a", "b", "c"])
            .param("vec", [true, false])
            .build()
            .unwrap();
        let enc = FeatureEncoder::new(&space);
        assert!(enc.is_log_scaled(0));
        assert!(!enc.is_log_scaled(1));
        assert_eq!(enc.dim(), 1 + 1 + 3 + 1);
        assert_eq!(enc.ordinal_columns(), &[0, 1]);
        let id = space
            .find_values(&[
                Value::Int(64),
                Value::Int(3),
                Value::from("b"),
                Value::Bool(false),
            ])
            .unwrap();
        let f = enc.encode(&space, id);
        // 64 is halfway between 16 and 256 in log2
        assert!((f[0] - 0.5).abs() < 1e-12);
        assert!((f[1] - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(&f[2..], &[0.0, 1.0, 0.0, 1.0]);
    }
}

/// A quadratic design row: the encoded parameters, the squares of the ordered numeric ones and
/// their pairwise products, then each extra (static) feature and its square. In log2-encoded
/// space this is a second-order response surface in `ln(parameter)`: it captures products of
/// parameters (`BM·BK`, `TM·TN`: sums of logs) and optima in the middle of a range.
pub fn quadratic_design(enc: &FeatureEncoder, base: &[f64], extra: &[f64], out: &mut Vec<f64>) {
    out.clear();
    out.extend_from_slice(base);
    let ord = enc.ordinal_columns();
    for &c in ord {
        out.push(base[c] * base[c]);
    }
    for (i, &a) in ord.iter().enumerate() {
        for &b in &ord[i + 1..] {
            out.push(base[a] * base[b]);
        }
    }
    for &s in extra {
        out.push(s);
        out.push(s * s);
    }
}

/// Probability that a configuration can be evaluated at all (compiles, launches, verifies),
/// learnt from the evaluated ones by L2-regularised logistic regression on the
/// [`quadratic_design`] of the encoded parameters (fitted by Newton's method / IRLS).
///
/// Why a separate model instead of giving failures a bad time: a failure says nothing about
/// how fast its neighbours are, and failure regions often border the optimum (the largest
/// tiles that still fit). Keeping the questions apart lets surrogate models learn speed from
/// valid points only: acquisition becomes "expected improvement × probability of success"
/// (constrained EI) and a predicted time `t` is ranked as `t / p`, the expected time per
/// successful try. Failure rules are usually thresholds on products of parameters (registers
/// ≈ `TM·TN`, LDS ≈ `BK·(BM+BN)`), which are linear in log space; hence a logistic model on the
/// quadratic design rather than a distance-based estimate, which cannot tell that a failure
/// does not depend on `BM` at all. With fewer than two failures or two successes there is
/// nothing to learn and the smoothed overall rate `(ok + 1) / (n + 2)` is used.
#[derive(Debug, Clone)]
pub struct Feasibility {
    model: Option<Logistic>,
    p0: f64,
    failures: usize,
}

#[derive(Debug, Clone)]
struct Logistic {
    mean: Vec<f64>,
    scale: Vec<f64>,
    beta: Vec<f64>,
}

impl Logistic {
    const LAMBDA: f64 = 1.0;

    fn fit(rows: &[Vec<f64>], ok: &[bool]) -> Option<Logistic> {
        let n = rows.len();
        let d = rows.first()?.len();
        let mut mean = vec![0.0; d];
        let mut scale = vec![1.0; d];
        for j in 0..d {
            mean[j] = rows.iter().map(|r| r[j]).sum::<f64>() / n as f64;
            let var = rows.iter().map(|r| (r[j] - mean[j]).powi(2)).sum::<f64>() / n as f64;
            scale[j] = if var > 1e-18 { var.sqrt() } else { 1.0 };
        }
        let x: Vec<Vec<f64>> = rows
            .iter()
            .map(|r| {
                std::iter::once(1.0)
                    .chain((0..d).map(|j| (r[j] - mean[j]) / scale[j]))
                    .collect()
            })
            .collect();
        let p = d + 1;
        let mut beta = vec![0.0; p];
        for _ in 0..30 {
            let mut h = vec![0.0; p * p];
            let mut g = vec![0.0; p];
            for (row, &y) in x.iter().zip(ok) {
                let eta: f64 = row.iter().zip(&beta).map(|(a, b)| a * b).sum();
                let mu = 1.0 / (1.0 + (-eta).exp());
                let w = (mu * (1.0 - mu)).max(1e-9);
                let r = f64::from(u8::from(y)) - mu;
                for a in 0..p {
                    g[a] += row[a] * r;
                    for b in 0..p {
                        h[a * p + b] += w * row[a] * row[b];
                    }
                }
            }
            for a in 1..p {
                g[a] -= Self::LAMBDA * beta[a];
                h[a * p + a] += Self::LAMBDA;
            }
            h[0] += 1e-6;
            let l = crate::linalg::cholesky_jittered(&h, p)?;
            let step = crate::linalg::cho_solve(&l, p, &g);
            let mut change = 0.0f64;
            for (b, s) in beta.iter_mut().zip(&step) {
                *b += s;
                change = change.max(s.abs());
            }
            if !change.is_finite() {
                return None;
            }
            if change < 1e-8 {
                break;
            }
        }
        Some(Logistic { mean, scale, beta })
    }

    fn prob(&self, row: &[f64]) -> f64 {
        let cols = row.iter().zip(&self.mean).zip(&self.scale);
        let eta = self.beta.first().copied().unwrap_or(0.0)
            + self
                .beta
                .iter()
                .skip(1)
                .zip(cols)
                .map(|(b, ((v, m), sc))| b * (v - m) / sc)
                .sum::<f64>();
        1.0 / (1.0 + (-eta).exp())
    }
}

impl Feasibility {
    /// From design rows and whether each configuration succeeded.
    pub fn new(rows: &[Vec<f64>], ok: &[bool]) -> Self {
        let good = ok.iter().filter(|&&o| o).count();
        let failures = ok.len() - good;
        let p0 = (good as f64 + 1.0) / (ok.len() as f64 + 2.0);
        let model = if good >= 2 && failures >= 2 && rows.len() == ok.len() {
            Logistic::fit(rows, ok)
        } else {
            None
        };
        Feasibility {
            model,
            p0,
            failures,
        }
    }

    /// True when at least one failure was seen (otherwise success is taken for granted).
    pub fn has_failures(&self) -> bool {
        self.failures > 0
    }

    /// Estimated success probability for a design row, clamped to `[0.01, 1]` so that no
    /// configuration is ruled out for good by a model fitted on a handful of points.
    pub fn prob(&self, row: &[f64]) -> f64 {
        if self.failures == 0 {
            return 1.0;
        }
        match &self.model {
            Some(m) => m.prob(row),
            None => self.p0,
        }
        .clamp(1e-9, 1.0)
    }
}

#[cfg(test)]
mod feasibility_tests {
    use super::*;

    #[test]
    fn learns_a_product_threshold_in_log_space() {
        let space = SearchSpace::builder()
            .param("bm", [16, 32, 64, 128, 256])
            .param("tm", [1, 2, 4, 8, 16])
            .param("tn", [1, 2, 4, 8, 16])
            .build()
            .unwrap();
        let enc = FeatureEncoder::new(&space);
        let fails =
            |id| space.config(id).int("tm").unwrap() * space.config(id).int("tn").unwrap() >= 64;
        let mut rows = Vec::new();
        let mut ok = Vec::new();
        let mut row = Vec::new();
        // every third configuration as training data
        for id in space.ids().step_by(3) {
            quadratic_design(&enc, &enc.encode(&space, id), &[], &mut row);
            rows.push(row.clone());
            ok.push(!fails(id));
        }
        let f = Feasibility::new(&rows, &ok);
        assert!(f.has_failures());
        let mut correct = 0;
        for id in space.ids() {
            quadratic_design(&enc, &enc.encode(&space, id), &[], &mut row);
            if (f.prob(&row) < 0.5) == fails(id) {
                correct += 1;
            }
        }
        assert!(
            correct as f64 > 0.9 * space.len() as f64,
            "{correct}/{}",
            space.len()
        );
        let none = Feasibility::new(&rows[..3], &[true, true, true]);
        assert!(!none.has_failures());
        assert_eq!(none.prob(&rows[0]), 1.0);
    }
}
