//! `cargo rocm detect` (being written).

use crate::cli::GlobalArgs;
use crate::output::Output;

#[derive(Debug, clap::Args)]
pub struct DetectArgs {}

pub fn run(_global: &GlobalArgs, _args: DetectArgs, _out: &Output) -> anyhow::Result<u8> {
    Err(crate::exit::coded(crate::exit::INTERNAL, "not written yet"))
}
