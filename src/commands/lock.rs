//! `forge lock`: the recipe's inputs recorded, or at a workspace root every member's.

use crate::cli::Cli;
use crate::diagnostics::ExitStatus;
use crate::printer::Printer;

pub(super) fn run(cli: &Cli, printer: &Printer) -> anyhow::Result<ExitStatus> {
    if let Some(workspace) = super::open_workspace(cli, printer)? {
        let order = workspace.order(&[])?;
        crate::ops::family::each(&order, "Locking", "lock", printer, |member, printer| {
            crate::ops::lock(&member.recipe, printer)
        })?;
        return Ok(ExitStatus::Success);
    }
    let recipe = super::open_recipe(cli, printer)?;
    crate::ops::lock(&recipe, printer)?;
    Ok(ExitStatus::Success)
}
