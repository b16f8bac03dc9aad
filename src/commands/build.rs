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
    if let Some(workspace) = super::open_workspace(cli, printer)? {
        return family(&workspace, args, options(cli, args, sign), printer);
    }
    if !args.recipes.is_empty() {
        anyhow::bail!(NotAWorkspace);
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
        anyhow::bail!(OneRecipeFlag { flag });
    }
    let order = workspace.order(&args.recipes)?;
    if args.dry_run {
        crate::ops::build::plan_workspace(&order, &options, printer)?;
    } else {
        crate::ops::build::build_workspace(&order, &options, printer)?;
    }
    Ok(ExitStatus::Success)
}

/// `--recipe` outside a workspace.
#[derive(Debug, thiserror::Error)]
#[error("--recipe names a member of a workspace, and there is no forge-workspace.toml here")]
struct NotAWorkspace;

impl crate::diagnostics::Advise for NotAWorkspace {
    fn advice(&self) -> crate::diagnostics::Advice {
        crate::diagnostics::Advice::Hint(
            "run forge at the workspace root (or -C ROOT), or leave --recipe out to build the recipe here".to_owned(),
        )
    }
}

crate::advised!(NotAWorkspace);

/// A flag that names one recipe's file or repository, given at a workspace root.
#[derive(Debug, thiserror::Error)]
#[error("{flag} applies to one recipe, and this is a workspace root of several")]
struct OneRecipeFlag {
    flag: &'static str,
}

impl crate::diagnostics::Advise for OneRecipeFlag {
    fn advice(&self) -> crate::diagnostics::Advice {
        crate::diagnostics::Advice::Hint(format!(
            "build the one member with `forge -C MEMBER build {}`; nothing was built",
            self.flag
        ))
    }
}

crate::advised!(OneRecipeFlag);

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
