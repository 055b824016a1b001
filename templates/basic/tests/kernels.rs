//! Checks every kernel in `kernels/` against its Rust reference in `src/lib.rs`, with generated
//! inputs, on every backend that can run here (one trial per kernel × backend × target).
//!
//! Run with `cargo rocm test` (a summary table, JSON, JUnit) or `cargo test --test kernels`.

use rocm_test::{gen, Inputs, Launch, Tolerance};

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
            .output::<f32>("partial", |i: &Inputs| i.size("n").div_ceil({{crate_name}}::BLOCK))
            .scalar("n", gen::size::<i32>("n"))
            .launch_with(|i| Launch::cover(i.size("n"), {{crate_name}}::BLOCK as u32))
            // A tree of float additions against an f64 sum: allow for the rounding.
            .tolerance_for("partial", Tolerance::close(1e-4, 1e-4))
            .reference(|i, o| {{crate_name}}::block_sum(i.buf("x"), o.buf("partial")));

        // How close saxpy gets to the memory system: one large case, timed against a
        // device-to-device copy moving as many bytes (printed, and in `cargo rocm test`'s JSON).
        // ROCM_BANDWIDTH_N sets the size (default 4M floats; 268435456 fills a large GPU).
        let n: usize = std::env::var("ROCM_BANDWIDTH_N")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1 << 22);
        s.check("saxpy")
            .named("saxpy_bandwidth")
            .size("n", n)
            .cases(1)
            .scalar("n", gen::size::<i32>("n"))
            .scalar("a", gen::value(-4.0f32..4.0))
            .input("x", gen::vec("n", -1.0f32..1.0))
            .inout("y", gen::vec("n", -1.0f32..1.0))
            .launch_with(|i| Launch::cover(i.size("n"), 256))
            .reference(|i, o| {{crate_name}}::saxpy(i.scalar("a"), i.buf("x"), o.buf("y")))
            // Read x and y, write y: 12 bytes an element.
            .bandwidth(|i| 12 * i.size("n") as u64);
    })
}
