//! A registry's identity. The same registry is written many ways: `ghcr.io` in an image
//! reference, `https://ghcr.io/` or `GHCR.IO:443` as a key of config.json, and Docker Hub under
//! three names (`docker.io` in references, `index.docker.io` and its v1 URL for credentials,
//! `registry-1.docker.io` where its API is served). `Registry` keeps the name as written and
//! compares by the one name it stands for; every alias of Docker Hub is folded here, and only
//! here.

use std::fmt;

/// The registry a reference without a domain names, as the docker CLI resolves it.
pub const DEFAULT_REGISTRY: &str = "docker.io";

/// The v1 index address the docker CLI files Docker Hub's credentials under.
pub const DOCKER_HUB_SERVER: &str = "https://index.docker.io/v1/";

/// Docker Hub's names: the one image references use, its v1 index (the docker CLI's key for its
/// credentials), and the host its registry API is served from.
const DOCKER_HUB: [&str; 3] = ["docker.io", "index.docker.io", DOCKER_HUB_API];

/// The host Docker Hub serves its registry API from: not `docker.io`.
const DOCKER_HUB_API: &str = "registry-1.docker.io";

/// A registry: its name as written, compared by the one name it stands for (`canonical`:
/// lowercase host, its port unless the default, no scheme or path, Docker Hub as `docker.io`).
/// Two are equal when they stand for the same registry.
#[derive(Debug, Clone)]
pub struct Registry {
    written: String,
}

/// The host (and port) of a server address as config.json keys, credential helpers and the
/// docker CLI write it: without a scheme in front or a path behind
/// (`https://index.docker.io/v1/` is `index.docker.io`).
pub fn server_host(name: &str) -> &str {
    name.trim()
        .trim_start_matches("https://")
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap_or_default()
}

/// The one name `name` stands for, or `None` when it names no host.
fn canonical(name: &str) -> Option<String> {
    let bare = server_host(name);
    if is_docker_hub(bare) {
        return Some(DEFAULT_REGISTRY.to_owned());
    }
    let url = url::Url::parse(&format!("https://{bare}/")).ok()?;
    let plain = super::url::is_origin_only(&url);
    let host = url.host_str().filter(|host| plain && !host.is_empty())?;
    Some(match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    })
}

impl Registry {
    /// The registry `name` names, written as image references, config.json keys, credential
    /// helpers and `FORGE_REGISTRY_HOST` write it (a host with its port, optionally behind a
    /// scheme and before a path, as the docker CLI reads a server address); `None` when it
    /// names no host.
    pub fn named(name: &str) -> Option<Self> {
        canonical(name).map(|_| Self {
            written: name.to_owned(),
        })
    }

    /// The one name it stands for.
    fn canonical(&self) -> String {
        canonical(&self.written).expect("checked when named")
    }

    /// The name as written.
    pub fn as_str(&self) -> &str {
        &self.written
    }

    /// Whether it is Docker Hub, under any of its names.
    pub fn is_docker_hub(&self) -> bool {
        self.canonical() == DEFAULT_REGISTRY
    }

    /// The host its API is served from: Docker Hub's is `registry-1.docker.io`, every other
    /// registry's is its name as written.
    pub fn api_host(&self) -> &str {
        if self.is_docker_hub() {
            DOCKER_HUB_API
        } else {
            &self.written
        }
    }

    /// The server address the docker CLI files its credentials under and asks helpers and
    /// daemons about: Docker Hub's v1 index address, every other registry's name as written.
    pub fn server_address(&self) -> &str {
        if self.is_docker_hub() {
            DOCKER_HUB_SERVER
        } else {
            &self.written
        }
    }

    /// Whether `name`, written any way `named` reads, stands for this registry.
    pub fn is_named(&self, name: &str) -> bool {
        Registry::named(name).is_some_and(|other| other == *self)
    }
}

impl PartialEq for Registry {
    fn eq(&self, other: &Self) -> bool {
        self.canonical() == other.canonical()
    }
}

impl Eq for Registry {}

impl fmt::Display for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.written)
    }
}

/// Whether `host` is one of Docker Hub's names, in any case.
fn is_docker_hub(host: &str) -> bool {
    DOCKER_HUB
        .iter()
        .any(|name| host.eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(name: &str) -> Registry {
        Registry::named(name).unwrap_or_else(|| panic!("{name:?} names no registry"))
    }

    #[test]
    fn docker_hub_is_one_registry_under_its_three_names() {
        for name in [
            "docker.io",
            "index.docker.io",
            "registry-1.docker.io",
            "Docker.IO",
            "https://index.docker.io/v1/",
        ] {
            let registry = named(name);
            assert!(registry.is_docker_hub(), "{name}");
            assert_eq!(registry, named(DEFAULT_REGISTRY), "{name}");
            assert_eq!(registry.api_host(), "registry-1.docker.io");
            assert_eq!(registry.server_address(), "https://index.docker.io/v1/");
        }
        for name in ["ghcr.io", "127.0.0.1:5000", "docker.io.example.org"] {
            let registry = named(name);
            assert!(!registry.is_docker_hub(), "{name}");
            assert_eq!(
                (registry.api_host(), registry.server_address()),
                (name, name)
            );
        }
    }

    #[test]
    fn one_registry_however_it_is_written() {
        for (a, b) in [
            ("ghcr.io", "https://ghcr.io/"),
            ("ghcr.io", "GHCR.IO"),
            ("ghcr.io", "ghcr.io:443"),
            ("127.0.0.1:5000", "http://127.0.0.1:5000/v2/"),
            ("[::1]:5000", "https://[::1]:5000"),
        ] {
            assert_eq!(named(a), named(b), "{a} and {b}");
        }
        for (a, b) in [
            ("ghcr.io", "ghcr.io:5000"),
            ("127.0.0.1:5000", "127.0.0.1:5001"),
            ("docker.io", "quay.io"),
        ] {
            assert_ne!(named(a), named(b), "{a} and {b}");
        }
        for nothing in ["", "https://", "user@ghcr.io", "ghcr.io?x"] {
            assert!(Registry::named(nothing).is_none(), "{nothing:?}");
        }
    }
}
