//! Package indexes: a package name and an index URL in, the versions the index offers out.
//!
//! 1. `select` decides which index each package is asked on: a mirror given with `--index-url`
//!    or `FORGE_INDEX_URL` replaces every index; otherwise a pin's own `index`, else pip's
//!    configuration, else pins.toml `[index] url`, else PyPI.
//! 2. `PackageIndex` asks one index for one package. `SimpleIndex`, the real one, speaks the
//!    simple repository API: PEP 691 JSON when the server offers it, the PEP 503 HTML page when
//!    it does not (static wheel folders such as FlashInfer's serve only HTML), and the PyPI JSON
//!    API for an index URL that ends in `/pypi`.
//! 3. Versions are read from file names (wheels and sdists), ordered by PEP 440; a version whose
//!    every file is yanked is not offered.

pub mod select;

use std::collections::BTreeSet;
use std::str::FromStr;

use serde::Deserialize;

use crate::diagnostics::{Advice, Advise};
use crate::types::python::PackageName;
use crate::types::url::Url;

/// What an index offers for one package.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Releases {
    /// Every version with at least one file that is not yanked, oldest first.
    pub versions: BTreeSet<pep440_rs::Version>,
}

impl Releases {
    /// Whether the index offers `version`, local label included (`0.6.15+cu130`).
    pub fn has(&self, version: &pep440_rs::Version) -> bool {
        self.versions.contains(version)
    }

    /// Reads the versions from file names, skipping yanked files and names that are not a
    /// wheel or sdist of `package`.
    pub fn from_files<'a>(
        package: &PackageName,
        files: impl IntoIterator<Item = (&'a str, bool)>,
    ) -> Self {
        let versions = files
            .into_iter()
            .filter(|(_, yanked)| !yanked)
            .filter_map(|(name, _)| version_of_file(package, name))
            .collect();
        Self { versions }
    }
}

/// One package index, asked for one package at a time.
pub trait PackageIndex {
    /// The releases of `package` on the index at `index`.
    fn releases(&self, index: &Url, package: &PackageName) -> Result<Releases, IndexError>;
}

/// Why an index could not say what it offers.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// No HTTP answer at all.
    #[error(
        "cannot reach the package index at {}: {message}",
        crate::redact::Redacted(url)
    )]
    Unreachable {
        /// The URL asked.
        url: String,
        /// What the connection said.
        message: String,
    },
    /// The index does not know the package.
    #[error(
        "{} has no package `{package}` (HTTP 404)",
        crate::redact::Redacted(url)
    )]
    NotFound {
        /// The URL asked.
        url: String,
        /// The package.
        package: String,
    },
    /// The index answered with an error status.
    #[error(
        "the package index at {} answered HTTP {status}",
        crate::redact::Redacted(url)
    )]
    Status {
        /// The URL asked.
        url: String,
        /// The status code.
        status: u16,
    },
    /// The answer was not a page or document of the simple API.
    #[error(
        "the package index at {} sent an answer forge cannot read: {message}",
        crate::redact::Redacted(url)
    )]
    Invalid {
        /// The URL asked.
        url: String,
        /// What was wrong with it.
        message: String,
    },
}

impl Advise for IndexError {
    fn advice(&self) -> Advice {
        Advice::Hint(match self {
            IndexError::Unreachable { .. } | IndexError::Status { .. } => "check the URL and the network; on an air-gapped machine point forge at a mirror with --index-url URL or FORGE_INDEX_URL".to_owned(),
            IndexError::NotFound { .. } => "check the package name in pins.toml, and that this index (or the pin's own `index`) serves it".to_owned(),
            IndexError::Invalid { .. } => "forge reads the simple repository API (PEP 691 JSON or PEP 503 HTML); point --index-url at such an index, such as https://pypi.org/simple".to_owned(),
        })
    }
}

crate::advised!(IndexError);

/// The real index client: the simple repository API over HTTP(S).
#[derive(Debug, Clone)]
pub struct SimpleIndex {
    agent: ureq::Agent,
}

impl Default for SimpleIndex {
    fn default() -> Self {
        Self {
            agent: crate::http::agent(),
        }
    }
}

/// PEP 691 first, the HTML page as a fallback for servers that only have that.
const ACCEPT: &str = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01";

impl PackageIndex for SimpleIndex {
    fn releases(&self, index: &Url, package: &PackageName) -> Result<Releases, IndexError> {
        let base = index.as_str().trim_end_matches('/');
        let json_api = base.ends_with("/pypi");
        let url = if json_api {
            format!("{base}/{}/json", package.normalized())
        } else {
            format!("{base}/{}/", package.normalized())
        };
        let mut response = self
            .agent
            .get(&url)
            .header("Accept", if json_api { "application/json" } else { ACCEPT })
            .call()
            .map_err(|error| IndexError::Unreachable {
                url: url.clone(),
                message: error.to_string(),
            })?;
        match response.status().as_u16() {
            200 => {}
            404 => {
                return Err(IndexError::NotFound {
                    url,
                    package: package.to_string(),
                });
            }
            status => return Err(IndexError::Status { url, status }),
        }
        let content_type = crate::http::header(&response, "content-type")
            .unwrap_or("")
            .to_ascii_lowercase();
        let body = crate::http::body_text(&mut response, &url).map_err(|error| {
            IndexError::Unreachable {
                url: url.clone(),
                message: error.to_string(),
            }
        })?;
        let invalid = |message: String| IndexError::Invalid {
            url: url.clone(),
            message,
        };
        if json_api {
            parse_json_api(package, &body).map_err(invalid)
        } else if content_type.contains("json") {
            parse_simple_json(package, &body).map_err(invalid)
        } else if content_type.contains("html") || body.trim_start().starts_with('<') {
            Ok(parse_simple_html(package, &body))
        } else {
            Err(invalid(format!("unexpected content type {content_type:?}")))
        }
    }
}

#[derive(Deserialize)]
struct SimpleJson {
    files: Vec<SimpleFile>,
}

#[derive(Deserialize)]
struct SimpleFile {
    filename: String,
    /// PEP 691: `false`, or a reason (`true` is seen in the wild).
    #[serde(default)]
    yanked: serde_json::Value,
}

impl SimpleFile {
    fn is_yanked(&self) -> bool {
        match &self.yanked {
            serde_json::Value::Bool(yanked) => *yanked,
            serde_json::Value::String(_) => true,
            _ => false,
        }
    }
}

fn parse_simple_json(package: &PackageName, body: &str) -> Result<Releases, String> {
    let document: SimpleJson = serde_json::from_str(body).map_err(|error| error.to_string())?;
    Ok(Releases::from_files(
        package,
        document
            .files
            .iter()
            .map(|file| (file.filename.as_str(), file.is_yanked())),
    ))
}

#[derive(Deserialize)]
struct JsonApi {
    releases: std::collections::BTreeMap<String, Vec<SimpleFile>>,
}

fn parse_json_api(package: &PackageName, body: &str) -> Result<Releases, String> {
    let document: JsonApi = serde_json::from_str(body).map_err(|error| error.to_string())?;
    Ok(Releases::from_files(
        package,
        document
            .releases
            .values()
            .flatten()
            .map(|file| (file.filename.as_str(), file.is_yanked())),
    ))
}

/// Reads the anchors of a PEP 503 page: the text of each `<a>` is the file name (else the last
/// segment of its `href`); `data-yanked` marks a yanked file.
fn parse_simple_html(package: &PackageName, body: &str) -> Releases {
    let mut files: Vec<(String, bool)> = Vec::new();
    let mut rest = body;
    while let Some(start) = find_ascii_case_insensitive(rest, "<a ") {
        rest = &rest[start..];
        let Some(tag_end) = rest.find('>') else { break };
        let tag = &rest[..tag_end];
        let after = &rest[tag_end + 1..];
        let text_end = find_ascii_case_insensitive(after, "</a").unwrap_or(after.len());
        let text = after[..text_end].trim();
        let name = if text.is_empty() {
            href_file_name(tag).unwrap_or_default()
        } else {
            html_unescape(text)
        };
        files.push((name, tag.contains("data-yanked")));
        rest = &after[text_end..];
    }
    Releases::from_files(
        package,
        files.iter().map(|(name, yanked)| (name.as_str(), *yanked)),
    )
}

fn find_ascii_case_insensitive(haystack: &str, needle: &str) -> Option<usize> {
    haystack
        .as_bytes()
        .windows(needle.len())
        .position(|window| window.eq_ignore_ascii_case(needle.as_bytes()))
}

fn href_file_name(tag: &str) -> Option<String> {
    let start = tag.find("href=")? + "href=".len();
    let quoted = &tag[start..];
    let quote = quoted.chars().next()?;
    let value = quoted[1..].split(quote).next()?;
    let path = value.split(['#', '?']).next()?;
    let name = path.rsplit('/').next()?;
    Some(html_unescape(&name.replace("%2B", "+").replace("%2b", "+")))
}

fn html_unescape(text: &str) -> String {
    text.replace("&#43;", "+")
        .replace("&#x2B;", "+")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

/// The version in a distribution file name of `package`: a wheel
/// (`flashinfer_jit_cache-0.6.15+cu130-cp39-abi3-linux_aarch64.whl`) or an sdist
/// (`flashinfer-python-0.6.15.tar.gz`, `tilelang-0.1.11.zip`).
pub fn version_of_file(package: &PackageName, file: &str) -> Option<pep440_rs::Version> {
    let wanted = package.normalized();
    let version = if let Some(stem) = file.strip_suffix(".whl") {
        let mut parts = stem.split('-');
        let name = parts.next()?;
        let version = parts.next()?;
        (normalize(name) == wanted).then_some(version)?
    } else {
        let stem = [".tar.gz", ".zip", ".tar.bz2", ".tgz"]
            .iter()
            .find_map(|suffix| file.strip_suffix(suffix))?;
        // An sdist's name part may itself hold dashes: try every split.
        stem.match_indices('-')
            .find_map(|(at, _)| (normalize(&stem[..at]) == wanted).then_some(&stem[at + 1..]))?
    };
    pep440_rs::Version::from_str(version).ok()
}

fn normalize(name: &str) -> String {
    PackageName::from_str(name)
        .map(|name| name.normalized())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn package(name: &str) -> PackageName {
        name.parse().unwrap()
    }

    #[test]
    fn reads_versions_from_wheel_and_sdist_names() {
        let jit = package("flashinfer-jit-cache");
        assert_eq!(
            version_of_file(
                &jit,
                "flashinfer_jit_cache-0.6.15+cu130-cp39-abi3-manylinux_2_28_aarch64.whl"
            )
            .unwrap()
            .to_string(),
            "0.6.15+cu130"
        );
        let python = package("flashinfer-python");
        assert_eq!(
            version_of_file(&python, "flashinfer_python-0.6.15.tar.gz")
                .unwrap()
                .to_string(),
            "0.6.15"
        );
        assert_eq!(
            version_of_file(&python, "flashinfer-python-0.6.2rc1.tar.gz")
                .unwrap()
                .to_string(),
            "0.6.2rc1"
        );
        assert!(version_of_file(&python, "flashinfer_cubin-0.6.15-py3-none-any.whl").is_none());
    }

    #[test]
    fn html_pages_give_versions_and_skip_yanked_files() {
        let page = r#"<!DOCTYPE html><html><body>
<a href="../../flashinfer_jit_cache-0.6.14%2Bcu130-cp39-abi3-linux_aarch64.whl#sha256=00">flashinfer_jit_cache-0.6.14+cu130-cp39-abi3-linux_aarch64.whl</a><br/>
<A href="flashinfer_jit_cache-0.6.15%2Bcu130-cp39-abi3-linux_aarch64.whl"></A>
<a href="x" data-yanked="broken">flashinfer_jit_cache-0.6.16+cu130-cp39-abi3-linux_aarch64.whl</a>
</body></html>"#;
        let releases = parse_simple_html(&package("flashinfer-jit-cache"), page);
        let versions: Vec<String> = releases.versions.iter().map(ToString::to_string).collect();
        assert_eq!(versions, ["0.6.14+cu130", "0.6.15+cu130"]);
    }
}
