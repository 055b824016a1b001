//! Running compile jobs in parallel without exceeding cargo's `-j`: the build script owns one
//! implicit job token; every further concurrent job first takes a token from cargo's jobserver
//! (the `jobserver` crate), so rustc processes and our compilers share the same budget.

use std::sync::{mpsc, OnceLock};

use jobserver::{Acquired, Client};

/// The jobserver cargo passed us, or a private one sized by `NUM_JOBS` (or the CPU count) when the
/// builder runs outside cargo.
fn client() -> &'static Client {
    static CLIENT: OnceLock<Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        // Safety: `from_env` must run before the inherited file descriptors could be closed or
        // reused; this is the first use of the jobserver in this process and nothing closes fds.
        if let Some(c) = unsafe { Client::from_env() } {
            return c;
        }
        let jobs = std::env::var("NUM_JOBS")
            .ok()
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
            .max(1);
        // One job runs on the implicit token, so the pool holds one fewer.
        Client::new(jobs - 1).expect("creating a jobserver pipe")
    })
}

enum Event<R> {
    Token(std::io::Result<Acquired>),
    Done {
        index: usize,
        result: R,
        implicit: bool,
    },
}

/// Runs `work` on every item, at most as many at once as the jobserver allows, and returns the
/// results in the items' order.
pub(crate) fn run_parallel<T, R, F>(items: Vec<T>, work: F) -> Vec<R>
where
    T: Send,
    R: Send + 'static,
    F: Fn(T) -> R + Sync,
{
    let total = items.len();
    if total <= 1 {
        return items.into_iter().map(&work).collect();
    }
    let (tx, rx) = mpsc::channel::<Event<R>>();
    let helper = {
        let tx = tx.clone();
        client().clone().into_helper_thread(move |token| {
            // A send error means the run is over; dropping the token releases it.
            let _ = tx.send(Event::Token(token));
        })
    };
    let mut results: Vec<Option<R>> = (0..total).map(|_| None).collect();
    std::thread::scope(|scope| {
        let work = &work;
        let spawn = |index: usize, item: T, token: Option<Acquired>| {
            let tx = tx.clone();
            scope.spawn(move || {
                let result = work(item);
                let implicit = token.is_none();
                drop(token);
                let _ = tx.send(Event::Done {
                    index,
                    result,
                    implicit,
                });
            });
        };
        let mut pending = items.into_iter().enumerate();
        let mut left = total;
        let mut running = 0usize;
        let mut implicit_free = true;
        let mut requested = 0usize;
        loop {
            if implicit_free {
                if let Some((i, item)) = pending.next() {
                    spawn(i, item, None);
                    implicit_free = false;
                    running += 1;
                    left -= 1;
                }
            }
            if let Ok(h) = &helper {
                while requested < left {
                    h.request_token();
                    requested += 1;
                }
            }
            if running == 0 && left == 0 {
                break;
            }
            match rx.recv().expect("a sender is alive while jobs run") {
                Event::Token(token) => {
                    requested = requested.saturating_sub(1);
                    if let (Ok(token), Some((i, item))) = (token, pending.next()) {
                        spawn(i, item, Some(token));
                        running += 1;
                        left -= 1;
                    }
                }
                Event::Done {
                    index,
                    result,
                    implicit,
                } => {
                    results[index] = Some(result);
                    running -= 1;
                    implicit_free |= implicit;
                }
            }
        }
    });
    // Dropping the helper cancels token requests still outstanding.
    drop(helper);
    results
        .into_iter()
        .map(|r| r.expect("every job reported"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn results_keep_order_and_all_items_run() {
        let out = run_parallel((0..20).collect(), |i: u32| {
            std::thread::sleep(std::time::Duration::from_millis(2));
            i * 2
        });
        assert_eq!(out, (0..20).map(|i| i * 2).collect::<Vec<_>>());
        assert_eq!(run_parallel(vec![7], |i: u32| i), [7]);
        assert!(run_parallel(Vec::<u32>::new(), |i| i).is_empty());
    }

    #[test]
    fn concurrency_never_exceeds_the_jobserver() {
        let limit = std::env::var("NUM_JOBS")
            .ok()
            .and_then(|n| n.parse::<usize>().ok());
        let now = AtomicUsize::new(0);
        let peak = AtomicUsize::new(0);
        run_parallel((0..12).collect(), |_: u32| {
            let n = now.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(n, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(10));
            now.fetch_sub(1, Ordering::SeqCst);
        });
        let peak = peak.load(Ordering::SeqCst);
        assert!(peak >= 1);
        if let Some(limit) = limit {
            assert!(peak <= limit, "peak {peak} > NUM_JOBS {limit}");
        }
    }
}
