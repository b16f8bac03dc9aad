//! Writing to a repository: blobs uploaded whole (`POST /v2/<name>/blobs/uploads/`, then one
//! `PUT` of the bytes to the upload's location with their digest), manifests put under a tag,
//! and blobs read back by digest.
//!
//! Writes are authenticated as reads are (see `send`), with a token whose scope allows a push.
//! The upload location the registry names is followed only where a redirect could lead, and
//! gets the registry's credentials only on the registry's own origin.

use sha2::{Digest as _, Sha256};
use url::Url;

use super::{Method, RegistryClient, RegistryError, RemoteRepository};
use crate::types::oci::Digest;

impl RegistryClient {
    /// Uploads `bytes` as a blob of `repository` unless the registry already holds it; returns
    /// its digest.
    pub fn push_blob(
        &self,
        repository: &RemoteRepository,
        bytes: &[u8],
    ) -> Result<Digest, RegistryError> {
        let digest = Digest::from_sha256(&Sha256::digest(bytes));
        let blob = self.api_url(
            repository,
            &format!("v2/{}/blobs/{}", repository.path, digest.as_str()),
        )?;
        if self
            .send(Method::Head, &blob, "*/*", repository)?
            .status()
            .as_u16()
            == 200
        {
            return Ok(digest);
        }
        let start = self.api_url(
            repository,
            &format!("v2/{}/blobs/uploads/", repository.path),
        )?;
        let response = self.send(Method::Post, &start, "*/*", repository)?;
        Self::expect(&response, &start, &[202], || {
            format!("the upload of a blob to {repository}")
        })?;
        let location = crate::http::header(&response, "location")
            .map(ToOwned::to_owned)
            .ok_or_else(|| RegistryError::Invalid {
                url: start.to_string(),
                message: "the upload was accepted without a Location to send the blob to"
                    .to_owned(),
            })?;
        let base = self.base_url(repository)?;
        let mut put = super::Trust::new(&base, &self.insecure)
            .redirect(&start, &location)
            .map_err(|refusal| RegistryError::Refused {
                what: "upload location",
                url: location.clone(),
                refusal,
            })?;
        put.query_pairs_mut().append_pair("digest", digest.as_str());
        let response = self.send(
            Method::Put {
                content_type: "application/octet-stream",
                body: bytes,
            },
            &put,
            "*/*",
            repository,
        )?;
        Self::expect(&response, &put, &[201], || {
            format!("blob {digest} of {repository}")
        })?;
        Ok(digest)
    }

    /// Puts `manifest` (of `media_type`) under `reference` (a tag) in `repository`; returns
    /// the digest the registry stored it as.
    pub fn push_manifest(
        &self,
        repository: &RemoteRepository,
        reference: &str,
        media_type: &str,
        manifest: &[u8],
    ) -> Result<Digest, RegistryError> {
        let url = self.api_url(
            repository,
            &format!("v2/{}/manifests/{reference}", repository.path),
        )?;
        let response = self.send(
            Method::Put {
                content_type: media_type,
                body: manifest,
            },
            &url,
            "*/*",
            repository,
        )?;
        Self::expect(&response, &url, &[201], || {
            format!("{repository}:{reference}")
        })?;
        let received = Digest::from_sha256(&Sha256::digest(manifest));
        match crate::http::header(&response, "docker-content-digest")
            .map(|value| value.parse::<Digest>())
        {
            Some(Ok(stored)) if stored != received => Err(RegistryError::Invalid {
                url: url.to_string(),
                message: format!("it stored the manifest {received} as {stored}"),
            }),
            _ => Ok(received),
        }
    }

    /// The blob `digest` of `repository`, checked against its digest.
    pub fn blob(
        &self,
        repository: &RemoteRepository,
        digest: &Digest,
    ) -> Result<Vec<u8>, RegistryError> {
        let url = self.api_url(
            repository,
            &format!("v2/{}/blobs/{}", repository.path, digest.as_str()),
        )?;
        let mut response = self.send(Method::Get, &url, "*/*", repository)?;
        Self::check_status(&response, &url, || format!("blob {digest} of {repository}"))?;
        let bytes = super::read_body(&mut response, &url)?;
        let received = Digest::from_sha256(&Sha256::digest(&bytes));
        if &received != digest {
            return Err(RegistryError::Invalid {
                url: url.to_string(),
                message: format!("it served {received} for the blob {digest}"),
            });
        }
        Ok(bytes)
    }

    /// Checks that a write was answered with one of `expected`.
    fn expect(
        response: &ureq::http::Response<ureq::Body>,
        url: &Url,
        expected: &[u16],
        what: impl FnOnce() -> String,
    ) -> Result<(), RegistryError> {
        let status = response.status().as_u16();
        if expected.contains(&status) {
            return Ok(());
        }
        if status == 404 {
            return Err(RegistryError::NotFound {
                url: url.to_string(),
                what: what(),
            });
        }
        Err(RegistryError::Status {
            url: url.to_string(),
            status,
        })
    }
}
