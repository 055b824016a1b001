//! llm-kernels: the inference kernels of a transformer layer in HIP (`kernels/llm.hip`), with their
//! Rust references and launch configurations.
//!
//! The references (f64 accumulation) say what each kernel computes; `tests/kernels.rs` checks
//! the kernels against them on every backend, `benches/kernels.rs` measures them (and the tiled
//! matmul against the vendor BLAS, [`vendor`]). Launch the kernels with the `*_launch` functions:
//! they refuse a shape the kernel does not support, with the reason, instead of a wrong result.

pub mod vendor;

use rocm_kernels::runtime::LaunchConfig;

/// The compiled kernels (every backend `build.rs` built), for `rocm_test` and the runtime.
pub static KERNELS: &rocm_kernels::KernelLibrary = rocm_kernels::include_kernels!("kernels");

/// Threads per block of the elementwise kernels.
pub const ELEMENTWISE_BLOCK: u32 = 256;
/// Threads per block of the row kernels (`ROW_BLOCK` in `kernels/llm.hip`).
pub const ROW_BLOCK: u32 = 256;
/// Query rows per block of the attention kernels (`FA_BM`).
pub const FA_BM: u32 = 16;
/// Keys per tile of the attention kernels (`FA_BN`).
pub const FA_BN: usize = 32;
/// Threads per block of the attention kernels (`FA_THREADS`).
pub const FA_THREADS: u32 = 128;
/// Tile of `c` per block of `matmul` (`MM_TILE`), and its threads (`MM_THREADS`).
pub const MM_TILE: u32 = 128;
pub const MM_THREADS: u32 = 256;

/// A shape a kernel does not support, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kernel}: {reason}")]
pub struct ShapeError {
    pub kernel: &'static str,
    pub reason: String,
}

fn refuse(kernel: &'static str, reason: impl Into<String>) -> ShapeError {
    ShapeError {
        kernel,
        reason: reason.into(),
    }
}

/// Every count a kernel takes as `int` must fit in one.
fn fits_int(kernel: &'static str, what: &str, n: usize) -> Result<(), ShapeError> {
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

fn non_empty(kernel: &'static str, dims: &[(&str, usize)]) -> Result<(), ShapeError> {
    for (what, n) in dims {
        if *n == 0 {
            return Err(refuse(kernel, format!("{what} is 0: nothing to compute")));
        }
        fits_int(kernel, what, *n)?;
    }
    Ok(())
}

/// Launch of an elementwise kernel with one element per thread (`causal_mask`) over `n`
/// elements.
pub fn elementwise_launch(kernel: &'static str, n: usize) -> Result<LaunchConfig, ShapeError> {
    non_empty(kernel, &[("the element count", n)])?;
    Ok(LaunchConfig::cover(n, ELEMENTWISE_BLOCK))
}

/// Elements per thread of `scale` and `swiglu` (`VEC` in `kernels/llm.hip`).
pub const VEC: usize = 4;

/// Launch of `scale` or `swiglu` over `n` elements: [`VEC`] a thread (16-byte loads where the
/// buffers are 16-byte aligned, as device allocations are; one at a time where they are not).
pub fn vec_launch(kernel: &'static str, n: usize) -> Result<LaunchConfig, ShapeError> {
    non_empty(kernel, &[("the element count", n)])?;
    Ok(LaunchConfig::cover(n.div_ceil(VEC), ELEMENTWISE_BLOCK))
}

/// Launch of a row kernel (`softmax_rows`, `rmsnorm`): one block per row.
pub fn rows_launch(
    kernel: &'static str,
    rows: usize,
    cols: usize,
) -> Result<LaunchConfig, ShapeError> {
    non_empty(kernel, &[("rows", rows), ("cols", cols)])?;
    if rows > u32::MAX as usize {
        return Err(refuse(kernel, "more rows than a grid has blocks"));
    }
    Ok(LaunchConfig::new((rows as u32, 1, 1), (ROW_BLOCK, 1, 1)))
}

/// Launch of `rope` (or `rope_kv_append`): one thread per rotated pair. The head dimension must
/// be even (rotate-half pairs `i` with `i + head_dim / 2`).
pub fn rope_launch(
    kernel: &'static str,
    tokens: usize,
    heads: usize,
    head_dim: usize,
) -> Result<LaunchConfig, ShapeError> {
    non_empty(
        kernel,
        &[("tokens", tokens), ("heads", heads), ("head_dim", head_dim)],
    )?;
    if !head_dim.is_multiple_of(2) {
        return Err(refuse(
            kernel,
            format!("head_dim = {head_dim} is odd: rotate-half RoPE pairs element i with i + head_dim/2"),
        ));
    }
    let pairs = tokens * heads * head_dim / 2;
    fits_int(kernel, "tokens * heads * head_dim", pairs * 2)?;
    Ok(LaunchConfig::cover(pairs, ELEMENTWISE_BLOCK))
}

/// Launch of `rope_kv_append`: as [`rope_launch`], and the new tokens must fit in the cache.
pub fn rope_kv_append_launch(
    tokens: usize,
    kv_heads: usize,
    head_dim: usize,
    pos0: usize,
    max_seq: usize,
) -> Result<LaunchConfig, ShapeError> {
    if pos0 + tokens > max_seq {
        return Err(refuse(
            "rope_kv_append",
            format!(
                "positions {pos0}..{} do not fit a cache of {max_seq} positions: grow the cache \
                 (this cache is contiguous, not paged)",
                pos0 + tokens
            ),
        ));
    }
    rope_launch("rope_kv_append", tokens, kv_heads, head_dim)
}

/// The attention kernel for a head dimension: `flash_attention_d64` or `flash_attention_d128`.
pub fn attention_kernel(head_dim: usize) -> Result<&'static str, ShapeError> {
    match head_dim {
        64 => Ok("flash_attention_d64"),
        128 => Ok("flash_attention_d128"),
        d => Err(refuse(
            "flash_attention",
            format!(
                "head_dim = {d} is not supported: the kernels are compiled for 64 and 128 \
                 (add an instance of flash_attention_block<D> in kernels/llm.hip for another)"
            ),
        )),
    }
}

/// Launch of the attention kernel for `heads` heads (batch folded in) of `seq_q` queries over
/// `seq_k` keys. Causal attention needs `seq_q <= seq_k` (the queries are the last positions).
pub fn attention_launch(
    heads: usize,
    seq_q: usize,
    seq_k: usize,
    head_dim: usize,
    causal: bool,
) -> Result<LaunchConfig, ShapeError> {
    let kernel = "flash_attention";
    attention_kernel(head_dim)?;
    non_empty(
        kernel,
        &[("heads", heads), ("seq_q", seq_q), ("seq_k", seq_k)],
    )?;
    fits_int(
        kernel,
        "heads * seq * head_dim",
        heads * seq_q.max(seq_k) * head_dim,
    )?;
    if causal && seq_q > seq_k {
        return Err(refuse(
            kernel,
            format!(
                "causal with seq_q = {seq_q} > seq_k = {seq_k}: the first queries would see no key"
            ),
        ));
    }
    if heads > 65_535 {
        return Err(refuse(
            kernel,
            format!("heads = {heads}: the grid's y dimension holds 65535"),
        ));
    }
    Ok(LaunchConfig::new(
        ((seq_q as u32).div_ceil(FA_BM), heads as u32, 1),
        (FA_THREADS, 1, 1),
    ))
}

/// Launch of `matmul` for c[m][n] = a[m][k] b[k][n].
pub fn matmul_launch(m: usize, n: usize, k: usize) -> Result<LaunchConfig, ShapeError> {
    non_empty("matmul", &[("m", m), ("n", n), ("k", k)])?;
    for (what, rows, cols) in [("a", m, k), ("b", k, n), ("c", m, n)] {
        fits_int("matmul", &format!("{what}'s element count"), rows * cols)?;
    }
    Ok(LaunchConfig::new(
        (
            (n as u32).div_ceil(MM_TILE),
            (m as u32).div_ceil(MM_TILE),
            1,
        ),
        (MM_THREADS, 1, 1),
    ))
}

// ---------------------------------------------------------------------------------------------
// References. Each says exactly what its kernel computes, accumulating in f64.

/// Reference of `scale`: `y = s * x`.
pub fn scale(s: f32, x: &[f32], y: &mut [f32]) {
    for (y, x) in y.iter_mut().zip(x) {
        *y = s * x;
    }
}

/// Reference of `causal_mask` on `scores[batch][rows][cols]`: `-inf` where `c > r + offset`.
pub fn causal_mask(rows: usize, cols: usize, offset: i32, scores: &mut [f32]) {
    for matrix in scores.chunks_mut(rows * cols) {
        for r in 0..rows {
            for c in 0..cols {
                if c as i64 > r as i64 + i64::from(offset) {
                    matrix[r * cols + c] = f32::NEG_INFINITY;
                }
            }
        }
    }
}

/// Reference of `softmax_rows`: each row of `x[rows][cols]`, `exp(x - max) / sum`.
pub fn softmax_rows(cols: usize, x: &[f32], y: &mut [f32]) {
    for (xr, yr) in x.chunks(cols).zip(y.chunks_mut(cols)) {
        let m = xr
            .iter()
            .fold(f64::NEG_INFINITY, |m, &v| m.max(f64::from(v)));
        let sum: f64 = xr.iter().map(|&v| (f64::from(v) - m).exp()).sum();
        for (y, &x) in yr.iter_mut().zip(xr) {
            *y = ((f64::from(x) - m).exp() / sum) as f32;
        }
    }
}

/// Reference of `rmsnorm`: each row, `x / sqrt(mean(x^2) + eps) * w`.
pub fn rmsnorm(cols: usize, eps: f32, x: &[f32], w: &[f32], y: &mut [f32]) {
    for (xr, yr) in x.chunks(cols).zip(y.chunks_mut(cols)) {
        let ms = xr.iter().map(|&v| f64::from(v) * f64::from(v)).sum::<f64>() / cols as f64;
        let inv = 1.0 / (ms + f64::from(eps)).sqrt();
        for ((y, &x), &w) in yr.iter_mut().zip(xr).zip(w) {
            *y = (f64::from(x) * inv * f64::from(w)) as f32;
        }
    }
}

/// Reference of `swiglu`: `silu(gate) * up`.
pub fn swiglu(gate: &[f32], up: &[f32], y: &mut [f32]) {
    for ((y, &g), &u) in y.iter_mut().zip(gate).zip(up) {
        let g = f64::from(g);
        *y = (g / (1.0 + (-g).exp()) * f64::from(u)) as f32;
    }
}

/// RoPE's inverse frequencies for base `theta`: `theta^(-2i / head_dim)` for `i < head_dim / 2`
/// (10000 in the original RoPE, 500000 in Llama 3), computed in f64 and rounded once.
pub fn rope_inv_freq(theta: f64, head_dim: usize) -> Vec<f32> {
    (0..head_dim / 2)
        .map(|i| theta.powf(-2.0 * i as f64 / head_dim as f64) as f32)
        .collect()
}

/// The rotation of one head (rotate-half) at `pos`, from `src` into `dst`. The angle is
/// `pos * inv_freq[i]` rounded to f32 (what the kernel computes, and what models do); its sine and
/// cosine and the rotation are in f64.
fn rotate_head(src: &[f32], dst: &mut [f32], pos: usize, inv_freq: &[f32]) {
    let half = src.len() / 2;
    for (i, &f) in inv_freq.iter().enumerate().take(half) {
        let angle = f64::from(pos as f32 * f);
        let (s, c) = angle.sin_cos();
        let (x1, x2) = (f64::from(src[i]), f64::from(src[i + half]));
        dst[i] = (x1 * c - x2 * s) as f32;
        dst[i + half] = (x2 * c + x1 * s) as f32;
    }
}

/// Reference of `rope` on `x[tokens][heads][head_dim]`, token `t` at position `pos0 + t`.
pub fn rope(heads: usize, head_dim: usize, pos0: usize, inv_freq: &[f32], x: &mut [f32]) {
    for (th, head) in x.chunks_mut(head_dim).enumerate() {
        let src = head.to_vec();
        rotate_head(&src, head, pos0 + th / heads, inv_freq);
    }
}

/// Reference of `rope_kv_append`: rotated `k` and unchanged `v` written at rows `pos0..` of the
/// contiguous caches `[max_seq][kv_heads][head_dim]`.
#[allow(clippy::too_many_arguments)]
pub fn rope_kv_append(
    kv_heads: usize,
    head_dim: usize,
    pos0: usize,
    inv_freq: &[f32],
    k: &[f32],
    v: &[f32],
    k_cache: &mut [f32],
    v_cache: &mut [f32],
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
    pub heads: usize,
    pub seq_q: usize,
    pub seq_k: usize,
    pub head_dim: usize,
    pub causal: bool,
}

/// Reference of the attention kernels: `o = softmax(scale * q k^T + mask) v`, the mask hiding
/// keys `c > r + seq_k - seq_q` when causal.
pub fn attention(s: AttentionShape, scale: f32, q: &[f32], k: &[f32], v: &[f32], o: &mut [f32]) {
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
                            .map(|(&a, &b)| f64::from(a) * f64::from(b))
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
                    .map(|(c, &pc)| pc * f64::from(v[c * d + j]))
                    .sum();
                *out = (acc / sum) as f32;
            }
        }
    }
}

/// Reference of `matmul`: `c[m][n] = a[m][k] b[k][n]`.
pub fn matmul(m: usize, n: usize, k: usize, a: &[f32], b: &[f32], c: &mut [f32]) {
    for i in 0..m {
        for j in 0..n {
            let acc: f64 = (0..k)
                .map(|l| f64::from(a[i * k + l]) * f64::from(b[l * n + j]))
                .sum();
            c[i * n + j] = acc as f32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_on_small_cases() {
        let mut y = [0.0; 3];
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
        let mut o = [0.0; 2];
        attention(s, 1.0, &[1.0, 1.0], &[0.5, 0.5], &[3.0, -1.0], &mut o);
        assert_eq!(o, [3.0, -1.0]);
    }

    #[test]
    fn unsupported_shapes_are_refused_with_the_reason() {
        let e = attention_launch(8, 16, 16, 96, false).unwrap_err();
        assert!(
            e.to_string().contains("head_dim = 96 is not supported"),
            "{e}"
        );
        let e = attention_launch(8, 32, 16, 64, true).unwrap_err();
        assert!(e.to_string().contains("seq_q = 32 > seq_k = 16"), "{e}");
        let e = rope_launch("rope", 4, 2, 7).unwrap_err();
        assert!(e.to_string().contains("head_dim = 7 is odd"), "{e}");
        let e = rope_kv_append_launch(4, 2, 64, 10, 12).unwrap_err();
        assert!(
            e.to_string().contains("do not fit a cache of 12 positions"),
            "{e}"
        );
        assert!(matmul_launch(0, 4, 4).is_err());
        assert!(attention_launch(8, 100, 100, 128, true).is_ok());
    }
}
