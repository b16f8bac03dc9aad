//! `forge pin outdated [--exit-code] [--pre] [--index-url URL]`: the recipe's pins, or at a
//! workspace root every member's.

use crate::cli::{Cli, PinOutdatedArgs};
use crate::diagnostics::ExitStatus;
use crate::ops::pin_outdated::{PinOutdatedOptions, State};
use crate::printer::Printer;

pub(super) fn run(
    cli: &Cli,
    args: &PinOutdatedArgs,
    printer: &Printer,
) -> anyhow::Result<ExitStatus> {
    let options = PinOutdatedOptions {
        prereleases: args.upstream.prereleases(),
        sources: args.upstream.sources(),
    };
    // Each pin that can move or was yanked, as `NAME` (`MEMBER/NAME` in a workspace).
    let mut standings: Vec<(String, State)> = Vec::new();
    if let Some(workspace) = super::open_workspace(cli, printer)? {
        let order = workspace.order(&[])?;
        crate::ops::family::each(
            &order,
            "Checking",
            "outdated",
            printer,
            |member, printer| {
                let found = crate::ops::pin_outdated(&member.recipe, &options, printer)?;
                standings.extend(found.iter().map(|standing| {
                    (format!("{}/{}", member.name, standing.name), standing.state)
                }));
                Ok(())
            },
        )?;
    } else {
        let recipe = super::open_recipe(cli, printer)?;
        let found = crate::ops::pin_outdated(&recipe, &options, printer)?;
        standings.extend(
            found
                .iter()
                .map(|standing| (standing.name.to_string(), standing.state)),
        );
    }
    let named = |state: State| -> Vec<&str> {
        standings
            .iter()
            .filter(|(_, standing)| *standing == state)
            .map(|(name, _)| name.as_str())
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
