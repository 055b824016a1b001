//! The search side of an autotuner for GPU kernels (no GPU code here).
//!
//! - [`space`]: parameters with discrete values and restrictions (Rust closures or Kernel
//!   Tuner-style Python expressions, see [`expr`]), enumerated with early pruning.
//! - [`strategy`]: brute force, random sampling, simulated annealing, a genetic algorithm,
//!   Bayesian optimisation (Gaussian process + expected improvement) and regression-and-prune
//!   (after rocm-perf-lab), behind the [`Strategy`] trait.
//! - [`tuner`]: budgets, failure handling, stability gating, caching and resumption, shared
//!   by all strategies.
//! - [`eval`]: the [`Evaluator`] interface the GPU side implements.
//! - [`replay`] and [`score`]: offline evaluation from recorded tables and the score against
//!   random sampling.
//! - [`cache`] (our append-only JSON Lines cache) and [`kt`] (Kernel Tuner 1.x cache files).
//! - [`synthetic`]: a tiled-matmul cost model to exercise all of the above.
//! - [`campaign`]: one tuning campaign as `cargo rocm tune` runs it (the default configuration
//!   first, then each strategy through one cache, into the report's runs), for a harness's
//!   tunables and for `--cmd-template` alike.
//!
//! Everything but [`value`] and [`space`] (without restriction expressions) is behind the
//! default `engine` feature, so that a crate that only *declares* a space (rocm-test in a normal
//! test binary) builds neither evalexpr nor serde_json's `preserve_order`.
//!
//! ```
//! use rocm_tune::{synthetic, Budget, RandomSampling, ReplayEvaluator, Tuner};
//!
//! let table = synthetic::matmul_table(1);
//! let mut device = ReplayEvaluator::new(&table);
//! let result = Tuner::new(table.space(), &mut device)
//!     .budget(Budget::evals(30))
//!     .seed(7)
//!     .run(&mut RandomSampling)
//!     .unwrap();
//! assert_eq!(result.evaluations, 30);
//! assert!(result.best.is_some());
//! ```

#![forbid(unsafe_code)]

// Always built: the types a space is declared with.
pub mod space;
pub mod value;

// The engine (the `engine` feature, on by default).
#[cfg(feature = "engine")]
pub mod cache;
#[cfg(feature = "engine")]
pub mod campaign;
#[cfg(feature = "engine")]
pub mod encode;
#[cfg(feature = "engine")]
pub mod eval;
#[cfg(feature = "engine")]
pub mod expr;
#[cfg(feature = "engine")]
pub mod kt;
#[cfg(feature = "engine")]
pub(crate) mod linalg;
#[cfg(feature = "engine")]
pub mod replay;
#[cfg(feature = "engine")]
pub(crate) mod rng;
#[cfg(feature = "engine")]
pub mod score;
#[cfg(feature = "engine")]
pub mod strategy;
#[cfg(feature = "engine")]
pub mod synthetic;
#[cfg(feature = "engine")]
pub mod tuner;

pub use space::{Config, ConfigId, Neighborhood, SearchSpace, SpaceError};
pub use value::Value;

#[cfg(feature = "engine")]
pub use cache::{CacheMeta, CacheRecord, JsonlCache};
#[cfg(feature = "engine")]
pub use eval::{EvalError, EvalStats, Evaluator, FailureKind, Features, Measurement, Objective};
#[cfg(feature = "engine")]
pub use kt::KtCache;
#[cfg(feature = "engine")]
pub use replay::{RecordedTable, ReplayEvaluator};
#[cfg(feature = "engine")]
pub use strategy::{
    BayesianOptimization, BruteForce, GeneticAlgorithm, RandomSampling, RegressionPrune,
    SimulatedAnnealing, Strategy,
};
#[cfg(feature = "engine")]
pub use tuner::{
    Budget, Outcome, Partition, Session, StabilityGate, Stop, TuneError, TuneOptions, TuneResult,
    Tuner, Warning,
};
