//! Writing to a repository: blobs uploaded whole (`POST /v2/<name>/blobs/uploads/`, then one
//! `PUT` of the bytes to the upload's location with their digest), manifests put under a tag,
//! and blobs read back by digest.
//!
//! Writes are authenticated as reads are (see `send`), with a token whose scope allows a push.
//! The upload location the registry names is followed only where a redirect could lead, and
//! gets the registry's credentials only on the registry's own origin.

use sha2::{Digest as _, Sha256};
use url::Url;

use crate::types::oci::Digest;

use super::client::{Method, read_body};
use super::{RegistryClient, RegistryError, RemoteRepository};

impl RegistryClient {
    /// Uploads `bytes` as a blob of `repository` unless the registry already holds it; returns
    /// its digest.
    pub fn push_blob(
        &self,
        repository: &RemoteRepository,
        bytes: &[u8],
    ) -> Result<Digest, RegistryError> {
        let digest = Digest::from_sha256(&Sha256::digest(bytes));
        let body = Method::Put {
            content_type: "application/octet-stream",
            body: bytes,
        };
        self.upload(repository, &digest, body)?;
        Ok(digest)
    }

    /// Uploads the file at `path`, whose bytes have `digest`, as a blob of `repository` unless
    /// the registry already holds it; the file streams.
    pub fn push_blob_file(
        &self,
        repository: &RemoteRepository,
        digest: &Digest,
        path: &std::path::Path,
    ) -> Result<(), RegistryError> {
        self.upload(repository, digest, Method::PutFile { path })
    }

    /// Uploads the config `config` and each layer file of `layers` that `repository` does not
    /// hold; returns how many it sent.
    pub fn push_image_blobs(
        &self,
        repository: &RemoteRepository,
        config: &[u8],
        layers: &[(Digest, &std::path::Path)],
    ) -> Result<usize, RegistryError> {
        let mut sent = 0;
        if !self.has_blob(repository, &Digest::from_sha256(&Sha256::digest(config)))? {
            self.push_blob(repository, config)?;
            sent += 1;
        }
        for (digest, path) in layers {
            if !self.has_blob(repository, digest)? {
                self.push_blob_file(repository, digest, path)?;
                sent += 1;
            }
        }
        Ok(sent)
    }

    /// Mounts the blob `digest` of `from`, a repository of the same registry, into
    /// `repository` unless it holds it; whether `repository` holds it then. A registry that
    /// will not mount (another registry's token scope, a blob `from` lacks) opens an upload
    /// instead, which is left to lapse.
    pub fn mount_blob(
        &self,
        repository: &RemoteRepository,
        digest: &Digest,
        from: &RemoteRepository,
    ) -> Result<bool, RegistryError> {
        if self.has_blob(repository, digest)? {
            return Ok(true);
        }
        if from.registry != repository.registry {
            return Ok(false);
        }
        let mut url = self.api_url(
            repository,
            &format!("v2/{}/blobs/uploads/", repository.path),
        )?;
        url.query_pairs_mut()
            .append_pair("mount", digest.as_str())
            .append_pair("from", &from.path);
        let response = self.send(Method::Post, &url, "*/*", repository)?;
        Ok(response.status().as_u16() == 201)
    }

    /// Whether `repository` holds the blob `digest`.
    pub fn has_blob(
        &self,
        repository: &RemoteRepository,
        digest: &Digest,
    ) -> Result<bool, RegistryError> {
        let blob = self.api_url(
            repository,
            &format!("v2/{}/blobs/{}", repository.path, digest.as_str()),
        )?;
        Ok(self
            .send(Method::Head, &blob, "*/*", repository)?
            .status()
            .as_u16()
            == 200)
    }

    /// Sends `body` as the blob `digest` of `repository`, unless the registry holds it.
    fn upload(
        &self,
        repository: &RemoteRepository,
        digest: &Digest,
        body: Method<'_>,
    ) -> Result<(), RegistryError> {
        if self.has_blob(repository, digest)? {
            return Ok(());
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
        let response = self.send(body, &put, "*/*", repository)?;
        Self::expect(&response, &put, &[201], || {
            format!("blob {digest} of {repository}")
        })?;
        Ok(())
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
        self.put_manifest(repository, reference, media_type, manifest)
            .map(|(digest, _)| digest)
    }

    /// Puts `manifest` as `push_manifest` does; also whether the registry answered with the
    /// `OCI-Subject` header, which says it indexed the manifest's `subject` for its referrers
    /// API.
    pub(super) fn put_manifest(
        &self,
        repository: &RemoteRepository,
        reference: &str,
        media_type: &str,
        manifest: &[u8],
    ) -> Result<(Digest, bool), RegistryError> {
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
        let indexed = crate::http::header(&response, "oci-subject").is_some();
        match crate::http::header(&response, "docker-content-digest")
            .map(|value| value.parse::<Digest>())
        {
            Some(Ok(stored)) if stored != received => Err(RegistryError::Invalid {
                url: url.to_string(),
                message: format!("it stored the manifest {received} as {stored}"),
            }),
            _ => Ok((received, indexed)),
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
        let bytes = read_body(&mut response, &url)?;
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

#[cfg(test)]
mod tests {
    use std::io::{BufRead as _, BufReader, Read as _, Write as _};
    use std::net::TcpListener;
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::registry::{Credentials, Lookup};

    /// A server on `host` that answers each request with `answer(method, target, authorization)`
    /// (status and extra header lines) and logs `METHOD TARGET | AUTHORIZATION`.
    fn serve(
        host: &str,
        answer: impl Fn(&str, &str, &str) -> (u16, String) + Send + 'static,
    ) -> (String, Arc<Mutex<Vec<String>>>) {
        let listener = TcpListener::bind((host, 0)).unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let log = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&log);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let mut stream = stream.unwrap();
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                let mut parts = line.split_whitespace();
                let (method, target) = (
                    parts.next().unwrap_or("").to_owned(),
                    parts.next().unwrap_or("").to_owned(),
                );
                let (mut authorization, mut length) = (String::new(), 0usize);
                loop {
                    let mut header = String::new();
                    if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
                        break;
                    }
                    let lower = header.to_ascii_lowercase();
                    if lower.starts_with("authorization:") {
                        authorization = header["authorization:".len()..].trim().to_owned();
                    }
                    if let Some(value) = lower.strip_prefix("content-length:") {
                        length = value.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
                seen.lock()
                    .unwrap()
                    .push(format!("{method} {target} | {authorization}"));
                let (status, headers) = answer(&method, &target, &authorization);
                let reply = format!(
                    "HTTP/1.1 {status} X\r\n{headers}Content-Length: 0\r\nConnection: close\r\n\r\n"
                );
                let _ = stream.write_all(reply.as_bytes());
            }
        });
        (address, log)
    }

    fn client_for(registry: &str) -> RegistryClient {
        RegistryClient::new(Vec::new()).with_lookup(Lookup {
            registry: registry.to_owned(),
            origin: crate::registry::Origin::Environment,
            credentials: Some(Credentials {
                registry: registry.to_owned(),
                username: "user".to_owned(),
                password: "secret".to_owned(),
            }),
            environment_for: None,
        })
    }

    /// A registry that wants Basic credentials for every request and sends uploads to
    /// `location`.
    fn registry(location: String) -> (String, Arc<Mutex<Vec<String>>>) {
        serve("127.0.0.1", move |method, _, authorization| {
            if authorization.is_empty() {
                return (401, "WWW-Authenticate: Basic realm=\"x\"\r\n".to_owned());
            }
            match method {
                "HEAD" => (404, String::new()),
                "POST" => (202, format!("Location: {location}\r\n")),
                _ => (201, String::new()),
            }
        })
    }

    #[test]
    fn an_upload_location_on_another_host_gets_the_blob_without_the_credentials() {
        let (elsewhere, other) = serve("127.0.0.2", |_, _, _| (201, String::new()));
        let (address, seen) = registry(format!("http://{elsewhere}/upload/1?state=x"));
        let repository = RemoteRepository {
            registry: address.clone(),
            path: "forge/signed".to_owned(),
        };
        let digest = client_for(&address)
            .push_blob(&repository, b"blob")
            .unwrap();
        let put = other.lock().unwrap().clone();
        assert_eq!(
            put,
            [format!(
                "PUT /upload/1?state=x&digest=sha256%3A{} | ",
                digest.hex()
            )]
        );
        let seen = seen.lock().unwrap().clone();
        assert!(
            seen.contains(
                &"POST /v2/forge/signed/blobs/uploads/ | Basic dXNlcjpzZWNyZXQ=".to_owned()
            ),
            "{seen:?}"
        );
    }

    #[test]
    fn an_upload_location_on_the_registry_gets_the_blob_with_the_credentials() {
        let (address, seen) = registry("/v2/forge/signed/blobs/uploads/1?state=x".to_owned());
        let repository = RemoteRepository {
            registry: address.clone(),
            path: "forge/signed".to_owned(),
        };
        client_for(&address)
            .push_blob(&repository, b"blob")
            .unwrap();
        let seen = seen.lock().unwrap().clone();
        assert!(
            seen.iter().any(|line| line
                .starts_with("PUT /v2/forge/signed/blobs/uploads/1?state=x&digest=")
                && line.ends_with("| Basic dXNlcjpzZWNyZXQ=")),
            "{seen:?}"
        );
    }
}
