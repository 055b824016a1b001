//! llm-kernels: the inference kernels of a transformer layer in HIP (`kernels/llm.hip`), in f32 and
//! in the half-precision types models keep their tensors in ([`f16`], [`bf16`]), with their Rust
//! references and launch configurations.
//!
//! The references (f64 arithmetic, rounded once to the element type) say what each kernel
//! computes; `tests/kernels.rs` checks the kernels against them on every backend,
//! `benches/kernels.rs` measures them (and the tiled matmul against the vendor BLAS, [`vendor`]).
//! Launch the kernels with the `*_launch` functions: they refuse a shape the kernel does not
//! support, with the reason, instead of a wrong result. The element type picks the kernel:
//!
//! ```no_run
//! use llm_kernels::{bf16, Dtype};
//! assert_eq!(bf16::kernel("rmsnorm"), "rmsnorm_bf16");
//! let launch = llm_kernels::rows_launch::<bf16>("rmsnorm", 4096, 4096).unwrap();
//! # let _ = launch;
//! ```

pub mod decode;
pub mod vendor;

use rocm_kernels::runtime::{Device, DeviceInfo, LaunchConfig, RuntimeError};
use rocm_kernels::tuning::{Config, Param, Selected, TunedKernel};

/// IEEE binary16 (HIP's `__half`) and bfloat16 (`__hip_bfloat16`): the element types of the half
/// variants, as the runtime's buffers hold them.
pub use rocm_kernels::half::{bf16, f16};

/// The compiled kernels (every backend `build.rs` built), for `rocm_test` and the runtime.
pub static KERNELS: &rocm_kernels::KernelLibrary = rocm_kernels::include_kernels!("kernels");

/// Threads per block of the elementwise kernels (`scale`, `swiglu`, `causal_mask`).
pub const ELEMENTWISE_BLOCK: u32 = 256;
/// Threads per block of the row kernels (`ROW_BLOCK` in `kernels/llm.hip`).
pub const ROW_BLOCK: u32 = 256;
/// Heads a RoPE thread rotates (`ROPE_HEADS`).
pub const ROPE_HEADS: usize = 4;
/// Threads per block of the RoPE kernels (`ROPE_THREADS`).
pub const ROPE_THREADS: usize = 256;
/// Heads a `rope_kv_append` thread rotates and copies (`ROPE_KV_HEADS`).
pub const ROPE_KV_HEADS: usize = 1;
/// Query rows per block of the attention kernels (`FA_BM`).
pub const FA_BM: u32 = 64;
/// Threads per block of the attention kernels (`FA_THREADS`).
pub const FA_THREADS: u32 = 256;

/// Keys per tile of the attention kernel for `head_dim` (`FaTile<D>::BN`).
pub fn attention_tile_keys(head_dim: usize) -> usize {
    if head_dim <= 64 {
        64
    } else {
        32
    }
}

/// Dynamic shared memory of the attention kernel for `head_dim` (`flash_attention_block`): the
/// scaled q tile and one K/V tile, rows of `head_dim + 4` floats, and the probabilities, rows of
/// `BN + 4`.
pub fn attention_shared_bytes(head_dim: usize) -> u32 {
    let bn = attention_tile_keys(head_dim);
    let floats = (FA_BM as usize + bn) * (head_dim + 4) + FA_BM as usize * (bn + 4);
    (floats * 4) as u32
}
/// The variants of `matmul` that `cargo rocm tune` found best (`tune/wisdom.json`, compiled by
/// `build.rs`); [`MatmulPlan::select`] picks one for the device and the problem size.
pub static MATMUL: &TunedKernel = rocm_kernels::include_tuned!("matmul");

/// The configuration of `matmul` where nothing was tuned: the defaults of `kernels/matmul.hip`,
/// which [`KERNELS`] was compiled with (128 × 128 tiles of c a block, 8 × 8 a thread, k steps of
/// 8, 256 threads, registers for two blocks an SM).
pub const MATMUL_DEFAULT: Config = &[
    ("MM_BM", Param::Int(128)),
    ("MM_BN", Param::Int(128)),
    ("MM_BK", Param::Int(8)),
    ("MM_TM", Param::Int(8)),
    ("MM_TN", Param::Int(8)),
    ("MM_MIN_BLOCKS", Param::Int(2)),
];

/// The tile shape of a configuration of `matmul`, which its launch depends on: a block computes
/// `bm × bn` of c with `(bm / tm) · (bn / tn)` threads, each `tm × tn` of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MatmulTiles {
    /// Rows of c a block (`MM_BM`).
    pub bm: u32,
    /// Columns of c a block (`MM_BN`).
    pub bn: u32,
    /// Rows of c a thread (`MM_TM`).
    pub tm: u32,
    /// Columns of c a thread (`MM_TN`).
    pub tn: u32,
}

impl MatmulTiles {
    /// The tiles of [`MATMUL_DEFAULT`] (what [`KERNELS`]' `matmul` was compiled with).
    pub const DEFAULT: MatmulTiles = MatmulTiles {
        bm: 128,
        bn: 128,
        tm: 8,
        tn: 8,
    };

    /// The tiles of a configuration, given as a lookup of its parameters (`|p| selected.int(p)`,
    /// a tuning `Config`'s `int`); a parameter it lacks takes its default.
    pub fn of(param: impl Fn(&str) -> Option<i64>) -> MatmulTiles {
        let d = Self::DEFAULT;
        let p = |name: &str, default: u32| param(name).map_or(default, |v| v as u32);
        MatmulTiles {
            bm: p("MM_BM", d.bm),
            bn: p("MM_BN", d.bn),
            tm: p("MM_TM", d.tm),
            tn: p("MM_TN", d.tn),
        }
    }

    /// Threads a block (`MM_THREADS`).
    pub fn threads(&self) -> u32 {
        (self.bm / self.tm) * (self.bn / self.tn)
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for super::f16 {}
    impl Sealed for super::bf16 {}
}

/// An element type the kernels come in: `f32`, [`f16`] (HIP's `__half`) or [`bf16`]
/// (`__hip_bfloat16`). The half variants keep their tensors in half precision and compute in
/// f32 (`kernels/llm.hip`); `matmul` is f32 only.
pub trait Dtype:
    rocm_kernels::runtime::DeviceCopy + Default + PartialEq + std::fmt::Debug + sealed::Sealed
{
    /// `f32`, `f16`, `bf16`.
    const NAME: &'static str;
    /// What its kernels' names end with: nothing (`rmsnorm`), `_f16`, `_bf16`.
    const SUFFIX: &'static str;
    /// Elements one 16-byte access moves (`16 / sizeof(T)` in `kernels/llm.hip`): a thread's
    /// share of `scale` and `swiglu`, and the pairs a RoPE thread rotates.
    const VEC: usize;
    /// The relative error storing an f32 result as this type adds at most: none for f32, one
    /// ulp for the half types (their machine epsilon: 2^-10 for f16, 2^-7 for bf16).
    const STORE_ROUNDING: f64;
    /// The exact value.
    fn to_f64(self) -> f64;
    /// The value of the type nearest to `x` (ties to even): `x` rounded once.
    fn nearest(x: f64) -> Self;
    /// The kernel `base` for this type: `bf16::kernel("rmsnorm")` is `rmsnorm_bf16`.
    fn kernel(base: &str) -> String {
        format!("{base}{}", Self::SUFFIX)
    }
}

impl Dtype for f32 {
    const NAME: &'static str = "f32";
    const SUFFIX: &'static str = "";
    const VEC: usize = 4;
    const STORE_ROUNDING: f64 = 0.0;
    fn to_f64(self) -> f64 {
        self.into()
    }
    fn nearest(x: f64) -> Self {
        x as f32
    }
}

impl Dtype for f16 {
    const NAME: &'static str = "f16";
    const SUFFIX: &'static str = "_f16";
    const VEC: usize = 8;
    const STORE_ROUNDING: f64 = 1.0 / 1024.0;
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
    fn nearest(x: f64) -> Self {
        f16::from_f32(f32_rounded_to_odd(x))
    }
}

impl Dtype for bf16 {
    const NAME: &'static str = "bf16";
    const SUFFIX: &'static str = "_bf16";
    const VEC: usize = 8;
    const STORE_ROUNDING: f64 = 1.0 / 128.0;
    fn to_f64(self) -> f64 {
        bf16::to_f64(self)
    }
    fn nearest(x: f64) -> Self {
        bf16::from_f32(f32_rounded_to_odd(x))
    }
}

/// `x` in f32, rounded to odd: exact where f32 holds it, else the neighbour whose last bit is 1.
/// Rounded again to a type at least two bits narrower (f16, bf16) it gives exactly `x` rounded
/// once to that type, where a plain f64 -> f32 -> f16 can round twice (a tie made by the first
/// rounding).
fn f32_rounded_to_odd(x: f64) -> f32 {
    let r = x as f32;
    if f64::from(r) == x || !r.is_finite() || r.to_bits() & 1 == 1 {
        return r;
    }
    if f64::from(r) > x {
        r.next_down()
    } else {
        r.next_up()
    }
}

/// A shape a kernel does not support, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kernel}: {reason}")]
pub struct ShapeError {
    /// The kernel that refuses the shape.
    pub kernel: String,
    /// What about the shape it cannot take.
    pub reason: String,
}

fn refuse(kernel: &str, reason: impl Into<String>) -> ShapeError {
    ShapeError {
        kernel: kernel.to_owned(),
        reason: reason.into(),
    }
}

/// Every count a kernel takes as `int` must fit in one.
fn fits_int(kernel: &str, what: &str, n: usize) -> Result<(), ShapeError> {
    if n > i32::MAX as usize {
        return Err(refuse(
            kernel,
            format!(
                "{what} = {n} does not fit the kernel's `int` (at most {})",
                i32::MAX
            ),
        ));
    }
    Ok(())
}

fn non_empty(kernel: &str, dims: &[(&str, usize)]) -> Result<(), ShapeError> {
    for (what, n) in dims {
        if *n == 0 {
            return Err(refuse(kernel, format!("{what} is 0: nothing to compute")));
        }
        fits_int(kernel, what, *n)?;
    }
    Ok(())
}

/// Launch of `causal_mask` for `T` on `scores[batch][rows][cols]`: one block of
/// [`ELEMENTWISE_BLOCK`] threads per row (`batch * rows` blocks), the threads over its columns.
pub fn mask_launch<T: Dtype>(
    batch: usize,
    rows: usize,
    cols: usize,
) -> Result<LaunchConfig, ShapeError> {
    let kernel = T::kernel("causal_mask");
    non_empty(&kernel, &[("batch", batch), ("rows", rows), ("cols", cols)])?;
    fits_int(&kernel, "batch * rows * cols", batch * rows * cols)?;
    Ok(LaunchConfig::new(
        ((batch * rows) as u32, 1, 1),
        (ELEMENTWISE_BLOCK, 1, 1),
    ))
}

/// Launch of `scale` or `swiglu` (`base`) for `T` over `n` elements: [`Dtype::VEC`] a thread
/// (16-byte loads where the buffers are 16-byte aligned, as device allocations are; one at a
/// time where they are not).
pub fn vec_launch<T: Dtype>(base: &str, n: usize) -> Result<LaunchConfig, ShapeError> {
    non_empty(&T::kernel(base), &[("the element count", n)])?;
    Ok(LaunchConfig::cover(n.div_ceil(T::VEC), ELEMENTWISE_BLOCK))
}

/// Launch of a row kernel (`softmax_rows`, `rmsnorm`: `base`) for `T`: one block per row.
pub fn rows_launch<T: Dtype>(
    base: &str,
    rows: usize,
    cols: usize,
) -> Result<LaunchConfig, ShapeError> {
    let kernel = T::kernel(base);
    non_empty(&kernel, &[("rows", rows), ("cols", cols)])?;
    if rows > u32::MAX as usize {
        return Err(refuse(&kernel, "more rows than a grid has blocks"));
    }
    Ok(LaunchConfig::new((rows as u32, 1, 1), (ROW_BLOCK, 1, 1)))
}

/// Launch of `rope` or `rope_kv_append` (`base`) for `T`: blocks of [`ROPE_THREADS`] threads,
/// each thread [`Dtype::VEC`] pairs of [`ROPE_HEADS`] heads of one token (x over the pairs of a
/// head, y over tokens; the grid's y over the heads). The head dimension must be even
/// (rotate-half pairs `i` with `i + head_dim / 2`).
pub fn rope_launch<T: Dtype>(
    base: &str,
    tokens: usize,
    heads: usize,
    head_dim: usize,
) -> Result<LaunchConfig, ShapeError> {
    rope_grid::<T>(base, tokens, heads, head_dim, ROPE_HEADS)
}

/// [`rope_launch`] with `per_thread` heads a thread (the grid's y over groups of them).
fn rope_grid<T: Dtype>(
    base: &str,
    tokens: usize,
    heads: usize,
    head_dim: usize,
    per_thread: usize,
) -> Result<LaunchConfig, ShapeError> {
    let kernel = T::kernel(base);
    non_empty(
        &kernel,
        &[("tokens", tokens), ("heads", heads), ("head_dim", head_dim)],
    )?;
    if !head_dim.is_multiple_of(2) {
        return Err(refuse(
            &kernel,
            format!("head_dim = {head_dim} is odd: rotate-half RoPE pairs element i with i + head_dim/2"),
        ));
    }
    fits_int(
        &kernel,
        "tokens * heads * head_dim",
        tokens * heads * head_dim,
    )?;
    let head_groups = heads.div_ceil(per_thread);
    if head_groups > 65_535 {
        return Err(refuse(
            &kernel,
            format!(
                "heads = {heads}: the grid's y dimension holds 65535 groups of {per_thread} heads"
            ),
        ));
    }
    // Threads over a head's groups of VEC pairs (a loop covers the rest), then over tokens.
    let x = (head_dim / 2).div_ceil(T::VEC).min(ROPE_THREADS);
    let y = (ROPE_THREADS / x).min(tokens);
    Ok(LaunchConfig::new(
        (tokens.div_ceil(y) as u32, head_groups as u32, 1),
        (x as u32, y as u32, 1),
    ))
}

/// Launch of `rope_kv_append` for `T`: as [`rope_launch`] with [`ROPE_KV_HEADS`] heads a
/// thread, and the new tokens must fit in the cache.
pub fn rope_kv_append_launch<T: Dtype>(
    tokens: usize,
    kv_heads: usize,
    head_dim: usize,
    pos0: usize,
    max_seq: usize,
) -> Result<LaunchConfig, ShapeError> {
    if pos0 + tokens > max_seq {
        return Err(refuse(
            &T::kernel("rope_kv_append"),
            format!(
                "positions {pos0}..{} do not fit a cache of {max_seq} positions: grow the cache \
                 (this cache is contiguous, not paged)",
                pos0 + tokens
            ),
        ));
    }
    rope_grid::<T>("rope_kv_append", tokens, kv_heads, head_dim, ROPE_KV_HEADS)
}

/// The attention kernel for a head dimension and `T`: `flash_attention_d64`,
/// `flash_attention_d128_bf16`...
pub fn attention_kernel<T: Dtype>(head_dim: usize) -> Result<String, ShapeError> {
    match head_dim {
        64 | 128 => Ok(T::kernel(&format!("flash_attention_d{head_dim}"))),
        d => Err(refuse(
            &T::kernel("flash_attention"),
            format!(
                "head_dim = {d} is not supported: the kernels are compiled for 64 and 128 \
                 (add an instance of flash_attention_block<D> in kernels/llm.hip for another)"
            ),
        )),
    }
}

/// Launch of the attention kernel for `T` and `heads` heads (batch folded in) of `seq_q` queries
/// over `seq_k` keys. Causal attention needs `seq_q <= seq_k` (the queries are the last
/// positions).
pub fn attention_launch<T: Dtype>(
    heads: usize,
    seq_q: usize,
    seq_k: usize,
    head_dim: usize,
    causal: bool,
) -> Result<LaunchConfig, ShapeError> {
    let kernel = attention_kernel::<T>(head_dim)?;
    non_empty(
        &kernel,
        &[("heads", heads), ("seq_q", seq_q), ("seq_k", seq_k)],
    )?;
    fits_int(
        &kernel,
        "heads * seq * head_dim",
        heads * seq_q.max(seq_k) * head_dim,
    )?;
    if causal && seq_q > seq_k {
        return Err(refuse(
            &kernel,
            format!(
                "causal with seq_q = {seq_q} > seq_k = {seq_k}: the first queries would see no key"
            ),
        ));
    }
    if heads > 65_535 {
        return Err(refuse(
            &kernel,
            format!("heads = {heads}: the grid's y dimension holds 65535"),
        ));
    }
    Ok(LaunchConfig::new(
        ((seq_q as u32).div_ceil(FA_BM), heads as u32, 1),
        (FA_THREADS, 1, 1),
    )
    .shared_bytes(attention_shared_bytes(head_dim)))
}

/// Launch of `matmul` (f32) for c[m][n] = a[m][k] b[k][n] as [`KERNELS`] has it (the default
/// tiles, [`MATMUL_DEFAULT`]). [`MatmulPlan::select`] launches the tuned configuration instead,
/// where the wisdom file has one for the device.
pub fn matmul_launch(m: usize, n: usize, k: usize) -> Result<LaunchConfig, ShapeError> {
    matmul_launch_with(MatmulTiles::DEFAULT, m, n, k)
}

/// Launch of `matmul` compiled with the tiles `tiles`: a grid of `(ceil(n / bn), ceil(m / bm))`
/// blocks of [`MatmulTiles::threads`].
pub fn matmul_launch_with(
    tiles: MatmulTiles,
    m: usize,
    n: usize,
    k: usize,
) -> Result<LaunchConfig, ShapeError> {
    non_empty("matmul", &[("m", m), ("n", n), ("k", k)])?;
    for (what, rows, cols) in [("a", m, k), ("b", k, n), ("c", m, n)] {
        fits_int("matmul", &format!("{what}'s element count"), rows * cols)?;
    }
    let blocks_y = (m as u32).div_ceil(tiles.bm);
    if blocks_y > 65_535 {
        return Err(refuse(
            "matmul",
            format!(
                "m = {m}: {blocks_y} row blocks of {}, the grid's y dimension holds 65535",
                tiles.bm
            ),
        ));
    }
    Ok(LaunchConfig::new(
        ((n as u32).div_ceil(tiles.bn), blocks_y, 1),
        (tiles.threads(), 1, 1),
    ))
}

/// The problem size `matmul`'s wisdom is looked up by: `n` of the square product with as many
/// multiply-adds (the cube root of m·n·k, rounded), as `cargo rocm tune` tunes n × n × n.
pub fn matmul_problem(m: usize, n: usize, k: usize) -> i64 {
    ((m as f64) * (n as f64) * (k as f64)).cbrt().round() as i64
}

/// Which `matmul` to launch on a device for c[m][n] = a[m][k] b[k][n]: the configuration that
/// `cargo rocm tune` found best for this device and the nearest problem size
/// ([`matmul_problem`]), compiled into its own library by `build.rs`, or the default in
/// [`KERNELS`].
///
/// ```no_run
/// let device = rocm_kernels::runtime::Device::default();
/// let plan = llm_kernels::MatmulPlan::select(device.info(), 4096, 4096, 4096).unwrap();
/// println!("{}", plan.selected.why); // "tuned on NVIDIA H100 ... for n=4096 (...)"
/// let module = device.load(plan.selected.library)?;
/// let kernel = module.kernel("matmul")?;
/// // kernel.launch(plan.launch).arg(&m).arg(&n).arg(&k).arg(&a).arg(&b).arg(&mut c)...
/// # Ok::<(), rocm_kernels::runtime::RuntimeError>(())
/// ```
#[derive(Debug, Clone)]
pub struct MatmulPlan {
    /// The library to load (a tuned variant or [`KERNELS`]), the configuration, and why.
    pub selected: Selected,
    /// The configuration's tiles.
    pub tiles: MatmulTiles,
    /// Its launch for this shape.
    pub launch: LaunchConfig,
}

impl MatmulPlan {
    /// The plan for `device` and this shape; `Err` for a shape `matmul` refuses.
    pub fn select(device: &DeviceInfo, m: usize, n: usize, k: usize) -> Result<Self, ShapeError> {
        let problem = [("n", matmul_problem(m, n, k))];
        let selected = MATMUL.select(device, &problem, KERNELS, MATMUL_DEFAULT);
        let tiles = MatmulTiles::of(|p| selected.int(p));
        let launch = matmul_launch_with(tiles, m, n, k)?;
        Ok(MatmulPlan {
            selected,
            tiles,
            launch,
        })
    }
}

/// `c = a·b` (c[m][n], a[m][k], b[k][n]) on `device` with [`MatmulPlan::select`]'s choice: the
/// tuned configuration where the wisdom has one for this device, else the default; also says
/// which ran and why. A shape `matmul` refuses is an `InvalidLaunch` with the reason. Copies in
/// and out: a model's layers keep their tensors on the device and launch `plan.launch` on
/// `plan.selected.library`'s `matmul` themselves.
pub fn matmul_tuned(
    device: &Device,
    a: &[f32],
    b: &[f32],
    (m, n, k): (usize, usize, usize),
) -> Result<(Vec<f32>, Selected), RuntimeError> {
    if a.len() < m * k || b.len() < k * n {
        return Err(RuntimeError::SizeMismatch(format!(
            "matmul of {m}×{k} by {k}×{n}: a holds {} elements, b {}",
            a.len(),
            b.len()
        )));
    }
    let plan =
        MatmulPlan::select(device.info(), m, n, k).map_err(|e| RuntimeError::InvalidLaunch {
            kernel: e.kernel,
            message: e.reason,
        })?;
    let module = device.load(plan.selected.library)?;
    let kernel = module.kernel("matmul")?;
    let (da, db) = (device.upload(a)?, device.upload(b)?);
    let mut dc = device.alloc::<f32>(m * n)?;
    let stream = device.stream()?;
    let (m32, n32, k32) = (m as i32, n as i32, k as i32);
    kernel
        .launch(plan.launch)
        .arg(&m32)
        .arg(&n32)
        .arg(&k32)
        .arg(&da)
        .arg(&db)
        .arg(&mut dc)
        .run(&stream)?;
    stream.synchronize()?;
    Ok((dc.to_vec()?, plan.selected))
}

// ---------------------------------------------------------------------------------------------
// References. Each says exactly what its kernel computes: in f64 on the exact input values,
// rounded once to the element type at the end (the kernels compute in f32).

/// Reference of `scale`: `y = s * x`.
pub fn scale<T: Dtype>(s: f32, x: &[T], y: &mut [T]) {
    for (y, x) in y.iter_mut().zip(x) {
        *y = T::nearest(f64::from(s) * x.to_f64());
    }
}

/// Reference of `causal_mask` on `scores[batch][rows][cols]`: `-inf` where `c > r + offset`.
pub fn causal_mask<T: Dtype>(rows: usize, cols: usize, offset: i32, scores: &mut [T]) {
    for matrix in scores.chunks_mut(rows * cols) {
        for r in 0..rows {
            for c in 0..cols {
                if c as i64 > r as i64 + i64::from(offset) {
                    matrix[r * cols + c] = T::nearest(f64::NEG_INFINITY);
                }
            }
        }
    }
}

/// How many scores of one `rows × cols` matrix `causal_mask` sets (keys `c > r + offset`): what it
/// writes, and all it moves (it reads nothing), for bandwidth figures.
///
/// ```
/// // Queries at the last 4 of 6 positions (offset 2): 3 + 2 + 1 + 0 keys masked.
/// assert_eq!(llm_kernels::masked_count(4, 6, 2), 6);
/// ```
pub fn masked_count(rows: usize, cols: usize, offset: i64) -> usize {
    (0..rows)
        .map(|r| cols - (r as i64 + offset + 1).clamp(0, cols as i64) as usize)
        .sum()
}

/// Reference of `softmax_rows`: each row of `x[rows][cols]`, `exp(x - max) / sum`.
pub fn softmax_rows<T: Dtype>(cols: usize, x: &[T], y: &mut [T]) {
    for (xr, yr) in x.chunks(cols).zip(y.chunks_mut(cols)) {
        let m = xr.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v.to_f64()));
        let sum: f64 = xr.iter().map(|&v| (v.to_f64() - m).exp()).sum();
        for (y, &x) in yr.iter_mut().zip(xr) {
            *y = T::nearest((x.to_f64() - m).exp() / sum);
        }
    }
}

/// Reference of `rmsnorm`: each row, `x / sqrt(mean(x^2) + eps) * w`.
pub fn rmsnorm<T: Dtype>(cols: usize, eps: f32, x: &[T], w: &[T], y: &mut [T]) {
    for (xr, yr) in x.chunks(cols).zip(y.chunks_mut(cols)) {
        let ms = xr.iter().map(|&v| v.to_f64() * v.to_f64()).sum::<f64>() / cols as f64;
        let inv = 1.0 / (ms + f64::from(eps)).sqrt();
        for ((y, &x), &w) in yr.iter_mut().zip(xr).zip(w) {
            *y = T::nearest(x.to_f64() * inv * w.to_f64());
        }
    }
}

/// Reference of `swiglu`: `silu(gate) * up`.
pub fn swiglu<T: Dtype>(gate: &[T], up: &[T], y: &mut [T]) {
    for ((y, &g), &u) in y.iter_mut().zip(gate).zip(up) {
        let g = g.to_f64();
        *y = T::nearest(g / (1.0 + (-g).exp()) * u.to_f64());
    }
}

/// RoPE's inverse frequencies for base `theta`: `theta^(-2i / head_dim)` for `i < head_dim / 2`
/// (10000 in the original RoPE, 500000 in Llama 3), computed in f64 and rounded once. They stay
/// f32 for every element type, as models keep them.
pub fn rope_inv_freq(theta: f64, head_dim: usize) -> Vec<f32> {
    (0..head_dim / 2)
        .map(|i| theta.powf(-2.0 * i as f64 / head_dim as f64) as f32)
        .collect()
}

/// The rotation of one head (rotate-half) at `pos`, from `src` into `dst`. The angle is
/// `pos * inv_freq[i]` rounded to f32 (what the kernel computes, and what models do); its sine and
/// cosine and the rotation are in f64.
fn rotate_head<T: Dtype>(src: &[T], dst: &mut [T], pos: usize, inv_freq: &[f32]) {
    let half = src.len() / 2;
    for (i, &f) in inv_freq.iter().enumerate().take(half) {
        let angle = f64::from(pos as f32 * f);
        let (s, c) = angle.sin_cos();
        let (x1, x2) = (src[i].to_f64(), src[i + half].to_f64());
        dst[i] = T::nearest(x1 * c - x2 * s);
        dst[i + half] = T::nearest(x2 * c + x1 * s);
    }
}

/// Reference of `rope` on `x[tokens][heads][head_dim]`, token `t` at position `pos0 + t`.
pub fn rope<T: Dtype>(heads: usize, head_dim: usize, pos0: usize, inv_freq: &[f32], x: &mut [T]) {
    for (th, head) in x.chunks_mut(head_dim).enumerate() {
        let src = head.to_vec();
        rotate_head(&src, head, pos0 + th / heads, inv_freq);
    }
}

/// Reference of `rope_kv_append`: rotated `k` and unchanged `v` written at rows `pos0..` of the
/// contiguous caches `[max_seq][kv_heads][head_dim]`.
#[allow(clippy::too_many_arguments)]
pub fn rope_kv_append<T: Dtype>(
    kv_heads: usize,
    head_dim: usize,
    pos0: usize,
    inv_freq: &[f32],
    k: &[T],
    v: &[T],
    k_cache: &mut [T],
    v_cache: &mut [T],
) {
    let row = kv_heads * head_dim;
    let max_seq = k_cache.len() / row;
    for (th, (kh, vh)) in k.chunks(head_dim).zip(v.chunks(head_dim)).enumerate() {
        let pos = pos0 + th / kv_heads;
        if pos >= max_seq {
            continue;
        }
        let dst = pos0 * row + th * head_dim;
        rotate_head(kh, &mut k_cache[dst..dst + head_dim], pos, inv_freq);
        v_cache[dst..dst + head_dim].copy_from_slice(vh);
    }
}

/// The shape of an attention call: `heads` (batch folded in) of `seq_q` queries over `seq_k`
/// keys of `head_dim`, q/o `[heads][seq_q][head_dim]`, k/v `[heads][seq_k][head_dim]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttentionShape {
    /// Independent heads, the batch folded in.
    pub heads: usize,
    /// Queries per head.
    pub seq_q: usize,
    /// Keys (and values) per head.
    pub seq_k: usize,
    /// Elements of one query, key or value vector.
    pub head_dim: usize,
    /// Query `r` sees only keys `c <= r + seq_k - seq_q` (the last query sees every key).
    pub causal: bool,
}

/// Reference of the attention kernels: `o = softmax(scale * q k^T + mask) v`, the mask hiding
/// keys `c > r + seq_k - seq_q` when causal.
pub fn attention<T: Dtype>(s: AttentionShape, scale: f32, q: &[T], k: &[T], v: &[T], o: &mut [T]) {
    let d = s.head_dim;
    let shift = s.seq_k as i64 - s.seq_q as i64;
    let mut p = vec![0f64; s.seq_k];
    for h in 0..s.heads {
        let (q, k, v) = (
            &q[h * s.seq_q * d..],
            &k[h * s.seq_k * d..],
            &v[h * s.seq_k * d..],
        );
        for r in 0..s.seq_q {
            let qr = &q[r * d..(r + 1) * d];
            let mut m = f64::NEG_INFINITY;
            for (c, pc) in p.iter_mut().enumerate() {
                *pc = if s.causal && c as i64 > r as i64 + shift {
                    f64::NEG_INFINITY
                } else {
                    let kc = &k[c * d..(c + 1) * d];
                    f64::from(scale)
                        * qr.iter()
                            .zip(kc)
                            .map(|(&a, &b)| a.to_f64() * b.to_f64())
                            .sum::<f64>()
                };
                m = m.max(*pc);
            }
            let mut sum = 0.0;
            for pc in p.iter_mut() {
                *pc = (*pc - m).exp();
                sum += *pc;
            }
            let out = &mut o[(h * s.seq_q + r) * d..(h * s.seq_q + r + 1) * d];
            for (j, out) in out.iter_mut().enumerate() {
                let acc: f64 = p
                    .iter()
                    .enumerate()
                    .map(|(c, &pc)| pc * v[c * d + j].to_f64())
                    .sum();
                *out = T::nearest(acc / sum);
            }
        }
    }
}

/// Reference of `matmul`: `c[m][n] = a[m][k] b[k][n]` (each sum in f64, over l in order).
/// Eight rows of c at a time, b read along its rows, and on every core for large products: the
/// tunable checks each candidate against it at n = 4096 (7·10^10 multiply-adds).
pub fn matmul(m: usize, n: usize, k: usize, a: &[f32], b: &[f32], c: &mut [f32]) {
    const ROWS: usize = 8;
    if m == 0 || n == 0 {
        return;
    }
    let rows = |first: usize, c: &mut [f32]| {
        let mut acc = vec![0.0f64; ROWS * n];
        for (block, out) in c.chunks_mut(ROWS * n).enumerate() {
            let r0 = first + block * ROWS;
            let count = out.len() / n;
            acc.fill(0.0);
            for l in 0..k {
                let brow = &b[l * n..(l + 1) * n];
                for (r, sums) in acc.chunks_mut(n).take(count).enumerate() {
                    let x = f64::from(a[(r0 + r) * k + l]);
                    for (s, &y) in sums.iter_mut().zip(brow) {
                        *s += x * f64::from(y);
                    }
                }
            }
            for (o, s) in out.iter_mut().zip(&acc) {
                *o = *s as f32;
            }
        }
    };
    let work = m as f64 * n as f64 * k as f64;
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let threads = if work < 1e8 {
        1
    } else {
        cores.min(m.div_ceil(ROWS))
    };
    if threads <= 1 {
        rows(0, &mut c[..m * n]);
        return;
    }
    // Whole blocks of ROWS rows a thread.
    let per = m.div_ceil(ROWS).div_ceil(threads) * ROWS;
    std::thread::scope(|s| {
        for (t, part) in c[..m * n].chunks_mut(per * n).enumerate() {
            let rows = &rows;
            s.spawn(move || rows(t * per, part));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The matmul reference on threads and in blocks of rows computes each sum as the plain
    /// triple loop does (in f64, over l in order): the same f32 results, bit for bit.
    #[test]
    fn matmul_reference_in_blocks_and_threads_is_the_triple_loop() {
        for (m, n, k) in [(1, 1, 1), (9, 7, 5), (470, 470, 470), (17, 1030, 9000)] {
            let a: Vec<f32> = (0..m * k)
                .map(|i| ((i * 7919) % 2001) as f32 / 1000.0 - 1.0)
                .collect();
            let b: Vec<f32> = (0..k * n)
                .map(|i| ((i * 104_729) % 1999) as f32 / 999.0 - 1.0)
                .collect();
            let mut c = vec![f32::NAN; m * n];
            matmul(m, n, k, &a, &b, &mut c);
            for (i, j) in [(0, 0), (m - 1, n - 1), (m / 2, n / 3), (m - 1, 0)] {
                let mut sum = 0.0f64;
                for l in 0..k {
                    sum += f64::from(a[i * k + l]) * f64::from(b[l * n + j]);
                }
                assert_eq!(c[i * n + j], sum as f32, "{m}x{n}x{k} at ({i}, {j})");
            }
            assert!(c.iter().all(|v| v.is_finite()));
        }
    }

    /// The plan is the wisdom's entry for this device where it has one (the committed entries
    /// are the H100's), with its own library and tiles, else the default build with the
    /// default tiles; either computes the product. The tiles of a configuration give the launch.
    #[test]
    fn matmul_tuned_uses_the_wisdom_or_the_default() {
        let device = rocm_kernels::runtime::Device::default();
        let plan = MatmulPlan::select(device.info(), 300, 200, 100).unwrap();
        // Shown with `--nocapture`: which configuration runs on this device, and why.
        eprintln!("matmul on {}: {}", device.info().name, plan.selected.why);
        match plan.selected.tuned {
            Some(entry) => {
                assert!(!std::ptr::eq(plan.selected.library, KERNELS));
                let tiles = MatmulTiles::of(|p| rocm_kernels::tuning::int(entry.config, p));
                assert_eq!(plan.tiles, tiles);
                assert_eq!(
                    plan.launch,
                    matmul_launch_with(tiles, 300, 200, 100).unwrap()
                );
            }
            None => {
                assert!(std::ptr::eq(plan.selected.library, KERNELS));
                assert_eq!(plan.tiles, MatmulTiles::DEFAULT);
                assert_eq!(plan.launch, matmul_launch(300, 200, 100).unwrap());
            }
        }
        // Small integers: every partial sum is exact in f32, whatever the tiles.
        let (m, n, k) = (70, 45, 33);
        let a: Vec<f32> = (0..m * k).map(|i| (i % 7) as f32 - 3.0).collect();
        let b: Vec<f32> = (0..k * n).map(|i| (i % 5) as f32 - 2.0).collect();
        let (c, chosen) = matmul_tuned(&device, &a, &b, (m, n, k)).unwrap();
        assert_eq!(chosen.is_tuned(), plan.selected.is_tuned());
        let mut want = vec![0.0; m * n];
        matmul(m, n, k, &a, &b, &mut want);
        assert_eq!(c, want);
        assert_eq!(
            MatmulTiles::of(|p| rocm_kernels::tuning::int(MATMUL_DEFAULT, p)),
            MatmulTiles::DEFAULT
        );
        assert_eq!(MatmulTiles::DEFAULT.threads(), 256);
        let tiles = MatmulTiles::of(|p| match p {
            "MM_BM" => Some(64),
            "MM_TN" => Some(4),
            _ => None,
        });
        let l = matmul_launch_with(tiles, 100, 300, 7).unwrap();
        assert_eq!((l.grid.x, l.grid.y, l.block.x), (3, 2, 256));
        assert_eq!(matmul_problem(4096, 4096, 4096), 4096);
        assert_eq!(matmul_problem(1024, 4096, 2048), 2048);
        assert!(matmul_launch(70_000 * 128, 1, 1).is_err());
    }

    #[test]
    fn references_on_small_cases() {
        let mut y = [0.0f32; 3];
        softmax_rows(3, &[0.0, 0.0, f32::NEG_INFINITY], &mut y);
        assert_eq!(y, [0.5, 0.5, 0.0]);
        let mut s = [1.0f32; 12];
        causal_mask(2, 3, 0, &mut s);
        for m in [0, 6] {
            assert_eq!(s[m + 1], f32::NEG_INFINITY);
            assert_eq!(s[m + 4], 1.0);
            assert_eq!(s[m + 5], f32::NEG_INFINITY);
        }
        // A quarter turn of the pair (1, 0) at position 1 with inv_freq = pi/2.
        let mut x = [1.0f32, 0.0];
        rope(1, 2, 1, &[std::f32::consts::FRAC_PI_2], &mut x);
        assert!(x[0].abs() < 1e-6 && (x[1] - 1.0).abs() < 1e-6, "{x:?}");
        let mut c = [0.0; 4];
        matmul(2, 2, 1, &[1.0, 2.0], &[3.0, 4.0], &mut c);
        assert_eq!(c, [3.0, 4.0, 6.0, 8.0]);
        // In bf16 the same turn: 1 and a cosine that rounds to 0 at the end, not before.
        let mut x = [bf16::ONE, bf16::ZERO];
        rope(1, 2, 1, &[std::f32::consts::FRAC_PI_2], &mut x);
        assert_eq!(x, [bf16::from_f32(-4.371139e-8), bf16::ONE]);
        let mut h = [f16::from_f32(1.0); 2];
        softmax_rows(2, &[f16::ONE, f16::NEG_INFINITY], &mut h);
        assert_eq!(h, [f16::ONE, f16::ZERO]);
    }

    #[test]
    fn half_references_round_once() {
        // 1 + 2^-8 + 2^-30 is above the midpoint of bf16's 1 and 1 + 2^-7: it rounds up. Through
        // a plain f32 it would become the midpoint 1 + 2^-8 (the 2^-30 lost), then round to even: 1.
        let x = 1.0 + 2f64.powi(-8) + 2f64.powi(-30);
        assert_eq!(bf16::nearest(x), bf16::from_f32(1.0 + 1.0 / 128.0));
        assert_eq!(bf16::from_f32(x as f32), bf16::ONE, "double rounding");
        let y = 1.0 + 2f64.powi(-11) + 2f64.powi(-40);
        assert_eq!(f16::nearest(y), f16::from_bits(0x3c01));
        // Exact values, ties (to even), infinities and NaN pass through.
        assert_eq!(f16::nearest(1.0 + 2f64.powi(-11)), f16::ONE);
        assert_eq!(bf16::nearest(f64::NEG_INFINITY), bf16::NEG_INFINITY);
        assert!(f16::nearest(f64::NAN).is_nan());
        assert_eq!(f16::nearest(-1e-30), -f16::ZERO);
        let mut y = [bf16::ZERO; 2];
        scale(3.0, &[bf16::from_f32(1.5), bf16::from_f32(-0.25)], &mut y);
        assert_eq!(y, [bf16::from_f32(4.5), bf16::from_f32(-0.75)]);
    }

    #[test]
    fn attention_over_one_key_is_that_value() {
        let s = AttentionShape {
            heads: 1,
            seq_q: 1,
            seq_k: 1,
            head_dim: 2,
            causal: true,
        };
        let mut o = [0.0f32; 2];
        attention(s, 1.0, &[1.0, 1.0], &[0.5, 0.5], &[3.0, -1.0], &mut o);
        assert_eq!(o, [3.0, -1.0]);
    }

    #[test]
    fn kernels_are_named_by_their_type() {
        assert_eq!(f32::kernel("rmsnorm"), "rmsnorm");
        assert_eq!(f16::kernel("rope"), "rope_f16");
        assert_eq!(
            attention_kernel::<bf16>(128).unwrap(),
            "flash_attention_d128_bf16"
        );
        for k in [
            "scale",
            "causal_mask",
            "softmax_rows",
            "rmsnorm",
            "swiglu",
            "rope",
            "rope_kv_append",
            "flash_attention_d64",
            "flash_attention_d128",
        ] {
            for name in [f32::kernel(k), f16::kernel(k), bf16::kernel(k)] {
                assert!(KERNELS.kernel(&name).is_some(), "no kernel {name}");
            }
        }
    }

    #[test]
    fn rope_launches_cover_every_pair_and_token() {
        // head_dim 128 in f32: 16 threads of 4 pairs a head, 16 tokens a block, 8 groups of heads.
        let l = rope_launch::<f32>("rope", 4096, 32, 128).unwrap();
        assert_eq!((l.block.x, l.block.y, l.grid.x, l.grid.y), (16, 16, 256, 8));
        // In bf16: 8 threads of 8 pairs, 32 tokens a block; one token: one row of threads.
        let l = rope_launch::<bf16>("rope", 4096, 32, 128).unwrap();
        assert_eq!((l.block.x, l.block.y, l.grid.x), (8, 32, 128));
        // RoPE + KV append: one head a thread row (ROPE_KV_HEADS), so one token of 8 kv heads is
        // 8 blocks along y.
        let l = rope_kv_append_launch::<f16>(1, 8, 64, 100, 101).unwrap();
        assert_eq!((l.block.x, l.block.y, l.grid.x, l.grid.y), (4, 1, 1, 8));
        // A head wider than a block: the threads loop over its pairs.
        let l = rope_launch::<f32>("rope", 2, 1, 4096).unwrap();
        assert_eq!((l.block.x, l.block.y), (256, 1));
    }

    #[test]
    fn unsupported_shapes_are_refused_with_the_reason() {
        let e = attention_launch::<f32>(8, 16, 16, 96, false).unwrap_err();
        assert!(
            e.to_string().contains("head_dim = 96 is not supported"),
            "{e}"
        );
        let e = attention_launch::<bf16>(8, 32, 16, 64, true).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("flash_attention_d64_bf16: causal with seq_q = 32 > seq_k = 16"),
            "{e}"
        );
        let e = rope_launch::<f16>("rope", 4, 2, 7).unwrap_err();
        assert!(
            e.to_string().starts_with("rope_f16: head_dim = 7 is odd"),
            "{e}"
        );
        let e = rope_kv_append_launch::<f32>(4, 2, 64, 10, 12).unwrap_err();
        assert!(
            e.to_string().contains("do not fit a cache of 12 positions"),
            "{e}"
        );
        let e = rope_launch::<f32>("rope", 1, 300_000, 2).unwrap_err();
        assert!(e.to_string().contains("65535 groups of 4 heads"), "{e}");
        assert!(matmul_launch(0, 4, 4).is_err());
        assert!(vec_launch::<bf16>("scale", 0).is_err());
        let e = mask_launch::<f16>(2, 0, 8).unwrap_err();
        assert_eq!(
            e.to_string(),
            "causal_mask_f16: rows is 0: nothing to compute"
        );
        let l = mask_launch::<f32>(32, 2048, 2048).unwrap();
        assert_eq!((l.grid.x, l.block.x), (65536, 256));
        assert!(attention_launch::<f32>(8, 100, 100, 128, true).is_ok());
    }
}
