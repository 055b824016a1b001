//! Kernels ([`CpuFunction`]) and a plain launch: the launch description, faults turned into
//! errors that name the kernel, block, thread and buffer.

use std::ffi::c_void;
use std::sync::Arc;

use super::super::{DevicePtr, FunctionBackend, ParamLayout, StreamBackend};
use super::device::{Shared, GENERAL_PROTECTION};
use super::race_check::with_note;
use super::{ffi, slack, MAX_BLOCK_THREADS, MAX_DYNAMIC_SHARED};
use crate::runtime::{CpuExec, FaultSite, LaunchConfig, RaceMethod, Result, RuntimeError};

#[derive(Debug)]
pub(super) struct CpuFunction {
    pub(super) name: String,
    pub(super) entry: ffi::RkEntry,
    /// The kernel's race variant (instrumented), for the race detector.
    pub(super) race_entry: Option<ffi::RkEntry>,
    /// What the race variant's region form runs per call (as `region_form`; `RK_ENTRY_THREADS`
    /// where it runs per thread).
    pub(super) race_region_form: u32,
    /// The library's `__constant__`/`__device__` variables: (plain address, race variant's
    /// copy, bytes). A race-checked launch copies them in and back out.
    pub(super) globals: Vec<(DevicePtr, DevicePtr, usize, &'static str)>,
    pub(super) layout: Vec<ParamLayout>,
    /// What the entry's region form runs per call (`rk_block_entry` in `abi.h`): waves
    /// (`RK_ENTRY_WAVES`), which the runtime then schedules as the block's threads; whole blocks
    /// (`RK_ENTRY_WHOLE_BLOCKS`), in chunks; or there is none (`RK_ENTRY_THREADS`).
    pub(super) region_form: u32,
    /// Parameter names from the build's declarations; empty when unknown.
    pub(super) param_names: Vec<&'static str>,
    /// Their source types, likewise.
    pub(super) param_types: Vec<&'static str>,
    pub(super) shared: Arc<Shared>,
}

impl CpuFunction {
    pub(super) fn site(&self, result: &ffi::RkLaunchResult) -> FaultSite {
        FaultSite {
            kernel: self.name.clone(),
            block: result.block,
            thread: result.thread,
        }
    }

    pub(super) fn invalid(&self, message: String) -> RuntimeError {
        RuntimeError::InvalidLaunch {
            kernel: self.name.clone(),
            message,
        }
    }

    pub(super) fn to_error(&self, result: &ffi::RkLaunchResult) -> RuntimeError {
        let message = ffi::c_text(&result.message);
        let site = self.site(result);
        match result.status {
            ffi::RK_MEMORY_FAULT if result.access == 3 => RuntimeError::KernelFault {
                site,
                message: GENERAL_PROTECTION.to_string(),
            },
            ffi::RK_MEMORY_FAULT => {
                let access = match result.access {
                    1 => "read",
                    2 => "write",
                    _ => "access",
                };
                match self.shared.explain_address(result.address) {
                    Some(detail) => RuntimeError::OutOfBounds {
                        site,
                        access,
                        address: result.address,
                        detail,
                    },
                    None => RuntimeError::KernelFault {
                        site,
                        message: format!(
                            "invalid memory {access} at address {:#x} (not in or next to any \
                             buffer of this device)",
                            result.address
                        ),
                    },
                }
            }
            ffi::RK_PARTIAL_BARRIER => RuntimeError::PartialBarrier { site, message },
            ffi::RK_TIMEOUT => RuntimeError::Timeout {
                kernel: self.name.clone(),
                limit: self.shared.options.time_limit.unwrap_or_default(),
                block: result.block,
            },
            ffi::RK_INVALID => self.invalid(message),
            ffi::RK_FAULT | ffi::RK_STACK_OVERFLOW => RuntimeError::KernelFault { site, message },
            other => RuntimeError::KernelFault {
                site,
                message: format!("unknown status {other} from the cpu runtime: {message}"),
            },
        }
    }
}

impl FunctionBackend for CpuFunction {
    fn param_layout(&self) -> Option<Vec<ParamLayout>> {
        Some(self.layout.clone())
    }

    unsafe fn launch(
        &self,
        config: &LaunchConfig,
        args: &[*mut c_void],
        _stream: &dyn StreamBackend,
    ) -> Result<()> {
        let options = &self.shared.options;
        if config.block.count() > MAX_BLOCK_THREADS {
            return Err(self.invalid(format!(
                "block {:?} has {} threads; at most {MAX_BLOCK_THREADS} are allowed",
                config.block,
                config.block.count()
            )));
        }
        if config.shared_bytes > MAX_DYNAMIC_SHARED {
            return Err(self.invalid(format!(
                "{} bytes of dynamic shared memory requested; at most {MAX_DYNAMIC_SHARED}",
                config.shared_bytes
            )));
        }
        let desc = ffi::RkLaunchDesc {
            entry: self.entry,
            args: args.as_ptr(),
            grid: [config.grid.x, config.grid.y, config.grid.z],
            block: [config.block.x, config.block.y, config.block.z],
            shared_bytes: config.shared_bytes,
            wave_size: options.wave_size,
            checked: u32::from(options.checked),
            has_seed: u32::from(options.shuffle_seed.is_some()),
            seed: options.shuffle_seed.unwrap_or(0),
            time_limit_ns: options
                .time_limit
                .map_or(0, |d| d.as_nanos().clamp(1, u128::from(u64::MAX)) as u64),
            exec_fibers: u32::from(options.exec == CpuExec::Fibers),
            region_waves: u32::from(
                self.region_form == ffi::RK_ENTRY_WAVES && options.exec == CpuExec::Regions,
            ),
            thread_order: ffi::RK_ORDER_FORWARD,
            whole_blocks: u32::from(
                (self.region_form == ffi::RK_ENTRY_WHOLE_BLOCKS
                    && options.exec == CpuExec::Regions)
                    || (self.region_form != ffi::RK_ENTRY_THREADS
                        && options.exec == CpuExec::Blocks),
            ),
            exec_blocks: u32::from(options.exec == CpuExec::Blocks),
            // Race-checked launches name threads exactly; plain ones let the compiler optimise
            // across lanes and rerun a faulting launch to name the thread (`launch_plain`).
            publish: u32::from(options.checked && options.race_check),
            watch_len: 0,
            watch_addr: 0,
        };
        let result = if options.race_check {
            match (options.race_method, self.race_entry) {
                (RaceMethod::Detector, Some(race_entry)) => {
                    self.launch_race_detected(desc, race_entry, args, options.race_strict)
                }
                _ => self.launch_race_checked(desc, args),
            }
        } else {
            self.launch_plain(desc)
        };
        if result.is_err() && options.checked {
            // A fault is the report; canaries it left changed must not be the next launch's.
            let _ = self.shared.canaries_changed();
        }
        result.map_err(|err| self.name_missed_buffer(err, args))
    }
}

impl CpuFunction {
    /// Parameter `index` as reports name it: "`x` (parameter #0, const float*)".
    pub(super) fn param_label(&self, index: usize) -> String {
        match (self.param_names.get(index), self.param_types.get(index)) {
            (Some(n), Some(t)) if !t.is_empty() => format!("`{n}` (parameter #{index}, {t})"),
            (Some(n), _) => format!("`{n}` (parameter #{index})"),
            _ => format!("parameter #{index}"),
        }
    }

    /// An out-of-bounds fault names the parameter whose buffer it missed, where one points into
    /// it: "`x` (parameter #0, const float*): byte offset 4 of the 4-byte buffer...".
    ///
    /// # Safety
    /// `args` are the launch's argument pointers.
    pub(super) unsafe fn name_missed_buffer(
        &self,
        mut err: RuntimeError,
        args: &[*mut c_void],
    ) -> RuntimeError {
        if let RuntimeError::OutOfBounds {
            address, detail, ..
        }
        | RuntimeError::Overrun {
            address, detail, ..
        } = &mut err
        {
            if let Some((start, bytes)) = self.shared.buffer_near(*address) {
                let param = self
                    .layout
                    .iter()
                    .zip(args)
                    .enumerate()
                    .filter(|(_, (p, _))| p.is_pointer)
                    .find(|(_, (_, &arg))| {
                        let value = std::ptr::read_unaligned(arg as *const u64);
                        value >= start && value <= start + bytes
                    })
                    .map(|(index, _)| index);
                if let Some(index) = param {
                    *detail = format!("{}: {detail}", self.param_label(index));
                }
            }
        }
        err
    }

    /// Checked mode, after a launch that ran to its end: did it write past the end of a buffer,
    /// into the slack before the guard page (buffers start 256-byte aligned, so up to 255 bytes
    /// after one's end do not fault)? The canaries there say so. To name the thread, the launch
    /// runs once more (from the memory `reset` restores where given, else as the launch left it:
    /// an overrun that depends on indices rather than data recurs) on a fresh one-worker pool,
    /// a fiber per thread, the runtime watching the first changed bytes.
    ///
    /// # Safety
    /// As [`FunctionBackend::launch`] for the arguments `desc` points to.
    pub(super) unsafe fn overrun(
        &self,
        desc: &ffi::RkLaunchDesc,
        reset: Option<&mut dyn FnMut()>,
    ) -> Result<()> {
        if desc.checked == 0 {
            return Ok(());
        }
        let Some(address) = self.shared.canaries_changed() else {
            return Ok(());
        };
        let detail = match self.shared.explain_address(address) {
            Some(text) => format!(
                "{text}; the launch changed the canary bytes between the buffer's end and its \
                 guard page"
            ),
            None => "the launch changed the canary bytes after a buffer's end".to_string(),
        };
        let Some((start, bytes)) = self.shared.buffer_near(address) else {
            return Err(RuntimeError::Overrun {
                kernel: self.name.clone(),
                address,
                detail,
            });
        };
        let (slack_at, slack_len) = slack(start, bytes);
        if let Some(reset) = reset {
            reset();
        }
        let mut watched = *desc;
        watched.exec_fibers = 1;
        watched.region_waves = 0;
        watched.whole_blocks = 0;
        watched.exec_blocks = 0;
        watched.watch_addr = address;
        watched.watch_len = (slack_at + slack_len - address).min(8) as u32;
        let writer = self.shared.new_pool(1).ok().and_then(|pool| {
            let mut result = ffi::RkLaunchResult::new();
            ffi::rk_launch(pool.0, &watched, &mut result);
            (result.watch_changes > 0).then_some(FaultSite {
                kernel: self.name.clone(),
                block: result.watch_block,
                thread: result.watch_thread,
            })
        });
        let _ = self.shared.canaries_changed();
        Err(match writer {
            Some(site) => RuntimeError::OutOfBounds {
                site,
                access: "write",
                address,
                detail,
            },
            None => RuntimeError::Overrun {
                kernel: self.name.clone(),
                address,
                detail: format!(
                    "{detail} (running the launch again to name the thread, it did not write \
                     there again)"
                ),
            },
        })
    }

    /// A launch on the device's pool. Region forms run their lanes without publishing each one's
    /// coordinates (the compiler vectorises across lanes), so a fault names a thread of the right
    /// wave, not always the right one: in checked mode a faulting launch runs once more,
    /// publishing them, and the fault of that run (the same one, for faults that depend on
    /// indices rather than data) names the exact thread. Only failing launches pay for it.
    ///
    /// # Safety
    /// As [`FunctionBackend::launch`].
    pub(super) unsafe fn launch_plain(&self, desc: ffi::RkLaunchDesc) -> Result<()> {
        let pool = self.shared.pool()?;
        let first = match self.run(pool, &desc) {
            Ok(_) => return self.overrun(&desc, None),
            Err(err) => err,
        };
        let lanes_unnamed = desc.checked != 0
            && desc.publish == 0
            && (desc.region_waves != 0 || desc.whole_blocks != 0 || desc.exec_blocks != 0);
        let thread_named = matches!(
            first,
            RuntimeError::KernelFault { .. } | RuntimeError::OutOfBounds { .. }
        );
        if !(lanes_unnamed && thread_named) {
            return Err(first);
        }
        let mut exact = desc;
        exact.publish = 1;
        match self.run(pool, &exact) {
            Err(again) if std::mem::discriminant(&again) == std::mem::discriminant(&first) => {
                Err(again)
            }
            _ => Err(with_note(
                first,
                " (the thread may be a neighbour of the one at fault: the launch ran its lanes \
                 without naming each, and running it again naming them did not fault the same way)",
            )),
        }
    }

    /// Run one launch on `pool`.
    ///
    /// # Safety
    /// As [`FunctionBackend::launch`] for the arguments `desc` points to.
    pub(super) unsafe fn run(
        &self,
        pool: *mut ffi::RkPool,
        desc: &ffi::RkLaunchDesc,
    ) -> Result<ffi::RkLaunchResult> {
        let mut result = ffi::RkLaunchResult::new();
        ffi::rk_launch(pool, desc, &mut result);
        if result.status == ffi::RK_OK {
            Ok(result)
        } else {
            Err(self.to_error(&result))
        }
    }
}
