//! `forge render [--out FILE] [--check]`.

use crate::cli::{Cli, RenderArgs};
use crate::diagnostics::ExitStatus;
use crate::ops::render::{RenderMode, RenderOptions};
use crate::printer::Printer;

pub(super) fn run(cli: &Cli, args: &RenderArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let recipe = super::open_recipe(cli, printer)?;
    let mode = match (&args.out, args.check) {
        (Some(path), true) => RenderMode::Check(path.clone()),
        (Some(path), false) => RenderMode::Write(path.clone()),
        (None, _) => RenderMode::Stdout,
    };
    crate::ops::render(&recipe, &RenderOptions { mode }, printer)?;
    Ok(ExitStatus::Success)
}
