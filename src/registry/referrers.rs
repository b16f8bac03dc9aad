//! Referrers (OCI distribution 1.1): the manifests whose `subject` is a given image. A
//! registry with the referrers API answers `GET /v2/<name>/referrers/<digest>` with an index of
//! them, and says so when a manifest with a subject is put (`OCI-Subject`); one without it (the
//! distribution registry before 3, most registries forge meets) holds them, as the spec has
//! clients keep them, in an image index under the referrers tag `sha256-HEX`, which the client
//! that pushes a referrer updates.

use serde_json::Value;
use sha2::{Digest as _, Sha256};

use super::client::{Method, read_body};
use super::{Registry as _, RegistryClient, RegistryError, RemoteRepository};
use crate::types::manifest::{Descriptor, ImageIndex};
use crate::types::oci::Digest;

/// An OCI image index: what both the API and the referrers tag answer with.
pub use crate::types::manifest::OCI_INDEX;

/// Where a repository keeps the referrers of an image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// The registry's referrers API.
    Api,
    /// The referrers tag (`sha256-HEX`), holding an image index.
    Tag(String),
}

/// The referrers of an image as the registry lists them.
#[derive(Debug, Clone)]
pub struct Referrers {
    /// Where they were found (for an image with none, the tag when the API did not answer).
    pub place: Place,
    /// Each entry of the index, as served.
    pub entries: Vec<Value>,
}

impl Referrers {
    /// Each entry read as a descriptor; an entry that is not one, as why.
    pub fn descriptors(&self) -> Vec<Result<Descriptor, String>> {
        self.entries
            .iter()
            .map(|entry| {
                serde_json::from_value(entry.clone())
                    .map_err(|error| format!("an index entry that is not a descriptor: {error}"))
            })
            .collect()
    }
}

/// The referrers tag of the image `subject`: `sha256-HEX`.
pub fn tag(subject: &Digest) -> String {
    format!("sha256-{}", subject.hex())
}

impl RegistryClient {
    /// The referrers of `subject` in `repository`: from the referrers API when the registry
    /// answers it, else from the referrers tag (none when the tag does not exist).
    pub fn referrers(
        &self,
        repository: &RemoteRepository,
        subject: &Digest,
    ) -> Result<Referrers, RegistryError> {
        let url = self.api_url(
            repository,
            &format!("v2/{}/referrers/{}", repository.path, subject.as_str()),
        )?;
        let mut response = self.send(Method::Get, &url, OCI_INDEX, repository)?;
        let is_index = crate::http::header(&response, "content-type")
            .is_some_and(|value| value.starts_with(OCI_INDEX));
        if response.status().as_u16() == 200 && is_index {
            let body = read_body(&mut response, &url)?;
            return Ok(Referrers {
                place: Place::Api,
                entries: entries(&body).map_err(|message| RegistryError::Invalid {
                    url: url.to_string(),
                    message,
                })?,
            });
        }
        let tag = tag(subject);
        let entries = match self.manifest(repository, &tag) {
            Ok(served) => entries(&served.body).map_err(|message| RegistryError::Invalid {
                url: format!("{repository}:{tag}"),
                message: format!("{message}; move the tag away, or push elsewhere"),
            })?,
            Err(RegistryError::NotFound { .. }) => Vec::new(),
            Err(error) => return Err(error),
        };
        Ok(Referrers {
            place: Place::Tag(tag),
            entries,
        })
    }

    /// Puts the referrer `manifest` (an OCI image manifest with a `subject`) by its digest;
    /// returns its digest and whether the registry indexed it for its referrers API.
    pub fn push_referrer(
        &self,
        repository: &RemoteRepository,
        manifest: &[u8],
    ) -> Result<(Digest, bool), RegistryError> {
        let digest = Digest::from_sha256(&Sha256::digest(manifest));
        self.put_manifest(
            repository,
            digest.as_str(),
            crate::attest::cosign::OCI_MANIFEST,
            manifest,
        )
    }

    /// Puts `entries` as the referrers index of `subject` under its referrers tag; returns the
    /// index's digest.
    pub fn put_referrers_tag(
        &self,
        repository: &RemoteRepository,
        subject: &Digest,
        entries: &[Value],
    ) -> Result<Digest, RegistryError> {
        let index = ImageIndex::new(entries.to_vec()).to_bytes();
        self.push_manifest(repository, &tag(subject), OCI_INDEX, &index)
    }
}

/// The `manifests` of an image index (`body`), each entry as served; why not, when it is not
/// one.
fn entries(body: &[u8]) -> Result<Vec<Value>, String> {
    let index: Value = serde_json::from_slice(body)
        .map_err(|error| format!("the referrers index is not JSON: {error}"))?;
    match index.get("manifests") {
        Some(Value::Array(entries)) => Ok(entries.clone()),
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(_) => Err("the referrers index's `manifests` is not a list".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_lists_its_entries_and_a_malformed_entry_says_why() {
        let body = format!(
            r#"{{"schemaVersion":2,"manifests":[{{"mediaType":"m","digest":"{}","size":3,"artifactType":"a"}},{{"digest":7}}]}}"#,
            Digest::filled('a')
        );
        let referrers = Referrers {
            place: Place::Tag(tag(&Digest::filled('b'))),
            entries: entries(body.as_bytes()).unwrap(),
        };
        let descriptors = referrers.descriptors();
        assert_eq!(descriptors[0].as_ref().unwrap().artifact(), "a");
        assert!(descriptors[1].as_ref().is_err());
        assert!(entries(br#"{"manifests":{}}"#).is_err());
        assert_eq!(entries(br#"{"schemaVersion":2}"#), Ok(Vec::new()));
    }
}
