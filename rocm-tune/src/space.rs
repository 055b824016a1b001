//! Search spaces: parameters with discrete value lists, restrictions, and the enumerated set of
//! valid configurations.
//!
//! A configuration is stored as its *rank*: the mixed-radix number whose digits are the value
//! indices of each parameter in declaration order (first parameter most significant). The
//! valid ranks are kept sorted, which gives three things at 8 bytes per configuration:
//! enumeration order equal to Kernel Tuner's (`itertools.product` order), O(log n) lookup of
//! any value combination (for neighbours, crossovers and cache resumption), and a dense
//! [`ConfigId`] (the position in the sorted list) for strategies to use as an index.
//!
//! Enumeration is a depth-first walk over the parameters that checks every restriction as
//! soon as all the parameters it reads are bound, so whole subtrees are pruned; parameters that
//! appear in restrictions are placed first in the walk, and each restriction's verdicts are
//! memoised per combination of the values it reads (a restriction over two parameters is
//! evaluated at most `|A|·|B|` times however large the space).

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

// Restriction expressions need the engine (evalexpr); closures do not.
#[cfg(feature = "engine")]
use crate::expr::{marker_value, to_py_value, EvalContext, Expr, ExprError, PyValue};
use crate::value::Value;

/// Index of a valid configuration in a [`SearchSpace`] (0-based, in enumeration order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConfigId(pub(crate) usize);

impl ConfigId {
    /// The position in the space's list of valid configurations.
    pub fn index(self) -> usize {
        self.0
    }
}

impl fmt::Display for ConfigId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// Errors when building a search space.
#[derive(Debug, thiserror::Error)]
pub enum SpaceError {
    /// No parameter was declared.
    #[error("the search space has no parameters")]
    NoParameters,
    /// A parameter was declared with no values.
    #[error("parameter `{param}` has no values")]
    EmptyValues {
        /// The parameter.
        param: String,
    },
    /// Two parameters share a name.
    #[error("parameter `{param}` is declared twice")]
    DuplicateParameter {
        /// The parameter.
        param: String,
    },
    /// A value appears twice in a parameter's list (it would make two identical configurations).
    #[error("parameter `{param}` lists the value {value} twice")]
    DuplicateValue {
        /// The parameter.
        param: String,
        /// The repeated value.
        value: String,
    },
    /// A restriction expression could not be parsed.
    #[cfg(feature = "engine")]
    #[error(transparent)]
    Expr(#[from] ExprError),
    /// A restriction names a parameter that does not exist (usually a typo).
    #[error("restriction `{restriction}` names unknown parameter `{name}` (parameters: {known})")]
    UnknownParameter {
        /// The restriction.
        restriction: String,
        /// The unknown name.
        name: String,
        /// The declared parameters.
        known: String,
    },
    /// A restriction failed to evaluate (e.g. a type error such as `"row" * 2`).
    #[error("restriction `{restriction}` failed to evaluate for {assignment}: {message}")]
    RestrictionEval {
        /// The restriction.
        restriction: String,
        /// The values it was evaluated for.
        assignment: String,
        /// evalexpr's message.
        message: String,
    },
    /// No configuration satisfies all restrictions.
    #[error("the search space is empty: none of the {raw_size} combinations satisfies every restriction ({rejections})")]
    Empty {
        /// Number of raw combinations.
        raw_size: u64,
        /// For each restriction, how many (partial) configurations it rejected.
        rejections: String,
    },
    /// The space is too large to enumerate.
    #[error("the search space is too large: {what}")]
    TooLarge {
        /// Which limit was hit.
        what: String,
    },
    /// A configuration given to [`SearchSpace::from_configs`] does not fit the parameters.
    #[error("configuration {index} does not fit the parameters: {message}")]
    BadConfig {
        /// Position in the input.
        index: usize,
        /// What is wrong.
        message: String,
    },
}

/// A read-only view of a (possibly partial) assignment of values, given to closure
/// restrictions. Parameters not bound yet read as `None`; a closure restriction declares the
/// parameters it reads so that it is only called once they are all bound.
pub struct Assignment<'a> {
    names: &'a [String],
    values: &'a [Vec<Value>],
    bound: &'a [Option<usize>],
}

impl Assignment<'_> {
    /// The value of `name`, if bound.
    pub fn get(&self, name: &str) -> Option<&Value> {
        let p = self.names.iter().position(|n| n == name)?;
        let vi = (*self.bound.get(p)?)?;
        self.values.get(p)?.get(vi)
    }
    /// The value of `name` as an integer.
    pub fn int(&self, name: &str) -> Option<i64> {
        self.get(name)?.as_i64()
    }
    /// The value of `name` as a float (integers convert).
    pub fn float(&self, name: &str) -> Option<f64> {
        self.get(name)?.as_f64()
    }
    /// The value of `name` as a string.
    pub fn str(&self, name: &str) -> Option<&str> {
        self.get(name)?.as_str()
    }
    /// The value of `name` as a boolean.
    pub fn bool(&self, name: &str) -> Option<bool> {
        self.get(name)?.as_bool()
    }
}

type ClosureFn = Box<dyn Fn(&Assignment<'_>) -> bool>;

enum PendingRestriction {
    #[cfg(feature = "engine")]
    Expr(String),
    Closure {
        label: String,
        vars: Option<Vec<String>>,
        f: ClosureFn,
    },
}

/// Builds a [`SearchSpace`]; all checking happens in [`SpaceBuilder::build`].
pub struct SpaceBuilder {
    params: Vec<(String, Vec<Value>)>,
    restrictions: Vec<PendingRestriction>,
    max_configs: usize,
}

/// Default cap on the number of valid configurations (8 bytes each).
pub const DEFAULT_MAX_CONFIGS: usize = 50_000_000;

/// Restrictions over at most this many value combinations get a verdict memo table.
const MEMO_LIMIT: u64 = 1 << 22;

impl Default for SpaceBuilder {
    fn default() -> Self {
        SpaceBuilder {
            params: Vec::new(),
            restrictions: Vec::new(),
            max_configs: DEFAULT_MAX_CONFIGS,
        }
    }
}

impl SpaceBuilder {
    /// Declares a parameter. The order of declaration fixes the enumeration order and the
    /// Kernel Tuner key order (`tune_params_keys`).
    pub fn param<I, V>(mut self, name: impl Into<String>, values: I) -> Self
    where
        I: IntoIterator<Item = V>,
        V: Into<Value>,
    {
        self.params
            .push((name.into(), values.into_iter().map(Into::into).collect()));
        self
    }

    /// Adds a restriction in Kernel Tuner's (Python) syntax, e.g. `"BM*BK + BK*BN <= 8192"`.
    /// See [`crate::expr`] for what is supported (the `engine` feature).
    #[cfg(feature = "engine")]
    pub fn restrict(mut self, expr: impl Into<String>) -> Self {
        self.restrictions
            .push(PendingRestriction::Expr(expr.into()));
        self
    }

    /// Adds a closure restriction that reads only `vars`; it is checked as soon as those are
    /// bound, which prunes early. `label` names it in error messages.
    pub fn restrict_fn(
        mut self,
        label: impl Into<String>,
        vars: &[&str],
        f: impl Fn(&Assignment<'_>) -> bool + 'static,
    ) -> Self {
        self.restrictions.push(PendingRestriction::Closure {
            label: label.into(),
            vars: Some(vars.iter().map(|s| s.to_string()).collect()),
            f: Box::new(f),
        });
        self
    }

    /// Adds a closure restriction over the whole configuration (checked only at full
    /// assignments, so it cannot prune early; prefer [`SpaceBuilder::restrict_fn`]).
    pub fn restrict_config(
        mut self,
        label: impl Into<String>,
        f: impl Fn(&Assignment<'_>) -> bool + 'static,
    ) -> Self {
        self.restrictions.push(PendingRestriction::Closure {
            label: label.into(),
            vars: None,
            f: Box::new(f),
        });
        self
    }

    /// Caps the number of valid configurations (default [`DEFAULT_MAX_CONFIGS`]).
    pub fn max_configs(mut self, n: usize) -> Self {
        self.max_configs = n;
        self
    }

    /// Validates, compiles the restrictions and enumerates the valid configurations.
    pub fn build(self) -> Result<SearchSpace, SpaceError> {
        let (names, values) = validate_params(self.params)?;
        let radix = radix_of(&values)?;
        let raw_size = raw_size_of(&values)?;
        let n = names.len();

        // Compile restrictions.
        let mut compiled: Vec<Compiled> = Vec::new();
        for r in self.restrictions {
            let (label, vars, kind) = match r {
                #[cfg(feature = "engine")]
                PendingRestriction::Expr(src) => {
                    let e = Expr::parse(&src)?;
                    let vars = e.variables().to_vec();
                    (src, vars, Kind::Expr(Box::new(e)))
                }
                PendingRestriction::Closure { label, vars, f } => {
                    let vars = vars.unwrap_or_else(|| names.clone());
                    (label, vars, Kind::Closure(f))
                }
            };
            let mut idx = Vec::new();
            for v in &vars {
                match names.iter().position(|n| n == v) {
                    Some(p) => {
                        if !idx.contains(&p) {
                            idx.push(p)
                        }
                    }
                    None => {
                        return Err(SpaceError::UnknownParameter {
                            restriction: label,
                            name: v.clone(),
                            known: names.join(", "),
                        })
                    }
                }
            }
            idx.sort_unstable();
            let memo_size: u64 = idx
                .iter()
                .try_fold(1u64, |acc, &p| acc.checked_mul(values[p].len() as u64))
                .unwrap_or(u64::MAX);
            let memo = if memo_size <= MEMO_LIMIT {
                Some(vec![0u8; memo_size as usize])
            } else {
                None
            };
            compiled.push(Compiled {
                label,
                vars: idx,
                kind,
                memo,
                rejections: 0,
            });
        }

        // Walk order: parameters of small restrictions first, unrestricted ones last.
        let mut order: Vec<usize> = Vec::new();
        let mut by_size: Vec<usize> = (0..compiled.len()).collect();
        by_size.sort_by_key(|&r| compiled[r].vars.len());
        for r in by_size {
            for &p in &compiled[r].vars {
                if !order.contains(&p) {
                    order.push(p);
                }
            }
        }
        for p in 0..n {
            if !order.contains(&p) {
                order.push(p);
            }
        }
        let pos_of: Vec<usize> = {
            let mut v = vec![0; n];
            for (pos, &p) in order.iter().enumerate() {
                v[p] = pos;
            }
            v
        };
        // checks_at[d]: restrictions whose last variable is bound at depth d;
        // restrictions with no variables are constant and checked before the walk.
        let mut checks_at: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut constant = Vec::new();
        for (r, c) in compiled.iter().enumerate() {
            match c.vars.iter().map(|&p| pos_of[p]).max() {
                Some(d) => checks_at[d].push(r),
                None => constant.push(r),
            }
        }

        #[cfg(feature = "engine")]
        let py_values: Vec<Vec<PyValue>> = values
            .iter()
            .map(|vs| vs.iter().map(to_py_value).collect())
            .collect();
        let mut walk = Walk {
            names: &names,
            values: &values,
            #[cfg(feature = "engine")]
            py_values: &py_values,
            #[cfg(feature = "engine")]
            marker: marker_value(),
            radix: &radix,
            order: &order,
            checks_at: &checks_at,
            compiled,
            bound: vec![None; n],
            ranks: Vec::new(),
            max_configs: self.max_configs,
        };
        let mut constant_ok = true;
        for r in constant {
            if !walk.check(r)? {
                constant_ok = false;
            }
        }
        if constant_ok {
            walk.dfs(0)?;
        }
        let mut ranks = std::mem::take(&mut walk.ranks);
        if ranks.is_empty() {
            let rejections = walk
                .compiled
                .iter()
                .map(|c| format!("`{}` rejected {}", c.label, c.rejections))
                .collect::<Vec<_>>()
                .join("; ");
            return Err(SpaceError::Empty {
                raw_size,
                rejections,
            });
        }
        ranks.sort_unstable();
        let restrictions = walk.compiled.iter().map(|c| c.label.clone()).collect();
        Ok(SearchSpace {
            names: names.into(),
            values,
            radix,
            ranks,
            raw_size,
            restrictions,
        })
    }
}

fn validate_params(
    params: Vec<(String, Vec<Value>)>,
) -> Result<(Vec<String>, Vec<Vec<Value>>), SpaceError> {
    if params.is_empty() {
        return Err(SpaceError::NoParameters);
    }
    let mut names: Vec<String> = Vec::new();
    let mut values = Vec::new();
    for (name, vs) in params {
        if names.contains(&name) {
            return Err(SpaceError::DuplicateParameter { param: name });
        }
        if vs.is_empty() {
            return Err(SpaceError::EmptyValues { param: name });
        }
        let mut seen = HashSet::new();
        for v in &vs {
            // Compare by the printed form: that is what identifies a value in cache keys.
            let key = format!("{v:?}");
            if !seen.insert(key) {
                return Err(SpaceError::DuplicateValue {
                    param: name,
                    value: v.python_str(),
                });
            }
        }
        names.push(name);
        values.push(vs);
    }
    Ok((names, values))
}

fn radix_of(values: &[Vec<Value>]) -> Result<Vec<u64>, SpaceError> {
    let n = values.len();
    let mut radix = vec![1u64; n];
    for p in (0..n.saturating_sub(1)).rev() {
        radix[p] = radix[p + 1]
            .checked_mul(values[p + 1].len() as u64)
            .ok_or_else(|| SpaceError::TooLarge {
                what: "more than 2^64 raw combinations".into(),
            })?;
    }
    Ok(radix)
}

fn raw_size_of(values: &[Vec<Value>]) -> Result<u64, SpaceError> {
    values
        .iter()
        .try_fold(1u64, |acc, v| acc.checked_mul(v.len() as u64))
        .ok_or_else(|| SpaceError::TooLarge {
            what: "more than 2^64 raw combinations".into(),
        })
}

enum Kind {
    #[cfg(feature = "engine")]
    Expr(Box<Expr>),
    Closure(ClosureFn),
}

struct Compiled {
    label: String,
    vars: Vec<usize>,
    kind: Kind,
    /// 0 = unknown, 1 = true, 2 = false; indexed by the mixed-radix of `vars`' value indices.
    memo: Option<Vec<u8>>,
    rejections: u64,
}

struct Walk<'a> {
    names: &'a [String],
    values: &'a [Vec<Value>],
    #[cfg(feature = "engine")]
    py_values: &'a [Vec<PyValue>],
    #[cfg(feature = "engine")]
    marker: PyValue,
    radix: &'a [u64],
    order: &'a [usize],
    checks_at: &'a [Vec<usize>],
    compiled: Vec<Compiled>,
    bound: Vec<Option<usize>>,
    ranks: Vec<u64>,
    max_configs: usize,
}

impl Walk<'_> {
    fn check(&mut self, r: usize) -> Result<bool, SpaceError> {
        let memo_idx = {
            let c = &self.compiled[r];
            let mut idx = 0usize;
            for &p in &c.vars {
                idx = idx * self.values[p].len() + self.bound[p].unwrap_or(0);
            }
            idx
        };
        if let Some(memo) = &self.compiled[r].memo {
            match memo.get(memo_idx) {
                Some(1) => return Ok(true),
                Some(2) => {
                    self.compiled[r].rejections += 1;
                    return Ok(false);
                }
                _ => {}
            }
        }
        let ok = match &self.compiled[r].kind {
            #[cfg(feature = "engine")]
            Kind::Expr(e) => {
                let ctx = EvalContext {
                    names: self.names,
                    values: self.py_values,
                    bound: &self.bound,
                    marker: &self.marker,
                };
                e.eval(&ctx)
                    .map_err(|message| SpaceError::RestrictionEval {
                        restriction: self.compiled[r].label.clone(),
                        assignment: self.describe(&self.compiled[r].vars),
                        message,
                    })?
            }
            Kind::Closure(f) => f(&Assignment {
                names: self.names,
                values: self.values,
                bound: &self.bound,
            }),
        };
        let c = &mut self.compiled[r];
        if let Some(memo) = &mut c.memo {
            if let Some(slot) = memo.get_mut(memo_idx) {
                *slot = if ok { 1 } else { 2 };
            }
        }
        if !ok {
            c.rejections += 1;
        }
        Ok(ok)
    }

    #[cfg(feature = "engine")]
    fn describe(&self, vars: &[usize]) -> String {
        vars.iter()
            .filter_map(|&p| {
                self.bound[p].map(|vi| format!("{}={}", self.names[p], self.values[p][vi]))
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn dfs(&mut self, depth: usize) -> Result<(), SpaceError> {
        if depth == self.order.len() {
            let rank = self
                .bound
                .iter()
                .zip(self.radix)
                .map(|(b, r)| b.unwrap_or(0) as u64 * r)
                .sum();
            if self.ranks.len() >= self.max_configs {
                return Err(SpaceError::TooLarge {
                    what: format!("more than {} valid configurations", self.max_configs),
                });
            }
            self.ranks.push(rank);
            return Ok(());
        }
        let p = self.order[depth];
        let checks = self.checks_at;
        'values: for vi in 0..self.values[p].len() {
            self.bound[p] = Some(vi);
            for &r in &checks[depth] {
                if !self.check(r)? {
                    continue 'values;
                }
            }
            self.dfs(depth + 1)?;
        }
        self.bound[p] = None;
        Ok(())
    }
}

/// Which configurations count as neighbours of a configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Neighborhood {
    /// Change one parameter to the previous or next value in its list (any other value for
    /// strings and booleans, which have no order). Small steps, as in a local search.
    Adjacent,
    /// Change one parameter to any other value.
    Hamming,
}

/// An enumerated search space (immutable, cheap to share: `Send + Sync`).
#[derive(Debug, Clone)]
pub struct SearchSpace {
    names: Arc<[String]>,
    values: Vec<Vec<Value>>,
    radix: Vec<u64>,
    ranks: Vec<u64>,
    raw_size: u64,
    restrictions: Vec<String>,
}

impl SearchSpace {
    /// Starts a builder.
    pub fn builder() -> SpaceBuilder {
        SpaceBuilder::default()
    }

    /// A space holding exactly the listed configurations (value-index tuples in parameter
    /// order); used for spaces recorded in a table. Duplicates are merged.
    pub fn from_configs(
        params: Vec<(String, Vec<Value>)>,
        configs: impl IntoIterator<Item = Vec<usize>>,
    ) -> Result<SearchSpace, SpaceError> {
        let (names, values) = validate_params(params)?;
        let radix = radix_of(&values)?;
        let raw_size = raw_size_of(&values)?;
        let mut ranks = Vec::new();
        for (index, c) in configs.into_iter().enumerate() {
            if c.len() != names.len() {
                return Err(SpaceError::BadConfig {
                    index,
                    message: format!("{} values for {} parameters", c.len(), names.len()),
                });
            }
            let mut rank = 0u64;
            for (p, &vi) in c.iter().enumerate() {
                if vi >= values[p].len() {
                    return Err(SpaceError::BadConfig {
                        index,
                        message: format!("value index {vi} out of range for `{}`", names[p]),
                    });
                }
                rank += vi as u64 * radix[p];
            }
            ranks.push(rank);
        }
        ranks.sort_unstable();
        ranks.dedup();
        if ranks.is_empty() {
            return Err(SpaceError::Empty {
                raw_size,
                rejections: "no configurations were given".into(),
            });
        }
        Ok(SearchSpace {
            names: names.into(),
            values,
            radix,
            ranks,
            raw_size,
            restrictions: vec!["recorded configurations only".into()],
        })
    }

    /// Number of valid configurations.
    pub fn len(&self) -> usize {
        self.ranks.len()
    }

    /// Always false: an empty space is a build error.
    pub fn is_empty(&self) -> bool {
        self.ranks.is_empty()
    }

    /// Number of combinations before restrictions.
    pub fn raw_size(&self) -> u64 {
        self.raw_size
    }

    /// Parameter names in declaration order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Shared handle on the names (what [`Config`]s carry).
    pub fn names_arc(&self) -> Arc<[String]> {
        self.names.clone()
    }

    /// The value list of parameter `p`.
    pub fn values(&self, p: usize) -> &[Value] {
        self.values.get(p).map_or(&[], |v| v.as_slice())
    }

    /// Number of parameters.
    pub fn num_params(&self) -> usize {
        self.names.len()
    }

    /// Position of a parameter by name.
    pub fn param_index(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    /// The restrictions, as written (closures by their label).
    pub fn restrictions(&self) -> &[String] {
        &self.restrictions
    }

    /// All valid configurations, in enumeration order.
    pub fn ids(&self) -> impl Iterator<Item = ConfigId> + '_ {
        (0..self.ranks.len()).map(ConfigId)
    }

    /// The id at position `i`, if in range.
    pub fn id(&self, i: usize) -> Option<ConfigId> {
        (i < self.ranks.len()).then_some(ConfigId(i))
    }

    /// Value index of parameter `p` in configuration `id`.
    pub fn value_index(&self, id: ConfigId, p: usize) -> usize {
        let rank = self.ranks.get(id.0).copied().unwrap_or(0);
        let size = self.values.get(p).map_or(1, |v| v.len() as u64).max(1);
        let r = self.radix.get(p).copied().unwrap_or(1);
        ((rank / r) % size) as usize
    }

    /// Value indices of all parameters of `id`.
    pub fn indices(&self, id: ConfigId) -> Vec<usize> {
        (0..self.num_params())
            .map(|p| self.value_index(id, p))
            .collect()
    }

    /// The configuration with id `id`.
    pub fn config(&self, id: ConfigId) -> Config {
        let values = (0..self.num_params())
            .map(|p| self.values[p][self.value_index(id, p)].clone())
            .collect();
        Config {
            names: self.names.clone(),
            values,
        }
    }

    /// The Kernel Tuner cache key of `id` (`","`-joined Python `str` of the values).
    pub fn key(&self, id: ConfigId) -> String {
        (0..self.num_params())
            .map(|p| self.values[p][self.value_index(id, p)].python_str())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Finds the valid configuration with these value indices.
    pub fn find_indices(&self, indices: &[usize]) -> Option<ConfigId> {
        if indices.len() != self.num_params() {
            return None;
        }
        let mut rank = 0u64;
        for (p, &vi) in indices.iter().enumerate() {
            if vi >= self.values[p].len() {
                return None;
            }
            rank += vi as u64 * self.radix[p];
        }
        self.ranks.binary_search(&rank).ok().map(ConfigId)
    }

    /// Finds the valid configuration with these values (in parameter order).
    pub fn find_values(&self, values: &[Value]) -> Option<ConfigId> {
        if values.len() != self.num_params() {
            return None;
        }
        let idx: Option<Vec<usize>> = values
            .iter()
            .enumerate()
            .map(|(p, v)| self.values[p].iter().position(|x| x == v))
            .collect();
        self.find_indices(&idx?)
    }

    /// Finds a configuration by parameter name (it may come from another space with the same
    /// parameters in another order).
    pub fn find_config(&self, config: &Config) -> Option<ConfigId> {
        let vals: Option<Vec<Value>> = self.names.iter().map(|n| config.get(n).cloned()).collect();
        self.find_values(&vals?)
    }

    /// Valid neighbours of `id`, in a fixed order (parameter by parameter).
    pub fn neighbors(&self, id: ConfigId, kind: Neighborhood) -> Vec<ConfigId> {
        let base = self.indices(id);
        let mut out = Vec::new();
        let mut cand = base.clone();
        for p in 0..self.num_params() {
            let size = self.values[p].len();
            let ordered = self.values[p].iter().all(Value::is_numeric);
            let steps: Vec<usize> = if kind == Neighborhood::Adjacent && ordered {
                let mut s = Vec::new();
                if base[p] > 0 {
                    s.push(base[p] - 1);
                }
                if base[p] + 1 < size {
                    s.push(base[p] + 1);
                }
                s
            } else {
                (0..size).filter(|&v| v != base[p]).collect()
            };
            for v in steps {
                cand[p] = v;
                if let Some(n) = self.find_indices(&cand) {
                    out.push(n);
                }
            }
            cand[p] = base[p];
        }
        out
    }
}

/// One configuration: parameter names and values.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    names: Arc<[String]>,
    values: Vec<Value>,
}

impl Config {
    /// A configuration from names and values; `None` if the lengths differ.
    pub fn new(names: Arc<[String]>, values: Vec<Value>) -> Option<Config> {
        (names.len() == values.len()).then_some(Config { names, values })
    }

    /// The value of parameter `name`.
    pub fn get(&self, name: &str) -> Option<&Value> {
        let p = self.names.iter().position(|n| n == name)?;
        self.values.get(p)
    }

    /// Integer value of `name`.
    pub fn int(&self, name: &str) -> Option<i64> {
        self.get(name)?.as_i64()
    }

    /// Numeric value of `name` as a float.
    pub fn float(&self, name: &str) -> Option<f64> {
        self.get(name)?.as_f64()
    }

    /// Parameter names.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Values in parameter order.
    pub fn values(&self) -> &[Value] {
        &self.values
    }

    /// `(name, value)` pairs.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.names
            .iter()
            .map(String::as_str)
            .zip(self.values.iter())
    }

    /// Kernel Tuner cache key.
    pub fn key(&self) -> String {
        self.values
            .iter()
            .map(Value::python_str)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The parameters as an ordered JSON object.
    pub fn to_json_map(&self) -> serde_json::Map<String, serde_json::Value> {
        self.iter()
            .map(|(n, v)| (n.to_string(), v.to_json()))
            .collect()
    }
}

impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (n, v)) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{n}={v}")?;
        }
        Ok(())
    }
}

// The tests declare restrictions as expressions.
#[cfg(all(test, feature = "engine"))]
mod tests {
    use super::*;

    fn brute_count(sizes: &[i64], pred: impl Fn(&[i64]) -> bool) -> usize {
        // independent reference: nested product of 1..=size values (powers of two)
        let mut count = 0;
        let mut idx = vec![0usize; sizes.len()];
        loop {
            let vals: Vec<i64> = idx.iter().map(|&i| 1i64 << i).collect();
            if pred(&vals) {
                count += 1;
            }
            let mut d = sizes.len();
            loop {
                if d == 0 {
                    return count;
                }
                d -= 1;
                idx[d] += 1;
                if (idx[d] as i64) < sizes[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
    }

    fn pow2(n: u32) -> Vec<i64> {
        (0..n).map(|i| 1i64 << i).collect()
    }

    #[test]
    fn enumerates_like_a_brute_force_filter() {
        let space = SearchSpace::builder()
            .param("x", pow2(10))
            .param("y", pow2(10))
            .param("z", pow2(6))
            .param("u", pow2(4))
            .restrict("x*y <= 1024")
            .restrict("32 <= x*y")
            .restrict("z // 2 <= y")
            .restrict_fn("u<z", &["u", "z"], |a| a.int("u") < a.int("z"))
            .build()
            .unwrap();
        let want = brute_count(&[10, 10, 6, 4], |v| {
            v[0] * v[1] <= 1024 && 32 <= v[0] * v[1] && v[2] / 2 <= v[1] && v[3] < v[2]
        });
        assert_eq!(space.len(), want);
        assert_eq!(space.raw_size(), 2400);
        // lexicographic (itertools.product) order and a consistent lookup
        let mut prev: Option<Vec<usize>> = None;
        for id in space.ids() {
            let idx = space.indices(id);
            assert_eq!(space.find_indices(&idx), Some(id));
            assert_eq!(space.find_config(&space.config(id)), Some(id));
            if let Some(p) = prev {
                assert!(p < idx);
            }
            prev = Some(idx);
        }
    }

    #[test]
    fn unknown_parameter_is_reported() {
        let err = SearchSpace::builder()
            .param("block_size_x", [32, 64])
            .restrict("block_size_x * block_sise_y <= 1024")
            .build()
            .unwrap_err();
        match err {
            SpaceError::UnknownParameter { name, .. } => assert_eq!(name, "block_sise_y"),
            other => panic!("{other}"),
        }
        let err = SearchSpace::builder()
            .param("a", [1])
            .restrict_fn("f", &["b"], |_| true)
            .build()
            .unwrap_err();
        assert!(matches!(err, SpaceError::UnknownParameter { .. }));
    }

    #[test]
    fn empty_space_is_an_error_with_diagnostics() {
        let err = SearchSpace::builder()
            .param("a", [1, 2, 3])
            .param("b", [1, 2])
            .restrict("a > 5")
            .build()
            .unwrap_err();
        let msg = err.to_string();
        assert!(
            matches!(err, SpaceError::Empty { raw_size: 6, .. }),
            "{msg}"
        );
        assert!(msg.contains("`a > 5` rejected 3"), "{msg}");
        // a constant false restriction
        assert!(matches!(
            SearchSpace::builder()
                .param("a", [1])
                .restrict("1 > 2")
                .build(),
            Err(SpaceError::Empty { .. })
        ));
    }

    #[test]
    fn bad_parameters_are_errors() {
        assert!(matches!(
            SearchSpace::builder().build(),
            Err(SpaceError::NoParameters)
        ));
        assert!(matches!(
            SearchSpace::builder().param("a", Vec::<i64>::new()).build(),
            Err(SpaceError::EmptyValues { .. })
        ));
        assert!(matches!(
            SearchSpace::builder().param("a", [1, 1]).build(),
            Err(SpaceError::DuplicateValue { .. })
        ));
        assert!(matches!(
            SearchSpace::builder()
                .param("a", [1])
                .param("a", [2])
                .build(),
            Err(SpaceError::DuplicateParameter { .. })
        ));
        let err = SearchSpace::builder()
            .param("s", ["row", "col"])
            .restrict("s * 2 > 1")
            .build()
            .unwrap_err();
        assert!(matches!(err, SpaceError::RestrictionEval { .. }), "{err}");
    }

    #[test]
    fn mixed_value_types_and_keys() {
        let space = SearchSpace::builder()
            .param("bs", [64, 128])
            .param("layout", ["row", "col"])
            .param("vec", [true, false])
            .param("alpha", [0.5, 1e-5])
            .restrict("layout == 'row' or not vec")
            .build()
            .unwrap();
        assert_eq!(space.len(), 2 * 3 * 2);
        let id = space
            .find_values(&[
                Value::Int(128),
                Value::from("col"),
                Value::Bool(false),
                Value::Float(1e-5),
            ])
            .unwrap();
        assert_eq!(space.key(id), "128,col,False,1e-05");
        assert_eq!(space.config(id).key(), "128,col,False,1e-05");
    }

    #[test]
    fn neighbors_are_valid_and_adjacent() {
        let space = SearchSpace::builder()
            .param("a", [1, 2, 4, 8])
            .param("b", [1, 2, 4, 8])
            .restrict("a * b <= 16")
            .build()
            .unwrap();
        let id = space.find_values(&[Value::Int(2), Value::Int(4)]).unwrap();
        let n: Vec<String> = space
            .neighbors(id, Neighborhood::Adjacent)
            .into_iter()
            .map(|i| space.key(i))
            .collect();
        assert_eq!(n, ["1,4", "4,4", "2,2", "2,8"]);
        let h = space.neighbors(id, Neighborhood::Hamming);
        assert_eq!(h.len(), 5); // a in {1,4} (8*4 > 16), b in {1,2,8}
    }

    #[test]
    fn million_combinations_enumerate_quickly() {
        let t = std::time::Instant::now();
        let space = SearchSpace::builder()
            .param("a", pow2(16))
            .param("b", pow2(16))
            .param("c", pow2(16))
            .param("d", pow2(16))
            .param("e", [1, 2, 3, 4, 5, 6])
            .param("f", [0, 1, 2])
            .restrict("a * b <= 256")
            .restrict("c * d <= 64")
            .restrict("e % 2 == 0 or a > 4")
            .restrict("f <= e")
            .build()
            .unwrap();
        assert_eq!(space.raw_size(), 1_179_648);
        let ab = brute_count(&[16, 16], |v| v[0] * v[1] <= 256);
        let cd = brute_count(&[16, 16], |v| v[0] * v[1] <= 64);
        let a_big = brute_count(&[16, 16], |v| v[0] * v[1] <= 256 && v[0] > 4);
        // e in {2,4,6} always (f has 3 choices each); e in {1,3,5} only when a > 4 (f: 2,3,3)
        let want = cd * (ab * 9 + a_big * 8);
        assert_eq!(space.len(), want);
        assert!(t.elapsed().as_secs() < 20, "{:?}", t.elapsed());
    }
}
