//! How close a kernel's result must be to the reference's.

use std::fmt;

use approx::{AbsDiffEq, UlpsEq};
use half::{bf16, f16};

use crate::element::{ElemType, ElemVerdict};

/// The acceptance rule for one output (or, as the check's default, for all of them).
///
/// The default depends on the element type: `f32` and `f64` (and their vectors) pass within
/// [`DEFAULT_ABS`] + [`DEFAULT_REL`]·|want|, integers only when equal, and the half-precision
/// floats within [`HALF_DEFAULT_ABS`] + ε·|want|, ε being the type's machine epsilon
/// ([`F16_DEFAULT_REL`] = 2⁻¹⁰, [`BF16_DEFAULT_REL`] = 2⁻⁷): 1e-5 would ask a bf16 result near
/// 1 for a precision of a thousandth of its ulp (2⁻⁷), which only bit-exact kernels meet. ε·|want|
/// is one ulp of `want` at the bottom of a binade and just under two at its top, so it passes
/// the result of a kernel that computes in f32 and rounds once to the half type (the f64
/// reference, rounded once, may land on the other neighbour of the exact value: one ulp away)
/// and fails one two ulps off. The absolute part is the f32 rule's, for values near 0, where the
/// f32 work before the rounding can exceed the half type's ulp.
/// A kernel that also rounds intermediate values to the half type needs a wider rule.
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
/// The default tolerance of the half-precision types, absolute part (the f32 rule's).
pub const HALF_DEFAULT_ABS: f64 = 1e-5;
/// The default tolerance of `f16` (`__half`), relative part: its machine epsilon, 2⁻¹⁰.
pub const F16_DEFAULT_REL: f64 = 1.0 / 1024.0;
/// The default tolerance of `bf16` (`__hip_bfloat16`), relative part: its machine epsilon, 2⁻⁷.
pub const BF16_DEFAULT_REL: f64 = 1.0 / 128.0;

/// The (absolute, relative) parts of the default rule for elements of `elem`; `None` for
/// integers (exact).
fn default_rule(elem: ElemType) -> Option<(f64, f64)> {
    match elem {
        ElemType::F16 => Some((HALF_DEFAULT_ABS, F16_DEFAULT_REL)),
        ElemType::BF16 => Some((HALF_DEFAULT_ABS, BF16_DEFAULT_REL)),
        e if e.is_float() => Some((DEFAULT_ABS, DEFAULT_REL)),
        _ => None,
    }
}

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

    /// Describe the rule for a report, for elements of a float (`true`: `f32`'s default) or
    /// integer type. [`describe_for`](Self::describe_for) knows every type's default.
    pub fn describe(&self, float: bool) -> String {
        self.describe_for(if float { ElemType::F32 } else { ElemType::I32 })
    }

    /// Describe the rule for a report on elements of `elem` (whose type decides the default:
    /// `|got-want| <= 1e-5 + 7.8125e-3*|want|` for `bf16`).
    pub fn describe_for(&self, elem: ElemType) -> String {
        let float = elem.is_float();
        let nan = if self.allow_nan && float {
            ", NaN matches NaN"
        } else {
            ""
        };
        let rule = match (self.mode, default_rule(elem)) {
            (Mode::Default, Some((abs, rel))) => {
                format!("|got-want| <= {abs:e} + {rel:e}*|want|")
            }
            (Mode::Close { abs, rel }, _) => format!("|got-want| <= {abs:e} + {rel:e}*|want|"),
            (Mode::Ulps(n), _) if float => format!("at most {n} ulps apart"),
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

/// What [`float_verdict`] needs of a float type.
pub(crate) trait Float: Copy + PartialEq {
    /// The default rule's (absolute, relative) parts.
    const DEFAULT_RULE: (f64, f64);
    fn to_f64(self) -> f64;
    fn is_nan(self) -> bool;
    /// |self − want| ≤ `tol`.
    fn within(self, want: Self, tol: f64) -> bool;
    /// At most `n` representable values apart, with the same sign.
    fn ulps_within(self, want: Self, n: u32) -> bool;
}

/// `f32` and `f64` compare as `approx` does (the difference in the type itself).
macro_rules! approx_float {
    ($($t:ident)*) => {$(
        impl Float for $t {
            const DEFAULT_RULE: (f64, f64) = (DEFAULT_ABS, DEFAULT_REL);
            fn to_f64(self) -> f64 {
                self.into()
            }
            fn is_nan(self) -> bool {
                $t::is_nan(self)
            }
            fn within(self, want: Self, tol: f64) -> bool {
                self.abs_diff_eq(&want, tol as $t)
            }
            fn ulps_within(self, want: Self, n: u32) -> bool {
                self.ulps_eq(&want, 0.0, n)
            }
        }
    )*};
}
approx_float!(f32 f64);

/// The half-precision types compare in f64, where their differences are exact; their ulps from
/// their bits (sign and magnitude, as every IEEE-style format).
macro_rules! half_float {
    ($($t:ident $rel:ident;)*) => {$(
        impl Float for $t {
            const DEFAULT_RULE: (f64, f64) = (HALF_DEFAULT_ABS, $rel);
            fn to_f64(self) -> f64 {
                $t::to_f64(self)
            }
            fn is_nan(self) -> bool {
                $t::is_nan(self)
            }
            fn within(self, want: Self, tol: f64) -> bool {
                (self.to_f64() - want.to_f64()).abs() <= tol
            }
            fn ulps_within(self, want: Self, n: u32) -> bool {
                let (a, b) = (self.to_bits(), want.to_bits());
                if (a ^ b) & 0x8000 != 0 {
                    return false;
                }
                (a & 0x7fff).abs_diff(b & 0x7fff) as u32 <= n
            }
        }
    )*};
}
half_float! {
    f16 F16_DEFAULT_REL;
    bf16 BF16_DEFAULT_REL;
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
    let (g, w) = (got.to_f64(), want.to_f64());
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
                let (abs, rel) = T::DEFAULT_RULE;
                got.within(want, abs + rel * w.abs())
            }
            Mode::Close { abs, rel } => got.within(want, abs + rel * w.abs()),
            Mode::Ulps(n) => got.ulps_within(want, n),
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
    fn half_defaults_allow_one_ulp_of_the_type_not_two() {
        let t = Tolerance::default();
        // Near 1 (the bottom of its binade) one ulp is exactly ε: it passes, two do not.
        let (one, next, next2) = (f16::ONE, f16::from_bits(0x3c01), f16::from_bits(0x3c02));
        assert!(pass(next, one, t) && pass(one, next, t));
        assert!(!pass(next2, one, t), "two ulps at 1");
        let (one, next, next2) = (bf16::ONE, bf16::from_bits(0x3f81), bf16::from_bits(0x3f82));
        assert!(pass(next, one, t) && pass(one, next, t));
        assert!(!pass(next2, one, t), "two ulps at 1");
        // Just below 2 (the top of the binade) an ulp is about ε/2 of the value: one ulp still
        // passes, two not quite.
        let below_two = bf16::from_bits(0x3fff);
        assert!(pass(bf16::from_bits(0x3ffe), below_two, t));
        assert!(!pass(bf16::from_bits(0x3ffd), below_two, t));
        // The f32 default would have failed a bf16 result one ulp off; the absolute part lets
        // values near 0 differ by what the f32 work before the rounding leaves.
        assert!(!pass(
            bf16::from_bits(0x3f81),
            bf16::ONE,
            Tolerance::close(1e-5, 1e-5)
        ));
        assert!(pass(f16::from_f32(9e-6), f16::ZERO, t));
        assert!(!pass(f16::from_f32(2e-5), f16::ZERO, t));
        assert!(!pass(bf16::NAN, bf16::NAN, t) && pass(bf16::NAN, bf16::NAN, t.allow_nan()));
        assert!(pass(f16::INFINITY, f16::INFINITY, t) && !pass(f16::MAX, f16::INFINITY, t));
        let v = bf16::verdict(bf16::from_f32(1.5), bf16::ONE, &t);
        assert_eq!((v.abs_err, v.rel_err), (0.5, 0.5), "errors in f64");
    }

    #[test]
    fn half_ulps_and_close_rules() {
        let one = f16::ONE;
        let three_up = f16::from_bits(one.to_bits() + 3);
        assert!(pass(three_up, one, Tolerance::ulps(3)));
        assert!(!pass(three_up, one, Tolerance::ulps(2)));
        assert!(!pass(
            -bf16::MIN_POSITIVE_SUBNORMAL,
            bf16::MIN_POSITIVE_SUBNORMAL,
            Tolerance::ulps(5)
        ));
        assert!(pass(-f16::ZERO, f16::ZERO, Tolerance::exact()));
        assert!(pass(bf16::from_f32(1.25), bf16::ONE, Tolerance::abs(0.25)));
        assert!(!pass(bf16::from_f32(1.25), bf16::ONE, Tolerance::abs(0.24)));
    }

    #[test]
    fn describes_each_types_default() {
        let t = Tolerance::default();
        assert_eq!(
            t.describe_for(ElemType::BF16),
            "|got-want| <= 1e-5 + 7.8125e-3*|want|"
        );
        assert_eq!(
            t.describe_for(ElemType::F16),
            "|got-want| <= 1e-5 + 9.765625e-4*|want|"
        );
        assert_eq!(t.describe_for(ElemType::F32x4), t.describe(true));
        assert_eq!(t.describe_for(ElemType::U8), "exact");
        assert_eq!(
            Tolerance::ulps(1).describe_for(ElemType::F16),
            "at most 1 ulps apart"
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
