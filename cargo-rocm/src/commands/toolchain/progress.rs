//! What an install is doing, on stderr: cargo-style status lines and a download progress bar
//! (drawn only when stderr is a terminal and `--quiet` is off).

use indicatif::{ProgressBar, ProgressStyle};
use rocm_toolchains::download::Progress;
use rocm_toolchains::Event;

use crate::output::Output;

/// An event handler for the installer's operations.
pub fn events(out: &Output) -> impl FnMut(Event<'_>) + '_ {
    let mut bar: Option<ProgressBar> = None;
    move |event| match event {
        Event::WaitingForLock { lock } => out.status(
            "Blocking",
            format!(
                "waiting for another cargo-rocm to release {}",
                lock.display()
            ),
        ),
        Event::Fetching { url } => out.verbose(format!("fetching {url}")),
        Event::IndexSkipped { url, error } => out.warn(format!("skipping index {url}: {error}")),
        Event::Unpacking { archive } => out.status("Unpacking", archive.display()),
        Event::Download(p) => match p {
            Progress::Start {
                url,
                total,
                resumed_from,
            } => {
                if resumed_from > 0 {
                    out.status("Resuming", format!("{url} at byte {resumed_from}"));
                } else {
                    out.status("Downloading", url);
                }
                bar = Some(new_bar(out, total, resumed_from));
            }
            Progress::Advance { done } => {
                if let Some(b) = &bar {
                    b.set_position(done);
                }
            }
            Progress::Retry {
                attempt,
                of,
                error,
                wait,
            } => {
                if let Some(b) = bar.take() {
                    b.finish_and_clear();
                }
                out.warn(format!(
                    "download interrupted ({error}); attempt {} of {of} in {:.1}s",
                    attempt + 1,
                    wait.as_secs_f64()
                ));
            }
            Progress::Done => {
                if let Some(b) = bar.take() {
                    b.finish_and_clear();
                }
            }
        },
    }
}

fn new_bar(out: &Output, total: Option<u64>, position: u64) -> ProgressBar {
    if out.quiet {
        return ProgressBar::hidden();
    }
    let (bar, template) = match total {
        Some(t) => (
            ProgressBar::new(t),
            "{spinner} [{bar:40}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
        ),
        None => (
            ProgressBar::new_spinner(),
            "{spinner} {bytes} {bytes_per_sec}",
        ),
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_position(position);
    bar
}
