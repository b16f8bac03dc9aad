//! One tag for several platforms: each platform's image is pushed under a tag of its own
//! (`TAG-os-arch`), then one OCI image index lists their manifests, and the recipe's tags are
//! pointed at that index in the registry, dated (immutable) tags first and never re-pointed
//! at another index without `--force`.

use sha2::Digest as _;

use crate::diagnostics::CheckFailed;
use crate::pins::Mutability;
use crate::recipe::ResolvedTag;
use crate::registry::{Registry as _, RegistryClient, RegistryError, RemoteRepository};
use crate::types::manifest::{self, Descriptor, PlatformEntry};
use crate::types::oci::{Digest, Platform, Tag};

/// The media type of an OCI image index.
pub use crate::types::manifest::OCI_INDEX;

/// The tag a platform's own image is pushed under: the recipe's first tag, then the platform
/// (`experimental-pr4-linux-arm64`).
pub fn platform_tag(first: &Tag, platform: &Platform) -> Tag {
    format!("{first}-{}", platform.as_str().replace('/', "-"))
        .parse()
        .expect("a tag and a platform make a tag")
}

/// An index, as bytes, and its digest.
#[derive(Debug, Clone)]
pub struct ImageIndex {
    /// The JSON document.
    pub body: Vec<u8>,
    /// Its sha256.
    pub digest: Digest,
}

/// The repository an index goes to, and the client that reaches its registry.
#[derive(Debug)]
pub struct PushTarget {
    /// The registry client, with the repository's credentials.
    pub client: RegistryClient,
    /// The repository.
    pub repository: RemoteRepository,
}

impl PushTarget {
    /// The index listing `entries` (each platform with the manifest digest the registry stored),
    /// each entry's size and media type read back from the repository.
    pub fn compose(&self, entries: &[(Platform, Digest)]) -> Result<ImageIndex, RegistryError> {
        let (client, repository) = (&self.client, &self.repository);
        let mut manifests = Vec::new();
        for (platform, digest) in entries {
            let manifest = client.manifest(repository, digest.as_str())?;
            let mut parts = platform.as_str().split('/').map(ToOwned::to_owned);
            let (os, architecture, variant) = (parts.next(), parts.next(), parts.next());
            manifests.push(Descriptor {
                platform: Some(PlatformEntry {
                    architecture: architecture.unwrap_or_default(),
                    os: os.unwrap_or_default(),
                    variant,
                }),
                ..Descriptor::named(
                    manifest.media_type.as_str(),
                    digest.clone(),
                    manifest.body.len() as u64,
                )
            });
        }
        let body = manifest::ImageIndex::new(manifests).to_bytes();
        let digest = Digest::from_sha256(&sha2::Sha256::digest(&body));
        Ok(ImageIndex { body, digest })
    }

    /// Refuses, before any recipe tag moves, a dated tag the registry holds for another manifest
    /// than `index`.
    pub fn refuse_moved(
        &self,
        tags: &[ResolvedTag],
        index: &ImageIndex,
        force: bool,
    ) -> anyhow::Result<()> {
        let (client, repository) = (&self.client, &self.repository);
        for tag in tags
            .iter()
            .filter(|tag| tag.mutability == Mutability::Immutable)
        {
            let held = match client.manifest_digest(repository, tag.tag.as_str()) {
                Ok(held) => held,
                Err(RegistryError::NotFound { .. }) => continue,
                Err(error) => return Err(error.into()),
            };
            if held != index.digest && !force {
                return Err(CheckFailed::new(
                format!(
                    "tag {} in {repository} already names {held}, not the index of this build ({})",
                    tag.tag, index.digest
                ),
                "dated tags are immutable; bump the date in pins.toml, or pass --force to re-point it",
            )
            .into());
            }
        }
        Ok(())
    }

    /// Puts `index` under every tag, dated tags first; returns the digest the registry stored.
    pub fn put(&self, tags: &[ResolvedTag], index: &ImageIndex) -> Result<Digest, RegistryError> {
        let (client, repository) = (&self.client, &self.repository);
        let mut order: Vec<&ResolvedTag> = tags.iter().collect();
        order.sort_by_key(|tag| tag.mutability == Mutability::Moving);
        let mut stored = index.digest.clone();
        for tag in order {
            stored = client.push_manifest(repository, tag.tag.as_str(), OCI_INDEX, &index.body)?;
        }
        Ok(stored)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_platform_tag_follows_the_first_tag() {
        let tag: Tag = "experimental-pr4".parse().unwrap();
        let platform: Platform = "linux/arm64".parse().unwrap();
        assert_eq!(
            platform_tag(&tag, &platform).as_str(),
            "experimental-pr4-linux-arm64"
        );
        let platform: Platform = "linux/arm/v7".parse().unwrap();
        assert_eq!(
            platform_tag(&tag, &platform).as_str(),
            "experimental-pr4-linux-arm-v7"
        );
    }
}
