//! `forge pin outdated [--exit-code] [--pre] [--index-url URL]`.

use crate::cli::{Cli, PinOutdatedArgs};
use crate::diagnostics::ExitStatus;
use crate::ops::pin_outdated::{PinOutdatedOptions, State};
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
    let standings = crate::ops::pin_outdated(&recipe, &options, printer)?;
    let movable: Vec<&str> = standings
        .iter()
        .filter(|standing| matches!(standing.state, State::Outdated | State::Yanked))
        .map(|standing| standing.name.as_str())
        .collect();
    if args.exit_code && !movable.is_empty() {
        printer.status(
            "Outdated",
            format_args!("{} can move (--exit-code)", movable.join(", ")),
        );
        return Ok(ExitStatus::Failure);
    }
    Ok(ExitStatus::Success)
}
