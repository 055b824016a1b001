//! Declarations of the C++ runtime (`rocm-kernels/cpu-runtime`), mirroring
//! `include/cpu/hip/detail/abi.h`.

use std::ffi::c_void;

pub const RK_ABI_VERSION: u32 = 3;
pub const RK_MAX_PARAMS: usize = 64;

pub const RK_CALL_DESCRIBE: u32 = 1;

/// `rk_thread_order`: threads of a block ascending, or waves last to first (race check).
pub const RK_ORDER_FORWARD: u32 = 0;
pub const RK_ORDER_REVERSED: u32 = 1;

pub const RK_OK: u32 = 0;
pub const RK_FAULT: u32 = 1;
pub const RK_MEMORY_FAULT: u32 = 2;
pub const RK_PARTIAL_BARRIER: u32 = 3;
pub const RK_TIMEOUT: u32 = 4;
pub const RK_INVALID: u32 = 5;
pub const RK_STACK_OVERFLOW: u32 = 6;

#[repr(C)]
pub struct RkParamInfo {
    pub abi_version: u32,
    pub count: u32,
    pub size: [u32; RK_MAX_PARAMS],
    pub is_pointer: [u8; RK_MAX_PARAMS],
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
}

/// The text of a NUL-terminated C buffer.
pub fn c_text(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}
