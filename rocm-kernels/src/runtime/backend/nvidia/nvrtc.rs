//! Run-time compilation with NVRTC, for libraries built where nvcc was not available: the build
//! embeds the kernel source (`cuda-source`), and it is compiled here for the device's `sm_XX`.

use std::path::Path;

use cudarc::nvrtc::{self, CompileOptions};

use crate::embedded::Backend;
use crate::runtime::{Result, RuntimeError};

/// The HIP-on-CUDA header, written next to the source so `#include <hip/hip_runtime.h>` works.
const HEADER: &str = include_str!("../../../../include/nvidia/hip/hip_runtime.h");

/// Compile `source` (the text of `name`) to PTX for `arch` (`sm_90`).
pub(crate) fn compile(name: &str, source: &[u8], arch: &str) -> Result<String> {
    // Safety: only attempts to dlopen libnvrtc.
    if !unsafe { nvrtc::sys::is_culib_present() } {
        return Err(RuntimeError::LibraryLoad {
            library: "libnvrtc".into(),
            reason: format!(
                "`{name}` was built without nvcc, so it must be compiled at run time, and NVRTC is \
                 not installed: install the CUDA toolkit or `pip install nvidia-cuda-nvrtc`, or \
                 rebuild with nvcc available so a cubin is embedded"
            ),
        });
    }
    let dir = std::env::temp_dir().join(format!("rocm-kernels-nvrtc-{}", std::process::id()));
    let header_dir = dir.join("hip");
    std::fs::create_dir_all(&header_dir)
        .and_then(|_| std::fs::write(header_dir.join("hip_runtime.h"), HEADER))
        .map_err(|e| RuntimeError::Api {
            backend: Backend::Nvidia,
            call: "nvrtc headers".into(),
            message: format!("cannot write {}: {e}", dir.display()),
        })?;
    let mut include_paths = vec![dir.display().to_string()];
    let env = |v: &str| std::env::var_os(v);
    include_paths.extend(
        crate::nvcc::cuda_include_dirs(&env)
            .iter()
            .map(|d| d.display().to_string()),
    );
    let options = CompileOptions {
        include_paths,
        options: vec![format!("--gpu-architecture={arch}"), "-std=c++17".into()],
        name: Some(
            Path::new(name)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| name.to_string()),
        ),
        ..Default::default()
    };
    let text = String::from_utf8_lossy(source).into_owned();
    nvrtc::compile_ptx_with_opts(text, options)
        .map(|ptx| ptx.to_src())
        .map_err(|e| RuntimeError::Api {
            backend: Backend::Nvidia,
            call: format!("nvrtcCompileProgram({name}, {arch})"),
            message: format!("{e:?}"),
        })
}
