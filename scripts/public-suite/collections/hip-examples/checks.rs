//! The checks of the ROCm/HIP-Examples kernels: one function per program of `programs.txt`,
//! registering a check for each of its kernels. Copied by `scripts/public-suite.sh` into the crate
//! it generates (`src/checks/hip_examples.rs`); the kernels are the programs' own, unedited.
//!
//! Launch shapes are the programs' (block sizes, the grid their host code computes); problem
//! sizes are smaller than the programs' (which time 1-64 M elements). A kernel whose reference
//! would repeat long floating-point code (the binomial tree, the n-body forces, the Haar wavelet) is
//! checked differentially: on a GPU against the cpu backend, on the cpu against outputs a GPU
//! recorded (`scripts/public-suite/snapshots/hip-examples`).

use rocm_kernels::vector::{Float4, UChar4};
use rocm_kernels::vector::UInt2;
use rocm_test::proptest::strategy::Strategy;
use rocm_test::{gen, Inputs, Launch, Suite, Tolerance};

/// The cases of a differential check: few and small, since their outputs are committed.
const SNAPSHOT_CASES: u32 = 4;

/// HIP-Examples-Applications/BinomialOption: the price of four options a block by a binomial
/// tree of 254 steps (the kernel's shared arrays hold 255 nodes; the program launches numSteps
/// + 1 threads a block, one block per four options).
pub fn binomial_option(s: &mut Suite) {
    const STEPS: i32 = 254;
    s.check("binomial_options")
        .size("blocks", 1..=4)
        .scalar("numSteps", gen::from_sizes(|_| STEPS))
        .input("randArray", gen::vec("blocks", gen::each::<Float4>(0.0f32..1.0)))
        .output::<Float4>("out", "blocks")
        .launch_with(|i| Launch::new(i.size("blocks") as u32, STEPS as u32 + 1))
        .tolerance(Tolerance::close(1e-3, 1e-3))
        .cases(SNAPSHOT_CASES)
        .differential();
}

/// HIP-Examples-Applications/BitonicSort: one compare-and-swap pass (`stage`, `passOfStage`)
/// over 2^l items, a thread a pair, in blocks of up to 256 as the program launches it.
pub fn bitonic_sort(s: &mut Suite) {
    let len = |i: &Inputs| 1usize << i.size("log2_length");
    let stage = |i: &Inputs| i.size("stage_pick") % i.size("log2_length");
    let pass = move |i: &Inputs| i.size("pass_pick") % (stage(i) + 1);
    s.check("bitonicSort")
        .size("log2_length", 1..=12)
        .size("stage_pick", 0..=1000)
        .size("pass_pick", 0..=1000)
        .inout("theArray", gen::vec(len, 0u32..u32::MAX))
        .scalar("stage", gen::from_sizes(move |i| stage(i) as u32))
        .scalar("passOfStage", gen::from_sizes(move |i| pass(i) as u32))
        .scalar("direction", gen::value(0u32..=1))
        .launch_with(move |i| {
            let threads = len(i) / 2;
            let block = threads.min(256);
            Launch::new((threads / block) as u32, block as u32)
        })
        .reference(move |i, o| {
            let (stage, pass) = (stage(i), pass(i));
            let increasing = i.scalar::<u32>("direction") != 0;
            let a = o.buf::<u32>("theArray");
            let same_direction = 1usize << stage;
            let pair = 1usize << (stage - pass);
            for t in 0..a.len() / 2 {
                let left = t % pair + t / pair * 2 * pair;
                let right = left + pair;
                let inc = increasing ^ ((t / same_direction) % 2 == 1);
                let (lo, hi) = (a[left].min(a[right]), a[left].max(a[right]));
                (a[left], a[right]) = if inc { (lo, hi) } else { (hi, lo) };
            }
        });
}

/// HIP-Examples-Applications/FastWalshTransform: one butterfly step of the transform of 2^l
/// values, a thread a pair, in blocks of up to 256 (the program: 256).
pub fn fast_walsh_transform(s: &mut Suite) {
    let len = |i: &Inputs| 1usize << i.size("log2_length");
    let step = |i: &Inputs| 1usize << (i.size("step_pick") % i.size("log2_length"));
    s.check("fastWalshTransform")
        .size("log2_length", 1..=12)
        .size("step_pick", 0..=1000)
        .inout("tArray", gen::vec(len, -1.0f32..1.0))
        .scalar("step", gen::from_sizes(move |i| step(i) as i32))
        .launch_with(move |i| {
            let threads = len(i) / 2;
            let block = threads.min(256);
            Launch::new((threads / block) as u32, block as u32)
        })
        .reference(move |i, o| {
            let step = step(i);
            let a = o.buf::<f32>("tArray");
            for t in 0..a.len() / 2 {
                let pair = 2 * step * (t / step) + t % step;
                let (t1, t2) = (a[pair], a[pair + step]);
                a[pair] = t1 + t2;
                a[pair + step] = t1 - t2;
            }
        });
}

/// HIP-Examples-Applications/FloydWarshall: one relaxation through node `pass` of every pair,
/// recording it as the next hop where the path through it is shorter; 16 x 16 blocks.
pub fn floyd_warshall(s: &mut Suite) {
    let nodes = |i: &Inputs| 16 * i.size("blocks");
    s.check("floydWarshallPass")
        .size("blocks", 1..=3)
        .size("k_pick", 0..=1000)
        .inout(
            "pathDistanceBuffer",
            gen::vec(move |i: &Inputs| nodes(i).pow(2), 0u32..1000),
        )
        .inout(
            "pathBuffer",
            gen::vec(move |i: &Inputs| nodes(i).pow(2), 0u32..48),
        )
        .scalar("numNodes", gen::from_sizes(move |i| nodes(i) as u32))
        .scalar(
            "pass",
            gen::from_sizes(move |i| (i.size("k_pick") % nodes(i)) as u32),
        )
        .launch_with(|i| {
            let b = i.size("blocks") as u32;
            Launch::new((b, b), (16, 16))
        })
        .reference(move |i, o| {
            let n = nodes(i);
            let k = i.size("k_pick") % n;
            let (dist, next) = o.pair::<u32, u32>("pathDistanceBuffer", "pathBuffer");
            // Row and column k do not change in pass k (distances are not negative).
            let before = dist.to_vec();
            for y in 0..n {
                for x in 0..n {
                    let through = before[y * n + k] as i32 + before[k * n + x] as i32;
                    if through < before[y * n + x] as i32 {
                        dist[y * n + x] = through as u32;
                        next[y * n + x] = k as u32;
                    }
                }
            }
        });
}

/// HIP-Examples-Applications/HelloWorld: each character plus one (the program decodes
/// "GdkknVnqkc"), one thread a character, no bounds check: the grid covers the string exactly.
pub fn hello_world(s: &mut Suite) {
    let n = |i: &Inputs| i.size("blocks") * i.size("threads");
    s.check("helloworld")
        .size("blocks", 1..=4)
        .size("threads", 1..=64)
        .input("in", gen::vec(n, 0i8..=126))
        .output::<i8>("out", n)
        .launch_with(|i| Launch::new(i.size("blocks") as u32, i.size("threads") as u32))
        .reference(|i, o| {
            for (out, c) in o.buf::<i8>("out").iter_mut().zip(i.buf::<i8>("in")) {
                *out = c + 1;
            }
        });
}

/// HIP-Examples-Applications/Histogram: per-block counts of 256 values, 128 values a thread,
/// blocks of 128 threads (the program's GROUP_SIZE) and 128 x 256 bytes of dynamic shared
/// memory for the threads' 8-bit counters.
pub fn histogram(s: &mut Suite) {
    const BINS: usize = 256;
    const GROUP: usize = 128;
    const ITERATIONS: usize = BINS / 2;
    s.check("histogram256")
        .size("blocks", 1..=2)
        .input(
            "data",
            gen::vec(|i: &Inputs| i.size("blocks") * GROUP * ITERATIONS, 0u32..BINS as u32),
        )
        .output::<u32>("binResult", |i: &Inputs| i.size("blocks") * BINS)
        .launch_with(|i| {
            Launch::new(i.size("blocks") as u32, GROUP as u32).shared_bytes((GROUP * BINS) as u32)
        })
        .reference(|i, o| {
            let bins = o.buf::<u32>("binResult");
            bins.fill(0);
            for (b, block) in i.buf::<u32>("data").chunks(GROUP * ITERATIONS).enumerate() {
                for v in block {
                    bins[b * BINS + *v as usize] += 1;
                }
            }
        });
}

/// HIP-Examples-Applications/MatrixMultiplication: `C = A B` with float4 loads, each thread a
/// 4 x 4 tile of C, blocks of 8 x 8 (the program's blockSize): C's sides are multiples of 32,
/// A's width a multiple of 4.
pub fn matrix_multiplication(s: &mut Suite) {
    const BLOCK: usize = 8;
    let rows = |i: &Inputs| 4 * BLOCK * i.size("row_blocks");
    let cols = |i: &Inputs| 4 * BLOCK * i.size("col_blocks");
    let inner = |i: &Inputs| 4 * i.size("inner4");
    s.check("mmmKernel")
        .size("row_blocks", 1..=2)
        .size("col_blocks", 1..=2)
        .size("inner4", 1..=16)
        .input(
            "matrixA",
            gen::vec(
                move |i: &Inputs| rows(i) * inner(i) / 4,
                gen::each::<Float4>(-1.0f32..1.0),
            ),
        )
        .input(
            "matrixB",
            gen::vec(
                move |i: &Inputs| inner(i) * cols(i) / 4,
                gen::each::<Float4>(-1.0f32..1.0),
            ),
        )
        .output::<Float4>("matrixC", move |i: &Inputs| rows(i) * cols(i) / 4)
        .scalar("widthA", gen::from_sizes(move |i| inner(i) as u32))
        .scalar("widthB", gen::from_sizes(move |i| cols(i) as u32))
        .launch_with(|i| {
            let (x, y) = (i.size("col_blocks") as u32, i.size("row_blocks") as u32);
            Launch::new((x, y), (BLOCK as u32, BLOCK as u32))
        })
        .tolerance(Tolerance::close(1e-4, 1e-4))
        .cases(SNAPSHOT_CASES)
        .differential();
}

/// HIP-Examples-Applications/PrefixSum:
/// - `group_prefixSum` scans up to 64 items (its shared array) in one block of 128 threads, the
///   program's first launch (offset 1); lengths are powers of two, since for others the tree
///   reads shared memory no thread wrote;
/// - `global_prefixSum` at offset 128 (the program's second launch, blocks of 128) adds to each
///   item but the last of every segment of 128 the total that ends the previous segment.
pub fn prefix_sum(s: &mut Suite) {
    s.check("group_prefixSum")
        .size("log2_length", 1..=6)
        .output::<f32>("output", |i: &Inputs| 1usize << i.size("log2_length"))
        .input(
            "input",
            gen::vec(|i: &Inputs| 1usize << i.size("log2_length"), -1.0f32..1.0),
        )
        .scalar("length", gen::from_sizes(|i| 1u32 << i.size("log2_length")))
        .scalar("idxOffset", gen::from_sizes(|_| 1u32))
        .launch(Launch::new(1, 128))
        .tolerance(Tolerance::close(1e-4, 1e-4))
        .reference(|i, o| {
            let mut total = 0.0f32;
            for (out, v) in o.buf::<f32>("output").iter_mut().zip(i.buf::<f32>("input")) {
                total += *v;
                *out = total;
            }
        });
    const OFFSET: usize = 128;
    s.check("global_prefixSum")
        .size("n", OFFSET + 1..=8 * OFFSET)
        .inout("buffer", gen::vec("n", -1.0f32..1.0))
        .scalar("offset", gen::from_sizes(|_| OFFSET as u32))
        .scalar("length", gen::size::<u32>("n"))
        .launch_with(|i| Launch::cover(i.size("n") - OFFSET, 128))
        .reference(|_, o| {
            let buf = o.buf::<f32>("buffer");
            for x in OFFSET..buf.len() {
                if (x + 1) % OFFSET != 0 {
                    buf[x] += buf[x - (x % OFFSET + 1)];
                }
            }
        });
}

/// HIP-Examples-Applications/RecursiveGaussian:
/// - `transpose_kernel`: an image of uchar4 pixels transposed through shared memory in 16 x 16
///   blocks (sides multiples of 16, as the program's images);
/// - `RecursiveGaussian_kernel`: the filter down each column, one thread a column, blocks of
///   16 (the program's blockSizeX), with coefficients of a Gaussian of sigma 2 to 10 (the
///   program's formulas): differential, 1 apart allowed where the float result is rounded to
///   a byte.
pub fn recursive_gaussian(s: &mut Suite) {
    const B: usize = 16;
    let (w, h) = (
        |i: &Inputs| B * i.size("wb"),
        |i: &Inputs| B * i.size("hb"),
    );
    s.check("transpose_kernel")
        .size("wb", 1..=4)
        .size("hb", 1..=4)
        .output::<UChar4>("output", move |i: &Inputs| w(i) * h(i))
        .input(
            "input",
            gen::vec(move |i: &Inputs| w(i) * h(i), gen::each::<UChar4>(0u8..=255)),
        )
        .scalar("width", gen::from_sizes(move |i| w(i) as u32))
        .scalar("height", gen::from_sizes(move |i| h(i) as u32))
        .scalar("blockSize", gen::from_sizes(|_| B as u32))
        .launch_with(|i| {
            Launch::new(
                (i.size("wb") as u32, i.size("hb") as u32),
                (B as u32, B as u32),
            )
        })
        .reference(move |i, o| {
            let (w, h) = (w(i), h(i));
            let input = i.buf::<UChar4>("input");
            let out = o.buf::<UChar4>("output");
            for y in 0..h {
                for x in 0..w {
                    out[y + x * h] = input[y * w + x];
                }
            }
        });
    // The program's coefficients (RecursiveGaussian::computeGaussParms), for a sigma.
    let coefficients = |i: &Inputs| {
        let sigma = i.size("sigma") as f32;
        let alpha = 1.695 / sigma;
        let ema = (-alpha).exp();
        let ema2 = (-2.0 * alpha).exp();
        let b1 = -2.0 * ema;
        let b2 = ema2;
        let k = (1.0 - ema) * (1.0 - ema) / (1.0 + 2.0 * alpha * ema - ema2);
        let a0 = k;
        let a1 = k * (alpha - 1.0) * ema;
        let a2 = k * (alpha + 1.0) * ema;
        let a3 = -k * ema2;
        let coefp = (a0 + a1) / (1.0 + b1 + b2);
        let coefn = (a2 + a3) / (1.0 + b1 + b2);
        [a0, a1, a2, a3, b1, b2, coefp, coefn]
    };
    let check = s.check("RecursiveGaussian_kernel");
    check
        .size("wb", 1..=2)
        .size("height", 1..=64)
        .size("sigma", 2..=10)
        .input(
            "input",
            gen::vec(
                move |i: &Inputs| w(i) * i.size("height"),
                gen::each::<UChar4>(0u8..=255),
            ),
        )
        .output::<UChar4>("output", move |i: &Inputs| w(i) * i.size("height"))
        .scalar("width", gen::from_sizes(move |i| w(i) as i32))
        .scalar("height", gen::size::<i32>("height"));
    for (k, name) in ["a0", "a1", "a2", "a3", "b1", "b2", "coefp", "coefn"]
        .into_iter()
        .enumerate()
    {
        check.scalar(name, gen::from_sizes(move |i| coefficients(i)[k]));
    }
    check
        .launch_with(|i| Launch::new(i.size("wb") as u32, B as u32))
        .tolerance(Tolerance::abs(1.0))
        .cases(SNAPSHOT_CASES)
        .differential();
}

/// HIP-Examples-Applications/dct: the 8 x 8 DCT (or its inverse) of each 8 x 8 block of a
/// matrix, through shared memory, blocks of 8 x 8; the cosine basis and its transpose are the
/// program's (`dct8x8`, computed here the same way). A Rust reference, not a differential
/// check: the cpu backend does not build this program (docs/public-suite.md), so it could not
/// be the GPU's oracle.
pub fn dct(s: &mut Suite) {
    const B: usize = 8;
    let basis = || {
        let mut m = vec![0.0f32; B * B];
        for j in 0..B {
            for i in 0..B {
                let c = if j == 0 { (1.0f32 / B as f32).sqrt() } else { (2.0f32 / B as f32).sqrt() };
                m[j * B + i] =
                    c * ((std::f32::consts::PI * (2 * i + 1) as f32 * j as f32) / (2 * B) as f32).cos();
            }
        }
        m
    };
    let transposed = move || {
        let m = basis();
        let mut t = vec![0.0f32; B * B];
        for j in 0..B {
            for i in 0..B {
                t[i * B + j] = m[j * B + i];
            }
        }
        t
    };
    let (w, h) = (|i: &Inputs| B * i.size("wb"), |i: &Inputs| B * i.size("hb"));
    s.check("DCTKernel")
        .size("wb", 1..=4)
        .size("hb", 1..=4)
        .output::<f32>("output", move |i: &Inputs| w(i) * h(i))
        .input("input", gen::vec(move |i: &Inputs| w(i) * h(i), 0.0f32..255.0))
        .input("dct8x8", basis())
        .input("dct8x8_trans", transposed())
        .scalar("width", gen::from_sizes(move |i| w(i) as u32))
        .scalar("blockWidth", gen::from_sizes(|_| B as u32))
        .scalar("inverse", gen::value(0u32..=1))
        .launch_with(|i| {
            Launch::new(
                (i.size("wb") as u32, i.size("hb") as u32),
                (B as u32, B as u32),
            )
        })
        .tolerance(Tolerance::close(1e-3, 1e-4))
        .reference(move |i, o| {
            // Per 8 x 8 block X: M1 X M2, M1 = dct8x8_trans and M2 = dct8x8 (the transform), or
            // the other way round (the inverse), as row-major 8 x 8 matrices.
            let (w, h) = (w(i), h(i));
            let (d, dt) = (i.buf::<f32>("dct8x8"), i.buf::<f32>("dct8x8_trans"));
            let (m1, m2) = if i.scalar::<u32>("inverse") != 0 { (d, dt) } else { (dt, d) };
            let x = i.buf::<f32>("input");
            let out = o.buf::<f32>("output");
            for by in (0..h).step_by(B) {
                for bx in (0..w).step_by(B) {
                    let at = |r: usize, c: usize| (by + r) * w + bx + c;
                    let mut inter = [0.0f32; B * B];
                    for j in 0..B {
                        for c in 0..B {
                            inter[j * B + c] = (0..B).map(|k| m1[j * B + k] * x[at(k, c)]).sum();
                        }
                    }
                    for j in 0..B {
                        for c in 0..B {
                            out[at(j, c)] = (0..B).map(|k| inter[j * B + k] * m2[k * B + c]).sum();
                        }
                    }
                }
            }
        });
}

/// The kernels of add4/hip-stream.cpp and their references, for float and double: `copy`,
/// `mul`, `add`, `triad` over exactly the grid (no bounds check) and their grid-stride
/// `_looper` forms (the program's: blocks of 256, at most 8 blocks here so that strides loop).
macro_rules! add4_checks {
    ($s:expr, $t:ty, $name:literal) => {{
        let s: &mut Suite = $s;
        let n = |i: &Inputs| 256 * i.size("blocks");
        let exact = |i: &Inputs| Launch::new(i.size("blocks") as u32, 256);
        let looped = |i: &Inputs| Launch::new(i.size("n").div_ceil(256).min(8) as u32, 256);
        s.check(concat!("copy<", $name, ">"))
            .size("blocks", 1..=16)
            .input("a", gen::vec(n, -1.0 as $t..1.0))
            .output::<$t>("c", n)
            .launch_with(exact)
            .reference(|i, o| o.buf::<$t>("c").copy_from_slice(i.buf::<$t>("a")));
        s.check(concat!("mul<", $name, ">"))
            .size("blocks", 1..=16)
            .output::<$t>("b", n)
            .input("c", gen::vec(n, -1.0 as $t..1.0))
            .launch_with(exact)
            .reference(|i, o| {
                for (b, c) in o.buf::<$t>("b").iter_mut().zip(i.buf::<$t>("c")) {
                    *b = 3.0 * c;
                }
            });
        s.check(concat!("add<", $name, ">"))
            .size("blocks", 1..=16)
            .input("a", gen::vec(n, -1.0 as $t..1.0))
            .input("b", gen::vec(n, -1.0 as $t..1.0))
            .input("d", gen::vec(n, -1.0 as $t..1.0))
            .input("e", gen::vec(n, -1.0 as $t..1.0))
            .output::<$t>("c", n)
            .launch_with(exact)
            .reference(|i, o| {
                let (a, b, d, e) = (
                    i.buf::<$t>("a"),
                    i.buf::<$t>("b"),
                    i.buf::<$t>("d"),
                    i.buf::<$t>("e"),
                );
                for (k, c) in o.buf::<$t>("c").iter_mut().enumerate() {
                    *c = a[k] + b[k] + d[k] + e[k];
                }
            });
        s.check(concat!("triad<", $name, ">"))
            .size("blocks", 1..=16)
            .output::<$t>("a", n)
            .input("b", gen::vec(n, -1.0 as $t..1.0))
            .input("c", gen::vec(n, -1.0 as $t..1.0))
            .launch_with(exact)
            .tolerance(Tolerance::close(1e-6, 1e-6))
            .reference(|i, o| {
                let (b, c) = (i.buf::<$t>("b"), i.buf::<$t>("c"));
                for (k, a) in o.buf::<$t>("a").iter_mut().enumerate() {
                    *a = b[k] + 3.0 * c[k];
                }
            });
        s.check(concat!("copy_looper<", $name, ", 1>"))
            .size("n", 1..=5000)
            .input("a", gen::vec("n", -1.0 as $t..1.0))
            .output::<$t>("c", "n")
            .scalar("ARRAY_SIZE", gen::size::<i32>("n"))
            .launch_with(looped)
            .reference(|i, o| o.buf::<$t>("c").copy_from_slice(i.buf::<$t>("a")));
        s.check(concat!("mul_looper<", $name, ">"))
            .size("n", 1..=5000)
            .output::<$t>("b", "n")
            .input("c", gen::vec("n", -1.0 as $t..1.0))
            .scalar("ARRAY_SIZE", gen::size::<i32>("n"))
            .launch_with(looped)
            .reference(|i, o| {
                for (b, c) in o.buf::<$t>("b").iter_mut().zip(i.buf::<$t>("c")) {
                    *b = 3.0 * c;
                }
            });
        s.check(concat!("add_looper<", $name, ">"))
            .size("n", 1..=5000)
            .input("a", gen::vec("n", -1.0 as $t..1.0))
            .input("b", gen::vec("n", -1.0 as $t..1.0))
            .input("d", gen::vec("n", -1.0 as $t..1.0))
            .input("e", gen::vec("n", -1.0 as $t..1.0))
            .output::<$t>("c", "n")
            .scalar("ARRAY_SIZE", gen::size::<i32>("n"))
            .launch_with(looped)
            .reference(|i, o| {
                let (a, b, d, e) = (
                    i.buf::<$t>("a"),
                    i.buf::<$t>("b"),
                    i.buf::<$t>("d"),
                    i.buf::<$t>("e"),
                );
                for (k, c) in o.buf::<$t>("c").iter_mut().enumerate() {
                    *c = a[k] + b[k] + d[k] + e[k];
                }
            });
        s.check(concat!("triad_looper<", $name, ">"))
            .size("n", 1..=5000)
            .output::<$t>("a", "n")
            .input("b", gen::vec("n", -1.0 as $t..1.0))
            .input("c", gen::vec("n", -1.0 as $t..1.0))
            .scalar("ARRAY_SIZE", gen::size::<i32>("n"))
            .launch_with(looped)
            .tolerance(Tolerance::close(1e-6, 1e-6))
            .reference(|i, o| {
                let (b, c) = (i.buf::<$t>("b"), i.buf::<$t>("c"));
                for (k, a) in o.buf::<$t>("a").iter_mut().enumerate() {
                    *a = b[k] + 3.0 * c[k];
                }
            });
    }};
}

/// add4/hip-stream.cpp: the STREAM kernels (with a four-way add) the program launches, for
/// float and double.
pub fn add4(s: &mut Suite) {
    add4_checks!(s, f32, "float");
    add4_checks!(s, f64, "double");
}

/// cuda-stream/stream.cpp: the STREAM kernels for `real` (`typedef double real;`), blocks of 128 with a bounds
/// check (the program's default block size is 128; its grid covers N and one block more).
pub fn cuda_stream(s: &mut Suite) {
    let cover = |i: &Inputs| Launch::cover(i.size("n"), 128);
    let v = || gen::vec("n", -1.0f64..1.0);
    s.check("set_array<double>")
        .size("n", 1..=5000)
        .output::<f64>("a", "n")
        .scalar("value", gen::value(-4.0f64..4.0))
        .scalar("len", gen::size::<i32>("n"))
        .launch_with(cover)
        .reference(|i, o| o.buf::<f64>("a").fill(i.scalar::<f64>("value")));
    s.check("STREAM_Copy<double>")
        .size("n", 1..=5000)
        .input("a", v())
        .output::<f64>("b", "n")
        .scalar("len", gen::size::<i32>("n"))
        .launch_with(cover)
        .reference(|i, o| o.buf::<f64>("b").copy_from_slice(i.buf::<f64>("a")));
    s.check("STREAM_Scale<double>")
        .size("n", 1..=5000)
        .input("a", v())
        .output::<f64>("b", "n")
        .scalar("scale", gen::value(-4.0f64..4.0))
        .scalar("len", gen::size::<i32>("n"))
        .launch_with(cover)
        .reference(|i, o| {
            let scale = i.scalar::<f64>("scale");
            for (b, a) in o.buf::<f64>("b").iter_mut().zip(i.buf::<f64>("a")) {
                *b = scale * a;
            }
        });
    s.check("STREAM_Add<double>")
        .size("n", 1..=5000)
        .input("a", v())
        .input("b", v())
        .output::<f64>("c", "n")
        .scalar("len", gen::size::<i32>("n"))
        .launch_with(cover)
        .reference(|i, o| {
            let (a, b) = (i.buf::<f64>("a"), i.buf::<f64>("b"));
            for (k, c) in o.buf::<f64>("c").iter_mut().enumerate() {
                *c = a[k] + b[k];
            }
        });
    s.check("STREAM_Triad<double>")
        .size("n", 1..=5000)
        .input("a", v())
        .input("b", v())
        .output::<f64>("c", "n")
        .scalar("scalar", gen::value(-4.0f64..4.0))
        .scalar("len", gen::size::<i32>("n"))
        .launch_with(cover)
        .tolerance(Tolerance::close(1e-12, 1e-12))
        .reference(|i, o| {
            let (a, b, k) = (i.buf::<f64>("a"), i.buf::<f64>("b"), i.scalar::<f64>("scalar"));
            for (j, c) in o.buf::<f64>("c").iter_mut().enumerate() {
                *c = a[j] + k * b[j];
            }
        });
}

/// The n-body forces of mini-nbody (blocks of 256, positions in [-1, 1]): differential, since
/// the sums of nearly singular terms (softening 1e-9) are only reproducible up to rounding. One
/// or two blocks, two cases: the velocities of 512 bodies are already 40 KB of snapshot.
fn nbody(s: &mut Suite, soa: bool) {
    const BLOCK: usize = 256;
    let n = |i: &Inputs| BLOCK * i.size("blocks");
    let check = s.check("bodyForce");
    check.size("blocks", 1..=2);
    if soa {
        check
            .input("p", gen::vec(n, gen::each::<Float4>(-1.0f32..1.0)))
            .inout("v", gen::vec(n, gen::each::<Float4>(-1.0f32..1.0)));
    } else {
        // `Body`: x, y, z, vx, vy, vz.
        check.inout("p", gen::vec(move |i: &Inputs| 6 * n(i), -1.0f32..1.0));
    }
    check
        .scalar("dt", gen::value(0.001f32..0.01))
        .scalar("n", gen::from_sizes(move |i| n(i) as i32))
        .launch_with(|i| Launch::new(i.size("blocks") as u32, BLOCK as u32))
        .tolerance(Tolerance::close(1e-3, 1e-3))
        .cases(2)
        .differential();
}

/// mini-nbody/hip/nbody-orig.cpp: an array of `Body` structs.
pub fn nbody_orig(s: &mut Suite) {
    nbody(s, false);
}

/// mini-nbody/hip/nbody-block.cpp: positions staged through shared memory a block at a time.
pub fn nbody_block(s: &mut Suite) {
    nbody(s, true);
}

/// mini-nbody/hip/nbody-soa.cpp: positions and velocities in two float4 arrays.
pub fn nbody_soa(s: &mut Suite) {
    nbody(s, true);
}

/// reduction/reduction.cpp: the sum of an int array by atomicAdd of per-thread partial sums,
/// one, four or sixteen items a thread a stride (the program: blocks of 256, at most 2048 of
/// them; here at most 8 so that strides loop). The four- and sixteen-wide kernels read past
/// the end unless the length is a multiple of their width: lengths here are.
pub fn reduction(s: &mut Suite) {
    for (kernel, width) in [
        ("atomic_reduction_kernel", 1),
        ("atomic_reduction_kernel2", 16),
        ("atomic_reduction_kernel3", 4),
    ] {
        let n = move |i: &Inputs| width * i.size("items");
        s.check(kernel)
            .size("items", 1..=2000)
            .input("in", gen::vec(n, -1000i32..1000))
            .inout("out", gen::vec(1, 0i32..1))
            .scalar("ARRAYSIZE", gen::from_sizes(move |i| n(i) as i32))
            .launch_with(|i| Launch::new(i.size("items").div_ceil(256).min(8) as u32, 256))
            .reference(|i, o| {
                let sum = i.buf::<i32>("in").iter().fold(0i32, |a, v| a.wrapping_add(*v));
                o.buf::<i32>("out")[0] = o.buf::<i32>("out")[0].wrapping_add(sum);
            });
    }
}

/// strided-access/benchmark-hip.cpp: `z = x + y` at every `stride`-th float, in a grid-stride
/// loop (the program: 256 blocks of 256, strides 1 to 32); items not on the stride keep their
/// values.
pub fn strided_access(s: &mut Suite) {
    let len = |i: &Inputs| i.size("n") * i.size("stride");
    s.check("elementwise_add<float>")
        .size("n", 1..=2000)
        .size("stride", 1..=32)
        .input("x", gen::vec(len, -1.0f32..1.0))
        .input("y", gen::vec(len, -1.0f32..1.0))
        .inout("z", gen::vec(len, -1.0f32..1.0))
        .scalar("stride", gen::size::<u32>("stride"))
        .scalar("size", gen::size::<u32>("n"))
        .launch_with(|i| Launch::new(i.size("n").div_ceil(256).min(4) as u32, 256))
        .reference(|i, o| {
            let stride = i.size("stride");
            let (x, y) = (i.buf::<f32>("x"), i.buf::<f32>("y"));
            let z = o.buf::<f32>("z");
            for k in 0..i.size("n") {
                z[k * stride] = x[k * stride] + y[k * stride];
            }
        });
}

/// vectorAdd/vectoradd_hip.cpp: `a = b + c` over a width x height grid in 16 x 16 blocks.
pub fn vector_add(s: &mut Suite) {
    // Widths are multiples of 16, as the program's (1024): the kernel checks only
    // `y * width + x < width * height`, so a thread past a row's end would write the next row.
    let n = |i: &Inputs| 16 * i.size("w16") * i.size("height");
    s.check("vectoradd_float")
        .size("w16", 1..=6)
        .size("height", 1..=100)
        .output::<f32>("a", n)
        .input("b", gen::vec(n, -1.0f32..1.0))
        .input("c", gen::vec(n, -1.0f32..1.0))
        .scalar("width", gen::from_sizes(|i| 16 * i.size("w16") as i32))
        .scalar("height", gen::size::<i32>("height"))
        .launch_with(|i| {
            let (w, h) = (16 * i.size("w16") as u32, i.size("height") as u32);
            Launch::new((w / 16, h.div_ceil(16)), (16, 16))
        })
        .reference(|i, o| {
            let (b, c) = (i.buf::<f32>("b"), i.buf::<f32>("c"));
            for (k, a) in o.buf::<f32>("a").iter_mut().enumerate() {
                *a = b[k] + c[k];
            }
        });
}

/// A mask of multiples of 1/8 in [-1, 1]: with pixels of 0 to 255 every product and sum is
/// exact in f32, so the kernels' rounding to int is the reference's whatever the order of
/// operations (and contraction into fma).
fn eighths() -> impl Strategy<Value = f32> + Send + Sync + 'static {
    (-8i32..=8).prop_map(|v| v as f32 / 8.0)
}

/// HIP-Examples-Applications/SimpleConvolution: a mask of 3 x 3 or 5 x 5 (the program's sizes)
/// over an image padded by the mask's radius on each side, rounded to int; as one 2-D pass,
/// and as two 1-D passes (rows into a transposed float buffer, then columns). Blocks of 256
/// (the program's localSize), the grid covering each pass's items.
pub fn simple_convolution(s: &mut Suite) {
    let mask = |i: &Inputs| 2 * i.size("radius") + 1;
    let padded_w = move |i: &Inputs| i.size("width") + mask(i) - 1;
    let padded_h = move |i: &Inputs| i.size("height") + mask(i) - 1;
    let padded = move |i: &Inputs| padded_w(i) * padded_h(i);
    let image = move |i: &Inputs| i.size("width") * i.size("height");
    let dims = |i: &Inputs| UInt2::new(i.size("width") as u32, i.size("height") as u32);
    let padded_dims = move |i: &Inputs| UInt2::new(padded_w(i) as u32, padded_h(i) as u32);
    s.check("simpleNonSeparableConvolution")
        .size("radius", 1..=2)
        .size("width", 1..=64)
        .size("height", 1..=64)
        .input("input", gen::vec(padded, 0u32..=255))
        .input("mask", gen::vec(move |i: &Inputs| mask(i).pow(2), eighths()))
        .output::<i32>("output", image)
        .by_value_with("inputDimensions", dims)
        .by_value_with("maskDimensions", move |i| {
            UInt2::new(mask(i) as u32, mask(i) as u32)
        })
        .scalar("nExWidth", gen::from_sizes(move |i| padded_w(i) as u32))
        .launch_with(move |i| Launch::cover(image(i), 256))
        .reference(move |i, o| {
            let (w, h, m, pw) = (i.size("width"), i.size("height"), mask(i), padded_w(i));
            let (input, weights) = (i.buf::<u32>("input"), i.buf::<f32>("mask"));
            let out = o.buf::<i32>("output");
            for y in 0..h {
                for x in 0..w {
                    let mut sum = 0.0f32;
                    for j in 0..m {
                        for k in 0..m {
                            sum += input[(y + j) * pw + x + k] as f32 * weights[j * m + k];
                        }
                    }
                    out[y * w + x] = (sum + 0.5) as i32;
                }
            }
        });
    // Pass 1: each of width x padded-height threads filters a row; the result is transposed
    // (`tmpOutput[x * paddedHeight + y]`).
    s.check("simpleSeparableConvolutionPass1")
        .size("radius", 1..=2)
        .size("width", 1..=64)
        .size("height", 1..=64)
        .input("input", gen::vec(padded, 0u32..=255))
        .input("rowFilter", gen::vec(mask, eighths()))
        .output::<f32>("tmpOutput", move |i: &Inputs| i.size("width") * padded_h(i))
        .by_value_with("inputDimensions", dims)
        .scalar("filterSize", gen::from_sizes(move |i| mask(i) as u32))
        .by_value_with("exInputDimensions", padded_dims)
        .launch_with(move |i| Launch::cover(i.size("width") * padded_h(i), 256))
        .reference(move |i, o| {
            let (w, m, pw, ph) = (i.size("width"), mask(i), padded_w(i), padded_h(i));
            let (input, filter) = (i.buf::<u32>("input"), i.buf::<f32>("rowFilter"));
            let out = o.buf::<f32>("tmpOutput");
            for y in 0..ph {
                for x in 0..w {
                    let mut sum = 0.0f32;
                    for k in 0..m {
                        sum += input[y * pw + x + k] as f32 * filter[k];
                    }
                    out[x * ph + y] = sum;
                }
            }
        });
    // Pass 2: each of width x height threads filters a column of the transposed rows.
    s.check("simpleSeparableConvolutionPass2")
        .size("radius", 1..=2)
        .size("width", 1..=64)
        .size("height", 1..=64)
        .input(
            "input",
            gen::vec(
                move |i: &Inputs| i.size("width") * padded_h(i),
                (0i32..=255 * 5).prop_map(|v| v as f32 / 8.0),
            ),
        )
        .input("colFilter", gen::vec(mask, eighths()))
        .output::<i32>("output", image)
        .by_value_with("inputDimensions", dims)
        .scalar("filterSize", gen::from_sizes(move |i| mask(i) as u32))
        .by_value_with("exInputDimensions", padded_dims)
        .launch_with(move |i| Launch::cover(image(i), 256))
        .reference(move |i, o| {
            let (w, h, m, ph) = (i.size("width"), i.size("height"), mask(i), padded_h(i));
            let (input, filter) = (i.buf::<f32>("input"), i.buf::<f32>("colFilter"));
            let out = o.buf::<i32>("output");
            for y in 0..w {
                for x in 0..h {
                    let mut sum = 0.0f32;
                    for k in 0..m {
                        sum += input[y * ph + x + k] * filter[k];
                    }
                    out[x * w + y] = (sum + 0.5) as i32;
                }
            }
        });
}

/// HIP-Examples-Applications/dwtHaar1D: the Haar decomposition of 2^L items a block (blocks of
/// 2^L / 2 threads, L up to 5: the kernel's shared array holds 32), all L levels in one launch,
/// the first launch's scaling by 1/sqrt(length) when `levelsDone` is 0. Detail coefficients go
/// to `coefsSignal` above the blocks' averages (which the program finishes on the host).
/// Differential: `rsqrtf` is an approximation whose last bits differ between backends.
pub fn dwt_haar_1d(s: &mut Suite) {
    let len = |i: &Inputs| i.size("blocks") << i.size("levels");
    s.check("dwtHaar1D")
        .size("levels", 1..=5)
        .size("blocks", 1..=16)
        .input("inSignal", gen::vec(len, -1.0f32..1.0))
        .inout("coefsSignal", gen::vec(len, -1.0f32..1.0))
        .output::<f32>("AverageSignal", "blocks")
        .scalar("tLevels", gen::size::<u32>("levels"))
        .scalar("signalLength", gen::from_sizes(move |i| len(i) as u32))
        .scalar("levelsDone", gen::value(0u32..=1))
        .scalar("mLevels", gen::size::<u32>("levels"))
        .launch_with(|i| Launch::new(i.size("blocks") as u32, (1u32 << i.size("levels")) / 2))
        .tolerance(Tolerance::close(1e-5, 1e-4))
        .cases(SNAPSHOT_CASES)
        .differential();
}

/// gpu-burn/BurnKernel.cpp: the burn-in's sgemm, `C = alpha A B + beta C` for square matrices
/// (A indexed by columns, B by rows, as the kernel does; every leading dimension is K), one
/// thread an element in 16 x 16 blocks (the program: 512 x 512). The kernel is `extern "C"`
/// inside `namespace gpuburn`: the cpu backend names it `gpuburn::hip_sgemm_kernel`
/// (docs/public-suite.md, Findings).
pub fn gpu_burn(s: &mut Suite) {
    const B: usize = 16;
    let n = |i: &Inputs| B * i.size("blocks");
    let square = move |i: &Inputs| n(i) * n(i);
    let side = move |i: &Inputs| n(i) as i32;
    s.check("gpuburn::hip_sgemm_kernel")
        .size("blocks", 1..=3)
        .scalar("M", gen::from_sizes(side))
        .scalar("N", gen::from_sizes(side))
        .scalar("K", gen::from_sizes(side))
        .scalar("alpha", gen::value(-2.0f32..2.0))
        .input("A", gen::vec(square, -1.0f32..1.0))
        .scalar("lda", gen::from_sizes(side))
        .input("B", gen::vec(square, -1.0f32..1.0))
        .scalar("ldb", gen::from_sizes(side))
        .scalar("beta", gen::value(-2.0f32..2.0))
        .inout("C", gen::vec(square, -1.0f32..1.0))
        .scalar("ldc", gen::from_sizes(side))
        .launch_with(|i| {
            let b = i.size("blocks") as u32;
            Launch::new((b, b), (B as u32, B as u32))
        })
        .tolerance(Tolerance::close(1e-4, 1e-4))
        .reference(move |i, o| {
            let n = n(i);
            let (alpha, beta) = (i.scalar::<f32>("alpha"), i.scalar::<f32>("beta"));
            let (a, b) = (i.buf::<f32>("A"), i.buf::<f32>("B"));
            let c = o.buf::<f32>("C");
            for y in 0..n {
                for x in 0..n {
                    let mut acc = beta * c[y * n + x];
                    for k in 0..n {
                        acc += alpha * a[y + k * n] * b[x * n + k];
                    }
                    c[y * n + x] = acc;
                }
            }
        });
}
