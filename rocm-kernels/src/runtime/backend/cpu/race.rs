//! The race check of the cpu backend ([`CpuOptions::race_check`](crate::runtime::CpuOptions)):
//! differential execution.
//!
//! Static `__shared__` variables are plain `thread_local` arrays of the compiled kernel (or slots
//! of a worker's arena, in region form), so their accesses cannot be instrumented. Instead a
//! launch runs twice from the same device memory: the threads of each block in order, then in
//! reverse order (abi.h, `RK_ORDER_REVERSED`). A kernel whose threads only communicate across barriers computes the
//! same bytes both times; one where a thread reads what another writes between two barriers
//! (or before anyone wrote it) sees other values. The device buffers the kernel can reach
//! through its pointer arguments are snapshotted before the first run, restored before the
//! second, and compared after it.

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::fmt::Write as _;

/// A device buffer reachable from the pointer arguments of a launch.
#[derive(Debug)]
struct Region {
    start: u64,
    len: usize,
    /// `(parameter index, pointer value)` of the arguments pointing into it.
    pointers: Vec<(usize, u64)>,
}

impl Region {
    fn bytes(&self) -> &[u8] {
        // Safety: a live allocation of the device (`Regions::reachable`), borrowed by the launch.
        unsafe { std::slice::from_raw_parts(self.start as *const u8, self.len) }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // Safety: as in `bytes`; the launch has exclusive use of device memory while it runs.
        unsafe { std::slice::from_raw_parts_mut(self.start as *mut u8, self.len) }
    }
}

/// The device memory a launch can reach, found from its arguments.
#[derive(Debug)]
pub(super) struct Regions(Vec<Region>);

/// The contents of every region at one moment.
pub(super) struct Snapshot(Vec<Vec<u8>>);

impl Regions {
    /// The live allocations (`start → bytes`) that pointer arguments point into. `args[i]` points
    /// to the value of argument `i`; `is_pointer[i]` says whether parameter `i` is a pointer.
    ///
    /// # Safety
    /// `args` are the launch's argument pointers, matching `is_pointer`.
    pub(super) unsafe fn reachable(
        args: &[*mut c_void],
        is_pointer: &[bool],
        allocations: &BTreeMap<u64, u64>,
    ) -> Regions {
        let mut regions: Vec<Region> = Vec::new();
        for (index, (&arg, _)) in args
            .iter()
            .zip(is_pointer)
            .enumerate()
            .filter(|(_, (_, &p))| p)
        {
            let pointer = std::ptr::read_unaligned(arg as *const u64);
            let Some((&start, &bytes)) = allocations.range(..=pointer).next_back() else {
                continue;
            };
            if pointer >= start + bytes {
                continue; // null, or memory this device did not allocate
            }
            match regions.iter_mut().find(|r| r.start == start) {
                Some(region) => region.pointers.push((index, pointer)),
                None => regions.push(Region {
                    start,
                    len: bytes as usize,
                    pointers: vec![(index, pointer)],
                }),
            }
        }
        Regions(regions)
    }

    /// Copy the regions' current contents.
    pub(super) fn capture(&self) -> Snapshot {
        Snapshot(self.0.iter().map(|r| r.bytes().to_vec()).collect())
    }

    /// Put a snapshot's contents back, keeping the snapshot.
    pub(super) fn restore(&mut self, snapshot: &Snapshot) {
        for (region, saved) in self.0.iter_mut().zip(&snapshot.0) {
            region.bytes_mut().copy_from_slice(saved);
        }
    }

    /// Put a snapshot back and keep what the regions held instead: one pass over the memory
    /// and no second copy of it.
    pub(super) fn swap(&mut self, snapshot: &mut Snapshot) {
        for (region, saved) in self.0.iter_mut().zip(&mut snapshot.0) {
            region.bytes_mut().swap_with_slice(saved);
        }
    }

    /// The first byte where the regions' contents differ from `snapshot`.
    pub(super) fn first_difference(&self, snapshot: &Snapshot) -> Option<Difference> {
        self.0.iter().zip(&snapshot.0).find_map(|(region, before)| {
            let now = region.bytes();
            let at = now.iter().zip(before).position(|(a, b)| a != b)?;
            let address = region.start + at as u64;
            // Name the difference after the argument pointing closest below it (a kernel may get
            // several pointers into one buffer), else the first one pointing into the buffer.
            let (param, pointer) = region
                .pointers
                .iter()
                .filter(|(_, p)| *p <= address)
                .max_by_key(|(_, p)| *p)
                .or_else(|| region.pointers.iter().min_by_key(|(_, p)| *p))
                .copied()
                .unwrap_or((0, region.start));
            // The 4-byte word holding the first difference, aligned from the argument's pointer.
            let word = |at: usize| -> std::ops::Range<usize> {
                let rel = (region.start as i64 + at as i64 - pointer as i64).rem_euclid(4) as usize;
                let lo = at.saturating_sub(rel);
                lo..(lo + 4).min(region.len)
            };
            let span = word(at);
            let words_differing = {
                let mut count = 0usize;
                let mut i = at;
                while i < region.len {
                    let w = word(i);
                    if now[w.clone()] != before[w.clone()] {
                        count += 1;
                    }
                    i = w.end;
                }
                count
            };
            Some(Difference {
                address: region.start + span.start as u64,
                param,
                offset: (region.start + span.start as u64) as i64 - pointer as i64,
                first: before[span.clone()].to_vec(),
                second: now[span].to_vec(),
                words_differing,
            })
        })
    }
}

/// Where the two runs of a race check first disagree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Difference {
    /// Address of the word (`first.len()` bytes).
    pub address: u64,
    /// Index of the parameter whose buffer it is.
    pub param: usize,
    /// Byte offset, from where the parameter points (negative: before), of the 4-byte word
    /// (aligned from the pointer) holding the first differing byte.
    pub offset: i64,
    /// That word after the run in thread order, and after the run in reverse order (fewer than 4
    /// bytes where the buffer ends inside it).
    pub first: Vec<u8>,
    pub second: Vec<u8>,
    /// Words of that buffer, from the first difference on, that differ.
    pub words_differing: usize,
}

/// `0x0000002a` for a whole little-endian word, else the bytes: `[2a 00]`.
fn show(bytes: &[u8]) -> String {
    match <[u8; 4]>::try_from(bytes) {
        Ok(word) => format!("{:#010x}", u32::from_le_bytes(word)),
        Err(_) => {
            let mut text = String::from("[");
            for (i, b) in bytes.iter().enumerate() {
                let _ = write!(text, "{}{b:02x}", if i == 0 { "" } else { " " });
            }
            text.push(']');
            text
        }
    }
}

/// Which thread of which block last changed the differing word in one run of the check (from a
/// rerun watching it), if any did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Writer {
    pub block: [u32; 3],
    pub thread: [u32; 3],
    /// How many times a thread's run between two barriers changed the word.
    pub changes: u32,
}

fn writer_text(writer: Option<Writer>, order: &str) -> String {
    match writer {
        Some(Writer {
            block: [bx, by, bz],
            thread: [tx, ty, tz],
            changes,
        }) => format!(
            "{order}, thread ({tx},{ty},{tz}) of block ({bx},{by},{bz}) changed it last \
             ({changes} change(s) in all)"
        ),
        None => format!("{order}, no thread changed it (it kept its value from before the launch)"),
    }
}

impl Difference {
    /// The report: where, what, who wrote it last in each order, and what to do. `param_name` is
    /// the parameter's source name when the build recorded it; `writers` the last writers in
    /// order and in reverse order, when they could be found.
    pub(super) fn message(
        &self,
        param_name: Option<&str>,
        writers: Option<(Option<Writer>, Option<Writer>)>,
    ) -> String {
        let param = match param_name {
            Some(name) => format!("parameter `{name}` (#{})", self.param),
            None => format!("parameter #{}", self.param),
        };
        let place = if self.offset >= 0 {
            format!("byte offset {}", self.offset)
        } else {
            format!("{} byte(s) before where it points", -self.offset)
        };
        let unit = if self.first.len() == 4 {
            "the 4-byte word"
        } else {
            "the bytes"
        };
        format!(
            "the results depend on the order in which the block's threads run between barriers: \
             the buffer of {param} differs first in {unit} at {place}: {} when the threads of \
             each block ran in order, {} when they ran in reverse order ({} differing 4-byte \
             word(s) from there on).{} Threads read shared memory that another thread of the block \
             writes without a __syncthreads() between them, or before any thread wrote it (or \
             they race on global memory, e.g. float atomics adding in a different order); add the \
             missing __syncthreads()",
            show(&self.first),
            show(&self.second),
            self.words_differing,
            match writers {
                Some((in_order, reversed)) => format!(
                    " {}; {}. The thread that changed it computed its value from something \
                     another thread of the block wrote, or had yet to write.",
                    writer_text(in_order, "In order"),
                    writer_text(reversed, "in reverse order"),
                ),
                None => String::new(),
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn regions_over(buffers: &mut [Vec<u8>], pointers: &[(usize, usize, usize)]) -> Regions {
        // (param, buffer, byte offset of the pointer)
        let mut allocations = BTreeMap::new();
        for b in buffers.iter_mut() {
            allocations.insert(b.as_mut_ptr() as u64, b.len() as u64);
        }
        let mut values: Vec<u64> = vec![0; pointers.iter().map(|p| p.0 + 1).max().unwrap_or(0)];
        let mut is_pointer = vec![false; values.len()];
        for &(param, buffer, offset) in pointers {
            values[param] = buffers[buffer].as_mut_ptr() as u64 + offset as u64;
            is_pointer[param] = true;
        }
        let args: Vec<*mut c_void> = values
            .iter_mut()
            .map(|v| v as *mut u64 as *mut c_void)
            .collect();
        // Safety: every argument points to a u64 value.
        unsafe { Regions::reachable(&args, &is_pointer, &allocations) }
    }

    #[test]
    fn finds_buffers_through_interior_pointers_and_skips_foreign_ones() {
        let mut buffers = vec![vec![0u8; 64], vec![0u8; 16]];
        // Parameter 0 is a null pointer, 1 and 3 point into buffer 0, 2 into buffer 1.
        let regions = regions_over(
            &mut buffers,
            &[(0, 0, 1 << 20), (1, 0, 0), (2, 1, 4), (3, 0, 32)],
        );
        assert_eq!(regions.0.len(), 2);
        assert_eq!(regions.0[0].pointers.len(), 2);
        assert_eq!(
            regions.0[1].pointers,
            vec![(2, buffers[1].as_ptr() as u64 + 4)]
        );
    }

    #[test]
    fn swap_and_first_difference() {
        let mut buffers = vec![vec![0u8; 64]];
        let buffers_start = buffers[0].as_ptr() as u64;
        let mut regions = regions_over(&mut buffers, &[(0, 0, 0), (1, 0, 32)]);
        let mut before = regions.capture();
        assert_eq!(regions.first_difference(&before), None);
        regions.0[0].bytes_mut()[41] = 7;
        regions.0[0].bytes_mut()[50] = 1;
        let diff = regions.first_difference(&before).expect("a difference");
        // Named after parameter 1, which points at byte 32.
        assert_eq!(diff.param, 1);
        assert_eq!(diff.offset, 8);
        assert_eq!(diff.first, vec![0, 0, 0, 0]);
        assert_eq!(diff.second, vec![0, 7, 0, 0]);
        assert_eq!(diff.words_differing, 2);
        assert_eq!(diff.address, buffers_start + 40);
        let text = diff.message(Some("out"), None);
        assert!(text.contains("parameter `out` (#1)"), "{text}");
        assert!(
            text.contains("in the 4-byte word at byte offset 8: "),
            "{text}"
        );
        assert!(
            text.contains("0x00000000 when the threads of each block ran in order"),
            "{text}"
        );
        assert!(
            text.contains("0x00000700 when they ran in reverse order"),
            "{text}"
        );
        assert!(text.contains("__syncthreads()"), "{text}");
        let writer = Writer {
            block: [1, 0, 0],
            thread: [7, 2, 0],
            changes: 3,
        };
        let text = diff.message(Some("out"), Some((Some(writer), None)));
        assert!(
            text.contains(
                "In order, thread (7,2,0) of block (1,0,0) changed it last (3 change(s) in \
                 all); in reverse order, no thread changed it (it kept its value from before \
                 the launch)."
            ),
            "{text}"
        );
        let after = regions.capture();
        regions.restore(&before);
        assert!(regions.first_difference(&before).is_none());
        regions.restore(&after);
        regions.swap(&mut before);
        assert!(regions.0[0].bytes().iter().all(|&b| b == 0));
        assert_eq!((before.0[0][41], before.0[0][50]), (7, 1));
    }

    #[test]
    fn partial_words_show_bytes() {
        assert_eq!(show(&[0x2a, 0x01]), "[2a 01]");
        assert_eq!(show(&[1, 0, 0, 0]), "0x00000001");
    }
}
