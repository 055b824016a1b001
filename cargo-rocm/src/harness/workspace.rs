//! Which test targets are rocm-test harnesses: `[[test]]` entries with `harness = false` in
//! packages that depend on `rocm-test`, found through `cargo metadata` (the `cargo_metadata`
//! crate) and the manifests (cargo metadata does not report `harness`).

use std::path::{Path, PathBuf};

use anyhow::Context;
pub use cargo_metadata::{Metadata, Package};

use crate::exit::CommandError;

/// One package's harness test targets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HarnessTargets {
    pub package: String,
    pub tests: Vec<String>,
    /// What the package calls its rocm-test dependency (`rocm-test`, or its rename): the
    /// prefix of rocm-test's features on cargo's command line (`rocm-test/tune`).
    pub rocm_test: String,
}

/// Run `cargo metadata --no-deps` for the manifest (or the current directory).
pub fn metadata(cargo: &str, manifest_path: Option<&Path>) -> anyhow::Result<Metadata> {
    let mut cmd = cargo_metadata::MetadataCommand::new();
    cmd.cargo_path(cargo).no_deps();
    if let Some(m) = manifest_path {
        cmd.manifest_path(m);
    }
    cmd.exec().map_err(|e| match e {
        cargo_metadata::Error::CargoMetadata { stderr } => CommandError::CargoMetadataFailed {
            stderr: stderr.trim_end().to_owned(),
        }
        .into(),
        cargo_metadata::Error::Io(e) => anyhow::Error::new(e).context(format!(
            "could not run `{cargo} metadata`; is cargo on PATH?"
        )),
        other => CommandError::CargoMetadataUnreadable(other).into(),
    })
}

/// Which packages `cargo test` would test with these selection flags: `-p` names, all members
/// with `--workspace` but those `--exclude` names (or matches, as a glob pattern), else the
/// package whose manifest was given (or is in the current directory), else the workspace's
/// default members.
pub fn selected<'m>(
    meta: &'m Metadata,
    packages: &[String],
    workspace: bool,
    exclude: &[String],
    manifest: &Path,
) -> anyhow::Result<Vec<&'m Package>> {
    let members: Vec<&Package> = meta
        .packages
        .iter()
        .filter(|p| meta.workspace_members.contains(&p.id))
        .collect();
    if !packages.is_empty() {
        return packages
            .iter()
            .map(|name| {
                members
                    .iter()
                    .copied()
                    .find(|p| p.name == name)
                    .ok_or_else(|| {
                        CommandError::NotAMember {
                            package: name.to_string(),
                            members: members.iter().map(|p| p.name.to_string()).collect(),
                        }
                        .into()
                    })
            })
            .collect();
    }
    if workspace {
        return without(members, exclude);
    }
    let manifest = manifest
        .canonicalize()
        .unwrap_or_else(|_| manifest.to_owned());
    if let Some(p) = members.iter().find(|p| {
        p.manifest_path.as_std_path().canonicalize().ok().as_deref() == Some(manifest.as_path())
    }) {
        return Ok(vec![*p]);
    }
    // Older cargo (< 1.71) does not report default members: then every member.
    let defaults: Vec<&Package> = if meta.workspace_default_members.is_available() {
        members
            .iter()
            .copied()
            .filter(|p| meta.workspace_default_members.contains(&p.id))
            .collect()
    } else {
        Vec::new()
    };
    Ok(if defaults.is_empty() {
        members
    } else {
        defaults
    })
}

/// `members` less those `exclude` names or matches; a spec that matches no member is a usage
/// error, so a misspelt one does not go unnoticed.
fn without<'m>(members: Vec<&'m Package>, exclude: &[String]) -> anyhow::Result<Vec<&'m Package>> {
    let mut kept = members.clone();
    for spec in exclude {
        let pattern = glob::Pattern::new(spec).map_err(|reason| CommandError::BadExclude {
            spec: spec.to_string(),
            reason,
        })?;
        if !members.iter().any(|p| pattern.matches(&p.name)) {
            return Err(CommandError::ExcludeMatchesNothing {
                spec: spec.to_string(),
                members: members.iter().map(|p| p.name.to_string()).collect(),
            }
            .into());
        }
        kept.retain(|p| !pattern.matches(&p.name));
    }
    Ok(kept)
}

/// The harness test targets of `package`: `[[test]]` entries with `harness = false`, when the
/// package depends on `rocm-test`.
pub fn harness_targets(package: &Package) -> anyhow::Result<HarnessTargets> {
    let rocm_test = package.dependencies.iter().find(|d| d.name == "rocm-test");
    let uses_rocm_test = rocm_test.is_some();
    let mut tests = Vec::new();
    if uses_rocm_test {
        let text = std::fs::read_to_string(&package.manifest_path).map_err(|reason| {
            CommandError::CannotRead {
                path: package.manifest_path.clone().into(),
                reason,
            }
        })?;
        tests = harness_false_tests(&text).map_err(|e| CommandError::BadFile {
            path: package.manifest_path.clone().into(),
            reason: e.to_string(),
        })?;
        // Only names cargo knows as test targets (a `[[test]]` can be disabled by a feature).
        tests.retain(|t| {
            package
                .targets
                .iter()
                .any(|tg| &tg.name == t && tg.is_test())
        });
    }
    Ok(HarnessTargets {
        package: package.name.to_string(),
        tests,
        rocm_test: rocm_test
            .and_then(|d| d.rename.clone())
            .unwrap_or_else(|| "rocm-test".to_owned()),
    })
}

/// Names of the `[[test]]` targets with `harness = false` in a manifest's text.
pub fn harness_false_tests(manifest: &str) -> Result<Vec<String>, String> {
    let doc: toml::Table = manifest
        .parse()
        .map_err(|e: toml::de::Error| e.to_string())?;
    let Some(tests) = doc.get("test").and_then(|t| t.as_array()) else {
        return Ok(Vec::new());
    };
    Ok(tests
        .iter()
        .filter_map(|t| t.as_table())
        .filter(|t| t.get("harness").and_then(|h| h.as_bool()) == Some(false))
        .filter_map(|t| t.get("name").and_then(|n| n.as_str()).map(str::to_owned))
        .collect())
}

/// The manifest cargo would use: `--manifest-path`, else `Cargo.toml` in the nearest ancestor
/// of the current directory that has one.
pub fn locate_manifest(given: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(m) = given {
        return Ok(m.to_owned());
    }
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    cwd.ancestors()
        .map(|d| d.join("Cargo.toml"))
        .find(|m| m.is_file())
        .ok_or_else(|| CommandError::NoManifest { dir: cwd.clone() }.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit;
    use rocm_protocol::exit::RocmExitCode;

    #[test]
    fn finds_harness_false_tests_only() {
        let m = r#"
            [package]
            name = "k"
            [[test]]
            name = "kernels"
            harness = false
            [[test]]
            name = "plain"
            [[test]]
            name = "other"
            harness = true
        "#;
        assert_eq!(harness_false_tests(m).unwrap(), vec!["kernels".to_owned()]);
        assert!(harness_false_tests("[package]\nname='x'")
            .unwrap()
            .is_empty());
        assert!(harness_false_tests("[[test]").is_err());
    }

    #[test]
    fn exclude_leaves_out_members_of_the_workspace() {
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let meta = metadata(&cargo, Some(&manifest)).unwrap();
        let names = |exclude: &[&str]| {
            let exclude: Vec<String> = exclude.iter().map(|e| e.to_string()).collect();
            selected(&meta, &[], true, &exclude, &manifest)
                .map(|ps| ps.iter().map(|p| p.name.to_string()).collect::<Vec<_>>())
        };
        let all = names(&[]).unwrap();
        assert!(all.contains(&"cargo-rocm".to_owned()) && all.contains(&"rocm-tune".to_owned()));
        let some = names(&["rocm-tune", "rocm-bench*"]).unwrap();
        assert_eq!(some.len() + 3, all.len(), "{some:?}");
        assert!(some.contains(&"cargo-rocm".to_owned()));
        assert!(!some
            .iter()
            .any(|n| n == "rocm-tune" || n.starts_with("rocm-bench")));
        let err = names(&["no-such-crate"]).unwrap_err();
        assert_eq!(exit::code_for(&err), RocmExitCode::USAGE);
        assert!(err.to_string().contains("matches no member"), "{err}");
    }
}
