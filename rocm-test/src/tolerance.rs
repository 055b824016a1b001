//! How close a kernel's result must be to the reference's.

use std::fmt;

use approx::UlpsEq;

use crate::element::ElemVerdict;

/// The acceptance rule for one output (or, as the check's default, for all of them).
///
/// ```
/// use rocm_test::Tolerance;
/// let default = Tolerance::default();           // floats: |got−want| ≤ 1e-5 + 1e-5·|want|; ints: exact
/// let loose = Tolerance::close(1e-3, 1e-4);     // |got−want| ≤ 1e-3 + 1e-4·|want|
/// let ulps = Tolerance::ulps(4);                // at most 4 units in the last place apart
/// let exact = Tolerance::exact();               // bit-for-bit equal values (and -0.0 == 0.0)
/// let nan_ok = Tolerance::default().allow_nan(); // NaN where the reference has NaN passes
/// # let _ = (default, loose, ulps, exact, nan_ok);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    mode: Mode,
    allow_nan: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    /// Floats: `Close { abs: 1e-5, rel: 1e-5 }`; integers: exact.
    Default,
    Close {
        abs: f64,
        rel: f64,
    },
    Ulps(u32),
    Exact,
}

/// The default float tolerance, absolute part.
pub const DEFAULT_ABS: f64 = 1e-5;
/// The default float tolerance, relative part.
pub const DEFAULT_REL: f64 = 1e-5;

impl Default for Tolerance {
    fn default() -> Self {
        Tolerance {
            mode: Mode::Default,
            allow_nan: false,
        }
    }
}

impl Tolerance {
    /// Pass when |got − want| ≤ `abs` + `rel`·|want| (for integers too, computed exactly).
    pub fn close(abs: f64, rel: f64) -> Self {
        Tolerance {
            mode: Mode::Close { abs, rel },
            allow_nan: false,
        }
    }

    /// Pass when |got − want| ≤ `abs`.
    pub fn abs(abs: f64) -> Self {
        Self::close(abs, 0.0)
    }

    /// Floats: pass when at most `max_ulps` representable values apart (same sign). Integers: exact.
    pub fn ulps(max_ulps: u32) -> Self {
        Tolerance {
            mode: Mode::Ulps(max_ulps),
            allow_nan: false,
        }
    }

    /// Pass only on equal values.
    pub fn exact() -> Self {
        Tolerance {
            mode: Mode::Exact,
            allow_nan: false,
        }
    }

    /// Let a NaN pass where the reference also has a NaN. Without this, NaN never passes.
    pub fn allow_nan(mut self) -> Self {
        self.allow_nan = true;
        self
    }

    /// Describe the rule for a report, for elements of a float (`true`) or integer type.
    pub fn describe(&self, float: bool) -> String {
        let nan = if self.allow_nan && float {
            ", NaN matches NaN"
        } else {
            ""
        };
        let rule = match (self.mode, float) {
            (Mode::Default, true) => {
                format!("|got-want| <= {DEFAULT_ABS:e} + {DEFAULT_REL:e}*|want|")
            }
            (Mode::Close { abs, rel }, _) => format!("|got-want| <= {abs:e} + {rel:e}*|want|"),
            (Mode::Ulps(n), true) => format!("at most {n} ulps apart"),
            (Mode::Default | Mode::Ulps(_) | Mode::Exact, _) => "exact".to_owned(),
        };
        format!("{rule}{nan}")
    }
}

impl fmt::Display for Tolerance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe(true))
    }
}

/// What [`float_verdict`] needs of `f32` and `f64`; the comparisons themselves are `approx`'s.
pub(crate) trait Float: UlpsEq<Epsilon = Self> + Copy + Into<f64> + PartialEq {
    fn from_f64(x: f64) -> Self;
    fn is_nan(self) -> bool;
}

impl Float for f32 {
    fn from_f64(x: f64) -> Self {
        x as f32
    }
    fn is_nan(self) -> bool {
        f32::is_nan(self)
    }
}

impl Float for f64 {
    fn from_f64(x: f64) -> Self {
        x
    }
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
}

fn errors(got: f64, want: f64) -> (f64, f64) {
    if got == want {
        return (0.0, 0.0);
    }
    let abs = (got - want).abs();
    // NaN on either side, or opposite infinities: as far apart as it gets.
    let abs = if abs.is_nan() { f64::INFINITY } else { abs };
    let rel = if want == 0.0 {
        f64::INFINITY
    } else {
        abs / want.abs()
    };
    (abs, rel)
}

pub(crate) fn float_verdict<T: Float>(got: T, want: T, tol: &Tolerance) -> ElemVerdict {
    let (g, w): (f64, f64) = (got.into(), want.into());
    let (abs_err, rel_err) = errors(g, w);
    let pass = if got.is_nan() || want.is_nan() {
        tol.allow_nan && got.is_nan() && want.is_nan()
    } else if got == want {
        // Equal infinities (and -0.0 == 0.0) pass every rule; approx would say inf - inf = NaN.
        true
    } else if g.is_infinite() || w.is_infinite() {
        // An infinity matches only itself (a relative tolerance of an infinite want is infinite).
        false
    } else {
        match tol.mode {
            Mode::Default => {
                got.abs_diff_eq(&want, T::from_f64(DEFAULT_ABS + DEFAULT_REL * w.abs()))
            }
            Mode::Close { abs, rel } => got.abs_diff_eq(&want, T::from_f64(abs + rel * w.abs())),
            Mode::Ulps(n) => got.ulps_eq(&want, T::from_f64(0.0), n),
            Mode::Exact => false,
        }
    };
    ElemVerdict {
        pass,
        abs_err,
        rel_err,
    }
}

pub(crate) fn int_verdict(got: i128, want: i128, tol: &Tolerance) -> ElemVerdict {
    let (abs_err, rel_err) = errors(got as f64, want as f64);
    let diff = (got - want).unsigned_abs() as f64;
    let pass = match tol.mode {
        Mode::Close { abs, rel } => diff <= abs + rel * (want as f64).abs(),
        Mode::Default | Mode::Ulps(_) | Mode::Exact => got == want,
    };
    ElemVerdict {
        pass,
        abs_err,
        rel_err,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Element;

    fn pass<T: Element>(got: T, want: T, tol: Tolerance) -> bool {
        T::verdict(got, want, &tol).pass
    }

    #[test]
    fn default_float_rule_is_abs_plus_rel() {
        let t = Tolerance::default();
        assert!(pass(1.0f64 + 1.9e-5, 1.0, t));
        assert!(!pass(1.0f64 + 2.1e-5, 1.0, t));
        // Relative part dominates for large values.
        assert!(pass(1000.0f64 + 0.009, 1000.0, t));
        assert!(!pass(1000.0f64 + 0.011, 1000.0, t));
        // Absolute part dominates near zero.
        assert!(pass(9e-6f32, 0.0, t));
        assert!(!pass(1.1e-5f32, 0.0, t));
    }

    #[test]
    fn nan_never_passes_unless_allowed() {
        let t = Tolerance::default();
        assert!(!pass(f32::NAN, 1.0, t));
        assert!(!pass(1.0, f32::NAN, t));
        assert!(!pass(f32::NAN, f32::NAN, t));
        assert!(!pass(
            f32::NAN,
            f32::NAN,
            Tolerance::close(f64::INFINITY, 0.0)
        ));
        assert!(pass(f32::NAN, f32::NAN, t.allow_nan()));
        assert!(!pass(f32::NAN, 0.0, t.allow_nan()));
        let v = f32::verdict(f32::NAN, 1.0, &t);
        assert!(v.abs_err.is_infinite() && v.rel_err.is_infinite());
    }

    #[test]
    fn infinities_and_signed_zero() {
        let t = Tolerance::exact();
        assert!(pass(f32::INFINITY, f32::INFINITY, t));
        assert!(!pass(
            f32::INFINITY,
            f32::NEG_INFINITY,
            Tolerance::default()
        ));
        assert!(pass(-0.0f32, 0.0, t));
    }

    #[test]
    fn ulps_mode() {
        let one = 1.0f32;
        let next = f32::from_bits(one.to_bits() + 3);
        assert!(pass(next, one, Tolerance::ulps(3)));
        assert!(!pass(next, one, Tolerance::ulps(2)));
    }

    #[test]
    fn integers_are_exact_by_default_even_when_large() {
        assert!(!pass(1_000_001i32, 1_000_000, Tolerance::default()));
        assert!(pass(7u32, 7, Tolerance::default()));
        assert!(pass(102i64, 100, Tolerance::abs(2.0)));
        assert!(!pass(103i64, 100, Tolerance::abs(2.0)));
        assert!(pass(u64::MAX, u64::MAX, Tolerance::exact()));
        assert_eq!(
            u64::verdict(0, u64::MAX, &Tolerance::exact()).abs_err,
            u64::MAX as f64
        );
    }

    #[test]
    fn describes_itself() {
        assert_eq!(
            Tolerance::default().describe(true),
            "|got-want| <= 1e-5 + 1e-5*|want|"
        );
        assert_eq!(Tolerance::default().describe(false), "exact");
        assert_eq!(
            Tolerance::ulps(2).allow_nan().describe(true),
            "at most 2 ulps apart, NaN matches NaN"
        );
    }
}
