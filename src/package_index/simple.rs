//! The simple repository API (PEP 503 HTML, PEP 691 JSON) and the JSON API, as one
//! `PackageIndex`: a project's page in, its releases and their files out.

use std::str::FromStr;

use serde::Deserialize;

use crate::types::python::PackageName;
use crate::types::url::Url;

use super::{IndexError, Listed, PackageIndex, Releases, auth, zip_range};

/// The real index client: the simple repository API over HTTP(S).
#[derive(Debug, Clone)]
pub struct SimpleIndex {
    agent: ureq::Agent,
    credentials: auth::Credentials,
}

impl Default for SimpleIndex {
    fn default() -> Self {
        Self {
            agent: crate::http::agent(),
            credentials: auth::Credentials::default(),
        }
    }
}

impl SimpleIndex {
    /// A client that sends `credentials` to the index hosts they belong to.
    pub fn with_credentials(credentials: auth::Credentials) -> Self {
        Self {
            credentials,
            ..Self::default()
        }
    }

    /// `GET url`, without the URL's user information, with the index host's credentials.
    fn get(&self, url: &str) -> ureq::RequestBuilder<ureq::typestate::WithoutBody> {
        let request = self.agent.get(auth::without_userinfo(url));
        match self.credentials.header_for(url) {
            Some(value) => request.header("Authorization", value),
            None => request,
        }
    }
}

/// PEP 691 first, the HTML page as a fallback for servers that only have that.
const ACCEPT: &str = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01";

impl PackageIndex for SimpleIndex {
    fn metadata(&self, url: &str) -> Result<String, IndexError> {
        // The fragment (`#sha256=...`) is not part of where the file is.
        let file = url.split('#').next().unwrap_or(url);
        self.text(&format!("{file}.metadata"))
    }

    fn metadata_in_wheel(&self, url: &str) -> Result<String, IndexError> {
        zip_range::metadata(&|url| self.get(url), url.split('#').next().unwrap_or(url))
    }

    fn releases(&self, index: &Url, package: &PackageName) -> Result<Releases, IndexError> {
        let base = index.as_str().trim_end_matches('/');
        let json_api = base.ends_with("/pypi");
        let url = if json_api {
            format!("{base}/{}/json", package.normalized())
        } else {
            format!("{base}/{}/", package.normalized())
        };
        let mut response = self
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
            parse_json_api(package, &body, &url).map_err(invalid)
        } else if content_type.contains("json") {
            parse_simple_json(package, &body, &url).map_err(invalid)
        } else if content_type.contains("html") || body.trim_start().starts_with('<') {
            Ok(parse_simple_html(package, &body, &url))
        } else {
            Err(invalid(format!("unexpected content type {content_type:?}")))
        }
    }
}

impl SimpleIndex {
    /// `GET url`, as text; 404 is `NotFound`.
    fn text(&self, url: &str) -> Result<String, IndexError> {
        let mut response = self
            .get(url)
            .call()
            .map_err(|error| IndexError::Unreachable {
                url: url.to_owned(),
                message: error.to_string(),
            })?;
        match response.status().as_u16() {
            200 => crate::http::body_text(&mut response, url).map_err(|error| {
                IndexError::Unreachable {
                    url: url.to_owned(),
                    message: error.to_string(),
                }
            }),
            404 => Err(IndexError::NotFound {
                url: url.to_owned(),
                package: url.rsplit('/').next().unwrap_or_default().to_owned(),
            }),
            status => Err(IndexError::Status {
                url: url.to_owned(),
                status,
            }),
        }
    }
}

/// `url` resolved against the page it was found on, as RFC 3986 resolves a reference (`../`
/// segments included); as it is when either does not parse.
fn absolute(page: &str, url: &str) -> String {
    url::Url::parse(page)
        .and_then(|base| base.join(url))
        .map_or_else(|_| url.to_owned(), String::from)
}

#[derive(Deserialize)]
struct SimpleJson {
    files: Vec<SimpleFile>,
}

#[derive(Deserialize)]
struct SimpleFile {
    filename: String,
    /// PEP 691: `false`, `true`, or a reason.
    #[serde(default)]
    yanked: serde_json::Value,
    /// PEP 691 `requires-python`; the PyPI JSON API spells it `requires_python`.
    #[serde(default, rename = "requires-python", alias = "requires_python")]
    requires_python: Option<String>,
    /// The JSON API's own reason field.
    #[serde(default)]
    yanked_reason: Option<String>,
    /// Where the file is.
    #[serde(default)]
    url: Option<String>,
    /// Its digests by algorithm (`digests` in the JSON API).
    #[serde(default, alias = "digests")]
    hashes: std::collections::BTreeMap<String, String>,
    /// PEP 714 (`core-metadata`) or PEP 658 as first published: `false`, `true` or hashes.
    #[serde(default, rename = "core-metadata", alias = "data-dist-info-metadata")]
    core_metadata: serde_json::Value,
}

impl SimpleFile {
    fn yanked(&self) -> Option<&str> {
        match &self.yanked {
            serde_json::Value::Bool(true) => Some(self.yanked_reason.as_deref().unwrap_or("")),
            serde_json::Value::String(reason) => Some(reason),
            _ => None,
        }
    }

    fn listed(&self) -> Listed<'_> {
        (
            &self.filename,
            self.yanked(),
            self.requires_python.as_deref(),
        )
    }
}

fn parse_simple_json(package: &PackageName, body: &str, page: &str) -> Result<Releases, String> {
    let document: SimpleJson = serde_json::from_str(body).map_err(|error| error.to_string())?;
    Ok(located(package, &document.files, page))
}

/// The releases `files` list, each file's URL (absolute against `page`), sha256 and PEP 658
/// metadata file as the listing gives them.
fn located(package: &PackageName, files: &[SimpleFile], page: &str) -> Releases {
    let mut releases = Releases::from_files(package, files.iter().map(SimpleFile::listed));
    for file in &mut releases.files {
        if let Some(listed) = files.iter().find(|listed| listed.filename == file.name) {
            file.url = listed.url.as_deref().map(|url| absolute(page, url));
            file.sha256 = listed
                .hashes
                .get("sha256")
                .map(String::as_str)
                .and_then(checked_sha256)
                .or_else(|| listed.url.as_deref().and_then(fragment_sha256));
            file.metadata = match &listed.core_metadata {
                serde_json::Value::Bool(offered) => *offered,
                serde_json::Value::Object(_) => true,
                _ => false,
            };
        }
    }
    releases
}

#[derive(Deserialize)]
struct JsonApi {
    releases: std::collections::BTreeMap<String, Vec<SimpleFile>>,
}

fn parse_json_api(package: &PackageName, body: &str, page: &str) -> Result<Releases, String> {
    let document: JsonApi = serde_json::from_str(body).map_err(|error| error.to_string())?;
    let files: Vec<SimpleFile> = document.releases.into_values().flatten().collect();
    Ok(located(package, &files, page))
}

/// Reads the anchors of a PEP 503 page at `page`: the text of each `<a>` is the file name (else
/// the last segment of its `href`); `data-yanked` marks a yanked file; the `href` is where the
/// file is, and its `#sha256=` fragment the file's hash.
fn parse_simple_html(package: &PackageName, body: &str, page: &str) -> Releases {
    // Each anchor's file name, yanked reason, requires-python and href.
    type Anchor = (String, Option<String>, Option<String>, Option<String>);
    let mut files: Vec<Anchor> = Vec::new();
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
        let yanked = attribute(tag, "data-yanked").map(|reason| html_unescape(&reason));
        let requires_python =
            attribute(tag, "data-requires-python").map(|range| html_unescape(&range));
        let href = attribute(tag, "href").map(|href| html_unescape(&href));
        files.push((name, yanked, requires_python, href));
        rest = &after[text_end..];
    }
    let mut releases = Releases::from_files(
        package,
        files.iter().map(|(name, yanked, requires_python, _)| {
            (name.as_str(), yanked.as_deref(), requires_python.as_deref())
        }),
    );
    for file in &mut releases.files {
        if let Some((.., Some(href))) = files.iter().find(|(name, ..)| *name == file.name) {
            file.url = Some(absolute(page, href));
            file.sha256 = fragment_sha256(href);
        }
    }
    releases
}

/// The sha256 a file's URL carries in its `#sha256=` fragment (PEP 503), if it is one.
fn fragment_sha256(url: &str) -> Option<String> {
    checked_sha256(url.split_once("#sha256=")?.1)
}

/// `hash` as 64 lowercase hex digits, if it is a sha256 at all.
fn checked_sha256(hash: &str) -> Option<String> {
    (hash.len() == 64 && hash.bytes().all(|byte| byte.is_ascii_hexdigit()))
        .then(|| hash.to_ascii_lowercase())
}

/// The value of `name` in an HTML tag: `Some("")` for a bare attribute, `None` when absent.
fn attribute(tag: &str, name: &str) -> Option<String> {
    let at = tag
        .match_indices(name)
        .find(|(at, _)| {
            tag[..*at].ends_with(char::is_whitespace)
                && !tag[at + name.len()..]
                    .starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-')
        })?
        .0;
    let rest = tag[at + name.len()..].trim_start();
    let Some(value) = rest.strip_prefix('=') else {
        return Some(String::new());
    };
    let value = value.trim_start();
    let quote = value.chars().next()?;
    if quote == '"' || quote == '\'' {
        Some(value[1..].split(quote).next()?.to_owned())
    } else {
        Some(
            value
                .split(|c: char| c.is_whitespace() || c == '>')
                .next()?
                .to_owned(),
        )
    }
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
        let releases = parse_simple_html(
            &package("flashinfer-jit-cache"),
            &page.replace("sha256=00", &format!("sha256={}", "AB".repeat(32))),
            "https://flashinfer.ai/whl/cu130/flashinfer-jit-cache/",
        );
        let versions: Vec<String> = releases.versions.iter().map(ToString::to_string).collect();
        assert_eq!(versions, ["0.6.14+cu130", "0.6.15+cu130"]);
        let first = &releases.files[0];
        assert_eq!(first.sha256.as_deref(), Some("ab".repeat(32).as_str()));
        assert_eq!(
            first
                .url
                .as_deref()
                .map(|url| url.split('#').next().unwrap()),
            Some(
                "https://flashinfer.ai/whl/flashinfer_jit_cache-0.6.14%2Bcu130-cp39-abi3-linux_aarch64.whl"
            )
        );
        assert_eq!(releases.files[1].sha256, None);
    }
}
