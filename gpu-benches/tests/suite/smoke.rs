//! Every benchmark of the suite runs on the cpu backend at its reduced sizes and prints its table.

use gpu_benches::benches::ALL;
use gpu_benches::Ctx;
use rocm_bench::BenchTarget;

#[testkit::test]
fn every_benchmark_runs_on_cpu() {
    let target = BenchTarget::new(rocm_bench::target::cpu_device());
    let mut ctx = Ctx::new(target, true).unwrap();
    for (name, run) in ALL {
        ctx.table.clear();
        run(&mut ctx).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            ctx.table.lines().count() >= 2,
            "{name} printed no rows:\n{}",
            ctx.table
        );
    }
}

#[testkit::test]
fn fill_sets_every_element_on_the_device() {
    let target = BenchTarget::new(rocm_bench::target::cpu_device());
    let ctx = Ctx::new(target, true).unwrap();
    // More elements than the grid has threads, so the grid-stride loop wraps.
    let mut buffer = ctx.target.device().alloc::<f64>(100_003).unwrap();
    ctx.fill(&mut buffer, 1.1).unwrap();
    assert!(buffer.to_vec().unwrap().iter().all(|&x| x == 1.1));
}
