//! `forge verify-digest [REF] [--key PUB] [--remote] [--contents] [--host URL]...`.

use crate::cli::{Cli, VerifyDigestArgs};
use crate::diagnostics::ExitStatus;
use crate::ops::verify_digest::VerifyOptions;
use crate::printer::Printer;

pub(super) fn run(
    cli: &Cli,
    args: &VerifyDigestArgs,
    printer: &Printer,
) -> anyhow::Result<ExitStatus> {
    let key = super::public_key(&args.image)?;
    let options = VerifyOptions {
        // A key is checked against what the registry holds, as `cosign verify --key` is.
        remote: args.remote || key.is_some(),
        wide: args.wide,
        contents: args.contents,
        hosts: args.host.clone(),
        insecure_registries: args.image.insecure_registry.clone(),
        key,
        rebuild: args.rebuild,
    };
    match &args.image.reference {
        Some(reference) => {
            // Only a rebuild needs the recipe beside the reference.
            let recipe = if args.rebuild {
                Some(super::open_recipe(cli, printer)?)
            } else {
                None
            };
            crate::ops::verify_digest::verify_reference(
                reference,
                recipe.as_ref(),
                &options,
                printer,
            )?
        }
        None => {
            let recipe = super::open_recipe(cli, printer)?;
            crate::ops::verify_digest(&recipe, &options, printer)?;
        }
    }
    Ok(ExitStatus::Success)
}
