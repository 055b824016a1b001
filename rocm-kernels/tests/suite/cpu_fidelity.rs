//! Real-world HIP on the cpu backend (tests/corpus/kernels/fidelity.hip): every kernel gives the
//! results computed here in every way the cpu backend runs a block (region form as waves and as
//! whole blocks, per-thread fibers, the race check's reversed fibers) at wave sizes 32 and 64,
//! in blocks of many shapes; and the build runs each the way asserted here (region form, or
//! fibers with the reason named).

use rocm_kernels::runtime::{CpuExec, CpuOptions, Device, Dim3, LaunchConfig, Module};
use rocm_kernels_corpus::{FIDELITY, FIDELITY_EXECUTION};

/// Every way the cpu backend runs a block, at both wave sizes: (wave, what, module).
fn modules() -> Vec<(usize, &'static str, Module)> {
    let mut out = Vec::new();
    for wave in [32u32, 64] {
        for (what, exec, race_check) in [
            ("regions", CpuExec::Regions, false),
            ("blocks", CpuExec::Blocks, false),
            ("fibers", CpuExec::Fibers, false),
            ("race check", CpuExec::Regions, true),
        ] {
            let device = Device::cpu(CpuOptions {
                wave_size: wave,
                threads: 2,
                exec,
                race_check,
                ..CpuOptions::default()
            });
            let m = device.load(FIDELITY).expect("load the fidelity corpus");
            out.push((wave as usize, what, m));
        }
    }
    out
}

/// The kernels' input: small values, some above 10 and 20, one in 23 of them 7.
fn input(n: usize) -> Vec<i32> {
    (0..n).map(|i| ((i * 7 + 3) % 23) as i32).collect()
}

/// Launches `kernel(in, out)` with `grid` blocks of `block` and `per_thread` outputs per thread
/// (poisoned with -1 before the launch).
fn run(m: &Module, kernel: &str, grid: u32, block: Dim3, per_thread: usize) -> Vec<i32> {
    let d = m.device();
    let n = grid as usize * block.count() as usize;
    let inb = d.upload(&input(n)).unwrap();
    let mut out = d.upload(&vec![-1i32; n * per_thread]).unwrap();
    m.kernel(kernel)
        .unwrap()
        .launch(LaunchConfig::new(grid, block))
        .arg(&inb)
        .arg(&mut out)
        .run(&d.stream().unwrap())
        .unwrap_or_else(|e| panic!("{kernel}: {e}"));
    out.to_vec().unwrap()
}

/// One block of a launch, as a reference computes it.
struct Block<'a> {
    /// The wave size.
    ws: usize,
    dim: Dim3,
    /// The block's index in the grid.
    index: usize,
    /// The block's part of the input, by linear thread index.
    v: &'a [i32],
}

impl Block<'_> {
    fn n(&self) -> usize {
        self.v.len()
    }

    /// The input of the thread mirrored in the block (linear index n - 1 - t).
    fn mirror(&self, t: usize) -> i32 {
        self.v[self.n() - 1 - t]
    }

    /// The value thread `t` reads in a shuffle among the threads for which `active` holds.
    fn shfl(&self, t: usize, op: Shfl, width: usize, active: &dyn Fn(usize) -> bool) -> i32 {
        self.v[source(t, self.n(), self.ws, op, width, active)]
    }
}

/// Checks `kernel` in every mode, wave size and block shape against `want(block) -> the block's
/// outputs`.
fn check(kernel: &str, blocks: &[Dim3], per_thread: usize, want: impl Fn(&Block) -> Vec<i32>) {
    const GRID: u32 = 3;
    for (ws, what, m) in modules() {
        for &dim in blocks {
            let got = run(&m, kernel, GRID, dim, per_thread);
            let n = dim.count() as usize;
            let all = input(GRID as usize * n);
            for index in 0..GRID as usize {
                let block = Block {
                    ws,
                    dim,
                    index,
                    v: &all[index * n..(index + 1) * n],
                };
                let expected = want(&block);
                let got = &got[index * n * per_thread..(index + 1) * n * per_thread];
                if let Some(i) = (0..expected.len()).find(|&i| got[i] != expected[i]) {
                    panic!(
                        "{kernel}, {what} at wave {ws}, block {dim:?}: block {index} element {i} \
                         is {}, want {}",
                        got[i], expected[i]
                    );
                }
            }
        }
    }
}

/// How a wave's shuffle picks its source (the cpu runtime's rule, and AMD hardware's for the
/// lanes that exist): a source outside the wave, outside the block or not taking part gives a
/// lane its own value.
#[derive(Clone, Copy)]
enum Shfl {
    Idx(usize),
    Up(usize),
    Down(usize),
    Xor(usize),
}

/// The thread lane `t` of a block of `n` threads reads in a shuffle at wave `ws`.
fn source(
    t: usize,
    n: usize,
    ws: usize,
    op: Shfl,
    width: usize,
    active: &dyn Fn(usize) -> bool,
) -> usize {
    let width = if width == 0 || width > ws || !width.is_power_of_two() {
        ws
    } else {
        width
    };
    let (base, lane) = (t - t % ws, t % ws);
    let (seg, in_seg) = (lane & !(width - 1), lane & (width - 1));
    let src = match op {
        Shfl::Idx(s) => Some(seg + (s & (width - 1))),
        Shfl::Up(d) => in_seg.checked_sub(d).map(|_| lane - d),
        Shfl::Down(d) => (in_seg + d < width).then_some(lane + d),
        Shfl::Xor(m) => Some(lane ^ m).filter(|&x| x < seg + width),
    };
    match src {
        Some(s) if s < ws && base + s < n && active(base + s) => base + s,
        _ => t,
    }
}

fn all_active(_: usize) -> bool {
    true
}

/// A butterfly `v = op(v, shfl_xor(v, o, width))` over the whole block, for `offsets`.
fn butterfly(
    v: &[i32],
    ws: usize,
    width: usize,
    offsets: impl Iterator<Item = usize>,
    op: impl Fn(i32, i32) -> i32,
) -> Vec<i32> {
    let n = v.len();
    let mut cur = v.to_vec();
    for o in offsets {
        cur = (0..n)
            .map(|t| {
                op(
                    cur[t],
                    cur[source(t, n, ws, Shfl::Xor(o), width, &all_active)],
                )
            })
            .collect();
    }
    cur
}

/// Kernels whose shared tile is 64 threads wide.
const BLOCK_OF_64: [Dim3; 1] = [Dim3::new(64, 1, 1)];

#[testkit::test]
fn each_kernel_runs_the_way_the_build_says() {
    let expected: &[(&str, &str)] = &[
        (
            "count_under_uniform_ternary",
            "fibers: `__syncthreads_count` is under `?:`",
        ),
        (
            "or_under_uniform_and",
            "fibers: `__syncthreads_or` is under `&&`",
        ),
        ("shuffle_in_divergent_if", "regions"),
        ("helper_under_ternary", "fibers: it calls `pair_sum`"),
        ("shuffles_any_shape", "regions"),
        ("trailing_return_helpers", "regions"),
        (
            "functor_with_collective",
            "fibers: it uses `WaveMax`, whose call operator waits",
        ),
        (
            "apply_functor<WaveMax>",
            "fibers: it is instantiated with `WaveMax`, which waits",
        ),
        ("apply_plain_functor<Doubler>", "regions"),
        ("functor_across_barrier", "regions"),
        ("lambdas_at_barrier_level", "regions"),
        (
            "capturing_lambda_across_barrier",
            "fibers: the lambda `plus_base` captures variables and is used after a barrier",
        ),
        ("structs_across_barriers", "regions"),
        ("auto_from_a_local", "regions"),
        ("tiled_template<64, 3>", "regions"),
        (
            "template_helper_collective<8>",
            "fibers: it calls `segment_sum`",
        ),
        ("macros_and_unroll", "regions"),
        ("groups_block_and_tiles", "regions"),
        (
            "groups_generic_reduce<16>",
            "fibers: it calls `group.sync()`",
        ),
        ("amd_device_intrinsics", "regions"),
    ];
    for (kernel, how) in FIDELITY_EXECUTION {
        let want = expected
            .iter()
            .find(|(k, _)| k == kernel)
            .unwrap_or_else(|| panic!("no expectation for `{kernel}` ({how})"));
        if want.1 == "regions" {
            assert_eq!(*how, "regions", "{kernel}");
        } else {
            assert!(how.starts_with(want.1), "{kernel}: {how}");
        }
    }
    assert_eq!(FIDELITY_EXECUTION.len(), expected.len());
}

#[testkit::test]
fn barriers_under_conditions_the_whole_block_shares() {
    let blocks = [
        Dim3::new(128, 1, 1),
        Dim3::new(5, 3, 1),
        Dim3::new(33, 1, 1),
    ];
    // Even blocks count, odd ones take the other side of `?:`.
    check("count_under_uniform_ternary", &blocks, 1, |b| {
        let c = b.v.iter().filter(|&&v| v > 10).count() as i32;
        vec![if b.index % 2 == 0 { c } else { -1 }; b.n()]
    });
    check("or_under_uniform_and", &blocks, 1, |b| {
        vec![i32::from(b.v.contains(&7)); b.n()]
    });
}

#[testkit::test]
fn shuffles_under_divergent_branches_and_helpers_under_ternaries() {
    let blocks = [
        Dim3::new(1, 1, 1),
        Dim3::new(3, 1, 1),
        Dim3::new(33, 1, 1),
        Dim3::new(65, 1, 1),
        Dim3::new(100, 1, 1),
    ];
    check("shuffle_in_divergent_if", &blocks, 1, |b| {
        let odd = |t: usize| t % 2 == 1;
        (0..b.n())
            .map(|t| match odd(t) {
                true => b.v[t] + b.shfl(t, Shfl::Xor(2), b.ws, &odd),
                false => b.v[t],
            })
            .collect()
    });
    check("helper_under_ternary", &blocks, 1, |b| {
        let taken = |t: usize| t & 2 != 0;
        (0..b.n())
            .map(|t| match taken(t) {
                true => b.v[t] + b.shfl(t, Shfl::Xor(1), b.ws, &taken),
                false => -b.v[t],
            })
            .collect()
    });
}

#[testkit::test]
fn shuffles_in_blocks_of_any_shape() {
    let blocks = [
        Dim3::new(3, 2, 1),
        Dim3::new(3, 3, 1),
        Dim3::new(6, 2, 1),
        Dim3::new(4, 3, 1),
        Dim3::new(2, 5, 1),
        Dim3::new(5, 3, 2),
        Dim3::new(7, 5, 3),
        Dim3::new(1, 1, 1),
        Dim3::new(33, 1, 1),
        Dim3::new(65, 1, 1),
        Dim3::new(96, 1, 1),
        Dim3::new(16, 16, 1),
    ];
    check("shuffles_any_shape", &blocks, 1, |b| {
        let ws = b.ws;
        (0..b.n())
            .map(|t| {
                let base = t - t % ws;
                let wave = &b.v[base..(base + ws).min(b.n())];
                let m = wave.iter().filter(|&&x| x > 11).count() as i32;
                b.shfl(t, Shfl::Idx(0), ws, &all_active)
                    + 3 * b.shfl(t, Shfl::Xor(1), ws, &all_active)
                    + 7 * b.shfl(t, Shfl::Down(3), ws, &all_active)
                    + 11 * b.shfl(t, Shfl::Up(5), 16, &all_active)
                    + 13 * m
                    + 17 * (t % ws) as i32
            })
            .collect()
    });
}

#[testkit::test]
fn helpers_with_trailing_return_types_functors_and_lambdas() {
    let blocks = [
        Dim3::new(64, 1, 1),
        Dim3::new(256, 1, 1),
        Dim3::new(100, 1, 1),
    ];
    check("trailing_return_helpers", &blocks, 1, |b| {
        let offsets = std::iter::successors(Some(b.ws / 2), |o| (*o > 1).then_some(o / 2));
        let sums = butterfly(b.v, b.ws, b.ws, offsets, |x, y| x + y);
        (0..b.n()).map(|t| sums[t] * 1000 + b.mirror(t)).collect()
    });
    let wave_max = |b: &Block| {
        let offsets = std::iter::successors(Some(1), |o| (o * 2 < b.ws).then_some(o * 2));
        butterfly(b.v, b.ws, b.ws, offsets, i32::max)
    };
    check("functor_with_collective", &blocks, 1, wave_max);
    check("apply_functor<WaveMax>", &blocks, 1, wave_max);
    check("apply_plain_functor<Doubler>", &blocks, 1, |b| {
        b.v.iter().map(|v| 2 * v).collect()
    });
    check("functor_across_barrier", &blocks, 1, |b| {
        (0..b.n()).map(|t| b.mirror(t) * 3 + t as i32).collect()
    });
    check("lambdas_at_barrier_level", &blocks, 1, |b| {
        (0..b.n())
            .map(|t| b.mirror(t) * b.mirror(t) + 1000 * t as i32)
            .collect()
    });
    check("capturing_lambda_across_barrier", &blocks, 1, |b| {
        (0..b.n()).map(|t| 1 + b.mirror(t) + b.v[t]).collect()
    });
}

#[testkit::test]
fn structs_auto_and_templates_across_barriers() {
    let blocks = [
        Dim3::new(64, 1, 1),
        Dim3::new(256, 1, 1),
        Dim3::new(100, 1, 1),
    ];
    check("structs_across_barriers", &blocks, 1, |b| {
        let n = b.n();
        let mut sum = vec![0i32; n];
        for round in 0..2 {
            for (s, v) in sum.iter_mut().zip(b.v) {
                *s += v;
            }
            let s = sum.clone();
            for t in 0..n {
                // `fresh` starts at its default member initialisers every round.
                sum[t] += s[(t + 1) % n] + round + 100;
            }
        }
        (0..n)
            .map(|t| sum[t] * 7 + 2 + 100 + b.v[t] * 3 + t as i32)
            .collect()
    });
    check("auto_from_a_local", &blocks, 1, |b| {
        (0..b.n()).map(|t| 2 * b.mirror(t) + 2 * b.v[t]).collect()
    });
    check("tiled_template<64, 3>", &BLOCK_OF_64, 1, |b| {
        (0..b.n())
            .map(|t| (0..64).step_by(3).map(|k| b.v[(t + k) % 64]).sum())
            .collect()
    });
    check("template_helper_collective<8>", &blocks, 1, |b| {
        let mut cur = b.v.to_vec();
        for o in [4, 2, 1] {
            cur = (0..b.n())
                .map(|t| cur[t] + cur[source(t, b.n(), b.ws, Shfl::Down(o), 8, &all_active)])
                .collect();
        }
        cur
    });
}

#[testkit::test]
fn macros_and_pragma_unroll_around_barriers() {
    check("macros_and_unroll", &BLOCK_OF_64, 1, |b| {
        (0..b.n())
            .map(|t| (0..4).map(|k| b.v[(t + k) % 64]).sum::<i32>() + 3)
            .collect()
    });
}

#[testkit::test]
fn cooperative_groups_at_block_and_tile_level() {
    let blocks = [
        Dim3::new(64, 1, 1),
        Dim3::new(100, 1, 1),
        Dim3::new(10, 3, 1),
        Dim3::new(4, 4, 4),
    ];
    check("groups_block_and_tiles", &blocks, 8, |b| {
        const TILE: usize = 8;
        let (ws, n) = (b.ws, b.n());
        let reduce = |op: fn(i32, i32) -> i32| butterfly(b.v, ws, TILE, [1, 2, 4].into_iter(), op);
        let (sum, min, max) = (reduce(|x, y| x + y), reduce(i32::min), reduce(i32::max));
        let at = |t: usize, op: Shfl| b.shfl(t, op, TILE, &all_active);
        let mut out = Vec::new();
        for t in 0..n {
            // The tile's lanes that exist (the last tile of a block may be cut short).
            let first = t - t % TILE;
            let lanes = first..(first + TILE).min(n);
            let bits = |p: &dyn Fn(i32) -> bool| -> i64 {
                lanes
                    .clone()
                    .filter(|&l| p(b.v[l]))
                    .map(|l| 1i64 << (l - first))
                    .sum()
            };
            let active = bits(&|_| true);
            out.extend([
                sum[t],
                min[t] * 100 + max[t],
                at(t, Shfl::Down(1)) + 100 * at(t, Shfl::Up(2)),
                at(t, Shfl::Xor(2)) + 100 * at(t, Shfl::Idx(5)),
                bits(&|x| x > 10) as i32,
                i32::from(bits(&|x| x > 20) != 0)
                    + 2 * i32::from(bits(&|x| x >= 0) == active)
                    + 4 * i32::from(bits(&|x| x > 3) == active),
                (t % TILE + 100 * (t / TILE) + 10000 * TILE) as i32,
                b.mirror(t),
            ]);
        }
        out
    });
    // The reduction written for any group: the block's total, then each tile of 16's.
    check("groups_generic_reduce<16>", &BLOCK_OF_64, 1, |b| {
        let mut out = vec![-1; b.n()];
        out[0] = b.v.iter().sum();
        for (i, tile) in b.v.chunks(16).enumerate() {
            out[1 + i] = tile.iter().sum();
        }
        out
    });
}

/// HIP's `__fns32`/`__fns64`, written out: the `offset`-th set bit of `mask` from `base` up
/// (offset > 0) or down (offset < 0); offset 0: `base` if set; -1 if none.
fn find_nth_set(mask: u64, bits: usize, base: usize, offset: i32) -> i32 {
    let set = |b: usize| b < bits && (mask >> b) & 1 == 1;
    if offset == 0 {
        return if set(base) { base as i32 } else { -1 };
    }
    let mut order: Box<dyn Iterator<Item = usize>> = if offset > 0 {
        Box::new(base..bits)
    } else {
        Box::new((0..=base).rev())
    };
    let mut left = offset.unsigned_abs();
    order
        .find(|&b| {
            if set(b) {
                left -= 1;
            }
            set(b) && left == 0
        })
        .map_or(-1, |b| b as i32)
}

#[testkit::test]
fn amd_device_intrinsics_have_their_amd_meaning() {
    let blocks = [
        Dim3::new(64, 1, 1),
        Dim3::new(100, 1, 1),
        Dim3::new(3, 7, 1),
    ];
    check("amd_device_intrinsics", &blocks, 8, |b| {
        let (ws, n) = (b.ws, b.n());
        let mut out = Vec::new();
        for t in 0..n {
            let x = (b.v[t] as u32).wrapping_mul(2654435761);
            let base = t - t % ws;
            // readfirstlane: the wave's first lane, then (odd lanes) its first odd lane.
            let mut first = b.v[base];
            if t % 2 == 1 {
                first += 1000 * b.v[base + 1];
            }
            let next = b.shfl(t, Shfl::Idx((t % ws + 1) % ws), ws, &all_active);
            out.extend([
                ((x >> 5) & 0x1ff) as i32 + (0x987 << 9),
                ((x & !(0x3f << 8)) | ((t as u32 & 0x3f) << 8)) as i32,
                find_nth_set(0xf0f0_f0f0, 64, t % 64, 2)
                    + 100 * find_nth_set(0xf0f0_f0f0, 32, 31 - t % 32, -3),
                (((b.v[t] + 1) as u64) << 20).trailing_zeros() as i32 - 100,
                first,
                0,
                next + 1000 * (t % b.dim.x as usize) as i32,
                1,
            ]);
        }
        out
    });
}
