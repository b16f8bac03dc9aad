//! A file downloaded by URL to learn its sha256: the body is streamed through the hash and
//! dropped, never held whole or written to disk; it ends at `limits::download_limit` and at the
//! idle time, and nothing but the URL is sent (no credentials).

use std::io::Read;

use sha2::{Digest as _, Sha256};

use crate::diagnostics::{Advice, Advise};
use crate::types::python::FileSha256;
use crate::types::url::Url;

/// What the URL held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fetched {
    /// A file of `size` bytes with this sha256.
    Found {
        /// Its sha256.
        sha256: FileSha256,
        /// Its size in bytes.
        size: u64,
    },
    /// No file: the server answered with this status (404 for a release without the asset).
    Missing {
        /// The HTTP status.
        status: u16,
    },
}

/// Why a file could not be hashed.
#[derive(Debug, thiserror::Error)]
pub enum DownloadError {
    /// No answer at all.
    #[error("cannot download {}: {message}", crate::redact::Redacted(url.as_str()))]
    Unreachable {
        /// The URL.
        url: String,
        /// What the connection said.
        message: String,
    },
    /// A redirect from https led to plain http.
    #[error("cannot download {}: it redirects from https to plain http ({})", crate::redact::Redacted(url.as_str()), crate::redact::Redacted(to.as_str()))]
    Downgrade {
        /// The URL.
        url: String,
        /// Where the redirect led.
        to: String,
    },
    /// The body stopped early, stalled, or crossed the size limit.
    #[error("cannot hash {}: {message}", crate::redact::Redacted(url.as_str()))]
    Body {
        /// The URL.
        url: String,
        /// What stopped it.
        message: String,
    },
}

impl Advise for DownloadError {
    fn advice(&self) -> Advice {
        Advice::Hint(match self {
            DownloadError::Unreachable { .. } => "check the network and the pin's `url`; pins.toml was not changed".to_owned(),
            DownloadError::Downgrade { .. } => "forge hashes only what came over https when the url is https: ask the host to serve the file over https, or name its https location in the pin's `url`; pins.toml was not changed".to_owned(),
            DownloadError::Body { .. } => "try again; a file larger than the limit needs FORGE_DOWNLOAD_LIMIT (bytes) raised, and a slow link FORGE_IDLE_TIMEOUT (seconds); pins.toml was not changed".to_owned(),
        })
    }
}

crate::advised!(DownloadError);

/// Downloads `url` and returns its sha256, or the status of a server that has no such file.
pub fn sha256(url: &Url) -> Result<Fetched, DownloadError> {
    // No overall time limit: a large wheel takes long on a slow link. The idle time and the
    // size limit bound it instead.
    let agent: ureq::Agent = crate::http::config()
        .https_only(crate::http::stays_on_https(url.as_str()))
        .build()
        .into();
    let response = agent
        .get(url.as_str())
        .call()
        .map_err(|error| match error {
            ureq::Error::RequireHttpsOnly(to) => DownloadError::Downgrade {
                url: url.to_string(),
                to,
            },
            error => DownloadError::Unreachable {
                url: url.to_string(),
                message: error.to_string(),
            },
        })?;
    let status = response.status();
    if !status.is_success() {
        return Ok(Fetched::Missing {
            status: status.as_u16(),
        });
    }
    let mut body = crate::http::Guarded::new(
        response.into_body().into_reader(),
        crate::http::idle_timeout(),
        crate::limits::download_limit(),
        url.to_string(),
    );
    let mut hasher = Sha256::new();
    let mut size = 0u64;
    let mut buffer = vec![0u8; 256 * 1024];
    loop {
        let read = body
            .read(&mut buffer)
            .map_err(|error| DownloadError::Body {
                url: url.to_string(),
                message: error.to_string(),
            })?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
        size += read as u64;
    }
    Ok(Fetched::Found {
        sha256: FileSha256::from_sha256(&hasher.finalize()),
        size,
    })
}
