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

        // C = A·B, launched with the default tile shapes (MATMUL_DEFAULT).
        s.check("matmul")
            .size("n", 1..=48)
            .cases(8)
            .input("a", gen::vec(("n", "n"), -1.0f32..1.0))
            .input("b", gen::vec(("n", "n"), -1.0f32..1.0))
            .output::<f32>("c", |i: &Inputs| i.size("n") * i.size("n"))
            .scalar("n", gen::size::<i32>("n"))
            .launch_with(|i| {
                let default = |p: &str| rocm_kernels::tuning::int({{crate_name}}::MATMUL_DEFAULT, p);
                {{crate_name}}::matmul_launch_for(default, i.size("n"))
            })
            .tolerance(Tolerance::close(1e-3, 1e-3))
            .reference(|i, o| {{crate_name}}::matmul(i.buf("a"), i.buf("b"), o.buf("c"), i.size("n")));

        // Its tile shapes, searched by `cargo rocm tune` (compile-time parameters: each
        // configuration is compiled with -DBLOCK_X=… and checked against the reference above):
        // 1361 configurations pass the restrictions.
        s.tune("matmul")
            .define("BLOCK_X", [8, 16, 32, 64])
            .define("BLOCK_Y", [4, 8, 16, 32])
            .define("TILE_X", [1, 2, 4, 8])
            .define("TILE_Y", [1, 2, 4, 8])
            .define("BK", [8, 16, 32])
            .define("PAD", [0, 1])
            .restrict("32 <= BLOCK_X * BLOCK_Y <= 1024")
            .restrict("BLOCK_Y * TILE_Y <= 256 and BLOCK_X * TILE_X <= 256")
            .restrict(
                "(BLOCK_Y * TILE_Y * (BK + PAD) + BK * (BLOCK_X * TILE_X + PAD)) * 4 <= 49152",
            )
            .launch(|c, i| {{crate_name}}::matmul_launch_for(|p| c.int(p), i.size("n")))
            .problem(&[("n", 256)])
            .default_params({{crate_name}}::MATMUL_DEFAULT)
            .throughput("GFLOP/s", |i| 2.0 * (i.size("n") as f64).powi(3) / 1e9);

        // A 7 × 7 convolution of an n × n output (the input padded by 3 on every side).
        s.check("conv2d")
            .size("n", 1..=40)
            .cases(8)
            .input(
                "image",
                gen::vec(
                    |i: &Inputs| (i.size("n") + 6) * (i.size("n") + 6),
                    -1.0f32..1.0,
                ),
            )
            .input("filter", gen::vec(49usize, -1.0f32..1.0))
            .output::<f32>("out", |i: &Inputs| i.size("n") * i.size("n"))
            .scalar("n", gen::size::<i32>("n"))
            .launch_with(|i| {
                let default = |p: &str| rocm_kernels::tuning::int({{crate_name}}::CONV2D_DEFAULT, p);
                {{crate_name}}::conv2d_launch_for(default, i.size("n"))
            })
            .tolerance(Tolerance::close(1e-4, 1e-4))
            .reference(|i, o| {
                {{crate_name}}::conv2d(i.buf("image"), i.buf("filter"), o.buf("out"), i.size("n"))
            });

        // Its block shape, outputs per thread and use of shared memory, searched by
        // `cargo rocm tune` (the second kernel of scripts/h100/tune.sh).
        s.tune("conv2d")
            .define("BLOCK_X", [16, 32, 48, 64, 96, 128])
            .define("BLOCK_Y", [1, 2, 4, 8, 16, 32])
            .define("TILE_X", [1, 2, 4, 8])
            .define("TILE_Y", [1, 2, 4, 8])
            .define("USE_SHARED", [0, 1])
            .restrict("64 <= BLOCK_X * BLOCK_Y <= 1024")
            .restrict("BLOCK_X * TILE_X <= 512 and BLOCK_Y * TILE_Y <= 256")
            .restrict(
                "USE_SHARED == 0 or (BLOCK_Y * TILE_Y + 6) * (BLOCK_X * TILE_X + 6) * 4 <= 49152",
            )
            .launch(|c, i| {{crate_name}}::conv2d_launch_for(|p| c.int(p), i.size("n")))
            .problem(&[("n", 256)])
            .default_params({{crate_name}}::CONV2D_DEFAULT)
            .throughput("GFLOP/s", |i| {
                2.0 * 49.0 * (i.size("n") as f64).powi(2) / 1e9
            });

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
