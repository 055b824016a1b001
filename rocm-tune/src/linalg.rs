//! The small dense linear algebra the surrogate models need (matrices of at most a few
//! hundred rows): Cholesky factorisation and triangular solves, written out rather than
//! pulling in a linear-algebra crate for ~60 lines.

/// Cholesky factor `L` (row-major, lower triangle) of the symmetric positive-definite `n×n`
/// matrix `a`; `None` if it is not positive definite.
pub fn cholesky(a: &[f64], n: usize) -> Option<Vec<f64>> {
    if a.len() != n * n {
        return None;
    }
    let mut l = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            let mut s = a[i * n + j];
            for k in 0..j {
                s -= l[i * n + k] * l[j * n + k];
            }
            if i == j {
                if s <= 0.0 || !s.is_finite() {
                    return None;
                }
                l[i * n + i] = s.sqrt();
            } else {
                l[i * n + j] = s / l[j * n + j];
            }
        }
    }
    Some(l)
}

/// Cholesky with increasing diagonal jitter for nearly singular matrices (duplicate points).
pub fn cholesky_jittered(a: &[f64], n: usize) -> Option<Vec<f64>> {
    if let Some(l) = cholesky(a, n) {
        return Some(l);
    }
    let scale = (0..n)
        .map(|i| a[i * n + i].abs())
        .fold(0.0, f64::max)
        .max(1e-12);
    let mut jitter = 1e-10 * scale;
    let mut m = a.to_vec();
    for _ in 0..8 {
        for i in 0..n {
            m[i * n + i] = a[i * n + i] + jitter;
        }
        if let Some(l) = cholesky(&m, n) {
            return Some(l);
        }
        jitter *= 100.0;
    }
    None
}

/// Solves `L x = b` (forward substitution).
pub fn solve_lower(l: &[f64], n: usize, b: &[f64]) -> Vec<f64> {
    let mut x = b.to_vec();
    for i in 0..n {
        let mut s = x[i];
        for k in 0..i {
            s -= l[i * n + k] * x[k];
        }
        x[i] = s / l[i * n + i];
    }
    x
}

/// Solves `Lᵀ x = b` (back substitution).
pub fn solve_upper_t(l: &[f64], n: usize, b: &[f64]) -> Vec<f64> {
    let mut x = b.to_vec();
    for i in (0..n).rev() {
        let mut s = x[i];
        for k in (i + 1)..n {
            s -= l[k * n + i] * x[k];
        }
        x[i] = s / l[i * n + i];
    }
    x
}

/// Solves `A x = b` given the Cholesky factor of `A`.
pub fn cho_solve(l: &[f64], n: usize, b: &[f64]) -> Vec<f64> {
    solve_upper_t(l, n, &solve_lower(l, n, b))
}

/// Standard normal density.
pub fn normal_pdf(x: f64) -> f64 {
    (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

/// Standard normal distribution function, via `erfc` (W. J. Cody's rational approximation as
/// given in Numerical Recipes' `erfcc`, relative error below 1.2e-7 everywhere).
pub fn normal_cdf(x: f64) -> f64 {
    0.5 * erfc(-x / std::f64::consts::SQRT_2)
}

fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cholesky_solves() {
        let a = [4.0, 2.0, 0.6, 2.0, 5.0, 1.0, 0.6, 1.0, 3.0];
        let l = cholesky(&a, 3).unwrap();
        let b = [1.0, 2.0, 3.0];
        let x = cho_solve(&l, 3, &b);
        for i in 0..3 {
            let ax: f64 = (0..3).map(|j| a[i * 3 + j] * x[j]).sum();
            assert!((ax - b[i]).abs() < 1e-12);
        }
        assert!(cholesky(&[1.0, 2.0, 2.0, 1.0], 2).is_none());
        assert!(cholesky_jittered(&[1.0, 1.0, 1.0, 1.0], 2).is_some());
    }

    #[test]
    fn normal_cdf_values() {
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_cdf(1.959_963_985) - 0.975).abs() < 1e-6);
        assert!((normal_cdf(-1.0) - 0.158_655_254).abs() < 1e-6);
        assert!(normal_cdf(-40.0) >= 0.0 && normal_cdf(40.0) <= 1.0);
    }
}
