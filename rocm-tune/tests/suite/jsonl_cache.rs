//! Our append-only cache: resume after a kill, concurrent appenders (threads and processes),
//! merging.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rocm_tune::cache::{self, merge, CacheWarning};
use rocm_tune::{
    synthetic, Budget, CacheMeta, CacheRecord, Config, EvalError, Evaluator, Features, JsonlCache,
    Measurement, Objective, RandomSampling, RecordedTable, ReplayEvaluator, SearchSpace,
    SimulatedAnnealing, Strategy, Tuner, Warning,
};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rtc-jsonl-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Counts calls to the wrapped evaluator.
struct Counting<'a> {
    inner: ReplayEvaluator<'a>,
    calls: usize,
}

impl Evaluator for Counting<'_> {
    fn evaluate(&mut self, config: &Config) -> Result<Measurement, EvalError> {
        self.calls += 1;
        self.inner.evaluate(config)
    }
}

fn run(
    table: &RecordedTable,
    cache: Option<&mut JsonlCache>,
    strategy: &mut dyn Strategy,
    budget: usize,
) -> (rocm_tune::TuneResult, usize) {
    let mut ev = Counting {
        inner: ReplayEvaluator::new(table),
        calls: 0,
    };
    let mut t = Tuner::new(table.space(), &mut ev)
        .budget(Budget::evals(budget))
        .seed(42);
    if let Some(c) = cache {
        t = t.cache(c);
    }
    let r = t.run(strategy).unwrap();
    (r, ev.calls)
}

#[testkit::test]
fn resume_after_kill_mid_line_loses_nothing_measured() {
    let table = synthetic::matmul_table(3);
    let dir = temp_dir("resume");
    let path = dir.join("run.jsonl");
    let meta = CacheMeta::for_space(table.space(), Some("matmul"), Some("synthetic"));

    for strategy in [
        Box::new(RandomSampling) as Box<dyn Strategy>,
        Box::new(SimulatedAnnealing::default()),
    ] {
        let mut strategy = strategy;
        let _ = std::fs::remove_file(&path);
        // The uninterrupted reference run.
        let (reference, _) = run(&table, None, strategy.as_mut(), 40);

        // A run that records everything...
        {
            let mut c = JsonlCache::open(&path, meta.clone()).unwrap();
            run(&table, Some(&mut c), strategy.as_mut(), 40);
        }
        // ...then "killed" while writing record 26: keep the meta line, 25 records and half
        // of the next line.
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        assert_eq!(lines.len(), 41);
        let keep: String = lines[..26].concat();
        let torn = &lines[26][..lines[26].len() / 2];
        std::fs::write(&path, format!("{keep}{torn}")).unwrap();

        let contents = cache::read(&path).unwrap();
        assert_eq!(contents.records.len(), 25);
        assert!(matches!(
            contents.warnings.as_slice(),
            [CacheWarning::TornTail { line: 27, .. }]
        ));

        // Resume: same seed, same budget.
        let mut c = JsonlCache::open(&path, meta.clone()).unwrap();
        let (resumed, calls) = run(&table, Some(&mut c), strategy.as_mut(), 40);
        assert_eq!(
            calls, 15,
            "only the configurations lost to the kill are measured again"
        );
        assert_eq!(resumed.cache_hits, 25);
        assert!(resumed
            .warnings
            .iter()
            .any(|w| matches!(w, Warning::Cache(CacheWarning::TornTail { .. }))));
        let ids = |r: &rocm_tune::TuneResult| r.trace.iter().map(|t| t.id).collect::<Vec<_>>();
        assert_eq!(ids(&resumed), ids(&reference), "{}", strategy.name());
        assert_eq!(
            resumed.best.as_ref().map(|b| b.id),
            reference.best.as_ref().map(|b| b.id)
        );

        // The repaired file holds all 40 records; the torn fragment stays an ignored line.
        let after = cache::read(&path).unwrap();
        assert_eq!(after.records.len(), 40);
        assert!(matches!(
            after.warnings.as_slice(),
            [CacheWarning::CorruptLine { line: 27, .. }]
        ));

        // A third run is answered entirely from the cache.
        let mut c = JsonlCache::open(&path, meta.clone()).unwrap();
        let (third, calls) = run(&table, Some(&mut c), strategy.as_mut(), 40);
        assert_eq!(calls, 0);
        assert_eq!(ids(&third), ids(&reference));
    }
}

fn big_record(space: &SearchSpace, i: usize, writer: usize) -> CacheRecord {
    let id = space.id(i % space.len()).unwrap();
    // ~1.5 KB lines make interleaving likely if writes were not atomic.
    let times: Vec<f64> = (0..80)
        .map(|k| 1.0 + (writer * 1000 + i * 10 + k) as f64 * 1e-6)
        .collect();
    let mut features = Features::new();
    features.insert("writer".into(), writer as f64);
    features.insert("seq".into(), i as f64);
    CacheRecord::new(space, id, times, None, features)
}

fn check_appends(path: &Path, writers: usize, per_writer: usize) {
    let c = cache::read(path).unwrap();
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    assert_eq!(c.records.len(), writers * per_writer);
    for w in 0..writers {
        let seqs: Vec<f64> = c
            .records
            .iter()
            .filter(|r| r.features["writer"] == w as f64)
            .map(|r| r.features["seq"])
            .collect();
        // Each writer's records are all there, in its own order.
        assert_eq!(seqs, (0..per_writer).map(|i| i as f64).collect::<Vec<_>>());
    }
}

#[testkit::test]
fn concurrent_thread_appenders_do_not_interleave() {
    let space = synthetic::matmul_space();
    let dir = temp_dir("threads");
    let path = dir.join("shared.jsonl");
    let meta = CacheMeta::for_space(&space, None, None);
    std::thread::scope(|s| {
        for w in 0..4 {
            let (space, path, meta) = (&space, &path, meta.clone());
            s.spawn(move || {
                let mut c = JsonlCache::open(path, meta).unwrap();
                for i in 0..150 {
                    c.append(big_record(space, i, w)).unwrap();
                }
            });
        }
    });
    check_appends(&path, 4, 150);
}

const CHILD_PATH: &str = "ROCM_TUNE_CHILD_CACHE";
const CHILD_ID: &str = "ROCM_TUNE_CHILD_ID";

/// Not a test of its own: the body of a child process spawned by
/// `concurrent_process_appenders_do_not_interleave` (does nothing when run normally).
#[testkit::test]
fn child_appender() {
    let (Ok(path), Ok(id)) = (std::env::var(CHILD_PATH), std::env::var(CHILD_ID)) else {
        return;
    };
    let space = synthetic::matmul_space();
    let w: usize = id.parse().unwrap();
    let mut c = JsonlCache::open(&path, CacheMeta::for_space(&space, None, None)).unwrap();
    for i in 0..200 {
        c.append(big_record(&space, i, w)).unwrap();
    }
}

#[testkit::test]
fn concurrent_process_appenders_do_not_interleave() {
    let dir = temp_dir("procs");
    let path = dir.join("shared.jsonl");
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..2)
        .map(|w| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "jsonl_cache::child_appender",
                    "--test-threads=1",
                    "--quiet",
                ])
                .env(CHILD_PATH, &path)
                .env(CHILD_ID, w.to_string())
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    check_appends(&path, 2, 200);
}

#[testkit::test]
fn appending_after_a_torn_tail_keeps_the_new_record_intact() {
    let space = synthetic::matmul_space();
    let dir = temp_dir("torn");
    let path = dir.join("c.jsonl");
    let meta = CacheMeta::for_space(&space, None, None);
    {
        let mut c = JsonlCache::open(&path, meta.clone()).unwrap();
        c.append(big_record(&space, 0, 0)).unwrap();
    }
    use std::io::Write;
    let mut f = OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(b"{\"type\":\"result\",\"key\":\"16,").unwrap();
    drop(f);
    let mut c = JsonlCache::open(&path, meta).unwrap();
    assert!(matches!(c.warnings(), [CacheWarning::TornTail { .. }]));
    c.append(big_record(&space, 1, 0)).unwrap();
    let after = cache::read(&path).unwrap();
    assert_eq!(after.records.len(), 2);
    assert!(matches!(
        after.warnings.as_slice(),
        [CacheWarning::CorruptLine { .. }]
    ));
}

#[testkit::test]
fn merge_keeps_conflicts_and_drops_exact_duplicates() {
    let table = synthetic::matmul_table(5);
    let space = table.space();
    let dir = temp_dir("merge");
    let (a, b, out) = (
        dir.join("a.jsonl"),
        dir.join("b.jsonl"),
        dir.join("merged.jsonl"),
    );
    let meta = CacheMeta::for_space(space, Some("matmul"), None);
    // find two valid configurations
    let valid: Vec<_> = space
        .ids()
        .filter(|&id| table.entry(id).and_then(|e| e.objective()).is_some())
        .take(3)
        .collect();
    let shared = CacheRecord::new(space, valid[0], vec![1.0, 1.0], None, Features::new());
    {
        let mut ca = JsonlCache::open(&a, meta.clone()).unwrap();
        ca.append(shared.clone()).unwrap();
        ca.append(CacheRecord::new(
            space,
            valid[1],
            vec![2.0, 2.2],
            None,
            Features::new(),
        ))
        .unwrap();
        let mut cb = JsonlCache::open(&b, meta.clone()).unwrap();
        cb.append(shared.clone()).unwrap(); // the same line (e.g. a copied cache)
        cb.append(CacheRecord::new(
            space,
            valid[1],
            vec![3.0, 3.2],
            None,
            Features::new(),
        ))
        .unwrap(); // a conflicting measurement of the same configuration
        cb.append(CacheRecord::new(
            space,
            valid[2],
            vec![4.0],
            None,
            Features::new(),
        ))
        .unwrap();
    }
    let report = merge(&[&a, &b], &out).unwrap();
    assert_eq!(report.records_read, 5);
    assert_eq!(report.duplicates_dropped, 1);
    assert_eq!(report.records_written, 4);
    assert_eq!(report.conflicting_keys, 1);
    let merged = cache::read(&out).unwrap();
    assert!(merged.warnings.is_empty());
    assert_eq!(merged.meta.as_ref(), Some(&meta));
    let conflict: Vec<_> = merged
        .records
        .iter()
        .filter(|r| r.key == space.key(valid[1]))
        .collect();
    assert_eq!(conflict.len(), 2, "both measurements are kept");

    // Pooled in a table: the conflicting samples are combined, not overwritten.
    let t = RecordedTable::from_jsonl(&merged, Objective::Mean).unwrap();
    let id = t.space().find_config(&space.config(valid[1])).unwrap();
    let e = t.entry(id).unwrap();
    assert!((e.objective().unwrap() - 2.6).abs() < 1e-12);

    // Merging in place works too, and caches for other parameters are refused.
    merge(&[&out, &a], &out).unwrap();
    let other = dir.join("other.jsonl");
    let small = SearchSpace::builder().param("x", [1, 2]).build().unwrap();
    JsonlCache::open(&other, CacheMeta::for_space(&small, None, None)).unwrap();
    assert!(merge(&[&a, &other], &dir.join("bad.jsonl")).is_err());
}
