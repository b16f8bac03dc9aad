//! `forge pull [REF] [--key PUB] [--host URL]...`.

use crate::cli::{Cli, PullArgs};
use crate::diagnostics::ExitStatus;
use crate::ops::pull::PullOptions;
use crate::printer::Printer;
use crate::progress::ProgressMode;

pub(super) fn run(cli: &Cli, args: &PullArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
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
    match &args.image.reference {
        Some(reference) => crate::ops::pull::pull_reference(
            reference,
            super::public_key(&args.image)?.as_ref(),
            &args.image.insecure_registry,
            &options,
            printer,
        )?,
        None => {
            super::recipe_only(&args.image, "pull")?;
            let recipe = super::open_recipe(cli, printer)?;
            crate::ops::pull(&recipe, &options, printer)?;
        }
    }
    Ok(ExitStatus::Success)
}
