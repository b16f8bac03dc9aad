//! `forge pin outdated [--pre] [--index-url URL]`.

use crate::cli::{Cli, PinOutdatedArgs};
use crate::diagnostics::ExitStatus;
use crate::ops::pin_outdated::PinOutdatedOptions;
use crate::printer::Printer;

pub(super) fn run(
    cli: &Cli,
    args: &PinOutdatedArgs,
    printer: &Printer,
) -> anyhow::Result<ExitStatus> {
    let recipe = super::open_recipe(cli, printer)?;
    let options = PinOutdatedOptions {
        prereleases: args.upstream.prereleases(),
        sources: args.upstream.sources(),
    };
    crate::ops::pin_outdated(&recipe, &options, printer)?;
    Ok(ExitStatus::Success)
}
