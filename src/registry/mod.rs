//! Container registries: a repository in, its tags and manifest digests out, over the
//! distribution API (`/v2/<name>/tags/list`, `/v2/<name>/manifests/<reference>`).
//!
//! Authentication follows what the registry asks for: anonymous first; on a `401` with
//! `WWW-Authenticate: Bearer realm=..,service=..,scope=..` a token is fetched from the realm
//! (with the user's credentials when there are some) and the request is sent again; on a
//! `Basic` challenge the credentials are sent directly. Credentials are looked up (see
//! `credentials`) only when a registry asks for them. Plain HTTP is used only for loopback hosts and for hosts named with
//! `--insecure-registry`; every other registry is spoken to over HTTPS.

mod auth;
pub mod credentials;

use std::cell::{OnceCell, RefCell};
use std::collections::BTreeMap;
use std::fmt;

use sha2::{Digest as _, Sha256};

pub use auth::Challenge;
pub use credentials::{Credentials, CredentialsError, Lookup, Origin};

use crate::diagnostics::{Advice, Advise};
use crate::redact::Redacted;
use crate::types::oci::{Digest, ImageRef, Platform};

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

/// A repository on a registry, such as `ghcr.io` + `aeon-7/aeon-vllm-ultimate`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteRepository {
    /// The registry host, with its port if it has one.
    pub registry: String,
    /// The repository path on that registry.
    pub path: String,
}

impl RemoteRepository {
    /// The repository an image reference points into.
    pub fn of(image: &ImageRef) -> Self {
        Self {
            registry: image.registry().to_owned(),
            path: image.repository().to_owned(),
        }
    }

    /// The host the API is served from (Docker Hub's API is not at `docker.io`).
    fn api_host(&self) -> &str {
        match self.registry.as_str() {
            "docker.io" | "index.docker.io" => "registry-1.docker.io",
            host => host,
        }
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
        #[derive(serde::Deserialize)]
        struct ImageManifest {
            config: Descriptor,
        }
        #[derive(serde::Deserialize)]
        struct Descriptor {
            digest: String,
        }
        if self.is_index() {
            return None;
        }
        let manifest: ImageManifest = serde_json::from_slice(&self.body).ok()?;
        manifest.config.digest.parse().ok()
    }

    /// The digest of the entry for `platform` (`os/arch` or `os/arch/variant`) of an index;
    /// `None` for a single manifest or when no entry matches.
    pub fn platform_entry(&self, platform: &str) -> Option<Digest> {
        #[derive(serde::Deserialize)]
        struct Index {
            #[serde(default)]
            manifests: Vec<Entry>,
        }
        #[derive(serde::Deserialize)]
        struct Entry {
            digest: String,
            platform: Option<EntryPlatform>,
        }
        #[derive(serde::Deserialize)]
        struct EntryPlatform {
            os: String,
            architecture: String,
            variant: Option<String>,
        }
        if !self.is_index() {
            return None;
        }
        let index: Index = serde_json::from_slice(&self.body).ok()?;
        let mut wanted = platform.split('/');
        let (os, architecture, variant) = (wanted.next()?, wanted.next()?, wanted.next());
        index.manifests.into_iter().find_map(|entry| {
            let found = entry.platform?;
            let matches = found.os == os
                && found.architecture == architecture
                && variant.is_none_or(|variant| found.variant.as_deref() == Some(variant));
            matches.then(|| entry.digest.parse().ok()).flatten()
        })
    }
}

/// The image id `manifest` holds: its configuration's digest, or for an index that of its entry
/// for `platform`, fetched from `repository`. `None` when an index has no entry for `platform`
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
    match manifest.platform_entry(platform.as_str()) {
        Some(entry) => Ok(registry
            .manifest(repository, entry.as_str())?
            .config_digest()),
        None => Ok(None),
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

/// Why a registry could not answer.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// No HTTP answer.
    #[error("cannot reach the registry at {}: {message}", Redacted(url))]
    Unreachable {
        /// The URL asked.
        url: String,
        /// What the connection said.
        message: String,
    },
    /// The registry wants credentials forge does not have, or refused them.
    #[error(
        "the registry refused access to {} (HTTP {status}){}",
        Redacted(url),
        refusal(lookup)
    )]
    Unauthorized {
        /// The URL asked.
        url: String,
        /// 401 or 403.
        status: u16,
        /// The credentials forge had for the registry, and where they came from.
        lookup: Box<Lookup>,
    },
    /// The credentials could not be looked up.
    #[error(transparent)]
    Credentials(#[from] CredentialsError),
    /// The repository or reference does not exist.
    #[error("{what} not found on the registry ({}, HTTP 404)", Redacted(url))]
    NotFound {
        /// The URL asked.
        url: String,
        /// What was looked for.
        what: String,
    },
    /// Another error status.
    #[error("the registry answered HTTP {status} for {}", Redacted(url))]
    Status {
        /// The URL asked.
        url: String,
        /// The status code.
        status: u16,
    },
    /// An answer forge cannot read.
    #[error(
        "the registry sent an answer forge cannot read for {}: {message}",
        Redacted(url)
    )]
    Invalid {
        /// The URL asked.
        url: String,
        /// What was wrong.
        message: String,
    },
}

impl Advise for RegistryError {
    fn advice(&self) -> Advice {
        Advice::Hint(match self {
            RegistryError::Unreachable { .. } => "check the registry host and the network; a registry without TLS on another host needs --insecure-registry HOST".to_owned(),
            RegistryError::Unauthorized { lookup, .. } => match &lookup.credentials {
                None => format!(
                    "log in with `docker login {}`, or set FORGE_REGISTRY_USER and FORGE_REGISTRY_PASSWORD",
                    lookup.registry
                ),
                Some(_) => format!(
                    "the credentials were refused: check {}, or log in again with `docker login {}`",
                    lookup.describe(),
                    lookup.registry
                ),
            },
            RegistryError::Credentials(error) => return error.advice(),
            RegistryError::NotFound { .. } => "check the image reference in pins.toml [base]".to_owned(),
            RegistryError::Status { .. } | RegistryError::Invalid { .. } => "try again later; `skopeo inspect docker://IMAGE` shows what the registry serves".to_owned(),
        })
    }
}

crate::advised!(RegistryError);

/// How an `Unauthorized` error goes on: which credentials were sent, or why there were none.
fn refusal(lookup: &Lookup) -> String {
    match &lookup.credentials {
        Some(_) => format!(" with the credentials from {}", lookup.describe()),
        None => format!(": it wants credentials, and {}", lookup.describe()),
    }
}

/// The real client: the distribution API over `ureq`.
#[derive(Debug)]
pub struct RegistryClient {
    agent: ureq::Agent,
    insecure: Vec<String>,
    // The registry whose credentials to send when asked; other registries get none.
    credentials_for: Option<String>,
    // Looked up at the first challenge, so that anonymous registries never run a helper.
    lookup: OnceCell<Lookup>,
    // Authorization header values by host, reused for the rest of the run.
    authorizations: RefCell<BTreeMap<String, String>>,
}

impl RegistryClient {
    /// A client; `insecure` lists hosts (with port, if any) that may be spoken to over plain
    /// HTTP besides loopback ones.
    pub fn new(insecure: Vec<String>) -> Self {
        Self {
            agent: crate::http::agent(),
            insecure,
            credentials_for: None,
            lookup: OnceCell::new(),
            authorizations: RefCell::new(BTreeMap::new()),
        }
    }

    /// Sends the credentials the environment or the Docker configuration holds for `registry`
    /// when it asks for them.
    pub fn with_credentials_for(mut self, registry: &str) -> Self {
        self.credentials_for = Some(registry.to_owned());
        self
    }

    /// Sends the credentials of a lookup already made, when its registry asks for them.
    pub fn with_lookup(mut self, lookup: Lookup) -> Self {
        self.credentials_for = Some(lookup.registry.clone());
        self.lookup = OnceCell::from(lookup);
        self
    }

    /// The credentials for `repository`'s registry, looked up the first time they are needed.
    fn lookup(&self, repository: &RemoteRepository) -> Result<Lookup, RegistryError> {
        if self.credentials_for.as_deref() != Some(repository.registry.as_str()) {
            return Ok(Lookup::anonymous(&repository.registry));
        }
        if let Some(lookup) = self.lookup.get() {
            return Ok(lookup.clone());
        }
        let lookup = credentials::lookup(&repository.registry)?;
        Ok(self.lookup.get_or_init(|| lookup).clone())
    }

    fn base_url(&self, repository: &RemoteRepository) -> String {
        let host = repository.api_host();
        let plain = crate::http::is_loopback(host) || self.insecure.iter().any(|name| name == host);
        let scheme = if plain { "http" } else { "https" };
        format!("{scheme}://{host}")
    }

    /// Sends a request, answering the registry's authentication challenge once.
    fn send(
        &self,
        method: Method,
        url: &str,
        accept: &str,
        repository: &RemoteRepository,
    ) -> Result<ureq::http::Response<ureq::Body>, RegistryError> {
        let host = repository.api_host().to_owned();
        let response = self.request(
            method,
            url,
            accept,
            self.authorizations.borrow().get(&host).cloned(),
        )?;
        if response.status().as_u16() != 401 {
            return Ok(response);
        }
        let lookup = self.lookup(repository)?;
        let unauthorized = |url: &str, status: u16| RegistryError::Unauthorized {
            url: url.to_owned(),
            status,
            lookup: Box::new(lookup.clone()),
        };
        let challenge = crate::http::header(&response, "www-authenticate")
            .and_then(Challenge::parse)
            .ok_or_else(|| unauthorized(url, 401))?;
        let authorization = match challenge {
            Challenge::Basic => match &lookup.credentials {
                Some(credentials) => credentials.basic(),
                None => return Err(unauthorized(url, 401)),
            },
            Challenge::Bearer {
                realm,
                service,
                scope,
            } => {
                let scope = scope.unwrap_or_else(|| format!("repository:{}:pull", repository.path));
                let token = self.token(&realm, service.as_deref(), &scope, &lookup)?;
                format!("Bearer {token}")
            }
        };
        let response = self.request(method, url, accept, Some(authorization.clone()))?;
        if matches!(response.status().as_u16(), 401 | 403) {
            return Err(unauthorized(url, response.status().as_u16()));
        }
        self.authorizations.borrow_mut().insert(host, authorization);
        Ok(response)
    }

    fn request(
        &self,
        method: Method,
        url: &str,
        accept: &str,
        authorization: Option<String>,
    ) -> Result<ureq::http::Response<ureq::Body>, RegistryError> {
        let result = match method {
            Method::Get => {
                let mut request = self.agent.get(url).header("Accept", accept);
                if let Some(authorization) = &authorization {
                    request = request.header("Authorization", authorization);
                }
                request.call()
            }
            Method::Head => {
                let mut request = self.agent.head(url).header("Accept", accept);
                if let Some(authorization) = &authorization {
                    request = request.header("Authorization", authorization);
                }
                request.call()
            }
        };
        result.map_err(|error| RegistryError::Unreachable {
            url: url.to_owned(),
            message: error.to_string(),
        })
    }

    /// A bearer token from the realm of a challenge.
    fn token(
        &self,
        realm: &str,
        service: Option<&str>,
        scope: &str,
        lookup: &Lookup,
    ) -> Result<String, RegistryError> {
        let plain_ok = realm.starts_with("http://") && realm_is_plain_ok(realm, &self.insecure);
        if !realm.starts_with("https://") && !plain_ok {
            return Err(RegistryError::Invalid {
                url: realm.to_owned(),
                message: "the token realm is not an https:// URL".to_owned(),
            });
        }
        let mut request = self.agent.get(realm).query("scope", scope);
        if let Some(service) = service {
            request = request.query("service", service);
        }
        if let Some(credentials) = &lookup.credentials {
            request = request.header("Authorization", credentials.basic());
        }
        let mut response = request.call().map_err(|error| RegistryError::Unreachable {
            url: realm.to_owned(),
            message: error.to_string(),
        })?;
        let status = response.status().as_u16();
        if matches!(status, 401 | 403) {
            return Err(RegistryError::Unauthorized {
                url: realm.to_owned(),
                status,
                lookup: Box::new(lookup.clone()),
            });
        }
        if status != 200 {
            return Err(RegistryError::Status {
                url: realm.to_owned(),
                status,
            });
        }
        let body =
            crate::http::body_text(&mut response).map_err(|error| RegistryError::Unreachable {
                url: realm.to_owned(),
                message: error.to_string(),
            })?;
        #[derive(serde::Deserialize)]
        struct TokenAnswer {
            token: Option<String>,
            access_token: Option<String>,
        }
        let answer: TokenAnswer =
            serde_json::from_str(&body).map_err(|error| RegistryError::Invalid {
                url: realm.to_owned(),
                message: error.to_string(),
            })?;
        answer
            .token
            .or(answer.access_token)
            .ok_or_else(|| RegistryError::Invalid {
                url: realm.to_owned(),
                message: "the token answer holds neither `token` nor `access_token`".to_owned(),
            })
    }

    fn check_status(
        response: &ureq::http::Response<ureq::Body>,
        url: &str,
        what: impl FnOnce() -> String,
    ) -> Result<(), RegistryError> {
        match response.status().as_u16() {
            200 => Ok(()),
            404 => Err(RegistryError::NotFound {
                url: url.to_owned(),
                what: what(),
            }),
            status => Err(RegistryError::Status {
                url: url.to_owned(),
                status,
            }),
        }
    }
}

fn realm_is_plain_ok(realm: &str, insecure: &[String]) -> bool {
    let host = realm
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap_or_default();
    crate::http::is_loopback(host) || insecure.iter().any(|name| name == host)
}

#[derive(Debug, Clone, Copy)]
enum Method {
    Get,
    Head,
}

impl Registry for RegistryClient {
    fn tags(&self, repository: &RemoteRepository) -> Result<Vec<String>, RegistryError> {
        let base = self.base_url(repository);
        let mut url = format!("{base}/v2/{}/tags/list?n=1000", repository.path);
        let mut tags = Vec::new();
        // Bounded: a registry that keeps sending `next` cannot hold forge forever.
        for _ in 0..1000 {
            let mut response = self.send(Method::Get, &url, "application/json", repository)?;
            Self::check_status(&response, &url, || format!("repository {repository}"))?;
            let next = crate::http::header(&response, "link").and_then(next_link);
            let body = crate::http::body_text(&mut response).map_err(|error| {
                RegistryError::Unreachable {
                    url: url.clone(),
                    message: error.to_string(),
                }
            })?;
            #[derive(serde::Deserialize)]
            struct TagList {
                tags: Option<Vec<String>>,
            }
            let list: TagList =
                serde_json::from_str(&body).map_err(|error| RegistryError::Invalid {
                    url: url.clone(),
                    message: error.to_string(),
                })?;
            tags.extend(list.tags.unwrap_or_default());
            match next {
                Some(next) if next.starts_with('/') => url = format!("{base}{next}"),
                Some(next) => url = next,
                None => return Ok(tags),
            }
        }
        Ok(tags)
    }

    fn manifest_digest(
        &self,
        repository: &RemoteRepository,
        reference: &str,
    ) -> Result<Digest, RegistryError> {
        let url = format!(
            "{}/v2/{}/manifests/{reference}",
            self.base_url(repository),
            repository.path
        );
        let what = || format!("{repository}:{reference}");
        let response = self.send(Method::Head, &url, MANIFEST_TYPES, repository)?;
        Self::check_status(&response, &url, what)?;
        if let Some(digest) = crate::http::header(&response, "docker-content-digest")
            .and_then(|value| value.parse::<Digest>().ok())
        {
            return Ok(digest);
        }
        // Some registries leave the header out of HEAD answers: hash the manifest itself.
        let mut response = self.send(Method::Get, &url, MANIFEST_TYPES, repository)?;
        Self::check_status(&response, &url, what)?;
        let body = read_body(&mut response, &url)?;
        Ok(Digest::from_sha256(&Sha256::digest(&body)))
    }

    fn manifest(
        &self,
        repository: &RemoteRepository,
        reference: &str,
    ) -> Result<Manifest, RegistryError> {
        let url = format!(
            "{}/v2/{}/manifests/{reference}",
            self.base_url(repository),
            repository.path
        );
        let mut response = self.send(Method::Get, &url, MANIFEST_TYPES, repository)?;
        Self::check_status(&response, &url, || format!("{repository}:{reference}"))?;
        let header = |name: &str| crate::http::header(&response, name).map(ToOwned::to_owned);
        let claimed = match header("docker-content-digest") {
            Some(value) => Some(
                value
                    .parse::<Digest>()
                    .map_err(|_| RegistryError::Invalid {
                        url: url.clone(),
                        message: format!("Docker-Content-Digest {value:?} is not a sha256 digest"),
                    })?,
            ),
            None => None,
        };
        let media_type = ManifestMediaType::parse(&header("content-type").unwrap_or_default());
        let body = read_body(&mut response, &url)?;
        Ok(Manifest {
            claimed,
            received: Digest::from_sha256(&Sha256::digest(&body)),
            media_type,
            body,
        })
    }
}

/// The target of `Link: <...>; rel="next"`.
fn next_link(header: &str) -> Option<String> {
    header.split(',').find_map(|part| {
        let (target, parameters) = part.split_once(';')?;
        parameters.contains("rel=\"next\"").then(|| {
            target
                .trim()
                .trim_start_matches('<')
                .trim_end_matches('>')
                .to_owned()
        })
    })
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

/// The whole body of `response` (at most `http::BODY_LIMIT` bytes), fetched from `url`.
fn read_body(
    response: &mut ureq::http::Response<ureq::Body>,
    url: &str,
) -> Result<Vec<u8>, RegistryError> {
    let mut body = Vec::new();
    std::io::Read::read_to_end(
        &mut response
            .body_mut()
            .with_config()
            .limit(crate::http::BODY_LIMIT)
            .reader(),
        &mut body,
    )
    .map_err(|error| RegistryError::Unreachable {
        url: url.to_owned(),
        message: error.to_string(),
    })?;
    Ok(body)
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

    #[test]
    fn natural_order_reads_numbers() {
        let mut tags = vec!["v0.10.0", "v0.9.0", "v0.9.10", "v0.9.2"];
        tags.sort_by(|a, b| natural_order(a, b));
        assert_eq!(tags, ["v0.9.0", "v0.9.2", "v0.9.10", "v0.10.0"]);
    }

    #[test]
    fn next_link_is_found() {
        assert_eq!(
            next_link(r#"</v2/a/tags/list?n=2&last=b>; rel="next""#).as_deref(),
            Some("/v2/a/tags/list?n=2&last=b")
        );
    }
}
