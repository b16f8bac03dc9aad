//! A project's releases as the GitHub releases API lists them (`GET /repos/OWNER/REPO/releases`:
//! a JSON array of releases, each with its `tag_name`, `draft` and `prerelease` flags and its
//! `assets`, each with its `name`): the versions a wheel set downloaded by URL may move to, and
//! which files each release holds. Pages follow the `Link: <...>; rel="next"` header on the same
//! host only; nothing but the URL is sent.

use std::collections::BTreeSet;

use serde::Deserialize;

use crate::diagnostics::{Advice, Advise};
use crate::types::python::Version;
use crate::types::url::Url;

/// The most pages forge reads (100 releases each).
const MAX_PAGES: usize = 10;

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
        Advice::Hint("check the network and the pin's `releases` (or its `url`, which names the project on GitHub); `--to VERSION` moves without a listing".to_owned())
    }
}

crate::advised!(ReleasesError);

/// Every release `url` lists that is not a draft, newest pages first as the API gives them.
pub fn list(url: &Url) -> Result<Vec<Release>, ReleasesError> {
    let agent = crate::http::agent();
    let mut next = Some(format!("{url}?per_page=100"));
    let mut releases = Vec::new();
    let mut pages = 0;
    while let Some(page) = next.take() {
        pages += 1;
        let unreachable = |message: String| ReleasesError::Unreachable {
            url: page.clone(),
            message,
        };
        let mut response = agent
            .get(&page)
            .header("Accept", "application/vnd.github+json")
            .call()
            .map_err(|error| unreachable(error.to_string()))?;
        let status = response.status().as_u16();
        if status != 200 {
            return Err(ReleasesError::Status { url: page, status });
        }
        let link = crate::http::header(&response, "link").map(ToOwned::to_owned);
        let body = crate::http::body_text(&mut response, &page)
            .map_err(|error| unreachable(error.to_string()))?;
        let listed: Vec<ApiRelease> =
            serde_json::from_str(&body).map_err(|error| ReleasesError::Shape {
                url: page.clone(),
                message: error.to_string(),
            })?;
        releases.extend(
            listed
                .into_iter()
                .filter(|release| !release.draft)
                .map(|release| Release {
                    version: version_of(&release.tag_name),
                    tag: release.tag_name,
                    prerelease: release.prerelease,
                    assets: release.assets.into_iter().map(|asset| asset.name).collect(),
                }),
        );
        next = link
            .as_deref()
            .and_then(crate::http::next_link)
            .filter(|next| same_origin(url.as_str(), next) && pages < MAX_PAGES);
    }
    Ok(releases)
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
