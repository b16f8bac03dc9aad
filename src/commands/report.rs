//! `forge report [REF] [--key PUB] [--json]`.

use crate::cli::{Cli, ReportArgs};
use crate::diagnostics::ExitStatus;
use crate::printer::Printer;

pub(super) fn run(cli: &Cli, args: &ReportArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    match &args.image.reference {
        Some(reference) => crate::ops::report::report_reference(
            reference,
            super::public_key(&args.image)?.as_ref(),
            &args.image.insecure_registry,
            printer,
        )?,
        None => {
            super::recipe_only(&args.image, "report")?;
            let recipe = super::open_recipe(cli, printer)?;
            crate::ops::report(&recipe, printer)?;
        }
    }
    Ok(ExitStatus::Success)
}
