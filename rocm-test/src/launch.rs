//! Launch configurations: the runtime's own types, re-exported under the names harnesses use
//! (`Launch::cover(n, 256)`), so a check's launch is exactly what reaches the runtime.

pub use rocm_kernels::runtime::{Dim3, LaunchConfig as Launch};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cover_rounds_up_and_never_launches_zero_blocks() {
        assert_eq!(Launch::cover(256, 256).grid.x, 1);
        assert_eq!(Launch::cover(257, 256).grid.x, 2);
        assert_eq!(Launch::cover(0, 256).grid.x, 1);
        let l = Launch::cover_2d((100, 10), (16, 16));
        assert_eq!((l.grid.x, l.grid.y), (7, 1));
        assert_eq!(
            Launch::cover(10, 4).shared_bytes(64).to_string(),
            "grid (3, 1, 1) block (4, 1, 1) shared 64 B"
        );
    }
}
