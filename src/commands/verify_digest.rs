//! `forge verify-digest [--remote] [--contents] [--host URL]... [--insecure-registry HOST]...`.

use crate::cli::{Cli, VerifyDigestArgs};
use crate::diagnostics::ExitStatus;
use crate::ops::verify_digest::VerifyOptions;
use crate::printer::Printer;

pub(super) fn run(
    cli: &Cli,
    args: &VerifyDigestArgs,
    printer: &Printer,
) -> anyhow::Result<ExitStatus> {
    let recipe = super::open_recipe(cli, printer)?;
    let options = VerifyOptions {
        remote: args.remote,
        wide: args.wide,
        contents: args.contents,
        hosts: args.host.clone(),
        insecure_registries: args.insecure_registry.clone(),
        key: args
            .key
            .as_deref()
            .map(crate::attest::keys::VerifyingKey::read)
            .transpose()?,
    };
    crate::ops::verify_digest(&recipe, &options, printer)?;
    Ok(ExitStatus::Success)
}
