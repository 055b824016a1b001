//! `rocm-examples table`: trials from events files (`cargo rocm test`'s `events.jsonl`, or the
//! harnesses' own `ROCM_TEST_EVENTS` files) as one Markdown table, program x kernel x place.

use rocm_protocol::{read_events, TrialEvent, TrialOutcome};

/// Print the table of the trials in `files`, then each failure's first lines. `Ok(true)` when
/// trials ran and none failed.
pub fn print(files: &[&str]) -> Result<bool, String> {
    let mut events = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f).map_err(|e| format!("cannot read {f}: {e}"))?;
        events.extend(read_events(&text).map_err(|e| format!("{f}: not an events file: {e}"))?);
    }
    let (table, ok) = render(&events);
    print!("{table}");
    Ok(ok)
}

/// Where a trial ran: `cpu/w32`, `nvidia`, `nvidia/sm_90`.
fn place(e: &TrialEvent) -> Option<String> {
    let backend = e.backend.as_deref()?;
    Some(match e.target.as_deref() {
        Some(t) if !t.is_empty() => format!("{backend}/{t}"),
        _ => backend.to_owned(),
    })
}

/// The table and whether every trial passed (and at least one ran).
pub fn render(events: &[TrialEvent]) -> (String, bool) {
    let mut places: Vec<String> = events.iter().filter_map(place).collect();
    places.sort();
    places.dedup();
    let mut rows: Vec<(&str, &str)> = Vec::new();
    for e in events {
        let row = (e.binary.as_str(), e.kernel.as_str());
        if !rows.contains(&row) {
            rows.push(row);
        }
    }
    let mut out = format!("| program | kernel | {} |\n", places.join(" | "));
    out.push_str(&format!("|---|---|{}\n", "---|".repeat(places.len())));
    let (mut passed, mut failed) = (0, 0);
    for (binary, kernel) in &rows {
        let cells: Vec<String> = places
            .iter()
            .map(|p| {
                let outcomes: Vec<TrialOutcome> = events
                    .iter()
                    .filter(|e| {
                        e.binary == *binary && e.kernel == *kernel && place(e).as_ref() == Some(p)
                    })
                    .map(|e| e.outcome)
                    .collect();
                if outcomes.is_empty() {
                    "–".to_owned()
                } else if outcomes.contains(&TrialOutcome::Failed) {
                    "**FAIL**".to_owned()
                } else if outcomes.contains(&TrialOutcome::Passed) {
                    "pass".to_owned()
                } else {
                    "skipped".to_owned()
                }
            })
            .collect();
        out.push_str(&format!(
            "| {binary} | `{kernel}` | {} |\n",
            cells.join(" | ")
        ));
    }
    for e in events {
        match e.outcome {
            TrialOutcome::Passed => passed += 1,
            TrialOutcome::Failed => {
                failed += 1;
                let message = e.message.as_deref().unwrap_or("");
                let head: Vec<&str> = message.lines().take(6).collect();
                out.push_str(&format!(
                    "\n{} {} failed:\n    {}\n",
                    e.binary,
                    e.name,
                    head.join("\n    ")
                ));
            }
            TrialOutcome::Ignored => {}
        }
    }
    out.push_str(&format!("\n{passed} trials passed, {failed} failed\n"));
    (out, failed == 0 && passed > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(binary: &str, kernel: &str, place: (&str, &str), outcome: TrialOutcome) -> TrialEvent {
        TrialEvent {
            kind: "trial".into(),
            name: format!("{kernel}::{}/{}", place.0, place.1),
            check: kernel.into(),
            kernel: kernel.into(),
            backend: Some(place.0.into()),
            target: Some(place.1.into()),
            outcome,
            message: (outcome == TrialOutcome::Failed).then(|| "mismatch at 3".into()),
            duration_s: 0.1,
            cases: Some(32),
            seed: None,
            bandwidth: None,
            binary: binary.into(),
        }
    }

    #[test]
    fn a_row_per_kernel_and_a_column_per_place() {
        let events = [
            event(
                "saxpy",
                "saxpy_kernel",
                ("cpu", "w32"),
                TrialOutcome::Passed,
            ),
            event(
                "saxpy",
                "saxpy_kernel",
                ("cpu", "w64"),
                TrialOutcome::Passed,
            ),
            event("scan", "block", ("cpu", "w32"), TrialOutcome::Passed),
            event("scan", "block", ("cpu", "w64"), TrialOutcome::Failed),
            event("scan", "block", ("nvidia", ""), TrialOutcome::Ignored),
        ];
        let (table, ok) = render(&events);
        assert!(!ok);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(
            lines[0],
            "| program | kernel | cpu/w32 | cpu/w64 | nvidia |"
        );
        assert_eq!(lines[2], "| saxpy | `saxpy_kernel` | pass | pass | – |");
        assert_eq!(lines[3], "| scan | `block` | pass | **FAIL** | skipped |");
        assert!(
            table.contains("scan block::cpu/w64 failed:\n    mismatch at 3"),
            "{table}"
        );
        assert!(table.ends_with("3 trials passed, 1 failed\n"), "{table}");
        let (_, ok) = render(&events[..3]);
        assert!(ok);
        assert!(!render(&[]).1, "no trial is not a pass");
    }
}
