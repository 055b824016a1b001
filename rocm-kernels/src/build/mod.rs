//! Building kernels (h-build owns this module; the cpu part lives in [`cpu`]).

pub mod cpu;
