//! The model against the compiler on a generated corpus: every processor, wave size and CU/WGP
//! mode the installed clang knows; prints one row per processor (configurations, kernels,
//! agreement, cross-checks, limiters) and every disagreement.
//!
//! ```text
//! scripts/occupancy-compare.sh [--kernels N] [--jobs N] [--arch gfx90a,gfx1100] [--seed S] [--verbose]
//! ```
//!
//! Environment: `ROCM_OCCUPANCY_CLANG` (default `clang++-19`), `ROCM_OCCUPANCY_CACHE` (default
//! `$CARGO_TARGET_DIR/occupancy-corpus`, else `target/occupancy-corpus`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use rocm_occupancy::corpus::{
    analyse, clang_version, compile, configs, hip_source, limiter_key, unit_kernels, Config,
    KernelSpec, Outcome,
};
use rocm_occupancy::{Target, PROCESSORS};

#[derive(Default)]
struct Row {
    configs: usize,
    kernels: usize,
    agree: usize,
    inconsistent: usize,
    limiters: BTreeMap<&'static str, usize>,
}

struct Options {
    kernels: usize,
    jobs: usize,
    only: Vec<String>,
    seed: u64,
    verbose: bool,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        kernels: 80,
        jobs: std::thread::available_parallelism().map_or(2, |n| n.get()),
        only: Vec::new(),
        seed: 0x5eed_0cc0,
        verbose: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--kernels" => {
                o.kernels = value("--kernels")?
                    .parse()
                    .map_err(|e| format!("--kernels: {e}"))?
            }
            "--jobs" => {
                o.jobs = value("--jobs")?
                    .parse()
                    .map_err(|e| format!("--jobs: {e}"))?
            }
            "--arch" => o.only = value("--arch")?.split(',').map(str::to_owned).collect(),
            "--seed" => {
                o.seed = value("--seed")?
                    .parse()
                    .map_err(|e| format!("--seed: {e}"))?
            }
            "--verbose" | "-v" => o.verbose = true,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(o)
}

/// The LLVM major of `clang version 19.1.7 ...`.
fn llvm_major(version: &str) -> Option<u32> {
    let rest = &version[version.find("version ")? + 8..];
    rest.split('.').next()?.trim().parse().ok()
}

fn main() {
    let o = match options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let clang = std::env::var("ROCM_OCCUPANCY_CLANG").unwrap_or_else(|_| "clang++-19".into());
    let Some(version) = clang_version(&clang) else {
        eprintln!("cannot run `{clang} --version`: install clang-19 and lld-19 (apt-get install clang-19 lld-19) or set ROCM_OCCUPANCY_CLANG");
        std::process::exit(2);
    };
    let llvm = llvm_major(&version).unwrap_or(19);
    let cache = std::env::var_os("ROCM_OCCUPANCY_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("CARGO_TARGET_DIR").unwrap_or("target".into()))
                .join("occupancy-corpus")
        });
    let started = std::time::Instant::now();
    let units: Vec<(Config, Vec<KernelSpec>)> = configs(llvm, &o.only)
        .into_iter()
        .map(|c| {
            let ks = unit_kernels(&c, o.kernels, o.seed).expect("a configuration of the table");
            (c, ks)
        })
        .collect();

    type UnitResult = Option<Result<(Vec<Outcome>, bool), String>>;
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<UnitResult>> = Mutex::new(vec![None; units.len()]);
    std::thread::scope(|s| {
        for _ in 0..o.jobs.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some((cfg, ks)) = units.get(i) else { break };
                let r = compile(&clang, &version, &hip_source(ks), &cfg.flags(), &cache)
                    .and_then(|c| analyse(&c, cfg).map(|o| (o, c.cached)));
                results.lock().unwrap()[i] = Some(r);
            });
        }
    });
    let results = results.into_inner().unwrap();

    let mut rows: BTreeMap<usize, (&'static str, Row)> = BTreeMap::new();
    let (mut failures, mut disagreements, mut inconsistencies) =
        (Vec::new(), Vec::new(), Vec::new());
    let (mut compiled_now, mut padded) = (0, 0);
    let mut extra = (0usize, 0usize);
    for ((cfg, ks), r) in units.iter().zip(results) {
        let order = PROCESSORS
            .iter()
            .position(|p| p.name == cfg.processor.name)
            .unwrap_or(usize::MAX);
        let row = &mut rows
            .entry(order)
            .or_insert_with(|| (cfg.processor.name, Row::default()))
            .1;
        row.configs += 1;
        let outcomes = match r {
            None => {
                failures.push(format!("{}: not run", cfg.label()));
                continue;
            }
            Some(Err(e)) => {
                failures.push(format!("{}: {e}", cfg.label()));
                continue;
            }
            Some(Ok((outcomes, cached))) => {
                compiled_now += usize::from(!cached);
                outcomes
            }
        };
        for out in outcomes {
            let spec = ks.iter().find(|k| k.name == out.kernel);
            let mut inc = out.inconsistencies.clone();
            if let Some(sp) = spec {
                let want = sp.launch_bounds.unwrap_or(1024);
                if out.metadata.max_flat_workgroup_size != want {
                    inc.push(format!(
                        "max_flat_workgroup_size {} != {want}",
                        out.metadata.max_flat_workgroup_size
                    ));
                }
                if sp.vgprs > 0 && out.remark.vgprs.unwrap_or(0) < sp.vgprs {
                    inc.push(format!("clobber v{} not counted", sp.vgprs - 1));
                }
                if sp.agprs > 0 && out.remark.agprs.unwrap_or(0) < sp.agprs {
                    inc.push(format!("clobber a{} not counted", sp.agprs - 1));
                }
                // Target::extra_sgprs: an s-clobber above the kernel's own SGPRs plus VCC.
                if sp.vcc && sp.sgprs >= 48 && !sp.scratch && !cfg.processor.has_sgpr_init_bug() {
                    let t = Target::new(&cfg.offload_arch).expect("a configuration of the table");
                    let want = sp.sgprs + t.extra_sgprs(true, false);
                    extra.0 += 1;
                    if out.metadata.sgpr_count == want {
                        extra.1 += 1;
                    } else {
                        inc.push(format!(
                            "s{} + vcc: sgpr_count {}, extra_sgprs says {want}",
                            sp.sgprs, out.metadata.sgpr_count
                        ));
                    }
                }
            }
            row.kernels += 1;
            padded += usize::from(out.padded);
            if out.agrees() {
                row.agree += 1;
            } else {
                disagreements.push(format!(
                    "{} {} [{}]: remark {:?}, model {:?}; resources {:?}",
                    cfg.label(),
                    out.kernel,
                    spec.map(KernelSpec::describe).unwrap_or_default(),
                    out.remark.occupancy,
                    out.model,
                    out.resources
                ));
            }
            if let Ok((_, l)) = out.model {
                *row.limiters.entry(limiter_key(l)).or_default() += 1;
            }
            if !inc.is_empty() {
                row.inconsistent += 1;
                inconsistencies.push(format!(
                    "{} {}: {}",
                    cfg.label(),
                    out.kernel,
                    inc.join("; ")
                ));
            }
        }
    }

    println!("clang: {version}");
    println!(
        "corpus: {} translation units ({compiled_now} compiled now, the rest cached), {} random kernels per unit + hand-picked, seed {:#x}, {:.1} s",
        units.len(),
        o.kernels,
        o.seed,
        started.elapsed().as_secs_f64()
    );
    println!(
        "\n| arch | configs | kernels | agree | metadata/remark cross-check | limiters (model) |"
    );
    println!("|---|---:|---:|---:|---:|---|");
    let (mut total_k, mut total_a, mut total_i) = (0, 0, 0);
    for (name, r) in rows.values() {
        let limiters: Vec<String> = r.limiters.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let check = if r.inconsistent == 0 {
            "ok".to_owned()
        } else {
            format!("{} differ", r.inconsistent)
        };
        println!(
            "| {name} | {} | {} | {}/{} | {check} | {} |",
            r.configs,
            r.kernels,
            r.agree,
            r.kernels,
            limiters.join(", ")
        );
        total_k += r.kernels;
        total_a += r.agree;
        total_i += r.inconsistent;
    }
    let check = if total_i == 0 {
        "ok".to_owned()
    } else {
        format!("{total_i} differ")
    };
    println!(
        "| **total** | {} | {total_k} | **{total_a}/{total_k}** | {check} | |",
        units.len()
    );
    let skipped: Vec<&str> = PROCESSORS
        .iter()
        .filter(|p| p.llvm_since > llvm)
        .map(|p| p.name)
        .collect();
    println!(
        "\nnot compiled (unknown to this clang; modelled from newer LLVM only): {}",
        skipped.join(", ")
    );
    println!("kernels whose VGPR allocation LLVM padded for amdgpu_waves_per_eu (from the descriptor): {padded}");
    println!(
        "Target::extra_sgprs on s-clobber + VCC kernels: {}/{}",
        extra.1, extra.0
    );

    let show = if o.verbose { usize::MAX } else { 25 };
    for (title, list) in [
        ("compile/analysis failures", &failures),
        ("DISAGREEMENTS", &disagreements),
        ("cross-check differences", &inconsistencies),
    ] {
        if !list.is_empty() {
            println!("\n{title} ({}):", list.len());
            for l in list.iter().take(show) {
                println!("  {l}");
            }
        }
    }
    if !failures.is_empty() || !disagreements.is_empty() || !inconsistencies.is_empty() {
        std::process::exit(1);
    }
}
