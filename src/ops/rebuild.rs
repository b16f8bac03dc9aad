//! `forge verify-digest --rebuild`: the recorded inputs built again on the daemon given, with no
//! cache, normalized, and compared with the recorded image.
//!
//! 1. Build the plan (whose inputs the caller has checked against the record) with the recorded
//!    builder, platform and revision, and normalize the result as `forge build` does.
//! 2. The same image id is the proof: one row, `rebuild image`, that holds.
//! 3. Otherwise the recorded image is found on the daemon, or pulled by the digest a pushed tag
//!    recorded, both images are exported, and a row is added for each config field, each layer
//!    and, in it, each file that differs (path, then size and sha256 on each side), so that a
//!    step writing the clock, a build path or a random name is named in one run.
//!
//! The rebuilt image is removed afterwards unless it is the recorded one.

use crate::engine::{BuildRequest, Builder, Docker, Engine, ImageId};
use crate::lock::Record;
use crate::normalize::compare;
use crate::pipeline::{self, Plan};
use crate::printer::Printer;
use crate::progress::{Display, ProgressMode};
use crate::recipe::Recipe;
use crate::types::oci::{Digest, Platform};
use crate::verify::{Check, Kind};

use super::build_request::build_credentials;
use super::normalizing::{Normalizing, differences, normalized};

/// Rebuilds `plan` of `recipe` as `record` says it was built, on `engine`, and compares the
/// result with the recorded image.
pub(super) async fn rebuild(
    recipe: &Recipe,
    record: &Record,
    plan: &Plan,
    engine: &Docker,
    printer: &Printer,
) -> anyhow::Result<Vec<Check>> {
    let platform = record
        .image
        .platform
        .as_ref()
        .unwrap_or(&recipe.pins.image.platform);
    let credentials = build_credentials(recipe, printer);
    let builder = record.image.builder.unwrap_or(Builder::Buildkit);
    let request = BuildRequest {
        context: plan
            .context
            .archive()
            .expect("verify assembles the context into a file"),
        builder,
        no_cache: true,
        platform: Some(platform),
        args: pipeline::build_args(recipe, record.image.revision.as_deref()),
        labels: plan.labels(),
        credentials: credentials.clone(),
        cache_from: Vec::new(),
        inline_cache: false,
    };
    printer.status(
        "Rebuilding",
        format_args!(
            "{} for {platform} with no cache on {}",
            record.image.repository,
            engine.host()
        ),
    );
    let mut display = Display::new(ProgressMode::Auto, printer, false);
    let built = engine
        .build(&request, &mut |event| display.event(event))
        .await;
    display.finish();
    let built = built?;
    let job = Normalizing {
        recipe,
        built: &built,
        request: &request,
        platform,
        reuse: false,
        insecure: &[],
        probe: None,
    };
    let (normalized, conduit) = normalized(&job, engine, printer).await?;
    let outcome = compared(
        (recipe, record),
        (engine, conduit.as_ref()),
        &normalized,
        (platform, &credentials),
        printer,
    )
    .await;
    // The rebuilt image goes with the conduit, unless it is the recorded one, which its tags
    // hold.
    if let Some(conduit) = conduit {
        conduit.close(engine).await;
    }
    outcome
}

/// The rows of the rebuilt image against the recorded one: one when they are the same image,
/// else one for each config field, layer and file that differs.
async fn compared(
    (recipe, record): (&Recipe, &Record),
    (engine, conduit): (&Docker, Option<&crate::conduit::Conduit>),
    rebuilt: &crate::normalize::Normalized,
    (platform, credentials): (&Platform, &[crate::registry::Credentials]),
    printer: &Printer,
) -> anyhow::Result<Vec<Check>> {
    let image = Check::compare(
        Kind::Rebuild,
        "image",
        record.image.id.as_str(),
        rebuilt.config.as_str(),
    );
    if image.ok {
        return Ok(vec![image]);
    }
    let recorded = recorded_on(engine, record, platform, credentials, printer).await?;
    let pair = (&recorded, &rebuilt.id);
    let comparison = differences((recipe, engine, conduit), pair, platform, credentials).await?;
    let mut checks = vec![image];
    checks.extend(rows(&comparison));
    Ok(checks)
}

/// The recorded image as `engine` holds it: there already, or pulled by the digest a pushed
/// tag recorded.
async fn recorded_on(
    engine: &Docker,
    record: &Record,
    platform: &Platform,
    credentials: &[crate::registry::Credentials],
    printer: &Printer,
) -> anyhow::Result<ImageId> {
    let manifest = record.image.manifest.as_ref().unwrap_or(&record.image.id);
    if let Some(held) = super::normalizing::held(engine, &record.image.id, manifest).await? {
        return Ok(held.id);
    }
    let repository = &record.image.repository;
    let Some(pushed) = record.tags.iter().find_map(|tag| tag.pushed.as_ref()) else {
        anyhow::bail!(crate::diagnostics::CheckFailed::new(
            format!(
                "the recorded image {} is not on {} and was never pushed, so the rebuild has nothing to compare with",
                record.image.id,
                engine.host()
            ),
            "rebuild on the daemon that built it (--host), or push it first (`forge build --push`)",
        ));
    };
    printer.status(
        "Pulling",
        format_args!("{repository}@{pushed} to compare with"),
    );
    let credentials = credentials
        .iter()
        .find(|credentials| repository.registry().is_named(&credentials.registry));
    let pulled = engine
        .pull(repository, pushed, platform, credentials, &mut |_| {})
        .await?;
    Ok(pulled.id)
}

/// The rows of a comparison: each config field, each layer and each file that differs.
fn rows(comparison: &compare::Comparison) -> Vec<Check> {
    let mut checks = Vec::new();
    for (field, recorded, rebuilt) in &comparison.config {
        checks.push(Check::compare(
            Kind::Rebuild,
            format!("config {field}"),
            recorded.as_str(),
            rebuilt.as_str(),
        ));
    }
    let digest = |digest: &Option<Digest>| {
        digest
            .as_ref()
            .map_or_else(|| "no layer".to_owned(), Digest::to_string)
    };
    for layer in &comparison.layers {
        let step = layer
            .step
            .as_deref()
            .map(|step| format!(" ({step})"))
            .unwrap_or_default();
        checks.push(Check::compare(
            Kind::Rebuild,
            format!("layer {}{step}", layer.index),
            digest(&layer.recorded),
            digest(&layer.rebuilt),
        ));
        for entry in &layer.entries {
            // Mode, owner and mtime are shown only when they are all that differs.
            let full = match (&entry.recorded, &entry.rebuilt) {
                (Some(one), Some(two)) => one.describe(false) == two.describe(false),
                _ => false,
            };
            let describe = |side: &Option<compare::Entry>| {
                side.as_ref()
                    .map_or_else(|| "absent".to_owned(), |entry| entry.describe(full))
            };
            checks.push(Check::compare(
                Kind::Rebuild,
                format!("layer {} {}", layer.index, entry.path),
                describe(&entry.recorded),
                describe(&entry.rebuilt),
            ));
        }
    }
    checks
}
