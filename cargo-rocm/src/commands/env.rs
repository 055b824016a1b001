//! `cargo rocm env`: the environment for the selected ROCm toolchain, as shell code to `eval`
//! (sh or fish) or as JSON.
//!
//! ```text
//! eval "$(cargo rocm env)"              # sh, bash, zsh
//! cargo rocm env --shell fish | source  # fish
//! ```

use std::io::Write;
use std::path::PathBuf;

use clap::ValueEnum;
use rocm_toolkit::toolchain::{discover, Toolchain, ToolchainEnv};

use crate::cli::{FormatArgs, GlobalArgs};
use crate::output::Output;
use crate::selection::select_toolchain;

#[derive(Debug, clap::Args)]
pub struct EnvArgs {
    /// Shell syntax to print [default: fish if $SHELL is fish, else sh]
    #[arg(long, value_enum, value_name = "SHELL")]
    pub shell: Option<Shell>,

    /// Use the ROCm install at this prefix instead of the best one found
    #[arg(long, value_name = "PATH")]
    pub toolchain_path: Option<PathBuf>,

    #[command(flatten)]
    pub format: FormatArgs,
}

/// Shells whose syntax `env` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    /// POSIX sh (bash, zsh, dash): `export NAME='value'`
    Sh,
    /// fish: `set -gx NAME 'value'`
    Fish,
}

pub fn run(global: &GlobalArgs, args: EnvArgs, out: &Output) -> anyhow::Result<u8> {
    let found = discover();
    // Discovery notes here are about the environment the user set up (a ROCM_PATH that is not
    // an install, say), which this command's output is meant to fix: worth a warning.
    for note in &found.notes {
        out.warn(note);
    }
    let toolchain = select_toolchain(global, args.toolchain_path.as_deref(), out)?;
    out.verbose(format_args!(
        "using {} at {} (version {})",
        toolchain.name,
        toolchain.root.display(),
        toolchain.version.as_deref().unwrap_or("unknown")
    ));
    let env = toolchain.env_vars();
    let text = if args.format.json() {
        serde_json::to_string_pretty(&json(&toolchain, &env))? + "\n"
    } else {
        let shell = args.shell.unwrap_or_else(shell_from_env);
        render(&toolchain, &env, shell)
    };
    out.stdout().write_all(text.as_bytes())?;
    Ok(crate::exit::OK)
}

fn shell_from_env() -> Shell {
    let shell = std::env::var_os("SHELL").unwrap_or_default();
    if PathBuf::from(shell)
        .file_name()
        .is_some_and(|n| n == "fish")
    {
        Shell::Fish
    } else {
        Shell::Sh
    }
}

fn json(toolchain: &Toolchain, env: &ToolchainEnv) -> serde_json::Value {
    let vars: serde_json::Map<String, serde_json::Value> = env
        .vars
        .iter()
        .map(|(name, value)| (name.clone(), value.display().to_string().into()))
        .collect();
    serde_json::json!({
        "toolchain": toolchain.name,
        "root": toolchain.root,
        "version": toolchain.version,
        "vars": vars,
        "path_prepend": env.path_prepend,
        "PATH": env.path_with(std::env::var_os("PATH").as_deref()).to_string_lossy(),
    })
}

/// Shell code setting each variable and prepending to `PATH`, with a comment naming the toolchain.
pub fn render(toolchain: &Toolchain, env: &ToolchainEnv, shell: Shell) -> String {
    let mut text = format!(
        "# ROCm toolchain {} ({}) at {}\n",
        toolchain.name,
        toolchain.version.as_deref().unwrap_or("version unknown"),
        toolchain.root.display()
    );
    for (name, value) in &env.vars {
        let value = value.display().to_string();
        text.push_str(&match shell {
            Shell::Sh => format!("export {name}={}\n", sh_quote(&value)),
            Shell::Fish => format!("set -gx {name} {}\n", fish_quote(&value)),
        });
    }
    if !env.path_prepend.is_empty() {
        let dirs: Vec<String> = env
            .path_prepend
            .iter()
            .map(|d| d.display().to_string())
            .collect();
        text.push_str(&match shell {
            Shell::Sh => format!(
                "export PATH={}\"${{PATH:+:$PATH}}\"\n",
                sh_quote(&dirs.join(":"))
            ),
            Shell::Fish => {
                let quoted: Vec<String> = dirs.iter().map(|d| fish_quote(d)).collect();
                format!("set -gx PATH {} $PATH\n", quoted.join(" "))
            }
        });
    }
    text
}

/// Single-quote for POSIX sh: `'` becomes `'\''`.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Single-quote for fish, where `\` and `'` are escaped with a backslash inside quotes.
fn fish_quote(s: &str) -> String {
    format!("'{}'", s.replace('\\', r"\\").replace('\'', r"\'"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocm_toolkit::toolchain::ToolchainSource;

    fn toolchain() -> Toolchain {
        Toolchain {
            name: "rocm-6.2.0".into(),
            root: "/opt/rocm-6.2.0".into(),
            source: ToolchainSource::Opt,
            version: Some("6.2.0".into()),
            compilers: vec![],
            device_lib_path: None,
            device_lib_targets: vec![],
            hip_runtime_lib: None,
            notes: vec![],
        }
    }

    fn env() -> ToolchainEnv {
        ToolchainEnv {
            vars: vec![
                ("ROCM_PATH".into(), "/opt/rocm-6.2.0".into()),
                ("HIP_DEVICE_LIB_PATH".into(), "/opt/it's here".into()),
            ],
            path_prepend: vec![
                "/opt/rocm-6.2.0/bin".into(),
                "/opt/rocm-6.2.0/lib/llvm/bin".into(),
            ],
        }
    }

    #[test]
    fn sh_output_quotes_and_prepends_path() {
        let text = render(&toolchain(), &env(), Shell::Sh);
        assert!(text.starts_with("# ROCm toolchain rocm-6.2.0 (6.2.0) at /opt/rocm-6.2.0\n"));
        assert!(text.contains("export ROCM_PATH='/opt/rocm-6.2.0'\n"));
        assert!(text.contains(r"export HIP_DEVICE_LIB_PATH='/opt/it'\''s here'"));
        assert!(text.contains(
            "export PATH='/opt/rocm-6.2.0/bin:/opt/rocm-6.2.0/lib/llvm/bin'\"${PATH:+:$PATH}\"\n"
        ));
    }

    #[test]
    fn fish_output_uses_set_gx() {
        let text = render(&toolchain(), &env(), Shell::Fish);
        assert!(text.contains("set -gx ROCM_PATH '/opt/rocm-6.2.0'\n"));
        assert!(text.contains(r"set -gx HIP_DEVICE_LIB_PATH '/opt/it\'s here'"));
        assert!(text
            .contains("set -gx PATH '/opt/rocm-6.2.0/bin' '/opt/rocm-6.2.0/lib/llvm/bin' $PATH\n"));
    }
}
