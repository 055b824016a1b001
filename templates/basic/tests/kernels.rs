//! Checks every kernel in `kernels/` against its Rust reference in `src/lib.rs`, with generated
//! inputs, on every backend that can run here (one trial per kernel × backend × target).
//!
//! Run with `cargo rocm test` (a summary table, JSON, JUnit) or `cargo test --test kernels`.

use rocm_test::{gen, Inputs, Launch, Tolerance};
use {{crate_name}}::BLOCK;

fn main() -> std::process::ExitCode {
    rocm_test::main({{crate_name}}::KERNELS, |s| {
        s.check("saxpy")
            .size("n", 1..=5000)
            .scalar("n", gen::size::<i32>("n"))
            .scalar("a", gen::value(-4.0f32..4.0))
            .input("x", gen::vec("n", -1.0f32..1.0))
            .inout("y", gen::vec("n", -1.0f32..1.0))
            .launch_with(|i| Launch::cover(i.size("n"), 256))
            .reference(|i, o| {{crate_name}}::saxpy(i.scalar("a"), i.buf("x"), o.buf("y")));

        s.check("block_sum")
            .size("n", 1..=5000)
            .input("x", gen::vec("n", -1.0f32..1.0))
            .output::<f32>("partial", |i: &Inputs| i.size("n").div_ceil(BLOCK))
            .scalar("n", gen::size::<i32>("n"))
            .launch_with(|i| Launch::cover(i.size("n"), BLOCK as u32))
            // A tree of float additions against an f64 sum: allow for the rounding.
            .tolerance_for("partial", Tolerance::close(1e-4, 1e-4))
            .reference(|i, o| {{crate_name}}::block_sum(i.buf("x"), o.buf("partial")));
    })
}
