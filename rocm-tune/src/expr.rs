//! Restriction expressions written as Kernel Tuner users write them (Python syntax), evaluated
//! by the [`evalexpr`] crate.
//!
//! Kernel Tuner restrictions are Python expressions, and users copy them verbatim
//! (`"block_size_x*block_size_y<=1024"`, `"tile % 4 == 0"`, `"N // BM >= 2 and BK <= 32"`).
//! evalexpr's own language differs from Python in ways that would *silently* change which
//! configurations are valid, so this module does two things:
//!
//! 1. A token-level translation (no expression parser of our own; evalexpr still parses and
//!    evaluates) maps Python spellings onto evalexpr's:
//!
//!    | Python | evalexpr | note |
//!    |---|---|---|
//!    | `and`, `or` | `&&`, `\|\|` | `&&`, `\|\|` are accepted too |
//!    | `not x` | `!(x)` | the parenthesis reproduces Python's precedence (`not a == b` is `not (a == b)`) |
//!    | `True`, `False` | `true`, `false` | |
//!    | `a < b <= c` | `(a < b) && (b <= c)` | Python's chained comparison |
//!    | `a ** b` | `a ^ b` | a chain `a ** b ** c` must be parenthesised (error otherwise) |
//!    | `a // b` | `a / __kt_floordiv__ / b` | see below |
//!    | `'text'` | `"text"` | |
//!    | `math.floor(x)` | `floor(x)` | also `ceil`, `log2`, `sqrt` |
//!
//!    Python syntax with no counterpart (`in`, `is`, `if … else`, bitwise operators, `=`,
//!    subscripts) is rejected with an error rather than mis-evaluated.
//!
//! 2. Numbers are evaluated with Python semantics through a custom evalexpr numeric type
//!    ([`PyNum`]): `/` is true division (`5 / 2 == 2.5`), `//` is floor division, `%` is
//!    Python's floor modulo (`-1 % 4 == 3`), `2 == 2.0` is true, integer overflow falls back
//!    to float. evalexpr's integer type is made unparseable so that every literal becomes a
//!    [`PyNum`] and evalexpr's own (truncating, type-strict) integer rules never apply.
//!    Floor division is spelled `a / M / b` with a marker constant `M`: `a / M` yields a
//!    "pending floor division" value and dividing that by `b` floors; since `/` is
//!    left-associative with `*` and `%`, this has exactly Python's precedence.
//!
//! Differences that remain: division or modulo by zero yields NaN (the restriction is then
//! false) where Python raises `ZeroDivisionError`; `True == 1` is false; `and`/`or` need
//! boolean operands (Python would accept numbers). A restriction whose value is a number is
//! true when non-zero, as in Python.
//!
//! Functions available: `int`, `float`, `abs`, `min`, `max`, `round` (half to even, as in
//! Python 3), `floor`, `ceil`, `log2`, `sqrt`.

use evalexpr::{
    Context, EvalexprError, EvalexprFloat, EvalexprInt, EvalexprNumericTypes, EvalexprResult, Node,
    Value as EValue,
};
use std::cmp::Ordering;
use std::fmt;
use std::ops::{Add, Div, Mul, Neg, Rem, Sub};
use std::str::FromStr;

use crate::value::{python_float_repr, Value};

/// Identifier of the floor-division marker inserted by the translation.
pub const FLOORDIV_MARKER: &str = "__kt_floordiv__";

const FUNCTIONS: &[&str] = &[
    "int", "float", "abs", "min", "max", "round", "floor", "ceil", "log2", "sqrt",
];

/// Errors in a restriction expression, found when the search space is built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExprError {
    /// The text is not a valid expression.
    #[error("restriction `{expr}`: syntax error: {message}")]
    Syntax {
        /// The restriction as written.
        expr: String,
        /// What is wrong.
        message: String,
    },
    /// Python syntax this crate does not evaluate.
    #[error("restriction `{expr}`: `{what}` is not supported: {hint}")]
    Unsupported {
        /// The restriction as written.
        expr: String,
        /// The offending token.
        what: String,
        /// How to rewrite it.
        hint: String,
    },
    /// A call of a function that is not provided.
    #[error("restriction `{expr}`: unknown function `{name}` (available: {available})")]
    UnknownFunction {
        /// The restriction as written.
        expr: String,
        /// The function name.
        name: String,
        /// The functions that exist.
        available: String,
    },
}

// ---------------------------------------------------------------------------------------------
// Python-semantics numbers for evalexpr
// ---------------------------------------------------------------------------------------------

/// evalexpr numeric-type set with Python number semantics (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct PyTypes;

/// evalexpr's integer slot, made impossible to parse so that literals become [`PyNum`]s.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct NoInt(i64);

/// A Python number (int or float), plus the two floor-division helper states.
#[derive(Debug, Clone, Copy)]
pub enum PyNum {
    /// A Python `int` (64-bit; overflow falls back to float).
    I(i64),
    /// A Python `float`.
    F(f64),
    /// The floor-division marker constant.
    Marker,
    /// `x / Marker`: waiting for the divisor of a floor division.
    PendingI(i64),
    /// `x / Marker` for a float `x`.
    PendingF(f64),
}

use PyNum::{Marker, PendingF, PendingI, F, I};

impl PyNum {
    fn num(self) -> Option<f64> {
        match self {
            I(i) => Some(i as f64),
            F(f) => Some(f),
            _ => None,
        }
    }
    fn nan() -> PyNum {
        F(f64::NAN)
    }
    fn to_f64(self) -> f64 {
        self.num().unwrap_or(f64::NAN)
    }
}

fn py_floordiv(a: PyNum, b: PyNum) -> PyNum {
    match (a, b) {
        (I(x), I(y)) => {
            if y == 0 {
                return PyNum::nan();
            }
            match (x.checked_div(y), x.checked_rem(y)) {
                (Some(q), Some(r)) => {
                    if r != 0 && ((r < 0) != (y < 0)) {
                        I(q - 1)
                    } else {
                        I(q)
                    }
                }
                _ => F((x as f64 / y as f64).floor()),
            }
        }
        (x, y) => match (x.num(), y.num()) {
            (Some(x), Some(y)) if y != 0.0 => F((x / y).floor()),
            _ => PyNum::nan(),
        },
    }
}

impl Add for PyNum {
    type Output = PyNum;
    fn add(self, o: PyNum) -> PyNum {
        match (self, o) {
            (I(a), I(b)) => a.checked_add(b).map_or(F(a as f64 + b as f64), I),
            (a, b) => match (a.num(), b.num()) {
                (Some(a), Some(b)) => F(a + b),
                _ => PyNum::nan(),
            },
        }
    }
}
impl Sub for PyNum {
    type Output = PyNum;
    fn sub(self, o: PyNum) -> PyNum {
        match (self, o) {
            (I(a), I(b)) => a.checked_sub(b).map_or(F(a as f64 - b as f64), I),
            (a, b) => match (a.num(), b.num()) {
                (Some(a), Some(b)) => F(a - b),
                _ => PyNum::nan(),
            },
        }
    }
}
impl Mul for PyNum {
    type Output = PyNum;
    fn mul(self, o: PyNum) -> PyNum {
        match (self, o) {
            (I(a), I(b)) => a.checked_mul(b).map_or(F(a as f64 * b as f64), I),
            (a, b) => match (a.num(), b.num()) {
                (Some(a), Some(b)) => F(a * b),
                _ => PyNum::nan(),
            },
        }
    }
}
impl Div for PyNum {
    type Output = PyNum;
    fn div(self, o: PyNum) -> PyNum {
        match (self, o) {
            (I(a), Marker) => PendingI(a),
            (F(a), Marker) => PendingF(a),
            (PendingI(a), b) => py_floordiv(I(a), b),
            (PendingF(a), b) => py_floordiv(F(a), b),
            (a, b) => match (a.num(), b.num()) {
                // Python's `/` is true division even for two ints.
                (Some(a), Some(b)) if b != 0.0 => F(a / b),
                _ => PyNum::nan(),
            },
        }
    }
}
impl Rem for PyNum {
    type Output = PyNum;
    fn rem(self, o: PyNum) -> PyNum {
        match (self, o) {
            (I(a), I(b)) => {
                if b == 0 {
                    PyNum::nan()
                } else {
                    // Python's modulo takes the sign of the divisor.
                    match a.checked_rem(b) {
                        Some(r) if r != 0 && ((r < 0) != (b < 0)) => I(r + b),
                        Some(r) => I(r),
                        None => I(0), // i64::MIN % -1
                    }
                }
            }
            (a, b) => match (a.num(), b.num()) {
                (Some(a), Some(b)) if b != 0.0 => {
                    let r = a % b;
                    if r != 0.0 && ((r < 0.0) != (b < 0.0)) {
                        F(r + b)
                    } else {
                        F(r)
                    }
                }
                _ => PyNum::nan(),
            },
        }
    }
}
impl Neg for PyNum {
    type Output = PyNum;
    fn neg(self) -> PyNum {
        match self {
            I(a) => a.checked_neg().map_or(F(-(a as f64)), I),
            F(a) => F(-a),
            _ => PyNum::nan(),
        }
    }
}
impl PartialEq for PyNum {
    fn eq(&self, o: &PyNum) -> bool {
        match (self, o) {
            (I(a), I(b)) => a == b,
            (a, b) => match (a.num(), b.num()) {
                (Some(a), Some(b)) => a == b,
                _ => false,
            },
        }
    }
}
impl PartialOrd for PyNum {
    fn partial_cmp(&self, o: &PyNum) -> Option<Ordering> {
        match (self, o) {
            (I(a), I(b)) => Some(a.cmp(b)),
            (a, b) => a.num()?.partial_cmp(&b.num()?),
        }
    }
}
impl fmt::Display for PyNum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            I(i) => write!(f, "{i}"),
            F(x) => f.write_str(&python_float_repr(*x)),
            Marker => f.write_str(FLOORDIV_MARKER),
            PendingI(i) => write!(f, "({i} // ?)"),
            PendingF(x) => write!(f, "({} // ?)", python_float_repr(*x)),
        }
    }
}
impl FromStr for PyNum {
    type Err = ();
    fn from_str(s: &str) -> Result<PyNum, ()> {
        // Only literals that start like a number: evalexpr also offers identifiers here, and
        // Rust would happily parse an identifier called `inf` or `nan` as a float.
        if !s.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
            return Err(());
        }
        let s: String = s.chars().filter(|c| *c != '_').collect();
        for (prefix, radix) in [
            ("0x", 16),
            ("0X", 16),
            ("0b", 2),
            ("0B", 2),
            ("0o", 8),
            ("0O", 8),
        ] {
            if let Some(rest) = s.strip_prefix(prefix) {
                return i64::from_str_radix(rest, radix).map(I).map_err(|_| ());
            }
        }
        if let Ok(i) = s.parse::<i64>() {
            return Ok(I(i));
        }
        if s.bytes().all(|b| b.is_ascii_digit()) {
            // An integer literal too large for i64: Python keeps it exact, we approximate.
            return s.parse::<f64>().map(F).map_err(|_| ());
        }
        s.parse::<f64>().map(F).map_err(|_| ())
    }
}

impl fmt::Display for NoInt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}
impl FromStr for NoInt {
    type Err = ();
    fn from_str(_: &str) -> Result<NoInt, ()> {
        Err(())
    }
}

fn int_err<T>(what: &str) -> EvalexprResult<T, PyTypes> {
    Err(EvalexprError::CustomMessage(format!(
        "integer operation `{what}` is not available in restrictions"
    )))
}

impl EvalexprInt<PyTypes> for NoInt {
    const MIN: Self = NoInt(i64::MIN);
    const MAX: Self = NoInt(i64::MAX);
    fn from_usize(int: usize) -> EvalexprResult<Self, PyTypes> {
        i64::try_from(int)
            .map(NoInt)
            .map_err(|_| EvalexprError::CustomMessage("integer too large".into()))
    }
    fn into_usize(&self) -> EvalexprResult<usize, PyTypes> {
        usize::try_from(self.0).map_err(|_| EvalexprError::CustomMessage("negative integer".into()))
    }
    fn from_hex_str(_: &str) -> Result<Self, ()> {
        Err(())
    }
    fn from_binary_str(_: &str) -> Result<Self, ()> {
        Err(())
    }
    fn from_octal_str(_: &str) -> Result<Self, ()> {
        Err(())
    }
    fn checked_add(&self, _: &Self) -> EvalexprResult<Self, PyTypes> {
        int_err("+")
    }
    fn checked_sub(&self, _: &Self) -> EvalexprResult<Self, PyTypes> {
        int_err("-")
    }
    fn checked_neg(&self) -> EvalexprResult<Self, PyTypes> {
        int_err("neg")
    }
    fn checked_mul(&self, _: &Self) -> EvalexprResult<Self, PyTypes> {
        int_err("*")
    }
    fn checked_div(&self, _: &Self) -> EvalexprResult<Self, PyTypes> {
        int_err("/")
    }
    fn checked_rem(&self, _: &Self) -> EvalexprResult<Self, PyTypes> {
        int_err("%")
    }
    fn abs(&self) -> EvalexprResult<Self, PyTypes> {
        int_err("abs")
    }
    fn bitand(&self, o: &Self) -> Self {
        NoInt(self.0 & o.0)
    }
    fn bitor(&self, o: &Self) -> Self {
        NoInt(self.0 | o.0)
    }
    fn bitxor(&self, o: &Self) -> Self {
        NoInt(self.0 ^ o.0)
    }
    fn bitnot(&self) -> Self {
        NoInt(!self.0)
    }
    fn bit_shift_left(&self, o: &Self) -> Self {
        NoInt(self.0.wrapping_shl(o.0 as u32))
    }
    fn bit_shift_right(&self, o: &Self) -> Self {
        NoInt(self.0.wrapping_shr(o.0 as u32))
    }
}

macro_rules! unary_f64 {
    ($($name:ident),*) => {$(
        fn $name(&self) -> Self { F(self.to_f64().$name()) }
    )*};
}

impl EvalexprFloat<PyTypes> for PyNum {
    const MIN: Self = F(f64::NEG_INFINITY);
    const MAX: Self = F(f64::INFINITY);
    fn pow(&self, e: &Self) -> Self {
        match (self, e) {
            (I(b), I(x)) if *x >= 0 => u32::try_from(*x)
                .ok()
                .and_then(|x| b.checked_pow(x))
                .map_or(F((*b as f64).powf(*x as f64)), I),
            (b, x) => F(b.to_f64().powf(x.to_f64())),
        }
    }
    fn log(&self, base: &Self) -> Self {
        F(self.to_f64().log(base.to_f64()))
    }
    fn atan2(&self, x: &Self) -> Self {
        F(self.to_f64().atan2(x.to_f64()))
    }
    fn hypot(&self, o: &Self) -> Self {
        F(self.to_f64().hypot(o.to_f64()))
    }
    unary_f64!(
        ln, log2, log10, exp, exp2, cos, cosh, acos, acosh, sin, sinh, asin, asinh, tan, tanh,
        atan, atanh, sqrt, cbrt, floor, round, ceil
    );
    fn is_nan(&self) -> bool {
        self.to_f64().is_nan()
    }
    fn is_finite(&self) -> bool {
        self.to_f64().is_finite()
    }
    fn is_infinite(&self) -> bool {
        self.to_f64().is_infinite()
    }
    fn is_normal(&self) -> bool {
        self.to_f64().is_normal()
    }
    fn abs(&self) -> Self {
        match self {
            I(i) => i.checked_abs().map_or(F((*i as f64).abs()), I),
            other => F(other.to_f64().abs()),
        }
    }
    fn min(&self, o: &Self) -> Self {
        if o < self {
            *o
        } else {
            *self
        }
    }
    fn max(&self, o: &Self) -> Self {
        if o > self {
            *o
        } else {
            *self
        }
    }
    fn random() -> EvalexprResult<Self, PyTypes> {
        Err(EvalexprError::RandNotEnabled)
    }
}

impl EvalexprNumericTypes for PyTypes {
    type Int = NoInt;
    type Float = PyNum;
    fn int_as_float(int: &NoInt) -> PyNum {
        I(int.0)
    }
    fn float_as_int(float: &PyNum) -> NoInt {
        NoInt(float.to_f64() as i64)
    }
}

/// A value as evalexpr sees it in a restriction.
pub(crate) type PyValue = EValue<PyTypes>;

/// Converts a parameter value for use in restriction evaluation.
pub(crate) fn to_py_value(v: &Value) -> PyValue {
    match v {
        Value::Int(i) => EValue::Float(I(*i)),
        Value::Float(f) => EValue::Float(F(*f)),
        Value::Str(s) => EValue::String(s.clone()),
        Value::Bool(b) => EValue::Boolean(*b),
    }
}

fn float_to_int(x: f64) -> PyNum {
    if x.is_finite() && x.abs() < 9.0e18 {
        I(x as i64)
    } else {
        F(x)
    }
}

fn round_half_even(x: f64) -> f64 {
    let r = x.round();
    if (x - x.trunc()).abs() == 0.5 {
        2.0 * (x / 2.0).round()
    } else {
        r
    }
}

fn number_arg(name: &str, v: &PyValue) -> EvalexprResult<PyNum, PyTypes> {
    match v {
        EValue::Float(n) if n.num().is_some() => Ok(*n),
        EValue::Boolean(b) => Ok(I(i64::from(*b))),
        other => Err(EvalexprError::CustomMessage(format!(
            "{name}() expects a number, got {other}"
        ))),
    }
}

fn call_py_function(name: &str, arg: &PyValue) -> EvalexprResult<PyValue, PyTypes> {
    let args: Vec<&PyValue> = match arg {
        EValue::Tuple(items) => items.iter().collect(),
        EValue::Empty => Vec::new(),
        single => vec![single],
    };
    let one = |args: &[&PyValue]| -> EvalexprResult<PyNum, PyTypes> {
        match args {
            [a] => number_arg(name, a),
            _ => Err(EvalexprError::CustomMessage(format!(
                "{name}() takes one argument"
            ))),
        }
    };
    let n =
        match name {
            "int" => match args.as_slice() {
                [EValue::String(s)] => s.trim().parse::<i64>().map(I).map_err(|_| {
                    EvalexprError::CustomMessage(format!("int() cannot parse {s:?}"))
                })?,
                _ => match one(&args)? {
                    I(i) => I(i),
                    other => float_to_int(other.to_f64().trunc()),
                },
            },
            "float" => match args.as_slice() {
                [EValue::String(s)] => F(s.trim().parse::<f64>().map_err(|_| {
                    EvalexprError::CustomMessage(format!("float() cannot parse {s:?}"))
                })?),
                _ => F(one(&args)?.to_f64()),
            },
            "abs" => EvalexprFloat::abs(&one(&args)?),
            "floor" => match one(&args)? {
                I(i) => I(i),
                other => float_to_int(other.to_f64().floor()),
            },
            "ceil" => match one(&args)? {
                I(i) => I(i),
                other => float_to_int(other.to_f64().ceil()),
            },
            "log2" => F(one(&args)?.to_f64().log2()),
            "sqrt" => F(one(&args)?.to_f64().sqrt()),
            "round" => match args.as_slice() {
                [a] => match number_arg(name, a)? {
                    I(i) => I(i),
                    other => float_to_int(round_half_even(other.to_f64())),
                },
                [a, d] => {
                    let x = number_arg(name, a)?.to_f64();
                    let d = number_arg(name, d)?.to_f64() as i32;
                    let s = 10f64.powi(d);
                    F(round_half_even(x * s) / s)
                }
                _ => {
                    return Err(EvalexprError::CustomMessage(
                        "round() takes one or two arguments".into(),
                    ))
                }
            },
            "min" | "max" => {
                if args.is_empty() {
                    return Err(EvalexprError::CustomMessage(format!(
                        "{name}() needs arguments"
                    )));
                }
                let mut best = number_arg(name, args[0])?;
                for a in &args[1..] {
                    let v = number_arg(name, a)?;
                    let better = if name == "min" { v < best } else { v > best };
                    if better {
                        best = v;
                    }
                }
                best
            }
            _ => return Err(EvalexprError::FunctionIdentifierNotFound(name.to_string())),
        };
    Ok(EValue::Float(n))
}

/// Variable lookup for one (possibly partial) assignment of parameter values.
pub(crate) struct EvalContext<'a> {
    pub names: &'a [String],
    pub values: &'a [Vec<PyValue>],
    pub bound: &'a [Option<usize>],
    pub marker: &'a PyValue,
}

impl Context for EvalContext<'_> {
    type NumericTypes = PyTypes;

    fn get_value(&self, identifier: &str) -> Option<&PyValue> {
        if identifier == FLOORDIV_MARKER {
            return Some(self.marker);
        }
        let p = self.names.iter().position(|n| n == identifier)?;
        let vi = (*self.bound.get(p)?)?;
        self.values.get(p)?.get(vi)
    }

    fn call_function(
        &self,
        identifier: &str,
        argument: &PyValue,
    ) -> EvalexprResult<PyValue, PyTypes> {
        call_py_function(identifier, argument)
    }

    fn are_builtin_functions_disabled(&self) -> bool {
        true
    }

    fn set_builtin_functions_disabled(&mut self, disabled: bool) -> EvalexprResult<(), PyTypes> {
        if disabled {
            Ok(())
        } else {
            Err(EvalexprError::CustomMessage(
                "evalexpr builtins are disabled in restrictions".into(),
            ))
        }
    }
}

/// The marker value bound to [`FLOORDIV_MARKER`].
pub(crate) fn marker_value() -> PyValue {
    EValue::Float(Marker)
}

// ---------------------------------------------------------------------------------------------
// Python -> evalexpr token translation
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(String),
    Ident(String),
    Bool(bool),
    Str(String),
    Arith(&'static str),
    Cmp(&'static str),
    And,
    Or,
    Not,
    LParen,
    RParen,
    Comma,
}

#[derive(Debug, Clone)]
enum Item {
    Tok(Tok),
    Group(Vec<Item>),
}

fn unsupported(expr: &str, what: &str, hint: &str) -> ExprError {
    ExprError::Unsupported {
        expr: expr.to_string(),
        what: what.to_string(),
        hint: hint.to_string(),
    }
}

fn syntax(expr: &str, message: impl Into<String>) -> ExprError {
    ExprError::Syntax {
        expr: expr.to_string(),
        message: message.into(),
    }
}

fn lex(src: &str) -> Result<Vec<Tok>, ExprError> {
    let chars: Vec<char> = src.chars().collect();
    let mut toks = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() || (c == '.' && next.is_some_and(|n| n.is_ascii_digit())) {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == '.')
            {
                // exponent sign: 1e-5, 2.5E+3 (not in hex literals)
                let is_hex = chars[start..i].starts_with(&['0', 'x'])
                    || chars[start..i].starts_with(&['0', 'X']);
                if (chars[i] == 'e' || chars[i] == 'E')
                    && !is_hex
                    && matches!(chars.get(i + 1), Some('+') | Some('-'))
                    && chars.get(i + 2).is_some_and(|d| d.is_ascii_digit())
                {
                    i += 2;
                }
                i += 1;
            }
            let lit: String = chars[start..i].iter().filter(|c| **c != '_').collect();
            if lit.parse::<PyNum>().is_err() {
                return Err(syntax(src, format!("bad number `{lit}`")));
            }
            toks.push(Tok::Num(lit));
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '.')
            {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let tok = match word.as_str() {
                "and" => Tok::And,
                "or" => Tok::Or,
                "not" => Tok::Not,
                "True" | "true" => Tok::Bool(true),
                "False" | "false" => Tok::Bool(false),
                "in" => return Err(unsupported(src, "in", "write `x == a or x == b`")),
                "is" => return Err(unsupported(src, "is", "use `==`")),
                "if" | "else" => {
                    return Err(unsupported(
                        src,
                        &word,
                        "split the condition into `or`/`and` terms",
                    ))
                }
                "None" | "lambda" | "for" => {
                    return Err(unsupported(src, &word, "use a closure restriction instead"))
                }
                w => {
                    let w = w.strip_prefix("math.").unwrap_or(w);
                    if w.contains('.') {
                        return Err(unsupported(src, w, "attribute access is not available"));
                    }
                    Tok::Ident(w.to_string())
                }
            };
            toks.push(tok);
        } else if c == '"' || c == '\'' {
            let quote = c;
            i += 1;
            let mut s = String::new();
            loop {
                let Some(&ch) = chars.get(i) else {
                    return Err(syntax(src, "unterminated string"));
                };
                i += 1;
                if ch == quote {
                    break;
                }
                if ch == '\\' {
                    let Some(&e) = chars.get(i) else {
                        return Err(syntax(src, "unterminated string"));
                    };
                    i += 1;
                    s.push(match e {
                        'n' => '\n',
                        't' => '\t',
                        other => other,
                    });
                } else {
                    s.push(ch);
                }
            }
            toks.push(Tok::Str(s));
        } else {
            let two: String = chars[i..chars.len().min(i + 2)].iter().collect();
            let (tok, len) = match two.as_str() {
                "**" => (Tok::Arith("**"), 2),
                "//" => (Tok::Arith("//"), 2),
                "==" => (Tok::Cmp("=="), 2),
                "!=" => (Tok::Cmp("!="), 2),
                "<=" => (Tok::Cmp("<="), 2),
                ">=" => (Tok::Cmp(">="), 2),
                "&&" => (Tok::And, 2),
                "||" => (Tok::Or, 2),
                "<<" | ">>" => {
                    return Err(unsupported(
                        src,
                        &two,
                        "bit shifts are not available; use `*` or `//` by a power of two",
                    ))
                }
                _ => match c {
                    '+' => (Tok::Arith("+"), 1),
                    '-' => (Tok::Arith("-"), 1),
                    '*' => (Tok::Arith("*"), 1),
                    '/' => (Tok::Arith("/"), 1),
                    '%' => (Tok::Arith("%"), 1),
                    '<' => (Tok::Cmp("<"), 1),
                    '>' => (Tok::Cmp(">"), 1),
                    '(' => (Tok::LParen, 1),
                    ')' => (Tok::RParen, 1),
                    ',' => (Tok::Comma, 1),
                    '!' => (Tok::Not, 1),
                    '=' => return Err(unsupported(src, "=", "compare with `==`")),
                    '^' => {
                        return Err(unsupported(
                            src,
                            "^",
                            "Python's `^` is XOR; write powers as `**`",
                        ))
                    }
                    '&' | '|' | '~' => {
                        return Err(unsupported(
                            src,
                            &c.to_string(),
                            "bitwise operators are not available; use `and`/`or`/`not`",
                        ))
                    }
                    other => return Err(syntax(src, format!("unexpected character `{other}`"))),
                },
            };
            toks.push(tok);
            i += len;
        }
    }
    Ok(toks)
}

fn group(src: &str, toks: Vec<Tok>) -> Result<Vec<Item>, ExprError> {
    let mut stack: Vec<Vec<Item>> = vec![Vec::new()];
    for t in toks {
        match t {
            Tok::LParen => stack.push(Vec::new()),
            Tok::RParen => {
                let inner = stack.pop().unwrap_or_default();
                match stack.last_mut() {
                    Some(outer) => outer.push(Item::Group(inner)),
                    None => return Err(syntax(src, "unbalanced `)`")),
                }
            }
            other => match stack.last_mut() {
                Some(top) => top.push(Item::Tok(other)),
                None => return Err(syntax(src, "unbalanced `)`")),
            },
        }
    }
    if stack.len() != 1 {
        return Err(syntax(src, "unbalanced `(`"));
    }
    Ok(stack.pop().unwrap_or_default())
}

fn split_by(items: &[Item], pred: impl Fn(&Tok) -> bool) -> Vec<(&[Item], Option<&Tok>)> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, it) in items.iter().enumerate() {
        if let Item::Tok(t) = it {
            if pred(t) {
                out.push((&items[start..i], Some(t)));
                start = i + 1;
            }
        }
    }
    out.push((&items[start..], None));
    out
}

fn emit_seq(src: &str, items: &[Item]) -> Result<String, ExprError> {
    let mut parts = Vec::new();
    for (segment, sep) in split_by(items, |t| *t == Tok::Comma) {
        parts.push(emit_bool(src, segment)?);
        if sep.is_some() {
            parts.push(",".to_string());
        }
    }
    Ok(parts.join(" "))
}

fn emit_bool(src: &str, items: &[Item]) -> Result<String, ExprError> {
    let mut out = Vec::new();
    for (term, sep) in split_by(items, |t| matches!(t, Tok::And | Tok::Or)) {
        let nots = term
            .iter()
            .take_while(|it| matches!(it, Item::Tok(Tok::Not)))
            .count();
        let rest = &term[nots..];
        if rest.is_empty() {
            return Err(syntax(src, "missing operand"));
        }
        let mut s = "!(".repeat(nots);
        s.push_str(&emit_comparison(src, rest)?);
        s.push_str(&")".repeat(nots));
        out.push(s);
        match sep {
            Some(Tok::And) => out.push("&&".into()),
            Some(Tok::Or) => out.push("||".into()),
            _ => {}
        }
    }
    Ok(out.join(" "))
}

fn emit_comparison(src: &str, items: &[Item]) -> Result<String, ExprError> {
    let pieces = split_by(items, |t| matches!(t, Tok::Cmp(_)));
    let mut operands = Vec::new();
    let mut ops = Vec::new();
    for (operand, sep) in &pieces {
        if operand.is_empty() {
            return Err(syntax(src, "missing operand of a comparison"));
        }
        operands.push(emit_arith(src, operand)?);
        if let Some(Tok::Cmp(op)) = sep {
            ops.push(*op);
        }
    }
    if ops.len() <= 1 {
        let mut s = operands[0].clone();
        if let Some(op) = ops.first() {
            s = format!("{s} {op} {}", operands[1]);
        }
        return Ok(s);
    }
    // Python: a < b <= c  means  (a < b) and (b <= c)
    let links: Vec<String> = ops
        .iter()
        .enumerate()
        .map(|(i, op)| format!("({} {op} {})", operands[i], operands[i + 1]))
        .collect();
    Ok(format!("({})", links.join(" && ")))
}

fn emit_arith(src: &str, items: &[Item]) -> Result<String, ExprError> {
    let mut out: Vec<String> = Vec::new();
    // The last binary operator seen, to reject `a ** b ** c` (right-associative in Python,
    // left-associative in evalexpr).
    let mut last_op: Option<&str> = None;
    let mut prev_was_operand = false;
    for it in items {
        match it {
            Item::Group(inner) => {
                if inner.is_empty() && !matches!(out.last(), Some(s) if is_ident(s)) {
                    return Err(syntax(src, "empty parentheses"));
                }
                out.push(format!("({})", emit_seq(src, inner)?));
                prev_was_operand = true;
            }
            Item::Tok(t) => match t {
                Tok::Num(n) => {
                    out.push(n.clone());
                    prev_was_operand = true;
                }
                Tok::Ident(n) => {
                    out.push(n.clone());
                    prev_was_operand = true;
                }
                Tok::Bool(b) => {
                    out.push(b.to_string());
                    prev_was_operand = true;
                }
                Tok::Str(s) => {
                    out.push(serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into()));
                    prev_was_operand = true;
                }
                Tok::Arith(op) => {
                    let unary = !prev_was_operand && (*op == "-" || *op == "+");
                    if !unary {
                        if *op == "**" && last_op == Some("**") {
                            return Err(unsupported(
                                src,
                                "a ** b ** c",
                                "parenthesise chained powers, e.g. `a ** (b ** c)`",
                            ));
                        }
                        last_op = Some(op);
                    }
                    out.push(match *op {
                        "**" => "^".to_string(),
                        "//" => format!("/ {FLOORDIV_MARKER} /"),
                        "+" if unary => String::new(), // unary plus is a no-op
                        other => other.to_string(),
                    });
                    prev_was_operand = false;
                }
                Tok::Not => return Err(syntax(src, "`not` must start an operand of `and`/`or`")),
                Tok::Cmp(_) | Tok::And | Tok::Or | Tok::Comma | Tok::LParen | Tok::RParen => {
                    return Err(syntax(src, "unexpected operator"))
                }
            },
        }
    }
    Ok(out
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" "))
}

fn is_ident(s: &str) -> bool {
    s.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// Translates a Python (Kernel Tuner) restriction into evalexpr syntax; see the module docs.
pub fn translate_python(src: &str) -> Result<String, ExprError> {
    let toks = lex(src)?;
    if toks.is_empty() {
        return Err(syntax(src, "empty expression"));
    }
    let items = group(src, toks)?;
    emit_seq(src, &items)
}

/// A compiled restriction expression.
#[derive(Debug, Clone)]
pub struct Expr {
    source: String,
    translated: String,
    node: Node<PyTypes>,
    variables: Vec<String>,
}

impl Expr {
    /// Translates and parses `src`. Does not check variable names (the search space does).
    pub fn parse(src: &str) -> Result<Expr, ExprError> {
        let translated = translate_python(src)?;
        let node = evalexpr::build_operator_tree::<PyTypes>(&translated)
            .map_err(|e| syntax(src, e.to_string()))?;
        for f in node.iter_function_identifiers() {
            if !FUNCTIONS.contains(&f) {
                return Err(ExprError::UnknownFunction {
                    expr: src.to_string(),
                    name: f.to_string(),
                    available: FUNCTIONS.join(", "),
                });
            }
        }
        let mut variables: Vec<String> = Vec::new();
        for v in node.iter_variable_identifiers() {
            if v != FLOORDIV_MARKER && !variables.iter().any(|x| x == v) {
                variables.push(v.to_string());
            }
        }
        Ok(Expr {
            source: src.to_string(),
            translated,
            node,
            variables,
        })
    }

    /// The restriction as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The evalexpr text actually evaluated (useful when a restriction surprises you).
    pub fn translated(&self) -> &str {
        &self.translated
    }

    /// The parameter names the expression reads, in order of first appearance.
    pub fn variables(&self) -> &[String] {
        &self.variables
    }

    /// Evaluates with Python truthiness; `Err` carries evalexpr's message.
    pub(crate) fn eval(&self, ctx: &EvalContext<'_>) -> Result<bool, String> {
        match self.node.eval_with_context(ctx) {
            Ok(EValue::Boolean(b)) => Ok(b),
            Ok(EValue::Float(n)) => Ok(n.num().is_some_and(|x| x != 0.0)),
            Ok(EValue::String(s)) => Ok(!s.is_empty()),
            Ok(other) => Err(format!("restriction evaluated to {other}, not a boolean")),
            Err(e) => Err(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval_with(src: &str, vars: &[(&str, Value)]) -> Result<bool, String> {
        let e = Expr::parse(src).map_err(|e| e.to_string())?;
        let names: Vec<String> = vars.iter().map(|(n, _)| n.to_string()).collect();
        let values: Vec<Vec<PyValue>> = vars.iter().map(|(_, v)| vec![to_py_value(v)]).collect();
        let bound = vec![Some(0); vars.len()];
        let marker = marker_value();
        let ctx = EvalContext {
            names: &names,
            values: &values,
            bound: &bound,
            marker: &marker,
        };
        e.eval(&ctx)
    }

    fn t(src: &str, vars: &[(&str, i64)]) -> bool {
        let vars: Vec<(&str, Value)> = vars.iter().map(|(n, v)| (*n, Value::Int(*v))).collect();
        eval_with(src, &vars).unwrap_or_else(|e| panic!("{src}: {e}"))
    }

    #[test]
    fn kernel_tuner_style_restrictions() {
        assert!(t(
            "block_size_x*block_size_y<=1024",
            &[("block_size_x", 32), ("block_size_y", 32)]
        ));
        assert!(!t(
            "block_size_x*block_size_y<=1024",
            &[("block_size_x", 64), ("block_size_y", 32)]
        ));
        assert!(t("tile % 4 == 0", &[("tile", 8)]));
        assert!(!t("tile % 4 == 0", &[("tile", 6)]));
        assert!(t(
            "BM*BK + BK*BN <= 8192",
            &[("BM", 64), ("BN", 64), ("BK", 64)]
        ));
        assert!(!t(
            "BM*BK + BK*BN <= 8192",
            &[("BM", 128), ("BN", 64), ("BK", 64)]
        ));
    }

    #[test]
    fn python_division_semantics() {
        // `/` is true division: 65/32 = 2.03 > 2
        assert!(!t("x / 32 <= 2", &[("x", 65)]));
        assert!(t("x / 2 == 2.5", &[("x", 5)]));
        assert!(t("x / 2 == 2", &[("x", 4)])); // 2.0 == 2
                                               // `//` is floor division, also with negative operands
        assert!(t("x // 32 == 2", &[("x", 65)]));
        assert!(t("-7 // 2 == -4", &[]));
        assert!(t("7.5 // 2 == 3", &[]));
        // precedence: same level as * and %, left-associative
        assert!(t("a * b // c == 3", &[("a", 3), ("b", 3), ("c", 3)]));
        assert!(t("a + b // c == 4", &[("a", 1), ("b", 9), ("c", 3)]));
        assert!(t("100 // 10 // 3 == 3", &[]));
        assert!(t("10 // 3 * 3 == 9", &[]));
        assert!(t("17 % 5 // 2 == 1", &[]));
        assert!(t("-x // 4 == -2", &[("x", 5)]));
        // Python modulo takes the divisor's sign
        assert!(t("-1 % 4 == 3", &[]));
        // division by zero: restriction false, not a crash
        assert!(!t("x / 0 > 0", &[("x", 1)]));
        assert!(!t("x % 0 == 0", &[("x", 1)]));
    }

    #[test]
    fn boolean_keywords_and_chains() {
        assert!(t("a > 1 and b > 1", &[("a", 2), ("b", 2)]));
        assert!(t("a > 5 or b > 1", &[("a", 2), ("b", 2)]));
        assert!(t("not a == b", &[("a", 1), ("b", 2)]));
        assert!(!t("not a == b and a > 0", &[("a", 1), ("b", 1)]));
        assert!(t("not not a == 1", &[("a", 1)]));
        assert!(t("32 <= x * y <= 1024", &[("x", 16), ("y", 16)]));
        assert!(!t("32 <= x * y <= 1024", &[("x", 64), ("y", 32)]));
        assert!(t("1 < x < 3 < y", &[("x", 2), ("y", 4)]));
        assert!(t("a > 1 && !(b > 5) || False", &[("a", 2), ("b", 2)]));
        assert!(t("True", &[]));
    }

    #[test]
    fn powers_functions_strings() {
        assert!(t("2 ** x == 8", &[("x", 3)]));
        assert!(t("-2 ** 2 == -4", &[]));
        assert!(t("2 ** -1 == 0.5", &[]));
        assert!(t(
            "min(a, b) == 2 and max(a, b, 7) == 7",
            &[("a", 2), ("b", 5)]
        ));
        assert!(t("int(x / 3) == 2 and abs(-x) == x", &[("x", 7)]));
        assert!(t("round(2.5) == 2 and round(3.5) == 4", &[]));
        assert!(t(
            "math.floor(x / 2) == 3 and ceil(x / 2) == 4 and log2(x + 1) == 3",
            &[("x", 7)]
        ));
        assert!(t("x % 2", &[("x", 3)])); // truthiness of a number
        let vars = [("layout", Value::from("row")), ("vec", Value::Bool(true))];
        assert_eq!(eval_with("layout == 'row' and vec", &vars), Ok(true));
        assert_eq!(eval_with("layout != \"row\" or not vec", &vars), Ok(false));
        let f = [("ratio", Value::Float(0.5))];
        assert_eq!(eval_with("ratio * 4 == 2", &f), Ok(true));
    }

    #[test]
    fn rejects_unsupported_python() {
        for bad in [
            "x in [1, 2]",
            "x = 3",
            "x ^ 2 == 1",
            "x & 1",
            "a ** b ** c",
            "x if y else z",
            "x is None",
            "x << 2 > 1",
        ] {
            assert!(
                matches!(Expr::parse(bad), Err(ExprError::Unsupported { .. })),
                "{bad}: {:?}",
                Expr::parse(bad)
            );
        }
        assert!(matches!(
            Expr::parse("(x > 1"),
            Err(ExprError::Syntax { .. })
        ));
        assert!(matches!(Expr::parse("x > "), Err(ExprError::Syntax { .. })));
        assert!(matches!(Expr::parse(""), Err(ExprError::Syntax { .. })));
        assert!(matches!(
            Expr::parse("foo(x) > 1"),
            Err(ExprError::UnknownFunction { .. })
        ));
    }

    #[test]
    fn reports_variables() {
        let e = Expr::parse("a * b // c <= a + max(d, 2)").unwrap();
        assert_eq!(e.variables(), ["a", "b", "c", "d"]);
        assert!(e.translated().contains(FLOORDIV_MARKER));
    }
}
