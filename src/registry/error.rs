//! Why a registry could not be asked, each with what to do.

use crate::diagnostics::{Advice, Advise};
use crate::redact::Redacted;

use super::credentials::{CredentialsError, Lookup};
use super::trust::UrlRefusal;

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
