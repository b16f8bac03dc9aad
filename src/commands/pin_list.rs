//! `forge pin list`: the recipe's pins, or at a workspace root every member's.

use crate::cli::Cli;
use crate::diagnostics::ExitStatus;
use crate::printer::Printer;

pub(super) fn run(cli: &Cli, printer: &Printer) -> anyhow::Result<ExitStatus> {
    if let Some(workspace) = super::open_workspace(cli, printer)? {
        crate::ops::pin_list::pin_list_workspace(&workspace.order(&[])?, printer);
        return Ok(ExitStatus::Success);
    }
    let recipe = super::open_recipe(cli, printer)?;
    crate::ops::pin_list(&recipe, printer);
    Ok(ExitStatus::Success)
}
