//! `forge pin bump NAME [--to VERSION] [--dry-run] [--force] [--pre] [--index-url URL]`.

use crate::bump::{BumpMode, Constraints, PinBumpOptions};
use crate::cli::{Cli, PinBumpArgs};
use crate::diagnostics::ExitStatus;
use crate::printer::Printer;

pub(super) fn run(cli: &Cli, args: &PinBumpArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let recipe = super::open_recipe(cli, printer)?;
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
    crate::ops::pin_bump(&recipe, &options, printer)?;
    Ok(ExitStatus::Success)
}
