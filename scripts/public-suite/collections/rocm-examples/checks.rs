//! The checks of the rocm-examples kernels: one function per program, registering a check for
//! each of its kernels, with a Rust reference written from what the program's host code expects
//! (its own verification, or the algorithm it names). Copied by `scripts/public-suite.sh` into
//! the crate it generates (`src/checks/rocm_examples.rs`); the kernels are the programs' own,
//! unedited.
//!
//! Launch shapes are the programs' (block sizes, template arguments, one block where the program
//! relies on it); problem sizes vary around the programs' defaults.

use rocm_kernels::vector::UInt2;
use rocm_test::{gen, Inputs, Launch, Suite, Tolerance};

/// HIP-Basic/saxpy: `y = a * x + y`, blocks of 256.
pub fn saxpy(s: &mut Suite) {
    s.check("saxpy_kernel")
        .size("n", 1..=5000)
        .scalar("a", gen::value(-4.0f32..4.0))
        .input("d_x", gen::vec("n", -1.0f32..1.0))
        .inout("d_y", gen::vec("n", -1.0f32..1.0))
        .scalar("size", gen::size::<u32>("n"))
        .launch_with(|i| Launch::cover(i.size("n"), 256))
        .reference(|i, o| {
            let (a, x) = (i.scalar::<f32>("a"), i.buf::<f32>("d_x"));
            for (y, x) in o.buf::<f32>("d_y").iter_mut().zip(x) {
                *y += a * x;
            }
        });
}

/// HIP-Basic/matrix_multiplication: `C = A B` in 16 x 16 tiles; every dimension a multiple of
/// 16 (sizes count tiles), the grid covering C exactly, as the program requires.
pub fn matrix_multiplication(s: &mut Suite) {
    const B: usize = 16;
    s.check("matrix_multiplication_kernel<16>")
        .size("a_rows", 1..=4)
        .size("a_cols", 1..=4)
        .size("b_cols", 1..=4)
        .input(
            "A",
            gen::vec(|i: &Inputs| B * B * i.size("a_rows") * i.size("a_cols"), -1.0f32..1.0),
        )
        .input(
            "B",
            gen::vec(|i: &Inputs| B * B * i.size("a_cols") * i.size("b_cols"), -1.0f32..1.0),
        )
        .output::<f32>("C", |i: &Inputs| B * B * i.size("a_rows") * i.size("b_cols"))
        .scalar("a_cols", gen::from_sizes(|i| (B * i.size("a_cols")) as u32))
        .launch_with(|i| {
            let (rows, cols) = (i.size("a_rows") as u32, i.size("b_cols") as u32);
            Launch::new((cols, rows), (B as u32, B as u32))
        })
        .tolerance(Tolerance::close(1e-4, 1e-4))
        .reference(|i, o| {
            let (n, k, m) = (
                B * i.size("a_rows"),
                B * i.size("a_cols"),
                B * i.size("b_cols"),
            );
            let (a, b) = (i.buf::<f32>("A"), i.buf::<f32>("B"));
            let c = o.buf::<f32>("C");
            for r in 0..n {
                for col in 0..m {
                    c[r * m + col] = (0..k).map(|j| a[r * k + j] * b[j * m + col]).sum();
                }
            }
        });
}

/// `out[y * w + x] = in[x * w + y]`.
fn transpose(width: usize, input: &[f32], out: &mut [f32]) {
    for y in 0..width {
        for x in 0..width {
            out[y * width + x] = input[x * width + y];
        }
    }
}

/// HIP-Basic/shared_memory: a 64 x 64 transpose through static shared memory, blocks of 4 x 4.
pub fn shared_memory(s: &mut Suite) {
    const W: usize = 64;
    s.check("matrix_transpose_kernel<64>")
        .output::<f32>("out", W * W)
        .input("in", gen::vec(W * W, -1.0f32..1.0))
        .launch(Launch::new((16, 16), (4, 4)))
        .reference(|i, o| transpose(W, i.buf("in"), o.buf("out")));
}

/// HIP-Basic/dynamic_shared: a transpose through dynamic shared memory of `width²` floats, in
/// one block of width x width threads (the kernel indexes shared memory by global position).
pub fn dynamic_shared(s: &mut Suite) {
    s.check("matrix_transpose_kernel")
        .size("width", 1..=32)
        .output::<f32>("out", |i: &Inputs| i.size("width").pow(2))
        .input("in", gen::vec(|i: &Inputs| i.size("width").pow(2), -1.0f32..1.0))
        .scalar("width", gen::size::<u32>("width"))
        .launch_with(|i| {
            let w = i.size("width") as u32;
            Launch::new(1, (w, w)).shared_bytes(4 * w * w)
        })
        .reference(|i, o| transpose(i.size("width"), i.buf("in"), o.buf("out")));
}

/// HIP-Basic/warp_shuffle: a transpose by `__shfl` in one block of width x width threads. The
/// source lane `y * width + x` is the thread's own lane modulo the wave size, on every target.
pub fn warp_shuffle(s: &mut Suite) {
    s.check("matrix_transpose_kernel")
        .size("width", 1..=16)
        .output::<f32>("out", |i: &Inputs| i.size("width").pow(2))
        .input("in", gen::vec(|i: &Inputs| i.size("width").pow(2), -1.0f32..1.0))
        .scalar("width", gen::size::<u32>("width"))
        .launch_with(|i| {
            let w = i.size("width") as u32;
            Launch::new(1, (w, w))
        })
        .reference(|i, o| {
            // in[y * w + x] goes to out[x * w + y]: the transpose, read the other way round.
            transpose(i.size("width"), i.buf("in"), o.buf("out"))
        });
}

/// HIP-Basic/moving_average: the mean (rounded down) of each window of 97, blocks of 256.
pub fn moving_average(s: &mut Suite) {
    const WINDOW: usize = 97;
    s.check("moving_average<256, 97>")
        .size("n", WINDOW..=3000)
        .input("input", gen::vec("n", 0u32..1_000_000))
        .output::<u32>("output", |i: &Inputs| i.size("n") - WINDOW + 1)
        .scalar("input_size", gen::size::<u32>("n"))
        .launch_with(|i| Launch::cover(i.size("n") - WINDOW + 1, 256))
        .reference(|i, o| {
            let input = i.buf::<u32>("input");
            for (out, w) in o.buf::<u32>("output").iter_mut().zip(input.windows(WINDOW)) {
                *out = w.iter().fold(0u32, |a, v| a.wrapping_add(*v)) / WINDOW as u32;
            }
        });
}

/// HIP-Basic/bit_extract: bits 8..12 of each word, in a grid-stride loop (at most 8 blocks of
/// 256, so that larger inputs take several strides).
pub fn bit_extract(s: &mut Suite) {
    s.check("bit_extract_kernel")
        .size("n", 1..=5000)
        .output::<u32>("d_output", "n")
        .input("d_input", gen::vec("n", 0u32..u32::MAX))
        .scalar("size", gen::size::<u64>("n"))
        .launch_with(|i| Launch::new(i.size("n").div_ceil(256).min(8) as u32, 256))
        .reference(|i, o| {
            for (out, v) in o.buf::<u32>("d_output").iter_mut().zip(i.buf::<u32>("d_input")) {
                *out = (v >> 8) & 0xf;
            }
        });
}

/// HIP-Basic/cooperative_groups: the sum of one block, and of each tile of 16, by a tree
/// reduction over a `thread_group` (the block, then the tiles). The tree halves the group, so
/// blocks are powers of two from 16 to 1024 threads (the program: 64).
pub fn cooperative_groups(s: &mut Suite) {
    const TILE: usize = 16;
    let block = |i: &Inputs| 1usize << i.size("log2_block");
    s.check("vector_reduce_kernel<16>")
        .size("log2_block", 4..=10)
        .input("d_vector", gen::vec(block, 0u32..1_000_000))
        .output::<u32>("d_block_reduced_vector", 1)
        .output::<u32>("d_partition_reduced_vector", move |i: &Inputs| block(i) / TILE)
        .launch_with(move |i| Launch::new(1, block(i) as u32))
        .reference(|i, o| {
            let sum = |v: &[u32]| v.iter().fold(0u32, |a, x| a.wrapping_add(*x));
            let x = i.buf::<u32>("d_vector");
            o.buf::<u32>("d_block_reduced_vector")[0] = sum(x);
            for (out, tile) in o
                .buf::<u32>("d_partition_reduced_vector")
                .iter_mut()
                .zip(x.chunks(TILE))
            {
                *out = sum(tile);
            }
        });
}

/// HIP-Basic/hello_world: two lines from every thread (the program: 2 blocks of 2).
pub fn hello_world(s: &mut Suite) {
    s.check("helloworld_kernel")
        .size("blocks", 1..=4)
        .size("threads", 1..=8)
        .launch_with(|i| Launch::new(i.size("blocks") as u32, i.size("threads") as u32))
        .printf(|i| {
            let mut lines = Vec::new();
            for b in 0..i.size("blocks") {
                for t in 0..i.size("threads") {
                    lines.push("Hello world from device or host!".to_owned());
                    lines.push(format!(
                        "Hello world from device kernel block {b} thread {t}!"
                    ));
                }
            }
            lines
        });
}

/// Applications/prefix_sum, one launch of each kernel as the program makes them (blocks of 128,
/// two items a thread):
/// - `block_prefix_sum` at offset 1 scans up to 256 items in place (inclusive) in one block;
/// - `device_prefix_sum` at offset 256, on segments of 256 whose last items already hold the
///   running total, adds the previous segment's total to the other items of each segment but
///   the first.
pub fn prefix_sum(s: &mut Suite) {
    s.check("block_prefix_sum")
        .size("n", 1..=256)
        .inout("d_data", gen::vec("n", -1.0f32..1.0))
        .scalar("size", gen::size::<i32>("n"))
        .scalar("offset", gen::from_sizes(|_| 1i32))
        .launch(Launch::new(1, 128).shared_bytes(4 * 256))
        .tolerance(Tolerance::close(1e-4, 1e-4))
        .reference(|_, o| {
            let mut total = 0.0f32;
            for v in o.buf::<f32>("d_data") {
                total += *v;
                *v = total;
            }
        });
    const SEGMENT: usize = 256;
    s.check("device_prefix_sum")
        .size("segments", 2..=8)
        .inout(
            "buffer",
            gen::vec(|i: &Inputs| SEGMENT * i.size("segments"), -1.0f32..1.0),
        )
        .scalar("size", gen::from_sizes(|i| (SEGMENT * i.size("segments")) as i32))
        .scalar("offset", gen::from_sizes(|_| SEGMENT as i32))
        // The program's grid: (size - offset) threads, less one offset per offset² items.
        .launch_with(|i| {
            let n = SEGMENT * i.size("segments");
            let mut threads = n - SEGMENT;
            threads -= threads / (SEGMENT * SEGMENT) * SEGMENT;
            Launch::new((threads / 128) as u32, 128)
        })
        .reference(|_, o| {
            let buf = o.buf::<f32>("buffer");
            for x in SEGMENT..buf.len() {
                if (x + 1) % SEGMENT != 0 {
                    buf[x] += buf[x / SEGMENT * SEGMENT - 1];
                }
            }
        });
}

/// Applications/histogram: per-block counts of 256 byte values, each thread counting its run of
/// `items_per_thread` bytes in 8-bit counters of dynamic shared memory (256 x block bytes).
/// Blocks are powers of two from 4 to 256 threads (the program: 128).
pub fn histogram(s: &mut Suite) {
    const BINS: usize = 256;
    let block = |i: &Inputs| 1usize << i.size("log2_block");
    let items = move |i: &Inputs| i.size("blocks") * block(i) * i.size("items_per_thread");
    s.check("histogram256_block")
        .size("blocks", 1..=4)
        .size("log2_block", 2..=8)
        .size("items_per_thread", 1..=64)
        .input("data", gen::vec(items, 0u8..=255))
        .output::<u32>("block_bins", |i: &Inputs| i.size("blocks") * BINS)
        .scalar("items_per_thread", gen::size::<i32>("items_per_thread"))
        .launch_with(move |i| {
            let b = block(i) as u32;
            Launch::new(i.size("blocks") as u32, b).shared_bytes(BINS as u32 * b)
        })
        .reference(move |i, o| {
            let per_thread = i.size("items_per_thread");
            let data = i.buf::<u8>("data");
            let bins = o.buf::<u32>("block_bins");
            bins.fill(0);
            for (b, block_data) in data.chunks(block(i) * per_thread).enumerate() {
                // 8-bit counters per thread, summed: a thread's count wraps at 256.
                for thread in block_data.chunks(per_thread) {
                    let mut counts = [0u8; BINS];
                    for v in thread {
                        counts[*v as usize] = counts[*v as usize].wrapping_add(1);
                    }
                    for (bin, c) in counts.iter().enumerate() {
                        bins[b * BINS + bin] += *c as u32;
                    }
                }
            }
        });
}

/// Applications/bitonic_sort: one compare-and-swap pass (`step`, `stage`) over 2^l items, a
/// thread a pair, as the program launches it (blocks of up to 256).
pub fn bitonic_sort(s: &mut Suite) {
    let len = |i: &Inputs| 1usize << i.size("log2_length");
    s.check("bitonic_sort_kernel")
        .size("log2_length", 1..=12)
        .size("step_pick", 0..=1000)
        .size("stage_pick", 0..=1000)
        .inout("array", gen::vec(len, 0u32..u32::MAX))
        .scalar("step", gen::from_sizes(|i| step(i) as u32))
        .scalar("stage", gen::from_sizes(|i| stage(i) as u32))
        .scalar("sort_increasing", gen::value(0u8..=1))
        .launch_with(move |i| {
            let threads = len(i) / 2;
            let block = threads.min(256);
            Launch::new((threads / block) as u32, block as u32)
        })
        .reference(|i, o| {
            let (step, stage) = (step(i), stage(i));
            let increasing = i.scalar::<u8>("sort_increasing") != 0;
            let a = o.buf::<u32>("array");
            let same_order = 1usize << step;
            let pair = 1usize << (step - stage);
            for t in 0..a.len() / 2 {
                let left = t % pair + t / pair * 2 * pair;
                let right = left + pair;
                let inc = increasing ^ ((t / same_order) % 2 == 1);
                let (lo, hi) = (a[left].min(a[right]), a[left].max(a[right]));
                (a[left], a[right]) = if inc { (lo, hi) } else { (hi, lo) };
            }
        });
}

/// The pass of a bitonic sort check: step < l, stage <= step.
fn step(i: &Inputs) -> usize {
    i.size("step_pick") % i.size("log2_length")
}

fn stage(i: &Inputs) -> usize {
    i.size("stage_pick") % (step(i) + 1)
}

/// Applications/floyd_warshall: one relaxation through node `k` of every pair, recording `k` as
/// the next hop where the path through it is shorter; 16 x 16 blocks, nodes a multiple of 16.
pub fn floyd_warshall(s: &mut Suite) {
    let nodes = |i: &Inputs| 16 * i.size("blocks");
    s.check("floyd_warshall_kernel")
        .size("blocks", 1..=3)
        .size("k_pick", 0..=1000)
        .inout("part_adjacency_matrix", gen::vec(move |i: &Inputs| nodes(i).pow(2), 0u32..1000))
        .inout("part_next_matrix", gen::vec(move |i: &Inputs| nodes(i).pow(2), 0u32..48))
        .scalar("nodes", gen::from_sizes(move |i| nodes(i) as u32))
        .scalar("k", gen::from_sizes(move |i| (i.size("k_pick") % nodes(i)) as u32))
        .launch_with(|i| {
            let b = i.size("blocks") as u32;
            Launch::new((b, b), (16, 16))
        })
        .reference(move |i, o| {
            let n = nodes(i);
            let k = i.size("k_pick") % n;
            let (adj, next) = o.pair::<u32, u32>("part_adjacency_matrix", "part_next_matrix");
            // Row and column k do not change in pass k (distances are not negative).
            let before = adj.to_vec();
            for y in 0..n {
                for x in 0..n {
                    let through = before[y * n + k] as i32 + before[k * n + x] as i32;
                    if through < before[y * n + x] as i32 {
                        adj[y * n + x] = through as u32;
                        next[y * n + x] = k as u32;
                    }
                }
            }
        });
}

/// Applications/convolution: a 5 x 5 convolution of a zero-padded grid with the program's own
/// mask (`convolution_filter_5x5`, read from the checkout) in `__constant__ float d_mask[25]`,
/// 32 x 32 blocks and the program's grid (one block more than needed in each direction).
pub fn convolution(s: &mut Suite, mask: [f32; 25]) {
    const MASK: usize = 5;
    let padded = |i: &Inputs| (i.size("width") + MASK - 1) * (i.size("height") + MASK - 1);
    s.check("convolution<5>")
        .size("width", 1..=80)
        .size("height", 1..=80)
        .global("d_mask", mask.to_vec())
        .input("input", gen::vec(padded, -1.0f32..1.0))
        .output::<f32>("output", |i: &Inputs| i.size("width") * i.size("height"))
        .by_value_with("input_dimensions", |i| {
            UInt2::new(i.size("width") as u32, i.size("height") as u32)
        })
        .launch_with(|i| {
            let (w, h) = (i.size("width") as u32, i.size("height") as u32);
            Launch::new(((w + 32) / 32, (h + 32) / 32), (32, 32))
        })
        .tolerance(Tolerance::close(1e-4, 1e-4))
        .reference(move |i, o| {
            let (w, h) = (i.size("width"), i.size("height"));
            let pw = w + MASK - 1;
            let input = i.buf::<f32>("input");
            let out = o.buf::<f32>("output");
            for y in 0..h {
                for x in 0..w {
                    let mut sum = 0.0f32;
                    for my in 0..MASK {
                        for mx in 0..MASK {
                            sum += input[(y + my) * pw + x + mx] * mask[my * MASK + mx];
                        }
                    }
                    out[y * w + x] = sum;
                }
            }
        });
}
