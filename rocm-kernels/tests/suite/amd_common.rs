//! Helpers shared by the `amd_*` integration tests: building offload bundles with clang, the
//! stand-in HIP library (`fake_hip.c`) with the C compiler, and `'static` kernel libraries.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use rocm_kernels::library::{CodeObject, KernelDecl, ObjectFormat, ObjectSymbol, ParamDecl};
use rocm_kernels::{Backend, KernelLibrary};

/// Kernels compiled for the tests: an `extern "C"` one, a template instantiation and a plain
/// C++ (mangled) one.
pub const KERNELS_HIP: &str = r#"
#ifndef __global__
#define __global__ __attribute__((global))
#endif
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x()
        + __builtin_amdgcn_workitem_id_x();
  if (i < n) y[i] = a * x[i] + y[i];
}
template <typename T> __global__ void scale(T* p, T s) { p[__builtin_amdgcn_workitem_id_x()] *= s; }
template __global__ void scale<float>(float*, float);
__global__ void plain(int* p) { p[0] = 1; }
"#;

/// `EF_AMDGPU_MACH` values (the low byte of an AMDGPU ELF's `e_flags`).
pub const MACH_GFX90A: u32 = 0x3f;
pub const MACH_GFX1030: u32 = 0x36;

/// The clang that compiles HIP device code into offload bundles: `ROCM_KERNELS_TEST_CLANG`, else
/// `clang++-19`.
pub fn clang() -> String {
    std::env::var("ROCM_KERNELS_TEST_CLANG").unwrap_or_else(|_| "clang++-19".into())
}

/// What [`hip_bundle`] runs: the clang and its offload bundler.
pub const HIP_BUNDLER: testkit::Need = testkit::Need::check(
    "clang 19 with its offload bundler",
    "apt-get install clang-19 clang-tools-19",
    testkit::Kind::Tool,
    || {
        let clang = clang();
        match Command::new(&clang)
            .arg("-print-prog-name=clang-offload-bundler")
            .output()
        {
            Ok(out) if out.status.success() => {
                let bundler = String::from_utf8_lossy(&out.stdout).trim().to_owned();
                if Path::new(&bundler).is_absolute() {
                    Ok(())
                } else {
                    Err(format!("`{clang}` has no clang-offload-bundler"))
                }
            }
            _ => Err(format!("`{clang}` does not run")),
        }
    },
);

/// Compile `source` for `archs` into an offload bundle (device code only, no device libraries).
pub fn hip_bundle(clang: &str, source: &str, archs: &[&str], dir: &Path) -> Vec<u8> {
    let src = dir.join("kernels.hip");
    std::fs::write(&src, source).unwrap();
    let out = dir.join(format!(
        "kernels-{}.bundle",
        archs.join("-").replace(':', "_")
    ));
    let mut command = Command::new(clang);
    command.args([
        "-x",
        "hip",
        "--cuda-device-only",
        "-nogpuinc",
        "-nogpulib",
        "-O1",
        "-c",
    ]);
    for arch in archs {
        command.arg(format!("--offload-arch={arch}"));
    }
    command.arg(&src).arg("-o").arg(&out);
    let result = command.output().unwrap();
    assert!(
        result.status.success(),
        "{command:?} failed:\n{}",
        String::from_utf8_lossy(&result.stderr)
    );
    std::fs::read(&out).unwrap()
}

/// Build `fake_hip.c` with extra `-D` flags into `dir/name`.
pub fn fake_hip(dir: &Path, name: &str, defines: &[&str]) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/amd_fixtures/fake_hip.c");
    let out = dir.join(name);
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let result = Command::new(&cc)
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(&out)
        .args(defines)
        .arg(&source)
        .output()
        .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}`: {e}"));
    assert!(
        result.status.success(),
        "building the fake HIP library failed:\n{}",
        String::from_utf8_lossy(&result.stderr)
    );
    out
}

/// The `e_flags` machine of an AMDGPU ELF.
pub fn elf_mach(elf: &[u8]) -> u32 {
    u32::from_le_bytes(elf[48..52].try_into().unwrap()) & 0xff
}

const SAXPY_PARAMS: &[ParamDecl] = &[
    ParamDecl {
        name: "a",
        type_name: "float",
        size: 4,
        kind: rocm_kernels::library::ParamKind::ByValue,
    },
    ParamDecl {
        name: "x",
        type_name: "const float*",
        size: 8,
        kind: rocm_kernels::library::ParamKind::GlobalBuffer,
    },
    ParamDecl {
        name: "y",
        type_name: "float*",
        size: 8,
        kind: rocm_kernels::library::ParamKind::GlobalBuffer,
    },
    ParamDecl {
        name: "n",
        type_name: "int",
        size: 4,
        kind: rocm_kernels::library::ParamKind::ByValue,
    },
];

/// A kernel library of the AMD code objects in `bundle` (one per target), with every kernel's
/// symbol in each, as a build script embeds them.
pub fn amd_library(name: &str, bundle: &[u8]) -> &'static KernelLibrary {
    let leak = |s: &str| -> &'static str { Box::leak(s.to_string().into_boxed_str()) };
    let split = rocm_code_object::target_objects(bundle).expect("a readable bundle");
    let objects: Vec<CodeObject> = split
        .iter()
        .map(|o| CodeObject {
            backend: Backend::Amd,
            format: ObjectFormat::AmdgpuElf,
            target: leak(&o.target),
            source: "src/kernels.hip",
            bytes: Box::leak(o.elf.clone().into_boxed_slice()),
        })
        .collect();
    let mut kernels: Vec<KernelDecl> = Vec::new();
    for (index, object) in split.iter().enumerate() {
        for k in &object.kernels {
            let kernel_name = rocm_code_object::symbols::kernel_name(&k.name);
            let symbol = ObjectSymbol {
                object: index as u32,
                symbol: leak(&k.name),
            };
            match kernels.iter_mut().find(|d| d.name == kernel_name) {
                Some(d) => {
                    let mut symbols = d.symbols.to_vec();
                    symbols.push(symbol);
                    d.symbols = Box::leak(symbols.into_boxed_slice());
                }
                None => kernels.push(KernelDecl {
                    name: leak(&kernel_name),
                    source: "src/kernels.hip",
                    params: if kernel_name == "saxpy" {
                        SAXPY_PARAMS
                    } else {
                        &[]
                    },
                    symbols: Box::leak(Box::new([symbol])),
                    cpu: None,
                }),
            }
        }
    }
    Box::leak(Box::new(KernelLibrary {
        name: leak(name),
        code_objects: Box::leak(objects.into_boxed_slice()),
        kernels: Box::leak(kernels.into_boxed_slice()),
        globals: &[],
    }))
}
