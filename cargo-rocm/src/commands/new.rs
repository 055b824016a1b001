//! `cargo rocm new PATH`: write a crate with HIP kernels, their Rust references, a rocm-test
//! harness, a criterion benchmark and a README, from one of the templates under `templates/`
//! (embedded in the binary): `basic` (the default) or `llm` (`--template llm`).
//!
//! Dependencies on `rocm-kernels` and `rocm-test` are path dependencies when cargo-rocm runs from
//! a source checkout (or `--path-deps DIR` names one), so a fresh crate builds without anything
//! published; otherwise crates.io versions (`--crates-io` forces that).

use std::path::{Component, Path, PathBuf};

use anyhow::Context;

use crate::cli::GlobalArgs;
use crate::exit;
use crate::output::Output;

#[derive(Debug, clap::Args)]
pub struct NewArgs {
    /// Directory to create (it must not exist or be empty)
    #[arg(value_name = "PATH", required_unless_present = "list_templates")]
    pub path: Option<PathBuf>,

    /// The template to start from (`--list-templates` lists them)
    #[arg(long, value_name = "NAME", default_value = "basic")]
    pub template: String,

    /// List the templates and exit
    #[arg(long)]
    pub list_templates: bool,

    /// Package name (default: the directory's name)
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,

    /// Depend on rocm-kernels and rocm-test through paths into this cargo-rocm checkout
    #[arg(long, value_name = "DIR", conflicts_with = "crates_io")]
    pub path_deps: Option<PathBuf>,

    /// Depend on crates.io versions even when running from a checkout
    #[arg(long)]
    pub crates_io: bool,
}

/// One file of the template: where it goes, and its text with `{{…}}` placeholders.
pub struct TemplateFile {
    pub path: &'static str,
    pub text: &'static str,
}

macro_rules! template {
    ($dir:literal: $($dest:literal => $src:literal),* $(,)?) => {
        &[$(TemplateFile { path: $dest, text: include_str!(concat!("../../../templates/", $dir, "/", $src)) }),*]
    };
}

/// A template: its name (`--template NAME`), what it gives, and its files.
pub struct Template {
    pub name: &'static str,
    pub about: &'static str,
    pub files: &'static [TemplateFile],
}

/// Every template, the default first. (`Cargo.toml.tmpl` and `gitignore` are renamed so that a
/// template directory is neither a cargo package nor ignores itself.)
pub const TEMPLATES: &[Template] = &[
    Template {
        name: "basic",
        about: "saxpy and a shared-memory reduction: the smallest crate with kernels, checks and a bench",
        files: template! { "basic":
            "Cargo.toml" => "Cargo.toml.tmpl",
            ".gitignore" => "gitignore",
            "README.md" => "README.md",
            "build.rs" => "build.rs",
            "kernels/kernels.hip" => "kernels/kernels.hip",
            "kernels/matmul.hip" => "kernels/matmul.hip",
            "kernels/conv2d.hip" => "kernels/conv2d.hip",
            "src/lib.rs" => "src/lib.rs",
            "tests/kernels.rs" => "tests/kernels.rs",
            "benches/kernels.rs" => "benches/kernels.rs",
        },
    },
    Template {
        name: "llm",
        about: "inference kernels (scale, causal mask, softmax, RMSNorm, SwiGLU, RoPE, RoPE + \
                KV-cache append, FlashAttention, tiled matmul) with references, checks, and \
                benches against the vendor BLAS",
        files: template! { "llm":
            "Cargo.toml" => "Cargo.toml.tmpl",
            ".gitignore" => "gitignore",
            "README.md" => "README.md",
            "build.rs" => "build.rs",
            "kernels/llm.hip" => "kernels/llm.hip",
            "src/lib.rs" => "src/lib.rs",
            "src/vendor.rs" => "src/vendor.rs",
            "tests/kernels.rs" => "tests/kernels.rs",
            "benches/kernels.rs" => "benches/kernels.rs",
        },
    },
];

/// The template named `name`, or a usage error listing the others.
pub fn template(name: &str) -> Result<&'static Template, String> {
    TEMPLATES.iter().find(|t| t.name == name).ok_or_else(|| {
        let names: Vec<&str> = TEMPLATES.iter().map(|t| t.name).collect();
        format!(
            "no template named `{name}`: the templates are {} (`cargo rocm new --list-templates`)",
            names.join(", ")
        )
    })
}

/// How the new crate depends on rocm-kernels and rocm-test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Deps {
    /// `path = "<dir>/rocm-kernels"`; `dir` as written into Cargo.toml.
    Path(String),
    /// `version = "<this version>"` from crates.io.
    CratesIo,
}

/// The template's files with the placeholders filled in.
pub fn render(template: &Template, name: &str, deps: &Deps) -> Vec<(&'static str, String)> {
    let crate_name = name.replace('-', "_");
    let dep = |krate: &str| match deps {
        Deps::Path(dir) => {
            let dir = dir.trim_end_matches('/');
            format!("{krate} = {{ path = \"{dir}/{krate}\" }}")
        }
        Deps::CratesIo => format!("{krate} = \"{}\"", env!("CARGO_PKG_VERSION")),
    };
    template
        .files
        .iter()
        .map(|f| {
            let text = f
                .text
                .replace("{{name}}", name)
                .replace("{{crate_name}}", &crate_name)
                .replace("{{rocm_kernels_dep}}", &dep("rocm-kernels"))
                .replace("{{rocm_kernels_build_dep}}", &dep("rocm-kernels-build"))
                .replace("{{rocm_test_dep}}", &dep("rocm-test"))
                .replace("{{rocm_bench_dep}}", &dep("rocm-bench"));
            (f.path, text)
        })
        .collect()
}

pub fn run(_global: &GlobalArgs, args: NewArgs, out: &Output) -> anyhow::Result<u8> {
    if args.list_templates {
        for t in TEMPLATES {
            let default = if t.name == TEMPLATES[0].name {
                " (default)"
            } else {
                ""
            };
            println!("{:<8}{}{default}", t.name, t.about);
        }
        return Ok(exit::OK);
    }
    let template = template(&args.template).map_err(|e| exit::coded(exit::USAGE, e))?;
    let dest = args
        .path
        .as_ref()
        .expect("clap requires PATH without --list-templates");
    let name = match &args.name {
        Some(n) => n.clone(),
        None => dest
            .file_name()
            .and_then(|n| n.to_str())
            .map(str::to_owned)
            .ok_or_else(|| {
                exit::coded(
                    exit::USAGE,
                    format!(
                        "cannot take a package name from `{}`: pass --name",
                        dest.display()
                    ),
                )
            })?,
    };
    validate_name(&name).map_err(|e| exit::coded(exit::USAGE, e))?;
    if dest.exists()
        && std::fs::read_dir(dest)
            .with_context(|| format!("cannot read {}", dest.display()))?
            .next()
            .is_some()
    {
        return Err(exit::coded(
            exit::USAGE,
            format!(
                "destination `{}` already exists and is not empty",
                dest.display()
            ),
        ));
    }
    std::fs::create_dir_all(dest).with_context(|| format!("cannot create {}", dest.display()))?;
    let dest_abs = dest.canonicalize()?;

    let checkout = if args.crates_io {
        None
    } else if let Some(dir) = &args.path_deps {
        let dir = dir
            .canonicalize()
            .with_context(|| format!("--path-deps: cannot find {}", dir.display()))?;
        if !is_checkout(&dir) {
            return Err(exit::coded(
                exit::USAGE,
                format!(
                    "--path-deps: {} has no rocm-kernels/ and rocm-test/ crates",
                    dir.display()
                ),
            ));
        }
        Some(dir)
    } else {
        own_checkout()
    };
    let deps = match &checkout {
        Some(dir) => Deps::Path(dep_path(&dest_abs, dir)),
        None => Deps::CratesIo,
    };

    for (path, text) in render(template, &name, &deps) {
        let file = dest.join(path);
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        std::fs::write(&file, text).with_context(|| format!("cannot write {}", file.display()))?;
    }
    out.status(
        "Created",
        format!(
            "crate `{name}` at {} from template `{}` ({})",
            dest.display(),
            template.name,
            match &deps {
                Deps::Path(p) => format!("rocm-kernels and rocm-test from {p}"),
                Deps::CratesIo => "rocm-kernels and rocm-test from crates.io".to_owned(),
            }
        ),
    );
    join_workspace(&dest_abs, &name, out)?;
    out.status("Next", format!("cd {} && cargo rocm test", dest.display()));
    Ok(exit::OK)
}

/// The manifest of the workspace `dir` would belong to: the nearest `Cargo.toml` above it with a
/// `[workspace]` table (cargo's own search).
fn enclosing_workspace(dir: &Path) -> Option<PathBuf> {
    dir.ancestors().skip(1).find_map(|a| {
        let manifest = a.join("Cargo.toml");
        let text = std::fs::read_to_string(&manifest).ok()?;
        let doc: toml_edit::DocumentMut = text.parse().ok()?;
        doc.get("workspace")
            .is_some_and(|w| w.is_table_like())
            .then_some(manifest)
    })
}

/// How the new crate at `rel` (relative to the workspace root, `/`-separated) relates to the
/// workspace's `members` and `exclude` lists.
#[derive(Debug, PartialEq, Eq)]
enum Membership {
    /// Already a member through a `members` entry or glob.
    Member,
    /// Left out by `exclude`: it builds as its own workspace.
    Excluded,
    /// Neither: cargo refuses to build it until one is added.
    Outside,
}

fn membership(workspace: &toml_edit::Table, rel: &str) -> Membership {
    let list = |key: &str| -> Vec<String> {
        workspace
            .get(key)
            .and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(|s| s.trim_end_matches('/').to_owned()))
                    .collect()
            })
            .unwrap_or_default()
    };
    let under = |entry: &str| rel == entry || rel.starts_with(&format!("{entry}/"));
    if list("exclude").iter().any(|e| under(e)) {
        return Membership::Excluded;
    }
    let matches = |m: &String| {
        m == rel || glob::Pattern::new(m).is_ok_and(|p| p.matches_with(rel, glob_options()))
    };
    if list("members").iter().any(matches) {
        Membership::Member
    } else {
        Membership::Outside
    }
}

/// Cargo matches member globs path component by component.
fn glob_options() -> glob::MatchOptions {
    glob::MatchOptions {
        require_literal_separator: true,
        ..Default::default()
    }
}

/// Makes the crate at `crate_dir` a member of the workspace it sits in, as `cargo new` does, so
/// it builds there. Where the workspace manifest cannot be changed, the error says exactly what
/// to add; the crate's files are kept either way.
fn join_workspace(crate_dir: &Path, name: &str, out: &Output) -> anyhow::Result<()> {
    let Some(manifest) = enclosing_workspace(crate_dir) else {
        return Ok(());
    };
    let root = manifest.parent().expect("a manifest has a folder");
    let rel = crate_dir
        .strip_prefix(root)
        .expect("the workspace is an ancestor")
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/");
    let by_hand = |why: String| {
        exit::coded(
            exit::INPUT,
            format!(
                "created `{name}` at {}, but {why}: add \"{rel}\" to `members` (or to `exclude`) \
                 under [workspace] in {} before building it",
                crate_dir.display(),
                manifest.display()
            ),
        )
    };
    let text = std::fs::read_to_string(&manifest)
        .map_err(|e| by_hand(format!("the workspace manifest cannot be read ({e})")))?;
    let mut doc: toml_edit::DocumentMut = text
        .parse()
        .map_err(|e| by_hand(format!("the workspace manifest does not parse ({e})")))?;
    let workspace = doc["workspace"]
        .as_table_mut()
        .ok_or_else(|| by_hand("its [workspace] is not a plain table".to_owned()))?;
    match membership(workspace, &rel) {
        Membership::Member | Membership::Excluded => return Ok(()),
        Membership::Outside => {}
    }
    let members = workspace
        .entry("members")
        .or_insert_with(|| toml_edit::value(toml_edit::Array::new()));
    let Some(array) = members.as_array_mut() else {
        return Err(by_hand("its `members` is not a list".to_owned()));
    };
    array.push(rel.as_str());
    std::fs::write(&manifest, doc.to_string())
        .map_err(|e| by_hand(format!("the workspace manifest cannot be written ({e})")))?;
    out.status(
        "Adding",
        format!("`{name}` as member of workspace at {}", root.display()),
    );
    Ok(())
}

/// Cargo's rules for a package name, as far as they matter here.
fn validate_name(name: &str) -> Result<(), String> {
    let ok_chars = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if name.is_empty() || !ok_chars || name.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(format!(
            "`{name}` is not a valid package name: use letters, digits, `-` and `_`, not starting with a digit (or pass --name)"
        ));
    }
    if matches!(
        name,
        "test" | "core" | "std" | "alloc" | "proc_macro" | "build"
    ) {
        return Err(format!(
            "`{name}` is a reserved name: pass another with --name"
        ));
    }
    Ok(())
}

fn is_checkout(dir: &Path) -> bool {
    dir.join("rocm-kernels/Cargo.toml").is_file()
        && dir.join("rocm-test/Cargo.toml").is_file()
        && dir.join("rocm-bench/Cargo.toml").is_file()
}

/// The checkout this binary was built from, if it is still there.
pub(crate) fn own_checkout() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).parent()?.to_owned();
    is_checkout(&dir).then_some(dir)
}

/// How the crate at `krate` refers to `checkout`: relative when the crate is inside it (so a
/// committed example keeps working wherever the checkout is), else absolute.
fn dep_path(krate: &Path, checkout: &Path) -> String {
    match krate.strip_prefix(checkout) {
        Ok(rel) => {
            let ups = rel
                .components()
                .filter(|c| matches!(c, Component::Normal(_)))
                .count();
            if ups == 0 {
                ".".to_owned()
            } else {
                vec![".."; ups].join("/")
            }
        }
        Err(_) => checkout.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checkout() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap()
            .to_owned()
    }

    #[test]
    fn the_committed_examples_are_the_rendered_templates() {
        for t in TEMPLATES {
            // examples/llm is the package `llm-kernels`: a crate named `llm` would import itself
            // as `llm`, which the template's `use {{crate_name}} as llm;` cannot be.
            let name = match t.name {
                "llm" => "llm-kernels",
                other => other,
            };
            let example = checkout().join("examples").join(t.name);
            for (path, text) in render(t, name, &Deps::Path("../..".into())) {
                let committed = std::fs::read_to_string(example.join(path))
                    .unwrap_or_else(|e| panic!("examples/{}/{path}: {e}", t.name));
                assert_eq!(
                    committed, text,
                    "examples/{0}/{path} differs from the template: regenerate the example with \
                     `cargo rocm new examples/{0} --template {0} --name {name} --path-deps .` \
                     (after removing it)",
                    t.name
                );
            }
        }
    }

    #[test]
    fn templates_are_found_by_name() {
        assert_eq!(template("basic").unwrap().name, "basic");
        assert_eq!(template("llm").unwrap().name, "llm");
        let Err(e) = template("gpt") else {
            panic!("`gpt` is no template")
        };
        assert!(
            e.contains("no template named `gpt`: the templates are basic, llm"),
            "{e}"
        );
    }

    #[test]
    fn placeholders_are_all_filled() {
        for t in TEMPLATES {
            for deps in [Deps::CratesIo, Deps::Path("/x".into())] {
                for (path, text) in render(t, "my-kernels", &deps) {
                    assert!(
                        !text.contains("{{"),
                        "{}: {path} still has a placeholder",
                        t.name
                    );
                }
            }
        }
        let files = render(&TEMPLATES[0], "my-kernels", &Deps::CratesIo);
        let manifest = &files.iter().find(|(p, _)| *p == "Cargo.toml").unwrap().1;
        assert!(manifest.contains("name = \"my-kernels\""));
        assert!(manifest.contains(&format!("rocm-test = \"{}\"", env!("CARGO_PKG_VERSION"))));
        let harness = &files
            .iter()
            .find(|(p, _)| *p == "tests/kernels.rs")
            .unwrap()
            .1;
        assert!(harness.contains("rocm_test::main(my_kernels::KERNELS"));
    }

    #[test]
    fn dep_paths_are_relative_inside_the_checkout() {
        let c = Path::new("/src/cargo-rocm");
        assert_eq!(
            dep_path(Path::new("/src/cargo-rocm/examples/basic"), c),
            "../.."
        );
        assert_eq!(dep_path(Path::new("/tmp/k"), c), "/src/cargo-rocm");
    }

    #[test]
    fn workspace_membership_follows_members_globs_and_exclude() {
        let ws: toml_edit::DocumentMut =
            "[workspace]\nmembers = [\"crates/*\", \"tools/x\"]\nexclude = [\"vendor\"]\n"
                .parse()
                .unwrap();
        let ws = ws["workspace"].as_table().unwrap();
        assert_eq!(membership(ws, "crates/k"), Membership::Member);
        assert_eq!(membership(ws, "tools/x"), Membership::Member);
        assert_eq!(membership(ws, "crates/a/b"), Membership::Outside);
        assert_eq!(membership(ws, "vendor/k"), Membership::Excluded);
        assert_eq!(membership(ws, "k"), Membership::Outside);
    }

    #[test]
    fn names_are_validated() {
        assert!(validate_name("my-kernels_2").is_ok());
        assert!(validate_name("2fast").is_err());
        assert!(validate_name("a b").is_err());
        assert!(validate_name("test").is_err());
    }
}
