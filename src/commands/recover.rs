//! `forge recover [--roll-forward | --roll-back | --drop] [--repository R]`.

use crate::cli::{Cli, RecoverArgs};
use crate::diagnostics::ExitStatus;
use crate::printer::Printer;
use crate::publish::intent::Choice;

pub(super) fn run(cli: &Cli, args: &RecoverArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let mut recipe = super::open_recipe(cli, printer)?;
    if let Some(repository) = &args.repository {
        recipe = recipe.with_repository(repository.clone());
    }
    let choice = match (args.roll_forward, args.roll_back, args.drop) {
        (true, _, _) => Choice::RollForward,
        (_, true, _) => Choice::RollBack,
        (_, _, true) => Choice::Drop,
        _ => Choice::Rule,
    };
    crate::ops::recover(&recipe, choice, &args.insecure_registry, printer)?;
    Ok(ExitStatus::Success)
}
