//! `forge patch apply|check [--onto REPO] [SERIES...]`.

use crate::cli::{Cli, PatchArgs, PatchCommand};
use crate::diagnostics::ExitStatus;
use crate::ops::patch::PatchOptions;
use crate::patch::Mode;
use crate::printer::Printer;

pub(super) fn run(
    cli: &Cli,
    command: &PatchCommand,
    printer: &Printer,
) -> anyhow::Result<ExitStatus> {
    let (mode, args): (Mode, &PatchArgs) = match command {
        PatchCommand::Apply(args) => (Mode::Write, args),
        PatchCommand::Check(args) => (Mode::Check, args),
    };
    let options = PatchOptions {
        mode,
        onto: args.onto.clone(),
        series: args.series.clone(),
    };
    let recipe = if options.needs_recipe() {
        Some(super::open_recipe(cli, printer)?)
    } else {
        None
    };
    crate::ops::patch(recipe.as_ref(), &options, printer)?;
    Ok(ExitStatus::Success)
}
