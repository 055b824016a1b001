//! The race detector's Rust side ([`CpuOptions::race_check`](crate::runtime::CpuOptions) with a
//! kernel built with its race variant): arming `cpu-runtime/race.cpp` around one launch of the
//! instrumented entry, and turning what it found into a report that names the memory (parameter
//! and offset, or shared memory), both threads, and both places in the source — the way
//! compute-sanitizer's racecheck reports a hazard.

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use super::device::Pool;
use super::ffi;

/// One armed launch at a time in the process: the detector's states are global (its hooks are
/// called from instrumented code, with no context to pass; each worker finds its own).
pub(super) static ARMED: Mutex<()> = Mutex::new(());

/// Reports taken from one launch.
pub(super) const MAX_REPORTS: usize = 16;

/// Races found by one launch: the distinct pairs of places (at most [`MAX_REPORTS`]) and how many
/// racing pairs of accesses there were in all.
pub(super) struct Found {
    pub reports: Vec<ffi::RkRaceReport>,
    pub total: u64,
    /// The first access to a bounded buffer's pages outside the buffer (`rk_race_out_of_bounds`:
    /// `address` its first byte outside, `offset` its size, `later` the access).
    pub out_of_bounds: Option<ffi::RkRaceReport>,
}

/// Arm the detector over the device's `allocations` (start → bytes) for a launch at `wave_size`,
/// `strict` reporting plain reads that race atomic writes too ([`CpuOptions::race_strict`]).
/// `bounded` are the checked buffers, each alone on its pages: an access to those pages outside
/// the buffer is out of bounds ([`Found::out_of_bounds`]). `summaries`: take the race variant's
/// summaries of lane loops ([`CpuOptions::race_summaries`]). The launch runs on `pool`, checked
/// by `workers` of its workers, each with a contiguous share of the blocks (race.cpp, "Parallel
/// checking"; see [`rerun`]). Returns false when another launch holds it (cannot happen while
/// [`ARMED`] is held).
///
/// [`CpuOptions::race_strict`]: crate::runtime::CpuOptions::race_strict
/// [`CpuOptions::race_summaries`]: crate::runtime::CpuOptions::race_summaries
pub(super) fn arm(
    allocations: &BTreeMap<u64, u64>,
    bounded: &BTreeMap<u64, u64>,
    wave_size: u32,
    strict: bool,
    summaries: bool,
    pool: &Pool,
    workers: usize,
) -> bool {
    // Safety: sets which pool's workers check the next launch armed; the detector is not armed.
    unsafe { ffi::rk_race_set_workers(pool.0, workers.max(1) as u32) };
    // Safety: sets a flag of the detector, which is not armed (ARMED is held by the caller).
    unsafe { ffi::rk_race_set_strict(u32::from(strict)) };
    // Safety: likewise.
    unsafe { ffi::rk_race_set_summaries(u32::from(summaries)) };
    let ranges = |map: &BTreeMap<u64, u64>| -> Vec<ffi::RkRaceRange> {
        map.iter()
            .map(|(&start, &len)| ffi::RkRaceRange { start, len })
            .collect()
    };
    let all = ranges(allocations);
    // Safety: a valid array of `all.len()` ranges.
    if unsafe { ffi::rk_race_begin(all.as_ptr(), all.len() as u32, wave_size) } != 0 {
        return false;
    }
    let bounded = ranges(bounded);
    // Safety: likewise; the detector copies them.
    unsafe { ffi::rk_race_bound(bounded.as_ptr(), bounded.len() as u32) };
    true
}

thread_local! {
    /// What the summaries did in the last race-detected launch this thread made (see
    /// [`race_summary_stats`](crate::runtime::race_summary_stats)).
    static LAST_SUMMARIES: std::cell::Cell<(u64, bool)> = const { std::cell::Cell::new((0, false)) };
    /// How the last race-detected launch this thread made was checked: on how many workers
    /// first, and whether it was then checked again on one.
    static LAST_WORKERS: std::cell::Cell<(usize, bool)> = const { std::cell::Cell::new((1, false)) };
}

/// See [`race_parallel_stats`](crate::runtime::race_parallel_stats).
pub fn last_workers() -> (usize, bool) {
    LAST_WORKERS.with(|c| c.get())
}

pub(super) fn set_last_workers(workers: usize, again: bool) {
    LAST_WORKERS.with(|c| c.set((workers, again)));
}

/// How many summaries the last race-detected launch of this thread took, and whether they were
/// replayed as hooked accesses.
pub fn last_summaries() -> (u64, bool) {
    LAST_SUMMARIES.with(|c| c.get())
}

/// After a launch checked on several workers (`failed`: it returned an error): true when it must
/// be checked again on one worker (something was found, or the workers' blocks met on device
/// memory, or it failed). Device memory is then as it was before the launch and the detector
/// disarmed without reports; false: nothing was found and nothing could be missed ([`disarm`]).
pub(super) fn rerun(failed: bool) -> bool {
    // Safety: the detector was armed for the launch that just ran (ARMED held by the caller).
    unsafe { ffi::rk_race_rerun(u32::from(failed)) != 0 }
}

/// Disarm the detector and take its reports.
pub(super) fn disarm() -> Found {
    let mut replayed = 0u32;
    // Safety: one u32 to write; reads counters of the launch armed last.
    let taken = unsafe { ffi::rk_race_summary_stats(&mut replayed) };
    LAST_SUMMARIES.with(|c| c.set((taken, replayed != 0)));
    let mut reports = vec![ffi::RkRaceReport::default(); MAX_REPORTS];
    let mut total = 0u64;
    let mut oob = ffi::RkRaceReport::default();
    // Safety: room for one report; before rk_race_end, which forgets the launch's blocks.
    let out_of_bounds = (unsafe { ffi::rk_race_out_of_bounds(&mut oob) } != 0).then_some(oob);
    // Safety: room for MAX_REPORTS reports.
    let n = unsafe { ffi::rk_race_end(reports.as_mut_ptr(), MAX_REPORTS as u32, &mut total) };
    reports.truncate(n as usize);
    Found {
        reports,
        total,
        out_of_bounds,
    }
}

/// The source line of the barrier thread `thread` (linear, of the last block run) last called,
/// for a partial-barrier fault of a race-detected launch.
pub(super) fn barrier_line(thread: u32) -> Option<String> {
    // Safety: reads a table of the detector.
    source_line(unsafe { ffi::rk_race_barrier_pc(thread) })
}

/// How a pointer argument of the launch is named in reports.
pub(super) struct PointerArg {
    /// "`x` (parameter #0, const float*)".
    pub label: String,
    pub value: u64,
}

/// The device memory at `address`: the parameter pointing closest below it into the same
/// allocation, and the byte offset from there.
pub(super) fn name_global(
    address: u64,
    pointers: &[PointerArg],
    allocations: &BTreeMap<u64, u64>,
) -> String {
    let allocation = allocations
        .range(..=address)
        .next_back()
        .filter(|(&start, &len)| address < start + len);
    let Some((&start, &len)) = allocation else {
        return format!("device memory at {address:#x}");
    };
    let inside = |p: &&PointerArg| p.value >= start && p.value < start + len.max(1);
    let best = pointers
        .iter()
        .filter(inside)
        .filter(|p| p.value <= address)
        .max_by_key(|p| p.value)
        .or_else(|| pointers.iter().filter(inside).min_by_key(|p| p.value));
    match best {
        Some(p) => {
            let who = &p.label;
            let offset = address as i64 - p.value as i64;
            if offset >= 0 {
                format!("{who} at byte offset {offset}")
            } else {
                format!("{who}, {} byte(s) before where it points", -offset)
            }
        }
        None => format!(
            "a device buffer at byte offset {} (not passed as a parameter)",
            address - start
        ),
    }
}

/// `kernels/k.hip:17`: the source line of a return address into instrumented kernel code, the
/// innermost frame outside the kernel-language headers; `None` without line tables.
pub(super) fn source_line(pc: u64) -> Option<String> {
    if pc == 0 {
        return None;
    }
    let header_dir = rocm_kernels_core::headers::cpu_dir()
        .unwrap_or_else(|_| rocm_kernels_core::headers::cpu_source_dir());
    let cwd = std::env::current_dir().ok();
    let mut inner: Option<String> = None;
    let mut outside: Option<String> = None;
    // The call instruction is the byte before the return address.
    backtrace::resolve((pc - 1) as *mut c_void, |sym| {
        let (Some(file), Some(line)) = (sym.filename(), sym.lineno()) else {
            return;
        };
        let shown = match cwd.as_deref().and_then(|c| file.strip_prefix(c).ok()) {
            Some(rel) => rel.display().to_string(),
            None => file.display().to_string(),
        };
        let text = format!("{shown}:{line}");
        if inner.is_none() {
            inner = Some(text.clone());
        }
        if outside.is_none() && !in_dir(file, &header_dir) {
            outside = Some(text);
        }
    });
    outside.or(inner)
}

fn in_dir(file: &Path, dir: &Path) -> bool {
    file.starts_with(dir) || file.to_string_lossy().contains("/include/cpu/hip/")
}

/// The static `__shared__` variable at byte `offset` of the worker's TLS block (where the race
/// variant keeps them, as `thread_local`s of the binary), and the offset into it: "`s` of
/// `bug_reverse`", from the binary's symbol table (TLS symbols' values are offsets into that
/// block). `None` without a symbol table, or where none covers the offset.
fn static_shared(offset: u64) -> Option<(String, u64)> {
    static SYMBOLS: OnceLock<Vec<(u64, u64, String)>> = OnceLock::new();
    let symbols = SYMBOLS.get_or_init(tls_symbols);
    let (start, _, name) = symbols
        .iter()
        .find(|(start, size, _)| offset >= *start && offset - start < *size)?;
    Some((name.clone(), offset - start))
}

/// The thread-locals the executable defines: (offset in its TLS block, bytes, name in reports).
fn tls_symbols() -> Vec<(u64, u64, String)> {
    use object::{Object, ObjectSymbol, SymbolKind};
    let Ok(file) = std::fs::File::open("/proc/self/exe") else {
        return Vec::new();
    };
    let cache = object::ReadCache::new(file);
    let Ok(binary) = object::File::parse(&cache) else {
        return Vec::new();
    };
    binary
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Tls && s.size() > 0)
        .filter_map(|s| Some((s.address(), s.size(), variable_name(s.name().ok()?))))
        .collect()
}

/// How a report names the variable of a TLS symbol: "`s` of `bug_reverse`" for a function's
/// static local (`_ZZ11bug_reversePfE1s`, a `__shared__` array declared in a kernel), "`ns::buf`"
/// for a namespace-scope one, the symbol itself where it is neither.
fn variable_name(symbol: &str) -> String {
    let symbol = symbol.strip_prefix("rkrace_").unwrap_or(symbol);
    if let Some(local) = symbol.strip_prefix("_ZZ") {
        // <function's encoding> E <the variable's source name> [_<n> | __<n>_, a discriminator]
        let without_discriminator = local
            .strip_suffix('_')
            .and_then(|s| s.rfind("__").map(|at| &s[..at]))
            .or_else(|| {
                let (head, digit) = local.split_at(local.len().checked_sub(2)?);
                (digit.starts_with('_') && digit[1..].bytes().all(|b| b.is_ascii_digit()))
                    .then_some(head)
            });
        let variable = trailing_source_name(local)
            .or_else(|| without_discriminator.and_then(trailing_source_name));
        if let Some(variable) = variable {
            // A kernel's region form declares it in a lambda of `rk_block_<kernel>` (`_ZZZ...`).
            let function =
                leading_name(local.trim_start_matches('Z')).map(|f| match f.rsplit_once("::") {
                    Some((ns, last)) => {
                        format!("{ns}::{}", last.strip_prefix("rk_block_").unwrap_or(last))
                    }
                    None => f.strip_prefix("rk_block_").map(str::to_string).unwrap_or(f),
                });
            return match function {
                Some(function) => format!("`{variable}` of `{function}`"),
                None => format!("`{variable}`"),
            };
        }
    }
    if let Some(nested) = symbol.strip_prefix("_ZN") {
        if let Some(name) = leading_name(&format!("N{nested}")) {
            return format!("`{name}`");
        }
    }
    if let Some(plain) = symbol.strip_prefix("_Z") {
        if let Some(name) = leading_name(plain) {
            return format!("`{name}`");
        }
    }
    format!("`{symbol}`")
}

/// `<length><identifier>` at the end of `text`, right after an `E`.
fn trailing_source_name(text: &str) -> Option<&str> {
    let bytes = text.as_bytes();
    for len in 1..bytes.len() {
        let ident = &bytes[bytes.len() - len..];
        if !(ident[0].is_ascii_alphanumeric() || ident[0] == b'_') {
            return None;
        }
        let before = &text[..bytes.len() - len];
        let digits = before.len() - before.bytes().rev().take_while(u8::is_ascii_digit).count();
        if digits < before.len()
            && before[digits..].parse::<usize>() == Ok(len)
            && before[..digits].ends_with('E')
        {
            return Some(&text[text.len() - len..]);
        }
    }
    None
}

/// The name an Itanium encoding starts with: `bug_reverse` of `11bug_reversePfE...`,
/// `ns::kernel` of `N2ns6kernelEPf...`; `None` for other shapes.
fn leading_name(text: &str) -> Option<String> {
    let (mut rest, nested) = match text.strip_prefix('N') {
        Some(r) => (r.trim_start_matches(['K', 'V', 'r']), true),
        None => (text, false),
    };
    let mut parts = Vec::new();
    loop {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            break;
        }
        let len: usize = rest[..digits].parse().ok()?;
        let name = rest.get(digits..digits + len)?;
        parts.push(name);
        rest = &rest[digits + len..];
        if !nested {
            break;
        }
    }
    (!parts.is_empty()).then(|| parts.join("::"))
}

/// `thread (3,0,0) wrote it at kernels/k.hip:17` (with the block when `with_block`).
fn access_text(a: &ffi::RkRaceAccess, with_block: bool) -> String {
    let what = match (a.write != 0, a.atomic != 0) {
        (true, false) => "wrote it",
        (false, false) => "read it",
        (true, true) => "updated it atomically",
        (false, true) => "read it atomically",
    };
    let [tx, ty, tz] = a.thread;
    let [bx, by, bz] = a.block;
    let mut text = format!("thread ({tx},{ty},{tz})");
    if with_block {
        let _ = write!(text, " of block ({bx},{by},{bz})");
    }
    let _ = write!(text, " {what}");
    match source_line(a.pc) {
        Some(line) => {
            let _ = write!(text, " at {line}");
        }
        None => {
            let _ = write!(text, " at code address {:#x}", a.pc);
        }
    }
    text
}

/// One race in words. `memory` names where it happened.
fn describe(r: &ffi::RkRaceReport, memory: &str, wave_size: u32, block_dim: [u32; 3]) -> String {
    let same_block = r.earlier.block == r.later.block;
    let earlier = access_text(&r.earlier, !same_block);
    let later = access_text(&r.later, !same_block);
    if same_block {
        let linear = |t: [u32; 3]| t[0] + block_dim[0] * (t[1] + block_dim[1] * t[2]);
        let (a, b) = (linear(r.earlier.thread), linear(r.later.thread));
        let [bx, by, bz] = r.later.block;
        let wave_note = if a / wave_size.max(1) == b / wave_size.max(1) {
            format!(" (lanes of one wave of {wave_size}, which need one too)")
        } else {
            String::new()
        };
        format!(
            "{memory}: {earlier}, then {later}, in block ({bx},{by},{bz}) with no \
             __syncthreads() between them{wave_note}"
        )
    } else {
        format!(
            "{memory}: {earlier}, then {later}; the blocks of a launch run in any order and at \
             the same time, so use atomics, or combine the blocks' results in a second kernel"
        )
    }
}

/// The report of a launch's races: the first ones in full, and how many there were.
pub(super) fn message(
    found: &Found,
    wave_size: u32,
    block_dim: [u32; 3],
    name_global: &dyn Fn(u64) -> String,
) -> String {
    let mut text = String::new();
    for (i, r) in found.reports.iter().take(3).enumerate() {
        let memory = match r.space {
            ffi::RK_RACE_GLOBAL => name_global(r.address),
            ffi::RK_RACE_SHARED => format!(
                "dynamic shared memory (extern __shared__) at byte offset {}",
                r.offset
            ),
            // A thread-local of the worker: the binary's symbol table names it.
            ffi::RK_RACE_STATIC_SHARED => match static_shared(r.offset) {
                Some((name, offset)) => {
                    format!("static __shared__ variable {name} at byte offset {offset}")
                }
                None => "a static __shared__ variable".to_owned(),
            },
            other => format!("memory at {:#x} (space {other})", r.address),
        };
        if i > 0 {
            text.push_str("; also on ");
        }
        text.push_str(&describe(r, &memory, wave_size, block_dim));
    }
    let places = found.reports.len();
    let _ = write!(
        text,
        " ({} racing pair(s) of accesses, from {}{places} pair(s) of places in the code)",
        found.total,
        if places >= MAX_REPORTS {
            "at least "
        } else {
            ""
        }
    );
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_memory_is_named_after_the_nearest_parameter_below() {
        let mut allocations = BTreeMap::new();
        allocations.insert(0x1000, 256);
        allocations.insert(0x9000, 16);
        let pointers = [
            PointerArg {
                label: "`in` (parameter #0, const float*)".into(),
                value: 0x1000,
            },
            PointerArg {
                label: "`out` (parameter #2)".into(),
                value: 0x1080,
            },
        ];
        assert_eq!(
            name_global(0x1084, &pointers, &allocations),
            "`out` (parameter #2) at byte offset 4"
        );
        assert_eq!(
            name_global(0x1010, &pointers, &allocations),
            "`in` (parameter #0, const float*) at byte offset 16"
        );
        assert_eq!(
            name_global(0x9004, &pointers, &allocations),
            "a device buffer at byte offset 4 (not passed as a parameter)"
        );
        assert_eq!(
            name_global(0x5000, &pointers, &allocations),
            "device memory at 0x5000"
        );
    }

    #[test]
    fn static_shared_variables_are_named_from_their_symbols() {
        assert_eq!(
            variable_name("_ZZ11bug_reversePKfPfiE1s"),
            "`s` of `bug_reverse`"
        );
        assert_eq!(
            variable_name("_ZZ20bug_shared_histogramPKjPjiE5local"),
            "`local` of `bug_shared_histogram`"
        );
        assert_eq!(
            variable_name("rkrace__ZZN2ns6kernelEPfE4tile_0"),
            "`tile` of `ns::kernel`"
        );
        assert_eq!(variable_name("_ZZ1kPfE3t_2"), "`t_2` of `k`");
        // In a kernel's region form (a lambda of its block function).
        assert_eq!(
            variable_name(
                "rkrace__ZZZ24rk_block_bench_transposePKfPfiiENKUlT_E_clISt17integral_constantIbLb1EEEEDaS4_E4tile"
            ),
            "`tile` of `bench_transpose`"
        );
        assert_eq!(
            variable_name(
                "_ZZZN2ns15rk_block_kernelEPfENKUlT_E_clISt17integral_constantIbLb1EEEEDaS2_E4tile"
            ),
            "`tile` of `ns::kernel`"
        );
        assert_eq!(variable_name("_ZN2ns3bufE"), "`ns::buf`");
        assert_eq!(variable_name("rkrace_buf"), "`buf`");
    }

    #[test]
    fn a_race_in_one_block_names_both_threads_and_the_wave() {
        let access = |t: u32, write: u32| ffi::RkRaceAccess {
            block: [2, 0, 0],
            thread: [t, 0, 0],
            pc: 0,
            write,
            atomic: 0,
        };
        let r = ffi::RkRaceReport {
            address: 0x10,
            space: ffi::RK_RACE_SHARED,
            count: 1,
            offset: 12,
            earlier: access(3, 1),
            later: access(4, 0),
        };
        let found = Found {
            reports: vec![r],
            total: 5,
            out_of_bounds: None,
        };
        let text = message(&found, 32, [64, 1, 1], &|_| unreachable!());
        assert!(
            text.starts_with(
                "dynamic shared memory (extern __shared__) at byte offset 12: thread (3,0,0) \
                 wrote it at code address 0x0, then thread (4,0,0) read it at code address 0x0, \
                 in block (2,0,0) with no __syncthreads() between them (lanes of one wave of 32, which \
                 need one too)"
            ),
            "{text}"
        );
        assert!(
            text.ends_with("(5 racing pair(s) of accesses, from 1 pair(s) of places in the code)"),
            "{text}"
        );
    }
}
