//! Issue 26: NVRTC compiles what nvcc compiles. A crate built where nvcc is missing embeds its
//! kernels as source and NVRTC compiles them at load time; a kernel nvcc took and NVRTC refuses
//! fails every trial on the GPU (`identifier "INFINITY" is undefined`). The corpus
//! (`tests/hipcc-corpus/*.hip`, each saying whether it compiles) holds what hipcc's
//! `hip_runtime.h` gives kernels without an include of theirs — `<cmath>`'s macros, POSIX's
//! `M_PI`, `<cfloat>`, `<climits>`, `<cstdint>`, `std::min`/`numeric_limits`/`<cmath>` overloads,
//! `printf`, `assert` — and the standard headers kernels do include. Each file is compiled by
//! nvcc (to PTX) and by NVRTC, here, without a GPU; any difference fails, and so does a file
//! both refuse (or take) against its expectation. `the_corpus_is_what_hipcc_compiles` holds the
//! corpus itself to hipcc.

use std::path::{Path, PathBuf};

use rocm_toolkit::nvcc::{self, NvccJob};

use crate::nvidia_backend::{NVCC, NVRTC};

/// Every corpus file: path, text, and whether it should compile (`// expect: compiles` or
/// `// expect: error` on its first line).
fn corpus() -> Vec<(PathBuf, String, bool)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hipcc-corpus");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "hip"))
        .collect();
    files.sort();
    assert!(files.len() >= 7, "the corpus is in {}", dir.display());
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let expect = match text.lines().next() {
                Some("// expect: compiles") => true,
                Some("// expect: error") => false,
                other => panic!("{}: first line {other:?}", path.display()),
            };
            (path, text, expect)
        })
        .collect()
}

/// The first error line of a compiler's output, for the table.
fn first_error(output: &str) -> String {
    output
        .lines()
        .find(|l| l.contains("error"))
        .unwrap_or("(no error line)")
        .trim()
        .to_string()
}

/// A corpus file, whether it should compile, and what two compilers made of it (Err: output).
type Outcome = (PathBuf, bool, Result<(), String>, Result<(), String>);

/// A row per file whose compilers disagree with each other or with the file's expectation.
fn differences(results: &[Outcome]) -> Vec<String> {
    let word = |r: &Result<(), String>| match r {
        Ok(()) => "compiles".to_string(),
        Err(e) => format!("error: {}", first_error(e)),
    };
    results
        .iter()
        .filter(|(_, expect, a, b)| a.is_ok() != b.is_ok() || a.is_ok() != *expect)
        .map(|(path, expect, a, b)| {
            format!(
                "{} (expected to {}):\n    first: {}\n    second: {}",
                path.file_name().unwrap().to_string_lossy(),
                if *expect { "compile" } else { "fail" },
                word(a),
                word(b)
            )
        })
        .collect()
}

#[testkit::test(needs = [NVCC, NVRTC])]
fn nvrtc_compiles_what_nvcc_compiles() {
    let env = |v: &str| std::env::var_os(v);
    let nvcc = nvcc::find_nvcc(&env).expect("the test's needs say nvcc is here");
    let dir = tempfile::tempdir().unwrap();
    let mut results = Vec::new();
    for (path, text, expect) in corpus() {
        let out = dir.path().join("out.ptx");
        let job = NvccJob {
            source: &path,
            arch: "compute_90",
            output: &out,
            include_dirs: &[],
            defines: &[],
            flags: &[],
            opt_level: 3,
            depfile: None,
        };
        let by_nvcc = nvcc::compile(&nvcc, &job).map(|_| ()).map_err(|e| e.output);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let by_nvrtc = rocm_kernels::runtime::rtc::nvidia::compile_at_run_time(
            &name,
            text.as_bytes(),
            "sm_90",
            &[],
            &[],
        )
        .map(|_| ())
        .map_err(|e| e.to_string());
        results.push((path, expect, by_nvcc, by_nvrtc));
    }
    let diff = differences(&results);
    assert!(
        diff.is_empty(),
        "nvcc (first) and NVRTC (second) differ on {} of {} corpus files:\n{}",
        diff.len(),
        results.len(),
        diff.join("\n")
    );
}

const HIPCC: testkit::Need = testkit::needs::AMD_HIPCC;

/// The corpus is what hipcc compiles (for gfx90a, device code only): what it promises NVRTC
/// must do is what a HIP programmer gets from hipcc.
#[testkit::test(needs = [HIPCC])]
fn the_corpus_is_what_hipcc_compiles() {
    let dir = tempfile::tempdir().unwrap();
    let mut results = Vec::new();
    for (path, _, expect) in corpus() {
        let out = std::process::Command::new("hipcc")
            .args([
                "-x",
                "hip",
                "--offload-arch=gfx90a",
                "--cuda-device-only",
                "-c",
            ])
            .arg(&path)
            .arg("-o")
            .arg(dir.path().join("out.o"))
            .output()
            .unwrap();
        let by_hipcc = if out.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        };
        // Compared with the expectation only.
        let expected = if expect { Ok(()) } else { Err(String::new()) };
        results.push((path, expect, by_hipcc, expected));
    }
    let diff = differences(&results);
    assert!(
        diff.is_empty(),
        "hipcc disagrees with the corpus on:\n{}",
        diff.join("\n")
    );
}
