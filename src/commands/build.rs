//! `forge build [--dry-run] [--push] [--no-cache] [--locked] ...`.

use crate::cli::{BuildArgs, Cli};
use crate::diagnostics::ExitStatus;
use crate::ops::build::{BuildMode, BuildOptions};
use crate::printer::Printer;
use crate::progress::ProgressMode;
use crate::workspace::WorkspaceError;

pub(super) fn run(cli: &Cli, args: &BuildArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    // A missing or unreadable key is refused before anything else is looked at.
    let sign = if args.sign {
        Some(crate::attest::keys::SigningKey::given(
            args.sign_key.as_deref(),
        )?)
    } else {
        None
    };
    if let Some(workspace) = super::open_workspace(cli, printer)? {
        return family(&workspace, args, options(cli, args, sign), printer);
    }
    if !args.recipes.is_empty() {
        anyhow::bail!(WorkspaceError::NotARoot);
    }
    let mut recipe = super::open_recipe(cli, printer)?;
    if let Some(repository) = &args.repository {
        recipe = recipe.with_repository(repository.clone());
    }
    crate::ops::build(&recipe, &options(cli, args, sign), printer)?;
    Ok(ExitStatus::Success)
}

/// `forge build` at a workspace root: every member (or `--recipe` and what they build from)
/// built, or with `--dry-run` planned, in build order.
fn family(
    workspace: &crate::workspace::Workspace,
    args: &BuildArgs,
    options: BuildOptions,
    printer: &Printer,
) -> anyhow::Result<ExitStatus> {
    let one_recipe = [
        ("--repository", args.repository.is_some()),
        ("--context-out", args.context_out.is_some()),
    ];
    if let Some((flag, _)) = one_recipe.iter().find(|(_, given)| *given) {
        anyhow::bail!(WorkspaceError::OneRecipeFlag { flag });
    }
    let order = workspace.order(&args.recipes)?;
    if args.dry_run {
        crate::ops::family::plan(&order, &options, printer)?;
    } else {
        crate::ops::family::build_all(&order, &options, printer)?;
    }
    Ok(ExitStatus::Success)
}

/// The build options `args` give.
fn options(
    cli: &Cli,
    args: &BuildArgs,
    sign: Option<crate::attest::keys::SigningKey>,
) -> BuildOptions {
    BuildOptions {
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
        nodes: args.node.clone(),
        sign,
    }
}
