//! What a harness's tuning produces, built with or without the `tune` feature: the report file
//! (its wisdom entries are `rocm_protocol::tune::wisdom_entry`, which `cargo rocm tune merge`
//! uses too), and a harness without the feature refusing to tune.

use std::path::Path;
use std::process::ExitCode;

use rocm_protocol::tune::TuneReport;
#[cfg(not(feature = "tune"))]
use rocm_protocol::tune::{TuneFailure, TuneRequest};

/// A harness built without the `tune` feature, asked to tune: says how to tune (in the report
/// too when the request names its folder, so that `cargo rocm tune --harness` shows it) and
/// exits with 2, as for a request it cannot read.
#[cfg(not(feature = "tune"))]
pub(crate) fn refuse_tune_mode(_suite: crate::Suite, request: TuneRequest) -> ExitCode {
    let message = "this harness was built without rocm-test's `tune` feature, so it cannot tune: \
                   run `cargo rocm tune` (it builds the harness with `--features rocm-test/tune`), \
                   or build the harness for `cargo rocm tune --harness` with \
                   `cargo test --no-run --features rocm-test/tune`";
    eprintln!("error: {message}");
    if let Some(dir) = request.results.as_deref().or(request.out_dir.as_deref()) {
        let mut report = TuneReport::default();
        report.errors.push(TuneFailure {
            kernel: String::new(),
            message: message.to_owned(),
        });
        let _ = finish(dir, report);
    }
    ExitCode::from(2)
}

/// Write the report and say how it went.
pub(crate) fn finish(out_dir: &Path, report: TuneReport) -> ExitCode {
    let path = out_dir.join("results.json");
    let written = std::fs::create_dir_all(out_dir).and_then(|()| {
        std::fs::write(
            &path,
            serde_json::to_string_pretty(&report).expect("report serializes") + "\n",
        )
    });
    if let Err(e) = written {
        eprintln!("error: cannot write {}: {e}", path.display());
        return ExitCode::from(2);
    }
    for r in &report.runs {
        let best = r
            .best
            .as_ref()
            .and_then(|b| b.time_ms)
            .map(|t| format!("{t:.4} ms"))
            .unwrap_or_else(|| "nothing valid".into());
        eprintln!(
            "tuned {} on {} {:?} with {}: best {best} after {} evaluations ({} failed){}",
            r.kernel,
            r.device.name,
            r.problem,
            r.strategy,
            r.evaluations,
            r.failures.values().sum::<usize>(),
            r.speedup
                .map(|s| format!(", {s:.2}x the default"))
                .unwrap_or_default()
        );
    }
    eprintln!("tuning results: {}", path.display());
    if report.errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
