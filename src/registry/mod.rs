//! Container registries: a repository in, its tags and manifest digests out, over the
//! distribution API (`/v2/<name>/tags/list`, `/v2/<name>/manifests/<reference>`).
//!
//! Authentication follows what the registry asks for: anonymous first; on a `401` with
//! `WWW-Authenticate: Bearer realm=..,service=..,scope=..` a token is fetched from the realm
//! (with the user's credentials when there are some) and the request is sent again; on a
//! `Basic` challenge the credentials are sent directly. Credentials are looked up (see
//! `credentials`) only when a registry asks for them. Plain HTTP is used only for loopback hosts
//! and for hosts named with `--insecure-registry`; every other registry is spoken to over HTTPS.
//!
//! The credentials, and the tokens fetched with them, go only to the registry's own scheme,
//! host and port (see `trust`): a next link elsewhere is refused, a redirect elsewhere is
//! followed without them, a token realm elsewhere is asked anonymously, and nothing moves from
//! https to http.

mod auth;
pub mod credentials;
pub mod trust;
mod upload;

use std::cell::{OnceCell, RefCell};
use std::collections::BTreeMap;
use std::fmt;

use sha2::{Digest as _, Sha256};

pub use auth::Challenge;
pub use credentials::{Credentials, CredentialsError, Lookup, Origin};
pub use trust::{Trust, UrlRefusal};

use url::Url;

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

impl From<&crate::types::oci::Repository> for RemoteRepository {
    fn from(repository: &crate::types::oci::Repository) -> Self {
        Self {
            registry: repository.registry().to_owned(),
            path: repository.path().to_owned(),
        }
    }
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
        refusal(lookup, withheld.as_deref())
    )]
    Unauthorized {
        /// The URL asked.
        url: String,
        /// 401 or 403.
        status: u16,
        /// The credentials forge had for the registry, and where they came from.
        lookup: Box<Lookup>,
        /// The token realm on another host that was asked without the credentials, if any.
        withheld: Option<String>,
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
    /// The answer's body was too large, too slow or broke off.
    #[error(transparent)]
    Body(#[from] crate::http::BodyError),
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
    /// A next link, redirect or token realm forge will not follow.
    #[error("forge does not follow the {what} {}: {refusal}", Redacted(url))]
    Refused {
        /// What the registry sent: `next link of the tag list`, `redirect`, `token realm`.
        what: &'static str,
        /// Where it leads.
        url: String,
        /// Why not.
        refusal: UrlRefusal,
    },
}

impl Advise for RegistryError {
    fn advice(&self) -> Advice {
        Advice::Hint(match self {
            RegistryError::Unreachable { .. } => "check the registry host and the network; a registry without TLS on another host needs --insecure-registry HOST".to_owned(),
            RegistryError::Unauthorized { lookup, withheld: Some(_), .. } => format!(
                "the registry hands out tokens from another host, and forge sends the credentials for {} to {} alone; pull anonymously, or use a registry whose token service is on its own host",
                lookup.registry, lookup.registry
            ),
            RegistryError::Unauthorized { lookup, .. } => match (&lookup.credentials, &lookup.environment_for) {
                (None, Some(_)) => format!(
                    "set FORGE_REGISTRY_HOST={} to send FORGE_REGISTRY_USER and FORGE_REGISTRY_PASSWORD to this registry instead, or log in with `docker login {}`",
                    lookup.registry, lookup.registry
                ),
                (None, None) => format!(
                    "log in with `docker login {}`, or set FORGE_REGISTRY_USER and FORGE_REGISTRY_PASSWORD (and FORGE_REGISTRY_HOST when it is not the registry the recipe publishes to)",
                    lookup.registry
                ),
                (Some(_), _) => format!(
                    "the credentials were refused: check {}, or log in again with `docker login {}`",
                    lookup.describe(),
                    lookup.registry
                ),
            },
            RegistryError::Credentials(error) => return error.advice(),
            RegistryError::Body(error) => return error.advice(),
            RegistryError::NotFound { .. } => "check the image reference in pins.toml [base]".to_owned(),
            RegistryError::Status { .. } | RegistryError::Invalid { .. } => "try again later; `skopeo inspect docker://IMAGE` shows what the registry serves".to_owned(),
            RegistryError::Refused { refusal: UrlRefusal::OtherHost { .. }, .. } => "the distribution API continues a tag list on the registry's own host (its next links are relative); check the registry, or a proxy in front of it that rewrites its URLs".to_owned(),
            RegistryError::Refused { .. } => "a registry's redirects and token realms must be https (plain HTTP only for loopback hosts and --insecure-registry HOST) and carry no user name or password; check the registry's configuration".to_owned(),
        })
    }
}

crate::advised!(RegistryError);

/// How an `Unauthorized` error goes on: which credentials were sent, or why there were none.
fn refusal(lookup: &Lookup, withheld: Option<&str>) -> String {
    match (&lookup.credentials, withheld) {
        (Some(_), Some(realm)) => format!(
            ": its token realm {} is on another host, which gets no credentials (forge has them from {})",
            Redacted(realm),
            lookup.describe()
        ),
        (Some(_), None) => format!(" with the credentials from {}", lookup.describe()),
        (None, _) => format!(": it wants credentials, and {}", lookup.describe()),
    }
}

/// How many redirects one request may follow.
const MAX_REDIRECTS: usize = 10;

/// The real client: the distribution API over `ureq`.
#[derive(Debug)]
pub struct RegistryClient {
    // Follows no redirect by itself: `fetch` decides where each one may lead.
    agent: ureq::Agent,
    insecure: Vec<String>,
    // The registry whose credentials to send when asked, and the one the recipe publishes to
    // (which `FORGE_REGISTRY_USER` and `FORGE_REGISTRY_PASSWORD` are for); other registries get
    // none.
    credentials_for: Option<(String, String)>,
    // Looked up at the first challenge, so that anonymous registries never run a helper.
    lookup: OnceCell<Lookup>,
    // Authorization header values by registry origin, reused for the rest of the run.
    authorizations: RefCell<BTreeMap<String, String>>,
}

impl RegistryClient {
    /// A client; `insecure` lists hosts (with port, if any) that may be spoken to over plain
    /// HTTP besides loopback ones.
    pub fn new(insecure: Vec<String>) -> Self {
        Self {
            agent: crate::http::agent_without_redirects(),
            insecure,
            credentials_for: None,
            lookup: OnceCell::new(),
            authorizations: RefCell::new(BTreeMap::new()),
        }
    }

    /// Sends the credentials the environment or the Docker configuration holds for `registry`
    /// when it asks for them; `recipe_registry` is the registry the recipe publishes to, the
    /// one `FORGE_REGISTRY_USER` and `FORGE_REGISTRY_PASSWORD` are for (unless
    /// `FORGE_REGISTRY_HOST` names another).
    pub fn with_credentials_for(mut self, registry: &str, recipe_registry: &str) -> Self {
        self.credentials_for = Some((registry.to_owned(), recipe_registry.to_owned()));
        self
    }

    /// A client for the recipe's own `repository`, sending the credentials the environment (or
    /// `docker login`) holds for its registry; with the lookup, for pushes through the daemon.
    pub fn for_recipe(
        repository: &crate::types::oci::Repository,
        insecure: Vec<String>,
    ) -> Result<(Self, Lookup), credentials::CredentialsError> {
        let lookup = credentials::lookup(repository.registry(), repository.registry())?;
        Ok((Self::new(insecure).with_lookup(lookup.clone()), lookup))
    }

    /// Sends the credentials of a lookup already made, when its registry asks for them.
    pub fn with_lookup(mut self, lookup: Lookup) -> Self {
        self.credentials_for = Some((lookup.registry.clone(), lookup.registry.clone()));
        self.lookup = OnceCell::from(lookup);
        self
    }

    /// The credentials for `repository`'s registry, looked up the first time they are needed.
    fn lookup(&self, repository: &RemoteRepository) -> Result<Lookup, RegistryError> {
        let Some((registry, recipe_registry)) = &self.credentials_for else {
            return Ok(Lookup::anonymous(&repository.registry));
        };
        if registry != &repository.registry {
            return Ok(Lookup::anonymous(&repository.registry));
        }
        if let Some(lookup) = self.lookup.get() {
            return Ok(lookup.clone());
        }
        let lookup = credentials::lookup(&repository.registry, recipe_registry)?;
        Ok(self.lookup.get_or_init(|| lookup).clone())
    }

    /// The registry's API root, `https://HOST/` (or `http://` for loopback and insecure hosts).
    fn base_url(&self, repository: &RemoteRepository) -> Result<Url, RegistryError> {
        let host = repository.api_host();
        let invalid = |message: String| RegistryError::Invalid {
            url: host.to_owned(),
            message,
        };
        let mut url = Url::parse(&format!("https://{host}/"))
            .map_err(|error| invalid(format!("not a registry host: {error}")))?;
        if url.path() != "/" || !url.username().is_empty() || url.password().is_some() {
            return Err(invalid("not a registry host".to_owned()));
        }
        let plain = Url::parse(&format!("http://{host}/"))
            .ok()
            .filter(|plain| Trust::new(plain, &self.insecure).may_be_plain(plain));
        if let Some(plain) = plain {
            url = plain;
        }
        Ok(url)
    }

    /// An API URL of `repository`: `path` under the registry's root.
    fn api_url(&self, repository: &RemoteRepository, path: &str) -> Result<Url, RegistryError> {
        let base = self.base_url(repository)?;
        base.join(path).map_err(|error| RegistryError::Invalid {
            url: format!("{base}{path}"),
            message: error.to_string(),
        })
    }

    /// Sends a request, answering the registry's authentication challenge once.
    fn send(
        &self,
        method: Method<'_>,
        url: &Url,
        accept: &str,
        repository: &RemoteRepository,
    ) -> Result<ureq::http::Response<ureq::Body>, RegistryError> {
        let base = self.base_url(repository)?;
        let trust = Trust::new(&base, &self.insecure);
        let home = trust.sends_credentials_to(url);
        let key = base.origin().ascii_serialization();
        let cached = home
            .then(|| self.authorizations.borrow().get(&key).cloned())
            .flatten();
        let response = self.fetch(method, url, accept, cached.as_deref(), &trust)?;
        if response.status().as_u16() != 401 {
            return Ok(response);
        }
        let lookup = self.lookup(repository)?;
        let unauthorized = |status: u16, withheld: Option<&Url>| RegistryError::Unauthorized {
            url: url.to_string(),
            status,
            lookup: Box::new(lookup.clone()),
            withheld: withheld
                .filter(|_| lookup.credentials.is_some())
                .map(ToString::to_string),
        };
        let challenge = crate::http::header(&response, "www-authenticate")
            .and_then(Challenge::parse)
            .filter(|_| home)
            .ok_or_else(|| unauthorized(401, None))?;
        let (authorization, withheld) = match challenge {
            Challenge::Basic => match &lookup.credentials {
                Some(credentials) => (credentials.basic(), None),
                None => return Err(unauthorized(401, None)),
            },
            Challenge::Bearer {
                realm,
                service,
                scope,
            } => {
                let (realm, credentials) =
                    trust
                        .realm(&realm)
                        .map_err(|refusal| RegistryError::Refused {
                            what: "token realm",
                            url: realm.clone(),
                            refusal,
                        })?;
                let access = if method.writes() { "pull,push" } else { "pull" };
                let scope =
                    scope.unwrap_or_else(|| format!("repository:{}:{access}", repository.path));
                let sent = lookup.credentials.as_ref().filter(|_| credentials);
                let token = self.token(&realm, service.as_deref(), &scope, &lookup, sent)?;
                (format!("Bearer {token}"), (!credentials).then_some(realm))
            }
        };
        let response = self.fetch(method, url, accept, Some(&authorization), &trust)?;
        if matches!(response.status().as_u16(), 401 | 403) {
            return Err(unauthorized(response.status().as_u16(), withheld.as_ref()));
        }
        self.authorizations.borrow_mut().insert(key, authorization);
        Ok(response)
    }

    /// Sends a request to `url` and follows its redirects where `trust` allows: the
    /// `authorization` goes only to `url`'s own origin, never to a redirect elsewhere.
    fn fetch(
        &self,
        method: Method<'_>,
        url: &Url,
        accept: &str,
        authorization: Option<&str>,
        trust: &Trust<'_>,
    ) -> Result<ureq::http::Response<ureq::Body>, RegistryError> {
        let mut current = url.clone();
        for _ in 0..=MAX_REDIRECTS {
            let authorization = authorization.filter(|_| trust::same_origin(url, &current));
            let response = self.request(method, &current, accept, authorization)?;
            let redirect = matches!(response.status().as_u16(), 301 | 302 | 303 | 307 | 308);
            let location = crate::http::header(&response, "location").map(ToOwned::to_owned);
            let Some(location) = location.filter(|_| redirect) else {
                return Ok(response);
            };
            current =
                trust
                    .redirect(&current, &location)
                    .map_err(|refusal| RegistryError::Refused {
                        what: "redirect to",
                        url: location.clone(),
                        refusal,
                    })?;
        }
        Err(RegistryError::Invalid {
            url: url.to_string(),
            message: format!("more than {MAX_REDIRECTS} redirects"),
        })
    }

    fn request(
        &self,
        method: Method<'_>,
        url: &Url,
        accept: &str,
        authorization: Option<&str>,
    ) -> Result<ureq::http::Response<ureq::Body>, RegistryError> {
        fn with<B>(
            request: ureq::RequestBuilder<B>,
            accept: &str,
            authorization: Option<&str>,
        ) -> ureq::RequestBuilder<B> {
            let request = request.header("Accept", accept);
            match authorization {
                Some(authorization) => request.header("Authorization", authorization),
                None => request,
            }
        }
        let result = match method {
            Method::Get => with(self.agent.get(url.as_str()), accept, authorization).call(),
            Method::Head => with(self.agent.head(url.as_str()), accept, authorization).call(),
            Method::Post => with(self.agent.post(url.as_str()), accept, authorization).send_empty(),
            Method::Put { content_type, body } => {
                with(self.agent.put(url.as_str()), accept, authorization)
                    .header("Content-Type", content_type)
                    .send(body)
            }
        };
        result.map_err(|error| RegistryError::Unreachable {
            url: url.to_string(),
            message: error.to_string(),
        })
    }

    /// A bearer token from `realm`, asked with `credentials` when the realm may have them.
    fn token(
        &self,
        realm: &Url,
        service: Option<&str>,
        scope: &str,
        lookup: &Lookup,
        credentials: Option<&Credentials>,
    ) -> Result<String, RegistryError> {
        let mut url = realm.clone();
        url.query_pairs_mut().append_pair("scope", scope);
        if let Some(service) = service {
            url.query_pairs_mut().append_pair("service", service);
        }
        let realm_text = realm.to_string();
        let authorization = credentials.map(Credentials::basic);
        let trust = Trust::new(realm, &self.insecure);
        let mut response = self.fetch(
            Method::Get,
            &url,
            "application/json",
            authorization.as_deref(),
            &trust,
        )?;
        let status = response.status().as_u16();
        if matches!(status, 401 | 403) {
            return Err(RegistryError::Unauthorized {
                url: realm_text,
                status,
                lookup: Box::new(lookup.clone()),
                withheld: None,
            });
        }
        if status != 200 {
            return Err(RegistryError::Status {
                url: realm_text,
                status,
            });
        }
        let body = crate::http::body_text(&mut response, &realm_text)?;
        #[derive(serde::Deserialize)]
        struct TokenAnswer {
            token: Option<String>,
            access_token: Option<String>,
        }
        let answer: TokenAnswer =
            serde_json::from_str(&body).map_err(|error| RegistryError::Invalid {
                url: realm_text.clone(),
                message: error.to_string(),
            })?;
        answer
            .token
            .or(answer.access_token)
            .ok_or_else(|| RegistryError::Invalid {
                url: realm_text,
                message: "the token answer holds neither `token` nor `access_token`".to_owned(),
            })
    }

    fn check_status(
        response: &ureq::http::Response<ureq::Body>,
        url: &Url,
        what: impl FnOnce() -> String,
    ) -> Result<(), RegistryError> {
        match response.status().as_u16() {
            200 => Ok(()),
            404 => Err(RegistryError::NotFound {
                url: url.to_string(),
                what: what(),
            }),
            status => Err(RegistryError::Status {
                url: url.to_string(),
                status,
            }),
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Method<'a> {
    Get,
    Head,
    /// Starts a blob upload.
    Post,
    /// Sends `body`: a blob's bytes, or a manifest.
    Put {
        content_type: &'a str,
        body: &'a [u8],
    },
}

impl Method<'_> {
    /// Whether the request changes the repository, so that its token must allow a push.
    fn writes(self) -> bool {
        matches!(self, Method::Post | Method::Put { .. })
    }
}

impl Registry for RegistryClient {
    fn tags(&self, repository: &RemoteRepository) -> Result<Vec<String>, RegistryError> {
        let base = self.base_url(repository)?;
        let trust = Trust::new(&base, &self.insecure);
        let mut url = self.api_url(
            repository,
            &format!("v2/{}/tags/list?n=1000", repository.path),
        )?;
        let mut tags = Vec::new();
        // Bounded: a registry that keeps sending `next` cannot hold forge forever.
        for _ in 0..1000 {
            let mut response = self.send(Method::Get, &url, "application/json", repository)?;
            Self::check_status(&response, &url, || format!("repository {repository}"))?;
            let next = crate::http::header(&response, "link").and_then(next_link);
            let body = crate::http::body_text(&mut response, url.as_str())?;
            #[derive(serde::Deserialize)]
            struct TagList {
                tags: Option<Vec<String>>,
            }
            let list: TagList =
                serde_json::from_str(&body).map_err(|error| RegistryError::Invalid {
                    url: url.to_string(),
                    message: error.to_string(),
                })?;
            tags.extend(list.tags.unwrap_or_default());
            let Some(next) = next else {
                return Ok(tags);
            };
            url = trust
                .next_link(&url, &next)
                .map_err(|refusal| RegistryError::Refused {
                    what: "next link of the tag list",
                    url: next.clone(),
                    refusal,
                })?;
        }
        Ok(tags)
    }

    fn manifest_digest(
        &self,
        repository: &RemoteRepository,
        reference: &str,
    ) -> Result<Digest, RegistryError> {
        let url = self.api_url(
            repository,
            &format!("v2/{}/manifests/{reference}", repository.path),
        )?;
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
        let url = self.api_url(
            repository,
            &format!("v2/{}/manifests/{reference}", repository.path),
        )?;
        let mut response = self.send(Method::Get, &url, MANIFEST_TYPES, repository)?;
        Self::check_status(&response, &url, || format!("{repository}:{reference}"))?;
        let header = |name: &str| crate::http::header(&response, name).map(ToOwned::to_owned);
        let claimed = match header("docker-content-digest") {
            Some(value) => Some(
                value
                    .parse::<Digest>()
                    .map_err(|_| RegistryError::Invalid {
                        url: url.to_string(),
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
    url: &Url,
) -> Result<Vec<u8>, RegistryError> {
    Ok(crate::http::body_bytes(response, url.as_str())?)
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
