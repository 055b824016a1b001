//! `rocm-test`: check every kernel against its Rust reference (being written).
