//! Which daemon to talk to when none is named, chosen as the docker CLI chooses it:
//! `DOCKER_HOST`, else the context `DOCKER_CONTEXT` names, else the `currentContext` of the
//! docker configuration (`DOCKER_CONFIG`, else `~/.docker`), else the default socket. The
//! context `default` is the default socket.
//!
//! A context lives in the configuration folder's context store:
//! `contexts/meta/<sha256 of its name>/meta.json` holds its docker endpoint
//! (`Endpoints.docker.Host`), and `contexts/tls/<sha256 of its name>/docker/` its TLS files
//! (`ca.pem`, `cert.pem`, `key.pem`), when it has any.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::{Digest as _, Sha256};

use super::address::{DEFAULT_HOST, TlsFiles};
use crate::diagnostics::{Advice, Advise};

/// The daemon chosen, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selected {
    /// The address, as `DOCKER_HOST` spells it.
    pub host: String,
    /// The TLS files to use for a `tcp://` address: the context's, or those
    /// `DOCKER_TLS_VERIFY` and `DOCKER_CERT_PATH` name.
    pub tls: Option<TlsFiles>,
    /// The context it came from, when it came from one other than `default`.
    pub context: Option<String>,
}

/// Why the context could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ContextError {
    /// The named context is not in the store.
    #[error("docker context {name:?} ({origin}) does not exist in {}", store.display())]
    Missing {
        /// The context's name.
        name: String,
        /// Where the name came from.
        origin: &'static str,
        /// The context store.
        store: PathBuf,
    },
    /// A file of the store or the configuration could not be read or parsed.
    #[error("cannot read {}: {message}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

impl Advise for ContextError {
    fn advice(&self) -> Advice {
        Advice::Hint(match self {
            ContextError::Missing { .. } => "`docker context ls` lists the contexts; `docker context use default` (or unsetting DOCKER_CONTEXT) selects the default socket".to_owned(),
            ContextError::Unreadable { .. } => "fix or remove the file, or set DOCKER_HOST to name the daemon directly".to_owned(),
        })
    }
}

crate::advised!(ContextError);

/// The docker configuration folder: `DOCKER_CONFIG`, else `~/.docker`.
pub fn config_folder() -> PathBuf {
    let set = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
    set("DOCKER_CONFIG")
        .map(PathBuf::from)
        .or_else(|| set("HOME").map(|home| Path::new(&home).join(".docker")))
        .unwrap_or_else(|| PathBuf::from(".docker"))
}

/// The daemon the docker CLI would talk to in this environment.
pub fn select() -> Result<Selected, ContextError> {
    let set = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
    if let Some(host) = set("DOCKER_HOST") {
        return Ok(Selected {
            host,
            tls: TlsFiles::from_environment(),
            context: None,
        });
    }
    let config = config_folder();
    let named = match set("DOCKER_CONTEXT") {
        Some(name) => Some((name, "from DOCKER_CONTEXT")),
        None => current_context(&config)?.map(|name| (name, "the current context in config.json")),
    };
    match named {
        Some((name, origin)) if name != "default" => endpoint(&config, &name, origin),
        _ => Ok(Selected {
            host: DEFAULT_HOST.to_owned(),
            tls: TlsFiles::from_environment(),
            context: None,
        }),
    }
}

/// `currentContext` from `config.json`, if the file names one.
fn current_context(config: &Path) -> Result<Option<String>, ContextError> {
    #[derive(Deserialize)]
    struct Config {
        #[serde(rename = "currentContext")]
        current_context: Option<String>,
    }
    let path = config.join("config.json");
    let Some(text) = read(&path)? else {
        return Ok(None);
    };
    let parsed: Config = serde_json::from_str(&text).map_err(|error| ContextError::Unreadable {
        path,
        message: error.to_string(),
    })?;
    Ok(parsed.current_context.filter(|name| !name.is_empty()))
}

/// The docker endpoint of the context `name` in the store under `config`.
fn endpoint(config: &Path, name: &str, origin: &'static str) -> Result<Selected, ContextError> {
    #[derive(Deserialize)]
    struct Meta {
        #[serde(rename = "Endpoints", default)]
        endpoints: Endpoints,
    }
    #[derive(Deserialize, Default)]
    struct Endpoints {
        docker: Option<Endpoint>,
    }
    #[derive(Deserialize)]
    struct Endpoint {
        #[serde(rename = "Host")]
        host: Option<String>,
    }
    let id = hex::encode(Sha256::digest(name.as_bytes()));
    let store = config.join("contexts");
    let path = store.join("meta").join(&id).join("meta.json");
    let Some(text) = read(&path)? else {
        return Err(ContextError::Missing {
            name: name.to_owned(),
            origin,
            store,
        });
    };
    let meta: Meta = serde_json::from_str(&text).map_err(|error| ContextError::Unreadable {
        path: path.clone(),
        message: error.to_string(),
    })?;
    let host = meta
        .endpoints
        .docker
        .and_then(|docker| docker.host)
        .filter(|host| !host.is_empty())
        .unwrap_or_else(|| DEFAULT_HOST.to_owned());
    let tls_folder = store.join("tls").join(&id).join("docker");
    let tls = tls_folder
        .join("ca.pem")
        .is_file()
        .then_some(TlsFiles { folder: tls_folder });
    Ok(Selected {
        host,
        tls,
        context: Some(name.to_owned()),
    })
}

/// The text of `path`, or `None` when it does not exist.
fn read(path: &Path) -> Result<Option<String>, ContextError> {
    crate::fs::read_optional(path).map_err(|error| ContextError::Unreadable {
        path: path.to_owned(),
        message: error.to_string(),
    })
}
