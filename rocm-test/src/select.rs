//! Which trials this process lists and runs: the shard of `--partition`, and the trials that
//! libtest lists as ignored (they cannot run here), whose events and reasons are recorded here
//! because libtest never calls an ignored trial's body.

use std::collections::HashMap;

use libtest_mimic::{Arguments, Trial};

use crate::options::Partition;
use crate::suite::TrialBody;
use rocm_protocol::partition::PartitionKind;

/// The trials for libtest-mimic, and the ignored ones (name, reason) it will not run.
pub(crate) struct Selected {
    pub trials: Vec<Trial>,
    pub ignored: Vec<(String, String)>,
}

/// `record_ignored`: run the bodies of trials libtest will skip as ignored (they only write
/// their event) and return their reasons; off for `--list`, which must have no effects.
pub(crate) fn select(
    bodies: Vec<TrialBody>,
    partition: Option<&Partition>,
    durations: &HashMap<String, f64>,
    args: &Arguments,
    record_ignored: bool,
) -> Selected {
    // A stand-in of each trial, to ask libtest which it filters out and which it ignores.
    let probes: Vec<Trial> = bodies
        .iter()
        .map(|b| Trial::test(b.name.clone(), || Ok(())).with_ignored_flag(b.skip.is_some()))
        .collect();
    let wanted = |i: usize| !args.is_filtered_out(&probes[i]);
    let will_ignore = |i: usize| args.is_ignored(&probes[i]);
    let mut in_shard = vec![true; bodies.len()];
    if let Some(p) = partition {
        // As nextest: after the name filters, the trials that will run are partitioned among
        // themselves; the ignored ones are too, on their own, so each is reported by one shard.
        for ignored in [false, true] {
            let group: Vec<usize> = (0..bodies.len())
                .filter(|&i| wanted(i) && will_ignore(i) == ignored)
                .collect();
            let names: Vec<&str> = group.iter().map(|&i| bodies[i].name.as_str()).collect();
            for (&i, selected) in group.iter().zip(p.select_timed(&names, durations)) {
                in_shard[i] = selected;
            }
        }
    }
    let mut selected = Selected {
        trials: Vec::with_capacity(bodies.len()),
        ignored: Vec::new(),
    };
    for (i, body) in bodies.into_iter().enumerate() {
        if !in_shard[i] {
            continue;
        }
        match &body.skip {
            Some(reason) if record_ignored && wanted(i) && will_ignore(i) => {
                selected.ignored.push((body.name.clone(), reason.clone()));
                let name = body.name.clone();
                // Records the event (outcome ignored, the reason) and does nothing else.
                let _ = (body.run)();
                selected
                    .trials
                    .push(Trial::test(name, || Ok(())).with_ignored_flag(true));
            }
            _ => selected.trials.push(body.into_trial()),
        }
    }
    selected
}

/// The durations a `duration:K/N:EVENTS` partition splits this binary's trials by (empty for
/// the other kinds).
pub(crate) fn recorded_durations(
    partition: Option<&Partition>,
    binary: &str,
) -> Result<HashMap<String, f64>, crate::Error> {
    let Some(p) = partition.filter(|p| p.kind == PartitionKind::Duration) else {
        return Ok(HashMap::new());
    };
    let path = p.history.as_ref().ok_or_else(|| {
        crate::Error::Option(format!(
            "--partition {p}: a duration partition needs the events of an earlier run: \
             duration:K/N:EVENTS (`cargo rocm test` gives it its last run's events.jsonl)"
        ))
    })?;
    rocm_protocol::partition::recorded_durations(path, binary)
        .map_err(|e| crate::Error::Option(format!("--partition {p}: {e}")))
}

/// The reasons of the trials listed as ignored, for the end of a human-readable run (libtest
/// prints only `ignored` for them).
pub(crate) fn ignored_footer(ignored: &[(String, String)]) -> String {
    if ignored.is_empty() {
        return String::new();
    }
    let mut out = format!("\nignored here ({}), and why:\n", ignored.len());
    for (name, reason) in ignored {
        out.push_str(&format!("    {name}: {}\n", reason.trim_end()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use libtest_mimic::Completion;
    use std::sync::{Arc, Mutex};

    fn bodies(ran: &Arc<Mutex<Vec<String>>>) -> Vec<TrialBody> {
        let names = [
            ("a::cpu/w32", None),
            ("a::cpu/w64", None),
            ("a::amd", Some("no AMD GPU")),
            ("b::cpu/w32", None),
            ("b::cpu/w64", None),
            ("b::amd", Some("no AMD GPU")),
        ];
        names
            .iter()
            .map(|(n, skip)| {
                let ran = ran.clone();
                let name = n.to_string();
                TrialBody {
                    name: name.clone(),
                    skip: skip.map(str::to_owned),
                    run: Box::new(move || {
                        ran.lock().unwrap().push(name);
                        Ok(Completion::Completed)
                    }),
                }
            })
            .collect()
    }

    fn args(v: &[&str]) -> Arguments {
        Arguments::from_iter(std::iter::once("bin").chain(v.iter().copied()))
    }

    #[test]
    fn ignored_trials_are_flagged_and_recorded_without_running_libtest() {
        let ran = Arc::new(Mutex::new(Vec::new()));
        let s = select(bodies(&ran), None, &HashMap::new(), &args(&[]), true);
        let flagged: Vec<&str> = s
            .trials
            .iter()
            .filter(|t| t.has_ignored_flag())
            .map(|t| t.name())
            .collect();
        assert_eq!(flagged, ["a::amd", "b::amd"]);
        assert_eq!(s.ignored.len(), 2);
        // Their bodies ran here (to write the event); the others are left to libtest.
        assert_eq!(*ran.lock().unwrap(), ["a::amd", "b::amd"]);
        assert!(ignored_footer(&s.ignored).contains("a::amd: no AMD GPU"));
        // Listing records nothing; --include-ignored leaves them to libtest, which runs them.
        let ran = Arc::new(Mutex::new(Vec::new()));
        let s = select(
            bodies(&ran),
            None,
            &HashMap::new(),
            &args(&["--list"]),
            false,
        );
        assert!(s.ignored.is_empty() && ran.lock().unwrap().is_empty());
        let s = select(
            bodies(&ran),
            None,
            &HashMap::new(),
            &args(&["--include-ignored"]),
            true,
        );
        assert!(s.ignored.is_empty() && ran.lock().unwrap().is_empty());
    }

    #[test]
    fn shards_cover_each_trial_once_after_filters() {
        for kind in ["count", "hash"] {
            let mut seen: Vec<String> = Vec::new();
            for k in 1..=3 {
                let ran = Arc::new(Mutex::new(Vec::new()));
                let p: Partition = format!("{kind}:{k}/3").parse().unwrap();
                let s = select(
                    bodies(&ran),
                    Some(&p),
                    &HashMap::new(),
                    &args(&["cpu"]),
                    true,
                );
                // The filter `cpu` is libtest's to apply; trials of other shards are gone.
                let a = args(&["cpu"]);
                seen.extend(
                    s.trials
                        .iter()
                        .filter(|t| !a.is_filtered_out(t))
                        .map(|t| t.name().to_owned()),
                );
            }
            seen.sort();
            assert_eq!(
                seen,
                ["a::cpu/w32", "a::cpu/w64", "b::cpu/w32", "b::cpu/w64"],
                "{kind}"
            );
        }
        // Count shards of the four trials that run: 2, 1, 1, in name order.
        let ran = Arc::new(Mutex::new(Vec::new()));
        let p: Partition = "count:1/3".parse().unwrap();
        let s = select(bodies(&ran), Some(&p), &HashMap::new(), &args(&[]), true);
        let names: Vec<&str> = s.trials.iter().map(|t| t.name()).collect();
        assert_eq!(names, ["a::cpu/w32", "a::amd", "b::cpu/w64"]);
        // By recorded durations: b::cpu/w64 (3 s) alone, the other three (1 s each) together.
        let durations: HashMap<String, f64> = [
            ("a::cpu/w32", 1.0),
            ("a::cpu/w64", 1.0),
            ("b::cpu/w32", 1.0),
            ("b::cpu/w64", 3.0),
        ]
        .iter()
        .map(|(n, d)| (n.to_string(), *d))
        .collect();
        let run_in = |k: u64| -> Vec<String> {
            let p: Partition = format!("duration:{k}/2:unused").parse().unwrap();
            let s = select(bodies(&ran), Some(&p), &durations, &args(&[]), false);
            s.trials
                .iter()
                .filter(|t| !t.has_ignored_flag())
                .map(|t| t.name().to_owned())
                .collect()
        };
        assert_eq!(run_in(1), ["b::cpu/w64"]);
        assert_eq!(run_in(2), ["a::cpu/w32", "a::cpu/w64", "b::cpu/w32"]);
        let err = recorded_durations(Some(&"duration:1/2".parse().unwrap()), "kernels");
        assert!(err.unwrap_err().to_string().contains("duration:K/N:EVENTS"));
    }
}
