//! The entry point of a harness test binary: options, registration, targets, libtest.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use libtest_mimic::Arguments;
use rocm_kernels::KernelLibrary;

use crate::events::exit::HarnessExitCode;
use crate::events::EventSink;
use crate::options::HarnessOptions;
use crate::target::TargetSlot;
use crate::{Error, Suite};

/// Run the harness: the `main` of a `harness = false` test target.
///
/// Registers the checks with `register`, finds the backends that can run here, makes one trial
/// per check × target (and one per kernel without a check), and runs them like `cargo test`
/// would: every libtest flag works (filters, `--exact`, `--list`, `--ignored`,
/// `--include-ignored`, `--test-threads`, `--format`), plus the harness's own flags and
/// environment variables (see [`HarnessOptions`]).
///
/// ```no_run
/// // tests/kernels.rs, with `[[test]] name = "kernels" harness = false` in Cargo.toml
/// # static KERNELS: rocm_kernels::KernelLibrary = rocm_kernels::KernelLibrary {
/// #     name: "kernels", code_objects: &[], kernels: &[], globals: &[] };
/// fn main() -> std::process::ExitCode {
///     rocm_test::main(&KERNELS, |s| {
///         s.check("saxpy"); // …arguments, launch, reference
///     })
/// }
/// ```
pub fn main(library: &'static KernelLibrary, register: impl FnOnce(&mut Suite)) -> ExitCode {
    // A compile worker `cargo rocm tune` started (see `tune/compile.rs`).
    #[cfg(feature = "tune")]
    if let Some(code) = crate::tune::compile_worker() {
        return code;
    }
    let argv: Vec<String> = std::env::args().collect();
    crate::isolate::set_args(argv.iter().skip(1).cloned().collect());
    let (opts, rest) = match HarnessOptions::parse(argv, |k| std::env::var(k).ok()) {
        Ok(parsed) => parsed,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(HarnessExitCode::USAGE);
        }
    };
    let args = Arguments::from_iter(rest);
    let mut suite = Suite::new(library);
    register(&mut suite);
    // `cargo rocm tune` (or a script) asks for tuning instead of tests.
    if let Some(request) = std::env::var_os(crate::events::tune::REQUEST_ENV) {
        let request: crate::events::tune::TuneRequest =
            match serde_json::from_str(&request.to_string_lossy()) {
                Ok(r) => r,
                Err(e) => {
                    eprintln!(
                        "error: {} is not a valid tune request: {e}",
                        crate::events::tune::REQUEST_ENV
                    );
                    return ExitCode::from(HarnessExitCode::USAGE);
                }
            };
        return crate::tune::run_tune_mode(suite, request);
    }
    let slots = crate::runtime::discover(library, &opts);
    // A child process the harness started to run one trial in isolation.
    if let Some((trial, report)) = crate::isolate::child() {
        let slots: Vec<TargetSlot> = slots
            .into_iter()
            .filter(|s| opts.selects(s.id.backend))
            .collect();
        let outcome = suite.run_in_this_process(&slots, &opts, &trial);
        return match crate::isolate::write_report(&report, &outcome) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                let e = Error::io("cannot write the trial report", report, e);
                eprintln!("error: {e}");
                ExitCode::from(HarnessExitCode::USAGE)
            }
        };
    }
    run_suite(suite, &slots, &opts, &args)
}

/// Everything after discovery: trials, events, libtest.
pub(crate) fn run_suite(
    suite: Suite,
    slots: &[TargetSlot],
    opts: &HarnessOptions,
    args: &Arguments,
) -> ExitCode {
    let sink = match &opts.events {
        Some(path) => match EventSink::open(path) {
            Ok(s) => Some(Arc::new(s)),
            Err(e) => {
                let e = Error::io("cannot open the events file", path, e);
                eprintln!("error: {e}");
                return ExitCode::from(HarnessExitCode::USAGE);
            }
        },
        None => None,
    };
    let slots: Vec<TargetSlot> = slots
        .iter()
        .filter(|s| opts.selects(s.id.backend))
        .cloned()
        .collect();
    let binary = binary_name();
    let durations = match crate::select::recorded_durations(opts.partition.as_ref(), &binary) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(HarnessExitCode::USAGE);
        }
    };
    let bodies = suite.trial_bodies(
        &slots,
        opts,
        sink,
        &binary,
        crate::nextest::running_under_nextest(),
    );
    let selected = crate::select::select(
        bodies,
        opts.partition.as_ref(),
        &durations,
        args,
        !args.list,
    );
    let conclusion = libtest_mimic::run(args, selected.trials);
    if !matches!(args.format, Some(libtest_mimic::FormatSetting::Json)) && !args.quiet {
        print!("{}", crate::select::ignored_footer(&selected.ignored));
    }
    conclusion.exit_code()
}

/// The test target's name: the executable's stem without cargo's `-<hash>` suffix.
pub(crate) fn binary_name() -> String {
    let exe = std::env::args().next().unwrap_or_default();
    strip_hash(
        Path::new(&exe)
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("harness"),
    )
    .to_owned()
}

fn strip_hash(stem: &str) -> &str {
    match stem.rsplit_once('-') {
        Some((base, hash)) if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => {
            base
        }
        _ => stem,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn cargo_hash_suffix_is_dropped() {
        assert_eq!(super::strip_hash("kernels-0123456789abcdef"), "kernels");
        assert_eq!(super::strip_hash("my-tests"), "my-tests");
    }
}
