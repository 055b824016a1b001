//! What a harness's tuning produces, built with or without the `tune` feature: the report file,
//! the wisdom entries (`cargo rocm tune merge` makes them too), and a harness without the
//! feature refusing to tune.

use std::path::Path;
use std::process::ExitCode;

use rocm_kernels::Backend;
use rocm_kernels_core::wisdom::{ParamValue, WisdomEntry};
#[cfg(not(feature = "tune"))]
use rocm_protocol::tune::{TuneFailure, TuneRequest};
use rocm_protocol::tune::{TuneReport, TuneRun};

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

/// The wisdom entry for one device and problem: the best of its strategy runs (`cargo rocm
/// tune merge` makes one from merged caches too).
pub fn wisdom_entry(runs: &[TuneRun]) -> Option<WisdomEntry> {
    let best = runs
        .iter()
        .filter_map(|r| Some((r, r.best.as_ref()?.time_ms?)))
        .min_by(|a, b| a.1.total_cmp(&b.1))?;
    let (run, time_ms) = best;
    let backend: Backend = run.device.backend.parse().ok()?;
    let config = run
        .best
        .as_ref()?
        .config
        .iter()
        .filter_map(|(n, v)| {
            let v = match v {
                serde_json::Value::Bool(b) => ParamValue::Bool(*b),
                serde_json::Value::Number(x) => match x.as_i64() {
                    Some(i) => ParamValue::Int(i),
                    None => ParamValue::Float(x.as_f64()?),
                },
                serde_json::Value::String(s) => ParamValue::Str(s.clone()),
                _ => return None,
            };
            Some((n.clone(), v))
        })
        .collect();
    Some(WisdomEntry {
        backend,
        arch: run.device.arch.clone(),
        device: run.device.name.clone(),
        wave_size: run.device.wave_size,
        problem: run.problem.clone(),
        config,
        time_ms,
        default_time_ms: run.default.as_ref().and_then(|d| d.time_ms),
        strategy: run.strategy.clone(),
        evaluations: runs.iter().map(|r| r.evaluations).sum(),
        space: run.space,
        tool: format!("cargo-rocm {}", env!("CARGO_PKG_VERSION")),
        unix_time: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    })
}
