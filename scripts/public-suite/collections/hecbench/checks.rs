//! The checks of the HeCBench kernels (zjin-lcf/HeCBench, the `*-hip` programs): one function
//! per program, registering a check for each of its kernels. The kernels are the programs' own,
//! unedited, read from a checkout outside this repository; launch shapes are the programs'
//! (block sizes from their host code), problem sizes are small.
//!
//! Where the result is a few lines of Rust, the check has a Rust reference written from what
//! the program computes (its own host reference where it has one); otherwise it is
//! differential: the cpu backend's outputs for the same inputs (on a GPU), or the snapshot
//! recorded on an H100 (on the cpu backend).

use rocm_kernels::half;
use rocm_kernels::vector::{Float2, Float3, Float4};
use rocm_test::{gen, Inputs, Launch, Outputs, Suite, Tolerance};

/// popcount: six population counts of 64-bit words, blocks of 256.
pub fn popcount(s: &mut Suite) {
    for k in ["pc1", "pc2", "pc3", "pc4", "pc5", "pc6"] {
        s.check(k)
            .size("n", 1..=3000)
            .input("data", gen::vec("n", rocm_test::proptest::num::u64::ANY))
            .output::<i32>("r", "n")
            .scalar("length", gen::size::<i32>("n"))
            .launch_with(|i| Launch::cover(i.size("n"), 256))
            .reference(|i, o| {
                for (r, d) in o.buf::<i32>("r").iter_mut().zip(i.buf::<u64>("data")) {
                    *r = d.count_ones() as i32;
                }
            });
    }
}

fn silu_ref(x: f32) -> f32 {
    x / (1.0 + (-x).exp())
}

fn silu_grad(x: f32) -> f32 {
    let sig = 1.0 / (1.0 + (-x).exp());
    sig * (1.0 + x * (1.0 - sig))
}

/// silu: the SiLU activation forward (two kernels) and backward (three), blocks of 64 to 1024
/// (here 256); the vectorised kernels (`2`, `3`) take `N / 4` threads and a tail loop.
pub fn silu(s: &mut Suite) {
    for (k, vec4) in [
        ("silu_forward_kernel", false),
        ("silu_forward_kernel2", true),
    ] {
        s.check(k)
            .size("n", 1..=5000)
            .input("x", gen::vec("n", -8.0f32..8.0))
            .output::<f32>("out", "n")
            .scalar("N", gen::size::<u64>("n"))
            .launch_with(move |i| {
                let n = i.size("n");
                Launch::cover(if vec4 { n / 4 } else { n }.max(1), 256)
            })
            .tolerance(Tolerance::close(1e-5, 1e-5))
            .reference(|i, o| {
                for (y, x) in o.buf::<f32>("out").iter_mut().zip(i.buf::<f32>("x")) {
                    *y = silu_ref(*x);
                }
            });
    }
    for (k, vec4) in [
        ("silu_backward_kernel", false),
        ("silu_backward_kernel2", false),
        ("silu_backward_kernel3", true),
    ] {
        s.check(k)
            .size("n", 1..=5000)
            .input("dout", gen::vec("n", -1.0f32..1.0))
            .input("x", gen::vec("n", -8.0f32..8.0))
            .output::<f32>("dx", "n")
            .scalar("N", gen::size::<u64>("n"))
            .launch_with(move |i| {
                let n = i.size("n");
                Launch::cover(if vec4 { n / 4 } else { n }.max(1), 256)
            })
            .tolerance(Tolerance::close(1e-5, 1e-4))
            .reference(|i, o| {
                let (d, x) = (i.buf::<f32>("dout"), i.buf::<f32>("x"));
                for ((y, d), x) in o.buf::<f32>("dx").iter_mut().zip(d).zip(x) {
                    *y = d * silu_grad(*x);
                }
            });
    }
}

/// relu: ReLU gradients of halves (by `half2`, then by 8 halves a thread) and a ReLU of the
/// four signed bytes of each int; blocks of 256.
pub fn relu(s: &mut Suite) {
    for (k, per_thread) in [("ReluGrad_impl1", 2), ("ReluGrad_impl2", 8)] {
        s.check(k)
            .size("n", 1..=5000)
            .input(
                "gradient",
                gen::vec("n", gen::rounded::<half::f16>(-2.0..2.0)),
            )
            .input(
                "feature",
                gen::vec("n", gen::rounded::<half::f16>(-2.0..2.0)),
            )
            .output::<half::f16>("backprop", "n")
            .scalar("count", gen::size::<i32>("n"))
            .launch_with(move |i| Launch::cover(i.size("n").div_ceil(per_thread), 256))
            .reference(|i, o| {
                let (g, f) = (
                    i.buf::<half::f16>("gradient"),
                    i.buf::<half::f16>("feature"),
                );
                for ((b, g), f) in o.buf::<half::f16>("backprop").iter_mut().zip(g).zip(f) {
                    *b = if f.to_f32() > 0.0 {
                        *g
                    } else {
                        half::f16::ZERO
                    };
                }
            });
    }
    s.check("Relu_impl1")
        .size("n", 1..=5000)
        .scalar("count", gen::size::<i32>("n"))
        .input("input", gen::vec("n", rocm_test::proptest::num::i32::ANY))
        .output::<i32>("output", "n")
        .launch_with(|i| Launch::cover(i.size("n"), 256))
        .reference(|i, o| {
            for (y, x) in o.buf::<i32>("output").iter_mut().zip(i.buf::<i32>("input")) {
                let b = x.to_le_bytes().map(|b| (b as i8).max(0) as u8);
                *y = i32::from_le_bytes(b);
            }
        });
}

fn softmax_rows(i: &Inputs, o: &mut Outputs) {
    let m = i.size("slice");
    let src = i.buf::<f32>("src");
    for (row, out) in src.chunks(m).zip(o.buf::<f32>("dest").chunks_mut(m)) {
        let max = row.iter().fold(f32::MIN, |a, b| a.max(*b));
        let sum: f32 = row.iter().map(|v| (v - max).exp()).sum();
        for (y, v) in out.iter_mut().zip(row) {
            *y = (v - max).exp() / sum;
        }
    }
}

/// softmax: a softmax of each slice, a thread per slice (blocks of 256) or a wave per slice
/// (`softMax2`: blocks of 256 threads, 256 / wave size slices a block).
pub fn softmax(s: &mut Suite) {
    s.check("softMax")
        .size("slices", 1..=600)
        .size("slice", 1..=40)
        .scalar("numSlice", gen::size::<i32>("slices"))
        .scalar("sliceSize", gen::size::<i32>("slice"))
        .input("src", gen::vec(("slices", "slice"), -4.0f32..4.0))
        .output::<f32>("dest", |i: &Inputs| i.size("slices") * i.size("slice"))
        .launch_with(|i| Launch::cover(i.size("slices"), 256))
        .tolerance(Tolerance::close(1e-6, 1e-4))
        .reference(softmax_rows);
    s.check("softMax2")
        .size("slices", 1..=100)
        .size("slice", 1..=200)
        .scalar("numSlice", gen::size::<i32>("slices"))
        .scalar("sliceSize", gen::size::<i32>("slice"))
        .input("src", gen::vec(("slices", "slice"), -4.0f32..4.0))
        .output::<f32>("dest", |i: &Inputs| i.size("slices") * i.size("slice"))
        .launch_with(|i| {
            let per_block = 256 / i.wave_size() as usize;
            Launch::new(i.size("slices").div_ceil(per_block) as u32, 256)
        })
        .tolerance(Tolerance::close(1e-6, 1e-4))
        .reference(softmax_rows);
}

/// reverse: an array reversed through shared memory, in one block of `len` (≤ 256) threads.
pub fn reverse(s: &mut Suite) {
    s.check("reverse")
        .size("len", 1..=256)
        .inout("d", gen::vec("len", rocm_test::proptest::num::i32::ANY))
        .scalar("len", gen::size::<i32>("len"))
        .launch_with(|i| Launch::new(1, i.size("len") as u32))
        .reference(|_, o| o.buf::<i32>("d").reverse());
}

/// matrix-rotate: an n x n matrix rotated a quarter turn clockwise in place, a thread per
/// layer, blocks of 256.
pub fn matrix_rotate(s: &mut Suite) {
    s.check("rotate_matrix_parallel")
        .size("n", 1..=80)
        .inout("matrix", gen::vec(("n", "n"), -1.0f32..1.0))
        .scalar("n", gen::size::<i32>("n"))
        .launch_with(|i| Launch::new((i.size("n") / 2).div_ceil(256).max(1) as u32, 256))
        .tolerance(Tolerance::exact())
        .reference(|i, o| {
            let n = i.size("n");
            let m = o.buf::<f32>("matrix");
            let old = m.to_vec();
            for r in 0..n {
                for c in 0..n {
                    m[r * n + c] = old[(n - 1 - c) * n + r];
                }
            }
        });
}

/// michalewicz: the minimum of the Michalewicz function over vectors of 2, 5 or 10
/// coordinates (a float `atomicMin`), blocks of 256.
pub fn michalewicz(s: &mut Suite) {
    for dim in [2usize, 5, 10] {
        s.check("eval")
            .named(&format!("eval/dim{dim}"))
            .size("n", 1..=3000)
            .input(
                "values",
                gen::vec(move |i: &Inputs| i.size("n") * dim, 0.0f32..4.0),
            )
            .inout("minima", vec![f32::MAX])
            .scalar("nVectors", gen::size::<u64>("n"))
            .scalar("dim", dim as i32)
            .launch_with(|i| Launch::cover(i.size("n"), 256))
            .tolerance(Tolerance::close(1e-5, 1e-4))
            .reference(move |i, o| {
                let v = i.buf::<f32>("values");
                let pi = std::f32::consts::PI;
                let min = v.chunks(dim).map(|x| {
                    -x.iter()
                        .enumerate()
                        .map(|(k, &x)| x.sin() * ((k as f32 + 1.0) * x * x / pi).sin().powi(20))
                        .sum::<f32>()
                });
                o.buf::<f32>("minima")[0] = min.fold(f32::MAX, f32::min);
            });
    }
}

/// atomicAggregate: warp-aggregated atomic increments of `d[threadIdx.x % s]` (`s` from 1 to
/// 32), blocks of 256. The program launches `k` (wave size 32) or `k2` (64) by the device's
/// wave size; each kernel runs at its own.
pub fn atomic_aggregate(s: &mut Suite) {
    for (k, wave) in [("k", 32), ("k2", 64)] {
        s.check(k)
            .size("log_s", 0..=5)
            .size("blocks", 1..=64)
            .inout("d", gen::vec(|i: &Inputs| 1 << i.size("log_s"), 0i32..1))
            .scalar("s", gen::from_sizes(|i| 1i32 << i.size("log_s")))
            .launch_with(|i| Launch::new(i.size("blocks") as u32, 256))
            .only_wave_size(wave)
            .reference(|i, o| {
                let per = (256 >> i.size("log_s")) * i.size("blocks");
                o.buf::<i32>("d").fill(per as i32);
            });
    }
}

/// heat2d: one Jacobi step of the periodic 2D heat equation, blocks of 256 threads covering
/// `Lx * Ly` sites (both multiples of 16).
pub fn heat2d(s: &mut Suite) {
    s.check("dev_lapl_iter")
        .size("lx", 1..=6)
        .size("ly", 1..=6)
        .output::<f32>("out", |i: &Inputs| 256 * i.size("lx") * i.size("ly"))
        .input(
            "in",
            gen::vec(|i: &Inputs| 256 * i.size("lx") * i.size("ly"), -1.0f32..1.0),
        )
        .scalar("delta", 0.1f32 / 1.4)
        .scalar("norm", 1.0f32 / 1.4)
        .scalar("Lx", gen::from_sizes(|i| 16 * i.size("lx") as i32))
        .scalar("Ly", gen::from_sizes(|i| 16 * i.size("ly") as i32))
        .launch_with(|i| Launch::new((i.size("lx") * i.size("ly")) as u32, 256))
        .tolerance(Tolerance::close(1e-6, 1e-5))
        .reference(|i, o| {
            let (lx, ly) = (16 * i.size("lx"), 16 * i.size("ly"));
            let (d, n) = (i.scalar::<f32>("delta"), i.scalar::<f32>("norm"));
            let a = i.buf::<f32>("in");
            let at = |x: usize, y: usize| a[(y % ly) * lx + x % lx];
            for (k, out) in o.buf::<f32>("out").iter_mut().enumerate() {
                let (x, y) = (k % lx, k / lx);
                let nb = at(x + 1, y) + at(x + lx - 1, y) + at(x, y + 1) + at(x, y + ly - 1);
                *out = n * a[k] + d * nb;
            }
        });
}

/// bilateral: bilateral filters of radius 3, 6 and 9 over a float image, 16 x 16 blocks
/// (differential).
pub fn bilateral(s: &mut Suite) {
    for r in [3usize, 6, 9] {
        // The filter reflects at the borders: images wider and taller than its radius.
        s.check(&format!("bilateralFilter<{r}>"))
            .size("w", r + 1..=48)
            .size("h", r + 1..=32)
            .input(
                "in",
                gen::vec(|i: &Inputs| i.size("w") * i.size("h"), 0.0f32..1.0),
            )
            .output::<f32>("out", |i: &Inputs| i.size("w") * i.size("h"))
            .scalar("w", gen::size::<i32>("w"))
            .scalar("h", gen::size::<i32>("h"))
            .scalar("a_square", 0.5f32)
            .scalar("variance_I", 0.1f32)
            .scalar("variance_spatial", 4.0f32)
            .launch_with(|i| {
                let (w, h) = (i.size("w") as u32, i.size("h") as u32);
                Launch::new((w.div_ceil(16), h.div_ceil(16)), (16, 16))
            })
            .tolerance(Tolerance::close(1e-5, 1e-4))
            .cases(8)
            .differential();
    }
}

/// channelShuffle: channel shuffles of NCHW tensors (a block of 256 per plane segment, `N`
/// on the grid's y or x) and NHWC tensors (a block per pixel, its channels in shared memory of
/// 32, 128 or 512).
pub fn channel_shuffle(s: &mut Suite) {
    for (k, n_first) in [
        ("ChannelShuffleNCHWKernel<float, false>", false),
        ("ChannelShuffleNCHWKernel<float, true>", true),
    ] {
        s.check(k)
            .size("n", 1..=3)
            .size("g", 1..=4)
            .size("k", 1..=6)
            .size("hw", 1..=600)
            .scalar("G", gen::size::<i32>("g"))
            .scalar("K", gen::size::<i32>("k"))
            .scalar("HxW", gen::size::<i32>("hw"))
            .input("X", gen::vec(|i: &Inputs| shuffle_len(i), -1.0f32..1.0))
            .output::<f32>("Y", shuffle_len)
            .launch_with(move |i| {
                let (n, c) = (i.size("n") as u32, (i.size("g") * i.size("k")) as u32);
                let s = i.size("hw").div_ceil(256) as u32;
                let grid = if n_first { (n, s, c) } else { (s, n, c) };
                Launch::new(grid, 256)
            })
            .tolerance(Tolerance::exact())
            .reference(|i, o| {
                let (g, k, hw) = (i.size("g"), i.size("k"), i.size("hw"));
                let x = i.buf::<f32>("X");
                for (p, y) in o.buf::<f32>("Y").chunks_mut(hw).enumerate() {
                    let (n, c) = (p / (g * k), p % (g * k));
                    let src = (n * g * k + (c % g) * k + c / g) * hw;
                    y.copy_from_slice(&x[src..src + hw]);
                }
            });
    }
    for (shared, max_c) in [(32usize, 32usize), (128, 128), (512, 512)] {
        s.check(&format!("ChannelShuffleNHWCKernel<float, {shared}>"))
            .size("n", 1..=2)
            .size("g", 1..=8)
            .size("k", 1..=max_c / 8)
            .size("hw", 1..=40)
            .scalar("G", gen::size::<i32>("g"))
            .scalar("K", gen::size::<i32>("k"))
            .input("X", gen::vec(|i: &Inputs| shuffle_len(i), -1.0f32..1.0))
            .output::<f32>("Y", shuffle_len)
            .launch_with(|i| Launch::new((i.size("n") * i.size("hw")) as u32, 256))
            .tolerance(Tolerance::exact())
            .reference(|i, o| {
                let (g, k) = (i.size("g"), i.size("k"));
                let x = i.buf::<f32>("X");
                for (px, y) in x.chunks(g * k).zip(o.buf::<f32>("Y").chunks_mut(g * k)) {
                    for (c, y) in y.iter_mut().enumerate() {
                        *y = px[(c % g) * k + c / g];
                    }
                }
            });
    }
}

fn shuffle_len(i: &Inputs) -> usize {
    i.size("n") * i.size("g") * i.size("k") * i.size("hw")
}

/// entropy: the entropy of each pixel's 5 x 5 neighbourhood of 4-bit values, 16 x 16 blocks:
/// the baseline (differential: its empty bins give `0 * log2(0)`, NaN) and the kernel with a
/// table of `i log2 i` and per-thread bins in shared memory.
pub fn entropy(s: &mut Suite) {
    s.check("entropy")
        .size("w", 1..=48)
        .size("h", 1..=32)
        .output::<f32>("d_entropy", |i: &Inputs| i.size("w") * i.size("h"))
        .input(
            "d_val",
            gen::vec(|i: &Inputs| i.size("w") * i.size("h"), 0i8..16),
        )
        .scalar("height", gen::size::<i32>("h"))
        .scalar("width", gen::size::<i32>("w"))
        .launch_with(entropy_launch)
        .tolerance(Tolerance::close(1e-5, 1e-4).allow_nan())
        .cases(8)
        .differential();
    let table: Vec<f32> = (0..26)
        .map(|i| {
            if i <= 1 {
                0.0
            } else {
                i as f32 * (i as f32).log2()
            }
        })
        .collect();
    s.check("entropy_opt<16, 16>")
        .size("w", 1..=48)
        .size("h", 1..=32)
        .output::<f32>("d_entropy", |i: &Inputs| i.size("w") * i.size("h"))
        .input(
            "d_val",
            gen::vec(|i: &Inputs| i.size("w") * i.size("h"), 0i8..16),
        )
        .input("d_logTable", table)
        .scalar("m", gen::size::<i32>("h"))
        .scalar("n", gen::size::<i32>("w"))
        .launch_with(entropy_launch)
        .tolerance(Tolerance::close(1e-5, 1e-4))
        .reference(|i, o| {
            let (w, h) = (i.size("w") as i64, i.size("h") as i64);
            let (val, table) = (i.buf::<i8>("d_val"), i.buf::<f32>("d_logTable"));
            for (p, out) in o.buf::<f32>("d_entropy").iter_mut().enumerate() {
                let (x, y) = (p as i64 % w, p as i64 / w);
                let mut count = [0usize; 16];
                let mut total = 0;
                for yy in (y - 2).max(0)..(y + 3).min(h) {
                    for xx in (x - 2).max(0)..(x + 3).min(w) {
                        count[val[(yy * w + xx) as usize] as usize] += 1;
                        total += 1;
                    }
                }
                let e: f32 = count.iter().map(|&c| -table[c]).sum();
                *out = e / total as f32 + (total as f32).log2();
            }
        });
}

fn entropy_launch(i: &Inputs) -> Launch {
    let (w, h) = (i.size("w") as u32, i.size("h") as u32);
    Launch::new((w.div_ceil(16), h.div_ceil(16)), (16, 16))
}

/// bitonic-sort: one compare-and-swap stage of a bitonic sort (`seq_len` = 2^(stage+1),
/// `two_power` = 2^(step-stage)), over 2^n ints in blocks of 256.
pub fn bitonic_sort(s: &mut Suite) {
    s.check("bitonic_sort")
        .size("log_n", 8..=12)
        .size("step", 0..=11)
        .size("stage", 0..=11)
        .scalar("seq_len", gen::from_sizes(|i| 2i32 << bitonic_stage(i).1))
        .scalar(
            "two_power",
            gen::from_sizes(|i| {
                let (step, stage) = bitonic_stage(i);
                1i32 << (step - stage)
            }),
        )
        .inout(
            "a",
            gen::vec(|i: &Inputs| 1 << i.size("log_n"), -1000i32..1000),
        )
        .launch_with(|i| Launch::new((1u32 << i.size("log_n")) / 256, 256))
        .reference(|i, o| {
            let (seq_len, two_power) = (i.scalar::<i32>("seq_len"), i.scalar::<i32>("two_power"));
            let a = o.buf::<i32>("a");
            for i in 0..a.len() as i32 {
                let seq_num = i / seq_len;
                if i < seq_len * seq_num + seq_len / 2 {
                    let j = (i + seq_len / 2) as usize;
                    let increasing = (seq_num / two_power) % 2 == 0;
                    let (x, y) = (a[i as usize], a[j]);
                    if (x > y && increasing) || (x < y && !increasing) {
                        a.swap(i as usize, j);
                    }
                }
            }
        });
}

/// The (step, stage) of a case: step below log2 n, stage at most step.
fn bitonic_stage(i: &Inputs) -> (usize, usize) {
    let step = i.size("step") % i.size("log_n");
    (step, i.size("stage") % (step + 1))
}

/// hausdorff: the largest distance (squared) from a point of A to its nearest point of B, by
/// a float `atomicMax`, blocks of 256.
pub fn hausdorff(s: &mut Suite) {
    s.check("computeDistance")
        .size("na", 1..=700)
        .size("nb", 1..=300)
        .input("Apoints", gen::vec("na", gen::each::<Float2>(0.0..1.0)))
        .input("Bpoints", gen::vec("nb", gen::each::<Float2>(0.0..1.0)))
        .inout("distance", vec![-1.0f32])
        .scalar("numA", gen::size::<i32>("na"))
        .scalar("numB", gen::size::<i32>("nb"))
        .launch_with(|i| Launch::cover(i.size("na"), 256))
        // Not exact: nvcc and NVRTC contract `dx * dx + dy * dy` into an FMA (one rounding
        // fewer: 1 ulp apart on the H100), the host compiler does not.
        .reference(|i, o| {
            let (a, b) = (i.buf::<Float2>("Apoints"), i.buf::<Float2>("Bpoints"));
            let d = a.iter().map(|p| {
                let [px, py] = p.to_array();
                b.iter().fold(f32::MAX, |d, q| {
                    let [qx, qy] = q.to_array();
                    d.min((px - qx) * (px - qx) + (py - qy) * (py - qy))
                })
            });
            o.buf::<f32>("distance")[0] = d.fold(-1.0, f32::max);
        });
}

/// threadfence: a sum in one launch: each block adds its partial sum to `result[block]`, and
/// the last block to finish (by an atomic counter after `__threadfence`) sums them into
/// `result[0]` and resets the counter; blocks of 256.
pub fn threadfence(s: &mut Suite) {
    s.check("sum")
        .size("n", 1..=20_000)
        .input("array", gen::vec("n", 0.0f32..1.0))
        .scalar("N", gen::size::<i32>("n"))
        .inout("count", vec![0u32])
        .output::<f32>("result", |i: &Inputs| i.size("n").div_ceil(256))
        .launch_with(|i| Launch::cover(i.size("n"), 256))
        .tolerance(Tolerance::close(1e-3, 1e-4))
        .reference(|i, o| {
            let a = i.buf::<f32>("array");
            let r = o.buf::<f32>("result");
            for (r, chunk) in r.iter_mut().zip(a.chunks(256)) {
                *r = chunk.iter().sum();
            }
            r[0] = a.iter().sum();
            o.buf::<u32>("count")[0] = 0;
        });
}

/// floydwarshall: one pass (intermediate node `pass`) of Floyd-Warshall over a dense distance
/// matrix, recording the improved paths' intermediate node; 16 x 16 blocks, the node count a
/// multiple of 16.
pub fn floydwarshall(s: &mut Suite) {
    s.check("floydWarshallPass")
        .size("blocks", 1..=4)
        .size("pass", 0..=63)
        .inout(
            "pathDistanceBuffer",
            gen::vec(|i: &Inputs| fw_nodes(i).pow(2), 0u32..200),
        )
        .inout(
            "pathBuffer",
            gen::vec(|i: &Inputs| fw_nodes(i).pow(2), 0u32..64),
        )
        .scalar("numNodes", gen::from_sizes(|i| fw_nodes(i) as u32))
        .scalar(
            "pass",
            gen::from_sizes(|i| (i.size("pass") % fw_nodes(i)) as u32),
        )
        .launch_with(|i| {
            let b = i.size("blocks") as u32;
            Launch::new((b, b), (16, 16))
        })
        .reference(|i, o| {
            let (n, k) = (fw_nodes(i), i.scalar::<u32>("pass") as usize);
            let (d, p) = o.pair::<u32, u32>("pathDistanceBuffer", "pathBuffer");
            let old = d.to_vec();
            for y in 0..n {
                for x in 0..n {
                    let t = old[y * n + k] + old[k * n + x];
                    if t < old[y * n + x] {
                        d[y * n + x] = t;
                        p[y * n + x] = k as u32;
                    }
                }
            }
        });
}

fn fw_nodes(i: &Inputs) -> usize {
    16 * i.size("blocks")
}

/// glu: the gated linear unit `x1 * sigmoid(x2)` over the split dimension of an M x 2S x N
/// tensor, blocks of 256.
pub fn glu(s: &mut Suite) {
    s.check("glu_kernel")
        .size("m", 1..=8)
        .size("split", 1..=16)
        .size("n", 1..=40)
        .scalar("M", gen::size::<i32>("m"))
        .scalar("split_dim_size", gen::size::<i32>("split"))
        .scalar("N", gen::size::<i32>("n"))
        .input(
            "Xdata",
            gen::vec(
                |i: &Inputs| 2 * i.size("m") * i.size("split") * i.size("n"),
                -4.0f32..4.0,
            ),
        )
        .output::<f32>("Ydata", |i: &Inputs| {
            i.size("m") * i.size("split") * i.size("n")
        })
        .launch_with(|i| Launch::cover(i.size("m") * i.size("split") * i.size("n"), 256))
        .tolerance(Tolerance::close(1e-6, 1e-5))
        .reference(|i, o| {
            let (sp, n) = (i.size("split"), i.size("n"));
            let x = i.buf::<f32>("Xdata");
            for (xm, ym) in x
                .chunks(2 * sp * n)
                .zip(o.buf::<f32>("Ydata").chunks_mut(sp * n))
            {
                for (k, y) in ym.iter_mut().enumerate() {
                    *y = xm[k] * (1.0 / (1.0 + (-xm[k + sp * n]).exp()));
                }
            }
        });
}

/// maxpool3d: max pooling (window = stride, at least 0) of a stack of images, 8 x 8 x 4
/// blocks.
pub fn maxpool3d(s: &mut Suite) {
    s.check("maxpool3d")
        .size("count", 1..=6)
        .size("ow", 1..=20)
        .size("oh", 1..=20)
        .size("hs", 1..=3)
        .size("vs", 1..=3)
        .input("i_img", gen::vec(pool_in_len, 0.0f32..1.0))
        .output::<f32>("o_img", |i: &Inputs| {
            i.size("count") * i.size("ow") * i.size("oh")
        })
        .scalar("Hstride", gen::size::<i32>("hs"))
        .scalar("Vstride", gen::size::<i32>("vs"))
        .scalar("pool_width", gen::size::<i32>("hs"))
        .scalar("pool_height", gen::size::<i32>("vs"))
        .scalar("i_img_count", gen::size::<i32>("count"))
        .scalar(
            "i_img_width",
            gen::from_sizes(|i| (i.size("ow") * i.size("hs")) as i32),
        )
        .scalar(
            "i_img_height",
            gen::from_sizes(|i| (i.size("oh") * i.size("vs")) as i32),
        )
        .scalar("o_img_width", gen::size::<i32>("ow"))
        .scalar("o_img_height", gen::size::<i32>("oh"))
        .launch_with(|i| {
            let (w, h, c) = (
                i.size("ow") as u32,
                i.size("oh") as u32,
                i.size("count") as u32,
            );
            Launch::new((w.div_ceil(8), h.div_ceil(8), c.div_ceil(4)), (8, 8, 4))
        })
        .tolerance(Tolerance::exact())
        .reference(|i, o| {
            let (ow, oh, hs, vs) = (i.size("ow"), i.size("oh"), i.size("hs"), i.size("vs"));
            let (iw, ih) = (ow * hs, oh * vs);
            let a = i.buf::<f32>("i_img");
            for (k, out) in o.buf::<f32>("o_img").iter_mut().enumerate() {
                let (x, y, z) = (k % ow, k / ow % oh, k / (ow * oh));
                let mut m = 0.0f32;
                for r in 0..vs {
                    for c in 0..hs {
                        m = m.max(a[(z * ih + y * vs + r) * iw + x * hs + c]);
                    }
                }
                *out = m;
            }
        });
}

fn pool_in_len(i: &Inputs) -> usize {
    i.size("count") * i.size("ow") * i.size("hs") * i.size("oh") * i.size("vs")
}

/// jenkins-hash: Bob Jenkins' lookup3 `hashlittle` of strings of up to 60 bytes (16 words
/// each), a thread per string, blocks of 256 (differential).
pub fn jenkins_hash(s: &mut Suite) {
    s.check("jk3_hash_kernel")
        .size("n", 1..=2000)
        .input("lengths", gen::vec("n", 0u32..61))
        .input("initvals", gen::vec("n", 0u32..2))
        .input(
            "keys",
            gen::vec(|i: &Inputs| 16 * i.size("n"), 0u32..u32::MAX),
        )
        .output::<u32>("out", "n")
        .scalar("N", gen::size::<i32>("n"))
        .launch_with(|i| Launch::cover(i.size("n"), 256))
        .cases(8)
        .differential();
}

/// colorwheel: the optical-flow colour wheel as an RGB image (axes left black), 16 x 16
/// blocks (differential).
pub fn colorwheel(s: &mut Suite) {
    s.check("color")
        .size("size", 1..=64)
        .output_zeroed::<u8>("pix", |i: &Inputs| 3 * i.size("size").pow(2))
        .scalar("size", gen::size::<i32>("size"))
        .scalar("half_size", gen::from_sizes(|i| i.size("size") as i32 / 2))
        .scalar("range", 1.04f32)
        .scalar("truerange", 1.0f32)
        .launch_with(|i| {
            let n = i.size("size").div_ceil(16) as u32;
            Launch::new((n, n), (16, 16))
        })
        // `(int)(255.f * col)`: one unit either way where `atan2f` or `sqrtf` differ in the
        // last bit.
        .tolerance(Tolerance::abs(1.0))
        .cases(8)
        .differential();
}

/// page-rank: one iteration of PageRank over a dense link matrix: `map` spreads each page's
/// rank over its links, `reduce` gathers them per page (damping 0.85) and keeps the largest
/// change; blocks of min(n, 256).
pub fn page_rank(s: &mut Suite) {
    s.check("map")
        .size("n", 1..=120)
        .input("pages", gen::vec(("n", "n"), 0i32..2))
        .input("page_ranks", gen::vec("n", 0.0f32..1.0))
        .output::<f32>("maps", |i: &Inputs| i.size("n").pow(2))
        .input("noutlinks", gen::vec("n", 1u32..100))
        .scalar("n", gen::size::<i32>("n"))
        .launch_with(|i| Launch::cover(i.size("n"), i.size("n").min(256) as u32))
        .tolerance(Tolerance::close(1e-6, 1e-6))
        .reference(|i, o| {
            let n = i.size("n");
            let (p, r, l) = (
                i.buf::<i32>("pages"),
                i.buf::<f32>("page_ranks"),
                i.buf::<u32>("noutlinks"),
            );
            for (k, m) in o.buf::<f32>("maps").iter_mut().enumerate() {
                *m = p[k] as f32 * (r[k / n] / l[k / n] as f32);
            }
        });
    s.check("reduce")
        .size("n", 1..=120)
        .inout("page_ranks", gen::vec("n", 0.0f32..1.0))
        .input("maps", gen::vec(("n", "n"), 0.0f32..0.1))
        .scalar("n", gen::size::<i32>("n"))
        .inout("dif", gen::vec("n", 0.0f32..0.1))
        .launch_with(|i| Launch::cover(i.size("n"), i.size("n").min(256) as u32))
        .tolerance(Tolerance::close(1e-5, 1e-5))
        .reference(|i, o| {
            let n = i.size("n");
            let maps = i.buf::<f32>("maps");
            let (r, d) = o.pair::<f32, f32>("page_ranks", "dif");
            for j in 0..n {
                let sum: f32 = (0..n).map(|k| maps[k * n + j]).sum();
                let new = (1.0 - 0.85) / n as f32 + 0.85 * sum;
                d[j] = (new - r[j]).abs().max(d[j]);
                r[j] = new;
            }
        });
}

/// The rotation of `p` by `angle` about the unit axis `w` (Rodrigues' formula, as the kernel
/// writes its matrix).
fn rodrigues_rotate(p: [f32; 3], angle: f32, w: [f32; 3]) -> [f32; 3] {
    let (s, c) = angle.sin_cos();
    let mc = 1.0 - c;
    let [wx, wy, wz] = w;
    let m = [
        c + wx * wx * mc,
        wz * s + wx * wy * mc,
        -wy * s + wx * wz * mc,
        -wz * s + wx * wy * mc,
        c + wy * wy * mc,
        wx * s + wy * wz * mc,
        wy * s + wx * wz * mc,
        -wx * s + wy * wz * mc,
        c + wz * wz * mc,
    ];
    let [x, y, z] = p;
    [
        x * m[0] + y * m[1] + z * m[2],
        x * m[3] + y * m[4] + z * m[5],
        x * m[6] + y * m[7] + z * m[8],
    ]
}

/// rodrigues: points rotated about the program's unit axis, as `float3` and as `float4`
/// (w cleared), blocks of 256.
pub fn rodrigues(s: &mut Suite) {
    let (wx, wy, wz) = (-0.3f32, -0.6f32, 0.15f32);
    let norm = 1.0 / (wx * wx + wy * wy + wz * wz).sqrt();
    let w = [wx * norm, wy * norm, wz * norm];
    let axis = Float3::new(w[0], w[1], w[2]);
    s.check("rotate")
        .size("n", 1..=3000)
        .scalar("n", gen::size::<i32>("n"))
        .scalar("angle", gen::value(-3.0f32..3.0))
        .scalar("w", axis)
        .inout("d", gen::vec("n", gen::each::<Float3>(-1.0..1.0)))
        .launch_with(|i| Launch::cover(i.size("n"), 256))
        .tolerance(Tolerance::close(1e-5, 1e-5))
        .reference(move |i, o| {
            let angle = i.scalar::<f32>("angle");
            for p in o.buf::<Float3>("d") {
                let [x, y, z] = rodrigues_rotate(p.to_array(), angle, w);
                *p = Float3::new(x, y, z);
            }
        });
    s.check("rotate2")
        .size("n", 1..=3000)
        .scalar("n", gen::size::<i32>("n"))
        .scalar("angle", gen::value(-3.0f32..3.0))
        .scalar("w", axis)
        .inout("d", gen::vec("n", gen::each::<Float4>(-1.0..1.0)))
        .launch_with(|i| Launch::cover(i.size("n"), 256))
        .tolerance(Tolerance::close(1e-5, 1e-5))
        .reference(move |i, o| {
            let angle = i.scalar::<f32>("angle");
            for p in o.buf::<Float4>("d") {
                let [x, y, z, _] = p.to_array();
                let [x, y, z] = rodrigues_rotate([x, y, z], angle, w);
                *p = Float4::new(x, y, z, 0.0);
            }
        });
}

/// hellinger: the Hellinger distance between each row of A (m x n) and each column of B
/// (n x k), 16 x 16 blocks.
pub fn hellinger(s: &mut Suite) {
    s.check("hellinger")
        .size("m", 1..=40)
        .size("n", 1..=40)
        .size("k", 1..=40)
        .input("a", gen::vec(("m", "n"), 0.0f32..0.1))
        .input("b", gen::vec(("n", "k"), 0.0f32..0.1))
        .output::<f32>("c", |i: &Inputs| i.size("m") * i.size("k"))
        .scalar("m", gen::size::<i32>("m"))
        .scalar("n", gen::size::<i32>("n"))
        .scalar("k", gen::size::<i32>("k"))
        .launch_with(|i| {
            let (m, k) = (i.size("m") as u32, i.size("k") as u32);
            Launch::new((k.div_ceil(16), m.div_ceil(16)), (16, 16))
        })
        .tolerance(Tolerance::close(1e-5, 1e-4))
        .reference(|i, o| {
            let (n, k) = (i.size("n"), i.size("k"));
            let (a, b) = (i.buf::<f32>("a"), i.buf::<f32>("b"));
            for (p, c) in o.buf::<f32>("c").iter_mut().enumerate() {
                let (row, col) = (p / k, p % k);
                let sum: f32 = (0..n)
                    .map(|j| (a[row * n + j] * b[j * k + col]).sqrt())
                    .sum();
                let v = 1.0 - sum;
                *c = if v.is_sign_negative() { 0.0 } else { v.sqrt() };
            }
        });
}

/// lif: one time step of leaky integrate-and-fire neurons, blocks of 256 (differential).
pub fn lif(s: &mut Suite) {
    s.check("lif")
        .size("per_item", 1..=64)
        .size("items", 1..=40)
        .scalar(
            "numNeurons",
            gen::from_sizes(|i| (i.size("per_item") * i.size("items")) as u64),
        )
        .scalar("neurons_per_item", gen::size::<i32>("per_item"))
        .scalar("dt", 0.1f32)
        .input("encode_result", gen::vec("items", 0.0f32..2.0))
        .inout(
            "voltage_array",
            gen::vec(("per_item", "items"), 1.0f32..2.0),
        )
        .inout(
            "reftime_array",
            gen::vec(("per_item", "items"), 0.0f32..0.5),
        )
        .scalar("tau_rc", 10.0f32)
        .scalar("tau_ref", 2.0f32)
        .input("bias", gen::vec("per_item", 0.0f32..1.0))
        .input("gain", gen::vec("per_item", 0.5f32..1.5))
        .output::<f32>("spikes", |i: &Inputs| i.size("per_item") * i.size("items"))
        .launch_with(|i| Launch::cover(i.size("per_item") * i.size("items"), 256))
        .tolerance(Tolerance::close(1e-5, 1e-4))
        .cases(8)
        .differential();
}

/// geodesic: Vincenty's distance on the WGS-84 ellipsoid between pairs of (latitude,
/// longitude) points, blocks of 256 (differential).
pub fn geodesic(s: &mut Suite) {
    s.check("kernel_distance")
        .size("n", 1..=2000)
        .input("d_A", gen::vec("n", gen::each::<Float4>(-60.0..60.0)))
        .output::<f32>("d_C", "n")
        .scalar("N", gen::size::<i32>("n"))
        .launch_with(|i| Launch::cover(i.size("n"), 256))
        .tolerance(Tolerance::close(1e-2, 1e-4))
        .cases(8)
        .differential();
}

/// What a matrixT kernel does to a square matrix of 16 x 16 tiles.
#[derive(Clone, Copy)]
enum Transpose {
    Copy,
    Full,
    /// Each tile transposed in place.
    FineGrained,
    /// The tiles moved to their transposed places, each unchanged.
    CoarseGrained,
}

/// matrixT: the CUDA SDK transpose kernels (copies, naive, coalesced, without bank conflicts,
/// diagonal block order, and the fine- and coarse-grained halves of a transpose) over square
/// matrices whose side is a multiple of 16, in 16 x 16 blocks.
pub fn matrix_t(s: &mut Suite) {
    for (k, what) in [
        ("copy", Transpose::Copy),
        ("copySharedMem", Transpose::Copy),
        ("transposeNaive", Transpose::Full),
        ("transposeCoalesced", Transpose::Full),
        ("transposeNoBankConflicts", Transpose::Full),
        ("transposeDiagonal", Transpose::Full),
        ("transposeFineGrained", Transpose::FineGrained),
        ("transposeCoarseGrained", Transpose::CoarseGrained),
    ] {
        s.check(k)
            .size("tiles", 1..=6)
            .output::<f32>("odata", |i: &Inputs| (16 * i.size("tiles")).pow(2))
            .input(
                "idata",
                gen::vec(|i: &Inputs| (16 * i.size("tiles")).pow(2), -1.0f32..1.0),
            )
            .scalar("width", gen::from_sizes(|i| 16 * i.size("tiles") as i32))
            .scalar("height", gen::from_sizes(|i| 16 * i.size("tiles") as i32))
            .launch_with(|i| {
                let t = i.size("tiles") as u32;
                Launch::new((t, t), (16, 16))
            })
            .tolerance(Tolerance::exact())
            .reference(move |i, o| {
                let n = 16 * i.size("tiles");
                let a = i.buf::<f32>("idata");
                for (k, out) in o.buf::<f32>("odata").iter_mut().enumerate() {
                    let (r, c) = (k / n, k % n);
                    let (tr, tc, lr, lc) = (r / 16, c / 16, r % 16, c % 16);
                    let (sr, sc) = match what {
                        Transpose::Copy => (r, c),
                        Transpose::Full => (c, r),
                        Transpose::FineGrained => (16 * tr + lc, 16 * tc + lr),
                        Transpose::CoarseGrained => (16 * tc + lr, 16 * tr + lc),
                    };
                    *out = a[sr * n + sc];
                }
            });
    }
}

/// shuffle: wave shuffles in one block of 256: a broadcast from lane 0 (`bcast_shfl_sgN`,
/// every lane gets `arg`), butterfly sums over groups of 8, 16 and 32 lanes
/// (`bcast_shfl_xor_sgN`: 0 + 1 + ... + N-1 in every lane), and a reversal of each block by
/// `__shfl` in blocks of 8, 16 and 32 (`transpose_shfl`).
pub fn shuffle(s: &mut Suite) {
    for (k, group) in [(8, "sg8"), (16, "sg16"), (32, "sg32")] {
        s.check(&format!("bcast_shfl_{group}"))
            .scalar("arg", gen::value(rocm_test::proptest::num::i32::ANY))
            .output::<i32>("out", 256)
            .launch(Launch::new(1, 256))
            .reference(|i, o| o.buf::<i32>("out").fill(i.scalar::<i32>("arg")));
        s.check(&format!("bcast_shfl_xor_{group}"))
            .output::<i32>("out", 256)
            .launch(Launch::new(1, 256))
            .reference(move |_, o| o.buf::<i32>("out").fill(k * (k - 1) / 2));
    }
    for block in [8usize, 16, 32] {
        s.check("transpose_shfl")
            .named(&format!("transpose_shfl/{block}"))
            .size("blocks", 1..=64)
            .output::<f32>("out", move |i: &Inputs| i.size("blocks") * block)
            .input(
                "in",
                gen::vec(move |i: &Inputs| i.size("blocks") * block, -1.0f32..1.0),
            )
            .launch_with(move |i| Launch::new(i.size("blocks") as u32, block as u32))
            .tolerance(Tolerance::exact())
            .reference(move |i, o| {
                let a = i.buf::<f32>("in");
                for (out, a) in o.buf::<f32>("out").chunks_mut(block).zip(a.chunks(block)) {
                    for (y, x) in out.iter_mut().zip(a.iter().rev()) {
                        *y = *x;
                    }
                }
            });
    }
}

/// background-subtract: the four steps of a background subtraction over 8-bit images (moving
/// pixels, background and threshold updates, and the merged update), blocks of 256.
pub fn background_subtract(s: &mut Suite) {
    let bg = |b: u8, img: u8| (0.92 * b as f64 + 0.08 * img as f64) as u8;
    let th = |t: u8, img: u8, b: u8| {
        ((0.92 * t as f64 + 0.24 * (img as i32 - b as i32) as f64) as f32).max(20.0) as u8
    };
    let moving = |img: u8, i1: u8, i2: u8, t: u8| {
        (img as i32 - i1 as i32).abs() > t as i32 || (img as i32 - i2 as i32).abs() > t as i32
    };
    s.check("findMovingPixels")
        .size("n", 1..=5000)
        .scalar("imgSize", gen::size::<u64>("n"))
        .input("Img", gen::vec("n", 0u8..=255))
        .input("Img1", gen::vec("n", 0u8..=255))
        .input("Img2", gen::vec("n", 0u8..=255))
        .input("Tn", gen::vec("n", 20u8..100))
        .output::<u8>("Mp", "n")
        .launch_with(|i| Launch::cover(i.size("n"), 256))
        .reference(move |i, o| {
            let (a, b, c, t) = (
                i.buf::<u8>("Img"),
                i.buf::<u8>("Img1"),
                i.buf::<u8>("Img2"),
                i.buf::<u8>("Tn"),
            );
            for (k, m) in o.buf::<u8>("Mp").iter_mut().enumerate() {
                *m = if moving(a[k], b[k], c[k], t[k]) {
                    255
                } else {
                    0
                };
            }
        });
    s.check("updateBackground")
        .size("n", 1..=5000)
        .scalar("imgSize", gen::size::<u64>("n"))
        .input("Img", gen::vec("n", 0u8..=255))
        .input(
            "Mp",
            gen::vec("n", rocm_test::proptest::sample::select(vec![0u8, 255])),
        )
        .inout("Bn", gen::vec("n", 0u8..=255))
        .launch_with(|i| Launch::cover(i.size("n"), 256))
        .reference(move |i, o| {
            let (img, mp) = (i.buf::<u8>("Img"), i.buf::<u8>("Mp"));
            for (k, b) in o.buf::<u8>("Bn").iter_mut().enumerate() {
                if mp[k] == 0 {
                    *b = bg(*b, img[k]);
                }
            }
        });
    s.check("updateThreshold")
        .size("n", 1..=5000)
        .scalar("imgSize", gen::size::<u64>("n"))
        .input("Img", gen::vec("n", 0u8..=255))
        .input(
            "Mp",
            gen::vec("n", rocm_test::proptest::sample::select(vec![0u8, 255])),
        )
        .input("Bn", gen::vec("n", 0u8..=255))
        .inout("Tn", gen::vec("n", 20u8..100))
        .launch_with(|i| Launch::cover(i.size("n"), 256))
        .reference(move |i, o| {
            let (img, mp, bn) = (i.buf::<u8>("Img"), i.buf::<u8>("Mp"), i.buf::<u8>("Bn"));
            for (k, t) in o.buf::<u8>("Tn").iter_mut().enumerate() {
                if mp[k] == 0 {
                    *t = th(*t, img[k], bn[k]);
                }
            }
        });
    s.check("merge")
        .size("n", 1..=5000)
        .scalar("imgSize", gen::size::<u64>("n"))
        .input("Img", gen::vec("n", 0u8..=255))
        .input("Img1", gen::vec("n", 0u8..=255))
        .input("Img2", gen::vec("n", 0u8..=255))
        .inout("Tn", gen::vec("n", 20u8..100))
        .inout("Bn", gen::vec("n", 0u8..=255))
        .launch_with(|i| Launch::cover(i.size("n"), 256))
        .reference(move |i, o| {
            let (a, b, c) = (i.buf::<u8>("Img"), i.buf::<u8>("Img1"), i.buf::<u8>("Img2"));
            let (t, bn) = o.pair::<u8, u8>("Tn", "Bn");
            for k in 0..a.len() {
                if !moving(a[k], b[k], c[k], t[k]) {
                    bn[k] = bg(bn[k], a[k]);
                    t[k] = th(t[k], a[k], bn[k]);
                }
            }
        });
}

/// stencil3d: a 3D 19-point anisotropic diffusion stencil in doubles, streaming along x in
/// tiles of 20, 16 x 16 blocks over y and z (differential). `ny = nz = 16`: where `(n - 2)` is
/// not a multiple of 14, the threads past the last tile return before the block's barriers
/// (README.md).
pub fn stencil3d(s: &mut Suite) {
    let vol = |i: &Inputs| i.size("nx") * i.size("ny") * i.size("nz");
    s.check("stencil3d")
        .size("nx", 3..=5)
        .size("ny", 16)
        .size("nz", 16)
        .input("d_psi", gen::vec(vol, 0.0f64..19.0))
        .output_zeroed::<f64>("d_npsi", vol)
        .input(
            "d_sigmaX",
            gen::vec(move |i: &Inputs| 3 * vol(i), 0.0f64..1.0),
        )
        .input(
            "d_sigmaY",
            gen::vec(move |i: &Inputs| 3 * vol(i), 0.0f64..1.0),
        )
        .input(
            "d_sigmaZ",
            gen::vec(move |i: &Inputs| 3 * vol(i), 0.0f64..1.0),
        )
        .scalar("nx", gen::size::<i32>("nx"))
        .scalar("ny", gen::size::<i32>("ny"))
        .scalar("nz", gen::size::<i32>("nz"))
        .launch_with(|i| {
            let b = |n: usize, t: usize| (n - 2).div_ceil(t) as u32;
            let (x, y, z) = (
                b(i.size("nx"), 20),
                b(i.size("ny"), 14),
                b(i.size("nz"), 14),
            );
            Launch::new((x, y, z), (16, 16, 1))
        })
        .tolerance(Tolerance::close(1e-10, 1e-10))
        .cases(4)
        .differential();
}

/// randomAccess: the HPCC RandomAccess table: `initTable` (`Table[i] = i`, blocks of 256) and
/// `update`, 4 x TableSize pseudo-random `atomicXor` updates by one block of 128 threads
/// (differential; the table size a power of two).
pub fn random_access(s: &mut Suite) {
    s.check("initTable")
        .size("n", 1..=5000)
        .output::<u64>("Table", "n")
        .scalar("TableSize", gen::size::<u64>("n"))
        .launch_with(|i| Launch::cover(i.size("n"), 256))
        .reference(|_, o| {
            for (k, t) in o.buf::<u64>("Table").iter_mut().enumerate() {
                *t = k as u64;
            }
        });
    s.check("update")
        .size("log_n", 7..=11)
        .inout(
            "Table",
            gen::vec(|i: &Inputs| 1 << i.size("log_n"), 0u64..u64::MAX),
        )
        .scalar("TableSize", gen::from_sizes(|i| 1u64 << i.size("log_n")))
        .launch(Launch::new(1, 128))
        .cases(5)
        .differential();
}

/// filter: stream compaction of the positive elements, by a block counter then a global one
/// (`filter`) or by warp-aggregated atomics over `coalesced_threads()` (`filter2`); blocks of
/// 256. The order of the kept elements depends on scheduling, so every positive element is the
/// same number (7): the first `nres` elements of `dst` are 7, the rest untouched.
pub fn filter(s: &mut Suite) {
    for k in ["filter", "filter2"] {
        s.check(k)
            .size("n", 1..=5000)
            .output_zeroed::<i32>("dst", "n")
            .inout("nres", vec![0i32])
            .input(
                "src",
                gen::vec("n", rocm_test::proptest::sample::select(vec![-3i32, 0, 7])),
            )
            .scalar("n", gen::size::<i32>("n"))
            .launch_with(|i| Launch::cover(i.size("n"), 256))
            .reference(|i, o| {
                let kept = i.buf::<i32>("src").iter().filter(|&&v| v > 0).count();
                o.buf::<i32>("dst")[..kept].fill(7);
                o.buf::<i32>("nres")[0] = kept as i32;
            });
    }
}

/// sad: template matching by the sum of absolute differences over RGB images (16 x 16
/// blocks), then the minimum of the SAD array (a block reduction and `atomicMin`, blocks of
/// 256, from the program's threshold 20) and the number of its occurrences (blocks of 256; the
/// array a multiple of 256 long: README.md).
pub fn sad(s: &mut Suite) {
    s.check("compute_sad_array")
        .size("w", 1..=48)
        .size("h", 1..=40)
        .size("kw", 1..=6)
        .size("kh", 1..=6)
        .output::<i32>("sad_array", |i: &Inputs| i.size("w") * i.size("h"))
        .input(
            "image",
            gen::vec(|i: &Inputs| 3 * i.size("w") * i.size("h"), 0u8..=255),
        )
        .input(
            "kernel",
            gen::vec(|i: &Inputs| 3 * i.size("kw") * i.size("kh"), 0u8..=255),
        )
        .scalar(
            "sad_array_size",
            gen::from_sizes(|i| (i.size("w") * i.size("h")) as i32),
        )
        .scalar("image_width", gen::size::<i32>("w"))
        .scalar("image_height", gen::size::<i32>("h"))
        .scalar("kernel_width", gen::size::<i32>("kw"))
        .scalar("kernel_height", gen::size::<i32>("kh"))
        .scalar(
            "kernel_size",
            gen::from_sizes(|i| (i.size("kw") * i.size("kh")) as i32),
        )
        .launch_with(|i| {
            let (w, h) = (i.size("w") as u32, i.size("h") as u32);
            Launch::new((w.div_ceil(16), h.div_ceil(16)), (16, 16))
        })
        .reference(|i, o| {
            let (w, h, kw, kh) = (i.size("w"), i.size("h"), i.size("kw"), i.size("kh"));
            let (img, ker) = (i.buf::<u8>("image"), i.buf::<u8>("kernel"));
            for (p, out) in o.buf::<i32>("sad_array").iter_mut().enumerate() {
                let (row, col) = (p / w, p % w);
                let mut sum = 0i32;
                for kr in 0..kh.min(h - row) {
                    for kc in 0..kw.min(w - col) {
                        let (a, b) = (((row + kr) * w + col + kc) * 3, (kr * kw + kc) * 3);
                        for c in 0..3 {
                            sum += (img[a + c] as i32 - ker[b + c] as i32).abs();
                        }
                    }
                }
                *out = (sum as f32 / (kw * kh) as f32) as i32;
            }
        });
    s.check("find_min_in_sad_array")
        .size("n", 1..=5000)
        .scalar("sad_array_size", gen::size::<i32>("n"))
        .input("sad_array", gen::vec("n", 0i32..400))
        .inout("min_sad", vec![20i32])
        .launch_with(|i| Launch::cover(i.size("n"), 256))
        .reference(|i, o| {
            let m = i.buf::<i32>("sad_array").iter().fold(20, |a, &b| a.min(b));
            o.buf::<i32>("min_sad")[0] = m;
        });
    s.check("get_num_of_occurrences")
        .size("blocks", 1..=16)
        .scalar(
            "sad_array_size",
            gen::from_sizes(|i| 256 * i.size("blocks") as i32),
        )
        .input(
            "sad_array",
            gen::vec(|i: &Inputs| 256 * i.size("blocks"), 0i32..8),
        )
        .input("min_sad", gen::vec(1, 0i32..8))
        .inout("num_occurrences", vec![0i32])
        .launch_with(|i| Launch::new(i.size("blocks") as u32, 256))
        .reference(|i, o| {
            let m = i.buf::<i32>("min_sad")[0];
            let n = i
                .buf::<i32>("sad_array")
                .iter()
                .filter(|&&v| v == m)
                .count();
            o.buf::<i32>("num_occurrences")[0] = n as i32;
        });
}

/// wedford: the mean and biased variance of each feature over batch x spatial elements, by
/// Welford's algorithm per thread then merged across waves (`__shfl_down`, shared memory), a
/// block of 32 x 16 per feature.
pub fn wedford(s: &mut Suite) {
    s.check("welford_kernel<float, float, float>")
        .size("bs", 1..=8)
        .size("fs", 1..=8)
        .size("ss", 1..=200)
        .input("input", gen::vec(|i: &Inputs| welford_len(i), 0.0f32..1.0))
        .output::<f32>("out_mean", "fs")
        .output::<f32>("out_var_biased", "fs")
        .scalar("bs", gen::size::<i32>("bs"))
        .scalar("fs", gen::size::<i32>("fs"))
        .scalar("ss", gen::size::<i32>("ss"))
        .launch_with(|i| Launch::new(i.size("fs") as u32, (32, 16)))
        .tolerance(Tolerance::close(1e-5, 1e-4))
        .reference(|i, o| {
            let (bs, fs, ss) = (i.size("bs"), i.size("fs"), i.size("ss"));
            let x = i.buf::<f32>("input");
            let (mean, var) = o.pair::<f32, f32>("out_mean", "out_var_biased");
            for f in 0..fs {
                let v: Vec<f64> = (0..bs)
                    .flat_map(|b| (0..ss).map(move |k| (b * fs + f) * ss + k))
                    .map(|k| x[k] as f64)
                    .collect();
                let m = v.iter().sum::<f64>() / v.len() as f64;
                mean[f] = m as f32;
                var[f] = (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len() as f64) as f32;
            }
        });
}

fn welford_len(i: &Inputs) -> usize {
    i.size("bs") * i.size("fs") * i.size("ss")
}

/// nms: the reduce step of work-efficient non-maximum suppression: a point is kept when its
/// whole row of the 4096-wide NMS bitmap is set, by 32 rounds of `__syncthreads_and` over
/// blocks of 128, a block per detection (`generate_nms_bitmap`, writing a 4096 x 4096 bitmap,
/// is left out).
pub fn nms(s: &mut Suite) {
    use rocm_test::proptest::strategy::Strategy;
    s.untested(
        "generate_nms_bitmap",
        "it writes rows of a 4096 x 4096 bitmap (16 MB a case)",
    );
    s.check("reduce_nms_bitmap")
        .size("n", 1..=8)
        .input(
            "nmsbitmap",
            gen::vec(
                |i: &Inputs| 4096 * i.size("n"),
                (0u32..4096).prop_map(|v| (v != 0) as u8),
            ),
        )
        .output::<u8>("pointsbitmap", "n")
        .scalar("ndetections", gen::size::<i32>("n"))
        .launch_with(|i| Launch::new(i.size("n") as u32, 128))
        .reference(|i, o| {
            let bitmap = i.buf::<u8>("nmsbitmap");
            for (p, row) in o
                .buf::<u8>("pointsbitmap")
                .iter_mut()
                .zip(bitmap.chunks(4096))
            {
                *p = row.iter().all(|&b| b != 0) as u8;
            }
        });
}

/// langevin: three ways to the Langevin function `coth(x) - 1/x` (by `coshf/sinhf`, by
/// `tanhf`, and by a minimax polynomial), over the program's negative inputs away from the
/// cancellation at 0; blocks of 256, the length a multiple of 256.
pub fn langevin(s: &mut Suite) {
    for k in ["k0", "k1", "k2"] {
        s.check(k)
            .size("blocks", 1..=16)
            .input(
                "a",
                gen::vec(|i: &Inputs| 256 * i.size("blocks"), -1.8f32..-0.25),
            )
            .output::<f32>("o", |i: &Inputs| 256 * i.size("blocks"))
            .launch_with(|i| Launch::new(i.size("blocks") as u32, 256))
            .tolerance(Tolerance::close(2e-5, 1e-4))
            .reference(|i, o| {
                for (y, x) in o.buf::<f32>("o").iter_mut().zip(i.buf::<f32>("a")) {
                    let x = *x as f64;
                    *y = (1.0 / x.tanh() - 1.0 / x) as f32;
                }
            });
    }
}

/// gabor: a Gabor filter (the program's period 13, aspect 2.65 and angle 45 radians) as an
/// image of doubles, 16 x 16 blocks.
pub fn gabor(s: &mut Suite) {
    let (par_t, par_l, theta) = (13.0f64, 2.65f64, 45.0f64);
    let sx = par_t / (2.0 * (2.0 * 2.0f64.ln()).sqrt());
    let sy = par_l * sx;
    let scale = 1.0 / (2.0 * std::f64::consts::PI * sx * sy);
    s.check("gabor")
        .size("w", 1..=64)
        .size("h", 1..=48)
        .output::<f64>("gabor_spatial", |i: &Inputs| i.size("w") * i.size("h"))
        .scalar("height", gen::size::<u32>("h"))
        .scalar("width", gen::size::<u32>("w"))
        .scalar("center_y", gen::from_sizes(|i| i.size("h") as f64 / 2.0))
        .scalar("center_x", gen::from_sizes(|i| i.size("w") as f64 / 2.0))
        .scalar("ctheta", theta.cos())
        .scalar("stheta", theta.sin())
        .scalar("scale", scale)
        .scalar("sx_2", sx * sx)
        .scalar("sy_2", sy * sy)
        .scalar("fx", 1.0 / par_t)
        .launch_with(|i| {
            let (w, h) = (i.size("w") as u32, i.size("h") as u32);
            Launch::new((w.div_ceil(16), h.div_ceil(16)), (16, 16))
        })
        .tolerance(Tolerance::close(1e-12, 1e-9))
        .reference(move |i, o| {
            let w = i.size("w");
            let (cy, cx) = (i.size("h") as f64 / 2.0, w as f64 / 2.0);
            let (c, s) = (theta.cos(), theta.sin());
            for (p, g) in o.buf::<f64>("gabor_spatial").iter_mut().enumerate() {
                let (x, y) = ((p % w) as f64 - cx, (p / w) as f64 - cy);
                let (u, v) = (c * x - s * y, c * y + s * x);
                let e = (-0.5 * (u * u / (sx * sx) + v * v / (sy * sy))).exp();
                *g = scale * e * (2.0 * std::f64::consts::PI * u / par_t).cos();
            }
        });
}

/// zeropoint: the scale and integer zero point of a symmetric int8 quantisation (qmin -127,
/// qmax 127, `preserve_sparsity` a `bool` by value) from each range's min and max, blocks of 256
/// (differential).
pub fn zeropoint(s: &mut Suite) {
    s.check("zero_point")
        .size("n", 1..=2000)
        .input("x_min", gen::vec("n", -1.0f32..1.0))
        .input("x_max", gen::vec("n", -1.0f32..1.0))
        .scalar("qmin", -127i32)
        .scalar("qmax", 127i32)
        .scalar("size", gen::size::<i32>("n"))
        .by_value("preserve_sparsity", 1u8)
        .output::<f32>("scale", "n")
        .output::<i32>("zero_point", "n")
        .launch_with(|i| Launch::cover(i.size("n"), 256))
        .tolerance(Tolerance::close(1e-6, 1e-5))
        // `nearbyint` of a quotient by the float scale: one unit where the scale differs in
        // its last bit and the quotient sits at a half.
        .tolerance_for("zero_point", Tolerance::abs(1.0))
        .cases(8)
        .differential();
}

/// bscan (`main.cu`, the program for waves of 32, and `main-wave64.cu`, for waves of 64): an
/// exclusive prefix count of the positive elements of a block (`__ballot` and `__popc` within
/// a wave, then a scan of the waves' counts in shared memory), blocks of 32 (64) to 1024 threads.
/// Every block of the program scans the same elements into the same outputs; here one block.
fn bscan_checks(s: &mut Suite, wave: u32) {
    for log in wave.trailing_zeros()..=10 {
        let n = 1usize << log;
        s.check("binary_scan")
            .named(&format!("binary_scan/{n}"))
            .output::<i32>("g_odata", n)
            .input("g_idata", gen::vec(n, -(n as i32) / 2..(n as i32) / 2))
            .launch(Launch::new(1, n as u32))
            .only_wave_size(wave)
            .reference(|i, o| {
                let mut count = 0;
                for (y, x) in o
                    .buf::<i32>("g_odata")
                    .iter_mut()
                    .zip(i.buf::<i32>("g_idata"))
                {
                    *y = count;
                    count += (*x > 0) as i32;
                }
            });
    }
}

/// bscan's `main.cu` (waves of 32).
pub fn bscan(s: &mut Suite) {
    bscan_checks(s, 32);
}

/// bscan's `main-wave64.cu` (waves of 64).
pub fn bscan_wave64(s: &mut Suite) {
    bscan_checks(s, 64);
}

/// An exclusive prefix sum of `x` into `out`, in f64.
fn exclusive_scan(x: &[f32], out: &mut [f32]) {
    let mut sum = 0.0f64;
    for (y, x) in out.iter_mut().zip(x) {
        *y = sum as f32;
        sum += *x as f64;
    }
}

/// scan2: the AMD SDK's large-array scan: `ScanLargeArrays` (an exclusive scan of each block of
/// `block_size` elements, by `block_size / 2` threads, in shared memory, and each block's total),
/// `prefixSum` (the same in one block) and `blockAddition` (each block's offset added back).
pub fn scan2(s: &mut Suite) {
    s.check("ScanLargeArrays")
        .size("log_b", 1..=8)
        .size("blocks", 1..=8)
        .output::<f32>("output", |i: &Inputs| i.size("blocks") << i.size("log_b"))
        .input(
            "input",
            gen::vec(
                |i: &Inputs| i.size("blocks") << i.size("log_b"),
                0.0f32..1.0,
            ),
        )
        .scalar("block_size", gen::from_sizes(|i| 1u32 << i.size("log_b")))
        .output::<f32>("sumBuffer", "blocks")
        .launch_with(|i| {
            let b = 1u32 << i.size("log_b");
            Launch::new(i.size("blocks") as u32, b / 2).shared_bytes(4 * b)
        })
        .tolerance(Tolerance::close(1e-5, 1e-5))
        .reference(|i, o| {
            let b = 1 << i.size("log_b");
            let x = i.buf::<f32>("input");
            let (out, sums) = o.pair::<f32, f32>("output", "sumBuffer");
            for ((x, y), s) in x.chunks(b).zip(out.chunks_mut(b)).zip(sums.iter_mut()) {
                exclusive_scan(x, y);
                *s = x.iter().map(|v| *v as f64).sum::<f64>() as f32;
            }
        });
    s.check("prefixSum")
        .size("log_n", 1..=11)
        .output::<f32>("output", |i: &Inputs| 1 << i.size("log_n"))
        .input(
            "input",
            gen::vec(|i: &Inputs| 1 << i.size("log_n"), 0.0f32..1.0),
        )
        .scalar("block_size", gen::from_sizes(|i| 1u32 << i.size("log_n")))
        .launch_with(|i| {
            let n = 1u32 << i.size("log_n");
            Launch::new(1, n / 2).shared_bytes(4 * (n + 1))
        })
        .tolerance(Tolerance::close(1e-4, 1e-5))
        .reference(|i, o| exclusive_scan(i.buf::<f32>("input"), o.buf::<f32>("output")));
    s.check("blockAddition")
        .size("log_b", 0..=8)
        .size("blocks", 1..=8)
        .input("input", gen::vec("blocks", 0.0f32..100.0))
        .inout(
            "output",
            gen::vec(
                |i: &Inputs| i.size("blocks") << i.size("log_b"),
                0.0f32..1.0,
            ),
        )
        .launch_with(|i| Launch::new(i.size("blocks") as u32, 1 << i.size("log_b")))
        .tolerance(Tolerance::exact())
        .reference(|i, o| {
            let b = 1 << i.size("log_b");
            let add = i.buf::<f32>("input");
            for (y, a) in o.buf::<f32>("output").chunks_mut(b).zip(add) {
                y.iter_mut().for_each(|y| *y += a);
            }
        });
}

/// The input and output lengths of an upsample case: B x C images of H x W, doubled each way.
fn upsample_len(i: &Inputs, factor: usize) -> usize {
    i.size("b") * i.size("c") * i.size("h") * i.size("w") * factor
}

/// upsample: nearest-neighbour 2x upsampling of B x C images forward (each pixel copied to its
/// 2 x 2 square) and backward (each square's gradients summed), by a thread per input pixel in
/// blocks of 256, or in 16 x 16 blocks with `float2` accesses (the grid's z over B x C).
pub fn upsample(s: &mut Suite) {
    let flat = |i: &Inputs| Launch::cover(upsample_len(i, 1), 256);
    let tiled = |i: &Inputs| {
        let (w, h) = (i.size("w") as u32, i.size("h") as u32);
        let bc = (i.size("b") * i.size("c")) as u32;
        Launch::new((w.div_ceil(16), h.div_ceil(16), bc), (16, 16))
    };
    for (k, tiled_launch) in [
        ("upsample_forward_kernel", false),
        ("upsample_forward_kernel2", true),
    ] {
        s.check(k)
            .size("b", 1..=2)
            .size("c", 1..=3)
            .size("h", 1..=20)
            .size("w", 1..=20)
            .input("x", gen::vec(|i: &Inputs| upsample_len(i, 1), -1.0f32..1.0))
            .output::<f32>("out", |i: &Inputs| upsample_len(i, 4))
            .scalar("B", gen::size::<u64>("b"))
            .scalar("C", gen::size::<u64>("c"))
            .scalar("H", gen::size::<u64>("h"))
            .scalar("W", gen::size::<u64>("w"))
            .launch_with(move |i| if tiled_launch { tiled(i) } else { flat(i) })
            .tolerance(Tolerance::exact())
            .reference(|i, o| {
                let w = i.size("w");
                let x = i.buf::<f32>("x");
                for (k, y) in o.buf::<f32>("out").iter_mut().enumerate() {
                    let (row, col) = (k / (2 * w), k % (2 * w));
                    *y = x[(row / 2) * w + col / 2];
                }
            });
    }
    for (k, tiled_launch) in [
        ("upsample_backward_kernel", false),
        ("upsample_backward_kernel2", true),
    ] {
        s.check(k)
            .size("b", 1..=2)
            .size("c", 1..=3)
            .size("h", 1..=20)
            .size("w", 1..=20)
            .input(
                "dout",
                gen::vec(|i: &Inputs| upsample_len(i, 4), -1.0f32..1.0),
            )
            .output::<f32>("dx", |i: &Inputs| upsample_len(i, 1))
            .scalar("B", gen::size::<u64>("b"))
            .scalar("C", gen::size::<u64>("c"))
            .scalar("H", gen::size::<u64>("h"))
            .scalar("W", gen::size::<u64>("w"))
            .launch_with(move |i| if tiled_launch { tiled(i) } else { flat(i) })
            .tolerance(Tolerance::close(1e-6, 1e-6))
            .reference(|i, o| {
                let w = i.size("w");
                let d = i.buf::<f32>("dout");
                for (k, y) in o.buf::<f32>("dx").iter_mut().enumerate() {
                    let (row, col) = (k / w, k % w);
                    let at = |r: usize, c: usize| d[(2 * row + r) * 2 * w + 2 * col + c];
                    *y = (at(0, 0) + at(0, 1)) + (at(1, 0) + at(1, 1));
                }
            });
    }
}

/// gelu: the bias add and GELU (tanh form) of fp16 activations in place, a block per sequence
/// position (the grid's y over the batch), by `half2` (`gelu_bias_loop`, the width even) or one
/// half a thread (`gelu_bias_loop_base`); blocks of 128 (the program's below a width of 2048).
pub fn gelu(s: &mut Suite) {
    for k in ["gelu_bias_loop", "gelu_bias_loop_base"] {
        s.check(k)
            .size("batch", 1..=3)
            .size("seq", 1..=8)
            .size("half_width", 1..=300)
            .inout(
                "src",
                gen::vec(
                    |i: &Inputs| gelu_len(i),
                    gen::rounded::<half::f16>(-3.0..3.0),
                ),
            )
            .input(
                "bias",
                gen::vec(
                    |i: &Inputs| 2 * i.size("half_width"),
                    gen::rounded::<half::f16>(-1.0..1.0),
                ),
            )
            .scalar(
                "width",
                gen::from_sizes(|i| 2 * i.size("half_width") as i32),
            )
            .scalar("height", gen::size::<i32>("seq"))
            .launch_with(|i| Launch::new((i.size("seq") as u32, i.size("batch") as u32), 128))
            .tolerance(Tolerance::close(1e-3, 2.0 / 1024.0))
            .reference(|i, o| {
                let w = 2 * i.size("half_width");
                let bias = i.buf::<half::f16>("bias");
                for row in o.buf::<half::f16>("src").chunks_mut(w) {
                    for (v, b) in row.iter_mut().zip(bias) {
                        let t = half::f16::from_f32(v.to_f32() + b.to_f32()).to_f32();
                        let g = 0.5 * t * (1.0 + (0.797_884_6 * (t + 0.044715 * t * t * t)).tanh());
                        *v = half::f16::from_f32(g);
                    }
                }
            });
    }
}

fn gelu_len(i: &Inputs) -> usize {
    i.size("batch") * i.size("seq") * 2 * i.size("half_width")
}
