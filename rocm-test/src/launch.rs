//! Launch configurations: grid and block sizes and dynamic shared memory.

use std::fmt;

/// A grid or block extent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dim3 {
    pub x: u32,
    pub y: u32,
    pub z: u32,
}

impl Dim3 {
    pub const fn new(x: u32, y: u32, z: u32) -> Self {
        Dim3 { x, y, z }
    }
}

impl From<u32> for Dim3 {
    fn from(x: u32) -> Self {
        Dim3 { x, y: 1, z: 1 }
    }
}

impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Self {
        Dim3 { x, y, z: 1 }
    }
}

impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Self {
        Dim3 { x, y, z }
    }
}

impl fmt::Display for Dim3 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}, {}, {})", self.x, self.y, self.z)
    }
}

/// How a kernel is launched: `grid` blocks of `block` threads, with `shared_bytes` of dynamic
/// (`extern __shared__`) memory per block.
///
/// ```
/// use rocm_test::Launch;
/// // Enough 256-thread blocks to cover 1000 elements: grid 4.
/// let l = Launch::cover(1000, 256);
/// assert_eq!((l.grid.x, l.block.x), (4, 256));
/// let l = Launch::new(8, (16, 16)).shared_bytes(1024);
/// assert_eq!(l.block.y, 16);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Launch {
    pub grid: Dim3,
    pub block: Dim3,
    pub shared_bytes: u32,
}

impl Launch {
    /// A fixed grid and block.
    pub fn new(grid: impl Into<Dim3>, block: impl Into<Dim3>) -> Self {
        Launch {
            grid: grid.into(),
            block: block.into(),
            shared_bytes: 0,
        }
    }

    /// One thread per element: blocks of `block` threads, as many as cover `n` (at least one).
    pub fn cover(n: usize, block: u32) -> Self {
        let blocks = n.div_ceil(block.max(1) as usize).max(1);
        Launch::new(u32::try_from(blocks).unwrap_or(u32::MAX), block)
    }

    /// A 2-D version of [`Launch::cover`]: `(nx, ny)` elements in `(bx, by)` blocks.
    pub fn cover_2d((nx, ny): (usize, usize), (bx, by): (u32, u32)) -> Self {
        let gx = nx.div_ceil(bx.max(1) as usize).max(1);
        let gy = ny.div_ceil(by.max(1) as usize).max(1);
        Launch::new(
            (
                u32::try_from(gx).unwrap_or(u32::MAX),
                u32::try_from(gy).unwrap_or(u32::MAX),
            ),
            (bx, by),
        )
    }

    /// Dynamic shared memory per block, in bytes.
    pub fn shared_bytes(mut self, bytes: u32) -> Self {
        self.shared_bytes = bytes;
        self
    }
}

impl fmt::Display for Launch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "grid {} block {}", self.grid, self.block)?;
        if self.shared_bytes > 0 {
            write!(f, " shared {} B", self.shared_bytes)?;
        }
        Ok(())
    }
}

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
