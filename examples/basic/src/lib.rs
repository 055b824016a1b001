//! basic: HIP kernels (in `kernels/`) with their Rust references.
//!
//! The references say what each kernel computes; `tests/kernels.rs` checks the kernels against
//! them on every backend, and `benches/kernels.rs` measures the kernels.

/// The compiled kernels (every backend `build.rs` built), for `rocm_test` and the runtime.
pub static KERNELS: &rocm_kernels::KernelLibrary = rocm_kernels::include_kernels!("kernels");

/// Threads per block of `block_sum` (`BLOCK` in `kernels/kernels.hip`).
pub const BLOCK: usize = 256;

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
    }
}
