//! The runtime's launch log: what `cargo rocm profile` learns from inside the workload.
//!
//! When the environment variable [`ENV_LAUNCH_LOG`] names a file, the runtime of `rocm-kernels`
//! appends one JSON object per line to it:
//!
//! - a [`Launch`] for every kernel launch: kernel, device, grid, block, dynamic shared memory,
//!   the bytes and floating-point operations the caller declared for it
//!   (`LaunchBuilder::bytes`, `LaunchBuilder::flops`), and on the cpu backend, where a launch
//!   completes before it returns, its duration;
//! - a [`Function`] the first time a kernel is launched with a given block size and dynamic
//!   shared memory on a backend whose driver reports resources and occupancy (nvidia: the
//!   function attributes and `cuOccupancyMaxActiveBlocksPerMultiprocessor`).
//!
//! Without the variable nothing is recorded and launches cost nothing extra. Lines are written
//! whole with one `write` each (`O_APPEND`), so a crash leaves a readable log up to the last
//! launch, and several processes may share one file (each record carries its `pid`).
//!
//! The format is versioned ([`LAUNCH_LOG_VERSION`], field `v`); readers skip record types they
//! do not know, so a newer runtime's log still reads.

use serde::{Deserialize, Serialize};

use rocm_kernels_core::Backend;

/// The variable naming the log file.
pub const ENV_LAUNCH_LOG: &str = "ROCM_LAUNCH_LOG";

/// The version of the records written.
pub const LAUNCH_LOG_VERSION: u32 = 1;

/// One line of the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum LaunchRecord {
    /// A kernel launch.
    Launch(Launch),
    /// A kernel's resources and occupancy as the driver reports them.
    Function(Function),
}

impl LaunchRecord {
    /// The record as one line of the log, newline included.
    pub fn to_line(&self) -> String {
        // Serialising these plain structs cannot fail.
        let mut line = serde_json::to_string(self).unwrap_or_default();
        line.push('\n');
        line
    }
}

/// Where a record comes from: the process, the library, the kernel and the device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    /// The record format's version, [`LAUNCH_LOG_VERSION`].
    pub v: u32,
    /// The process that launched.
    pub pid: u32,
    /// The kernel library (`KernelLibrary::name`).
    pub library: String,
    /// The kernel, in its one spelling (`saxpy`, `scale<float>`).
    pub kernel: String,
    /// The backend that ran it.
    pub backend: Backend,
    /// The device, for people (`NVIDIA H100 80GB HBM3`, `cpu (16 threads, wave 64)`).
    pub device: String,
    /// What the device runs: `gfx90a:sramecc+:xnack-`, `sm_90`, `x86_64`.
    pub arch: String,
}

/// One kernel launch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Launch {
    /// Who launched what, where.
    #[serde(flatten)]
    pub origin: Origin,
    /// Blocks in the grid.
    pub grid: [u32; 3],
    /// Threads in a block.
    pub block: [u32; 3],
    /// Dynamic shared memory per block, bytes.
    pub shared_bytes: u32,
    /// When the launch started: nanoseconds since the log was opened by this process.
    pub start_ns: u64,
    /// How long the kernel ran, where the runtime knows it: on the cpu backend (where a launch
    /// returns when the kernel is done). GPU launches are asynchronous; their times come from the
    /// platform's profiler.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ns: Option<u64>,
    /// Bytes the caller declared the launch moves (reads plus writes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// Floating-point operations the caller declared the launch performs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flops: Option<u64>,
}

/// A kernel's resources and occupancy for one block size, from the driver.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Function {
    /// The kernel and device these resources are of.
    #[serde(flatten)]
    pub origin: Origin,
    /// Threads per block the occupancy is for.
    pub block_threads: u32,
    /// Dynamic shared memory per block the occupancy is for, bytes.
    pub shared_bytes: u32,
    /// Threads per warp.
    pub warp_size: u32,
    /// What the driver reports.
    #[serde(flatten)]
    pub resources: DriverResources,
}

/// What the driver says of a kernel at one block size (nvidia: the function attributes and
/// `cuOccupancyMaxActiveBlocksPerMultiprocessor`). The runtime's backends return it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriverResources {
    /// Registers per thread (`CU_FUNC_ATTRIBUTE_NUM_REGS`).
    pub registers: Option<u32>,
    /// Static shared memory per block, bytes (`CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES`).
    pub static_shared_bytes: Option<u32>,
    /// Local memory per thread, bytes (`CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES`): spills and stack.
    pub local_bytes: Option<u32>,
    /// Largest block this kernel can be launched with (`CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`).
    pub max_threads_per_block: Option<u32>,
    /// Blocks of the block size resident per multiprocessor
    /// (`cuOccupancyMaxActiveBlocksPerMultiprocessor`).
    pub active_blocks_per_sm: Option<u32>,
    /// Warps a multiprocessor holds at most (`MAX_THREADS_PER_MULTIPROCESSOR` / warp size).
    pub max_warps_per_sm: Option<u32>,
    /// Why a field above is missing, when a driver call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Function {
    /// Resident warps per multiprocessor at this block size.
    pub fn active_warps_per_sm(&self) -> Option<u32> {
        let warps_per_block = self.block_threads.div_ceil(self.warp_size.max(1));
        Some(self.resources.active_blocks_per_sm? * warps_per_block)
    }
}

/// A line of a log that is not a record this reader knows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line} of the launch log is not a launch record: {message}")]
pub struct LaunchLogError {
    /// 1-based.
    pub line: usize,
    /// Why it is not a record.
    pub message: String,
}

/// Read a whole log. Blank lines and records of a type this version does not know are skipped;
/// a line that is not JSON, or a known record that does not parse, is an error naming the line.
/// A last line cut short (the process died while writing it) is skipped too.
pub fn read_launch_log(text: &str) -> Result<Vec<LaunchRecord>, LaunchLogError> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value: serde_json::Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(_) if i + 1 == lines.len() && !text.ends_with('\n') => break,
            Err(e) => {
                return Err(LaunchLogError {
                    line: i + 1,
                    message: e.to_string(),
                })
            }
        };
        let known = matches!(
            value.get("type").and_then(|t| t.as_str()),
            Some("launch" | "function")
        );
        if !known {
            continue;
        }
        out.push(serde_json::from_value(value).map_err(|e| LaunchLogError {
            line: i + 1,
            message: e.to_string(),
        })?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin() -> Origin {
        Origin {
            v: LAUNCH_LOG_VERSION,
            pid: 7,
            library: "kernels".into(),
            kernel: "saxpy".into(),
            backend: Backend::Cpu,
            device: "cpu".into(),
            arch: "x86_64".into(),
        }
    }

    #[test]
    fn records_round_trip_as_one_line_each() {
        let records = vec![
            LaunchRecord::Launch(Launch {
                origin: origin(),
                grid: [4, 1, 1],
                block: [256, 1, 1],
                shared_bytes: 0,
                start_ns: 10,
                duration_ns: Some(1500),
                bytes: Some(12),
                flops: None,
            }),
            LaunchRecord::Function(Function {
                origin: Origin {
                    backend: Backend::Nvidia,
                    ..origin()
                },
                block_threads: 256,
                shared_bytes: 0,
                warp_size: 32,
                resources: DriverResources {
                    registers: Some(16),
                    active_blocks_per_sm: Some(8),
                    max_warps_per_sm: Some(64),
                    ..DriverResources::default()
                },
            }),
        ];
        let text: String = records.iter().map(LaunchRecord::to_line).collect();
        assert!(text
            .lines()
            .next()
            .unwrap()
            .starts_with(r#"{"type":"launch","v":1,"pid":7"#));
        assert_eq!(read_launch_log(&text).unwrap(), records);
        let LaunchRecord::Function(f) = &records[1] else {
            unreachable!()
        };
        assert_eq!(f.active_warps_per_sm(), Some(64));
    }

    #[test]
    fn unknown_types_and_a_torn_last_line_are_skipped_other_garbage_is_not() {
        let good = serde_json::to_string(&LaunchRecord::Launch(Launch {
            origin: origin(),
            grid: [1, 1, 1],
            block: [1, 1, 1],
            shared_bytes: 0,
            start_ns: 0,
            duration_ns: None,
            bytes: None,
            flops: None,
        }))
        .unwrap();
        let text = format!("{{\"type\":\"future\",\"x\":1}}\n\n{good}\n{{\"type\":\"lau");
        assert_eq!(read_launch_log(&text).unwrap().len(), 1);
        let err = read_launch_log(&format!("not json\n{good}\n")).unwrap_err();
        assert_eq!(err.line, 1);
        let err = read_launch_log("{\"type\":\"launch\",\"v\":1}\n").unwrap_err();
        assert!(err.message.contains("missing field"), "{err}");
    }
}
