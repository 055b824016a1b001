//! Where targets and backends come from: the builder, then environment variables, then
//! `[package.metadata.rocm]` in the crate's Cargo.toml, then (targets only) this machine's GPUs.
//!
//! Every environment variable read goes through [`EnvReader`] so the build script can tell cargo
//! to rerun when it changes (`cargo:rerun-if-env-changed`).

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Mutex;

use crate::error::BuildError;
use rocm_kernels_core::Backend;

/// Comma-separated gfx targets, e.g. `gfx90a,gfx1030`.
pub const ENV_OFFLOAD_ARCH: &str = "ROCM_OFFLOAD_ARCH";
/// Comma-separated backends, e.g. `cpu,amd`.
pub const ENV_BACKENDS: &str = "ROCM_BACKENDS";
/// Path of the HIP compiler to use (a clang++ or hipcc), overriding discovery.
pub const ENV_HIP_COMPILER: &str = "ROCM_HIP_COMPILER";
/// Comma-separated NVIDIA targets (`sm_90,sm_80`) for the `nvidia` backend.
pub const ENV_NVIDIA_ARCH: &str = "ROCM_NVIDIA_ARCH";
/// Extra flags for every HIP compile, split on whitespace (like CFLAGS for cc).
pub const ENV_HIPFLAGS: &str = "ROCM_HIPFLAGS";

/// Reads environment variables and remembers which ones were read.
#[derive(Debug, Default)]
pub(crate) struct EnvReader {
    read: Mutex<BTreeSet<String>>,
}

impl EnvReader {
    pub(crate) fn get(&self, name: &str) -> Option<String> {
        self.read
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name.to_string());
        std::env::var(name).ok().filter(|v| !v.trim().is_empty())
    }

    pub(crate) fn names(&self) -> Vec<String> {
        self.read
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect()
    }
}

/// `[package.metadata.rocm]` of the crate being built.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Metadata {
    pub targets: Option<Vec<String>>,
    pub backends: Option<Vec<String>>,
    /// `nvidia-targets = ["sm_90"]`.
    pub nvidia_targets: Option<Vec<String>>,
}

impl Metadata {
    /// Reads `[package.metadata.rocm]` from a Cargo.toml; a missing file or table is empty metadata.
    pub(crate) fn from_manifest(path: &Path) -> Result<Metadata, BuildError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Metadata::default()),
            Err(e) => return Err(BuildError::io("cannot read", path, e)),
        };
        Self::parse(&text).map_err(|m| BuildError::config(format!("{}: {m}", path.display())))
    }

    pub(crate) fn parse(text: &str) -> Result<Metadata, String> {
        let doc: toml::Table = toml::from_str(text).map_err(|e| e.to_string())?;
        let Some(rocm) = doc
            .get("package")
            .and_then(|p| p.get("metadata"))
            .and_then(|m| m.get("rocm"))
        else {
            return Ok(Metadata::default());
        };
        let list = |key: &str| -> Result<Option<Vec<String>>, String> {
            match rocm.get(key) {
                None => Ok(None),
                Some(toml::Value::Array(items)) => items
                    .iter()
                    .map(|v| {
                        v.as_str().map(str::to_string).ok_or_else(|| {
                            format!("[package.metadata.rocm] {key}: expected strings, found `{v}`")
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map(Some),
                Some(toml::Value::String(s)) => Ok(Some(split_list(s))),
                Some(other) => Err(format!(
                    "[package.metadata.rocm] {key}: expected a list of strings, found `{other}`"
                )),
            }
        };
        Ok(Metadata {
            targets: list("targets")?,
            backends: list("backends")?,
            nvidia_targets: match list("nvidia-targets")? {
                Some(t) => Some(t),
                None => list("nvidia_targets")?,
            },
        })
    }
}

/// Splits `a, b,,c` into `[a, b, c]`.
pub(crate) fn split_list(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Where a setting came from, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    Builder,
    Env(&'static str),
    Metadata,
    Detected,
    Default,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Builder => f.write_str("the build script"),
            Origin::Env(v) => write!(f, "${v}"),
            Origin::Metadata => f.write_str("[package.metadata.rocm]"),
            Origin::Detected => f.write_str("this machine's GPUs"),
            Origin::Default => f.write_str("the default"),
        }
    }
}

/// Picks the gfx targets: builder, `ROCM_OFFLOAD_ARCH`, metadata, then `detect()` (called only
/// when nothing else named targets). Duplicates are removed, order kept.
pub(crate) fn resolve_targets(
    builder: &[String],
    env: &EnvReader,
    metadata: &Metadata,
    detect: impl FnOnce() -> Vec<String>,
) -> Result<(Vec<String>, Origin), BuildError> {
    resolve_list(
        builder,
        env,
        ENV_OFFLOAD_ARCH,
        metadata.targets.as_ref(),
        detect,
        validate_target,
    )
}

/// Picks the NVIDIA targets (`sm_90`): builder, `ROCM_NVIDIA_ARCH`, `nvidia-targets` in the
/// metadata, then `detect()` (this machine's NVIDIA GPUs).
pub(crate) fn resolve_nvidia_targets(
    builder: &[String],
    env: &EnvReader,
    metadata: &Metadata,
    detect: impl FnOnce() -> Vec<String>,
) -> Result<(Vec<String>, Origin), BuildError> {
    resolve_list(
        builder,
        env,
        ENV_NVIDIA_ARCH,
        metadata.nvidia_targets.as_ref(),
        detect,
        super::nvidia::validate_target,
    )
}

/// One target list from, in order, the builder, an environment variable, the metadata, then
/// detection; comma lists split, each entry validated, duplicates dropped in order.
fn resolve_list(
    builder: &[String],
    env: &EnvReader,
    var: &'static str,
    metadata: Option<&Vec<String>>,
    detect: impl FnOnce() -> Vec<String>,
    validate: fn(&str) -> Result<(), BuildError>,
) -> Result<(Vec<String>, Origin), BuildError> {
    let (raw, origin) = if !builder.is_empty() {
        (builder.to_vec(), Origin::Builder)
    } else if let Some(v) = env.get(var) {
        (split_list(&v), Origin::Env(var))
    } else if let Some(t) = metadata.filter(|t| !t.is_empty()) {
        (t.clone(), Origin::Metadata)
    } else {
        (detect(), Origin::Detected)
    };
    let mut out: Vec<String> = Vec::new();
    for t in raw.iter().flat_map(|t| split_list(t)) {
        validate(&t)?;
        if !out.contains(&t) {
            out.push(t);
        }
    }
    Ok((out, origin))
}

/// Checks a target id: `gfx` + hex digits, then optional `:feature+` / `:feature-` parts.
pub(crate) fn validate_target(t: &str) -> Result<(), BuildError> {
    let mut parts = t.split(':');
    let proc_ok = parts.next().is_some_and(|p| {
        p.strip_prefix("gfx")
            .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_hexdigit()))
    });
    let features_ok = parts.all(|f| {
        f.len() > 1
            && (f.ends_with('+') || f.ends_with('-'))
            && f[..f.len() - 1].chars().all(|c| c.is_ascii_alphanumeric())
    });
    if proc_ok && features_ok {
        Ok(())
    } else {
        Err(BuildError::InvalidTarget {
            target: t.to_string(),
        })
    }
}

/// The processor part of a target id: `gfx90a:xnack-` → `gfx90a`.
pub(crate) fn processor(target: &str) -> &str {
    target.split(':').next().unwrap_or(target)
}

/// Picks the backends: builder, `ROCM_BACKENDS`, metadata, else `cpu` plus `amd` when
/// `amd_available` says a ROCm toolchain is installed.
pub(crate) fn resolve_backends(
    builder: &[Backend],
    env: &EnvReader,
    metadata: &Metadata,
    amd_available: impl FnOnce() -> bool,
    nvcc_available: impl FnOnce() -> bool,
) -> Result<(Vec<Backend>, Origin), BuildError> {
    let parse = |items: Vec<String>, origin: Origin| -> Result<Vec<Backend>, BuildError> {
        items
            .iter()
            .map(|s| {
                s.parse::<Backend>()
                    .map_err(|e| BuildError::config(format!("{e} (from {origin})")))
            })
            .collect()
    };
    let (mut list, origin) = if !builder.is_empty() {
        (builder.to_vec(), Origin::Builder)
    } else if let Some(v) = env.get(ENV_BACKENDS) {
        let o = Origin::Env(ENV_BACKENDS);
        (parse(split_list(&v), o)?, o)
    } else if let Some(b) = metadata.backends.clone().filter(|b| !b.is_empty()) {
        (parse(b, Origin::Metadata)?, Origin::Metadata)
    } else {
        let mut d = vec![Backend::Cpu];
        if amd_available() {
            d.push(Backend::Amd);
        }
        if nvcc_available() {
            d.push(Backend::Nvidia);
        }
        (d, Origin::Default)
    };
    list.sort();
    list.dedup();
    Ok((list, origin))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_lists_and_strings() {
        let m = Metadata::parse(
            "[package]\nname='x'\n[package.metadata.rocm]\ntargets=['gfx90a','gfx1030']\nbackends='cpu, amd'\n",
        )
        .unwrap();
        assert_eq!(m.targets.unwrap(), ["gfx90a", "gfx1030"]);
        assert_eq!(m.backends.unwrap(), ["cpu", "amd"]);
        assert_eq!(
            Metadata::parse("[package]\nname='x'\n").unwrap(),
            Metadata::default()
        );
        assert!(Metadata::parse("[package.metadata.rocm]\ntargets=3\n")
            .unwrap_err()
            .contains("expected a list"));
    }

    #[test]
    fn target_ids() {
        for ok in [
            "gfx90a",
            "gfx1030",
            "gfx90a:xnack-",
            "gfx90a:sramecc+:xnack-",
        ] {
            validate_target(ok).unwrap();
        }
        for bad in ["sm_90", "gfx", "gfx90a:xnack", "gfxzz", "90a"] {
            assert!(validate_target(bad).is_err(), "{bad}");
        }
        assert_eq!(processor("gfx90a:xnack-"), "gfx90a");
    }

    #[test]
    fn builder_targets_win_and_detection_is_last() {
        let env = EnvReader::default();
        let meta = Metadata {
            targets: Some(vec!["gfx1030".into()]),
            ..Metadata::default()
        };
        let (t, o) = resolve_targets(
            &["gfx90a,gfx1030".into(), "gfx90a".into()],
            &env,
            &meta,
            || panic!("must not detect"),
        )
        .unwrap();
        assert_eq!(
            (t, o),
            (vec!["gfx90a".into(), "gfx1030".into()], Origin::Builder)
        );
        let (t, o) =
            resolve_targets(&[], &env, &Metadata::default(), || vec!["gfx1100".into()]).unwrap();
        // Only meaningful when the test environment does not set ROCM_OFFLOAD_ARCH.
        if std::env::var(ENV_OFFLOAD_ARCH).is_err() {
            assert_eq!((t, o), (vec!["gfx1100".into()], Origin::Detected));
        }
        assert!(env.names().contains(&ENV_OFFLOAD_ARCH.to_string()));
    }

    #[test]
    fn nvidia_targets_come_from_the_builder_env_metadata_then_detection() {
        let meta = Metadata::parse(
            "[package]\nname = \"x\"\n[package.metadata.rocm]\nnvidia-targets = [\"sm_90\", \"sm_80\"]\n",
        )
        .unwrap();
        assert_eq!(
            meta.nvidia_targets,
            Some(vec!["sm_90".to_string(), "sm_80".to_string()])
        );
        if std::env::var(ENV_NVIDIA_ARCH).is_ok() {
            return;
        }
        let env = EnvReader::default();
        let (t, o) = resolve_nvidia_targets(&["sm_89".into()], &env, &meta, Vec::new).unwrap();
        assert_eq!((t, o), (vec!["sm_89".to_string()], Origin::Builder));
        let (t, o) = resolve_nvidia_targets(&[], &env, &meta, Vec::new).unwrap();
        assert_eq!(
            (t, o),
            (
                vec!["sm_90".to_string(), "sm_80".to_string()],
                Origin::Metadata
            )
        );
        let (t, o) =
            resolve_nvidia_targets(&[], &env, &Metadata::default(), || vec!["sm_90".into()])
                .unwrap();
        assert_eq!((t, o), (vec!["sm_90".to_string()], Origin::Detected));
        assert!(resolve_nvidia_targets(&["gfx90a".into()], &env, &meta, Vec::new).is_err());
    }

    #[test]
    fn default_backends_follow_toolchain() {
        if std::env::var(ENV_BACKENDS).is_ok() {
            return;
        }
        let env = EnvReader::default();
        let (b, _) = resolve_backends(&[], &env, &Metadata::default(), || false, || false).unwrap();
        assert_eq!(b, [Backend::Cpu]);
        let (b, _) = resolve_backends(&[], &env, &Metadata::default(), || true, || false).unwrap();
        assert_eq!(b, [Backend::Cpu, Backend::Amd]);
        let (b, _) = resolve_backends(&[], &env, &Metadata::default(), || false, || true).unwrap();
        assert_eq!(b, [Backend::Cpu, Backend::Nvidia]);
        let meta = Metadata {
            backends: Some(vec!["amd".into(), "amd".into()]),
            ..Metadata::default()
        };
        let (b, o) = resolve_backends(&[], &env, &meta, || true, || false).unwrap();
        assert_eq!((b, o), (vec![Backend::Amd], Origin::Metadata));
        let bad = Metadata {
            backends: Some(vec!["tpu".into()]),
            ..Metadata::default()
        };
        assert!(resolve_backends(&[], &env, &bad, || true, || false).is_err());
    }
}
