//! A wheel downloaded by URL to learn its sha256 and what it declares: the body is streamed
//! through the hash into an anonymous temporary file (never held whole in memory, gone when the
//! download is), and then read as a wheel: a zip whose `.dist-info` folder and METADATA name the
//! package and version its file name says. What is hashed is what is judged. The download ends
//! at `limits::download_limit` and at the idle time, and nothing but the URL is sent (no
//! credentials).

use std::io::{Read, Write as _};
use std::str::FromStr as _;

use sha2::{Digest as _, Sha256};

use crate::diagnostics::{Advice, Advise};
use crate::types::python::{FileSha256, PackageName, WheelName};
use crate::types::url::Url;

/// What the URL held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fetched {
    /// A wheel of `size` bytes with this sha256.
    Found {
        /// Its sha256.
        sha256: FileSha256,
        /// Its size in bytes.
        size: u64,
        /// Its METADATA.
        metadata: String,
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
    /// A redirect was not followed: out of HTTP, from https to plain http, with a login in it,
    /// or one too many.
    #[error("cannot download {}: {refusal}", crate::redact::Redacted(url.as_str()))]
    Redirect {
        /// The URL.
        url: String,
        /// Why the redirect was not followed, and where it led.
        refusal: crate::http::RedirectRefusal,
    },
    /// The body stopped early, stalled, or crossed the size limit.
    #[error("cannot hash {}: {message}", crate::redact::Redacted(url.as_str()))]
    Body {
        /// The URL.
        url: String,
        /// What stopped it.
        message: String,
    },
    /// The server answered with something that is not the wheel the file name says.
    #[error("{} is not the wheel {file}: {message}", crate::redact::Redacted(url.as_str()))]
    NotTheWheel {
        /// The URL.
        url: String,
        /// The wheel's file name.
        file: String,
        /// What it is instead.
        message: String,
    },
}

impl Advise for DownloadError {
    fn advice(&self) -> Advice {
        Advice::Hint(match self {
            DownloadError::Unreachable { .. } => "check the network and the pin's `url`; pins.toml was not changed".to_owned(),
            DownloadError::Redirect { refusal, .. } => match refusal.advice() {
                Advice::Hint(hint) => format!("{hint}; pins.toml was not changed"),
                Advice::Nothing(_) => "pins.toml was not changed".to_owned(),
            },
            DownloadError::Body { .. } => "try again; a file larger than the limit needs FORGE_DOWNLOAD_LIMIT (bytes) raised, and a slow link FORGE_IDLE_TIMEOUT (seconds); pins.toml was not changed".to_owned(),
            DownloadError::NotTheWheel { .. } => "a server that answers with an error or rate-limit page, or with another file, is not recorded: try again later, or check the pin's `url` and the wheel's `file` in pins.toml; pins.toml was not changed".to_owned(),
        })
    }
}

crate::advised!(DownloadError);

/// Downloads the wheel `file` from `url` and returns its sha256 and METADATA, or the status of
/// a server that has no such file.
pub fn wheel(url: &Url, file: &str) -> Result<Fetched, DownloadError> {
    // No overall time limit: a large wheel takes long on a slow link. The idle time (the
    // response head's included) and the size limit bound it instead.
    let agent: ureq::Agent = crate::http::config_without_deadline()
        .max_redirects(0)
        .build()
        .into();
    let (_, response) =
        crate::http::get_following(&agent, url.as_str()).map_err(|error| match error {
            crate::http::FollowError::Refused(refusal) => DownloadError::Redirect {
                url: url.to_string(),
                refusal,
            },
            crate::http::FollowError::Request(ureq::Error::Timeout(_)) => {
                DownloadError::Unreachable {
                    url: url.to_string(),
                    message: format!(
                        "it sent no whole answer head within {} s (FORGE_IDLE_TIMEOUT)",
                        crate::http::idle_timeout().as_secs_f64()
                    ),
                }
            }
            crate::http::FollowError::Request(error) => DownloadError::Unreachable {
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
    // A length past the limit is refused before any of the body is read.
    let limit = crate::limits::download_limit();
    let length = crate::http::header(&response, "content-length")
        .and_then(|length| length.trim().parse::<u64>().ok());
    if let Some(length) = length.filter(|length| *length > limit) {
        return Err(DownloadError::Body {
            url: url.to_string(),
            message: format!(
                "it is {length} bytes (its Content-Length), more than the download limit of {limit}"
            ),
        });
    }
    let body = crate::http::Guarded::new(
        response.into_body().into_reader(),
        crate::http::idle_timeout(),
        limit,
        url.to_string(),
    );
    let (spooled, sha256, size) = spool(body, url)?;
    let metadata = check_wheel(&spooled, url, file)?;
    Ok(Fetched::Found {
        sha256,
        size,
        metadata,
    })
}

/// Streams `body` through the hash into an anonymous temporary file; returns the file, the
/// sha256 and the size.
fn spool(
    mut body: impl Read,
    url: &Url,
) -> Result<(std::fs::File, FileSha256, u64), DownloadError> {
    let failed = |message: String| DownloadError::Body {
        url: url.to_string(),
        message,
    };
    let mut spooled = tempfile::tempfile()
        .map_err(|error| failed(format!("cannot make a temporary file: {error}")))?;
    let mut hasher = Sha256::new();
    let mut size = 0u64;
    let mut buffer = vec![0u8; 256 * 1024];
    loop {
        let read = body
            .read(&mut buffer)
            .map_err(|error| failed(error.to_string()))?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
        spooled
            .write_all(&buffer[..read])
            .map_err(|error| failed(format!("cannot keep the download: {error}")))?;
        size += read as u64;
    }
    Ok((spooled, FileSha256::from_sha256(&hasher.finalize()), size))
}

/// The METADATA of the wheel in `spooled`, once its `.dist-info` folder and its METADATA's
/// `Name` and `Version` are the package and version the file name `file` says (names compared
/// as PEP 503 normalizes them, versions as PEP 440 does).
fn check_wheel(spooled: &std::fs::File, url: &Url, file: &str) -> Result<String, DownloadError> {
    let refuse = |message: String| DownloadError::NotTheWheel {
        url: url.to_string(),
        file: file.to_owned(),
        message,
    };
    let named = WheelName::from_str(file).map_err(|error| refuse(error.to_string()))?;
    let info = crate::package_index::zip_range::dist_info_in_file(spooled, url.as_str()).map_err(
        |error| match error {
            crate::package_index::IndexError::Invalid { message, .. } => refuse(message),
            error => refuse(error.to_string()),
        },
    )?;
    let expected = (named.distribution(), named.version());
    let folder = info.folder.strip_suffix(".dist-info").unwrap_or_default();
    let said_by_folder = folder.split_once('-').unwrap_or((folder, ""));
    let header = |name: &str| {
        (info.metadata.lines())
            .take_while(|line| !line.trim().is_empty())
            .find_map(|line| {
                line.strip_prefix(name)
                    .and_then(|rest| rest.strip_prefix(':'))
            })
            .map(str::trim)
            .unwrap_or_default()
    };
    let said_by_metadata = (header("Name"), header("Version"));
    for (what, (name, version)) in [
        (format!("its folder {}", info.folder), said_by_folder),
        ("its METADATA".to_owned(), said_by_metadata),
    ] {
        if !same_name(name, expected.0) || !same_version(version, expected.1) {
            return Err(refuse(format!(
                "{what} names {name} {version}, not {} {}",
                expected.0, expected.1
            )));
        }
    }
    Ok(info.metadata)
}

fn same_name(one: &str, other: &str) -> bool {
    let normalized = |name: &str| PackageName::from_str(name).map(|name| name.normalized());
    matches!((normalized(one), normalized(other)), (Ok(one), Ok(other)) if one == other)
}

fn same_version(one: &str, other: &str) -> bool {
    let parsed = |version: &str| pep440_rs::Version::from_str(version);
    matches!((parsed(one), parsed(other)), (Ok(one), Ok(other)) if one == other)
}
