//! The manifests forge reads: their media types, a manifest as a registry served it, and the
//! image a manifest or an index holds for a platform.

use crate::types::manifest::{ImageIndex, ImageManifest};
use crate::types::oci::Digest;

/// The manifest media types forge accepts: a single-platform manifest or a multi-platform
/// index, in both the Docker and the OCI spelling.
pub const MANIFEST_TYPES: &str = "application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json";

/// What kind of manifest a registry served, read once from the `Content-Type` of its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManifestMediaType {
    /// `application/vnd.oci.image.index.v1+json`: a multi-platform OCI index.
    OciIndex,
    /// `application/vnd.oci.image.manifest.v1+json`: a single-platform OCI manifest.
    OciManifest,
    /// `application/vnd.docker.distribution.manifest.list.v2+json`: a multi-platform Docker
    /// manifest list.
    DockerManifestList,
    /// `application/vnd.docker.distribution.manifest.v2+json`: a single-platform Docker manifest.
    DockerManifest,
    /// Any other type, as the registry sent it (empty when it sent none).
    Other(String),
}

impl ManifestMediaType {
    /// The type a `Content-Type` value names; parameters such as `charset` are ignored.
    pub fn parse(content_type: &str) -> Self {
        let essence = content_type.split(';').next().unwrap_or_default().trim();
        match essence {
            "application/vnd.oci.image.index.v1+json" => Self::OciIndex,
            "application/vnd.oci.image.manifest.v1+json" => Self::OciManifest,
            "application/vnd.docker.distribution.manifest.list.v2+json" => Self::DockerManifestList,
            "application/vnd.docker.distribution.manifest.v2+json" => Self::DockerManifest,
            _ => Self::Other(content_type.to_owned()),
        }
    }

    /// The media type as written.
    pub fn as_str(&self) -> &str {
        match self {
            Self::OciIndex => "application/vnd.oci.image.index.v1+json",
            Self::OciManifest => "application/vnd.oci.image.manifest.v1+json",
            Self::DockerManifestList => "application/vnd.docker.distribution.manifest.list.v2+json",
            Self::DockerManifest => "application/vnd.docker.distribution.manifest.v2+json",
            Self::Other(text) => text,
        }
    }

    /// Whether it is a multi-platform index (OCI index or Docker manifest list).
    pub fn is_index(&self) -> bool {
        matches!(self, Self::OciIndex | Self::DockerManifestList)
    }
}

/// A manifest or index as a registry served it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// The `Docker-Content-Digest` header of the answer, if the registry sent one.
    pub claimed: Option<Digest>,
    /// The sha256 of the bytes received.
    pub received: Digest,
    /// The media type the `Content-Type` of the answer names.
    pub media_type: ManifestMediaType,
    /// The bytes received.
    pub body: Vec<u8>,
}

impl Manifest {
    /// Whether it is a multi-platform index (OCI index or Docker manifest list).
    pub fn is_index(&self) -> bool {
        self.media_type.is_index()
    }

    /// The digest of the image configuration a single-platform manifest names (for an image
    /// pushed by docker, the image id); `None` for an index or a manifest forge cannot read.
    pub fn config_digest(&self) -> Option<Digest> {
        if self.is_index() {
            return None;
        }
        Some(ImageManifest::read(&self.body)?.config.digest)
    }

    /// The digest of the entry for `platform` (`os/arch` or `os/arch/variant`) of an index;
    /// `None` for a single manifest or when no entry matches.
    pub fn platform_entry(&self, platform: &str) -> Option<Digest> {
        if !self.is_index() {
            return None;
        }
        let index: ImageIndex = serde_json::from_slice(&self.body).ok()?;
        let mut wanted = platform.split('/');
        let (os, architecture, variant) = (wanted.next()?, wanted.next()?, wanted.next());
        index.manifests.into_iter().find_map(|entry| {
            let found = entry.platform?;
            let matches = found.os == os
                && found.architecture == architecture
                && variant.is_none_or(|variant| found.variant.as_deref() == Some(variant));
            matches.then_some(entry.digest)
        })
    }
}

/// What a registry tag holds for one platform: enough to tell whether it is a given image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// The digest the tag names: the registry's `Docker-Content-Digest`, else the sha256 of the
    /// bytes it served.
    pub digest: Digest,
    /// The manifest that stands for the image on the platform: the tag's own, or an index's
    /// entry for the platform (`None` when the index has none).
    pub manifest: Option<Digest>,
    /// The image id that manifest names as its configuration (`image_of`), if any.
    pub image: Option<Digest>,
}

impl Held {
    /// What a tag serving `manifest` holds on `platform`; `image` is what `image_of` found.
    pub fn new(manifest: &Manifest, platform: &str, image: Option<Digest>) -> Self {
        Self {
            digest: manifest
                .claimed
                .clone()
                .unwrap_or_else(|| manifest.received.clone()),
            manifest: if manifest.is_index() {
                manifest.platform_entry(platform)
            } else {
                Some(manifest.received.clone())
            },
            image,
        }
    }

    /// Whether the tag holds the local image `image`: its manifest names `image` as its
    /// configuration, or is `image`, as a daemon with the containerd image store names an
    /// image by its manifest rather than its configuration.
    pub fn holds(&self, image: &Digest) -> bool {
        self.image.as_ref() == Some(image) || self.manifest.as_ref() == Some(image)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_types_are_the_ones_forge_asks_for() {
        let known = [
            ManifestMediaType::OciIndex,
            ManifestMediaType::OciManifest,
            ManifestMediaType::DockerManifestList,
            ManifestMediaType::DockerManifest,
        ];
        let asked: Vec<&str> = MANIFEST_TYPES.split(", ").collect();
        assert_eq!(
            asked,
            known
                .iter()
                .map(ManifestMediaType::as_str)
                .collect::<Vec<_>>()
        );
        for media_type in known {
            assert_eq!(ManifestMediaType::parse(media_type.as_str()), media_type);
        }
        assert!(
            ManifestMediaType::parse("application/vnd.oci.image.index.v1+json; charset=utf-8")
                .is_index()
        );
        assert!(!ManifestMediaType::parse("").is_index());
    }
}
