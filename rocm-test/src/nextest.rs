//! Running under cargo-nextest: it lists each binary's trials (`--list --format terse`, then
//! with `--ignored`) and runs each trial in a process of its own (`--exact NAME`). Trials that
//! cannot run here are listed as ignored, so nextest skips them; a trial it runs anyway
//! (`--run-ignored`) that ends ignored fails, since nextest would count it as passed.

/// Whether this process was started by cargo-nextest (it sets `NEXTEST_RUN_ID` for every test
/// process, and `NEXTEST=1`).
pub(crate) fn running_under_nextest() -> bool {
    std::env::var_os("NEXTEST_RUN_ID").is_some() || std::env::var("NEXTEST").is_ok_and(|v| v == "1")
}

/// The failure of a trial that cannot run here, run by nextest anyway.
pub(crate) fn ignored_run_message(reason: &str) -> String {
    format!(
        "this trial cannot run here: {reason}\n\
         It is listed as ignored, so cargo-nextest skips it; it ran because ignored tests were \
         asked for (--run-ignored), and it fails instead of ending `ignored` because nextest \
         would count that as passed. Run without --run-ignored to skip it, or on a machine \
         where it can run.\n"
    )
}
