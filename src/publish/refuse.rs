//! What the tags name now in, a refusal or the go-ahead out: an immutable (dated) tag that
//! names another image is not re-pointed without `--force`, neither on the daemon nor in the
//! registry a push would re-point it in.

use std::collections::BTreeMap;

use anyhow::Context as _;

use super::Publication;
use super::error::IMMUTABLE_HINT;
use crate::diagnostics::CheckFailed;
use crate::engine::{ImageId, ImageInfo};
use crate::pins::Mutability;
use crate::recipe::ResolvedTag;
use crate::registry::{self, Credentials, Held, RegistryClient, RegistryError, RemoteRepository};
use crate::types::oci::RegistryHost;
use crate::types::oci::{Digest, Platform, Repository, Tag};

/// The registry of the image's repository, as a push asks it before it starts. Its methods may
/// block (credential helpers, HTTP): `publish` calls them on a thread of their own.
pub trait RegistryTags {
    /// The credentials a push sends, if any.
    fn credentials(&self) -> Option<Credentials>;

    /// What the registry holds under `tag` for the image's platform; `None` when it holds no
    /// such tag.
    fn held(&self, tag: &Tag) -> anyhow::Result<Option<Held>>;

    /// Mounts the base's blobs of `blobs` from `base`'s repository and uploads the config and
    /// the layers the registry does not hold; returns how many it sent.
    fn upload(
        &self,
        blobs: &crate::normalize::Blobs,
        base: &crate::types::oci::ImageRef,
    ) -> anyhow::Result<usize>;

    /// Puts `manifest` (Docker's schema 2) under `tag`; returns its digest.
    fn put_manifest(&self, tag: &Tag, manifest: &[u8]) -> anyhow::Result<Digest>;
}

/// The registry itself, asked over HTTP with the credentials the docker CLI would use.
#[derive(Debug)]
pub struct RemoteTags {
    client: RegistryClient,
    remote: RemoteRepository,
    platform: Platform,
    credentials: Option<Credentials>,
}

impl RemoteTags {
    /// The registry of `repository`, with the credentials for it wherever the docker CLI would
    /// find them; `insecure` names the hosts besides loopback ones that may be asked over plain
    /// HTTP. What it holds is judged for `platform`.
    pub fn connect(
        repository: &Repository,
        platform: Platform,
        insecure: Vec<RegistryHost>,
    ) -> anyhow::Result<Self> {
        // The repository is the recipe's own: the environment's credentials are for it (unless
        // FORGE_REGISTRY_HOST names another registry).
        let (client, lookup) = RegistryClient::for_recipe(repository, insecure)?;
        Ok(Self {
            client,
            remote: RemoteRepository::from(repository),
            platform,
            credentials: lookup.credentials,
        })
    }
}

impl RegistryTags for RemoteTags {
    fn credentials(&self) -> Option<Credentials> {
        self.credentials.clone()
    }

    fn upload(
        &self,
        blobs: &crate::normalize::Blobs,
        base: &crate::types::oci::ImageRef,
    ) -> anyhow::Result<usize> {
        let base = RemoteRepository::of(base);
        Ok(blobs.upload(&self.client, (&self.remote, &base))?)
    }

    fn put_manifest(&self, tag: &Tag, manifest: &[u8]) -> anyhow::Result<Digest> {
        Ok(self.client.push_manifest(
            &self.remote,
            tag.as_str(),
            crate::normalize::manifest::DOCKER_MANIFEST,
            manifest,
        )?)
    }

    fn held(&self, tag: &Tag) -> anyhow::Result<Option<Held>> {
        let manifest = match registry::Registry::manifest(&self.client, &self.remote, tag.as_str())
        {
            Ok(manifest) => manifest,
            Err(RegistryError::NotFound { .. }) => return Ok(None),
            Err(error) => return Err(error.into()),
        };
        let image = registry::image_of(&self.client, &self.remote, &manifest, &self.platform)?;
        Ok(Some(Held::new(&manifest, self.platform.as_str(), image)))
    }
}

/// Refuses to re-point an immutable tag that names another image on the daemon; `current` is
/// what each tag names now, in `publication.tags` order. Returns each tag with the image it
/// names now.
pub(super) fn on_the_daemon<'a>(
    publication: &Publication<'a>,
    current: Vec<Option<ImageInfo>>,
) -> anyhow::Result<Vec<(&'a ResolvedTag, Option<ImageId>)>> {
    let image = publication.image;
    let mut previous = Vec::new();
    for (tag, current) in publication.tags.iter().zip(current) {
        if let Some(current) = &current
            && tag.mutability == Mutability::Immutable
            && current.id != *image
            && !publication.force
        {
            return Err(super::BuildError::TagHoldsAnother {
                tag: tag.tag.to_string(),
                current: current.id.clone(),
                built: image.clone(),
                differs: None,
            }
            .into());
        }
        previous.push((tag, current.map(|info| info.id)));
    }
    Ok(previous)
}

/// Opens the registry with `open` and refuses a push that would re-point an immutable tag
/// there (unless `--force`). Returns the registry, the credentials for the push, and the tags
/// the registry already holds with this image, with their digests: they are kept as they are,
/// not pushed again.
pub(super) async fn in_the_registry<R: RegistryTags + Send + 'static>(
    publication: &Publication<'_>,
    open: impl FnOnce() -> anyhow::Result<R> + Send + 'static,
) -> anyhow::Result<(R, Option<Credentials>, BTreeMap<Tag, Digest>)> {
    let (repository, tags, image, platform, force) = (
        publication.repository().clone(),
        publication.tags.to_vec(),
        ImageId(publication.id.clone()),
        publication.platform.clone(),
        publication.force,
    );
    // The credential helpers and the registry are asked on a thread of their own, so that a
    // stop is acted on at once however long they take to answer.
    let checked = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
        let registry = open()?;
        let kept = if force {
            BTreeMap::new()
        } else {
            kept_tags(&registry, &repository, &tags, &image, &platform)?
        };
        let credentials = registry.credentials();
        Ok((registry, credentials, kept))
    });
    checked.await.context("the registry check stopped")?
}

/// Asks the registry for each immutable tag: a tag may stay only if it holds the image just
/// built; it is then kept, with its registry digest.
fn kept_tags(
    registry: &impl RegistryTags,
    repository: &Repository,
    tags: &[ResolvedTag],
    image: &ImageId,
    platform: &Platform,
) -> anyhow::Result<BTreeMap<Tag, Digest>> {
    let mut kept = BTreeMap::new();
    for tag in tags
        .iter()
        .filter(|tag| tag.mutability == Mutability::Immutable)
    {
        let held = registry
            .held(&tag.tag)
            .with_context(|| format!("could not check {repository}:{} in its registry", tag.tag))?;
        // A tag the registry does not hold yet cannot be re-pointed.
        let Some(held) = held else { continue };
        if !held.holds(&image.0) {
            let holds = match &held.image {
                Some(id) => format!("image {id}"),
                None => format!("no image for {platform}"),
            };
            return Err(CheckFailed::new(
                format!(
                    "tag {} already names {} in the registry ({holds}), which is not the image just built ({image})",
                    tag.tag, held.digest
                ),
                IMMUTABLE_HINT,
            )
            .into());
        }
        kept.insert(tag.tag.clone(), held.digest);
    }
    Ok(kept)
}
