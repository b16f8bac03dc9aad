//! `forge lock`: the recipe in; forge.lock's `[inputs]` out, computed as a build computes them
//! (render, patch, assemble the context) but with no daemon and no build, so that a fresh clone
//! can build `--locked` and a pull request that moves an input without it fails its check.
//!
//! A recorded build whose inputs are still the recipe's is kept as it is; one of other inputs
//! gives way to the inputs alone (with the base it recorded), since it no longer describes what
//! this recipe builds.

use crate::context::Output;
use crate::fs::Written;
use crate::lock::{self, Lock};
use crate::pipeline;
use crate::printer::{Document, Printer};
use crate::recipe::Recipe;

/// Runs `forge lock` on `recipe`.
pub fn lock(recipe: &Recipe, printer: &Printer) -> anyhow::Result<()> {
    let plan = pipeline::plan(recipe, Output::Discard, true, None, printer)?;
    let inputs = plan.inputs.expect("the plan computes the inputs");
    let previous = recipe.lock()?.map(std::sync::Arc::unwrap_or_clone);
    let had_build = matches!(previous, Some(Lock::Built(_)));
    let lock = match previous {
        Some(previous) => previous.with_inputs(inputs),
        None => Lock::Inputs {
            inputs: Box::new(inputs),
            base: None,
        },
    };
    let written = lock.write(&recipe.root)?;
    recipe.lock_written();
    let path = lock::path(&recipe.root);
    match (written, &lock) {
        (Written::Unchanged, _) => printer.status("Fresh", format_args!("{}", path.display())),
        (Written::Changed, Lock::Inputs { .. }) if had_build => printer.status(
            "Locked",
            format_args!(
                "the inputs in {}; the build it recorded was of other inputs and is no longer listed there (its record stays attached to the image in the registry)",
                path.display()
            ),
        ),
        (Written::Changed, _) => {
            printer.status("Locked", format_args!("the inputs in {}", path.display()))
        }
    }
    printer.document(&Locked {
        path: path.display().to_string(),
        changed: written == Written::Changed,
        build_recorded: matches!(lock, Lock::Built(_)),
        inputs: lock.inputs(),
    });
    Ok(())
}

/// What `forge lock` did: the statuses say it; `--json` prints this.
#[derive(Debug, serde::Serialize)]
struct Locked<'a> {
    /// forge.lock's path.
    path: String,
    /// Whether the file changed.
    changed: bool,
    /// Whether it still records a build (the inputs are those the build was made of).
    build_recorded: bool,
    /// The recipe's inputs as written.
    inputs: &'a crate::lock::Inputs,
}

impl Document for Locked<'_> {}
