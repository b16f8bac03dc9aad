//! `forge build [--dry-run] [--push] [--no-cache] [--locked] ...`.

use crate::cli::{BuildArgs, Cli};
use crate::diagnostics::ExitStatus;
use crate::ops::build::{BuildMode, BuildOptions};
use crate::printer::Printer;
use crate::progress::ProgressMode;

pub(super) fn run(cli: &Cli, args: &BuildArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    // A missing or unreadable key is refused before anything else is looked at.
    let sign = if args.sign {
        Some(crate::attest::keys::SigningKey::given(
            args.sign_key.as_deref(),
        )?)
    } else {
        None
    };
    let mut recipe = super::open_recipe(cli, printer)?;
    if let Some(repository) = &args.repository {
        recipe = recipe.with_repository(repository.clone());
    }
    let options = BuildOptions {
        mode: if args.dry_run {
            BuildMode::DryRun
        } else {
            BuildMode::Build
        },
        locked: args.locked,
        push: args.push,
        force: args.force,
        no_cache: args.no_cache,
        platform: args.platform.clone(),
        builder: args.builder.into(),
        progress: if cli.quiet {
            ProgressMode::Quiet
        } else {
            args.progress.into()
        },
        verbose: cli.verbose,
        context_out: args.context_out.clone(),
        insecure_registries: args.insecure_registry.clone(),
        cache_from: args.cache_from.clone(),
        sign,
    };
    crate::ops::build(&recipe, &options, printer)?;
    Ok(ExitStatus::Success)
}
