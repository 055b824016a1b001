//! Declarations of the C++ runtime (`rocm-kernels/cpu-runtime`), mirroring the host side of
//! `include/cpu/hip/detail/abi.h` (in `rocm-kernels-core`). The test below holds the two
//! together: it compares every size, alignment, field offset and constant here with what the C++
//! compiler made of the header (`cpu-runtime/abi_layout.cpp`, linked in by `build.rs`). The race
//! detector's host side (`cpu-runtime/race.h`) is mirrored and held the same way.

use std::ffi::c_void;

pub const RK_ABI_VERSION: u32 = 5;
pub const RK_MAX_PARAMS: usize = 64;

/// `rk_call_op`: fill `RkCall::info` with the parameter layout.
pub const RK_CALL_DESCRIBE: u32 = 1;

/// `rk_block_entry`, in `RkParamInfo::block_entry`: what an entry's region form runs per call.
/// No region form (the entry runs threads).
pub const RK_ENTRY_THREADS: u32 = 0;
/// One wave: the runtime schedules the block's waves as its threads.
pub const RK_ENTRY_WAVES: u32 = 1;
/// A whole block (no barriers or collectives, or the build proved that thread order between
/// barriers cannot change the results), and chunks of blocks per call.
pub const RK_ENTRY_WHOLE_BLOCKS: u32 = 2;

/// `rk_thread_order`: the threads of a block ascending, or descending (the race check runs both).
pub const RK_ORDER_FORWARD: u32 = 0;
pub const RK_ORDER_REVERSED: u32 = 1;

pub const RK_OK: u32 = 0;
pub const RK_FAULT: u32 = 1;
pub const RK_MEMORY_FAULT: u32 = 2;
pub const RK_PARTIAL_BARRIER: u32 = 3;
pub const RK_TIMEOUT: u32 = 4;
pub const RK_INVALID: u32 = 5;
pub const RK_STACK_OVERFLOW: u32 = 6;

/// `rk_race_space`: where racing accesses went.
pub const RK_RACE_GLOBAL: u32 = 1;
pub const RK_RACE_SHARED: u32 = 2;
pub const RK_RACE_STATIC_SHARED: u32 = 3;

/// `rk_race_range`: device memory the race detector checks.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RkRaceRange {
    pub start: u64,
    pub len: u64,
}

/// `rk_race_access`: one access of a race.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct RkRaceAccess {
    pub block: [u32; 3],
    pub thread: [u32; 3],
    pub pc: u64,
    pub write: u32,
    pub atomic: u32,
}

/// `rk_race_report`: a race, with how many times this pair of places raced.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct RkRaceReport {
    pub address: u64,
    pub space: u32,
    pub count: u32,
    pub offset: u64,
    pub earlier: RkRaceAccess,
    pub later: RkRaceAccess,
}

#[repr(C)]
pub struct RkParamInfo {
    pub abi_version: u32,
    pub count: u32,
    pub size: [u32; RK_MAX_PARAMS],
    pub is_pointer: [u8; RK_MAX_PARAMS],
    pub align: [u32; RK_MAX_PARAMS],
    pub block_entry: u32,
}

#[repr(C)]
pub struct RkCall {
    pub op: u32,
    pub begin: u32,
    pub end: u32,
    pub args: *const *mut c_void,
    pub info: *mut RkParamInfo,
}

pub type RkEntry = unsafe extern "C" fn(*const RkCall);

#[repr(C)]
#[derive(Clone, Copy)]
pub struct RkLaunchDesc {
    pub entry: RkEntry,
    pub args: *const *mut c_void,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_bytes: u32,
    pub wave_size: u32,
    pub checked: u32,
    pub has_seed: u32,
    pub seed: u64,
    pub time_limit_ns: u64,
    pub exec_fibers: u32,
    pub region_waves: u32,
    pub thread_order: u32,
    pub whole_blocks: u32,
    pub exec_blocks: u32,
    pub publish: u32,
    pub watch_len: u32,
    pub watch_addr: u64,
}

#[repr(C)]
pub struct RkLaunchResult {
    pub status: u32,
    pub block: [u32; 3],
    pub thread: [u32; 3],
    pub access: u32,
    pub address: u64,
    pub message: [u8; 512],
    pub watch_changes: u32,
    pub watch_block: [u32; 3],
    pub watch_thread: [u32; 3],
}

impl RkLaunchResult {
    pub fn new() -> Self {
        RkLaunchResult {
            status: 0,
            block: [0; 3],
            thread: [0; 3],
            access: 0,
            address: 0,
            message: [0; 512],
            watch_changes: 0,
            watch_block: [0; 3],
            watch_thread: [0; 3],
        }
    }
}

#[repr(C)]
pub struct RkPool {
    _private: [u8; 0],
}

extern "C" {
    pub fn rk_pool_create(
        threads: u32,
        stack_size: u64,
        error: *mut u8,
        error_len: u64,
    ) -> *mut RkPool;
    pub fn rk_pool_destroy(pool: *mut RkPool);
    pub fn rk_launch(
        pool: *mut RkPool,
        desc: *const RkLaunchDesc,
        result: *mut RkLaunchResult,
    ) -> u32;
    pub fn rk_mem_alloc(bytes: u64, guarded: u32) -> *mut c_void;
    pub fn rk_mem_free(ptr: *mut c_void, bytes: u64, guarded: u32);
    pub fn rk_measure_switch_ns(iterations: u64) -> f64;
    pub fn rk_runtime_supported() -> u32;
    pub fn rk_signal_handlers_first();
    pub fn rk_race_begin(ranges: *const RkRaceRange, count: u32, wave_size: u32) -> u32;
    pub fn rk_race_set_strict(strict: u32);
    pub fn rk_race_set_summaries(on: u32);
    pub fn rk_race_summary_stats(replayed: *mut u32) -> u64;
    pub fn rk_race_bound(ranges: *const RkRaceRange, count: u32);
    pub fn rk_race_out_of_bounds(out: *mut RkRaceReport) -> u32;
    pub fn rk_race_end(out: *mut RkRaceReport, max: u32, total: *mut u64) -> u32;
    pub fn rk_race_barrier_pc(thread: u32) -> u64;
    pub fn rk_race_set_workers(pool: *const RkPool, n: u32);
    pub fn rk_race_rerun(failed: u32) -> u32;
}

/// The text of a NUL-terminated C buffer.
pub fn c_text(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::ffi::{c_char, CStr};
    use std::mem::{align_of, offset_of, size_of};

    /// One entry of `rk_abi_layout` (`cpu-runtime/abi_layout.cpp`).
    #[repr(C)]
    struct Fact {
        name: *const c_char,
        value: u64,
    }

    extern "C" {
        static rk_abi_layout: Fact;
        static rk_abi_layout_len: u64;
    }

    /// What the C++ compiler made of `abi.h` (and of the vector types, for `crate::vector`).
    pub(crate) fn cpp_facts() -> BTreeMap<String, u64> {
        // Safety: the table and its length are constants of abi_layout.cpp.
        let facts = unsafe {
            std::slice::from_raw_parts(&raw const rk_abi_layout, rk_abi_layout_len as usize)
        };
        facts
            .iter()
            .map(|f| {
                // Safety: names are string literals.
                let name = unsafe { CStr::from_ptr(f.name) };
                (name.to_string_lossy().into_owned(), f.value)
            })
            .collect()
    }

    /// The same facts of this file, named as abi_layout.cpp names them.
    fn rust_facts() -> BTreeMap<String, u64> {
        let mut facts = BTreeMap::new();
        macro_rules! layout {
            ($c:literal, $t:ty, [$($field:ident),* $(,)?]) => {
                facts.insert(format!("sizeof({})", $c), size_of::<$t>() as u64);
                facts.insert(format!("alignof({})", $c), align_of::<$t>() as u64);
                $(facts.insert(
                    format!("offsetof({}, {})", $c, stringify!($field)),
                    offset_of!($t, $field) as u64,
                );)*
            };
        }
        macro_rules! constants {
            ($($name:ident),* $(,)?) => {
                $(facts.insert(stringify!($name).to_string(), $name as u64);)*
            };
        }
        layout!(
            "rk_param_info",
            RkParamInfo,
            [abi_version, count, size, is_pointer, align, block_entry]
        );
        layout!("rk_call", RkCall, [op, begin, end, args, info]);
        layout!(
            "rk_launch_desc",
            RkLaunchDesc,
            [
                entry,
                args,
                grid,
                block,
                shared_bytes,
                wave_size,
                checked,
                has_seed,
                seed,
                time_limit_ns,
                exec_fibers,
                region_waves,
                thread_order,
                whole_blocks,
                exec_blocks,
                publish,
                watch_len,
                watch_addr,
            ]
        );
        layout!(
            "rk_launch_result",
            RkLaunchResult,
            [
                status,
                block,
                thread,
                access,
                address,
                message,
                watch_changes,
                watch_block,
                watch_thread,
            ]
        );
        layout!("rk_race_range", RkRaceRange, [start, len]);
        layout!(
            "rk_race_access",
            RkRaceAccess,
            [block, thread, pc, write, atomic]
        );
        layout!(
            "rk_race_report",
            RkRaceReport,
            [address, space, count, offset, earlier, later]
        );
        constants!(
            RK_RACE_GLOBAL,
            RK_RACE_SHARED,
            RK_RACE_STATIC_SHARED,
            RK_ABI_VERSION,
            RK_MAX_PARAMS,
            RK_CALL_DESCRIBE,
            RK_ENTRY_THREADS,
            RK_ENTRY_WAVES,
            RK_ENTRY_WHOLE_BLOCKS,
            RK_ORDER_FORWARD,
            RK_ORDER_REVERSED,
            RK_OK,
            RK_FAULT,
            RK_MEMORY_FAULT,
            RK_PARTIAL_BARRIER,
            RK_TIMEOUT,
            RK_INVALID,
            RK_STACK_OVERFLOW,
        );
        facts
    }

    #[test]
    fn the_rust_mirror_matches_what_the_cpp_compiler_makes_of_abi_h() {
        let mut cpp = cpp_facts();
        // The vector types' facts are compared by `crate::vector`'s test.
        cpp.retain(|k, _| !k.contains('(') || k.contains("rk_") || k.starts_with("offsetof"));
        let rust = rust_facts();
        assert!(cpp.len() > 40, "the C++ table lists {} facts", cpp.len());
        let mut wrong = Vec::new();
        for name in cpp
            .keys()
            .chain(rust.keys())
            .collect::<std::collections::BTreeSet<_>>()
        {
            match (cpp.get(name), rust.get(name)) {
                (Some(c), Some(r)) if c == r => {}
                (c, r) => wrong.push(format!("{name}: C++ {c:?}, Rust {r:?}")),
            }
        }
        assert!(
            wrong.is_empty(),
            "abi.h and ffi.rs disagree (fix the side that is wrong, and bump RK_ABI_VERSION):\n{}",
            wrong.join("\n")
        );
    }
}
