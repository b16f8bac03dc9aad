//! `forge recover`: settles the publication a killed forge left in `forge.lock.intent`, by the
//! rule (the registry is asked which tags hold the new image) or as the user chooses when the
//! rule cannot be followed: keep every tag on the new image, put every tag back, or forget it.

use anyhow::Context as _;

use crate::printer::{Document, Printer};
use crate::publish::{self, intent};
use crate::recipe::Recipe;
use crate::types::oci::RegistryHost;

/// Runs `forge recover` on `recipe`: settles its interrupted publication as `choice` says,
/// asking the registry (`insecure` hosts over plain HTTP) under the rule.
pub fn recover(
    recipe: &Recipe,
    choice: intent::Choice,
    insecure: &[RegistryHost],
    printer: &Printer,
) -> anyhow::Result<intent::Settled> {
    let root = &recipe.root;
    let _exclusive = publish::lock_recipe(root)?;
    let settled = if intent::Intent::read(root)?.is_none() {
        printer.status(
            "Fresh",
            format_args!("no interrupted publication in {}", root.display()),
        );
        intent::Settled::Nothing
    } else if choice == intent::Choice::Drop {
        // Forgetting moves nothing, so it needs no daemon.
        intent::forget(root, printer)?
    } else {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the async runtime")?;
        let settled = runtime.block_on(async {
            let engine = crate::engine::Docker::connect().await?;
            let registry = intent::registry_of(insecure);
            intent::settle(recipe, &engine, registry, choice, printer).await
        });
        // A registry that stopped answering may still hold a thread: leave it behind.
        runtime.shutdown_background();
        settled?
    };
    printer.document(&Recovered {
        settled: &settled,
        path: intent::path(root).display().to_string(),
    });
    Ok(settled)
}

/// What `forge recover` did: the statuses say it; `--json` prints this.
#[derive(Debug, serde::Serialize)]
struct Recovered<'a, T: serde::Serialize> {
    /// How the intent was settled, if there was one.
    settled: &'a T,
    /// Where the intent is kept.
    path: String,
}

impl<T: serde::Serialize> Document for Recovered<'_, T> {}
