//! `cargo rocm bench --suite gpu-benches`: every benchmark of the suite on every selected
//! device. Arguments that are not flags choose benchmarks by name (`gpu-stream`, `latency`...).

use gpu_benches::benches::ALL;
use gpu_benches::Ctx;

fn main() -> std::process::ExitCode {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let chosen: Vec<_> = ALL
        .iter()
        .filter(|(name, _)| filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str())))
        .collect();
    if chosen.is_empty() {
        let names: Vec<&str> = ALL.iter().map(|b| b.0).collect();
        eprintln!(
            "gpu-benches: no benchmark matches {} (benchmarks: {})",
            filters.join(" "),
            names.join(", ")
        );
        return std::process::ExitCode::from(2);
    }
    if let Err(e) = gpu_benches::benches::latency::from_kb() {
        eprintln!("gpu-benches: {e}");
        return std::process::ExitCode::from(2);
    }
    let small = std::env::var(rocm_bench::vars::SMALL).is_ok_and(|v| v == "1");
    let mut failed = false;
    for target in rocm_bench::targets() {
        let mut ctx = match Ctx::new(target.clone(), small) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("gpu-benches: cannot use {}: {e}", target.place());
                failed = true;
                continue;
            }
        };
        for (name, run) in &chosen {
            println!(
                "\n== {name} on {} ({}){}",
                target.place(),
                target.device().info().name,
                if ctx.small {
                    " — smoke test: reduced sizes"
                } else {
                    ""
                }
            );
            if let Err(e) = run(&mut ctx) {
                eprintln!("gpu-benches: {name} on {} failed: {e}", target.place());
                failed = true;
            }
        }
    }
    if failed {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    }
}
