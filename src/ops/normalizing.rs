//! After the engine built an image: the image forge publishes, normalized (`normalize`) on the
//! daemon that built it, for the one-platform build and for every node of a multi-platform one.

use crate::engine::{BuildRequest, Builder, Engine, ImageId};
use crate::normalize::{self, Normalized};
use crate::pipeline::human_size;
use crate::printer::Printer;
use crate::recipe::Recipe;
use crate::registry::Credentials;
use crate::types::oci::{Digest, Platform};

/// Normalizes `built`, which `engine` built for `platform` from `recipe` as `request` asked,
/// and says so. `built` is then removed (unless a tag names it), or kept: when it is pushed as
/// the build cache (`request.inline_cache`), and when the classic builder made it, for whose
/// cache it is the last step. The request's credentials pull the base when the daemon does not
/// hold it by name.
pub(super) async fn normalized<E: Engine>(
    recipe: &Recipe,
    engine: &E,
    (built, request): (&ImageId, &BuildRequest<'_>),
    platform: &Platform,
    printer: &Printer,
) -> anyhow::Result<Normalized> {
    let credentials = &request.credentials;
    let normalized = match recorded(recipe, engine, built, platform).await? {
        Some(normalized) => {
            printer.status(
                "Normalized",
                format_args!(
                    "{} (forge.lock records it as made of the image just built; nothing to rewrite)",
                    normalized.id
                ),
            );
            normalized
        }
        None => {
            let base = base_layers(recipe, engine, platform, credentials).await?;
            let base_name = recipe.pins.base.reference();
            let epoch = recipe.source_date_epoch();
            let normalized = normalize::normalize(engine, built, &base, &base_name, epoch).await?;
            printer.status(
                "Normalized",
                format_args!(
                    "{} ({} layers above the base, {} rewritten)",
                    normalized.id,
                    normalized.layers.len(),
                    human_size(normalized.rewritten)
                ),
            );
            printer.detail("Took", normalized.took);
            normalized
        }
    };
    let kept = request.inline_cache || request.builder == Builder::Classic;
    if !kept && normalized.id != *built {
        engine.remove_untagged(built).await?;
    }
    Ok(normalized)
}

/// How the images `one` and `two` on `engine` compare, layer by layer and file by file (the
/// base's layers, equal in both, left out); both are read as normalized, so rewriting a
/// normalized image's layers gives back its own bytes.
pub(super) async fn differences<E: Engine>(
    recipe: &Recipe,
    engine: &E,
    (one, two): (&ImageId, &ImageId),
    platform: &Platform,
    credentials: &[Credentials],
) -> anyhow::Result<normalize::compare::Comparison> {
    let base = base_layers(recipe, engine, platform, credentials).await?;
    let spool = normalize::spool()?;
    let epoch = recipe.source_date_epoch();
    // The archives hold the layers the comparison reads: kept until it is done.
    let (left, _left) = normalize::export(engine, one, &base, spool.path(), epoch).await?;
    let (right, _right) = normalize::export(engine, two, &base, spool.path(), epoch).await?;
    Ok(normalize::compare::compare(&left, &right)?)
}

/// The normalized image forge.lock records as made of `built` (for `platform`, by this
/// normalization's format), when the daemon holds it: a build that ends on the image the last
/// one built reuses it instead of exporting and rewriting it again.
async fn recorded<E: Engine>(
    recipe: &Recipe,
    engine: &E,
    built: &ImageId,
    platform: &Platform,
) -> anyhow::Result<Option<Normalized>> {
    let Some(record) = crate::lock::load(&recipe.root)
        .ok()
        .flatten()
        .and_then(crate::lock::Lock::built)
    else {
        return Ok(None);
    };
    let image = &record.image;
    let same = image.built.as_ref() == Some(&built.0)
        && image.normalized == Some(normalize::FORMAT)
        && image
            .platform
            .as_ref()
            .unwrap_or(&recipe.pins.image.platform)
            == platform;
    if !same || engine.image(image.id.as_str()).await?.is_none() {
        return Ok(None);
    }
    Ok(Some(Normalized {
        id: ImageId(image.id.clone()),
        layers: Vec::new(),
        rewritten: 0,
        already_held: true,
        took: normalize::Phases::default(),
    }))
}

/// The diff ids of the base's layers, as the daemon holds them. A BuildKit build fetches the
/// base without naming it on the daemon; pulling it then fetches only its manifest and config.
pub(super) async fn base_layers<E: Engine>(
    recipe: &Recipe,
    engine: &E,
    platform: &Platform,
    credentials: &[Credentials],
) -> anyhow::Result<Vec<Digest>> {
    let base = &recipe.pins.base;
    let reference: crate::types::oci::ImageRef = base
        .reference()
        .parse()
        .expect("the base and its digest make a reference");
    if let Some(held) = engine.image(reference.as_str()).await? {
        return Ok(held.layers);
    }
    let credentials = credentials
        .iter()
        .find(|credentials| credentials.registry == reference.registry());
    let pulled = engine
        .pull_reference(&reference, platform, credentials)
        .await?;
    Ok(pulled.layers)
}
