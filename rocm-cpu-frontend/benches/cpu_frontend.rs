//! The cpu build's front end on real translation units: for each kernel source of the runtime's
//! corpus, and for one that also includes `<vector>`, `<algorithm>` and `<cmath>`, the time from
//! the preprocessed text to the kernels and their region forms (scan + region generation; the
//! host compiler's own preprocessing is not counted). Prints a table.
//!
//! `cargo bench -p rocm-cpu-frontend --bench cpu_frontend` (`CXX` picks the compiler,
//! `FRONTEND_ROUNDS` the rounds per unit, default 20).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use rocm_cpu_frontend as cpu;

/// A unit whose kernels are few and small but whose headers are large: what the front end must
/// not spend its time on.
const WITH_STD: &str = "#include <hip/hip_runtime.h>\n#include <vector>\n#include <algorithm>\n\
#include <cmath>\n\
__device__ float warp_sum(float v) {\n\
  for (int o = warpSize / 2; o > 0; o /= 2) v += __shfl_xor(v, o);\n\
  return v;\n\
}\n\
__global__ void reduce(const float* in, float* out, int n) {\n\
  __shared__ float s[256];\n\
  int t = threadIdx.x;\n\
  s[t] = t < n ? std::sqrt(std::fabs(in[t])) : 0.0f;\n\
  __syncthreads();\n\
  float v = warp_sum(s[t]);\n\
  if (t == 0) out[blockIdx.x] = std::max(v, 0.0f);\n\
}\n";

/// The unit as `-E -DRK_SCAN` gives it (without the build's `extern __shared__` rewrite, which
/// changes a declaration or two and is not what is measured).
fn preprocess(cxx: &str, source: &Path, text: &str, dir: &Path) -> String {
    let file = dir.join("unit.cpp");
    std::fs::write(&file, text).expect("write the unit");
    let output = Command::new(cxx)
        .args(["-std=c++17", "-E", "-DRK_SCAN", "-x", "c++"])
        .arg("-I")
        .arg(cpu::cpu_include_dir())
        .arg("-I")
        .arg(source.parent().unwrap_or(Path::new(".")))
        .arg(&file)
        .output()
        .unwrap_or_else(|e| panic!("{cxx}: {e}"));
    assert!(
        output.status.success(),
        "preprocessing {}: {}",
        source.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8 from the preprocessor")
}

/// What the build does with a preprocessed unit before writing the generated code: lex it,
/// find its kernels and their region forms.
fn front_end(preprocessed: &str) -> usize {
    cpu::kernels_of_unit(preprocessed).len()
}

fn main() {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".to_string());
    let rounds: usize = std::env::var("FRONTEND_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(20);
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../rocm-kernels/tests/corpus/kernels");
    let mut sources: Vec<PathBuf> = std::fs::read_dir(&corpus)
        .expect("the runtime's kernel corpus")
        .map(|e| e.expect("a corpus entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "hip"))
        .collect();
    sources.sort();
    let dir = tempfile::tempdir().expect("a temporary folder");
    let mut units: Vec<(String, String)> = sources
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p).expect("read a corpus source");
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, preprocess(&cxx, p, &text, dir.path()))
        })
        .collect();
    let std_src = dir.path().join("with_std.hip");
    units.push((
        "with <vector> <algorithm> <cmath>".into(),
        preprocess(&cxx, &std_src, WITH_STD, dir.path()),
    ));
    println!(
        "{:<36} {:>8} {:>10} {:>11} {:>11}",
        "unit", "lines", "bytes", "median ms", "min ms"
    );
    let mut total = Duration::ZERO;
    for (name, text) in &units {
        let mut times: Vec<Duration> = (0..rounds)
            .map(|_| {
                let start = Instant::now();
                std::hint::black_box(front_end(std::hint::black_box(text)));
                start.elapsed()
            })
            .collect();
        times.sort();
        let median = times[times.len() / 2];
        total += median;
        println!(
            "{:<36} {:>8} {:>10} {:>11.2} {:>11.2}",
            name,
            text.lines().count(),
            text.len(),
            median.as_secs_f64() * 1e3,
            times[0].as_secs_f64() * 1e3
        );
    }
    println!(
        "{:<36} {:>8} {:>10} {:>11.2}",
        "all units (sum of medians)",
        "",
        "",
        total.as_secs_f64() * 1e3
    );
}
