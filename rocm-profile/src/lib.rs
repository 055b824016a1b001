//! `rocm-profile`: the work of `cargo rocm profile`.
//!
//! A workload runs under the backend's profiler and its own launch log is read beside it:
//!
//! | backend | times from | resources and occupancy from |
//! |---|---|---|
//! | amd | rocprofv3 (`--kernel-trace`, counters with `--pmc`), [`rocprof`] | the code objects ([`resources`]) and the occupancy model (`rocm-occupancy`) |
//! | nvidia | Nsight Compute (`ncu`), [`ncu`] | the driver, through the launch log (`cuOccupancyMaxActiveBlocksPerMultiprocessor`) |
//! | cpu | the runtime's timings in the launch log, [`launch_log`] | — |
//!
//! Every tool's output becomes [`Collected`] dispatches; [`report::build`] joins them into a
//! [`ProfileReport`] (timing statistics and a stability verdict from `rocm-stats`, resources,
//! occupancy, declared-work throughput), which [`render`] prints, [`html`] draws, and serde
//! writes as versioned JSON (`docs/profile-schema.json`).

pub mod dispatch;
mod error;
pub mod html;
pub mod launch_log;
pub mod ncu;
pub mod render;
pub mod report;
pub mod resources;
pub mod rocprof;
pub mod tool;

pub use dispatch::{kernel_name, Collected, Dispatch};
pub use error::ProfileError;
pub use report::{build, ProfileReport, ReportInput, SCHEMA, SCHEMA_VERSION};
pub use resources::{amd_kernels, AmdKernel};
pub use tool::Workload;
