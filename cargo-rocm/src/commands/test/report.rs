//! What `cargo rocm test` makes of the harnesses' trial events: a summary table of
//! kernels × targets for people, a summary object for machines, and JUnit XML for CI.

use std::collections::BTreeMap;
use std::time::Duration;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
use rocm_protocol::{TrialEvent, TrialOutcome};
use serde::Serialize;

/// Totals over all trials.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
}

impl Counts {
    pub fn of(events: &[TrialEvent]) -> Counts {
        let mut c = Counts::default();
        for e in events {
            match e.outcome {
                TrialOutcome::Passed => c.passed += 1,
                TrialOutcome::Failed => c.failed += 1,
                TrialOutcome::Ignored => c.skipped += 1,
            }
        }
        c
    }
    pub fn total(&self) -> usize {
        self.passed + self.failed + self.skipped
    }
}

/// The column of an event: `cpu/w64`, `amd/gfx90a`, or `library` for trials about the library
/// itself (a kernel without a check).
fn column(e: &TrialEvent) -> String {
    match (&e.backend, e.target.as_deref()) {
        (Some(b), Some(t)) if !t.is_empty() => format!("{b}/{t}"),
        (Some(b), _) => b.clone(),
        (None, _) => "library".to_owned(),
    }
}

/// The summary table, with numbered footnotes for skip reasons (shared reasons share a number)
/// and the names of failed trials.
pub fn summary_table(events: &[TrialEvent]) -> String {
    let counts = Counts::of(events);
    let mut columns: Vec<String> = events.iter().map(column).collect();
    // cpu, then amd, then nvidia (the order `Backend::ALL` lists them), then library trials.
    let rank = |c: &str| match c.split('/').next() {
        Some("cpu") => 0,
        Some("amd") => 1,
        Some("nvidia") => 2,
        Some("library") => 4,
        _ => 3,
    };
    columns.sort_by_key(|c| (rank(c), c.clone()));
    columns.dedup();
    let mut rows: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut reasons: Vec<String> = Vec::new();
    for e in events {
        let cell = match e.outcome {
            TrialOutcome::Passed => "pass".to_owned(),
            TrialOutcome::Failed if e.backend.is_none() => "FAIL (no check)".to_owned(),
            TrialOutcome::Failed => "FAIL".to_owned(),
            TrialOutcome::Ignored => {
                let reason = e.message.clone().unwrap_or_default();
                let n = match reasons.iter().position(|r| *r == reason) {
                    Some(i) => i + 1,
                    None => {
                        reasons.push(reason);
                        reasons.len()
                    }
                };
                format!("skip [{n}]")
            }
        };
        let key = if e.binary.is_empty() {
            e.check.clone()
        } else {
            format!("{}: {}", e.binary, e.check)
        };
        rows.entry(key).or_default().insert(column(e), cell);
    }
    let head = "kernel".to_owned();
    let w0 = rows
        .keys()
        .map(|k| k.chars().count())
        .chain([head.len()])
        .max()
        .unwrap_or(6);
    let widths: Vec<usize> = columns
        .iter()
        .map(|c| {
            rows.values()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .chain([c.chars().count()])
                .max()
                .unwrap_or(4)
        })
        .collect();
    let mut out = String::new();
    let line = |first: &str, cells: Vec<&str>| {
        let mut l = format!("{first:<w0$}");
        for (c, w) in cells.iter().zip(&widths) {
            l.push_str(&format!("  {c:<w$}"));
        }
        l.trim_end().to_owned() + "\n"
    };
    out.push_str(&line(&head, columns.iter().map(String::as_str).collect()));
    for (kernel, cells) in &rows {
        out.push_str(&line(
            kernel,
            columns
                .iter()
                .map(|c| cells.get(c).map_or("-", String::as_str))
                .collect(),
        ));
    }
    for (i, r) in reasons.iter().enumerate() {
        out.push_str(&format!("[{}] {}\n", i + 1, r));
    }
    let failed: Vec<&str> = events
        .iter()
        .filter(|e| e.outcome == TrialOutcome::Failed)
        .map(|e| e.name.as_str())
        .collect();
    if !failed.is_empty() {
        out.push_str(&format!("failed: {}\n", failed.join(", ")));
    }
    out.push_str(&format!(
        "{} trials: {} passed, {} failed, {} skipped\n",
        counts.total(),
        counts.passed,
        counts.failed,
        counts.skipped
    ));
    out
}

/// The closing JSON object of `--message-format json`.
#[derive(Debug, Serialize)]
pub struct SummaryEvent<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    #[serde(flatten)]
    pub counts: Counts,
    pub total: usize,
    pub junit: Option<&'a str>,
}

/// JUnit XML: one test suite per harness binary, one test case per trial.
pub fn junit(events: &[TrialEvent]) -> String {
    let mut report = Report::new("cargo-rocm");
    let mut suites: BTreeMap<String, TestSuite> = BTreeMap::new();
    let mut total = Duration::ZERO;
    for e in events {
        let status = match e.outcome {
            TrialOutcome::Passed => TestCaseStatus::success(),
            TrialOutcome::Failed => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                let msg = e.message.clone().unwrap_or_default();
                s.set_message(msg.lines().next().unwrap_or("").to_owned());
                s.set_description(msg);
                s
            }
            TrialOutcome::Ignored => {
                let mut s = TestCaseStatus::skipped();
                s.set_message(e.message.clone().unwrap_or_default());
                s
            }
        };
        let mut case = TestCase::new(e.name.clone(), status);
        case.set_classname(format!("{}::{}", e.binary, e.check));
        let time = Duration::from_secs_f64(e.duration_s.max(0.0));
        case.set_time(time);
        total += time;
        suites
            .entry(e.binary.clone())
            .or_insert_with(|| TestSuite::new(e.binary.clone()))
            .add_test_case(case);
    }
    report.set_time(total);
    report.add_test_suites(suites.into_values());
    report
        .to_string()
        .unwrap_or_else(|e| format!("<!-- JUnit serialization failed: {e} -->"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(
        name: &str,
        backend: Option<&str>,
        target: &str,
        outcome: TrialOutcome,
        msg: &str,
    ) -> TrialEvent {
        let check = name.split("::").next().unwrap().to_owned();
        TrialEvent {
            kind: "trial".into(),
            name: name.into(),
            check: check.clone(),
            kernel: check,
            backend: backend.map(Into::into),
            target: Some(target.into()),
            outcome,
            message: (!msg.is_empty()).then(|| msg.to_owned()),
            duration_s: 0.5,
            cases: None,
            seed: None,
            bandwidth: None,
            binary: "kernels".into(),
        }
    }

    fn sample() -> Vec<TrialEvent> {
        use TrialOutcome::*;
        vec![
            ev("saxpy::cpu/w64", Some("cpu"), "w64", Passed, ""),
            ev(
                "saxpy::amd/gfx90a",
                Some("amd"),
                "gfx90a",
                Ignored,
                "no AMD GPU",
            ),
            ev(
                "reduce::cpu/w64",
                Some("cpu"),
                "w64",
                Failed,
                "output `out` differs\nworst: …",
            ),
            ev(
                "reduce::amd/gfx90a",
                Some("amd"),
                "gfx90a",
                Ignored,
                "no AMD GPU",
            ),
            ev(
                "orphan::no-check",
                None,
                "",
                Failed,
                "kernel `orphan` has no check",
            ),
        ]
    }

    #[test]
    fn table_has_kernels_by_targets_with_reasons() {
        let t = summary_table(&sample());
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "kernel           cpu/w64  amd/gfx90a  library");
        assert_eq!(
            lines[1],
            "kernels: orphan  -        -           FAIL (no check)"
        );
        assert_eq!(lines[2], "kernels: reduce  FAIL     skip [1]    -");
        assert_eq!(lines[3], "kernels: saxpy   pass     skip [1]    -");
        assert_eq!(lines[4], "[1] no AMD GPU");
        assert!(
            t.contains("failed: reduce::cpu/w64, orphan::no-check"),
            "{t}"
        );
        assert!(
            t.ends_with("5 trials: 1 passed, 2 failed, 2 skipped\n"),
            "{t}"
        );
    }

    #[test]
    fn each_device_of_a_several_gpu_machine_has_its_column() {
        use TrialOutcome::*;
        let events = vec![
            ev(
                "saxpy::nvidia/sm_90#0",
                Some("nvidia"),
                "sm_90#0",
                Passed,
                "",
            ),
            ev(
                "saxpy::nvidia/sm_90#1",
                Some("nvidia"),
                "sm_90#1",
                Failed,
                "wrong",
            ),
            ev("saxpy::cpu/w64", Some("cpu"), "w64", Passed, ""),
        ];
        let t = summary_table(&events);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[0],
            "kernel          cpu/w64  nvidia/sm_90#0  nvidia/sm_90#1"
        );
        assert_eq!(lines[1], "kernels: saxpy  pass     pass            FAIL");
        assert!(t.contains("failed: saxpy::nvidia/sm_90#1"), "{t}");
    }

    #[test]
    fn junit_parses_back_with_the_right_counts() {
        let xml = junit(&sample());
        let report = Report::deserialize_from_str(&xml).unwrap();
        assert_eq!(report.tests, 5);
        assert_eq!(report.failures, 2);
        assert_eq!(report.test_suites.len(), 1);
        let suite = &report.test_suites[0];
        assert_eq!(suite.name.as_str(), "kernels");
        assert_eq!(suite.disabled, 2);
        assert!(xml.contains("worst: …"), "{xml}");
    }
}
