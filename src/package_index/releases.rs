//! A project's releases as the GitHub releases API lists them (`GET /repos/OWNER/REPO/releases`:
//! a JSON array of releases, each with its `tag_name`, `draft` and `prerelease` flags and its
//! `assets`, each with its `name`): the versions a wheel set downloaded by URL may move to, and
//! which files each release holds. Pages follow the `Link: <...>; rel="next"` header on the same
//! origin only (a next page elsewhere is refused), at most `MAX_PAGES` of them (a listing cut
//! there says so). A GitHub token from the environment (`GH_TOKEN`, else `GITHUB_TOKEN`, as `gh`
//! reads them) goes with each page over https, to the listing's own origin and never on a
//! redirect; nothing else is sent.

use std::collections::BTreeSet;

use serde::Deserialize;

use crate::diagnostics::{Advice, Advise};
use crate::types::python::Version;
use crate::types::url::Url;

/// The most pages forge reads (100 releases each).
pub const MAX_PAGES: usize = 10;

/// One published release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Release {
    /// Its tag, as written.
    pub tag: String,
    /// The version the tag names (`v0.6.14` and `0.6.14` name 0.6.14), when it names one.
    pub version: Option<Version>,
    /// Marked as a pre-release by the project.
    pub prerelease: bool,
    /// The names of its files.
    pub assets: BTreeSet<String>,
}

#[derive(Debug, Deserialize)]
struct ApiRelease {
    tag_name: String,
    #[serde(default)]
    draft: bool,
    #[serde(default)]
    prerelease: bool,
    #[serde(default)]
    assets: Vec<ApiAsset>,
}

#[derive(Debug, Deserialize)]
struct ApiAsset {
    name: String,
}

/// Why the releases could not be listed.
#[derive(Debug, thiserror::Error)]
pub enum ReleasesError {
    /// No answer, or a body that could not be read.
    #[error("cannot list the releases at {}: {message}", crate::redact::Redacted(url.as_str()))]
    Unreachable {
        /// The URL.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// An answer other than 200.
    #[error("the releases at {} answered HTTP {status}", crate::redact::Redacted(url.as_str()))]
    Status {
        /// The URL.
        url: String,
        /// The status.
        status: u16,
    },
    /// A next page on another origin than the listing's.
    #[error(
        "the releases at {} name a next page on another host or port: {}",
        crate::redact::Redacted(url.as_str()),
        crate::redact::Redacted(next.as_str())
    )]
    OffOrigin {
        /// The page that named it.
        url: String,
        /// The next page it named.
        next: String,
    },
    /// Not the releases API's JSON.
    #[error("the releases at {} are not a GitHub releases list: {message}", crate::redact::Redacted(url.as_str()))]
    Shape {
        /// The URL.
        url: String,
        /// What did not parse.
        message: String,
    },
}

impl Advise for ReleasesError {
    fn advice(&self) -> Advice {
        Advice::Hint(match self {
            ReleasesError::OffOrigin { .. } => "forge reads a listing from one origin only (a token for it goes nowhere else): point the pin's `releases` at the API that serves every page, or move with `--to VERSION`".to_owned(),
            ReleasesError::Status { status: 401 | 403, .. } => "the API refused the listing (GitHub asks for a token after sixty requests an hour): set GH_TOKEN or GITHUB_TOKEN, or move with `--to VERSION`".to_owned(),
            _ => "check the network and the pin's `releases` (or its `url`, which names the project on GitHub); `--to VERSION` moves without a listing".to_owned(),
        })
    }
}

crate::advised!(ReleasesError);

/// A GitHub API token from the environment, and the variable it came from.
pub struct ApiToken {
    /// `GH_TOKEN` or `GITHUB_TOKEN`.
    pub variable: &'static str,
    value: String,
}

impl ApiToken {
    /// `GH_TOKEN`, else `GITHUB_TOKEN`, when set and not empty.
    pub fn from_environment() -> Option<Self> {
        ["GH_TOKEN", "GITHUB_TOKEN"]
            .into_iter()
            .find_map(|variable| {
                let value = std::env::var(variable).ok()?;
                (!value.trim().is_empty()).then(|| Self {
                    variable,
                    value: value.trim().to_owned(),
                })
            })
    }
}

/// What a token did for a listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenUse {
    /// No token in the environment.
    None,
    /// Sent with every page, from this variable.
    Sent(&'static str),
    /// Set in this variable, but not sent: the listing is not https.
    NotHttps(&'static str),
}

/// The releases a listing holds, and how it was read.
#[derive(Debug, Clone)]
pub struct Listing {
    /// Every release that is not a draft, newest pages first as the API gives them.
    pub releases: Vec<Release>,
    /// What the token did.
    pub token: TokenUse,
    /// Whether the listing had more pages than forge reads (`MAX_PAGES`).
    pub cut: bool,
}

/// Every release `url` lists that is not a draft, with `token` (over https only).
pub fn list(url: &Url, token: Option<&ApiToken>) -> Result<Listing, ReleasesError> {
    // Redirects never carry the token (ureq's default, said here): an API answer that sends
    // the client elsewhere gets the request without it.
    let agent: ureq::Agent = crate::http::config()
        .timeout_global(Some(crate::http::TIMEOUT))
        .redirect_auth_headers(ureq::config::RedirectAuthHeaders::Never)
        .build()
        .into();
    let https = url.as_str().starts_with("https://");
    let sent = token.filter(|_| https);
    let mut listing = Listing {
        releases: Vec::new(),
        token: match token {
            None => TokenUse::None,
            Some(token) if https => TokenUse::Sent(token.variable),
            Some(token) => TokenUse::NotHttps(token.variable),
        },
        cut: false,
    };
    let mut next = Some(format!("{url}?per_page=100"));
    let mut pages = 0;
    while let Some(page) = next.take() {
        pages += 1;
        let (releases, link) = read_page(&agent, &page, sent)?;
        listing.releases.extend(releases);
        let Some(found) = link.as_deref().and_then(crate::http::next_link) else {
            break;
        };
        let found = url::Url::parse(&page)
            .and_then(|base| base.join(&found))
            .map_or(found, String::from);
        if !same_origin(url.as_str(), &found) {
            return Err(ReleasesError::OffOrigin {
                url: page,
                next: found,
            });
        }
        if pages == MAX_PAGES {
            listing.cut = true;
            break;
        }
        next = Some(found);
    }
    Ok(listing)
}

/// One page of a listing: its releases that are not drafts, and its `Link` header.
fn read_page(
    agent: &ureq::Agent,
    page: &str,
    token: Option<&ApiToken>,
) -> Result<(Vec<Release>, Option<String>), ReleasesError> {
    let unreachable = |message: String| ReleasesError::Unreachable {
        url: page.to_owned(),
        message,
    };
    let mut request = agent
        .get(page)
        .header("Accept", "application/vnd.github+json");
    if let Some(token) = token {
        request = request.header("Authorization", format!("Bearer {}", token.value));
    }
    let mut response = request
        .call()
        .map_err(|error| unreachable(error.to_string()))?;
    let status = response.status().as_u16();
    if status != 200 {
        return Err(ReleasesError::Status {
            url: page.to_owned(),
            status,
        });
    }
    let link = crate::http::header(&response, "link").map(ToOwned::to_owned);
    let body = crate::http::body_text(&mut response, page)
        .map_err(|error| unreachable(error.to_string()))?;
    let listed: Vec<ApiRelease> =
        serde_json::from_str(&body).map_err(|error| ReleasesError::Shape {
            url: page.to_owned(),
            message: error.to_string(),
        })?;
    let releases = listed
        .into_iter()
        .filter(|release| !release.draft)
        .map(|release| Release {
            version: version_of(&release.tag_name),
            tag: release.tag_name,
            prerelease: release.prerelease,
            assets: release.assets.into_iter().map(|asset| asset.name).collect(),
        })
        .collect();
    Ok((releases, link))
}

/// The version a tag names: the tag itself, or after a leading `v`, when it is a canonical
/// PEP 440 version without a local label.
fn version_of(tag: &str) -> Option<Version> {
    let text = tag.strip_prefix('v').unwrap_or(tag);
    text.parse::<Version>()
        .ok()
        .filter(|version| !version.as_str().contains('+'))
}

/// Whether `other` has the scheme, host and port of `base`.
fn same_origin(base: &str, other: &str) -> bool {
    let origin = |url: &str| {
        let (scheme, rest) = url.split_once("://")?;
        Some(format!("{scheme}://{}", rest.split('/').next()?))
    };
    origin(base).is_some() && origin(base) == origin(other)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_links_and_origins() {
        assert_eq!(version_of("v0.6.14").unwrap().as_str(), "0.6.14");
        assert_eq!(version_of("0.6.14").unwrap().as_str(), "0.6.14");
        assert_eq!(version_of("nightly"), None);
        assert!(same_origin("https://h:1/a", "https://h:1/b?x"));
        assert!(!same_origin("https://h:1/a", "https://other/b"));
    }
}
