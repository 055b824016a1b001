//! Checks every kernel in `kernels/llm.hip` against its Rust reference in `src/lib.rs`, in f32
//! and in the half-precision types (`f16` = `__half`, `bf16` = `__hip_bfloat16`: the checks of a
//! half variant are its f32 twin's, named `scale_f16`, `rope_d64_bf16`...), with generated shapes
//! (odd sizes, one row, sequences that are not multiples of the attention tile) and values, on
//! every backend that can run here (one trial per check × backend × target).
//!
//! Tolerances, f32: the default, |got - want| <= 1e-5 + 1e-5 |want|, for every kernel whose
//! result comes from a few f32 operations per element (scale, mask, SwiGLU, RoPE), or from
//! reductions whose terms are bounded (softmax: sums of values in (0, 1]; RMSNorm: a mean of
//! squares; the attention: dot products of length head_dim and a convex combination of values in
//! [-1, 1]). The long ones (rows of up to 4500 columns, 130 keys) are summed as trees (the block
//! reductions, tiles of 32 keys), so their f32 error grows like log2(n) 2^-24, far inside 1e-5.
//! `matmul` sums k products in f32: its rounding error grows like sqrt(k) 2^-24 sum |a b| (and
//! in the worst case like k 2^-24 sum |a b|), so its tolerance is absolute 1e-5 per 32 terms of k.
//!
//! Half precision: a half kernel reads exact half values, computes exactly as its f32 twin and
//! rounds once when it stores; the reference computes on the same values in f64 and rounds once.
//! So a half result may differ from the reference by what the f32 twin may (the f32 rule above)
//! plus one ulp of the type, where the two roundings land on either side of the exact value: a
//! relative ε·|want| with the type's machine epsilon (`Dtype::STORE_ROUNDING`: 2^-10 for f16,
//! 2^-7 for bf16), which is one ulp at the bottom of a binade and just under two at its top. Two
//! ulps off fails. The long reductions add nothing worth a second ulp: their f32 error is a
//! thousandth of a bf16 ulp. `rocm_test`'s own default for half types is the same rule without
//! the f32 part's relative 1e-5.
//!
//! Run with `cargo rocm test` (a summary table, JSON, JUnit) or `cargo test --test kernels`.

use llm::decode::{self as dec, PagedShape, Sampling};
use llm::{bf16, f16, Dtype};
use llm_kernels as llm;
use rocm_kernels::Backend;
use rocm_test::proptest::strategy::Strategy;
use rocm_test::{gen, Inputs, Launch, Suite, Tolerance};

/// The element types the checks run in: the crate's [`Dtype`]s, drawn with `gen::rounded`.
trait Elem: Dtype + gen::Rounding {}
impl<T: Dtype + gen::Rounding> Elem for T {}

/// The launch the crate's wrapper computes; a refused shape fails the trial with the reason.
fn launch(r: Result<Launch, llm::ShapeError>) -> Launch {
    r.unwrap_or_else(|e| panic!("{e}"))
}

/// The f32 rule plus one ulp of `T` (see the top of this file).
fn tolerance<T: Elem>() -> Tolerance {
    Tolerance::close(1e-5, 1e-5 + T::STORE_ROUNDING)
}

/// The attention's: as [`tolerance`], and for the half types also T's epsilon in absolute terms
/// (the values are in [-1, 1)). On tensor cores (`flash_attention_mma`) the probabilities are
/// rounded to T before the P V product, as FlashAttention-2 does: each term of an output is then
/// off by up to half of T's epsilon, relative, which a small output's relative bound alone would
/// not allow.
fn attention_tolerance<T: Elem>() -> Tolerance {
    Tolerance::close(1e-5 + T::STORE_ROUNDING, 1e-5 + T::STORE_ROUNDING)
}

/// Values of `T` in `lo..hi`, exactly representable (drawn in f32 and rounded to `T`).
fn values<T: Elem>(lo: f32, hi: f32) -> gen::Rounded<T> {
    gen::rounded::<T>(lo..hi)
}

fn main() -> std::process::ExitCode {
    rocm_test::main(llm::KERNELS, |s| {
        checks::<f32>(s);
        checks::<f16>(s);
        checks::<bf16>(s);
        matmul_check(s);
        bandwidth_checks::<f32>(s);
        bandwidth_checks::<f16>(s);
        bandwidth_checks::<bf16>(s);
        decode_checks::<f32>(s);
        decode_checks::<f16>(s);
        decode_checks::<bf16>(s);
        sampler_checks(s);
    })
}

/// Every kernel's checks in `T`.
fn checks<T: Elem>(s: &mut Suite) {
    let name = |base: &str| T::kernel(base);
    s.check(&name("scale"))
        .size("n", 1..=5000)
        .scalar("n", gen::size::<i32>("n"))
        .scalar("s", gen::value(-4.0f32..4.0))
        .input("x", gen::vec("n", values::<T>(-1.0, 1.0)))
        .output::<T>("y", "n")
        .launch_with(|i| launch(llm::vec_launch::<T>("scale", i.size("n"))))
        .tolerance(tolerance::<T>())
        .reference(|i, o| llm::scale::<T>(i.scalar("s"), i.buf("x"), o.buf("y")));

    let mask_len = |i: &Inputs| i.size("batch") * i.size("rows") * i.size("cols");
    s.check(&name("causal_mask"))
        .size("batch", 1..=3)
        .size("rows", 1..=40)
        .size("cols", 1..=90)
        .scalar("batch", gen::size::<i32>("batch"))
        .scalar("rows", gen::size::<i32>("rows"))
        .scalar("cols", gen::size::<i32>("cols"))
        .scalar("offset", gen::value(-4i32..60))
        .inout("scores", gen::vec(mask_len, values::<T>(-4.0, 4.0)))
        .launch_with(|i| {
            launch(llm::mask_launch::<T>(
                i.size("batch"),
                i.size("rows"),
                i.size("cols"),
            ))
        })
        .tolerance(tolerance::<T>())
        .reference(|i, o| {
            let (rows, cols) = (i.size("rows"), i.size("cols"));
            llm::causal_mask::<T>(rows, cols, i.scalar("offset"), o.buf("scores"))
        });

    row_check::<T>(s, "softmax_rows", "softmax_rows", 1..=9, 1..=700);
    row_check::<T>(s, "softmax_rows", "softmax_one_row", 1..=1, 1..=2100);
    row_check::<T>(s, "rmsnorm", "rmsnorm", 1..=9, 1..=700);
    row_check::<T>(s, "rmsnorm", "rmsnorm_one_row", 1..=1, 1..=2100);
    // Rows longer than the values a thread keeps in registers (ROW_BLOCK × ROW_CACHE = 4096
    // in kernels/llm.hip): the columns past them are read again in each pass.
    row_check::<T>(s, "softmax_rows", "softmax_long_rows", 1..=2, 4000..=4500);
    row_check::<T>(s, "rmsnorm", "rmsnorm_long_rows", 1..=2, 4000..=4500);
    // Multiples of 4 columns: the half kernels move 4 columns a load there (8-byte aligned rows),
    // short rows and rows past the registers.
    for (kernel, check) in [
        ("softmax_rows", "softmax_quads"),
        ("rmsnorm", "rmsnorm_quads"),
    ] {
        row_check_by::<T>(s, kernel, check, 1..=5, ("col_quads", 1..=200, 4));
        let long = format!("{check}_long");
        row_check_by::<T>(s, kernel, &long, 1..=2, ("col_quads", 1000..=1130, 4));
    }

    s.check(&name("swiglu"))
        .size("n", 1..=5000)
        .scalar("n", gen::size::<i32>("n"))
        .input("gate", gen::vec("n", values::<T>(-8.0, 8.0)))
        .input("up", gen::vec("n", values::<T>(-2.0, 2.0)))
        .output::<T>("y", "n")
        .launch_with(|i| launch(llm::vec_launch::<T>("swiglu", i.size("n"))))
        .tolerance(tolerance::<T>())
        .reference(|i, o| llm::swiglu::<T>(i.buf("gate"), i.buf("up"), o.buf("y")));

    // The original RoPE base at head_dim 64, Llama 3's at 128; positions up to 4096; an odd
    // head_dim / 2 (head_dim 6: three pairs, no 16-byte path) beside them.
    for (check, head_dim, theta) in [
        ("rope_d64", 64, 10_000.0),
        ("rope_d128", 128, 500_000.0),
        ("rope_d6", 6, 10_000.0),
    ] {
        s.check(&name("rope"))
            .named(&name(check))
            .size("tokens", 1..=9)
            .size("heads", 1..=5)
            .scalar("tokens", gen::size::<i32>("tokens"))
            .scalar("heads", gen::size::<i32>("heads"))
            .scalar("head_dim", head_dim as i32)
            .scalar("pos0", gen::value(0i32..4096))
            .input("inv_freq", llm::rope_inv_freq(theta, head_dim))
            .inout(
                "x",
                gen::vec(
                    move |i: &Inputs| i.size("tokens") * i.size("heads") * head_dim,
                    values::<T>(-1.0, 1.0),
                ),
            )
            .launch_with(move |i| {
                launch(llm::rope_launch::<T>(
                    "rope",
                    i.size("tokens"),
                    i.size("heads"),
                    head_dim,
                ))
            })
            .tolerance(tolerance::<T>())
            .reference(move |i, o| {
                let pos0 = i.scalar::<i32>("pos0") as usize;
                llm::rope::<T>(
                    i.size("heads"),
                    head_dim,
                    pos0,
                    i.buf("inv_freq"),
                    o.buf("x"),
                )
            });
    }

    // New tokens at pos0 .. pos0 + tokens of a cache with `spare` free positions after them;
    // head_dim 64 (the 16-byte path) and 6 (three pairs: one element at a time).
    for (suffix, hd) in [("", 64usize), ("_d6", 6)] {
        let kv_len = move |i: &Inputs| {
            (i.size("pos0") + i.size("tokens") + i.size("spare")) * i.size("kv_heads") * hd
        };
        let new_len = move |i: &Inputs| i.size("tokens") * i.size("kv_heads") * hd;
        s.check(&name("rope_kv_append"))
            .named(&name(&format!("rope_kv_append{suffix}")))
            .size("tokens", 1..=7)
            .size("kv_heads", 1..=6)
            .size("pos0", 0..=40)
            .size("spare", 0..=3)
            .scalar("tokens", gen::size::<i32>("tokens"))
            .scalar("kv_heads", gen::size::<i32>("kv_heads"))
            .scalar("head_dim", hd as i32)
            .scalar("pos0", gen::size::<i32>("pos0"))
            .scalar(
                "max_seq",
                gen::from_sizes(|i| (i.size("pos0") + i.size("tokens") + i.size("spare")) as i32),
            )
            .input("inv_freq", llm::rope_inv_freq(10_000.0, hd))
            .input("k", gen::vec(new_len, values::<T>(-1.0, 1.0)))
            .input("v", gen::vec(new_len, values::<T>(-1.0, 1.0)))
            .inout("k_cache", gen::vec(kv_len, values::<T>(-1.0, 1.0)))
            .inout("v_cache", gen::vec(kv_len, values::<T>(-1.0, 1.0)))
            .launch_with(move |i| {
                let max_seq = i.size("pos0") + i.size("tokens") + i.size("spare");
                launch(llm::rope_kv_append_launch::<T>(
                    i.size("tokens"),
                    i.size("kv_heads"),
                    hd,
                    i.size("pos0"),
                    max_seq,
                ))
            })
            .tolerance(tolerance::<T>())
            .reference(move |i, o| {
                let (kc, vc) = o.pair::<T, T>("k_cache", "v_cache");
                llm::rope_kv_append::<T>(
                    i.size("kv_heads"),
                    hd,
                    i.size("pos0"),
                    i.buf("inv_freq"),
                    i.buf("k"),
                    i.buf("v"),
                    kc,
                    vc,
                )
            });
    }

    for head_dim in [64, 128] {
        for causal in [false, true] {
            let mask = if causal { "causal" } else { "full" };
            // Sequences up to a few tiles of keys (32 or 64: attention_tile_keys), rarely multiples of
            // them.
            attention_check::<T>(
                s,
                head_dim,
                causal,
                &format!("attention_d{head_dim}_{mask}"),
                1..=3,
                1..=70,
                0..=60,
            );
        }
        // One query over one key, and one query over many (decoding).
        attention_check::<T>(
            s,
            head_dim,
            true,
            &format!("attention_d{head_dim}_one"),
            1..=1,
            1..=1,
            0..=0,
        );
        attention_check::<T>(
            s,
            head_dim,
            true,
            &format!("attention_d{head_dim}_decode"),
            1..=2,
            1..=1,
            1..=130,
        );
    }
}

/// `matmul` (f32 only).
fn matmul_check(s: &mut Suite) {
    s.check("matmul")
        .size("m", 1..=160)
        .size("n", 1..=160)
        .size("k", 1..=96)
        .scalar("m", gen::size::<i32>("m"))
        .scalar("n", gen::size::<i32>("n"))
        .scalar("k", gen::size::<i32>("k"))
        .input(
            "a",
            gen::vec(|i: &Inputs| i.size("m") * i.size("k"), -1.0f32..1.0),
        )
        .input(
            "b",
            gen::vec(|i: &Inputs| i.size("k") * i.size("n"), -1.0f32..1.0),
        )
        .output::<f32>("c", |i: &Inputs| i.size("m") * i.size("n"))
        .launch_with(|i| launch(llm::matmul_launch(i.size("m"), i.size("n"), i.size("k"))))
        // k <= 96: 3 × 1e-5 (see the top of this file).
        .tolerance(Tolerance::close(3e-5, 1e-5))
        .cases(16)
        .reference(|i, o| {
            let (m, n, k) = (i.size("m"), i.size("n"), i.size("k"));
            llm::matmul(m, n, k, i.buf("a"), i.buf("b"), o.buf("c"))
        });

    // Square products, n × n × n, launched with the default tiles: the check the tunable below
    // verifies every candidate with, at the sizes it is tuned at (up to n = 4096, so k = 4096:
    // 128 × 1e-5, see the top of this file).
    let square = |i: &Inputs| i.size("n") * i.size("n");
    s.check("matmul")
        .named("matmul_square")
        .size("n", 1..=70)
        .scalar("m", gen::size::<i32>("n"))
        .scalar("n", gen::size::<i32>("n"))
        .scalar("k", gen::size::<i32>("n"))
        .input("a", gen::vec(square, -1.0f32..1.0))
        .input("b", gen::vec(square, -1.0f32..1.0))
        .output::<f32>("c", square)
        .launch_with(|i| launch(llm::matmul_launch(i.size("n"), i.size("n"), i.size("n"))))
        .tolerance(Tolerance::close(1.28e-3, 1e-5))
        .cases(8)
        .reference(|i, o| {
            let n = i.size("n");
            llm::matmul(n, n, n, i.buf("a"), i.buf("b"), o.buf("c"))
        });

    // Its tile shapes, searched by `cargo rocm tune` (compile-time parameters of
    // kernels/matmul.hip: each configuration is compiled with -DMM_BM=… and checked against the
    // reference above): 240 configurations pass the restrictions (threads a block, the blocks an
    // SM the registers must allow, 48 KiB of static shared memory: two buffers of a's tile, padded,
    // and b's). Tuned on the H100 at n = 2048 and 4096 by `TUNE_CRATE=llm scripts/h100/tune.sh`;
    // the best ones are in tune/wisdom.json, which `MatmulPlan::select` launches.
    s.tune("matmul_square")
        .named("matmul")
        .define("MM_BM", [32, 64, 128, 256])
        .define("MM_BN", [32, 64, 128, 256])
        .define("MM_BK", [8, 16, 32])
        .define("MM_TM", [4, 8])
        .define("MM_TN", [4, 8])
        .define("MM_MIN_BLOCKS", [1, 2])
        .restrict("64 <= (MM_BM // MM_TM) * (MM_BN // MM_TN) <= 1024")
        .restrict("(MM_BM // MM_TM) * (MM_BN // MM_TN) * MM_MIN_BLOCKS <= 2048")
        .restrict("8 * MM_BK * (MM_BM + 4 + MM_BN) <= 49152")
        .launch(|c, i| {
            let n = i.size("n");
            launch(llm::matmul_launch_with(
                llm::MatmulTiles::of(|p| c.int(p)),
                n,
                n,
                n,
            ))
        })
        .problem(&[("n", 1024)])
        .default_params(llm::MATMUL_DEFAULT)
        .throughput("GFLOP/s", |i| 2.0 * (i.size("n") as f64).powi(3) / 1e9);
}

/// The memory-bound kernels in `T` at a large size on the GPUs (`scale_bandwidth`,
/// `scale_bf16_bandwidth`...), each timed against a device-to-device copy of as many bytes
/// (printed, and in `cargo rocm test`'s JSON; a slow result never fails). `LLM_BANDWIDTH_N` sets
/// the element count (default 2^26: 256 MiB a buffer of f32, 128 MiB of a half type). Their
/// trials on the cpu backend are ignored, saying so.
fn bandwidth_checks<T: Elem>(s: &mut Suite) {
    let n: usize = std::env::var("LLM_BANDWIDTH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1 << 26);
    let gpus = [Backend::Amd, Backend::Nvidia];
    let e = std::mem::size_of::<T>() as u64; // bytes an element
    let name = |base: &str| T::kernel(base);
    s.check(&name("scale"))
        .named(&format!("{}_bandwidth", name("scale")))
        .only_backends(gpus)
        .size("n", n)
        .cases(1)
        .scalar("n", gen::size::<i32>("n"))
        .scalar("s", 0.5f32)
        .input("x", gen::vec("n", values::<T>(-1.0, 1.0)))
        .output::<T>("y", "n")
        .launch_with(|i| launch(llm::vec_launch::<T>("scale", i.size("n"))))
        .tolerance(tolerance::<T>())
        .reference(|i, o| llm::scale::<T>(i.scalar("s"), i.buf("x"), o.buf("y")))
        .bandwidth(move |i| 2 * e * i.size("n") as u64);
    s.check(&name("swiglu"))
        .named(&format!("{}_bandwidth", name("swiglu")))
        .only_backends(gpus)
        .size("n", n)
        .cases(1)
        .scalar("n", gen::size::<i32>("n"))
        .input("gate", gen::vec("n", values::<T>(-8.0, 8.0)))
        .input("up", gen::vec("n", values::<T>(-2.0, 2.0)))
        .output::<T>("y", "n")
        .launch_with(|i| launch(llm::vec_launch::<T>("swiglu", i.size("n"))))
        .tolerance(tolerance::<T>())
        .reference(|i, o| llm::swiglu::<T>(i.buf("gate"), i.buf("up"), o.buf("y")))
        .bandwidth(move |i| 3 * e * i.size("n") as u64);
    let (rows, cols) = ((n / 4096).max(1), 4096);
    s.check(&name("causal_mask"))
        .named(&format!("{}_bandwidth", name("causal_mask")))
        .only_backends(gpus)
        .size("rows", rows)
        .size("cols", cols)
        .cases(1)
        .scalar("batch", 1i32)
        .scalar("rows", gen::size::<i32>("rows"))
        .scalar("cols", gen::size::<i32>("cols"))
        // As the bench: offset cols - rows, 7/8 of the scores masked (whole rows, then a triangle).
        .scalar("offset", (cols as i64 - rows as i64) as i32)
        .inout(
            "scores",
            gen::vec(move |_: &Inputs| rows * cols, values::<T>(-4.0, 4.0)),
        )
        .launch_with(move |_| launch(llm::mask_launch::<T>(1, rows, cols)))
        .tolerance(tolerance::<T>())
        .reference(move |i, o| {
            llm::causal_mask::<T>(rows, cols, i.scalar("offset"), o.buf("scores"))
        })
        // Writes the masked scores, reads nothing.
        .bandwidth(move |_| e * llm::masked_count(rows, cols, cols as i64 - rows as i64) as u64);
    for kernel in ["softmax_rows", "rmsnorm"] {
        let c = s.check(&name(kernel));
        c.named(&format!("{}_bandwidth", name(kernel)))
            .only_backends(gpus)
            .size("rows", rows)
            .size("cols", cols)
            .cases(1)
            .scalar("rows", gen::size::<i32>("rows"))
            .scalar("cols", gen::size::<i32>("cols"));
        if kernel == "rmsnorm" {
            c.scalar("eps", 1e-5f32)
                .input(
                    "x",
                    gen::vec(move |_: &Inputs| rows * cols, values::<T>(-2.0, 2.0)),
                )
                .input("w", gen::vec("cols", values::<T>(-2.0, 2.0)));
        } else {
            c.input(
                "x",
                gen::vec(move |_: &Inputs| rows * cols, values::<T>(-8.0, 8.0)),
            );
        }
        c.output::<T>("y", move |_: &Inputs| rows * cols)
            .launch_with(move |_| launch(llm::rows_launch::<T>(kernel, rows, cols)))
            .tolerance(tolerance::<T>())
            .reference(move |i, o| {
                if kernel == "rmsnorm" {
                    llm::rmsnorm::<T>(cols, i.scalar("eps"), i.buf("x"), i.buf("w"), o.buf("y"))
                } else {
                    llm::softmax_rows::<T>(cols, i.buf("x"), o.buf("y"))
                }
            })
            .bandwidth(move |_| 2 * e * (rows * cols) as u64);
    }
    // RoPE on q of a prefill: tokens × 32 heads × 128.
    let tokens = (n / 4096).max(1);
    s.check(&name("rope"))
        .named(&format!("{}_bandwidth", name("rope")))
        .only_backends(gpus)
        .size("tokens", tokens)
        .cases(1)
        .scalar("tokens", gen::size::<i32>("tokens"))
        .scalar("heads", 32i32)
        .scalar("head_dim", 128i32)
        .scalar("pos0", 0i32)
        .input("inv_freq", llm::rope_inv_freq(500_000.0, 128))
        .inout(
            "x",
            gen::vec(move |_: &Inputs| tokens * 4096, values::<T>(-1.0, 1.0)),
        )
        .launch_with(move |_| launch(llm::rope_launch::<T>("rope", tokens, 32, 128)))
        .tolerance(tolerance::<T>())
        .reference(|i, o| llm::rope::<T>(32, 128, 0, i.buf("inv_freq"), o.buf("x")))
        .bandwidth(move |_| 2 * e * (tokens * 4096) as u64);
}

/// A check of a row kernel (`softmax_rows`, `rmsnorm`) in `T` on `rows` × `cols` inputs.
fn row_check<T: Elem>(
    s: &mut Suite,
    kernel: &'static str,
    name: &str,
    rows: std::ops::RangeInclusive<usize>,
    cols: std::ops::RangeInclusive<usize>,
) {
    row_check_by::<T>(s, kernel, name, rows, ("cols", cols, 1));
}

/// [`row_check`] with the columns drawn as `(size name, range, step)`: `cols = size * step`
/// (rows of multiples of 4 columns take the half kernels' 8-byte path).
fn row_check_by<T: Elem>(
    s: &mut Suite,
    kernel: &'static str,
    name: &str,
    rows: std::ops::RangeInclusive<usize>,
    (size, range, step): (&'static str, std::ops::RangeInclusive<usize>, usize),
) {
    let cols_of = move |i: &Inputs| i.size(size) * step;
    let c = s.check(&T::kernel(kernel));
    c.named(&T::kernel(name))
        .size("rows", rows)
        .size(size, range)
        .scalar("rows", gen::size::<i32>("rows"))
        .scalar("cols", gen::from_sizes(move |i| cols_of(i) as i32));
    let len = move |i: &Inputs| i.size("rows") * cols_of(i);
    if kernel == "rmsnorm" {
        c.scalar("eps", 1e-5f32)
            .input("x", gen::vec(len, values::<T>(-2.0, 2.0)))
            .input("w", gen::vec(cols_of, values::<T>(-2.0, 2.0)));
    } else {
        c.input("x", gen::vec(len, values::<T>(-8.0, 8.0)));
    }
    c.output::<T>("y", len)
        .launch_with(move |i| launch(llm::rows_launch::<T>(kernel, i.size("rows"), cols_of(i))))
        .tolerance(tolerance::<T>())
        .reference(move |i, o| {
            if kernel == "rmsnorm" {
                llm::rmsnorm::<T>(
                    cols_of(i),
                    i.scalar("eps"),
                    i.buf("x"),
                    i.buf("w"),
                    o.buf("y"),
                )
            } else {
                llm::softmax_rows::<T>(cols_of(i), i.buf("x"), o.buf("y"))
            }
        });
}

/// A check of the attention kernel in `T` for `head_dim`: `seq_q` queries over `seq_q + past`
/// keys.
fn attention_check<T: Elem>(
    s: &mut Suite,
    head_dim: usize,
    causal: bool,
    name: &str,
    heads: std::ops::RangeInclusive<usize>,
    seq_q: std::ops::RangeInclusive<usize>,
    past: std::ops::RangeInclusive<usize>,
) {
    let kernel = llm::attention_kernel::<T>(head_dim).expect("a supported head_dim");
    let shape = move |i: &Inputs| llm::AttentionShape {
        heads: i.size("heads"),
        seq_q: i.size("seq_q"),
        seq_k: i.size("seq_q") + i.size("past"),
        head_dim,
        causal,
    };
    let q_len = move |i: &Inputs| {
        let s = shape(i);
        s.heads * s.seq_q * head_dim
    };
    let kv_len = move |i: &Inputs| {
        let s = shape(i);
        s.heads * s.seq_k * head_dim
    };
    let scale = 1.0 / (head_dim as f32).sqrt();
    s.check(&kernel)
        .named(&T::kernel(name))
        .size("heads", heads)
        .size("seq_q", seq_q)
        .size("past", past)
        .scalar("seq_q", gen::size::<i32>("seq_q"))
        .scalar("seq_k", gen::from_sizes(move |i| shape(i).seq_k as i32))
        .scalar("causal", i32::from(causal))
        .scalar("scale", scale)
        .input("q", gen::vec(q_len, values::<T>(-2.0, 2.0)))
        .input("k", gen::vec(kv_len, values::<T>(-2.0, 2.0)))
        .input("v", gen::vec(kv_len, values::<T>(-1.0, 1.0)))
        .output::<T>("o", q_len)
        .cases(12)
        .launch_with(move |i| {
            let s = shape(i);
            launch(llm::attention_launch::<T>(
                s.heads, s.seq_q, s.seq_k, head_dim, causal,
            ))
        })
        .tolerance(attention_tolerance::<T>())
        .reference(move |i, o| {
            llm::attention::<T>(
                shape(i),
                scale,
                i.buf("q"),
                i.buf("k"),
                i.buf("v"),
                o.buf("o"),
            )
        });
}

/// The decode attention's checks in `T` (`kernels/decode.hip`): several sequences of different
/// context lengths (rarely multiples of the 16-token block), one token, contexts over several
/// passes of 256 tokens, block tables drawn at random over a pool of blocks (shuffled, some
/// blocks shared), 1 to 3 kv heads of 1 to 8 query heads each (GQA, odd groups too); the split
/// kernel with partitions of 16 to 64 tokens and of 512, and the merge with any head_dim.
fn decode_checks<T: Elem>(s: &mut Suite) {
    for d in [64, 128] {
        let whole = |name: &str| format!("paged_decode_d{d}{name}");
        paged_check::<T>(s, d, &whole(""), 1..=4, 1..=300, None);
        paged_check::<T>(s, d, &whole("_one_token"), 1..=3, 1..=1, None);
        paged_check::<T>(s, d, &whole("_long"), 1..=2, 500..=1100, None);
        paged_check::<T>(s, d, &whole("_split"), 1..=4, 1..=300, Some(1..=4));
        paged_check::<T>(s, d, &whole("_split_one_token"), 1..=3, 1..=1, Some(1..=2));
        paged_check::<T>(s, d, &whole("_split_512"), 1..=2, 1..=1300, Some(32..=32));
    }
    let (max_parts, partition) = (9usize, dec::PARTITION);
    let len = move |i: &Inputs| i.size("seqs") * i.size("heads") * max_parts;
    let out_len = |i: &Inputs| i.size("seqs") * i.size("heads") * i.size("head_dim");
    s.check(&T::kernel("paged_decode_reduce"))
        .size("seqs", 1..=3)
        .size("heads", 1..=5)
        .size("head_dim", 1..=160)
        .scalar("num_seqs", gen::size::<i32>("seqs"))
        .scalar("heads", gen::size::<i32>("heads"))
        .scalar("head_dim", gen::size::<i32>("head_dim"))
        .scalar("partition_size", partition as i32)
        .scalar("max_parts", max_parts as i32)
        .input(
            "context_lens",
            gen::vec("seqs", 1i32..=(max_parts * partition) as i32),
        )
        .input("max_logits", gen::vec(len, -20.0f32..20.0))
        .input("exp_sums", gen::vec(len, 1.0f32..100.0))
        .input(
            "tmp_out",
            gen::vec(move |i: &Inputs| len(i) * i.size("head_dim"), -1.0f32..1.0),
        )
        .output::<T>("out", out_len)
        .launch_with(|i| {
            launch(dec::reduce_launch::<T>(
                i.size("seqs"),
                i.size("heads"),
                i.size("head_dim"),
            ))
        })
        .tolerance(tolerance::<T>())
        .reference(move |i, o| {
            dec::paged_decode_reduce::<T>(
                i.size("heads"),
                i.size("head_dim"),
                partition,
                max_parts,
                i.buf("context_lens"),
                i.buf("max_logits"),
                i.buf("exp_sums"),
                i.buf("tmp_out"),
                o.buf("out"),
            )
        });
}

/// A check of the paged decode attention in `T`: the whole-context kernel, or with
/// `part_blocks` the split one (partitions of 16 × part_blocks tokens) and its partials.
fn paged_check<T: Elem>(
    s: &mut Suite,
    head_dim: usize,
    name: &str,
    seqs: std::ops::RangeInclusive<usize>,
    ctx: std::ops::RangeInclusive<i32>,
    part_blocks: Option<std::ops::RangeInclusive<usize>>,
) {
    let max_ctx = *ctx.end() as usize;
    let max_blocks = max_ctx.div_ceil(dec::DEC_BLOCK);
    // The pool the tables point into: twice the blocks one sequence needs (and at least 8).
    let pool = (2 * max_blocks).max(8);
    let shape = move |i: &Inputs| PagedShape {
        num_seqs: i.size("seqs"),
        heads: i.size("kv_heads") * i.size("group"),
        kv_heads: i.size("kv_heads"),
        head_dim,
        max_blocks,
    };
    let q_len = move |i: &Inputs| {
        let s = shape(i);
        s.num_seqs * s.heads * head_dim
    };
    let cache_len = move |i: &Inputs| pool * dec::DEC_BLOCK * i.size("kv_heads") * head_dim;
    let scale = 1.0 / (head_dim as f32).sqrt();
    let kernel = match part_blocks {
        None => dec::attention_kernel::<T>(head_dim),
        Some(_) => dec::partition_kernel::<T>(head_dim),
    }
    .expect("a supported head_dim");
    let c = s.check(&kernel);
    c.named(&T::kernel(name))
        .size("seqs", seqs)
        .size("kv_heads", 1..=3)
        .size("group", 1..=dec::DEC_MAX_GROUP)
        .scalar("num_seqs", gen::size::<i32>("seqs"))
        .scalar("heads", gen::from_sizes(move |i| shape(i).heads as i32))
        .scalar("kv_heads", gen::size::<i32>("kv_heads"))
        .scalar("max_blocks", max_blocks as i32);
    let partition = move |i: &Inputs| dec::DEC_BLOCK * i.size("part_blocks");
    let max_parts = move |i: &Inputs| dec::partitions(max_ctx, partition(i));
    if let Some(pb) = part_blocks.clone() {
        c.size("part_blocks", pb)
            .scalar(
                "partition_size",
                gen::from_sizes(move |i| partition(i) as i32),
            )
            .scalar("max_parts", gen::from_sizes(move |i| max_parts(i) as i32));
    }
    c.scalar("scale", scale)
        .input("q", gen::vec(q_len, values::<T>(-2.0, 2.0)))
        .input("k_cache", gen::vec(cache_len, values::<T>(-2.0, 2.0)))
        .input("v_cache", gen::vec(cache_len, values::<T>(-1.0, 1.0)))
        .input(
            "block_tables",
            gen::vec(
                move |i: &Inputs| i.size("seqs") * max_blocks,
                0i32..pool as i32,
            ),
        )
        .input("context_lens", gen::vec("seqs", ctx))
        .cases(12);
    if part_blocks.is_none() {
        c.output::<T>("out", q_len)
            .launch_with(move |i| launch(dec::attention_launch::<T>(shape(i))))
            .tolerance(tolerance::<T>())
            .reference(move |i, o| {
                dec::paged_decode_attention::<T>(
                    shape(i),
                    scale,
                    i.buf("q"),
                    i.buf("k_cache"),
                    i.buf("v_cache"),
                    i.buf("block_tables"),
                    i.buf("context_lens"),
                    o.buf("out"),
                )
            });
        return;
    }
    // Partitions past a context are not written: those elements stay 0 on both sides.
    let part_len = move |i: &Inputs| i.size("seqs") * shape(i).heads * max_parts(i);
    c.output_zeroed::<f32>("max_logits", part_len)
        .output_zeroed::<f32>("exp_sums", part_len)
        .output_zeroed::<f32>("tmp_out", move |i: &Inputs| part_len(i) * head_dim)
        .launch_with(move |i| {
            launch(dec::partition_launch::<T>(
                shape(i),
                partition(i),
                max_parts(i),
            ))
        })
        // f32 partials of exact inputs: the f32 rule (see the top of this file).
        .tolerance(Tolerance::close(1e-5, 1e-5))
        .reference(move |i, o| {
            let mut ml = o.buf::<f32>("max_logits").to_vec();
            let mut es = o.buf::<f32>("exp_sums").to_vec();
            dec::paged_decode_partition::<T>(
                shape(i),
                partition(i),
                max_parts(i),
                scale,
                i.buf("q"),
                i.buf("k_cache"),
                i.buf("v_cache"),
                i.buf("block_tables"),
                i.buf("context_lens"),
                &mut ml,
                &mut es,
                o.buf("tmp_out"),
            );
            o.buf::<f32>("max_logits").copy_from_slice(&ml);
            o.buf::<f32>("exp_sums").copy_from_slice(&es);
        });
}

/// Logits of a few values, half a unit apart: ties everywhere (the tie rule decides which ids
/// the top-k keeps and in which order the tokens are drawn).
fn tied_logits() -> impl Strategy<Value = f32> + Send + Sync + Clone + 'static {
    (-6i32..=6).prop_map(|x| x as f32 * 0.5)
}

/// The sampler's checks (f32 logits): the chunks' top-k at odd vocabularies (1000, 32003) with
/// distinct and with tied logits; the draw with top-k 1 (greedy), top-p 1, temperatures from
/// 0 (greedy) to 20; the token ids compared exactly.
fn sampler_checks(s: &mut Suite) {
    for (name, vocab, tied) in [
        ("sample_topk_chunks_v1000", 1000, false),
        ("sample_topk_chunks_v1000_ties", 1000, true),
        ("sample_topk_chunks_v32003", 32003, false),
        ("sample_topk_chunks_v32003_ties", 32003, true),
        ("sample_topk_chunks_v4096_ties", 4096, true),
    ] {
        let chunks = dec::sample_chunks(vocab);
        let cand = move |i: &Inputs| i.size("batch") * chunks * i.size("top_k");
        let c = s.check("sample_topk_chunks");
        c.named(name)
            .size("batch", 1..=3)
            .size("top_k", 1..=dec::SAMPLE_K_MAX)
            .scalar("batch", gen::size::<i32>("batch"))
            .scalar("vocab", vocab as i32)
            .scalar("top_k", gen::size::<i32>("top_k"));
        let len = move |i: &Inputs| i.size("batch") * vocab;
        if tied {
            c.input("logits", gen::vec(len, tied_logits()));
        } else {
            c.input("logits", gen::vec(len, -10.0f32..10.0));
        }
        c.output::<f32>("cand_logits", cand)
            .output::<i32>("cand_ids", cand)
            .cases(8)
            .launch_with(move |i| {
                launch(dec::sample_chunks_launch(
                    i.size("batch"),
                    vocab,
                    i.size("top_k"),
                ))
            })
            .tolerance(Tolerance::exact())
            .reference(move |i, o| {
                let (cl, ci) = o.pair::<f32, i32>("cand_logits", "cand_ids");
                dec::sample_topk_chunks(vocab, i.size("top_k"), i.buf("logits"), cl, ci)
            });
    }

    type Param = (
        std::ops::RangeInclusive<usize>,
        std::ops::RangeInclusive<f32>,
        std::ops::RangeInclusive<f32>,
    );
    let variants: [(&str, Param); 6] = [
        ("sample_topk_topp", (1..=128, 0.3..=0.99, 0.2..=2.0)),
        ("sample_greedy_k1", (1..=1, 0.9..=0.9, 1.0..=1.0)),
        ("sample_top_p_one", (1..=128, 1.0..=1.0, 0.5..=1.5)),
        ("sample_temperature_zero", (1..=64, 0.9..=0.9, 0.0..=0.0)),
        ("sample_hot", (1..=128, 0.95..=0.95, 5.0..=20.0)),
        ("sample_cold", (1..=128, 0.8..=0.8, 0.01..=0.1)),
    ];
    for (name, (top_k, top_p, temperature)) in variants {
        let n_cand = |i: &Inputs| i.size("chunks") * i.size("top_k");
        s.check("sample_topk_topp")
            .named(name)
            .size("batch", 1..=4)
            .size("chunks", 1..=8)
            .size("top_k", top_k)
            .scalar("batch", gen::size::<i32>("batch"))
            .scalar("n_cand", gen::from_sizes(move |i| n_cand(i) as i32))
            .scalar("top_k", gen::size::<i32>("top_k"))
            .scalar("top_p", gen::value(top_p))
            .scalar("temperature", gen::value(temperature))
            .scalar("seed", gen::value(rocm_test::proptest::num::u64::ANY))
            .input(
                "cand_logits",
                gen::vec(move |i: &Inputs| i.size("batch") * n_cand(i), tied_logits()),
            )
            .input(
                "cand_ids",
                gen::vec(move |i: &Inputs| i.size("batch") * n_cand(i), -1i32..32000),
            )
            .output::<i32>("tokens", "batch")
            .cases(16)
            .launch_with(move |i| {
                launch(dec::sample_launch(
                    i.size("batch"),
                    n_cand(i),
                    i.size("top_k"),
                ))
            })
            .tolerance(Tolerance::exact())
            .reference(move |i, o| {
                let p = Sampling {
                    top_k: i.size("top_k"),
                    top_p: i.scalar("top_p"),
                    temperature: i.scalar("temperature"),
                    seed: i.scalar("seed"),
                };
                dec::sample_topk_topp(
                    n_cand(i),
                    p,
                    i.buf("cand_logits"),
                    i.buf("cand_ids"),
                    o.buf("tokens"),
                )
            });
    }
}
