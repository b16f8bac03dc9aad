//! `forge pin outdated [--pre] [--index-url URL]`.

use crate::bump::Prereleases;
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
        prereleases: if args.upstream.pre {
            Prereleases::Include
        } else {
            Prereleases::Exclude
        },
        index_url: args.upstream.index_url.clone(),
        insecure_registries: args.upstream.insecure_registry.clone(),
    };
    crate::ops::pin_outdated(&recipe, &options, printer)?;
    Ok(ExitStatus::Success)
}
