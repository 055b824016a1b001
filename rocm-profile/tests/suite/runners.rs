//! The runners against stand-in profilers (shell scripts that take rocprofv3's and ncu's
//! arguments, run the workload and write the fixtures): passes, splitting a counter set that
//! does not fit, dropping a counter or metric the GPU lacks, a failing workload, a missing or too
//! old tool. No AMD GPU or profiler is needed.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use rocm_profile::rocprof::run::{profile, Rocprofv3};
use rocm_profile::{ncu, ProfileError, Workload};

use crate::fixtures;

fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A rocprofv3 that copies `$FIXTURE_DB` into its output folder after running the workload,
/// refuses more than two counters in a pass, and does not know the counter `BAD`.
fn fake_rocprofv3(dir: &Path) -> PathBuf {
    script(
        dir,
        "rocprofv3",
        r#"if [ "$1" = "--help" ]; then echo "usage: rocprofv3 [--kernel-trace] [--pmc ...] [--mangled-kernels] [-d DIR] [-o NAME] [--output-format {csv,json,pftrace,otf2,rocpd}] -- app"; exit 0; fi
out=""; pmc=""
while [ $# -gt 0 ]; do
  case "$1" in
    -d) out="$2"; shift 2;;
    --pmc) shift; while [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; do pmc="$pmc $1"; shift; done;;
    --) shift; break;;
    *) shift;;
  esac
done
case " $pmc " in *" BAD "*) echo "rocprofiler-sdk: counter 'BAD' is not supported on gfx90a" >&2; exit 1;; esac
if [ "$(echo $pmc | wc -w)" -gt 2 ]; then echo "Request exceeds the capabilities of the hardware to collect" >&2; exit 1; fi
"$@" || exit $?
mkdir -p "$out/host/4242"
cp "$FIXTURE_DB" "$out/host/4242/pass_results.db"
"#,
    )
}

fn workload(program: &str, args: &[&str], db: &Path) -> Workload {
    Workload {
        program: program.into(),
        args: args.iter().map(Into::into).collect(),
        env: vec![("FIXTURE_DB".into(), db.into())],
        dir: None,
    }
}

#[testkit::test]
fn rocprofv3_passes_split_sets_that_do_not_fit_and_drop_unknown_counters() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("fixture.db");
    fixtures::rocpd_late(&db);
    let tool = Rocprofv3::find(fake_rocprofv3(dir.path()).to_str().unwrap()).unwrap();
    assert!(tool.rocpd && tool.mangled);
    let sets = vec![
        vec!["SQ_WAVES".into(), "SQ_INSTS_VALU".into(), "TCC_HIT".into()],
        vec!["BAD".into()],
    ];
    let out = dir.path().join("raw");
    let c = profile(&tool, &workload("true", &[], &db), &sets, &out).unwrap();
    assert_eq!(c.dispatches.len(), 30);
    assert_eq!(c.dispatches[0].counters["SQ_WAVES"], 4096.0);
    let notes = c.notes.join("\n");
    assert!(
        notes.contains("counters SQ_WAVES SQ_INSTS_VALU TCC_HIT did not fit one rocprofv3 pass"),
        "{notes}"
    );
    assert!(
        notes.contains("counter BAD could not be collected")
            && notes.contains("not supported on gfx90a"),
        "{notes}"
    );
    // The trace pass, the failed three-counter pass, its two halves and the BAD pass.
    for pass in [
        "trace.log",
        "counters-1.log",
        "counters-2.log",
        "counters-3.log",
        "counters-4.log",
    ] {
        assert!(out.join(pass).exists(), "{pass}");
    }
}

#[testkit::test]
fn a_failing_workload_and_a_missing_or_old_rocprofv3_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("fixture.db");
    fixtures::rocpd_early(&db, "3");
    let tool = Rocprofv3::find(fake_rocprofv3(dir.path()).to_str().unwrap()).unwrap();
    let err = profile(
        &tool,
        &workload("sh", &["-c", "echo boom >&2; exit 3"], &db),
        &[],
        &dir.path().join("raw"),
    )
    .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, ProfileError::Failed { .. }), "{text}");
    assert!(
        text.contains("exit status 3") && text.contains("boom"),
        "{text}"
    );

    let err = Rocprofv3::find("/nonexistent/rocprofv3").unwrap_err();
    assert!(err.to_string().contains("install ROCprofiler-SDK"), "{err}");
    let old = script(
        dir.path(),
        "old-rocprof",
        "echo 'usage: rocprof [--hip-trace] [-i file]'\n",
    );
    let err = Rocprofv3::find(old.to_str().unwrap()).unwrap_err();
    assert!(matches!(err, ProfileError::ToolTooOld { .. }), "{err}");
    assert!(err.to_string().contains("no --kernel-trace"), "{err}");

    // A profiler that runs the workload but writes nothing.
    let silent = script(
        dir.path(),
        "silent",
        "if [ \"$1\" = --help ]; then echo --kernel-trace; fi\nexit 0\n",
    );
    let tool = Rocprofv3::find(silent.to_str().unwrap()).unwrap();
    let err = profile(
        &tool,
        &workload("true", &[], &db),
        &[],
        &dir.path().join("raw2"),
    )
    .unwrap_err();
    assert!(matches!(err, ProfileError::NoOutput { .. }), "{err}");
}

/// An ncu that writes the fixture CSV to `--log-file` after running the workload, and refuses
/// a metric called `bogus__metric`.
fn fake_ncu(dir: &Path) -> PathBuf {
    script(
        dir,
        "ncu",
        r#"log=""; metrics=""
while [ $# -gt 0 ]; do
  case "$1" in
    --csv) shift;;
    --log-file) log="$2"; shift 2;;
    --metrics) metrics="$2"; shift 2;;
    --print-units|--print-kernel-base|--launch-count) shift 2;;
    --*) shift;;
    *) break;;
  esac
done
case "$metrics" in *bogus__metric*) echo "==ERROR== Failed to find metric bogus__metric" > "$log"; exit 1;; esac
"$@" || exit $?
cp "$FIXTURE_CSV" "$log"
"#,
    )
}

#[testkit::test]
fn ncu_runs_and_drops_metrics_it_does_not_know() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("fixture.csv");
    std::fs::write(&csv, fixtures::ncu_csv()).unwrap();
    let tool = ncu::Ncu::find(fake_ncu(dir.path()).to_str().unwrap()).unwrap();
    let w = Workload {
        program: "true".into(),
        env: vec![("FIXTURE_CSV".into(), csv.clone().into())],
        ..Workload::default()
    };
    let c = ncu::profile(
        &tool,
        &w,
        &["bogus__metric".into()],
        Some(10),
        &[],
        &dir.path().join("raw"),
    )
    .unwrap();
    assert_eq!(c.dispatches.len(), 30);
    let notes = c.notes.join("\n");
    assert!(notes.contains("bogus__metric are not available"), "{notes}");
    assert!(notes.contains("first 10 launches"), "{notes}");
    let err = ncu::Ncu::find("/nonexistent/ncu").unwrap_err();
    assert!(err.to_string().contains("Nsight Compute"), "{err}");
}
