//! The kernel-language corpus (tests/corpus/kernels/features.hip, warp.hip) on the cpu backend,
//! at wave sizes 32 and 64, each both in region form and with per-thread fibers, against results
//! computed here; the checks written with `both` also run on an NVIDIA GPU when one is present
//! and nvcc built the corpus for it.

#![allow(clippy::needless_range_loop)] // index loops mirror the kernels being checked

use rocm_kernels::runtime::{
    CpuExec, CpuOptions, Device, Dim3, LaunchConfig, Module, RuntimeError,
};
use rocm_kernels_corpus::FEATURES;

fn device_with(wave_size: u32, exec: CpuExec) -> Device {
    Device::cpu(CpuOptions {
        wave_size,
        threads: 2,
        exec,
        ..CpuOptions::default()
    })
}

fn device(wave_size: u32) -> Device {
    device_with(wave_size, CpuExec::Regions)
}

fn module(wave_size: u32) -> Module {
    device(wave_size).load(FEATURES).expect("load the corpus")
}

/// The corpus on the cpu backend at both wave sizes and every execution form.
fn cpu_modules() -> Vec<(u32, Module)> {
    let mut out = Vec::new();
    for exec in [CpuExec::Regions, CpuExec::Blocks, CpuExec::Fibers] {
        for wave in [32, 64] {
            let m = device_with(wave, exec)
                .load(FEATURES)
                .expect("load the corpus");
            out.push((wave, m));
        }
    }
    out
}

/// The corpus on a race-checked cpu device: every launch also runs with the threads of each
/// block in reverse order, and fails if the results differ. A correct kernel must pass. (The
/// race check runs kernels on fibers whatever `exec` says.)
fn race_checked_module(wave_size: u32) -> Module {
    Device::cpu(CpuOptions {
        wave_size,
        race_check: true,
        ..CpuOptions::default()
    })
    .load(FEATURES)
    .expect("load the corpus")
}

/// Run `f` on the cpu backend at both wave sizes (region form, fibers, race-checked), and on an
/// NVIDIA GPU (wave 32) when this machine has one and the corpus was built with nvcc (see
/// `corpus/build.rs`).
fn both(f: impl Fn(u32, &Module)) {
    for (wave, m) in cpu_modules() {
        f(wave, &m);
    }
    for wave in [32, 64] {
        f(wave, &race_checked_module(wave));
    }
    if let Some(m) = nvidia_module() {
        f(m.device().info().wave_size, &m);
    }
}

/// Run `f` on the cpu backend only, at both wave sizes: for behaviour GPUs leave undefined and
/// the cpu backend defines (a shuffle reading a lane that already returned gets the caller's own
/// value; CUDA on sm_90 was seen to return 0).
fn cpu_only(f: impl Fn(u32, &Module)) {
    for (wave, m) in cpu_modules() {
        f(wave, &m);
    }
    for wave in [32, 64] {
        f(wave, &race_checked_module(wave));
    }
}

/// The corpus on the first NVIDIA device, if there is one and the corpus has code for it.
fn nvidia_module() -> Option<Module> {
    let device = Device::all()
        .into_iter()
        .find(|d| d.backend() == rocm_kernels::Backend::Nvidia)?;
    match device.load(FEATURES) {
        Ok(m) => Some(m),
        Err(e) => {
            eprintln!("nvidia device present but the corpus cannot load on it: {e}");
            None
        }
    }
}

#[testkit::test]
fn saxpy() {
    both(|_, m| {
        let d = m.device();
        let n = 1000usize;
        let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let xb = d.upload(&x).unwrap();
        let mut yb = d.upload(&vec![1.0f32; n]).unwrap();
        let s = d.stream().unwrap();
        m.kernel("saxpy")
            .unwrap()
            .launch(LaunchConfig::cover(n, 256))
            .arg(&2.0f32)
            .arg(&xb)
            .arg(&mut yb)
            .arg(&(n as i32))
            .run(&s)
            .unwrap();
        let y = yb.to_vec().unwrap();
        for i in 0..n {
            assert_eq!(y[i], 2.0 * i as f32 + 1.0);
        }
    });
}

#[testkit::test]
fn coordinates_in_three_dimensions() {
    both(|_, m| {
        let d = m.device();
        let grid = Dim3::new(3, 2, 2);
        let block = Dim3::new(4, 2, 3);
        let total = (grid.count() * block.count()) as usize;
        let mut out = d.alloc::<u32>(total).unwrap();
        m.kernel("coords")
            .unwrap()
            .launch(LaunchConfig::new(grid, block))
            .arg(&mut out)
            .run(&d.stream().unwrap())
            .unwrap();
        let out = out.to_vec().unwrap();
        let mut k = 0;
        for bz in 0..2 {
            for by in 0..2 {
                for bx in 0..3 {
                    for tz in 0..3 {
                        for ty in 0..2 {
                            for tx in 0..4 {
                                let want = (tx + 1)
                                    + 100 * (ty + 1)
                                    + 10000 * (tz + 1)
                                    + 1000000 * bx
                                    + 10000000 * by
                                    + 100000000 * bz;
                                assert_eq!(out[k], want, "element {k}");
                                k += 1;
                            }
                        }
                    }
                }
            }
        }
    });
}

#[testkit::test]
fn static_shared_block_reduction() {
    both(|_, m| {
        let d = m.device();
        let n: usize = 256 * 7 + 13;
        let input: Vec<f32> = (0..n).map(|i| (i % 17) as f32).collect();
        let blocks = n.div_ceil(256);
        let inb = d.upload(&input).unwrap();
        let mut out = d.alloc::<f32>(blocks).unwrap();
        m.kernel("block_sum_static")
            .unwrap()
            .launch(LaunchConfig::cover(n, 256))
            .arg(&inb)
            .arg(&mut out)
            .arg(&(n as i32))
            .run(&d.stream().unwrap())
            .unwrap();
        let out = out.to_vec().unwrap();
        for (b, got) in out.iter().enumerate() {
            let want: f32 = input[b * 256..((b + 1) * 256).min(n)].iter().sum();
            assert_eq!(*got, want, "block {b}");
        }
    });
}

#[testkit::test]
fn dynamic_shared_memory() {
    both(|_, m| {
        let d = m.device();
        let (blocks, threads) = (5usize, 128usize);
        let input: Vec<i32> = (0..(blocks * threads) as i32).collect();
        let inb = d.upload(&input).unwrap();
        let mut out = d.alloc::<i32>(input.len()).unwrap();
        m.kernel("reverse_dynamic")
            .unwrap()
            .launch(
                LaunchConfig::new(blocks as u32, threads as u32).shared_bytes(4 * threads as u32),
            )
            .arg(&inb)
            .arg(&mut out)
            .run(&d.stream().unwrap())
            .unwrap();
        let out = out.to_vec().unwrap();
        for b in 0..blocks {
            for t in 0..threads {
                assert_eq!(out[b * threads + t], input[b * threads + threads - 1 - t]);
            }
        }

        let inputf: Vec<f32> = (0..(blocks * threads)).map(|i| i as f32).collect();
        let inb = d.upload(&inputf).unwrap();
        let mut out = d.alloc::<f32>(inputf.len()).unwrap();
        m.kernel("dynamic_macro")
            .unwrap()
            .launch(
                LaunchConfig::new(blocks as u32, threads as u32).shared_bytes(8 * threads as u32),
            )
            .arg(&inb)
            .arg(&mut out)
            .run(&d.stream().unwrap())
            .unwrap();
        let out = out.to_vec().unwrap();
        for b in 0..blocks {
            for t in 0..threads {
                let o = b * threads + (t + 1) % threads;
                assert_eq!(out[b * threads + t], 3.0 * inputf[o]);
            }
        }
    });
}

#[testkit::test]
fn syncthreads_count_and_or() {
    both(|_, m| {
        let d = m.device();
        let threads = 64usize;
        // Block 0: 10 positive; block 1: all positive; block 2: none.
        let mut input = vec![0i32; 3 * threads];
        for v in input.iter_mut().take(10) {
            *v = 1;
        }
        for v in input[threads..2 * threads].iter_mut() {
            *v = 5;
        }
        let inb = d.upload(&input).unwrap();
        let mut out = d.alloc::<i32>(9).unwrap();
        m.kernel("sync_predicates")
            .unwrap()
            .launch(LaunchConfig::new(3, threads as u32))
            .arg(&inb)
            .arg(&mut out)
            .run(&d.stream().unwrap())
            .unwrap();
        assert_eq!(out.to_vec().unwrap(), vec![10, 0, 1, 64, 1, 1, 0, 0, 0]);
    });
}

#[testkit::test]
fn atomics_on_every_type() {
    let (blocks, threads) = (8u32, 128u32);
    let n = (blocks * threads) as i32;
    let launch = |m: &Module| {
        let d = m.device();
        let ints = d.upload(&[0, 0, 0, 0, -1, 0, 0, 0, 0, 0]).unwrap();
        let uints = d.upload(&[0u32, 1000000, 0, 0]).unwrap();
        let ulls = d.upload(&[0u64, 0]).unwrap();
        let lls = d.upload(&[0i64]).unwrap();
        let f = d.upload(&[0.0f32, -1.0, 0.0]).unwrap();
        let dd = d.upload(&[0.0f64]).unwrap();
        let mut bufs = (ints, uints, ulls, lls, f, dd);
        let result = m
            .kernel("atomics")
            .unwrap()
            .launch(LaunchConfig::new(blocks, threads))
            .arg(&mut bufs.0)
            .arg(&mut bufs.1)
            .arg(&mut bufs.2)
            .arg(&mut bufs.3)
            .arg(&mut bufs.4)
            .arg(&mut bufs.5)
            .run(&d.stream().unwrap());
        (result, bufs)
    };
    // Which thread's atomicCAS wins (ints[8]) depends on the order threads run in, as on a GPU;
    // atomics never race, so the race detector passes it too.
    both(|_, m| {
        let (result, (ints, uints, ulls, lls, f, dd)) = launch(m);
        result.unwrap();
        let ints = ints.to_vec().unwrap();
        let xor = (0..n).fold(0, |a, i| a ^ i);
        assert_eq!(ints[0], n);
        assert_eq!(ints[1], -2 * n);
        assert_eq!(ints[2], -(n - 1));
        assert_eq!(ints[3], n - 1);
        assert_eq!(ints[4], i32::MIN, "and clears bits 0..31");
        assert_eq!(ints[5], i32::MAX, "or sets bits 0..31");
        assert_eq!(ints[6], xor);
        assert_eq!(ints[7], 7);
        assert!(ints[8] >= 1 && ints[8] <= n);
        assert_eq!(ints[9], 1, "exactly one CAS wins");
        let uints = uints.to_vec().unwrap();
        assert_eq!(uints[0], (n as u32) % 10);
        assert_eq!(uints[1], 1000000 - n as u32);
        assert_eq!(uints[2], 3 * n as u32);
        assert_eq!(uints[3], n as u32 - 1);
        assert_eq!(ulls.to_vec().unwrap(), vec![(n as u64) << 33, 5]);
        assert_eq!(lls.to_vec().unwrap(), vec![-(n as i64 - 1) * 1000000000]);
        assert_eq!(
            f.to_vec().unwrap(),
            vec![0.5 * n as f32, (n - 1) as f32, 1.5]
        );
        assert_eq!(dd.to_vec().unwrap(), vec![0.25 * n as f64]);
    });
}

#[testkit::test]
fn bit_intrinsics() {
    let m = module(64);
    let d = m.device();
    let input = [
        0u32,
        1,
        0x8000_0000,
        0xdead_beef,
        0x00f0_0f00,
        u32::MAX,
        12345,
        0x10,
    ];
    let inb = d.upload(&input).unwrap();
    let mut out = d.alloc::<u32>(10 * input.len()).unwrap();
    m.kernel("bits")
        .unwrap()
        .launch(LaunchConfig::new(1, input.len() as u32))
        .arg(&inb)
        .arg(&mut out)
        .run(&d.stream().unwrap())
        .unwrap();
    let out = out.to_vec().unwrap();
    for (i, &x) in input.iter().enumerate() {
        let y = (u64::from(x) << 32) | u64::from(!x);
        let o = &out[10 * i..10 * i + 10];
        assert_eq!(o[0], x.count_ones());
        assert_eq!(o[1], x.leading_zeros());
        assert_eq!(o[2], if x == 0 { 0 } else { x.trailing_zeros() + 1 });
        assert_eq!(o[3], x.reverse_bits());
        assert_eq!(o[4], y.count_ones());
        assert_eq!(o[5], u64::from(x).leading_zeros());
        let hi = y & 0xffff_ffff_0000_0000;
        assert_eq!(o[6], if hi == 0 { 0 } else { hi.trailing_zeros() + 1 });
        assert_eq!(o[7], (y.reverse_bits() >> 32) as u32);
        assert_eq!(o[8], ((u64::from(x) * 0x9e37_79b9) >> 32) as u32);
        let bytes = ((0x1122_3344u64) << 32 | u64::from(x)).to_le_bytes();
        let sel = [0u32, 4, 1, 5];
        let want = sel.iter().enumerate().fold(0u32, |a, (k, &s)| {
            a | u32::from(bytes[s as usize]) << (8 * k)
        });
        assert_eq!(o[9], want, "__byte_perm of {x:#x}");
    }
}

fn close(a: f32, b: f32) -> bool {
    (a - b).abs() <= 1e-5 + 1e-5 * b.abs()
}

#[testkit::test]
fn math_functions() {
    let m = module(32);
    let d = m.device();
    let input: Vec<f32> = (0..32).map(|i| i as f32 * 0.1).collect();
    let inb = d.upload(&input).unwrap();
    let mut out = d.alloc::<f32>(12 * input.len()).unwrap();
    let mut dout = d.alloc::<f64>(input.len()).unwrap();
    m.kernel("math")
        .unwrap()
        .launch(LaunchConfig::new(1, input.len() as u32))
        .arg(&inb)
        .arg(&mut out)
        .arg(&mut dout)
        .run(&d.stream().unwrap())
        .unwrap();
    let out = out.to_vec().unwrap();
    let dout = dout.to_vec().unwrap();
    for (i, &x) in input.iter().enumerate() {
        let o = &out[12 * i..12 * i + 12];
        let want = [
            x.exp(),
            x.exp(),
            1.0 / (x + 1.0).sqrt(),
            x.mul_add(2.0, 1.0),
            x / 3.0,
            x.sin() + x.cos(),
            (x + 1.0).ln(),
            (x + 1.0).powf(1.5),
            x.min(0.5) + x.max(0.25) + x.min(1.0),
            (x - 0.5).clamp(0.0, 1.0),
            x,
            ((x * 10.0) as i32).min(3) as f32 + 2.0,
        ];
        for k in 0..12 {
            assert!(
                close(o[k], want[k]),
                "x={x} output {k}: {} vs {}",
                o[k],
                want[k]
            );
        }
        let xd = f64::from(x);
        let wd = xd.sqrt() + 1.0 / (xd + 1.0).sqrt() + xd.mul_add(2.0, 0.5);
        assert!((dout[i] - wd).abs() < 1e-12);
    }
}

#[testkit::test]
fn vector_types() {
    let m = module(64);
    let d = m.device();
    let n = 16usize;
    let input: Vec<[f32; 4]> = (0..n).map(|i| [i as f32, 1.0, -2.0, 0.5]).collect();
    let inb = d.upload(&input).unwrap();
    let mut out = d.alloc::<[f32; 4]>(n).unwrap();
    let mut iout = d.alloc::<[i32; 2]>(n).unwrap();
    m.kernel("vectors")
        .unwrap()
        .launch(LaunchConfig::new(1, n as u32))
        .arg(&inb)
        .arg(&mut out)
        .arg(&mut iout)
        .run(&d.stream().unwrap())
        .unwrap();
    let out = out.to_vec().unwrap();
    let iout = iout.to_vec().unwrap();
    let w = [1.0f32, 2.0, 3.0, 4.0];
    for i in 0..n {
        for k in 0..4 {
            let r = input[i][k] * 2.0 + w[k] - 0.5 + w[k];
            assert_eq!(out[i][k], -r / 2.0);
        }
        assert_eq!(iout[i], [(i as i32 + 1) * 3, (2 * i as i32 + 1) * 3]);
    }
}

#[testkit::test]
fn half_and_bfloat16() {
    let m = module(64);
    let d = m.device();
    let input = [0.0f32, 1.0, -2.5, 0.1, 65504.0, 1e-7, 3.25, 70000.0];
    let inb = d.upload(&input).unwrap();
    let mut out = d.alloc::<f32>(3 * input.len()).unwrap();
    let mut bits = d.alloc::<u16>(2 * input.len()).unwrap();
    m.kernel("low_precision")
        .unwrap()
        .launch(LaunchConfig::new(1, input.len() as u32))
        .arg(&inb)
        .arg(&mut out)
        .arg(&mut bits)
        .run(&d.stream().unwrap())
        .unwrap();
    let out = out.to_vec().unwrap();
    let bits = bits.to_vec().unwrap();
    // IEEE binary16 bit patterns (round to nearest even) and bfloat16 ones.
    let half_bits = [
        0x0000u16, 0x3c00, 0xc100, 0x2e66, 0x7bff, 0x0002, 0x4280, 0x7c00,
    ];
    let bf16_bits = [
        0x0000u16, 0x3f80, 0xc020, 0x3dcd, 0x4780, 0x33d7, 0x4050, 0x4789,
    ];
    for i in 0..input.len() {
        assert_eq!(bits[2 * i], half_bits[i], "half of {}", input[i]);
        assert_eq!(bits[2 * i + 1], bf16_bits[i], "bfloat16 of {}", input[i]);
    }
    assert_eq!(out[3], 1.0);
    assert_eq!(out[4], 4.0, "(1 + 1)^2 in half");
    assert_eq!(out[3 * 2], -2.5);
    assert_eq!(out[3 * 2 + 2], -5.0, "bfloat16 2 * -2.5");
    assert!(out[3 * 7].is_infinite(), "70000 overflows half");
}

#[testkit::test]
fn template_instantiations_and_namespaces() {
    let m = module(32);
    let d = m.device();
    let mut names = m.kernel_names();
    names.sort();
    for want in [
        "scale<float>",
        "scale<int>",
        "scale<double>",
        "corpus::fill_iota",
    ] {
        assert!(
            names.iter().any(|n| n == want),
            "{want} missing from {names:?}"
        );
    }
    let s = d.stream().unwrap();
    let mut f = d.upload(&[1.0f32, 2.0, 3.0]).unwrap();
    m.kernel("scale<float>")
        .unwrap()
        .launch(LaunchConfig::new(1, 32))
        .arg(&mut f)
        .arg(&2.5f32)
        .arg(&3i32)
        .run(&s)
        .unwrap();
    assert_eq!(f.to_vec().unwrap(), vec![2.5, 5.0, 7.5]);
    let mut dd = d.upload(&[1.0f64, -1.0]).unwrap();
    m.kernel("scale<double>")
        .unwrap()
        .launch(LaunchConfig::new(1, 2))
        .arg(&mut dd)
        .arg(&-3.0f64)
        .arg(&2i32)
        .run(&s)
        .unwrap();
    assert_eq!(dd.to_vec().unwrap(), vec![-3.0, 3.0]);
    // A bfloat16 by value (`KernelArg` for `half::bf16`), its buffer round trip.
    use rocm_kernels::half::bf16;
    let mut b = d
        .upload(&[bf16::from_f32(1.5), bf16::from_f32(-2.0)])
        .unwrap();
    m.kernel("scale<__hip_bfloat16>")
        .unwrap()
        .launch(LaunchConfig::new(1, 2))
        .arg(&mut b)
        .arg(&bf16::from_f32(0.5))
        .arg(&2i32)
        .run(&s)
        .unwrap();
    assert_eq!(
        b.to_vec().unwrap(),
        vec![bf16::from_f32(0.75), bf16::from_f32(-1.0)]
    );
    let mut iota = d.alloc::<i32>(64).unwrap();
    m.kernel("corpus::fill_iota")
        .unwrap()
        .launch(LaunchConfig::new(2, 32))
        .arg(&mut iota)
        .arg(&100i32)
        .run(&s)
        .unwrap();
    assert_eq!(iota.to_vec().unwrap(), (100..164).collect::<Vec<i32>>());
}

#[testkit::test]
fn printf_and_passing_assert() {
    let m = module(64);
    let d = m.device();
    let inb = d.upload(&[5i32, 6, 7, 8]).unwrap();
    let mut out = d.alloc::<i32>(4).unwrap();
    m.kernel("print_and_assert")
        .unwrap()
        .launch(LaunchConfig::new(1, 4))
        .arg(&inb)
        .arg(&mut out)
        .run(&d.stream().unwrap())
        .unwrap();
    assert_eq!(out.to_vec().unwrap(), vec![6, 7, 8, 9]);
}

#[testkit::test]
fn tiled_transpose_with_2d_blocks() {
    both(|_, m| {
        let d = m.device();
        let (w, h) = (70usize, 45usize);
        let input: Vec<f32> = (0..w * h).map(|i| i as f32).collect();
        let inb = d.upload(&input).unwrap();
        let mut out = d.alloc::<f32>(w * h).unwrap();
        m.kernel("transpose_tiled")
            .unwrap()
            .launch(LaunchConfig::new(
                (w.div_ceil(16) as u32, h.div_ceil(16) as u32),
                (16, 16),
            ))
            .arg(&inb)
            .arg(&mut out)
            .arg(&(w as i32))
            .arg(&(h as i32))
            .run(&d.stream().unwrap())
            .unwrap();
        let out = out.to_vec().unwrap();
        for y in 0..h {
            for x in 0..w {
                assert_eq!(out[x * h + y], input[y * w + x]);
            }
        }
    });
}

#[testkit::test]
fn warp_collectives_follow_the_wave_size() {
    both(|wave, m| {
        let d = m.device();
        let (blocks, threads) = (2usize, 96usize); // a partial last wave at both sizes
        let input: Vec<i32> = (0..(blocks * threads) as i32).map(|i| i * 3 + 1).collect();
        let inb = d.upload(&input).unwrap();
        let mut out = d.alloc::<i32>(11 * input.len()).unwrap();
        m.kernel("warp_ops")
            .unwrap()
            .launch(LaunchConfig::new(blocks as u32, threads as u32))
            .arg(&inb)
            .arg(&mut out)
            .run(&d.stream().unwrap())
            .unwrap();
        let out = out.to_vec().unwrap();
        let wave = wave as usize;
        for b in 0..blocks {
            for t in 0..threads {
                let g = b * threads + t;
                let lane = t % wave;
                let base = t - lane;
                let lanes = wave.min(threads - base); // lanes in this (maybe partial) wave
                let v = |l: usize| input[b * threads + base + l];
                let o = &out[11 * g..11 * g + 11];
                assert_eq!(o[0], v(0), "shfl 0, wave {wave}, thread {t}");
                assert_eq!(
                    o[1],
                    if lane >= 1 { v(lane - 1) } else { v(lane) },
                    "shfl_up"
                );
                assert_eq!(
                    o[2],
                    if lane + 1 < lanes {
                        v(lane + 1)
                    } else {
                        v(lane)
                    },
                    "shfl_down"
                );
                assert_eq!(o[3], v(lane ^ 1), "shfl_xor");
                assert_eq!(o[4], v((lane & !7) + 3), "shfl width 8");
                assert_eq!(o[5] as usize, lanes / 2, "ballot of odd lanes");
                assert_eq!(o[6], 1, "any");
                assert_eq!(o[7], 1, "all");
                assert_eq!(o[8] as usize, lanes, "activemask");
                assert_eq!(o[9] as usize, wave, "warpSize");
                assert_eq!(o[10] as usize, lane, "__lane_id");
            }
        }
    });
}

#[testkit::test]
fn divergent_collectives_see_only_active_lanes() {
    both(|wave, m| {
        let d = m.device();
        let mut out = d.alloc::<i32>(128).unwrap();
        m.kernel("warp_divergent")
            .unwrap()
            .launch(LaunchConfig::new(1, 128))
            .arg(&mut out)
            .run(&d.stream().unwrap())
            .unwrap();
        let out = out.to_vec().unwrap();
        for (t, &v) in out.iter().enumerate() {
            let want = if t % 2 == 0 { wave as i32 / 2 } else { -1 };
            assert_eq!(v, want, "thread {t}");
        }
    });
}

#[testkit::test]
fn collectives_after_thread_zero_returned() {
    cpu_only(|_, m| {
        let d = m.device();
        let (blocks, threads) = (3usize, 128usize);
        let input: Vec<i32> = (0..(blocks * threads) as i32).collect();
        let inb = d.upload(&input).unwrap();
        let mut out = d.alloc::<i32>(input.len()).unwrap();
        m.kernel("early_exit_shuffle")
            .unwrap()
            .launch(LaunchConfig::new(blocks as u32, threads as u32))
            .arg(&inb)
            .arg(&mut out)
            .run(&d.stream().unwrap())
            .unwrap();
        let out = out.to_vec().unwrap();
        for b in 0..blocks {
            for t in 0..threads {
                let g = b * threads + t;
                let want = match t {
                    0 => -1,
                    1 => input[g],
                    _ => input[b * threads + (t ^ 1)],
                };
                assert_eq!(out[g], want, "block {b} thread {t}");
            }
        }
    });
}

#[testkit::test]
fn warp_reduction_correct_at_both_wave_sizes() {
    both(|_, m| {
        let d = m.device();
        let (blocks, threads) = (6usize, 256usize);
        let input: Vec<f32> = (0..blocks * threads).map(|i| (i % 7) as f32).collect();
        let inb = d.upload(&input).unwrap();
        let mut out = d.alloc::<f32>(blocks).unwrap();
        m.kernel("warp_sum")
            .unwrap()
            .launch(LaunchConfig::new(blocks as u32, threads as u32))
            .arg(&inb)
            .arg(&mut out)
            .run(&d.stream().unwrap())
            .unwrap();
        let out = out.to_vec().unwrap();
        for b in 0..blocks {
            let want: f32 = input[b * threads..(b + 1) * threads].iter().sum();
            assert_eq!(out[b], want);
        }
    });
}

#[testkit::test]
fn wide_shuffles() {
    both(|_, m| {
        let d = m.device();
        let input: Vec<f64> = (0..64).map(|i| i as f64 * 1.5).collect();
        let inb = d.upload(&input).unwrap();
        let mut out = d.alloc::<f64>(64).unwrap();
        let mut lout = d.alloc::<i64>(64).unwrap();
        m.kernel("shfl_wide")
            .unwrap()
            .launch(LaunchConfig::new(1, 64))
            .arg(&inb)
            .arg(&mut out)
            .arg(&mut lout)
            .run(&d.stream().unwrap())
            .unwrap();
        let out = out.to_vec().unwrap();
        let lout = lout.to_vec().unwrap();
        for t in 0..64 {
            assert_eq!(out[t], input[t ^ 2]);
            let wave = d.info().wave_size as usize;
            assert_eq!(lout[t], ((t - t % wave) as i64 + 1) * 10_000_000_000);
        }
    });
}

#[testkit::test]
fn arguments_are_checked_against_the_kernel() {
    let m = module(64);
    let d = m.device();
    let s = d.stream().unwrap();
    let k = m.kernel("saxpy").unwrap();
    let x = d.upload(&[1.0f32]).unwrap();
    let err = k
        .launch(LaunchConfig::new(1, 1))
        .arg(&2.0f32)
        .arg(&x)
        .run(&s)
        .unwrap_err();
    assert!(matches!(err, RuntimeError::ArgMismatch { .. }), "{err}");
    assert!(err.to_string().contains("takes 4 parameter(s)"), "{err}");
    let err = k
        .launch(LaunchConfig::new(1, 1))
        .arg(&x)
        .arg(&x)
        .arg(&x)
        .arg(&1i32)
        .run(&s)
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("parameter 0 `float a` is passed by value"),
        "{err}"
    );
    let err = k
        .launch(LaunchConfig::new(1, 1))
        .arg(&2.0f64)
        .arg(&x)
        .arg(&x)
        .arg(&1i32)
        .run(&s)
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("has 4 bytes, the argument (f64) has 8"),
        "{err}"
    );
    let err = k
        .launch(LaunchConfig::new(1, 1))
        .arg(&2.0f32)
        .arg(&1u64)
        .arg(&x)
        .arg(&1i32)
        .run(&s)
        .unwrap_err();
    assert!(
        err.to_string().contains("is a pointer; pass a Buffer"),
        "{err}"
    );
}

#[testkit::test]
fn unknown_kernel_lists_what_exists() {
    let err = module(64).kernel("saxpyy").unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("no kernel named `saxpyy`") && text.contains("saxpy,"),
        "{text}"
    );
}

#[testkit::test]
fn buffers_on_another_device_are_refused() {
    let m = module(64);
    let other = device(64);
    let x = other.upload(&[1.0f32]).unwrap();
    let mut y = m.device().upload(&[1.0f32]).unwrap();
    let err = m
        .kernel("saxpy")
        .unwrap()
        .launch(LaunchConfig::new(1, 1))
        .arg(&1.0f32)
        .arg(&x)
        .arg(&mut y)
        .arg(&1i32)
        .run(&m.device().stream().unwrap())
        .unwrap_err();
    assert!(err.to_string().contains("lives on"), "{err}");
}

#[testkit::test]
fn collectives_inside_helpers_are_inlined_or_keep_fibers_and_work() {
    let how = |k: &str| {
        rocm_kernels_corpus::FEATURES_EXECUTION
            .iter()
            .find(|(n, _)| *n == k)
            .map(|(_, h)| *h)
            .unwrap_or_default()
    };
    assert_eq!(how("warp_sum_helper"), "regions");
    assert!(
        how("warp_sum_helper_guarded").starts_with("fibers: it calls `warp_reduce_helper`"),
        "{}",
        how("warp_sum_helper_guarded")
    );
    assert_eq!(how("warp_sum"), "regions");
    assert_eq!(how("loop_control"), "regions");
    both(|wave, m| {
        let d = m.device();
        let (blocks, threads) = (3usize, 128usize);
        let input: Vec<f32> = (0..blocks * threads).map(|i| (i % 5) as f32).collect();
        let inb = d.upload(&input).unwrap();
        for kernel in ["warp_sum_helper", "warp_sum_helper_guarded"] {
            let mut out = d.upload(&vec![0.0f32; blocks]).unwrap();
            m.kernel(kernel)
                .unwrap()
                .launch(LaunchConfig::new(blocks as u32, threads as u32))
                .arg(&inb)
                .arg(&mut out)
                .run(&d.stream().unwrap())
                .unwrap();
            let out = out.to_vec().unwrap();
            for b in 0..blocks {
                let want: f32 = input[b * threads..(b + 1) * threads].iter().sum();
                assert_eq!(out[b], want, "{kernel}: block {b} at wave {wave}");
            }
        }
    });
}

#[testkit::test]
fn loops_with_break_continue_and_return_around_barriers() {
    both(|wave, m| {
        let d = m.device();
        let n = 256usize;
        let rounds = [0i32, 1, 4, 7];
        let roundsb = d.upload(&rounds).unwrap();
        let mut out = d.upload(&vec![-1i32; rounds.len() * n]).unwrap();
        m.kernel("loop_control")
            .unwrap()
            .launch(LaunchConfig::new(rounds.len() as u32, n as u32))
            .arg(&roundsb)
            .arg(&mut out)
            .run(&d.stream().unwrap())
            .unwrap();
        let out = out.to_vec().unwrap();
        for (b, &r) in rounds.iter().enumerate() {
            let mut acc = vec![0i32; n];
            for round in 1..=r {
                for t in 0..n {
                    acc[t] += t as i32;
                }
                if round % 2 == 0 {
                    continue;
                }
                let next: Vec<i32> = (0..n).map(|t| acc[(t + 1) % n]).collect();
                for t in 0..n {
                    acc[t] += next[t] & 1;
                }
            }
            let w = wave as usize;
            for base in (0..n).step_by(w) {
                if acc[base..base + w].iter().any(|&v| v > 1000) {
                    for v in &mut acc[base..base + w] {
                        *v += 1;
                    }
                }
            }
            for t in 0..n {
                let want = if t % 3 == 2 { -1 } else { acc[t] + r };
                assert_eq!(out[b * n + t], want, "block {b} thread {t} at wave {wave}");
            }
        }
    });
}
