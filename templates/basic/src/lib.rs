//! {{name}}: HIP kernels (in `kernels/`) with their Rust references.
//!
//! The references say what each kernel computes; `tests/kernels.rs` checks the kernels against
//! them on every backend, and `benches/kernels.rs` measures the kernels. `matmul` and `conv2d`
//! are also tunable (`cargo rocm tune`): [`matmul_tuned`] launches matmul with the best
//! configuration found for the device and the nearest problem size.

use rocm_kernels::runtime::{Device, LaunchConfig, RuntimeError};
use rocm_kernels::tuning::{Config, Param, Selected, TunedKernel};

/// The compiled kernels (every backend `build.rs` built), for `rocm_test` and the runtime.
pub static KERNELS: &rocm_kernels::KernelLibrary = rocm_kernels::include_kernels!("kernels");

/// The variants of `matmul` that `cargo rocm tune` found best (`tune/wisdom.json`).
pub static MATMUL: &TunedKernel = rocm_kernels::include_tuned!("matmul");

/// Threads per block of `block_sum` (`BLOCK` in `kernels/kernels.hip`).
pub const BLOCK: usize = 256;

/// The configuration of `matmul` where nothing was tuned: the defaults of
/// `kernels/matmul.hip`, which `KERNELS` was compiled with.
pub const MATMUL_DEFAULT: Config = &[
    ("BLOCK_X", Param::Int(16)),
    ("BLOCK_Y", Param::Int(16)),
    ("TILE_X", Param::Int(2)),
    ("TILE_Y", Param::Int(2)),
    ("BK", Param::Int(16)),
    ("PAD", Param::Int(0)),
];

/// The configuration of `conv2d` where nothing was tuned: the defaults of
/// `kernels/conv2d.hip`.
pub const CONV2D_DEFAULT: Config = &[
    ("BLOCK_X", Param::Int(32)),
    ("BLOCK_Y", Param::Int(8)),
    ("TILE_X", Param::Int(1)),
    ("TILE_Y", Param::Int(1)),
    ("USE_SHARED", Param::Int(0)),
];

/// Width and height of `conv2d`'s filter.
pub const CONV2D_FILTER: usize = 7;

/// Reference of `saxpy`: `y[i] = a * x[i] + y[i]`.
pub fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
    for (y, x) in y.iter_mut().zip(x) {
        *y += a * x;
    }
}

/// Reference of `block_sum`: `partial[b]` is the sum of the `b`-th chunk of `BLOCK` elements
/// (accumulated in `f64`, so the kernel's float rounding is what the tolerance allows for).
pub fn block_sum(x: &[f32], partial: &mut [f32]) {
    for (p, chunk) in partial.iter_mut().zip(x.chunks(BLOCK)) {
        *p = chunk.iter().map(|&v| f64::from(v)).sum::<f64>() as f32;
    }
}

/// Reference of `matmul`: `C = A·B` for `n × n` row-major matrices (accumulated in `f64`).
/// Row by row, so that B is read along its rows: tuning checks every candidate at n = 2048.
pub fn matmul(a: &[f32], b: &[f32], c: &mut [f32], n: usize) {
    let mut row = vec![0.0f64; n];
    for r in 0..n {
        row.fill(0.0);
        for k in 0..n {
            let x = f64::from(a[r * n + k]);
            for (acc, &y) in row.iter_mut().zip(&b[k * n..(k + 1) * n]) {
                *acc += x * f64::from(y);
            }
        }
        for (out, acc) in c[r * n..(r + 1) * n].iter_mut().zip(&row) {
            *out = *acc as f32;
        }
    }
}

/// Reference of `conv2d`: `out[r][c] = Σ in[r + i][c + j]·filter[i][j]` over the 7 × 7 filter,
/// for an `n × n` output and an `(n + 6) × (n + 6)` input (accumulated in `f64`).
pub fn conv2d(input: &[f32], filter: &[f32], out: &mut [f32], n: usize) {
    let (f, w) = (CONV2D_FILTER, n + CONV2D_FILTER - 1);
    for r in 0..n {
        for c in 0..n {
            let mut sum = 0.0f64;
            for i in 0..f {
                for j in 0..f {
                    sum += f64::from(input[(r + i) * w + c + j]) * f64::from(filter[i * f + j]);
                }
            }
            out[r * n + c] = sum as f32;
        }
    }
}

/// The launch of `matmul` for `n × n` matrices with these tile shapes: blocks of
/// `(block_x, block_y)` threads, each block computing `block_y·tile_y` rows and
/// `block_x·tile_x` columns of C.
pub fn matmul_launch(
    block_x: u32,
    block_y: u32,
    tile_x: u32,
    tile_y: u32,
    n: usize,
) -> LaunchConfig {
    let (rows, cols) = ((block_y * tile_y) as usize, (block_x * tile_x) as usize);
    LaunchConfig::new(
        (n.div_ceil(cols) as u32, n.div_ceil(rows) as u32, 1),
        (block_x, block_y, 1),
    )
}

/// The launch of `matmul` for a configuration, given as a lookup of its parameters
/// (`|p| tuning::int(MATMUL_DEFAULT, p)`, `|p| selected.int(p)`, a tuning `Config`'s `int`).
pub fn matmul_launch_for(param: impl Fn(&str) -> Option<i64>, n: usize) -> LaunchConfig {
    let p = |name: &str| param(name).unwrap_or(1) as u32;
    matmul_launch(p("BLOCK_X"), p("BLOCK_Y"), p("TILE_X"), p("TILE_Y"), n)
}

/// The launch of `conv2d` for an `n × n` output and a configuration, given as a lookup of its
/// parameters: blocks of `(BLOCK_X, BLOCK_Y)` threads, each thread computing `TILE_X × TILE_Y`
/// outputs (the same grid arithmetic as `matmul`).
pub fn conv2d_launch_for(param: impl Fn(&str) -> Option<i64>, n: usize) -> LaunchConfig {
    matmul_launch_for(param, n)
}

/// `C = A·B` on `device` with the best configuration `cargo rocm tune` found for this device
/// and the nearest problem size, or [`MATMUL_DEFAULT`]; also says which ran and why.
pub fn matmul_tuned(
    device: &Device,
    a: &[f32],
    b: &[f32],
    n: usize,
) -> Result<(Vec<f32>, Selected), RuntimeError> {
    let chosen = MATMUL.select(device.info(), &[("n", n as i64)], KERNELS, MATMUL_DEFAULT);
    let launch = matmul_launch_for(|p| chosen.int(p), n);
    let module = device.load(chosen.library)?;
    let kernel = module.kernel("matmul")?;
    let (da, db) = (device.upload(a)?, device.upload(b)?);
    let mut dc = device.alloc::<f32>(n * n)?;
    let stream = device.stream()?;
    kernel
        .launch(launch)
        .arg(&da)
        .arg(&db)
        .arg(&mut dc)
        .arg(&(n as i32))
        .run(&stream)?;
    stream.synchronize()?;
    Ok((dc.to_vec()?, chosen))
}

#[cfg(test)]
mod tests {
    #[test]
    fn references() {
        let mut y = [1.0, 2.0];
        super::saxpy(2.0, &[3.0, 4.0], &mut y);
        assert_eq!(y, [7.0, 10.0]);
        let x = vec![1.0f32; super::BLOCK + 3];
        let mut partial = [0.0; 2];
        super::block_sum(&x, &mut partial);
        assert_eq!(partial, [super::BLOCK as f32, 3.0]);
        let mut c = [0.0; 4];
        super::matmul(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0], &mut c, 2);
        assert_eq!(c, [19.0, 22.0, 43.0, 50.0]);
        // A 7 × 7 filter that picks its centre copies the input's interior.
        let n = 2;
        let w = n + super::CONV2D_FILTER - 1;
        let input: Vec<f32> = (0..w * w).map(|v| v as f32).collect();
        let mut filter = vec![0.0; 49];
        filter[3 * 7 + 3] = 1.0;
        let mut out = [0.0; 4];
        super::conv2d(&input, &filter, &mut out, n);
        assert_eq!(
            out,
            [
                input[3 * w + 3],
                input[3 * w + 4],
                input[4 * w + 3],
                input[4 * w + 4]
            ]
        );
        let l = super::matmul_launch(16, 8, 2, 4, 100);
        assert_eq!((l.grid.x, l.grid.y, l.block.x, l.block.y), (4, 4, 16, 8));
    }

    /// `matmul_tuned` launches what `tune/wisdom.json` holds for this device and the nearest
    /// size when there is an entry (on a GPU it was tuned on), else the declared default; both
    /// compute the product.
    #[test]
    fn matmul_tuned_uses_the_wisdom_file_or_the_default() {
        let device = rocm_kernels::runtime::Device::default();
        let n = 33;
        // Small integers: every partial sum is exact in f32, whatever the tile shapes.
        let a: Vec<f32> = (0..n * n).map(|i| (i % 7) as f32 - 3.0).collect();
        let b: Vec<f32> = (0..n * n).map(|i| (i % 5) as f32 - 2.0).collect();
        let (c, chosen) = super::matmul_tuned(&device, &a, &b, n).unwrap();
        // Shown with `--nocapture`: which configuration ran on this device, and why.
        eprintln!("matmul_tuned on {}: {}", device.info().name, chosen.why);
        let mut expected = vec![0.0; n * n];
        super::matmul(&a, &b, &mut expected, n);
        assert_eq!(c, expected, "{}", chosen.why);
        let entry = super::MATMUL.lookup(device.info(), &[("n", n as i64)]);
        match (chosen.tuned, entry) {
            (Some(used), Ok(entry)) => assert!(std::ptr::eq(used, entry), "{}", chosen.why),
            (None, Err(_)) => assert_eq!(chosen.config, super::MATMUL_DEFAULT, "{}", chosen.why),
            (tuned, entry) => panic!("selected {tuned:?}, the wisdom file has {entry:?}"),
        }
    }
}
