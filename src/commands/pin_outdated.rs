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
    let named = |state: State| -> Vec<&str> {
        standings
            .iter()
            .filter(|standing| standing.state == state)
            .map(|standing| standing.name.as_str())
            .collect()
    };
    let (movable, yanked) = (named(State::Outdated), named(State::Yanked));
    if args.exit_code && !(movable.is_empty() && yanked.is_empty()) {
        if !movable.is_empty() {
            printer.status(
                "Outdated",
                format_args!("{} can move (--exit-code)", movable.join(", ")),
            );
        }
        if !yanked.is_empty() {
            printer.status(
                "Yanked",
                format_args!(
                    "the index yanked the current version of {} (--exit-code)",
                    yanked.join(", ")
                ),
            );
        }
        return Ok(ExitStatus::Failure);
    }
    Ok(ExitStatus::Success)
}
