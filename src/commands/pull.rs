//! `forge pull [--host URL]...`.

use crate::cli::{Cli, PullArgs};
use crate::diagnostics::ExitStatus;
use crate::ops::pull::PullOptions;
use crate::printer::Printer;
use crate::progress::ProgressMode;

pub(super) fn run(cli: &Cli, args: &PullArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let recipe = super::open_recipe(cli, printer)?;
    let options = PullOptions {
        hosts: args.host.clone(),
        progress: if cli.quiet {
            ProgressMode::Quiet
        } else {
            args.progress.into()
        },
        verbose: cli.verbose,
        wide: args.wide,
    };
    crate::ops::pull(&recipe, &options, printer)?;
    Ok(ExitStatus::Success)
}
