//! Tuning: a kernel's launch and compile-time parameters searched on a device, every candidate
//! verified against the kernel's check. A [`Tunable`] is declared in the same harness as the
//! check it tunes and shares its arguments, input generators, Rust reference and tolerance:
//!
//! ```no_run
//! use rocm_test::{gen, Launch};
//! use rocm_test::tune::Config;
//! # static KERNELS: rocm_kernels::KernelLibrary = rocm_kernels::KernelLibrary {
//! #     name: "kernels", code_objects: &[], kernels: &[], globals: &[] };
//! # fn launch(c: &Config, n: usize) -> Launch { Launch::cover(n, 256) }
//! fn main() -> std::process::ExitCode {
//!     rocm_test::main(&KERNELS, |s| {
//!         s.check("matmul"); // …sizes, arguments, launch, reference, as for any check
//!         s.tune("matmul")
//!             .define("BM", [16, 32, 64])          // compile time: -DBM=16
//!             .define("BN", [16, 32, 64])
//!             .param("THREADS", [64, 128, 256])    // launch only
//!             .restrict("BM * BN / THREADS <= 64") // Kernel Tuner's syntax
//!             .launch(|c, i| launch(c, i.size("n")))
//!             .problem(&[("n", 512)])
//!             .problem(&[("n", 2048)])
//!             .default_config(&[("BM", 32), ("BN", 32), ("THREADS", 256)]);
//!     })
//! }
//! ```
//!
//! `cargo test` checks the declaration (a trial `matmul::tunable`: the space is not empty, the
//! default is in it, every compile-time parameter appears in the kernel's source). `cargo rocm
//! tune` runs the harness in tune mode (`ROCM_TUNE_REQUEST`, see
//! [`rocm_protocol::tune`](crate::events::tune)): for each device and problem size, the
//! inputs are generated once at that size, the reference computed once, and every candidate
//! is compiled (compile-time parameters: at run time, NVRTC, hipRTC or the host compiler, cached
//! on disk), launched, compared with the reference (a wrong result is recorded and never
//! chosen), then timed with device events.
//!
//! Tune mode is the `tune` feature, off by default; `cargo rocm tune` turns it on when it
//! builds the harness (`cargo test --no-run --features rocm-test/tune`). Evaluation has to run in
//! the user's test binary, because that is where a tunable's inputs, reference and closures
//! (launch, restrictions, throughput) live; what it needs besides (the run-time compilers and
//! their cache, code-object reading, the search engine with evalexpr) is linked only into that
//! build, so an ordinary `cargo test` binary does not carry it. Without the feature the
//! declarations compile the same, the `::tunable` trial checks what it can (a space restricted by
//! Kernel Tuner expressions is only enumerated by the engine: its emptiness, and whether the
//! default passes the expressions, are checked by `cargo rocm tune`), and a harness asked to
//! tune says to run `cargo rocm tune`.

#[cfg(feature = "tune")]
mod compile;
#[cfg(feature = "tune")]
pub(crate) use compile::worker_main as compile_worker;
mod declaration;
#[cfg(feature = "tune")]
mod evaluate;
mod results;
#[cfg(feature = "tune")]
mod session;

use std::path::PathBuf;
use std::sync::Arc;

use crate::{Inputs, Launch};

pub use rocm_tune::space::Assignment;
pub use rocm_tune::{Config, Value};

pub(crate) use declaration::validate;
#[cfg(not(feature = "tune"))]
pub(crate) use results::refuse_tune_mode as run_tune_mode;

#[cfg(feature = "tune")]
pub(crate) use session::run as run_tune_mode;

type TuneLaunchFn = Arc<dyn Fn(&Config, &Inputs<'_>) -> Launch + Send + Sync>;
type WorkFn = Arc<dyn Fn(&Inputs<'_>) -> f64 + Send + Sync>;
type RestrictFn = Arc<dyn Fn(&Assignment<'_>) -> bool + Send + Sync>;

/// How a parameter reaches the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ParamKind {
    /// `-DNAME=value`: each value is a separately compiled variant.
    Define,
    /// Only the launch reads it.
    Launch,
}

#[derive(Clone)]
pub(crate) enum Restriction {
    Expr(String),
    Fn {
        label: String,
        names: Vec<String>,
        f: RestrictFn,
    },
}

/// What a tuning run minimises and reports.
#[derive(Clone)]
#[cfg_attr(not(feature = "tune"), allow(dead_code))] // used in tune mode
pub(crate) struct Throughput {
    pub unit: String,
    pub work: WorkFn,
}

/// A tunable kernel: its parameters, restrictions, launch, problem sizes and default. Made by
/// [`Suite::tune`](crate::Suite::tune); methods chain on `&mut Tunable`.
#[derive(Clone)]
pub struct Tunable {
    pub(crate) name: String,
    /// The check whose arguments, reference and tolerance the candidates are verified with.
    pub(crate) check: String,
    pub(crate) params: Vec<(String, ParamKind, Vec<Value>)>,
    pub(crate) restrictions: Vec<Restriction>,
    pub(crate) launch: Option<TuneLaunchFn>,
    pub(crate) problems: Vec<Vec<(String, usize)>>,
    pub(crate) default: Option<Vec<(String, Value)>>,
    pub(crate) throughput: Option<Throughput>,
    pub(crate) source: Option<PathBuf>,
    pub(crate) includes: Vec<PathBuf>,
    pub(crate) errors: Vec<String>,
}

impl Tunable {
    pub(crate) fn new(check: &str) -> Tunable {
        Tunable {
            name: check.to_owned(),
            check: check.to_owned(),
            params: Vec::new(),
            restrictions: Vec::new(),
            launch: None,
            problems: Vec::new(),
            default: None,
            throughput: None,
            source: None,
            includes: Vec::new(),
            errors: Vec::new(),
        }
    }

    /// The tunable's name in reports, caches and the wisdom file (default: the check's name).
    pub fn named(&mut self, name: &str) -> &mut Self {
        self.name = name.to_owned();
        self
    }

    fn push(&mut self, name: &str, kind: ParamKind, values: Vec<Value>) -> &mut Self {
        if self.params.iter().any(|(n, _, _)| n == name) {
            self.errors
                .push(format!("parameter `{name}` is declared twice"));
        }
        if values.is_empty() {
            self.errors
                .push(format!("parameter `{name}` has no values"));
        }
        self.params.push((name.to_owned(), kind, values));
        self
    }

    /// A compile-time parameter: each value is passed as `-DNAME=value` to a separate compile
    /// of the kernel's source (NVRTC on nvidia, hipRTC on amd, the host compiler on cpu). The
    /// source should give it a default (`#ifndef NAME` / `#define NAME 32` / `#endif`): that is
    /// what the crate's ordinary build, and so its checks, use.
    pub fn define<V: Into<Value>>(
        &mut self,
        name: &str,
        values: impl IntoIterator<Item = V>,
    ) -> &mut Self {
        let values = values.into_iter().map(Into::into).collect();
        self.push(name, ParamKind::Define, values)
    }

    /// A launch parameter: only [`launch`](Self::launch) reads it (block shape, items per
    /// thread the kernel takes as an argument, dynamic shared memory).
    pub fn param<V: Into<Value>>(
        &mut self,
        name: &str,
        values: impl IntoIterator<Item = V>,
    ) -> &mut Self {
        let values = values.into_iter().map(Into::into).collect();
        self.push(name, ParamKind::Launch, values)
    }

    /// A restriction in Kernel Tuner's (Python) syntax over the parameters:
    /// `"BM * BN // (TM * TN) <= 1024"`, `"32 <= THREADS <= 1024"`, `"BK % 4 == 0"`.
    pub fn restrict(&mut self, expr: &str) -> &mut Self {
        self.restrictions.push(Restriction::Expr(expr.to_owned()));
        self
    }

    /// A restriction as a closure reading the parameters `names` (checked as soon as they are
    /// chosen, which prunes early); `label` names it in errors.
    pub fn restrict_fn(
        &mut self,
        label: &str,
        names: &[&str],
        f: impl Fn(&Assignment<'_>) -> bool + Send + Sync + 'static,
    ) -> &mut Self {
        self.restrictions.push(Restriction::Fn {
            label: label.to_owned(),
            names: names.iter().map(|n| n.to_string()).collect(),
            f: Arc::new(f),
        });
        self
    }

    /// The launch for a configuration and a problem's inputs (grid, block, dynamic shared
    /// memory). Required: a candidate's launch is a function of its parameters.
    pub fn launch(
        &mut self,
        f: impl Fn(&Config, &Inputs<'_>) -> Launch + Send + Sync + 'static,
    ) -> &mut Self {
        self.launch = Some(Arc::new(f));
        self
    }

    /// A problem size to tune for: values for (some of) the check's sizes; the others take their
    /// largest value. Each problem size is tuned separately, with its own cache and wisdom
    /// entry. Without any, the check's sizes at their largest value.
    pub fn problem(&mut self, sizes: &[(&str, usize)]) -> &mut Self {
        self.problems
            .push(sizes.iter().map(|(n, v)| (n.to_string(), *v)).collect());
        self
    }

    /// The default configuration (what runs where nothing was tuned): measured first in every
    /// tuning run, so the report gives the speed-up over it. Use the same constant the
    /// application passes to `rocm_kernels::tuning::TunedKernel::select`.
    pub fn default_config<V: Into<Value> + Copy>(&mut self, values: &[(&str, V)]) -> &mut Self {
        self.default = Some(
            values
                .iter()
                .map(|(n, v)| (n.to_string(), (*v).into()))
                .collect(),
        );
        self
    }

    /// [`default_config`](Self::default_config) from the runtime's configuration type, so the
    /// application and the tunable share one constant.
    pub fn default_params(&mut self, values: rocm_kernels::tuning::Config) -> &mut Self {
        use rocm_kernels::tuning::Param;
        self.default = Some(
            values
                .iter()
                .map(|(n, v)| {
                    let v = match v {
                        Param::Int(i) => Value::Int(*i),
                        Param::Float(f) => Value::Float(*f),
                        Param::Bool(b) => Value::Bool(*b),
                        Param::Str(s) => Value::Str((*s).to_owned()),
                    };
                    (n.to_string(), v)
                })
                .collect(),
        );
        self
    }

    /// Report a throughput next to the time: `work` is the amount of work of one launch in the
    /// unit's numerator per second (`throughput("GFLOP/s", |i| 2.0 * n³ / 1e9)`). For one
    /// problem size the fastest configuration has the highest throughput, so the search is the
    /// same; the unit shows in the table, the JSON and the report.
    pub fn throughput(
        &mut self,
        unit: &str,
        work: impl Fn(&Inputs<'_>) -> f64 + Send + Sync + 'static,
    ) -> &mut Self {
        self.throughput = Some(Throughput {
            unit: unit.to_owned(),
            work: Arc::new(work),
        });
        self
    }

    /// The kernel's source file, when it is not the file the library records for the kernel
    /// (relative to the crate root, `CARGO_MANIFEST_DIR`).
    pub fn source(&mut self, path: impl Into<PathBuf>) -> &mut Self {
        self.source = Some(path.into());
        self
    }

    /// An include folder the run-time compiles need (the build's `Build::include`); the
    /// source's own folder is always searched.
    pub fn include(&mut self, dir: impl Into<PathBuf>) -> &mut Self {
        self.includes.push(dir.into());
        self
    }

    /// Whether a restriction is a Kernel Tuner expression (only the engine evaluates those).
    pub(crate) fn has_expressions(&self) -> bool {
        self.restrictions
            .iter()
            .any(|r| matches!(r, Restriction::Expr(_)))
    }

    /// Names of the compile-time parameters.
    pub(crate) fn defines(&self) -> Vec<String> {
        self.params
            .iter()
            .filter(|(_, k, _)| *k == ParamKind::Define)
            .map(|(n, _, _)| n.clone())
            .collect()
    }

    /// The search space (parameters in declaration order, restrictions compiled).
    pub(crate) fn space(&self) -> Result<rocm_tune::SearchSpace, crate::Error> {
        let mut b = rocm_tune::SearchSpace::builder();
        for (name, _, values) in &self.params {
            b = b.param(name.clone(), values.iter().cloned());
        }
        for r in &self.restrictions {
            b = match r {
                #[cfg(feature = "tune")]
                Restriction::Expr(e) => b.restrict(e.clone()),
                #[cfg(not(feature = "tune"))]
                Restriction::Expr(e) => {
                    return Err(crate::Error::Declaration(format!(
                        "restriction `{e}` of tunable `{}`: Kernel Tuner expressions are \
                         evaluated in tune mode only (`cargo rocm tune`)",
                        self.name
                    )))
                }
                Restriction::Fn { label, names, f } => {
                    let names: Vec<&str> = names.iter().map(String::as_str).collect();
                    let f = f.clone();
                    b.restrict_fn(label.clone(), &names, move |a| f(a))
                }
            };
        }
        b.build().map_err(|e| {
            crate::Error::Declaration(format!(
                "the search space of tunable `{}` cannot be built: {e}",
                self.name
            ))
        })
    }

    /// The restrictions as text, for reports.
    #[cfg_attr(not(feature = "tune"), allow(dead_code))] // used in tune mode
    pub(crate) fn restriction_texts(&self) -> Vec<String> {
        self.restrictions
            .iter()
            .map(|r| match r {
                Restriction::Expr(e) => e.clone(),
                Restriction::Fn { label, .. } => format!("{label} (closure)"),
            })
            .collect()
    }

    /// The default's values in parameter order, or why it does not name each parameter once.
    fn default_values(&self) -> Option<Result<Vec<Value>, crate::Error>> {
        let default = self.default.as_ref()?;
        let mut values = Vec::new();
        for (n, _, _) in &self.params {
            match default.iter().find(|(d, _)| d == n) {
                Some((_, v)) => values.push(v.clone()),
                None => {
                    return Some(Err(crate::Error::Declaration(format!(
                        "the default configuration of `{}` has no value for `{n}`",
                        self.name
                    ))))
                }
            }
        }
        if let Some((extra, _)) = default
            .iter()
            .find(|(d, _)| !self.params.iter().any(|(n, _, _)| n == d))
        {
            return Some(Err(crate::Error::Declaration(format!(
                "the default configuration of `{}` sets `{extra}`, which is not a parameter",
                self.name
            ))));
        }
        Some(Ok(values))
    }

    fn default_not_in_space(&self) -> crate::Error {
        crate::Error::Declaration(format!(
            "the default configuration of `{}` ({}) is not in its search space: a value \
             is not in its parameter's list, or a restriction excludes it",
            self.name,
            self.default
                .iter()
                .flatten()
                .map(|(n, v)| format!("{n}={v}"))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }

    /// The default as a configuration of `space` (the tunable's), or why it is not one.
    pub(crate) fn default_in(
        &self,
        space: &rocm_tune::SearchSpace,
    ) -> Option<Result<rocm_tune::ConfigId, crate::Error>> {
        Some(self.default_values()?.and_then(|values| {
            space
                .find_values(&values)
                .ok_or_else(|| self.default_not_in_space())
        }))
    }

    /// What can be checked of the default without the space: it names every parameter once,
    /// with a value from the parameter's list.
    pub(crate) fn default_in_lists(&self) -> Result<(), crate::Error> {
        let Some(values) = self.default_values().transpose()? else {
            return Ok(());
        };
        let listed = self
            .params
            .iter()
            .zip(&values)
            .all(|((_, _, list), v)| list.contains(v));
        if listed {
            Ok(())
        } else {
            Err(self.default_not_in_space())
        }
    }
}
