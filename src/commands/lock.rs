//! `forge lock`.

use crate::cli::Cli;
use crate::diagnostics::ExitStatus;
use crate::printer::Printer;

pub(super) fn run(cli: &Cli, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let recipe = super::open_recipe(cli, printer)?;
    crate::ops::lock(&recipe, printer)?;
    Ok(ExitStatus::Success)
}
