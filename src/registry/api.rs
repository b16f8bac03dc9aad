//! What forge asks a registry (`Registry`), of which repository, and the order it reads tags in.

use std::fmt;

use crate::types::oci::{Digest, ImageRef, Platform};

use super::error::RegistryError;
use super::manifest::Manifest;

/// A repository on a registry, such as `ghcr.io` + `aeon-7/aeon-vllm-ultimate`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteRepository {
    /// The registry host, with its port if it has one.
    pub registry: String,
    /// The repository path on that registry.
    pub path: String,
}

impl From<&crate::types::oci::Repository> for RemoteRepository {
    fn from(repository: &crate::types::oci::Repository) -> Self {
        Self {
            registry: repository.registry().as_str().to_owned(),
            path: repository.path().to_owned(),
        }
    }
}

impl RemoteRepository {
    /// The repository an image reference points into.
    pub fn of(image: &ImageRef) -> Self {
        Self {
            registry: image.registry().as_str().to_owned(),
            path: image.repository().to_owned(),
        }
    }

    /// The host the API is served from (Docker Hub's API is not at `docker.io`).
    pub(super) fn api_host(&self) -> String {
        crate::types::oci::Registry::named(&self.registry).map_or_else(
            || self.registry.clone(),
            |registry| registry.api_host().to_owned(),
        )
    }
}

impl fmt::Display for RemoteRepository {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.registry, self.path)
    }
}

/// What forge asks a registry.
pub trait Registry {
    /// Every tag of `repository`, in the order the registry lists them.
    fn tags(&self, repository: &RemoteRepository) -> Result<Vec<String>, RegistryError>;

    /// The digest of the manifest (or index) `reference` (a tag or a digest) names.
    fn manifest_digest(
        &self,
        repository: &RemoteRepository,
        reference: &str,
    ) -> Result<Digest, RegistryError>;

    /// The manifest (or index) `reference` names, with the digest the registry claims for it
    /// and the digest of the bytes received.
    fn manifest(
        &self,
        repository: &RemoteRepository,
        reference: &str,
    ) -> Result<Manifest, RegistryError>;
}

/// Orders tags as people read them: runs of digits compare as numbers, so `v0.10.0` comes
/// after `v0.9.0` and `2026-07-01-v0.24.0` after `2026-06-30-v0.25.0`.
pub fn natural_order(a: &str, b: &str) -> std::cmp::Ordering {
    fn chunks(text: &str) -> Vec<(bool, &str)> {
        let mut out = Vec::new();
        let mut start = 0;
        let bytes = text.as_bytes();
        for index in 1..=bytes.len() {
            if index == bytes.len()
                || bytes[index].is_ascii_digit() != bytes[index - 1].is_ascii_digit()
            {
                out.push((bytes[start].is_ascii_digit(), &text[start..index]));
                start = index;
            }
        }
        out
    }
    let (left, right) = (chunks(a), chunks(b));
    for ((left_digits, left), (right_digits, right)) in left.iter().zip(&right) {
        let order = if *left_digits && *right_digits {
            let (left, right) = (left.trim_start_matches('0'), right.trim_start_matches('0'));
            left.len().cmp(&right.len()).then_with(|| left.cmp(right))
        } else {
            left.cmp(right)
        };
        if order.is_ne() {
            return order;
        }
    }
    left.len().cmp(&right.len()).then_with(|| a.cmp(b))
}

/// The image id `manifest` holds: its configuration's digest, or for an index that of its entry
/// for `platform`, fetched from `repository` and held to the entry's digest (bytes of another
/// digest are an invalid answer, never read). `None` when an index has no entry for `platform`
/// or the manifest names no configuration forge can read.
pub fn image_of(
    registry: &dyn Registry,
    repository: &RemoteRepository,
    manifest: &Manifest,
    platform: &Platform,
) -> Result<Option<Digest>, RegistryError> {
    if !manifest.is_index() {
        return Ok(manifest.config_digest());
    }
    let Some(entry) = manifest.platform_entry(platform.as_str()) else {
        return Ok(None);
    };
    let served = registry.manifest(repository, entry.as_str())?;
    if served.received != entry {
        return Err(RegistryError::Invalid {
            url: format!("{repository}@{entry}"),
            message: format!(
                "it served a manifest of digest {} for the index entry {entry}",
                served.received
            ),
        });
    }
    Ok(served.config_digest())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A registry that answers every manifest with `body`.
    struct Serving(Vec<u8>);

    impl Registry for Serving {
        fn tags(&self, _: &RemoteRepository) -> Result<Vec<String>, RegistryError> {
            Ok(Vec::new())
        }
        fn manifest_digest(&self, _: &RemoteRepository, _: &str) -> Result<Digest, RegistryError> {
            unreachable!("image_of asks for the manifest itself")
        }
        fn manifest(&self, _: &RemoteRepository, _: &str) -> Result<Manifest, RegistryError> {
            let received = Digest::from_sha256(&<sha2::Sha256 as sha2::Digest>::digest(&self.0));
            Ok(Manifest {
                claimed: None,
                received,
                media_type: crate::registry::ManifestMediaType::parse(
                    "application/vnd.oci.image.manifest.v1+json",
                ),
                body: self.0.clone(),
            })
        }
    }

    #[test]
    fn an_index_entry_is_held_to_its_digest() {
        let image = format!(
            r#"{{"schemaVersion":2,"config":{{"digest":"{}"}},"layers":[]}}"#,
            Digest::filled('c')
        );
        let entry = Digest::from_sha256(&<sha2::Sha256 as sha2::Digest>::digest(image.as_bytes()));
        let index = format!(
            r#"{{"schemaVersion":2,"manifests":[{{"digest":"{entry}","platform":{{"os":"linux","architecture":"arm64"}}}}]}}"#
        );
        let index = Manifest {
            claimed: None,
            received: Digest::filled('e'),
            media_type: crate::registry::ManifestMediaType::parse(
                "application/vnd.oci.image.index.v1+json",
            ),
            body: index.into_bytes(),
        };
        let repository = RemoteRepository {
            registry: "127.0.0.1:5000".to_owned(),
            path: "forge/app".to_owned(),
        };
        let platform: Platform = "linux/arm64".parse().unwrap();
        let honest = Serving(image.clone().into_bytes());
        assert_eq!(
            image_of(&honest, &repository, &index, &platform).unwrap(),
            Some(Digest::filled('c'))
        );
        let other = image.replace(
            &Digest::filled('c').to_string(),
            &Digest::filled('d').to_string(),
        );
        let hostile = Serving(other.into_bytes());
        let error = image_of(&hostile, &repository, &index, &platform).unwrap_err();
        assert!(
            error
                .to_string()
                .contains(&format!("for the index entry {entry}"))
                || format!("{error:?}").contains("for the index entry"),
            "{error:?}"
        );
    }

    #[test]
    fn natural_order_reads_numbers() {
        let mut tags = vec!["v0.10.0", "v0.9.0", "v0.9.10", "v0.9.2"];
        tags.sort_by(|a, b| natural_order(a, b));
        assert_eq!(tags, ["v0.9.0", "v0.9.2", "v0.9.10", "v0.10.0"]);
    }
}
