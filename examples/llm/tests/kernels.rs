//! Checks every kernel in `kernels/llm.hip` against its Rust reference in `src/lib.rs`, with
//! generated shapes (odd sizes, one row, sequences that are not multiples of the attention tile)
//! and values, on every backend that can run here (one trial per check × backend × target).
//!
//! Tolerances: the default, |got - want| <= 1e-5 + 1e-5 |want|, for every kernel whose result
//! comes from a few f32 operations per element (scale, mask, SwiGLU, RoPE), or from reductions
//! whose terms are bounded (softmax: sums of values in (0, 1]; RMSNorm: a mean of squares; the
//! attention: dot products of length head_dim and a convex combination of values in [-1, 1]).
//! `matmul` sums k products in f32: its rounding error grows like sqrt(k) 2^-24 sum |a b| (and
//! in the worst case like k 2^-24 sum |a b|), so its tolerance is absolute 1e-5 per 32 terms of k.
//!
//! Run with `cargo rocm test` (a summary table, JSON, JUnit) or `cargo test --test kernels`.

use llm_kernels as llm;
use rocm_kernels::Backend;
use rocm_test::{gen, Inputs, Launch, Suite, Tolerance};

/// The launch the crate's wrapper computes; a refused shape fails the trial with the reason.
fn launch(r: Result<Launch, llm::ShapeError>) -> Launch {
    r.unwrap_or_else(|e| panic!("{e}"))
}

fn main() -> std::process::ExitCode {
    rocm_test::main(llm::KERNELS, |s| {
        s.check("scale")
            .size("n", 1..=5000)
            .scalar("n", gen::size::<i32>("n"))
            .scalar("s", gen::value(-4.0f32..4.0))
            .input("x", gen::vec("n", -1.0f32..1.0))
            .output::<f32>("y", "n")
            .launch_with(|i| launch(llm::vec_launch("scale", i.size("n"))))
            .reference(|i, o| llm::scale(i.scalar("s"), i.buf("x"), o.buf("y")));

        let mask_len = |i: &Inputs| i.size("batch") * i.size("rows") * i.size("cols");
        s.check("causal_mask")
            .size("batch", 1..=3)
            .size("rows", 1..=40)
            .size("cols", 1..=90)
            .scalar("batch", gen::size::<i32>("batch"))
            .scalar("rows", gen::size::<i32>("rows"))
            .scalar("cols", gen::size::<i32>("cols"))
            .scalar("offset", gen::value(-4i32..60))
            .inout("scores", gen::vec(mask_len, -4.0f32..4.0))
            .launch_with(move |i| launch(llm::elementwise_launch("causal_mask", mask_len(i))))
            .reference(|i, o| {
                let (rows, cols) = (i.size("rows"), i.size("cols"));
                llm::causal_mask(rows, cols, i.scalar("offset"), o.buf("scores"))
            });

        row_check(s, "softmax_rows", "softmax_rows", 1..=9, 1..=700);
        row_check(s, "softmax_rows", "softmax_one_row", 1..=1, 1..=2100);
        row_check(s, "rmsnorm", "rmsnorm", 1..=9, 1..=700);
        row_check(s, "rmsnorm", "rmsnorm_one_row", 1..=1, 1..=2100);
        // Rows longer than the values a thread keeps in registers (ROW_BLOCK × ROW_CACHE = 4096
        // in kernels/llm.hip): the columns past them are read again in each pass.
        row_check(s, "softmax_rows", "softmax_long_rows", 1..=2, 4000..=4500);
        row_check(s, "rmsnorm", "rmsnorm_long_rows", 1..=2, 4000..=4500);

        s.check("swiglu")
            .size("n", 1..=5000)
            .scalar("n", gen::size::<i32>("n"))
            .input("gate", gen::vec("n", -8.0f32..8.0))
            .input("up", gen::vec("n", -2.0f32..2.0))
            .output::<f32>("y", "n")
            .launch_with(|i| launch(llm::vec_launch("swiglu", i.size("n"))))
            .reference(|i, o| llm::swiglu(i.buf("gate"), i.buf("up"), o.buf("y")));

        // The original RoPE base at head_dim 64, Llama 3's at 128; positions up to 4096.
        for (name, head_dim, theta) in [("rope_d64", 64, 10_000.0), ("rope_d128", 128, 500_000.0)] {
            s.check("rope")
                .named(name)
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
                        -1.0f32..1.0,
                    ),
                )
                .launch_with(move |i| {
                    launch(llm::rope_launch(
                        "rope",
                        i.size("tokens"),
                        i.size("heads"),
                        head_dim,
                    ))
                })
                .reference(move |i, o| {
                    let pos0 = i.scalar::<i32>("pos0") as usize;
                    llm::rope(
                        i.size("heads"),
                        head_dim,
                        pos0,
                        i.buf("inv_freq"),
                        o.buf("x"),
                    )
                });
        }

        // New tokens at pos0 .. pos0 + tokens of a cache with `spare` free positions after them.
        let kv_len = |i: &Inputs| {
            (i.size("pos0") + i.size("tokens") + i.size("spare")) * i.size("kv_heads") * 64
        };
        s.check("rope_kv_append")
            .size("tokens", 1..=7)
            .size("kv_heads", 1..=4)
            .size("pos0", 0..=40)
            .size("spare", 0..=3)
            .scalar("tokens", gen::size::<i32>("tokens"))
            .scalar("kv_heads", gen::size::<i32>("kv_heads"))
            .scalar("head_dim", 64i32)
            .scalar("pos0", gen::size::<i32>("pos0"))
            .scalar(
                "max_seq",
                gen::from_sizes(|i| (i.size("pos0") + i.size("tokens") + i.size("spare")) as i32),
            )
            .input("inv_freq", llm::rope_inv_freq(10_000.0, 64))
            .input(
                "k",
                gen::vec(
                    |i: &Inputs| i.size("tokens") * i.size("kv_heads") * 64,
                    -1.0f32..1.0,
                ),
            )
            .input(
                "v",
                gen::vec(
                    |i: &Inputs| i.size("tokens") * i.size("kv_heads") * 64,
                    -1.0f32..1.0,
                ),
            )
            .inout("k_cache", gen::vec(kv_len, -1.0f32..1.0))
            .inout("v_cache", gen::vec(kv_len, -1.0f32..1.0))
            .launch_with(|i| {
                let max_seq = i.size("pos0") + i.size("tokens") + i.size("spare");
                launch(llm::rope_kv_append_launch(
                    i.size("tokens"),
                    i.size("kv_heads"),
                    64,
                    i.size("pos0"),
                    max_seq,
                ))
            })
            .reference(|i, o| {
                let (kc, vc) = o.pair::<f32, f32>("k_cache", "v_cache");
                llm::rope_kv_append(
                    i.size("kv_heads"),
                    64,
                    i.size("pos0"),
                    i.buf("inv_freq"),
                    i.buf("k"),
                    i.buf("v"),
                    kc,
                    vc,
                )
            });

        for head_dim in [64, 128] {
            for causal in [false, true] {
                let mask = if causal { "causal" } else { "full" };
                // Sequences up to a few tiles of keys (FA_BN = 32), rarely multiples of it.
                attention_check(
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
            attention_check(
                s,
                head_dim,
                true,
                &format!("attention_d{head_dim}_one"),
                1..=1,
                1..=1,
                0..=0,
            );
            attention_check(
                s,
                head_dim,
                true,
                &format!("attention_d{head_dim}_decode"),
                1..=2,
                1..=1,
                1..=130,
            );
        }

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

        bandwidth_checks(s);
    })
}

/// The memory-bound kernels at a large size on the GPUs, each timed against a device-to-device
/// copy of as many bytes (printed, and in `cargo rocm test`'s JSON; a slow result never fails).
/// `LLM_BANDWIDTH_N` sets the element count (default 2^26, 256 MiB a buffer). Their trials on the
/// cpu backend are ignored, saying so.
fn bandwidth_checks(s: &mut Suite) {
    let n: usize = std::env::var("LLM_BANDWIDTH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1 << 26);
    let gpus = [Backend::Amd, Backend::Nvidia];
    let f = 4u64; // bytes a float
    s.check("scale")
        .named("scale_bandwidth")
        .only_backends(gpus)
        .size("n", n)
        .cases(1)
        .scalar("n", gen::size::<i32>("n"))
        .scalar("s", 0.5f32)
        .input("x", gen::vec("n", -1.0f32..1.0))
        .output::<f32>("y", "n")
        .launch_with(|i| launch(llm::vec_launch("scale", i.size("n"))))
        .reference(|i, o| llm::scale(i.scalar("s"), i.buf("x"), o.buf("y")))
        .bandwidth(move |i| 2 * f * i.size("n") as u64);
    s.check("swiglu")
        .named("swiglu_bandwidth")
        .only_backends(gpus)
        .size("n", n)
        .cases(1)
        .scalar("n", gen::size::<i32>("n"))
        .input("gate", gen::vec("n", -8.0f32..8.0))
        .input("up", gen::vec("n", -2.0f32..2.0))
        .output::<f32>("y", "n")
        .launch_with(|i| launch(llm::vec_launch("swiglu", i.size("n"))))
        .reference(|i, o| llm::swiglu(i.buf("gate"), i.buf("up"), o.buf("y")))
        .bandwidth(move |i| 3 * f * i.size("n") as u64);
    let (rows, cols) = ((n / 4096).max(1), 4096);
    s.check("causal_mask")
        .named("causal_mask_bandwidth")
        .only_backends(gpus)
        .size("rows", rows)
        .size("cols", cols)
        .cases(1)
        .scalar("batch", 1i32)
        .scalar("rows", gen::size::<i32>("rows"))
        .scalar("cols", gen::size::<i32>("cols"))
        .scalar("offset", 0i32)
        .inout(
            "scores",
            gen::vec(move |_: &Inputs| rows * cols, -4.0f32..4.0),
        )
        .launch_with(move |_| launch(llm::elementwise_launch("causal_mask", rows * cols)))
        .reference(move |i, o| llm::causal_mask(rows, cols, i.scalar("offset"), o.buf("scores")))
        // Reads every score, writes the masked half.
        .bandwidth(move |_| f * (rows * cols + rows * cols / 2) as u64);
    for kernel in ["softmax_rows", "rmsnorm"] {
        let c = s.check(kernel);
        c.named(&format!("{kernel}_bandwidth"))
            .only_backends(gpus)
            .size("rows", rows)
            .size("cols", cols)
            .cases(1)
            .scalar("rows", gen::size::<i32>("rows"))
            .scalar("cols", gen::size::<i32>("cols"));
        if kernel == "rmsnorm" {
            c.scalar("eps", 1e-5f32)
                .input("x", gen::vec(move |_: &Inputs| rows * cols, -2.0f32..2.0))
                .input("w", gen::vec("cols", -2.0f32..2.0));
        } else {
            c.input("x", gen::vec(move |_: &Inputs| rows * cols, -8.0f32..8.0));
        }
        c.output::<f32>("y", move |_: &Inputs| rows * cols)
            .launch_with(move |_| launch(llm::rows_launch(kernel, rows, cols)))
            .reference(move |i, o| {
                if kernel == "rmsnorm" {
                    llm::rmsnorm(cols, i.scalar("eps"), i.buf("x"), i.buf("w"), o.buf("y"))
                } else {
                    llm::softmax_rows(cols, i.buf("x"), o.buf("y"))
                }
            })
            .bandwidth(move |_| 2 * f * (rows * cols) as u64);
    }
    // RoPE on q of a prefill: tokens × 32 heads × 128.
    let tokens = (n / 4096).max(1);
    s.check("rope")
        .named("rope_bandwidth")
        .only_backends(gpus)
        .size("tokens", tokens)
        .cases(1)
        .scalar("tokens", gen::size::<i32>("tokens"))
        .scalar("heads", 32i32)
        .scalar("head_dim", 128i32)
        .scalar("pos0", 0i32)
        .input("inv_freq", llm::rope_inv_freq(500_000.0, 128))
        .inout("x", gen::vec(move |_: &Inputs| tokens * 4096, -1.0f32..1.0))
        .launch_with(move |_| launch(llm::rope_launch("rope", tokens, 32, 128)))
        .reference(|i, o| llm::rope(32, 128, 0, i.buf("inv_freq"), o.buf("x")))
        .bandwidth(move |_| 2 * f * (tokens * 4096) as u64);
}

/// A check of a row kernel (`softmax_rows`, `rmsnorm`) on `rows` × `cols` inputs.
fn row_check(
    s: &mut Suite,
    kernel: &'static str,
    name: &str,
    rows: std::ops::RangeInclusive<usize>,
    cols: std::ops::RangeInclusive<usize>,
) {
    let c = s.check(kernel);
    c.named(name)
        .size("rows", rows)
        .size("cols", cols)
        .scalar("rows", gen::size::<i32>("rows"))
        .scalar("cols", gen::size::<i32>("cols"));
    let len = |i: &Inputs| i.size("rows") * i.size("cols");
    if kernel == "rmsnorm" {
        c.scalar("eps", 1e-5f32)
            .input("x", gen::vec(len, -2.0f32..2.0))
            .input("w", gen::vec("cols", -2.0f32..2.0));
    } else {
        c.input("x", gen::vec(len, -8.0f32..8.0));
    }
    c.output::<f32>("y", len)
        .launch_with(move |i| launch(llm::rows_launch(kernel, i.size("rows"), i.size("cols"))))
        .reference(move |i, o| {
            if kernel == "rmsnorm" {
                llm::rmsnorm(
                    i.size("cols"),
                    i.scalar("eps"),
                    i.buf("x"),
                    i.buf("w"),
                    o.buf("y"),
                )
            } else {
                llm::softmax_rows(i.size("cols"), i.buf("x"), o.buf("y"))
            }
        });
}

/// A check of the attention kernel for `head_dim`: `seq_q` queries over `seq_q + past` keys.
fn attention_check(
    s: &mut Suite,
    head_dim: usize,
    causal: bool,
    name: &str,
    heads: std::ops::RangeInclusive<usize>,
    seq_q: std::ops::RangeInclusive<usize>,
    past: std::ops::RangeInclusive<usize>,
) {
    let kernel = llm::attention_kernel(head_dim).expect("a supported head_dim");
    let shape = move |i: &Inputs| llm::AttentionShape {
        heads: i.size("heads"),
        seq_q: i.size("seq_q"),
        seq_k: i.size("seq_q") + i.size("past"),
        head_dim,
        causal,
    };
    let scale = 1.0 / (head_dim as f32).sqrt();
    s.check(kernel)
        .named(name)
        .size("heads", heads)
        .size("seq_q", seq_q)
        .size("past", past)
        .scalar("seq_q", gen::size::<i32>("seq_q"))
        .scalar("seq_k", gen::from_sizes(move |i| shape(i).seq_k as i32))
        .scalar("causal", i32::from(causal))
        .scalar("scale", scale)
        .input(
            "q",
            gen::vec(
                move |i: &Inputs| {
                    let s = shape(i);
                    s.heads * s.seq_q * head_dim
                },
                -2.0f32..2.0,
            ),
        )
        .input(
            "k",
            gen::vec(
                move |i: &Inputs| {
                    let s = shape(i);
                    s.heads * s.seq_k * head_dim
                },
                -2.0f32..2.0,
            ),
        )
        .input(
            "v",
            gen::vec(
                move |i: &Inputs| {
                    let s = shape(i);
                    s.heads * s.seq_k * head_dim
                },
                -1.0f32..1.0,
            ),
        )
        .output::<f32>("o", move |i: &Inputs| {
            let s = shape(i);
            s.heads * s.seq_q * head_dim
        })
        .cases(12)
        .launch_with(move |i| {
            let s = shape(i);
            launch(llm::attention_launch(
                s.heads, s.seq_q, s.seq_k, head_dim, causal,
            ))
        })
        .reference(move |i, o| {
            llm::attention(
                shape(i),
                scale,
                i.buf("q"),
                i.buf("k"),
                i.buf("v"),
                o.buf("o"),
            )
        });
}
