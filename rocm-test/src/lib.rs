//! `rocm-test`: check every HIP kernel of a crate against its Rust reference, on every backend
//! that can run here, as ordinary `cargo test` trials.
//!
//! A harness is a `harness = false` test target:
//!
//! ```toml
//! [[test]]
//! name = "kernels"
//! harness = false
//! ```
//!
//! ```no_run
//! use rocm_test::{gen, Launch};
//! # static KERNELS: rocm_kernels::KernelLibrary = rocm_kernels::KernelLibrary {
//! #     name: "kernels", code_objects: &[], kernels: &[], globals: &[] };
//!
//! fn main() -> std::process::ExitCode {
//!     rocm_test::main(&KERNELS, |s| {
//!         s.check("saxpy")
//!             .size("n", 1..=5000)
//!             .scalar("n", gen::size::<i32>("n"))
//!             .scalar("a", gen::value(-4.0f32..4.0))
//!             .input("x", gen::vec("n", -1.0f32..1.0))
//!             .inout("y", gen::vec("n", -1.0f32..1.0))
//!             .launch_with(|i| Launch::cover(i.size("n"), 256))
//!             .reference(|i, o| {
//!                 let (a, x) = (i.scalar::<f32>("a"), i.buf::<f32>("x"));
//!                 for (y, x) in o.buf::<f32>("y").iter_mut().zip(x) {
//!                     *y += a * x;
//!                 }
//!             });
//!     })
//! }
//! ```
//!
//! Each check becomes one trial per target: `saxpy::cpu/w32`, `saxpy::cpu/w64`,
//! `saxpy::amd/gfx90a`, `saxpy::nvidia/sm_90`. Targets that cannot run here are ignored with
//! the reason (or fail, with `--require-backend`). Outputs are poisoned before every launch, so
//! an element the kernel never writes fails. A kernel of the library without a check fails
//! `<kernel>::no-check` unless opted out with [`Suite::untested`].
//!
//! [`Suite::tune`] declares a tunable beside a check, for `cargo rocm tune` ([`tune`]).

mod capture;
mod check;
mod compare;
mod ctypes;
mod differential;
mod element;
mod error;
/// The trial events and option variables, shared with `cargo rocm`.
pub use rocm_protocol as events;
pub mod gen;
mod harness;
mod isolate;
mod launch;
mod nextest;
mod options;
mod raw;
mod run;
mod runtime;
mod select;
mod suite;
mod target;
mod tolerance;
pub mod tune;

#[cfg(test)]
mod testing;

pub use check::{Check, Inputs, Outputs};
pub use element::{ElemType, ElemVerdict, Element, HostBuf, ScalarValue};
pub use error::Error;
pub use harness::main;
pub use launch::{Dim3, Launch};
pub use options::{HarnessOptions, RaceCheck, DEFAULT_RACE_CASES};
pub use raw::RawValue;
pub use run::DEFAULT_CASES;
pub use suite::Suite;
pub use target::{Bandwidth, TrialPlace};
pub use tolerance::Tolerance;

/// Re-exported so harnesses can write strategies (`rocm_test::proptest::num::f32::NORMAL`) without a
/// separate dependency.
pub use proptest;
