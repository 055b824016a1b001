//! Prints the score table of every strategy on a recorded table.
//!
//! ```text
//! cargo run --release --example score                      # synthetic matmul space
//! cargo run --release --example score -- --seeds 50 --budgets 20,50,100
//! cargo run --release --example score -- --kt cache.json   # a Kernel Tuner brute-force cache
//! cargo run --release --example score -- --jsonl run.jsonl # our cache
//! cargo run --release --example score -- --json            # machine-readable output
//! ```

use std::process::ExitCode;

use rocm_tune::replay::KtImport;
use rocm_tune::score::{run_scores, ScoreConfig, StrategyFactory};
use rocm_tune::strategy::{by_name, default_strategies};
use rocm_tune::{
    cache, synthetic, KtCache, Objective, RandomSampling, RecordedTable, RegressionPrune,
    StabilityGate,
};

fn usage() -> ExitCode {
    eprintln!(
        "usage: score [--seeds N] [--budgets A,B,..] [--table-seed S] [--kt FILE | --jsonl FILE] \
         [--features k1,k2] [--no-gating] [--json]"
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let mut cfg = ScoreConfig::default();
    let (mut table_seed, mut kt, mut jsonl, mut json) = (1u64, None, None, false);
    let mut features: Vec<String> = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next();
        match a.as_str() {
            "--seeds" => match val().and_then(|v| v.parse::<u64>().ok()) {
                Some(n) => cfg.seeds = (0..n).collect(),
                None => return usage(),
            },
            "--budgets" => match val().map(|v| {
                v.split(',')
                    .map(str::parse)
                    .collect::<Result<Vec<usize>, _>>()
            }) {
                Some(Ok(b)) if !b.is_empty() => cfg.budgets = b,
                _ => return usage(),
            },
            "--table-seed" => match val().and_then(|v| v.parse().ok()) {
                Some(s) => table_seed = s,
                None => return usage(),
            },
            "--kt" => kt = val(),
            "--jsonl" => jsonl = val(),
            "--features" => {
                features = val()
                    .map(|v| v.split(',').map(String::from).collect())
                    .unwrap_or_default()
            }
            "--no-gating" => cfg.stability = StabilityGate::disabled(),
            "--json" => json = true,
            _ => return usage(),
        }
    }

    let table = if let Some(path) = kt {
        let (c, warnings) = match KtCache::read(&path) {
            Ok(x) => x,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        };
        for w in warnings {
            eprintln!("warning: {path}: {w}");
        }
        let opts = KtImport {
            feature_keys: features,
            ..KtImport::default()
        };
        RecordedTable::from_kt(&c, &opts)
    } else if let Some(path) = jsonl {
        match cache::read(std::path::Path::new(&path)) {
            Ok(c) => RecordedTable::from_jsonl(&c, Objective::Mean),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        Ok(synthetic::matmul_table(table_seed))
    };
    let table = match table {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    for w in table.warnings() {
        eprintln!("warning: {w}");
    }

    let names: Vec<String> = default_strategies().iter().map(|s| s.name()).collect();
    let mut factories: Vec<StrategyFactory> = names
        .into_iter()
        .map(|n| -> StrategyFactory {
            Box::new(move || by_name(&n).unwrap_or_else(|| Box::new(RandomSampling)))
        })
        .collect();
    // Regression-and-prune without compile-only queries, to show what they contribute.
    factories.push(Box::new(|| Box::new(RegressionPrune::params_only())));
    match run_scores(&table, &factories, &cfg) {
        Ok(t) if json => match serde_json::to_string_pretty(&t) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        },
        Ok(t) => print!("{t}"),
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
