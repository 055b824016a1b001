//! Everything that can stop a kernel build, as values that say what happened and what to do.

use std::path::PathBuf;

use rocm_kernels_core::Backend;

pub use rocm_cpu_frontend::Diagnostic;

/// The first errors, one `  --> file:line: error: ...` line each, and how many more there are.
fn list_diagnostics(diags: &[Diagnostic]) -> String {
    rocm_cpu_frontend::diagnostics::summary(diags)
        .lines()
        .map(|l| {
            if l.starts_with('(') {
                format!("\n  {l}")
            } else {
                format!("\n  --> {l}")
            }
        })
        .collect()
}

/// A compiler that ran and failed on one source: what ran, how it ended and what it said (the
/// payload of [`BuildError::CompileFailed`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileFailure {
    /// The backend whose compiler failed.
    pub backend: Backend,
    /// The source file, crate-relative.
    pub source_file: String,
    /// The targets it compiled for, comma-separated (empty for the cpu backend).
    pub targets: String,
    /// How the compiler exited (`exit status: 1`).
    pub status: String,
    /// The full command line, runnable from a shell.
    pub command: String,
    /// Everything the compiler printed.
    pub output: String,
    /// The located diagnostics found in `output`.
    pub diagnostics: Vec<Diagnostic>,
}

impl std::fmt::Display for CompileFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "failed to compile `{}` for the {} backend",
            self.source_file, self.backend
        )?;
        if !self.targets.is_empty() {
            write!(f, " ({})", self.targets)?;
        }
        write!(
            f,
            " ({}){}\ncommand: {}",
            self.status,
            list_diagnostics(&self.diagnostics),
            self.command,
        )?;
        // The compiler's whole output only when no error could be read out of it: the located
        // errors say it in a few lines, where the output repeats them with context.
        if !self.diagnostics.iter().any(Diagnostic::is_error) {
            write!(f, "\ncompiler output:\n{}", self.output)?;
        }
        Ok(())
    }
}

/// Why `Build::try_compile` failed.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A setting given to the builder, an environment variable or `[package.metadata.rocm]` is wrong.
    #[error("invalid kernel build configuration: {message}")]
    Config {
        /// What is wrong, naming the setting.
        message: String,
    },

    /// No file was given, or a glob matched nothing.
    #[error("{message}")]
    NoSources {
        /// Which glob matched nothing, or that no file was given.
        message: String,
    },

    /// A source file named to the builder does not exist or cannot be read.
    #[error("kernel source `{}` cannot be read: {source}", path.display())]
    SourceUnreadable {
        /// The path as given to the builder.
        path: PathBuf,
        /// Why it could not be read.
        #[source]
        source: std::io::Error,
    },

    /// The `amd` backend was asked for but no ROCm toolchain was found.
    #[error(
        "the `amd` backend needs a ROCm toolchain, and none was found ({searched}).\n\
         Fix: install one (Debian/Ubuntu: `apt install hipcc rocm-device-libs`, or \
         `cargo rocm toolchain install`), or point ROCM_PATH at an install; \
         `cargo rocm doctor` shows what is found and why. To build without it, \
         drop `amd` from the backends (ROCM_BACKENDS=cpu)."
    )]
    ToolchainNotFound {
        /// Where the toolchain was looked for.
        searched: String,
    },

    /// The toolchain's HIP compilers each lack a program they run (a Debian `clang++-19`
    /// without `clang-tools-19` has no `clang-offload-bundler`).
    #[error(
        "the ROCm toolchain {toolchain} has no complete HIP compiler: {details}\n\
         Fix: {fix}; `cargo rocm doctor --backend amd` checks the whole setup. To build \
         without the amd backend, set ROCM_BACKENDS=cpu."
    )]
    IncompleteCompiler {
        /// The toolchain's name and where it lives.
        toolchain: String,
        /// Each compiler tried and the program it lacks.
        details: String,
        /// What to install.
        fix: String,
    },

    /// A compiler that fails on a one-line kernel too: the compiler, not the kernel, is broken.
    #[error(
        "the {backend} compiler cannot build even a one-line kernel, so it is broken rather \
         than your kernels: {source}\n\
         Fix: `cargo rocm doctor --backend {backend}` names what is wrong; to build without \
         this backend, set ROCM_BACKENDS=cpu."
    )]
    BrokenCompiler {
        /// The backend whose compiler is broken.
        backend: Backend,
        /// How the one-line kernel failed.
        #[source]
        source: Box<BuildError>,
    },

    /// A gfx target the toolchain cannot compile for.
    #[error(
        "target `{target}` is not supported by the ROCm toolchain `{toolchain}`: its device \
         libraries cover {covered}.\n\
         Fix: install a newer ROCm toolchain (`cargo rocm toolchain install`, then \
         `cargo rocm doctor` to check it is picked), or drop `{target}` from the targets \
         (ROCM_OFFLOAD_ARCH, `[package.metadata.rocm] targets`, or `Build::offload_arch`)."
    )]
    UnsupportedTarget {
        /// The gfx target asked for.
        target: String,
        /// The toolchain that cannot build for it.
        toolchain: String,
        /// The targets its device libraries do cover.
        covered: String,
    },

    /// A target string that is not a gfx target id (`gfx90a`, `gfx90a:xnack-`).
    #[error(
        "`{target}` is not an AMD GPU target id (expected e.g. `gfx90a`, `gfx1030` or \
         `gfx90a:xnack-`); set targets with ROCM_OFFLOAD_ARCH=gfx90a,gfx1030"
    )]
    InvalidTarget {
        /// The string given as a target.
        target: String,
    },

    /// The compiler could not be started.
    #[error("could not run `{program}`: {source}. Check the toolchain with `cargo rocm doctor`")]
    CompilerSpawn {
        /// The compiler's path.
        program: String,
        /// Why it could not be started.
        #[source]
        source: std::io::Error,
    },

    /// The compiler ran and failed (boxed: it carries the whole compiler output).
    #[error("{0}")]
    CompileFailed(Box<CompileFailure>),

    /// Reading or writing under OUT_DIR failed.
    #[error("{what} `{}`: {source}", path.display())]
    Io {
        /// What was being done (`cannot write`, `cannot read code object`).
        what: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },

    /// A backend failed in a way no other variant describes.
    #[error("{backend} backend: {message}")]
    Backend {
        /// The backend that failed.
        backend: Backend,
        /// What went wrong.
        message: String,
    },

    /// The cpu backend's build failed.
    #[error("cpu backend: {0}")]
    Cpu(#[from] rocm_cpu_frontend::CpuBuildError),
}

impl BuildError {
    pub(crate) fn io(what: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        BuildError::Io {
            what,
            path: path.into(),
            source,
        }
    }

    pub(crate) fn config(message: impl Into<String>) -> Self {
        BuildError::Config {
            message: message.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_say_what_to_do() {
        let e = BuildError::ToolchainNotFound {
            searched: "looked at /opt/rocm".into(),
        }
        .to_string();
        for needle in [
            "needs a ROCm toolchain",
            "looked at /opt/rocm",
            "apt install hipcc rocm-device-libs",
            "ROCM_PATH",
            "cargo rocm doctor",
            "ROCM_BACKENDS=cpu",
        ] {
            assert!(e.contains(needle), "{needle}: {e}");
        }
        let e = BuildError::CompileFailed(Box::new(CompileFailure {
            backend: Backend::Amd,
            source_file: "k/a.hip".into(),
            targets: "gfx90a,gfx1030".into(),
            status: "exit status: 1".into(),
            command: "cd /c && clang++ k/a.hip".into(),
            output: "k/a.hip:3:5: error: boom\n".into(),
            diagnostics: vec![Diagnostic {
                file: "k/a.hip".into(),
                line: 3,
                column: Some(5),
                severity: "error".into(),
                message: "boom".into(),
            }],
        }))
        .to_string();
        // The located errors, then the command; the output, which repeats them, is left out.
        assert_eq!(
            e,
            "failed to compile `k/a.hip` for the amd backend (gfx90a,gfx1030) (exit status: 1)\n  --> k/a.hip:3:5: error: boom\ncommand: cd /c && clang++ k/a.hip"
        );
        // Without a located error, the output is all there is to show.
        let e = BuildError::CompileFailed(Box::new(CompileFailure {
            backend: Backend::Nvidia,
            source_file: "k/a.hip".into(),
            targets: "sm_90".into(),
            status: "signal: 9".into(),
            command: "nvcc k/a.hip".into(),
            output: "Killed\n".into(),
            diagnostics: Vec::new(),
        }))
        .to_string();
        assert!(
            e.ends_with("command: nvcc k/a.hip\ncompiler output:\nKilled\n"),
            "{e}"
        );
    }
}
