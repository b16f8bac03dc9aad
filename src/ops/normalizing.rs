//! After the engine built an image: the image forge publishes, normalized (`normalize`) on the
//! daemon that built it, for the one-platform build and for every node of a multi-platform one.

use crate::conduit::Conduit;
use crate::engine::{BuildRequest, Engine, ImageId, ImageInfo};
use crate::normalize::manifest::{Descriptor, Manifest, Parsed};
use crate::normalize::{self, Base, Normalized};
use crate::pipeline::human_size;
use crate::printer::Printer;
use crate::recipe::Recipe;
use crate::registry::{Credentials, Registry as _, RegistryClient, RemoteRepository};
use crate::types::oci::{Digest, ImageRef, Platform, RegistryHost};

/// How much of the base the daemon may send forge before a build says so: a small base of no
/// registry (the offline example's) crosses the conduit unremarked.
const BASE_SENT_WARNING: u64 = 64 * 1024 * 1024;

/// What a normalization works from.
pub(super) struct Normalizing<'a> {
    /// The recipe built.
    pub recipe: &'a Recipe,
    /// The engine's image.
    pub built: &'a ImageId,
    /// The build that made it: its credentials pull the base when the daemon does not hold it
    /// by name.
    pub request: &'a BuildRequest<'a>,
    /// The platform it was built for.
    pub platform: &'a Platform,
    /// Whether an image forge.lock records as made of `built` may stand without a rewrite; a
    /// push rewrites always, for the blobs it uploads.
    pub reuse: bool,
    /// Registries besides loopback ones spoken to over plain HTTP.
    pub insecure: &'a [RegistryHost],
    /// A container of the base made while the build ran, if one was.
    pub probe: Option<&'a normalize::Probe>,
}

/// Normalizes the image a build made, and says so. Returns the normalized image and, unless
/// forge.lock's record stood in for a rewrite, the conduit that holds what forge wrote, to be
/// closed (`Conduit::close`) once the image is published: the engine's image goes with it then,
/// unless a tag names it (the build cache).
pub(super) async fn normalized<E: Engine>(
    job: &Normalizing<'_>,
    engine: &E,
    printer: &Printer,
) -> anyhow::Result<(Normalized, Option<Conduit>)> {
    if job.reuse
        && let Some(normalized) = recorded(job.recipe, engine, job.built, job.platform).await?
    {
        printer.status(
            "Normalized",
            format_args!(
                "{} (forge.lock records it as made of the image just built; nothing to rewrite)",
                normalized.config
            ),
        );
        return Ok((normalized, None));
    }
    let base = base(
        job.recipe,
        engine,
        job.platform,
        (&job.request.credentials, job.insecure),
    )
    .await?;
    let conduit = Conduit::open_for(engine).await?;
    let epoch = job.recipe.source_date_epoch();
    let normalizing = normalize::normalize(
        (engine, &conduit, job.probe),
        job.built,
        (&base, job.platform),
        epoch,
    );
    let normalized = match normalizing.await {
        Ok(normalized) => normalized,
        Err(error) => {
            conduit.close(engine).await;
            return Err(error.into());
        }
    };
    printer.status(
        "Normalized",
        format_args!(
            "{} ({} layers above the base, {} rewritten)",
            normalized.config,
            normalized.layers.len(),
            human_size(normalized.rewritten)
        ),
    );
    printer.detail(
        "Took",
        format_args!(
            "{} ({} read from the daemon)",
            normalized.took,
            human_size(normalized.read)
        ),
    );
    let sent: u64 = normalized.base_sent.iter().map(|(_, blob)| blob.size).sum();
    if sent > BASE_SENT_WARNING {
        let layers: Vec<String> = normalized
            .base_sent
            .iter()
            .map(|(index, descriptor)| {
                format!(
                    "{index} ({}, {})",
                    descriptor.digest,
                    human_size(descriptor.size)
                )
            })
            .collect();
        printer.warn(format_args!(
            "the daemon sent forge the base's layer {} as well: it holds {} under no digest {}; pull the base from its registry (`docker pull {}`) so that only forge's layers leave the daemon",
            layers.join(", "),
            if layers.len() == 1 { "it" } else { "them" },
            if base.blobs.is_empty() { "of a registry" } else { "its registry gives" },
            base.name
        ));
    }
    Ok((normalized, Some(conduit)))
}

/// How the images `one` and `two` on `engine` compare, layer by layer and file by file (the
/// base's layers, equal in both, left out and never read), read through `open` (the conduit a
/// normalization left open), else through one of its own.
pub(super) async fn differences<E: Engine>(
    (recipe, engine, open): (&Recipe, &E, Option<&Conduit>),
    (one, two): (&ImageId, &ImageId),
    platform: &Platform,
    credentials: &[Credentials],
) -> anyhow::Result<normalize::compare::Comparison> {
    let base = base(recipe, engine, platform, (credentials, &[])).await?;
    let own = match open {
        Some(_) => None,
        None => Some(Conduit::open_for(engine).await?),
    };
    let conduit = open
        .or(own.as_ref())
        .expect("a conduit, open or of its own");
    let compared = async {
        let left = normalize::read_image(engine, conduit, one, (&base, platform)).await?;
        let right = normalize::read_image(engine, conduit, two, (&base, platform)).await?;
        anyhow::Ok(normalize::compare::compare(&left, &right)?)
    }
    .await;
    if let Some(own) = own {
        own.close(engine).await;
    }
    compared
}

/// The normalized image forge.lock records as made of `built` (for `platform`, by this
/// normalization's format and the recipe's epoch), when the daemon holds it: a build that ends
/// on the image the last one built reuses it instead of reading and rewriting it again.
async fn recorded<E: Engine>(
    recipe: &Recipe,
    engine: &E,
    built: &ImageId,
    platform: &Platform,
) -> anyhow::Result<Option<Normalized>> {
    let Some(record) = recipe.record()? else {
        return Ok(None);
    };
    let image = &record.image;
    let same = image.built.as_ref() == Some(&built.0)
        && image.normalized == Some(normalize::FORMAT)
        && image.epoch == Some(recipe.source_date_epoch())
        && image
            .platform
            .as_ref()
            .unwrap_or(&recipe.pins.image.platform)
            == platform;
    let Some(manifest) = image.manifest.clone().filter(|_| same) else {
        return Ok(None);
    };
    let Some(held) = held(engine, &image.id, &manifest).await? else {
        return Ok(None);
    };
    Ok(Some(Normalized {
        id: held.id,
        config: image.id.clone(),
        manifest,
        layers: Vec::new(),
        rewritten: 0,
        read: 0,
        base_sent: Vec::new(),
        already_held: true,
        took: normalize::Phases::default(),
        blobs: None,
    }))
}

/// The image of config `config` and manifest `manifest` as `engine` holds it, by whichever the
/// daemon names it by (the config's digest in the classic store, the manifest's in the
/// containerd store).
pub(super) async fn held<E: Engine>(
    engine: &E,
    config: &Digest,
    manifest: &Digest,
) -> anyhow::Result<Option<ImageInfo>> {
    for candidate in [manifest, config] {
        if let Some(held) = engine.image(candidate.as_str()).await? {
            return Ok(Some(held));
        }
    }
    Ok(None)
}

/// The base of `recipe` on `engine` for `platform`: its layers and history as the daemon holds
/// them (pulled with `credentials` when it does not hold it by name), and its blobs as its
/// registry holds them, asked over plain HTTP of loopback registries and `insecure` ones.
pub(super) async fn base<E: Engine>(
    recipe: &Recipe,
    engine: &E,
    platform: &Platform,
    (credentials, insecure): (&[Credentials], &[RegistryHost]),
) -> anyhow::Result<Base> {
    let info = base_image(recipe, engine, platform, credentials).await?;
    let history = engine.history_len(&info.id).await?;
    let reference = recipe.pins.base.reference();
    let manifest = recipe
        .pins
        .base
        .digest
        .clone()
        .or_else(|| info.digest_in(recipe.pins.base.image.as_str()));
    let blobs = match manifest {
        Some(manifest) => {
            let asked = (recipe.clone(), platform.clone(), insecure.to_vec());
            tokio::task::spawn_blocking(move || {
                registry_blobs(&asked.0, &manifest, &asked.1, asked.2)
            })
            .await
            .unwrap_or_default()
        }
        None => Vec::new(),
    };
    let blobs = if blobs.len() == info.layers.len() {
        blobs
    } else {
        Vec::new()
    };
    Ok(Base {
        name: reference,
        id: info.id,
        diff_ids: info.layers,
        history,
        blobs,
    })
}

/// The layers' blobs the base's registry holds under `manifest` (for an index, its entry for
/// `platform`); none when the registry cannot be asked or answers with something else.
fn registry_blobs(
    recipe: &Recipe,
    manifest: &Digest,
    platform: &Platform,
    insecure: Vec<RegistryHost>,
) -> Vec<Descriptor> {
    let base = &recipe.pins.base.image;
    let client = RegistryClient::new(insecure).with_credentials_for(
        base.registry().as_str(),
        Some(recipe.pins.image.repository.registry().as_str()),
    );
    let remote = RemoteRepository::of(base);
    let fetch = |digest: &Digest| -> Option<Parsed> {
        let fetched = client.manifest(&remote, digest.as_str()).ok()?;
        (fetched.received == *digest)
            .then(|| Manifest::parse(&fetched.body).ok())
            .flatten()
    };
    let mut parsed = fetch(manifest);
    if let Some(entry) = parsed
        .as_ref()
        .and_then(|parsed| parsed.platform_entry(platform))
    {
        parsed = fetch(&entry);
    }
    match parsed {
        Some(Parsed::Image(image)) => image.layers,
        _ => Vec::new(),
    }
}

/// A container of the base of `recipe`, when `engine` holds the base by name already: made
/// while the build runs, so that the normalization that follows need not wait for it. None
/// where the record will likely stand without a normalization (`reuse`, and forge.lock records
/// an image normalized as this forge does, at the recipe's date).
pub(super) async fn early_probe<E: Engine>(
    recipe: &Recipe,
    engine: &E,
    reuse: bool,
) -> Option<normalize::Probe> {
    // The plan read forge.lock already and stopped on one it cannot read.
    let recorded = recipe.record().ok().flatten().is_some_and(|record| {
        record.image.normalized == Some(normalize::FORMAT)
            && record.image.epoch == Some(recipe.source_date_epoch())
    });
    if reuse && recorded {
        return None;
    }
    let held = engine.image(&recipe.pins.base.reference()).await.ok()??;
    if normalize::Probe::remembered(&held.id) {
        return None;
    }
    normalize::Probe::open(engine, &held.id).await.ok()
}

/// The base image as the daemon holds it. A BuildKit build fetches the base without naming it
/// on the daemon; pulling it then fetches only its manifest and config.
async fn base_image<E: Engine>(
    recipe: &Recipe,
    engine: &E,
    platform: &Platform,
    credentials: &[Credentials],
) -> anyhow::Result<ImageInfo> {
    let reference: ImageRef = recipe
        .pins
        .base
        .reference()
        .parse()
        .expect("the base and its digest make a reference");
    if let Some(held) = engine.image(reference.as_str()).await?
        && !held.layers.is_empty()
    {
        return Ok(held);
    }
    let credentials = credentials
        .iter()
        .find(|credentials| reference.registry().is_named(&credentials.registry));
    let pulled = engine
        .pull_reference(&reference, platform, credentials)
        .await?;
    Ok(pulled)
}
