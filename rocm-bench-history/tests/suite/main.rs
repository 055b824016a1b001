//! The integration tests of `rocm-bench-history`, one binary (see `testkit`).

mod gen;
mod history;
mod report;

fn main() -> std::process::ExitCode {
    // The concurrency and crash tests run this binary again as a writer process.
    if let Ok(role) = std::env::var(history::CHILD_ROLE) {
        history::child_entry(&role);
        return std::process::ExitCode::SUCCESS;
    }
    testkit::main()
}
