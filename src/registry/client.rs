//! The registry client: the distribution API over HTTP(S), with redirects judged by `trust`,
//! tokens from `auth` and credentials from `credentials`.

use std::cell::{OnceCell, RefCell};
use std::collections::BTreeMap;

use sha2::{Digest as _, Sha256};
use url::Url;

use crate::types::oci::Digest;

use super::api::{Registry, RemoteRepository};
use super::auth::Challenge;
use super::credentials::{Credentials, Lookup};
use super::error::RegistryError;
use super::manifest::{MANIFEST_TYPES, Manifest, ManifestMediaType};
use super::trust::Trust;
use super::{credentials, trust};
use crate::types::oci::RegistryHost;

/// How many redirects one request may follow.
const MAX_REDIRECTS: usize = 10;

/// The real client: the distribution API over `ureq`.
#[derive(Debug)]
pub struct RegistryClient {
    // Follows no redirect by itself: `fetch` decides where each one may lead.
    agent: ureq::Agent,
    pub(super) insecure: Vec<RegistryHost>,
    // The registry whose credentials to send when asked, and the one the recipe publishes to
    // (which `FORGE_REGISTRY_USER` and `FORGE_REGISTRY_PASSWORD` are for); other registries get
    // none.
    credentials_for: Option<(String, Option<String>)>,
    // Looked up at the first challenge, so that anonymous registries never run a helper.
    lookup: OnceCell<Lookup>,
    // Authorization header values by registry origin, reused for the rest of the run.
    authorizations: RefCell<BTreeMap<String, String>>,
    // When the client was made: every read of one command ends by `read_deadline()` after it.
    started: std::time::Instant,
}

/// How long the upload of a blob of `size` bytes may take: the per-request limit, and a second
/// more for each MiB (a link of 1 MiB/s or better), so that a layer of gigabytes is not cut
/// off at the limit a manifest's request keeps.
pub fn upload_timeout(size: u64) -> std::time::Duration {
    crate::http::TIMEOUT + std::time::Duration::from_secs(size / (1024 * 1024))
}

/// How long all of one command's reads from registries may take together:
/// `FORGE_REGISTRY_DEADLINE` seconds, else 600. A registry that answers every request slowly,
/// each within the per-request limit, cannot hold a command for the sum of them. Uploads are
/// bounded per request only: a large layer takes what it takes.
pub fn read_deadline() -> std::time::Duration {
    std::env::var("FORGE_REGISTRY_DEADLINE")
        .ok()
        .and_then(|seconds| seconds.trim().parse::<f64>().ok())
        .filter(|seconds| *seconds > 0.0)
        .map_or(
            std::time::Duration::from_secs(600),
            std::time::Duration::from_secs_f64,
        )
}

impl RegistryClient {
    /// A client; `insecure` lists hosts (with port, if any) that may be spoken to over plain
    /// HTTP besides loopback ones.
    pub fn new(insecure: Vec<RegistryHost>) -> Self {
        Self {
            agent: crate::http::agent_without_redirects(),
            insecure,
            credentials_for: None,
            lookup: OnceCell::new(),
            authorizations: RefCell::new(BTreeMap::new()),
            started: std::time::Instant::now(),
        }
    }

    /// Sends the credentials the environment or the Docker configuration holds for `registry`
    /// when it asks for them; `recipe_registry` is the registry the recipe publishes to, the
    /// one `FORGE_REGISTRY_USER` and `FORGE_REGISTRY_PASSWORD` are for (unless
    /// `FORGE_REGISTRY_HOST` names another); `None` where no recipe is read (an image named by
    /// reference), when they are for `FORGE_REGISTRY_HOST` alone.
    pub fn with_credentials_for(mut self, registry: &str, recipe_registry: Option<&str>) -> Self {
        self.credentials_for = Some((registry.to_owned(), recipe_registry.map(str::to_owned)));
        self
    }

    /// A client for the recipe's own `repository`, sending the credentials the environment (or
    /// `docker login`) holds for its registry; with the lookup, for pushes through the daemon.
    pub fn for_recipe(
        repository: &crate::types::oci::Repository,
        insecure: Vec<RegistryHost>,
    ) -> Result<(Self, Lookup), credentials::CredentialsError> {
        let lookup = credentials::lookup(
            repository.registry().as_str(),
            Some(repository.registry().as_str()),
        )?;
        Ok((Self::new(insecure).with_lookup(lookup.clone()), lookup))
    }

    /// Sends the credentials of a lookup already made, when its registry asks for them.
    pub fn with_lookup(mut self, lookup: Lookup) -> Self {
        self.credentials_for = Some((lookup.registry.clone(), Some(lookup.registry.clone())));
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
        let lookup = credentials::lookup(&repository.registry, recipe_registry.as_deref())?;
        Ok(self.lookup.get_or_init(|| lookup).clone())
    }

    /// The registry's API root, `https://HOST/` (or `http://` for loopback and insecure hosts).
    pub(super) fn base_url(&self, repository: &RemoteRepository) -> Result<Url, RegistryError> {
        let host = repository.api_host();
        let invalid = |message: String| RegistryError::Invalid {
            url: host.to_owned(),
            message,
        };
        let mut url = Url::parse(&format!("https://{host}/"))
            .map_err(|error| invalid(format!("not a registry host: {error}")))?;
        if !super::trust::is_origin_only(&url) {
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
    pub(super) fn api_url(
        &self,
        repository: &RemoteRepository,
        path: &str,
    ) -> Result<Url, RegistryError> {
        let base = self.base_url(repository)?;
        base.join(path).map_err(|error| RegistryError::Invalid {
            url: format!("{base}{path}"),
            message: error.to_string(),
        })
    }

    /// Sends a request, answering the registry's authentication challenge once.
    pub(super) fn send(
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
        // A read gets what is left of the command's deadline, at most the per-request limit.
        let left = read_deadline().saturating_sub(self.started.elapsed());
        if matches!(method, Method::Get | Method::Head) && left.is_zero() {
            return Err(RegistryError::Unreachable {
                url: url.to_string(),
                message: format!(
                    "the registry's answers took more than {} s in all (FORGE_REGISTRY_DEADLINE)",
                    read_deadline().as_secs_f64()
                ),
            });
        }
        let bounded = Some(left.min(crate::http::TIMEOUT));
        let result = match method {
            Method::Get => with(
                self.agent
                    .get(url.as_str())
                    .config()
                    .timeout_global(bounded)
                    .build(),
                accept,
                authorization,
            )
            .call(),
            Method::Head => with(
                self.agent
                    .head(url.as_str())
                    .config()
                    .timeout_global(bounded)
                    .build(),
                accept,
                authorization,
            )
            .call(),
            Method::Post => with(self.agent.post(url.as_str()), accept, authorization).send_empty(),
            Method::Put { content_type, body } => {
                with(self.agent.put(url.as_str()), accept, authorization)
                    .header("Content-Type", content_type)
                    .send(body)
            }
            Method::PutFile { path } => match std::fs::File::open(path) {
                Ok(file) => {
                    let size = file.metadata().map_or(0, |metadata| metadata.len());
                    let put = self
                        .agent
                        .put(url.as_str())
                        .config()
                        .timeout_global(Some(upload_timeout(size)))
                        .build();
                    with(put, accept, authorization)
                        .header("Content-Type", "application/octet-stream")
                        .send(file)
                }
                Err(error) => {
                    return Err(RegistryError::Unreachable {
                        url: url.to_string(),
                        message: format!("cannot read {}: {error}", path.display()),
                    });
                }
            },
        };
        result.map_err(|error| RegistryError::Unreachable {
            url: url.to_string(),
            message: match error {
                // Cut short by what was left of the command's deadline.
                ureq::Error::Timeout(_) if left < crate::http::TIMEOUT => format!(
                    "the registry's answers took more than {} s in all (FORGE_REGISTRY_DEADLINE)",
                    read_deadline().as_secs_f64()
                ),
                error => error.to_string(),
            },
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

    pub(super) fn check_status(
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
pub(super) enum Method<'a> {
    Get,
    Head,
    /// Starts a blob upload.
    Post,
    /// Sends `body`: a blob's bytes, or a manifest.
    Put {
        content_type: &'a str,
        body: &'a [u8],
    },
    /// Sends the file at `path`: a blob's bytes.
    PutFile {
        path: &'a std::path::Path,
    },
}

impl Method<'_> {
    /// Whether the request changes the repository, so that its token must allow a push.
    fn writes(self) -> bool {
        matches!(
            self,
            Method::Post | Method::Put { .. } | Method::PutFile { .. }
        )
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
        // Bounded: a registry that keeps sending `next`, or pages that fill the body limit,
        // cannot hold forge forever or take its memory: the pages together are read within
        // one body's limit.
        let mut read = 0u64;
        for _ in 0..1000 {
            let mut response = self.send(Method::Get, &url, "application/json", repository)?;
            Self::check_status(&response, &url, || format!("repository {repository}"))?;
            let next = crate::http::header(&response, "link").and_then(crate::http::next_link);
            let body = crate::http::body_text(&mut response, url.as_str())?;
            read += body.len() as u64;
            if read > crate::http::BODY_LIMIT {
                return Err(RegistryError::Invalid {
                    url: url.to_string(),
                    message: format!(
                        "its tag list runs past {} MiB; forge reads no more of it",
                        crate::http::BODY_LIMIT >> 20
                    ),
                });
            }
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

/// The whole body of `response` (at most `http::BODY_LIMIT` bytes), fetched from `url`.
pub(super) fn read_body(
    response: &mut ureq::http::Response<ureq::Body>,
    url: &Url,
) -> Result<Vec<u8>, RegistryError> {
    Ok(crate::http::body_bytes(response, url.as_str())?)
}

#[cfg(test)]
mod tests {
    use super::upload_timeout;
    use std::time::Duration;

    #[test]
    fn an_upload_gets_a_second_more_for_each_mib() {
        assert_eq!(upload_timeout(1000), Duration::from_secs(60));
        let layer = 3 * 1024 * 1024 * 1024;
        assert_eq!(upload_timeout(layer), Duration::from_secs(60 + 3 * 1024));
    }
}
