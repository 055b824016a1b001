//! The cargo options of the commands that run cargo (`build`, `test`, `tune`, `bench`,
//! `profile`): one definition, spelled and passed on as cargo spells them, so every command
//! takes the same flags and forwards them the same way. Each command flattens [`CargoFlags`]
//! (`#[command(flatten)]`) and asks it for cargo's arguments.

use std::ffi::{OsStr, OsString};
use std::fmt::Debug;
use std::path::{Path, PathBuf};

use clap::ValueEnum;

use crate::cli::GlobalArgs;
use crate::harness::workspace::{self, Metadata, Package};

const PACKAGE_SELECTION: &str = "Package Selection";
const FEATURE_SELECTION: &str = "Feature Selection";
const COMPILATION: &str = "Compilation Options";
const MANIFEST: &str = "Manifest Options";

/// cargo's options, as `cargo build --help` groups them. `P` is how the command picks the
/// build profile: [`Release`] (`-r, --release`) everywhere but `bench`, whose cargo command
/// has no `--release` ([`BenchProfile`]).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CargoFlags<P: BuildProfile = Release> {
    /// Package to select (repeatable; see `cargo help pkgid`)
    #[arg(short, long = "package", value_name = "SPEC", help_heading = PACKAGE_SELECTION)]
    pub package: Vec<String>,

    /// Select all packages in the workspace
    #[arg(long, help_heading = PACKAGE_SELECTION)]
    pub workspace: bool,

    /// Exclude packages from --workspace (repeatable; names or glob patterns)
    #[arg(long, value_name = "SPEC", requires = "workspace", help_heading = PACKAGE_SELECTION)]
    pub exclude: Vec<String>,

    /// Space or comma separated list of features to activate
    #[arg(short = 'F', long, value_name = "FEATURES", help_heading = FEATURE_SELECTION)]
    pub features: Vec<String>,

    /// Activate all available features
    #[arg(long, help_heading = FEATURE_SELECTION)]
    pub all_features: bool,

    /// Do not activate the `default` feature
    #[arg(long, help_heading = FEATURE_SELECTION)]
    pub no_default_features: bool,

    #[command(flatten)]
    pub profile: P,

    /// Directory for all generated artifacts
    #[arg(long, value_name = "DIRECTORY", help_heading = COMPILATION)]
    pub target_dir: Option<PathBuf>,

    /// Assert that `Cargo.lock` will remain unchanged
    #[arg(long, help_heading = MANIFEST)]
    pub locked: bool,

    /// Run without accessing the network
    #[arg(long, help_heading = MANIFEST)]
    pub offline: bool,

    /// Equivalent to specifying both --locked and --offline
    #[arg(long, help_heading = MANIFEST)]
    pub frozen: bool,
}

/// How a command's options choose cargo's build profile.
pub trait BuildProfile: clap::Args + clap::FromArgMatches + Clone + Debug + Default {
    /// cargo's arguments for the choice (none for cargo's default profile).
    fn cargo_args(&self) -> &'static [&'static str];
}

/// `-r, --release`, as `cargo build`, `cargo test` and `cargo run` take it.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct Release {
    /// Build artifacts in release mode, with optimizations
    #[arg(short, long, help_heading = COMPILATION)]
    pub release: bool,
}

impl BuildProfile for Release {
    fn cargo_args(&self) -> &'static [&'static str] {
        if self.release {
            &["--release"]
        } else {
            &[]
        }
    }
}

/// `cargo bench` builds with the `bench` profile (optimised, like release) and has no
/// `--release`; `--debug` picks `dev` instead.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct BenchProfile {
    /// Build with the dev profile instead of bench (faster builds, slower kernels on cpu)
    #[arg(long, help_heading = COMPILATION)]
    pub debug: bool,
}

impl BuildProfile for BenchProfile {
    fn cargo_args(&self) -> &'static [&'static str] {
        if self.debug {
            &["--profile", "dev"]
        } else {
            &[]
        }
    }
}

/// Which packages cargo is told to build.
#[derive(Debug, Clone, Copy)]
pub enum Packages<'a> {
    /// `-p`, `--workspace` and `--exclude` as given: cargo selects.
    AsGiven,
    /// These packages (`-p NAME` each), which the command selected from the options itself
    /// ([`CargoFlags::selected`]) to run cargo per package or to leave out some.
    Only(&'a [String]),
}

impl<P: BuildProfile> CargoFlags<P> {
    /// cargo's arguments for these options and the global ones, to follow cargo's subcommand:
    /// `--manifest-path`, the packages, features, profile, `--target-dir`, `--locked`,
    /// `--offline`, `--frozen`, then `--color`, `--quiet` and `--verbose` as given to cargo-rocm.
    pub fn cargo_args(&self, global: &GlobalArgs, packages: Packages) -> Vec<OsString> {
        let mut a: Vec<OsString> = Vec::new();
        let mut add = |args: &[&OsStr]| a.extend(args.iter().map(|s| s.to_os_string()));
        let os = OsStr::new;
        if let Some(m) = &global.manifest_path {
            add(&[os("--manifest-path"), m.as_os_str()]);
        }
        let (names, workspace, exclude) = match packages {
            Packages::AsGiven => (&self.package[..], self.workspace, &self.exclude[..]),
            Packages::Only(names) => (names, false, &[][..]),
        };
        names.iter().for_each(|p| add(&[os("--package"), os(p)]));
        if workspace {
            add(&[os("--workspace")]);
        }
        exclude.iter().for_each(|e| add(&[os("--exclude"), os(e)]));
        self.features
            .iter()
            .for_each(|f| add(&[os("--features"), os(f)]));
        if self.all_features {
            add(&[os("--all-features")]);
        }
        if self.no_default_features {
            add(&[os("--no-default-features")]);
        }
        self.profile.cargo_args().iter().for_each(|p| add(&[os(p)]));
        if let Some(d) = &self.target_dir {
            add(&[os("--target-dir"), d.as_os_str()]);
        }
        for (set, flag) in [
            (self.locked, "--locked"),
            (self.offline, "--offline"),
            (self.frozen, "--frozen"),
        ] {
            if set {
                add(&[os(flag)]);
            }
        }
        if let Some(color) = global.color.and_then(|c| c.to_possible_value()) {
            add(&[os("--color"), os(color.get_name())]);
        }
        if global.quiet {
            add(&[os("--quiet")]);
        }
        for _ in 0..global.verbose {
            add(&[os("--verbose")]);
        }
        a
    }

    /// The workspace members these options select, as cargo would: the `-p` names, every member
    /// with `--workspace` (less `--exclude`), else the package of the manifest, else the default
    /// members. For the commands that run cargo once per package.
    pub fn selected<'m>(
        &self,
        meta: &'m Metadata,
        manifest: &Path,
    ) -> anyhow::Result<Vec<&'m Package>> {
        workspace::selected(meta, &self.package, self.workspace, &self.exclude, manifest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Wrap<P: BuildProfile> {
        #[command(flatten)]
        global: GlobalArgs,
        #[command(flatten)]
        cargo: CargoFlags<P>,
    }

    fn parse<P: BuildProfile>(v: &[&str]) -> Result<Wrap<P>, String> {
        Wrap::<P>::try_parse_from(std::iter::once("x").chain(v.iter().copied()))
            .map_err(|e| e.to_string())
    }

    fn forwarded<P: BuildProfile>(v: &[&str], packages: Packages) -> Vec<String> {
        let w = parse::<P>(v).unwrap();
        w.cargo
            .cargo_args(&w.global, packages)
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect()
    }

    #[test]
    fn every_option_is_forwarded_in_cargos_spelling() {
        let args = [
            "--manifest-path",
            "/w/Cargo.toml",
            "-p",
            "a",
            "--package=b",
            "-F",
            "x,y",
            "--features",
            "z",
            "--all-features",
            "--no-default-features",
            "-r",
            "--target-dir",
            "/t",
            "--locked",
            "--offline",
            "--frozen",
            "--color",
            "never",
            "-vv",
        ];
        assert_eq!(
            forwarded::<Release>(&args, Packages::AsGiven),
            [
                "--manifest-path",
                "/w/Cargo.toml",
                "--package",
                "a",
                "--package",
                "b",
                "--features",
                "x,y",
                "--features",
                "z",
                "--all-features",
                "--no-default-features",
                "--release",
                "--target-dir",
                "/t",
                "--locked",
                "--offline",
                "--frozen",
                "--color",
                "never",
                "--verbose",
                "--verbose",
            ]
        );
    }

    #[test]
    fn nothing_given_forwards_nothing() {
        assert!(forwarded::<Release>(&[], Packages::AsGiven).is_empty());
        assert!(forwarded::<BenchProfile>(&[], Packages::AsGiven).is_empty());
        assert_eq!(
            forwarded::<Release>(&["-q"], Packages::AsGiven),
            ["--quiet"]
        );
    }

    #[test]
    fn package_selection_as_given_or_chosen_by_the_command() {
        let args = ["--workspace", "--exclude", "big", "--release"];
        assert_eq!(
            forwarded::<Release>(&args, Packages::AsGiven),
            ["--workspace", "--exclude", "big", "--release"]
        );
        let chosen = ["k".to_owned()];
        assert_eq!(
            forwarded::<Release>(&args, Packages::Only(&chosen)),
            ["--package", "k", "--release"]
        );
        assert!(parse::<Release>(&["--exclude", "big"])
            .unwrap_err()
            .contains("--workspace"));
    }

    #[test]
    fn bench_has_debug_instead_of_release() {
        assert_eq!(
            forwarded::<BenchProfile>(&["--debug"], Packages::AsGiven),
            ["--profile", "dev"]
        );
        assert!(parse::<BenchProfile>(&["--release"]).is_err());
        assert!(parse::<Release>(&["--debug"]).is_err());
    }
}
