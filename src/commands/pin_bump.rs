//! `forge pin bump NAME [--to VERSION] [--dry-run] [--force] [--pre] [--index-url URL]`: in the
//! recipe, or at a workspace root in every member that has the pin.

use crate::bump::{BumpMode, Constraints, PinBumpOptions};
use crate::cli::{Cli, PinBumpArgs};
use crate::diagnostics::ExitStatus;
use crate::printer::Printer;

pub(super) fn run(cli: &Cli, args: &PinBumpArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let options = PinBumpOptions {
        target: args.name.clone(),
        to: args.to.clone(),
        mode: if args.dry_run {
            BumpMode::DryRun
        } else {
            BumpMode::Write
        },
        prereleases: args.upstream.prereleases(),
        constraints: if args.force {
            Constraints::Force
        } else {
            Constraints::Enforce
        },
        sources: args.upstream.sources(),
    };
    if let Some(workspace) = super::open_workspace(cli, printer)? {
        crate::ops::family::pin_bump(&workspace, &options, printer)?;
        return Ok(ExitStatus::Success);
    }
    let recipe = super::open_recipe(cli, printer)?;
    crate::ops::pin_bump(&recipe, &options, printer)?;
    Ok(ExitStatus::Success)
}
