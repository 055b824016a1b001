//! Where and how cargo-rocm talks: status and errors on stderr in cargo's style, data on stdout.
//! Colour follows `--color`, then `CARGO_TERM_COLOR`, then whether stderr is a terminal.

use std::io::Write;

use anstyle::{AnsiColor, Effects, Style};

use crate::cli::{ColorChoice, GlobalArgs};

pub struct Output {
    pub verbose: u8,
    pub quiet: bool,
    pub color: anstream::ColorChoice,
}

impl Output {
    pub fn new(global: &GlobalArgs) -> Self {
        let choice = global.color.or_else(|| {
            match std::env::var("CARGO_TERM_COLOR")
                .ok()?
                .to_ascii_lowercase()
                .as_str()
            {
                "always" => Some(ColorChoice::Always),
                "never" => Some(ColorChoice::Never),
                "auto" => Some(ColorChoice::Auto),
                _ => None,
            }
        });
        let color = match choice.unwrap_or(ColorChoice::Auto) {
            ColorChoice::Always => anstream::ColorChoice::Always,
            ColorChoice::Never => anstream::ColorChoice::Never,
            ColorChoice::Auto => anstream::ColorChoice::Auto,
        };
        Output {
            verbose: global.verbose,
            quiet: global.quiet,
            color,
        }
    }

    /// A writer for stdout (data) that strips colour when it should.
    pub fn stdout(&self) -> anstream::AutoStream<std::io::Stdout> {
        anstream::AutoStream::new(std::io::stdout(), self.color)
    }

    fn stderr(&self) -> anstream::AutoStream<std::io::Stderr> {
        anstream::AutoStream::new(std::io::stderr(), self.color)
    }

    pub fn styled(&self, style: Style, text: &str) -> String {
        format!("{}{text}{}", style.render(), style.render_reset())
    }

    /// Cargo's right-aligned, bold status word: `   Compiling foo`.
    pub fn status(&self, word: &str, message: impl std::fmt::Display) {
        if self.quiet {
            return;
        }
        let style = AnsiColor::Green.on_default().effects(Effects::BOLD);
        let _ = writeln!(
            self.stderr(),
            "{}{word:>12}{} {message}",
            style.render(),
            style.render_reset()
        );
    }

    /// Extra detail shown with `-v`.
    pub fn verbose(&self, message: impl std::fmt::Display) {
        if self.verbose > 0 && !self.quiet {
            let _ = writeln!(self.stderr(), "{message}");
        }
    }

    /// Cargo's `note:` line, for context a person may want (not shown with `-q`).
    pub fn note(&self, message: impl std::fmt::Display) {
        if self.quiet {
            return;
        }
        let style = AnsiColor::Cyan.on_default().effects(Effects::BOLD);
        let _ = writeln!(
            self.stderr(),
            "{}note{}: {message}",
            style.render(),
            style.render_reset()
        );
    }

    pub fn warn(&self, message: impl std::fmt::Display) {
        if self.quiet {
            return;
        }
        let style = AnsiColor::Yellow.on_default().effects(Effects::BOLD);
        let _ = writeln!(
            self.stderr(),
            "{}warning{}: {message}",
            style.render(),
            style.render_reset()
        );
    }

    /// Print an error and its causes, cargo-style.
    pub fn error(&self, err: &anyhow::Error) {
        let style = AnsiColor::Red.on_default().effects(Effects::BOLD);
        let mut e = self.stderr();
        let _ = writeln!(e, "{}error{}: {err}", style.render(), style.render_reset());
        for cause in err.chain().skip(1) {
            let _ = writeln!(e, "\nCaused by:\n  {cause}");
        }
    }
}
