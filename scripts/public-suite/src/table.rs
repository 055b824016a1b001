//! `public-suite table`: trials from events files (`cargo rocm test`'s `events.jsonl`, or the
//! harnesses' own `ROCM_TEST_EVENTS` files) as one Markdown table, collection x program x kernel
//! x place, each cell one verdict ([`Verdict`]), then totals per place and each failure's first
//! lines.
//!
//! A file given as `LABEL=FILE` names its places with the label (`nvidia/sm_90 nvcc` and
//! `nvidia/sm_90 nvrtc` for two runs of the same GPU through two compile paths).

use rocm_protocol::{read_events, TrialEvent, TrialOutcome};

/// What a cell says about a kernel at one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Every trial passed.
    Pass,
    /// A race report or a fault (out-of-bounds access, partial barrier, crash, time limit) where
    /// another place of the same kernel passed.
    FalseReport,
    /// A race report or a fault at every place that ran the kernel.
    Report,
    /// The program did not build for this backend, or the kernel cannot run on it (no code for
    /// it, the module does not load, a feature the backend does not support).
    Unsupported,
    /// The outputs differ from the reference (or another failure of the check).
    Wrong,
    /// Trials that could not run here (ignored).
    Skipped,
    /// No trial.
    None,
}

impl Verdict {
    fn cell(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::FalseReport => "**false report**",
            Verdict::Report => "**race/fault**",
            Verdict::Unsupported => "unsupported",
            Verdict::Wrong => "**wrong**",
            Verdict::Skipped => "skipped",
            Verdict::None => "–",
        }
    }
}

/// What a failure's message says it was, before comparing places: a report, the backend not
/// taking the kernel, or a wrong result.
fn failure_kind(message: &str) -> Verdict {
    let m = message.to_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| m.contains(w));
    if has(&[
        "unsupported",
        "does not support",
        "could not load",
        "nvrtc",
        "has no cpu code",
        "has no nvidia code",
        "has no amd code",
        "has no code object",
    ]) {
        Verdict::Unsupported
    } else if has(&[
        "race",
        "out-of-bounds",
        "out of bounds",
        "partial barrier",
        "killed by signal",
        "ran past the time limit",
        "illegal address",
        "misaligned",
        "fault",
    ]) {
        Verdict::Report
    } else {
        Verdict::Wrong
    }
}

/// Events of one file, with its label.
pub struct Labelled {
    label: Option<String>,
    events: Vec<TrialEvent>,
}

/// Read `[LABEL=]FILE` arguments.
pub fn read(files: &[&str]) -> Result<Vec<Labelled>, String> {
    files
        .iter()
        .map(|arg| {
            let (label, file) = match arg.split_once('=') {
                Some((l, f)) if !l.contains('/') => (Some(l.to_owned()), f),
                _ => (None, *arg),
            };
            let text =
                std::fs::read_to_string(file).map_err(|e| format!("cannot read {file}: {e}"))?;
            let events =
                read_events(&text).map_err(|e| format!("{file}: not an events file: {e}"))?;
            Ok(Labelled { label, events })
        })
        .collect()
}

/// Print the table of the trials in `files`. `Ok(true)` when trials ran and none failed.
pub fn print(files: &[&str]) -> Result<bool, String> {
    let (table, ok) = render(&read(files)?);
    print!("{table}");
    Ok(ok)
}

/// A trial at its place.
struct Trial<'a> {
    place: String,
    /// The backend and label of the place, for unsupported programs (which name no target).
    backend: String,
    label: Option<&'a str>,
    event: &'a TrialEvent,
}

/// `cpu/w32`, `nvidia/sm_90`, `nvidia/sm_90 nvrtc`; `library` for trials about the library.
fn place(e: &TrialEvent, label: Option<&str>) -> String {
    let base = match (e.backend.as_deref(), e.target.as_deref()) {
        (None, _) => "library".to_owned(),
        (Some(b), Some(t)) if !t.is_empty() => format!("{b}/{t}"),
        (Some(b), _) => b.to_owned(),
    };
    match label {
        Some(l) => format!("{base} {l}"),
        None => base,
    }
}

/// `hip_examples__vector_add` → (`hip-examples`, `vector_add`).
fn collection_and_program(binary: &str) -> (String, &str) {
    match binary.split_once("__") {
        Some((c, p)) => (c.replace('_', "-"), p),
        None => (String::new(), binary),
    }
}

fn is_unsupported_record(e: &TrialEvent) -> bool {
    e.kernel == "*"
        && e.outcome == TrialOutcome::Ignored
        && e.message
            .as_deref()
            .is_some_and(|m| m.starts_with("unsupported:"))
}

/// The table and whether every trial passed (and at least one ran).
pub fn render(files: &[Labelled]) -> (String, bool) {
    let mut trials: Vec<Trial> = Vec::new();
    // (binary, backend, label, reason): programs that did not build for a backend.
    let mut unsupported: Vec<(&str, &str, Option<&str>, &str)> = Vec::new();
    for f in files {
        for e in &f.events {
            let label = f.label.as_deref();
            if is_unsupported_record(e) {
                let backend = e.backend.as_deref().unwrap_or("");
                let reason = e.message.as_deref().unwrap_or("");
                unsupported.push((&e.binary, backend, label, reason));
                continue;
            }
            trials.push(Trial {
                place: place(e, label),
                backend: e.backend.clone().unwrap_or_default(),
                label,
                event: e,
            });
        }
    }
    // Places: those trials ran at, in order; an unsupported backend with no trial gets a column.
    let mut places: Vec<(String, String, Option<&str>)> = trials
        .iter()
        .map(|t| (t.place.clone(), t.backend.clone(), t.label))
        .collect();
    for (_, backend, label, _) in &unsupported {
        let covered = places.iter().any(|p| p.1 == *backend && p.2 == *label);
        if !covered {
            let name = match label {
                Some(l) => format!("{backend} {l}"),
                None => (*backend).to_owned(),
            };
            places.push((name, (*backend).to_owned(), *label));
        }
    }
    places.sort_by(|a, b| a.0.cmp(&b.0));
    places.dedup_by(|a, b| a.0 == b.0);

    // Rows: each kernel of each program; a program with no kernel trial gets a `*` row.
    let mut rows: Vec<(&str, &str)> = Vec::new();
    for t in &trials {
        let row = (t.event.binary.as_str(), t.event.kernel.as_str());
        if !rows.contains(&row) {
            rows.push(row);
        }
    }
    for (binary, ..) in &unsupported {
        if !rows.iter().any(|r| r.0 == *binary) {
            rows.push((binary, "*"));
        }
    }
    rows.sort_by_key(|(binary, kernel)| {
        let (c, p) = collection_and_program(binary);
        (c, p.to_owned(), kernel.to_string())
    });

    let verdict_at = |binary: &str, kernel: &str, p: &(String, String, Option<&str>)| {
        if unsupported
            .iter()
            .any(|u| u.0 == binary && u.1 == p.1 && u.2 == p.2)
        {
            return Verdict::Unsupported;
        }
        let here: Vec<&TrialEvent> = trials
            .iter()
            .filter(|t| t.event.binary == binary && t.event.kernel == kernel && t.place == p.0)
            .map(|t| t.event)
            .collect();
        if here.is_empty() {
            Verdict::None
        } else if let Some(f) = here.iter().find(|e| e.outcome == TrialOutcome::Failed) {
            failure_kind(f.message.as_deref().unwrap_or(""))
        } else if here.iter().any(|e| e.outcome == TrialOutcome::Passed) {
            Verdict::Pass
        } else {
            Verdict::Skipped
        }
    };

    let mut out = format!(
        "| collection | program | kernel | {} |\n",
        places
            .iter()
            .map(|p| p.0.as_str())
            .collect::<Vec<_>>()
            .join(" | ")
    );
    out.push_str(&format!("|---|---|---|{}\n", "---|".repeat(places.len())));
    let mut totals = vec![[0usize; 7]; places.len()];
    let index = |v: Verdict| v as usize;
    for (binary, kernel) in &rows {
        let mut cells: Vec<Verdict> = places
            .iter()
            .map(|p| verdict_at(binary, kernel, p))
            .collect();
        if cells.contains(&Verdict::Pass) {
            for c in cells.iter_mut().filter(|c| **c == Verdict::Report) {
                *c = Verdict::FalseReport;
            }
        }
        for (t, c) in totals.iter_mut().zip(&cells) {
            t[index(*c)] += 1;
        }
        let (collection, program) = collection_and_program(binary);
        out.push_str(&format!(
            "| {collection} | {program} | `{kernel}` | {} |\n",
            cells
                .iter()
                .map(|c| c.cell())
                .collect::<Vec<_>>()
                .join(" | ")
        ));
    }
    out.push_str(&format!(
        "\n{} kernels of {} programs.\n\n| place | pass | false report | race/fault | unsupported | \
         wrong | skipped | none |\n|---|---|---|---|---|---|---|---|\n",
        rows.len(),
        {
            let mut b: Vec<&str> = rows.iter().map(|r| r.0).collect();
            b.dedup();
            b.len()
        }
    ));
    for (p, t) in places.iter().zip(&totals) {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
            p.0,
            t[index(Verdict::Pass)],
            t[index(Verdict::FalseReport)],
            t[index(Verdict::Report)],
            t[index(Verdict::Unsupported)],
            t[index(Verdict::Wrong)],
            t[index(Verdict::Skipped)],
            t[index(Verdict::None)]
        ));
    }

    let (mut passed, mut failed) = (0, 0);
    let mut notes = String::new();
    for (binary, backend, label, reason) in &unsupported {
        notes.push_str(&format!(
            "\n{binary} on {backend}{}: {reason}\n",
            label.map(|l| format!(" ({l})")).unwrap_or_default()
        ));
    }
    for t in &trials {
        match t.event.outcome {
            TrialOutcome::Passed => passed += 1,
            TrialOutcome::Failed => {
                failed += 1;
                let message = t.event.message.as_deref().unwrap_or("");
                let head: Vec<&str> = message.lines().take(6).collect();
                notes.push_str(&format!(
                    "\n{} {}{} failed:\n    {}\n",
                    t.event.binary,
                    t.event.name,
                    t.label.map(|l| format!(" ({l})")).unwrap_or_default(),
                    head.join("\n    ")
                ));
            }
            TrialOutcome::Ignored => {}
        }
    }
    out.push_str(&notes);
    out.push_str(&format!("\n{passed} trials passed, {failed} failed\n"));
    (out, failed == 0 && passed > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(
        binary: &str,
        kernel: &str,
        place: (&str, &str),
        outcome: TrialOutcome,
        message: &str,
    ) -> TrialEvent {
        TrialEvent {
            kind: "trial".into(),
            name: format!("{kernel}::{}/{}", place.0, place.1),
            check: kernel.into(),
            kernel: kernel.into(),
            backend: Some(place.0.into()),
            target: Some(place.1.into()),
            outcome,
            message: (!message.is_empty()).then(|| message.into()),
            duration_s: 0.1,
            cases: Some(32),
            seed: None,
            bandwidth: None,
            binary: binary.into(),
        }
    }

    fn file(label: Option<&str>, events: Vec<TrialEvent>) -> Labelled {
        Labelled {
            label: label.map(str::to_owned),
            events,
        }
    }

    use TrialOutcome::{Failed, Ignored, Passed};

    #[test]
    fn a_row_per_kernel_and_a_column_per_place() {
        let cpu = file(
            None,
            vec![
                event("rex__saxpy", "saxpy", ("cpu", "w32"), Passed, ""),
                event("rex__saxpy", "saxpy", ("cpu", "w64"), Passed, ""),
                event("rex__scan", "block", ("cpu", "w32"), Passed, ""),
                event("rex__scan", "block", ("cpu", "w64"), Failed, "mismatch at 3"),
                event("rex__scan", "block", ("nvidia", ""), Ignored, "no device"),
            ],
        );
        let (table, ok) = render(&[cpu]);
        assert!(!ok);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(
            lines[0],
            "| collection | program | kernel | cpu/w32 | cpu/w64 | nvidia |"
        );
        assert_eq!(lines[2], "| rex | saxpy | `saxpy` | pass | pass | – |");
        assert_eq!(
            lines[3],
            "| rex | scan | `block` | pass | **wrong** | skipped |"
        );
        assert!(
            table.contains("rex__scan block::cpu/w64 failed:\n    mismatch at 3"),
            "{table}"
        );
        assert!(table.contains("| cpu/w64 | 1 | 0 | 0 | 0 | 1 | 0 | 0 |"), "{table}");
        assert!(table.ends_with("3 trials passed, 1 failed\n"), "{table}");
        assert!(!render(&[]).1, "no trial is not a pass");
    }

    #[test]
    fn labels_reports_and_unsupported_programs() {
        let race = "kernel `k`: shared-memory race: thread 3 wrote";
        let cpu = file(
            None,
            vec![
                event("c__p", "k", ("cpu", "w32"), Failed, race),
                event("c__p", "j", ("cpu", "w32"), Failed, race),
                event("c__bad", "*", ("cpu", ""), Ignored, "unsupported: error: no"),
            ],
        );
        let nvcc = file(
            Some("nvcc"),
            vec![
                event("c__p", "k", ("nvidia", "sm_90"), Passed, ""),
                event("c__p", "j", ("nvidia", "sm_90"), Failed, race),
            ],
        );
        let nvrtc = file(
            Some("nvrtc"),
            vec![
                event("c__p", "k", ("nvidia", "sm_90"), Failed, "NVRTC: error"),
            ],
        );
        let (table, _) = render(&[cpu, nvcc, nvrtc]);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(
            lines[0],
            "| collection | program | kernel | cpu/w32 | nvidia/sm_90 nvcc | nvidia/sm_90 nvrtc |"
        );
        // The unsupported record names no kernel: a `*` row, unsupported at its backend.
        assert_eq!(lines[2], "| c | bad | `*` | unsupported | – | – |");
        assert_eq!(
            lines[3],
            "| c | p | `j` | **race/fault** | **race/fault** | – |"
        );
        assert_eq!(
            lines[4],
            "| c | p | `k` | **false report** | pass | unsupported |"
        );
        assert!(table.contains("c__bad on cpu: unsupported: error: no"), "{table}");
    }
}
