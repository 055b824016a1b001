//! `cargo rocm new PATH`: write a crate with HIP kernels, their Rust references, a rocm-test
//! harness, a criterion benchmark and a README, from one of the example crates under `examples/`
//! (embedded in the binary, renamed for the new package): `basic` (the default) or `llm`
//! (`--template llm`).
//!
//! Dependencies on `rocm-kernels` and `rocm-test` are path dependencies when cargo-rocm runs from
//! a source checkout (or `--path-deps DIR` names one), so a fresh crate builds without anything
//! published; otherwise crates.io versions (`--crates-io` forces that).

use std::path::{Component, Path, PathBuf};

use anyhow::Context;

use crate::cli::GlobalArgs;
use crate::exit::{self, CommandError};
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

/// One file of a template: where it goes in the new crate (and in the example it is read from),
/// and its text.
pub struct TemplateFile {
    pub path: &'static str,
    pub text: &'static str,
}

/// The files of `examples/<dir>`, embedded in the binary.
macro_rules! template {
    ($dir:literal: $($path:literal),* $(,)?) => {
        &[$(TemplateFile { path: $path, text: include_str!(concat!("../../../examples/", $dir, "/", $path)) }),*]
    };
}

/// A template: its name (`--template NAME`), what it gives, the package name of the example it
/// is read from, and the files taken from it.
///
/// The examples under `examples/` are the one source of the templates: a crate is rendered from
/// an example by putting the new package's name where the example names itself (see [`render`]).
pub struct Template {
    pub name: &'static str,
    pub about: &'static str,
    /// The example's package name (`examples/<name>/Cargo.toml`).
    pub example: &'static str,
    pub files: &'static [TemplateFile],
}

/// The crates a rendered crate depends on, each written by [`render`] as [`Deps`] says. In the
/// examples they are `<crate> = { path = "../../<crate>" }`.
const OWN_CRATES: [&str; 4] = [
    "rocm-kernels",
    "rocm-kernels-build",
    "rocm-test",
    "rocm-bench",
];

/// Every template, the default first. (The examples' other files, such as
/// `examples/basic/tune/wisdom.json` and `examples/llm/tune/wisdom.json`, are not part of a new
/// crate: its build finds no wisdom file and its tunable kernels run their defaults.)
pub const TEMPLATES: &[Template] = &[
    Template {
        name: "basic",
        about: "saxpy and a shared-memory reduction: the smallest crate with kernels, checks and a bench",
        example: "basic",
        files: template! { "basic":
            "Cargo.toml",
            ".gitignore",
            "README.md",
            "build.rs",
            "kernels/kernels.hip",
            "kernels/matmul.hip",
            "kernels/conv2d.hip",
            "src/lib.rs",
            "tests/kernels.rs",
            "benches/kernels.rs",
        },
    },
    Template {
        name: "llm",
        about: "inference kernels (scale, causal mask, softmax, RMSNorm, SwiGLU, RoPE, RoPE + \
                KV-cache append, FlashAttention, tiled matmul, paged decode attention, a top-k / \
                top-p sampler) with references, checks, and benches against the vendor BLAS",
        // Not `llm`: the crate imports itself `as llm`, which a crate named `llm` cannot.
        example: "llm-kernels",
        files: template! { "llm":
            "Cargo.toml",
            ".gitignore",
            "README.md",
            "build.rs",
            "kernels/llm.hip",
            "kernels/decode.hip",
            "kernels/matmul.hip",
            "src/lib.rs",
            "src/decode.rs",
            "src/vendor.rs",
            "tests/kernels.rs",
            "benches/kernels.rs",
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

/// The template's files for the package `name`: the example's files with its own name replaced.
///
/// Where an example names itself, and what each becomes:
/// - `Cargo.toml`: the line `name = "<example>"`, and the lines
///   `<crate> = { path = "../../<crate>" }` of [`OWN_CRATES`] (as `deps` says);
/// - a Markdown title line `# <example>` and a crate doc line starting `//! <example>:`;
/// - the example's crate in Rust paths: `<example_crate>::` and `use <example_crate> as`.
///
/// Nothing else changes, so the example must name itself nowhere else (a test holds it to that).
pub fn render(template: &Template, name: &str, deps: &Deps) -> Vec<(&'static str, String)> {
    let crate_name = name.replace('-', "_");
    let example = template.example;
    let example_crate = example.replace('-', "_");
    let dep = |krate: &str, deps: &Deps| match deps {
        Deps::Path(dir) => {
            let dir = dir.trim_end_matches('/');
            format!("{krate} = {{ path = \"{dir}/{krate}\" }}")
        }
        Deps::CratesIo => format!("{krate} = \"{}\"", env!("CARGO_PKG_VERSION")),
    };
    let example_deps: Vec<(String, String)> = OWN_CRATES
        .iter()
        .map(|k| (dep(k, &Deps::Path("../..".into())), dep(k, deps)))
        .collect();
    let package_line = format!("name = \"{example}\"");
    let title = format!("# {example}");
    let crate_doc = format!("//! {example}:");
    template
        .files
        .iter()
        .map(|f| {
            let mut text = String::with_capacity(f.text.len());
            for line in f.text.split_inclusive('\n') {
                let (body, end) = match line.strip_suffix('\n') {
                    Some(body) => (body, "\n"),
                    None => (line, ""),
                };
                if f.path == "Cargo.toml" {
                    if body == package_line {
                        text.push_str(&format!("name = \"{name}\"{end}"));
                    } else if let Some((_, to)) = example_deps.iter().find(|(from, _)| from == body)
                    {
                        text.push_str(to);
                        text.push_str(end);
                    } else {
                        text.push_str(line);
                    }
                } else if body == title {
                    text.push_str(&format!("# {name}{end}"));
                } else if let Some(rest) = body.strip_prefix(&crate_doc) {
                    text.push_str(&format!("//! {name}:{rest}{end}"));
                } else {
                    text.push_str(&rename_crate(line, &example_crate, &crate_name));
                }
            }
            (f.path, text)
        })
        .collect()
}

/// `line` with the crate `from` renamed `to` where it starts a Rust path (`from::`) or is
/// imported (`use from as`).
fn rename_crate(line: &str, from: &str, to: &str) -> String {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find(from) {
        let before = &rest[..at];
        let after = &rest[at + from.len()..];
        let starts_word = !before.ends_with(|c: char| is_ident(c) || c == ':');
        let is_crate = after.starts_with("::")
            || (after.starts_with(" as ") && before.trim_end().ends_with("use"));
        out.push_str(before);
        out.push_str(if starts_word && is_crate { to } else { from });
        rest = after;
    }
    out.push_str(rest);
    out
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
    let template = template(&args.template).map_err(CommandError::BadArgument)?;
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
                CommandError::BadArgument(format!(
                    "cannot take a package name from `{}`: pass --name",
                    dest.display()
                ))
            })?,
    };
    validate_name(&name).map_err(CommandError::BadArgument)?;
    if dest.exists()
        && std::fs::read_dir(dest)
            .with_context(|| format!("cannot read {}", dest.display()))?
            .next()
            .is_some()
    {
        return Err(CommandError::DestinationNotEmpty { path: dest.clone() }.into());
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
            return Err(CommandError::NotACheckout { dir }.into());
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
        anyhow::Error::from(CommandError::NotJoined {
            name: name.to_owned(),
            crate_dir: crate_dir.to_owned(),
            why,
            member: rel.clone(),
            manifest: manifest.clone(),
        })
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

    /// The example's file `path`, as committed.
    fn example_file(t: &Template, path: &str) -> String {
        let file = checkout().join("examples").join(t.name).join(path);
        std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
    }

    #[test]
    fn rendering_an_example_for_its_own_name_gives_the_example() {
        for t in TEMPLATES {
            for (path, text) in render(t, t.example, &Deps::Path("../..".into())) {
                assert_eq!(
                    text,
                    example_file(t, path),
                    "examples/{}/{path}: rendering the example for itself changed it (does it \
                     depend on {OWN_CRATES:?} as `<crate> = {{ path = \"../../<crate>\" }}`?)",
                    t.name
                );
            }
        }
    }

    #[test]
    fn a_rendered_crate_names_itself_wherever_the_example_did_and_nowhere_else() {
        let words = |text: &str, word: &str| {
            let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
            text.match_indices(word)
                .filter(|(at, _)| {
                    !text[..*at].ends_with(is_ident)
                        && !text[at + word.len()..].starts_with(is_ident)
                })
                .count()
        };
        for t in TEMPLATES {
            let example_crate = t.example.replace('-', "_");
            for (path, text) in render(t, "zz-fresh", &Deps::Path("../..".into())) {
                // Every mention of the example's name was replaced...
                for old in [t.example, example_crate.as_str()] {
                    assert_eq!(
                        words(&text, old),
                        0,
                        "examples/{}/{path} names itself `{old}` where `cargo rocm new` does not \
                         rename it (see `render`): reword it, or teach `render` the place",
                        t.name
                    );
                }
                // ...and nothing else was.
                let back = text
                    .replace("zz-fresh", t.example)
                    .replace("zz_fresh", &example_crate);
                assert_eq!(back, example_file(t, path), "examples/{}/{path}", t.name);
            }
        }
    }

    #[test]
    fn crate_paths_are_renamed_and_nothing_else() {
        let r = |line| rename_crate(line, "basic", "my_k");
        assert_eq!(
            r("    basic::saxpy(basic::BLOCK)"),
            "    my_k::saxpy(my_k::BLOCK)"
        );
        assert_eq!(r("use basic as b;"), "use my_k as b;");
        assert_eq!(
            r("a basic check, basic_x::y, x::basic::z"),
            "a basic check, basic_x::y, x::basic::z"
        );
        assert_eq!(r("let basic as u32"), "let basic as u32");
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
    fn a_rendered_crate_has_its_name_and_dependencies() {
        for t in TEMPLATES {
            let files = render(t, "my-kernels", &Deps::Path("/x".into()));
            let manifest = &files.iter().find(|(p, _)| *p == "Cargo.toml").unwrap().1;
            for krate in OWN_CRATES {
                assert!(
                    manifest.contains(&format!("{krate} = {{ path = \"/x/{krate}\" }}")),
                    "{}: {manifest}",
                    t.name
                );
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
