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
#![warn(missing_docs)]

pub mod cache;
pub mod encode;
pub mod eval;
pub mod expr;
pub mod kt;
pub mod linalg;
pub mod replay;
pub mod rng;
pub mod score;
pub mod space;
pub mod strategy;
pub mod synthetic;
pub mod tuner;
pub mod value;

pub use cache::{CacheMeta, CacheRecord, JsonlCache};
pub use eval::{EvalError, Evaluator, FailureKind, Features, Measurement, Objective};
pub use kt::KtCache;
pub use replay::{RecordedTable, ReplayEvaluator};
pub use space::{Config, ConfigId, Neighborhood, SearchSpace, SpaceError};
pub use strategy::{
    BayesianOptimization, BruteForce, GeneticAlgorithm, RandomSampling, RegressionPrune,
    SimulatedAnnealing, Strategy,
};
pub use tuner::{
    Budget, Outcome, Partition, Session, StabilityGate, Stop, TuneError, TuneOptions, TuneResult,
    Tuner, Warning,
};
pub use value::Value;
