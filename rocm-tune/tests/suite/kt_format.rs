//! Kernel Tuner cache format: byte-exact round trip, open/torn files, incremental appending,
//! replay import and export of our records.

use std::path::PathBuf;

use rocm_tune::kt::{KtAppender, KtWarning};
use rocm_tune::replay::{KtImport, TableEntry};
use rocm_tune::{
    Budget, EvalError, Evaluator, FailureKind, JsonlCache, KtCache, RandomSampling, RecordedTable,
    ReplayEvaluator, Tuner, Value,
};

/// Written by a script that calls Python's `json.dumps` exactly as Kernel Tuner 1.x does
/// (header with `indent=""` cut before `}\n}`, one `"key": {...},` line per entry, then closed),
/// with a 1.3-style failure (`"time": "CompilationFailedConfig"`) and a 1.4-style one
/// (`"__error__": "RuntimeFailedConfig"`, no `strategy_time`/`framework_time`).
const FIXTURE: &str = include_str!("../fixtures/kt_matmul_cache.json");

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rtc-kt-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[testkit::test]
fn round_trip_is_byte_exact() {
    let (c, warnings) = KtCache::parse(FIXTURE).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(c.device_name, "AMD Instinct MI300X");
    assert_eq!(
        c.tune_params_keys,
        ["block_size_x", "tile", "layout", "use_lds"]
    );
    assert_eq!(c.objective.as_deref(), Some("time"));
    assert_eq!(c.cache.len(), 12);
    let text = c.to_text();
    assert_eq!(
        text, FIXTURE,
        "writer output differs from Python's json.dumps"
    );
    let (again, _) = KtCache::parse(&text).unwrap();
    assert_eq!(again, c);

    let dir = temp_dir("rt");
    let path = dir.join("cache.json");
    c.write(&path).unwrap();
    let (from_file, _) = KtCache::read(&path).unwrap();
    assert_eq!(from_file, c);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), FIXTURE);
}

#[testkit::test]
fn open_files_are_read_like_kernel_tuner_does() {
    let closed = FIXTURE.trim_end();
    // While tuning: trailing comma, no closing brackets.
    let open = format!("{},", &closed[..closed.len() - 3]);
    let (c, w) = KtCache::parse(&open).unwrap();
    assert_eq!(w, vec![KtWarning::WasOpen]);
    assert_eq!(c, KtCache::parse(FIXTURE).unwrap().0);

    // Killed mid-entry: the torn line is dropped, the rest kept.
    let torn = &open[..open.len() - 40];
    let (c, w) = KtCache::parse(torn).unwrap();
    assert!(
        matches!(w.as_slice(), [KtWarning::WasOpen, KtWarning::TornEntry(_)]),
        "{w:?}"
    );
    assert_eq!(c.cache.len(), 11);

    // Header only (no result yet).
    let header_only = c.open_header();
    let (h, _) = KtCache::parse(&header_only).unwrap();
    assert!(h.cache.is_empty());
    assert_eq!(h.tune_params, c.tune_params);

    // Kernel Tuner's own reopening of a closed, empty cache leaves `{,`.
    let reopened_empty = format!("{},", header_only);
    assert!(KtCache::parse(&reopened_empty).unwrap().0.cache.is_empty());

    // Garbage is an error, not a panic.
    assert!(KtCache::parse("").is_err());
    assert!(KtCache::parse("[1, 2]").is_err());
    assert!(KtCache::parse("{\"device_name\": 3, \"cache\": {}}").is_err());
}

#[testkit::test]
fn non_finite_numbers_from_python_are_tolerated() {
    let text = FIXTURE.replacen("\"verification_time\": 0", "\"verification_time\": NaN", 1);
    let (c, w) = KtCache::parse(&text).unwrap();
    assert!(w.contains(&KtWarning::NonFinite(1)));
    assert_eq!(c.cache.len(), 12);
}

#[testkit::test]
fn appender_writes_what_kernel_tuner_writes() {
    let (c, _) = KtCache::parse(FIXTURE).unwrap();
    let dir = temp_dir("append");
    let path = dir.join("cache.json");
    let mut header = c.clone();
    header.cache.clear();
    let mut app = KtAppender::create(&path, &header).unwrap();
    // Mid-run the file is open but readable.
    for (i, (k, v)) in c.cache.iter().enumerate() {
        app.append(k, v).unwrap();
        if i == 4 {
            let (mid, w) = KtCache::read(&path).unwrap();
            assert_eq!(w, vec![KtWarning::WasOpen]);
            assert_eq!(mid.cache.len(), 5);
        }
    }
    app.close().unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), FIXTURE);

    // Reopen a closed file, append one more entry, close: still valid.
    let mut app = KtAppender::reopen(&path).unwrap();
    let mut extra = c.cache["64,1,row,True"].clone();
    extra["use_lds"] = false.into();
    extra["layout"] = "col".into();
    app.append("64,1,col,False", &extra).unwrap();
    app.close().unwrap();
    let (more, w) = KtCache::read(&path).unwrap();
    assert!(w.is_empty());
    assert_eq!(more.cache.len(), 13);

    // Reopening an empty closed cache must not produce Kernel Tuner's `{,`.
    let empty = dir.join("empty.json");
    KtAppender::create(&empty, &header)
        .unwrap()
        .close()
        .unwrap();
    let mut app = KtAppender::reopen(&empty).unwrap();
    app.append("64,1,row,True", &c.cache["64,1,row,True"])
        .unwrap();
    app.close().unwrap();
    let (one, w) = KtCache::read(&empty).unwrap();
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(one.cache.len(), 1);
}

#[testkit::test]
fn replay_from_kernel_tuner_cache() {
    let (c, _) = KtCache::parse(FIXTURE).unwrap();
    let table = RecordedTable::from_kt(
        &c,
        &KtImport {
            feature_keys: vec!["max_abs_err".into()],
            ..KtImport::default()
        },
    )
    .unwrap();
    assert!(table.warnings().is_empty(), "{:?}", table.warnings());
    assert_eq!(table.space().len(), 12);
    assert_eq!(table.failed(), 2);
    let space = table.space();
    let failed = space
        .find_values(&[
            Value::Int(64),
            Value::Int(2),
            Value::from("col"),
            Value::Bool(true),
        ])
        .unwrap();
    assert_eq!(
        table.entry(failed),
        Some(&TableEntry::Failed(FailureKind::Compile))
    );
    let launch = space
        .find_values(&[
            Value::Int(128),
            Value::Int(1),
            Value::from("col"),
            Value::Bool(false),
        ])
        .unwrap();
    assert_eq!(
        table.entry(launch),
        Some(&TableEntry::Failed(FailureKind::Launch))
    );

    let mut ev = ReplayEvaluator::new(&table);
    assert!(matches!(
        ev.evaluate(&space.config(failed)),
        Err(EvalError::Compile(_))
    ));
    let ok = space.id(0).unwrap();
    let m = ev.evaluate(&space.config(ok)).unwrap();
    assert_eq!(m.times.len(), 4);
    let recorded = c.cache["64,1,row,True"]["time"].as_f64().unwrap();
    let mean = m.times.iter().sum::<f64>() / 4.0;
    assert!((mean - recorded).abs() < 1e-12);
    assert!(m.features.contains_key("max_abs_err"));

    // A higher-is-better objective is stored as its reciprocal.
    let gf = RecordedTable::from_kt(
        &c,
        &KtImport {
            objective: Some("GFLOP/s".into()),
            higher_is_better: true,
            ..KtImport::default()
        },
    )
    .unwrap();
    let best_time = table.space().ids().min_by(|a, b| {
        table
            .entry(*a)
            .unwrap()
            .objective()
            .unwrap_or(f64::MAX)
            .total_cmp(&table.entry(*b).unwrap().objective().unwrap_or(f64::MAX))
    });
    let best_gf = gf.space().ids().min_by(|a, b| {
        gf.entry(*a)
            .unwrap()
            .objective()
            .unwrap_or(f64::MAX)
            .total_cmp(&gf.entry(*b).unwrap().objective().unwrap_or(f64::MAX))
    });
    assert_eq!(
        best_time.map(|i| table.space().key(i)),
        best_gf.map(|i| gf.space().key(i))
    );
}

#[testkit::test]
fn our_records_export_to_kernel_tuner_format() {
    let (c, _) = KtCache::parse(FIXTURE).unwrap();
    let table = RecordedTable::from_kt(&c, &KtImport::default()).unwrap();
    let dir = temp_dir("export");
    let mut cache = JsonlCache::open(
        dir.join("run.jsonl"),
        rocm_tune::CacheMeta::for_space(table.space(), Some("matmul_kernel"), None),
    )
    .unwrap();
    let mut ev = ReplayEvaluator::new(&table);
    Tuner::new(table.space(), &mut ev)
        .budget(Budget::evals(12))
        .cache(&mut cache)
        .run(&mut RandomSampling)
        .unwrap();
    let kt = KtCache::from_records(
        table.space(),
        "AMD Instinct MI300X",
        "matmul_kernel",
        c.problem_size.clone(),
        cache.records(),
    );
    let (back, w) = KtCache::parse(&kt.to_text()).unwrap();
    assert!(w.is_empty());
    assert_eq!(back.cache.len(), 12);
    let failed = &back.cache["64,2,col,True"];
    assert_eq!(failed["time"], "CompilationFailedConfig");
    // The exported cache imports back into the same table.
    let again = RecordedTable::from_kt(&back, &KtImport::default()).unwrap();
    assert_eq!(again.failed(), 2);
    assert!((again.optimum() - table.optimum()).abs() < 1e-12);
    for key in back.cache.keys() {
        let e = &back.cache[key];
        for field in [
            "compile_time",
            "verification_time",
            "benchmark_time",
            "strategy_time",
            "framework_time",
            "timestamp",
        ] {
            assert!(e.get(field).is_some(), "{key} lacks {field}");
        }
    }
}

#[testkit::test]
fn kernel_tuner_caches_import_into_ours_and_export_back() {
    let (c, _) = KtCache::parse(FIXTURE).unwrap();
    let table = RecordedTable::from_kt(&c, &KtImport::default()).unwrap();
    let (records, skipped) = c.to_records(table.space());
    assert!(skipped.is_empty(), "{skipped:?}");
    assert_eq!(records.len(), c.cache.len());
    // A resumed run answers every imported configuration from the cache, measuring nothing.
    let dir = temp_dir("import");
    let mut cache = JsonlCache::open(
        dir.join("run.jsonl"),
        rocm_tune::CacheMeta::for_space(table.space(), Some("matmul_kernel"), None),
    )
    .unwrap();
    for r in &records {
        cache.append(r.clone()).unwrap();
    }
    struct Never;
    impl rocm_tune::Evaluator for Never {
        fn evaluate(
            &mut self,
            _: &rocm_tune::Config,
        ) -> Result<rocm_tune::Measurement, rocm_tune::EvalError> {
            panic!("everything should come from the imported cache")
        }
    }
    let r = Tuner::new(table.space(), &mut Never)
        .cache(&mut cache)
        .run(&mut rocm_tune::BruteForce)
        .unwrap();
    assert_eq!(r.cache_hits, table.space().len());
    let best = r.best.unwrap();
    assert!((best.objective - table.optimum()).abs() / table.optimum() < 1e-9);
    // Exported again, the same configurations with the same times and failures.
    let back = KtCache::from_records(
        table.space(),
        &c.device_name,
        &c.kernel_name,
        c.problem_size.clone(),
        cache.records(),
    );
    assert_eq!(back.cache.len(), c.cache.len());
    for (key, e) in &c.cache {
        let b = &back.cache[key];
        match e.get("time").and_then(|t| t.as_f64()) {
            Some(t) => assert!((b["time"].as_f64().unwrap() - t).abs() < 1e-9, "{key}"),
            None => assert!(b["time"].is_string(), "{key}: {b:?}"),
        }
    }
}
