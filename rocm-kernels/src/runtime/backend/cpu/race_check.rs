//! The race check of a launch ([`CpuOptions::race_check`]): the detector run of the race variant,
//! or two thread orders compared.

use std::collections::BTreeMap;
use std::ffi::c_void;

use super::device::{Pool, Shared};
use super::launch::CpuFunction;
use super::{detector, ffi, race};
use crate::runtime::{CpuExec, FaultSite, Result, RuntimeError};

impl CpuFunction {
    /// [`CpuOptions::race_check`] with the kernel's race variant: one run of the instrumented
    /// entry on a fresh pool of the device's worker count, each worker checking a contiguous
    /// share of the blocks, with the race detector armed over the device's memory (`detector`,
    /// `cpu-runtime/race.cpp`): the region form where the variant has one (whole blocks, all
    /// waves in step), else (or with [`CpuExec::Fibers`]) per-thread fibers. Where the workers
    /// found anything or their blocks met on device memory, device memory is put back and the
    /// launch checked again on one worker, so reports do not depend on the worker count. A
    /// fault of the run comes first; else any race found fails the launch.
    ///
    /// [`CpuExec::Fibers`]: crate::runtime::CpuExec::Fibers
    ///
    /// # Safety
    /// As [`FunctionBackend::launch`].
    pub(super) unsafe fn launch_race_detected(
        &self,
        mut desc: ffi::RkLaunchDesc,
        race_entry: ffi::RkEntry,
        args: &[*mut c_void],
        strict: bool,
    ) -> Result<()> {
        let summaries = self.shared.options.race_summaries;
        // Checked on every worker of the device, each with its share of the blocks; checked
        // again on one where that cannot decide (detector::rerun).
        let workers = self.shared.threads.max(1);
        let new_pool = |threads: usize| {
            self.shared
                .new_pool(threads)
                .map_err(|reason| Shared::pool_error(&reason))
        };
        let pool = new_pool(workers)?;
        desc.entry = race_entry;
        let form = if self.shared.options.exec == CpuExec::Fibers {
            ffi::RK_ENTRY_THREADS
        } else {
            self.race_region_form
        };
        desc.exec_fibers = u32::from(form == ffi::RK_ENTRY_THREADS);
        // Region forms run whole blocks, all waves in step (as CpuExec::Blocks): the detector
        // orders accesses by barriers and collectives, not by the order lanes ran in, and a
        // block's barriers then cost no switches between waves.
        desc.region_waves = 0;
        desc.whole_blocks = u32::from(form != ffi::RK_ENTRY_THREADS);
        desc.exec_blocks = u32::from(form != ffi::RK_ENTRY_THREADS);
        let allocations = self
            .shared
            .allocations
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        // The race variant has its own copies of the library's variables: they take the plain
        // ones' values before, give them back after, and are checked like device memory.
        let mut checked = allocations.clone();
        for &(plain, race, bytes, _) in &self.globals {
            std::ptr::copy_nonoverlapping(plain as *const u8, race as *mut u8, bytes);
            checked.insert(race, bytes as u64);
        }
        let _armed = detector::ARMED.lock().unwrap_or_else(|e| e.into_inner());
        // Checked buffers are alone on their pages: the detector checks their bounds too (the
        // slack after one's end does not fault).
        let no_bounds = BTreeMap::new();
        let bounded = if desc.checked != 0 {
            &allocations
        } else {
            &no_bounds
        };
        let arm = |pool: &Pool, workers: usize| {
            if detector::arm(
                &checked,
                bounded,
                desc.wave_size,
                strict,
                summaries,
                pool,
                workers,
            ) {
                Ok(())
            } else {
                Err(self.invalid("the race detector is in use by another launch".into()))
            }
        };
        arm(&pool, workers)?;
        let mut run = self.run(pool.0, &desc);
        // A launch that ran out of time is not run again (it would only take as long again).
        let timed_out = matches!(run, Err(RuntimeError::Timeout { .. }));
        let again = workers > 1 && !timed_out && detector::rerun(run.is_err());
        detector::set_last_workers(workers, again);
        if again {
            drop(pool);
            let one = new_pool(1)?;
            arm(&one, 1)?;
            run = self.run(one.0, &desc);
        }
        let found = detector::disarm();
        for &(plain, race, bytes, _) in &self.globals {
            std::ptr::copy_nonoverlapping(race as *const u8, plain as *mut u8, bytes);
        }
        let run = run.map_err(|mut err| {
            // A partial barrier: say which barrier (the waiting thread's).
            if let RuntimeError::PartialBarrier { site, message } = &mut err {
                let [x, y, z] = site.thread;
                let linear = x + desc.block[0] * (y + desc.block[1] * z);
                if let Some(line) = detector::barrier_line(linear) {
                    message.push_str(&format!(" (the barrier at {line})"));
                }
            }
            err
        });
        run?;
        if let Some(oob) = &found.out_of_bounds {
            let access = if oob.later.write != 0 {
                "write"
            } else {
                "read"
            };
            let mut detail = self
                .shared
                .explain_address(oob.address)
                .unwrap_or_else(|| "outside the buffer".to_string());
            if let Some(line) = detector::source_line(oob.later.pc) {
                detail.push_str(&format!(", at {line}"));
            }
            if oob.count > 1 {
                detail.push_str(&format!(" ({} out-of-bounds accesses in all)", oob.count));
            }
            let _ = self.shared.canaries_changed();
            return Err(RuntimeError::OutOfBounds {
                site: FaultSite {
                    kernel: self.name.clone(),
                    block: oob.later.block,
                    thread: oob.later.thread,
                },
                access,
                address: oob.address,
                detail,
            });
        }
        self.overrun(&desc, None)?;
        let Some(first) = found.reports.first() else {
            return Ok(());
        };
        let pointers: Vec<detector::PointerArg> = self
            .layout
            .iter()
            .zip(args)
            .enumerate()
            .filter(|(_, (p, _))| p.is_pointer)
            .map(|(index, (_, &arg))| detector::PointerArg {
                label: self.param_label(index),
                value: std::ptr::read_unaligned(arg as *const u64),
            })
            .collect();
        let name_global = |address: u64| {
            let variable = self
                .globals
                .iter()
                .find(|(_, race, bytes, _)| address >= *race && address < *race + *bytes as u64);
            match variable {
                Some((_, race, _, name)) => {
                    format!("variable `{name}` at byte offset {}", address - race)
                }
                None => detector::name_global(address, &pointers, &allocations),
            }
        };
        let message = detector::message(&found, desc.wave_size, desc.block, &name_global);
        Err(RuntimeError::DataRace {
            kernel: self.name.clone(),
            message,
            site: FaultSite {
                kernel: self.name.clone(),
                block: first.later.block,
                thread: first.later.thread,
            },
        })
    }

    /// [`CpuOptions::race_check`] without a race variant: run the launch with the threads of each block in order and
    /// again, from the same device memory, in reverse order (see `race`); the results must agree.
    ///
    /// # Safety
    /// As [`FunctionBackend::launch`].
    pub(super) unsafe fn launch_race_checked(
        &self,
        mut desc: ffi::RkLaunchDesc,
        args: &[*mut c_void],
    ) -> Result<()> {
        // Each run gets a pool of one new worker: blocks run one at a time in the same order both
        // times, and static `__shared__` variables (thread-locals of the worker, or slots of its
        // fresh region arena) start zeroed both times, so a read before any write sees the same
        // value.
        let fresh_pool = || {
            self.shared
                .new_pool(1)
                .map_err(|reason| Shared::pool_error(&reason))
        };
        let is_pointer: Vec<bool> = self.layout.iter().map(|p| p.is_pointer).collect();
        let mut regions = {
            let allocations = self
                .shared
                .allocations
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            race::Regions::reachable(args, &is_pointer, &allocations)
        };
        let mut snapshot = regions.capture();
        // Per-thread fibers, whatever CpuOptions::exec says: region form keeps the lanes of a
        // wave in step, so a barrier missing between lanes of one wave (before a loop that has
        // one, say) goes unseen in both orders. Fibers run each thread on to its next real
        // barrier.
        desc.exec_fibers = 1;
        desc.region_waves = 0;
        desc.whole_blocks = 0;
        desc.exec_blocks = 0;
        self.run(fresh_pool()?.0, &desc)?;
        // `snapshot` holds device memory as the launch found it.
        self.overrun(&desc, Some(&mut || regions.restore(&snapshot)))?;
        // Device memory back to where it started; `snapshot` now holds the in-order results.
        regions.swap(&mut snapshot);
        let in_order = snapshot;
        // Kept to name the writers if the runs disagree.
        let original = regions.capture();
        desc.thread_order = ffi::RK_ORDER_REVERSED;
        self.run(fresh_pool()?.0, &desc)
            .map_err(only_in_reverse_order)?;
        self.overrun(&desc, Some(&mut || regions.restore(&original)))
            .map_err(only_in_reverse_order)?;
        let Some(difference) = regions.first_difference(&in_order) else {
            return Ok(());
        };
        // Who wrote the word: both runs again from the same memory, the runtime watching it and
        // noting the thread whose run between two barriers changed it last. Only when the check
        // failed, so a passing check still costs two runs.
        let mut watch = |order: u32| -> Option<race::Writer> {
            regions.restore(&original);
            let mut watched = desc;
            watched.thread_order = order;
            watched.watch_addr = difference.address;
            watched.watch_len = difference.first.len() as u32;
            let result = self.run(fresh_pool().ok()?.0, &watched).ok()?;
            (result.watch_changes > 0).then_some(race::Writer {
                block: result.watch_block,
                thread: result.watch_thread,
                changes: result.watch_changes,
            })
        };
        let in_order_writer = watch(ffi::RK_ORDER_FORWARD);
        let reversed_writer = watch(ffi::RK_ORDER_REVERSED);
        Err(RuntimeError::SharedMemoryRace {
            kernel: self.name.clone(),
            message: difference.message(
                self.param_names.get(difference.param).copied(),
                Some((in_order_writer, reversed_writer)),
            ),
            site: in_order_writer.or(reversed_writer).map(|w| FaultSite {
                kernel: self.name.clone(),
                block: w.block,
                thread: w.thread,
            }),
        })
    }
}

/// A fault of the race check's second run, which the first (in order) did not have: say so,
/// since the order of threads is then what triggers it.
pub(super) fn only_in_reverse_order(err: RuntimeError) -> RuntimeError {
    with_note(
        err,
        " (race check: only when the threads of each block ran in reverse order, so it depends \
         on the order of threads between barriers)",
    )
}

/// `note` appended to a fault's message.
pub(super) fn with_note(mut err: RuntimeError, note: &str) -> RuntimeError {
    match &mut err {
        RuntimeError::KernelFault { message, .. }
        | RuntimeError::PartialBarrier { message, .. } => message.push_str(note),
        RuntimeError::OutOfBounds { detail, .. } | RuntimeError::Overrun { detail, .. } => {
            detail.push_str(note)
        }
        _ => {}
    }
    err
}
