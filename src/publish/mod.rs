//! After the build: the image just built in; its tags moved, pushed and recorded out.
//!
//! 1. Refuse (`refuse`): an immutable tag that names another image is not re-pointed, neither
//!    on the daemon nor, when pushing, in the registry, unless `--force`. Every refusal comes
//!    before the first tag moves.
//! 2. Tag: point each tag at the image; a tag already there is fresh.
//! 3. Push, immutable tags first, so that a failure there leaves the moving tags of the
//!    registry where they were; a tag the registry already holds with this image is kept.
//! 4. Record forge.lock.
//!
//! A failure or a stop at any point puts every moved tag back, last moved first, and leaves
//! forge.lock as it was, with one exception: a push that fails after other tags reached the
//! registry keeps the tags and records exactly the tags in the registry, so that the record
//! never disagrees with the registry, and then fails with `BuildError::PartlyPushed`.
//!
//! What cannot be caught (SIGKILL) is recovered from: before the first tag moves, `intent`
//! writes what is about to happen next to forge.lock, and the next forge settles it by the same
//! rule.

mod error;
mod guard;
pub mod image_index;
pub mod intent;
mod journal;
mod refuse;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use crate::engine::steps::Event;
use crate::engine::{Engine, EngineError, ImageId};
use crate::fs::Written;
use crate::lock::{self, BaseRecord, Inputs, PatchRecord, Record};
use crate::pins::Mutability;
use crate::pipeline::{self, Plan};
use crate::printer::Printer;
use crate::recipe::{Recipe, ResolvedTag};
use crate::registry::Credentials;
use crate::types::oci::{Digest, Platform, Repository, Tag};

pub use error::BuildError;
pub use guard::{Signals, Stop, lock_recipe};
use journal::{Journal, Moved, partly_pushed, rollback};
pub use refuse::{RegistryTags, RemoteTags};

/// What to publish: the image just built and what forge.lock records of it.
#[derive(Debug, Clone, Copy)]
pub struct Publication<'a> {
    /// The recipe: its folder holds forge.lock, its pins.toml names the repository and the base.
    pub recipe: &'a Recipe,
    /// The image just built, as the daemon names it.
    pub image: &'a ImageId,
    /// Its image id (its config's digest), one on every engine.
    pub id: &'a Digest,
    /// The manifest forge wrote for it, when forge normalized it: what a push leaves in the
    /// registry.
    pub manifest: Option<&'a Digest>,
    /// The blobs forge wrote for it, which a push uploads before the daemon pushes, so that
    /// the daemon finds them and names them as forge wrote them.
    pub blobs: Option<&'a crate::normalize::Blobs>,
    /// The epoch the normalization used.
    pub epoch: u64,
    /// The platform it was built for.
    pub platform: &'a Platform,
    /// Its tags, in pins.toml order.
    pub tags: &'a [ResolvedTag],
    /// The inputs it was built from.
    pub inputs: &'a Inputs,
    /// The patches applied, in order.
    pub patches: &'a [PatchRecord],
    /// The recipe repository's commit; `None` outside git.
    pub revision: Option<&'a str>,
    /// Push every tag after tagging.
    pub push: bool,
    /// Re-point immutable tags that name another image.
    pub force: bool,
    /// The daemon's builder that built it.
    pub builder: crate::engine::Builder,
    /// The image the engine built, which forge normalized into `image`.
    pub built: Option<&'a ImageId>,
}

impl Publication<'_> {
    /// The repository the tags live in.
    fn repository(&self) -> &Repository {
        &self.recipe.pins.image.repository
    }
}

/// What a publication leaves behind.
#[derive(Debug)]
pub struct Published {
    /// The record written to forge.lock.
    pub record: Record,
    /// Whether forge.lock changed.
    pub written: Written,
}

impl Published {
    /// The `--json` document of the build of `plan` that this publication finished.
    pub fn document<'a>(&'a self, plan: &'a Plan) -> BuiltDocument<'a> {
        let repository = self.record.image.repository.as_str();
        let tagged = |name: &Tag| format!("{repository}:{name}");
        BuiltDocument {
            image: BuiltImage {
                id: &self.record.image.id,
                repository,
                tags: self
                    .record
                    .tags
                    .iter()
                    .map(|tag| tagged(&tag.name))
                    .collect(),
                pushed: self
                    .record
                    .tags
                    .iter()
                    .filter_map(|tag| {
                        Some(PushedTag {
                            tag: tagged(&tag.name),
                            digest: tag.pushed.as_ref()?,
                        })
                    })
                    .collect(),
            },
            context_digest: &plan.context.digest,
            dockerfile_digest: plan.dockerfile.digest(),
            patches: pipeline::patch_entries(&self.record.patches),
            base: &self.record.base,
            lock: LockChange {
                path: lock::LOCK_FILE,
                changed: self.written == Written::Changed,
            },
            attachments: &self.record.attachments,
        }
    }
}

/// A finished build as `forge build --json` prints it: the image, its tags and pushes, the
/// digests of what it was built from, the patches, the base, forge.lock, and (for a signed
/// push) the attachments.
#[derive(Debug, serde::Serialize)]
pub struct BuiltDocument<'a> {
    image: BuiltImage<'a>,
    context_digest: &'a Digest,
    dockerfile_digest: Digest,
    patches: Vec<pipeline::PatchEntry<'a>>,
    base: &'a BaseRecord,
    lock: LockChange,
    /// Only a signed push has attachments.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    attachments: &'a [lock::AttachmentRecord],
}

/// The image a build made, and where it went.
#[derive(Debug, serde::Serialize)]
struct BuiltImage<'a> {
    id: &'a Digest,
    repository: &'a str,
    tags: Vec<String>,
    pushed: Vec<PushedTag<'a>>,
}

/// A tag pushed, and the manifest digest the registry holds under it.
#[derive(Debug, serde::Serialize)]
struct PushedTag<'a> {
    tag: String,
    digest: &'a Digest,
}

/// forge.lock, and whether the build changed it.
#[derive(Debug, serde::Serialize)]
struct LockChange {
    path: &'static str,
    changed: bool,
}

/// Refuses, tags, pushes (with `publication.push`) and records the image built, handing the
/// pushes' progress to `events`. `registry` opens the registry of the image's repository, on a
/// thread of its own, when pushing. Whatever fails, or `stop` arriving first, puts every
/// moved tag back before the error is returned.
pub async fn publish<E: Engine, R: RegistryTags + Send + 'static>(
    publication: &Publication<'_>,
    engine: &E,
    registry: impl FnOnce() -> anyhow::Result<R> + Send + 'static,
    stop: &mut impl Stop,
    events: &mut dyn FnMut(Event<'_>),
    printer: &Printer,
) -> anyhow::Result<Published> {
    let mut progress = Progress::default();
    let outcome = tokio::select! {
        biased;
        signal = stop.received() => Err(BuildError::Interrupted { signal }.into()),
        outcome = stages(publication, engine, registry, events, printer, &mut progress) => outcome,
    };
    let (published, stopped) = match outcome {
        Ok(done) => done,
        Err(error) => {
            match progress.pushing {
                // The daemon may have pushed a tag forge did not see before it stopped: the
                // registry decides, by the rule the next forge would follow.
                Some(opened) => {
                    let stopped = matches!(
                        error.downcast_ref::<BuildError>(),
                        Some(BuildError::Interrupted { .. })
                    );
                    settle_stopped_push(publication, engine, opened, stopped, printer).await;
                }
                None => {
                    if rollback(engine, publication.repository(), &progress.moved, printer).await {
                        intent::remove(&publication.recipe.root)?;
                    }
                }
            }
            return Err(error);
        }
    };
    let lock_path = lock::path(&publication.recipe.root);
    match published.written {
        Written::Changed => printer.status("Recorded", lock_path.display()),
        Written::Unchanged => printer.status("Fresh", lock_path.display()),
    }
    if let Some(source) = stopped {
        return Err(partly_pushed(&published.record, source).into());
    }
    Ok(published)
}

/// How far the stages got: each tag listed before it moves, and the registry once the pushes
/// begin.
struct Progress<R> {
    moved: Vec<Moved>,
    pushing: Option<R>,
}

impl<R> Default for Progress<R> {
    fn default() -> Self {
        Self {
            moved: Vec::new(),
            pushing: None,
        }
    }
}

/// Settles a publication that failed or was stopped while pushing, as `intent::settle` would,
/// asking `registry` which tags hold the new image. When the registry cannot say, a push the
/// daemon reported failed (`stopped` false) is rolled back on the daemon's word; one cut short
/// by a stop has no such word, so the intent stays for the next forge and a warning says so.
async fn settle_stopped_push<E: Engine, R: RegistryTags + Send + 'static>(
    publication: &Publication<'_>,
    engine: &E,
    registry: R,
    stopped: bool,
    printer: &Printer,
) {
    let recipe = publication.recipe;
    let rule = intent::Choice::Rule;
    let mut settled = intent::settle(recipe, engine, move |_, _| Ok(registry), rule, printer).await;
    let unknown = |error: &anyhow::Error| {
        error
            .downcast_ref::<intent::IntentError>()
            .is_some_and(|error| matches!(error, intent::IntentError::RegistryUnknown { .. }))
    };
    if !stopped && settled.as_ref().is_err_and(unknown) {
        let unasked = |_, _| -> anyhow::Result<R> { unreachable!("a roll back asks no registry") };
        settled = intent::settle(recipe, engine, unasked, intent::Choice::RollBack, printer).await;
    }
    if let Err(error) = settled {
        printer.warn(format_args!(
            "{error:#}; {} stays, and the next forge command of the recipe settles it",
            intent::INTENT_FILE
        ));
    }
}

/// The stages in order, noting in `progress` each tag before it moves and the registry before
/// the first push. Returns what was recorded, and the error that stopped the push part way, if
/// one did.
async fn stages<E: Engine, R: RegistryTags + Send + 'static>(
    publication: &Publication<'_>,
    engine: &E,
    registry: impl FnOnce() -> anyhow::Result<R> + Send + 'static,
    events: &mut dyn FnMut(Event<'_>),
    printer: &Printer,
    progress: &mut Progress<R>,
) -> anyhow::Result<(Published, Option<EngineError>)> {
    // What the tags and the base name now, asked all at once rather than one after another.
    let lookups = publication.tags.iter().map(|tag| {
        let reference = format!("{}:{}", publication.repository(), tag.tag);
        async move { engine.image(&reference).await.map_err(anyhow::Error::from) }
    });
    let (current, base) = tokio::try_join!(
        futures_util::future::try_join_all(lookups),
        base_record(publication.recipe, engine),
    )?;
    // Read before anything moves: a record forge cannot read is not overwritten.
    let recorded = publication.recipe.record()?;
    let previous = refuse::on_the_daemon(publication, current)?;
    let (opened, credentials, kept) = if publication.push {
        let (opened, credentials, kept) = refuse::in_the_registry(publication, registry).await?;
        (Some(opened), credentials, kept)
    } else {
        (None, None, BTreeMap::new())
    };
    let mut journal = Journal::new(publication, &previous, base, recorded.as_ref())?;
    let opened = match (opened, publication.blobs) {
        (Some(registry), Some(blobs)) if kept.len() < publication.tags.len() => {
            let base = publication.recipe.pins.base.image.clone();
            Some(upload(registry, (blobs.clone(), base), printer).await?)
        }
        (opened, _) => opened,
    };
    move_tags(publication, engine, &previous, &mut progress.moved, printer).await?;
    let stopped = if publication.push {
        progress.pushing = opened;
        push(
            (publication, engine),
            (&kept, credentials.as_ref(), &mut progress.pushing),
            &mut journal,
            events,
            printer,
        )
        .await?
    } else {
        None
    };
    let record = journal.intent.record_so_far();
    // A synchronous write: a stop cannot interrupt it half way.
    let written = record.write(&publication.recipe.root)?;
    publication.recipe.lock_written();
    intent::remove(&publication.recipe.root)?;
    Ok((Published { record, written }, stopped))
}

/// The base image as the record names it: pins.toml's reference and digest, or the digest the
/// local image has in the base's repository, and the local image id when the daemon has it.
async fn base_record<E: Engine>(recipe: &Recipe, engine: &E) -> anyhow::Result<BaseRecord> {
    let base = &recipe.pins.base;
    let mut record = BaseRecord {
        image: base.image.clone(),
        digest: base.digest.clone(),
        id: None,
        packages: std::collections::BTreeMap::new(),
        glibc: None,
        python: None,
    };
    if let Some(local) = engine.image(base.image.as_str()).await? {
        if record.digest.is_none() {
            record.digest = local.digest_in(base.image.as_str());
        }
        // A containerd store names the base by its manifest, the digest already recorded: its
        // image id is not known there.
        if record.digest.as_ref() != Some(&local.id.0) {
            record.id = Some(local.id.0);
        }
    }
    Ok(record)
}

/// Points each tag at the image, skipping those already there; `previous` holds what each
/// named before.
async fn move_tags<E: Engine>(
    publication: &Publication<'_>,
    engine: &E,
    previous: &[(&ResolvedTag, Option<ImageId>)],
    moved: &mut Vec<Moved>,
    printer: &Printer,
) -> Result<(), EngineError> {
    let repository = publication.repository();
    for (tag, before) in previous {
        if before.as_ref() == Some(publication.image) {
            printer.status("Fresh", format_args!("{repository}:{}", tag.tag));
            continue;
        }
        // Listed before the daemon is asked, so that a stop while it answers still puts the
        // tag back.
        moved.push((tag.tag.clone(), before.clone()));
        engine.tag(publication.image, repository, &tag.tag).await?;
        printer.status("Tagged", format_args!("{repository}:{}", tag.tag));
    }
    Ok(())
}

/// Uploads forge's blobs of the image (its config and its layers above the base) that the
/// registry does not hold, on a thread of their own; returns the registry.
async fn upload<R: RegistryTags + Send + 'static>(
    registry: R,
    (blobs, base): (crate::normalize::Blobs, crate::types::oci::ImageRef),
    printer: &Printer,
) -> anyhow::Result<R> {
    let uploaded = tokio::task::spawn_blocking(move || {
        let done = registry.upload(&blobs, &base);
        (registry, done)
    })
    .await
    .expect("the upload does not panic");
    let (registry, done) = uploaded;
    let sent = done?;
    if sent > 0 {
        printer.detail(
            "Uploaded",
            format_args!("{sent} of forge's blobs before the daemon's push"),
        );
    }
    Ok(registry)
}

/// Puts forge's manifest under `tag` when the daemon's push left another one there (a daemon
/// that compressed a layer itself, the registry lacking forge's blob); returns what the tag
/// names then.
async fn put_forge_manifest<R: RegistryTags + Send + 'static>(
    registry: &mut Option<R>,
    (tag, pushed): (&Tag, Digest),
    publication: &Publication<'_>,
    printer: &Printer,
) -> Digest {
    let (Some(blobs), Some(manifest)) = (publication.blobs, publication.manifest) else {
        return pushed;
    };
    if !blobs.from_registry {
        return pushed;
    }
    if pushed == *manifest {
        return pushed;
    }
    match put_manifest(registry, tag, &blobs.manifest).await {
        Ok(digest) => digest,
        Err(error) => {
            printer.warn(format_args!(
                "the daemon pushed {}:{tag} as {pushed}, not as forge's manifest {manifest}, and forge could not put its own there ({error:#}); the image is the same, its manifest digest is the daemon's",
                publication.repository()
            ));
            pushed
        }
    }
}

/// Puts `manifest` under `tag` in `registry`, on a thread of its own; its digest.
async fn put_manifest<R: RegistryTags + Send + 'static>(
    registry: &mut Option<R>,
    tag: &Tag,
    manifest: &[u8],
) -> anyhow::Result<Digest> {
    let Some(opened) = registry.take() else {
        anyhow::bail!("the registry was not opened");
    };
    let (tag, bytes) = (tag.clone(), manifest.to_vec());
    let (opened, put) = tokio::task::spawn_blocking(move || {
        let put = opened.put_manifest(&tag, &bytes);
        (opened, put)
    })
    .await
    .expect("the manifest put does not panic");
    *registry = Some(opened);
    put
}

/// Pushes every tag not in `kept`, immutable tags first. Returns each tag in the registry with
/// its digest (the kept ones too) and, when a push failed after others succeeded, its error.
async fn push<E: Engine, R: RegistryTags + Send + 'static>(
    (publication, engine): (&Publication<'_>, &E),
    (kept, credentials, registry): (&BTreeMap<Tag, Digest>, Option<&Credentials>, &mut Option<R>),
    journal: &mut Journal<'_>,
    events: &mut dyn FnMut(Event<'_>),
    printer: &Printer,
) -> anyhow::Result<Option<EngineError>> {
    let repository = publication.repository();
    let mut order: Vec<&ResolvedTag> = publication.tags.iter().collect();
    order.sort_by_key(|tag| tag.mutability == Mutability::Moving);
    // Once the daemon has pushed forge's manifest, every other tag is that manifest put under
    // it: the registry holds every blob by then, and one push is enough.
    let mut in_registry = false;
    for tag in order {
        // Already in the registry with this image: pushing again could only re-point it (at
        // this daemon's manifest, or from a multi-platform index to one image).
        if let Some(digest) = kept.get(&tag.tag) {
            printer.status(
                "Kept",
                format_args!(
                    "{repository}:{} {digest} (the registry already holds this image)",
                    tag.tag
                ),
            );
            journal.pushed(&tag.tag, digest)?;
            continue;
        }
        if let (true, Some(blobs)) = (in_registry, publication.blobs)
            && blobs.from_registry
            && let Ok(digest) = put_manifest(registry, &tag.tag, &blobs.manifest).await
        {
            printer.status("Pushed", format_args!("{repository}:{} {digest}", tag.tag));
            journal.pushed(&tag.tag, &digest)?;
            continue;
        }
        match engine.push(repository, &tag.tag, credentials, events).await {
            Ok(digest) => {
                let pushed = (&tag.tag, digest);
                let digest = put_forge_manifest(registry, pushed, publication, printer).await;
                in_registry = publication.manifest == Some(&digest);
                printer.status("Pushed", format_args!("{repository}:{} {digest}", tag.tag));
                journal.pushed(&tag.tag, &digest)?;
            }
            // Once a tag is in the registry the record must say so: keep the tags, record
            // what was pushed, then fail.
            Err(error) if !journal.intent.pushed.is_empty() => return Ok(Some(error)),
            Err(error) => return Err(error.into()),
        }
    }
    Ok(None)
}
