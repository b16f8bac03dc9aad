//! URLs forge hands to git and pip (a remote, a package index, the image's source label): text
//! in, a checked `Url` out.

use std::str::FromStr;

use super::{GrammarError, all_chars};

/// A URL forge may hand to git or pip: `https://`, `http://`, `ssh://` or `file://`, with only
/// the characters RFC 3986 allows unescaped and no quote or shell metacharacter.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Url(String);
string_newtype!(Url);

impl Url {
    /// Whether `other` names the same repository (`.../x.git` and `.../x/` do).
    pub fn same_repository(&self, other: &Url) -> bool {
        let canonical = |url: &Url| {
            url.as_str()
                .trim_end_matches('/')
                .trim_end_matches(".git")
                .to_owned()
        };
        canonical(self) == canonical(other)
    }
}

/// Whether a parsed URL carries a user name or a password.
pub fn has_user_information(url: &url::Url) -> bool {
    !url.username().is_empty() || url.password().is_some()
}

/// Whether a parsed URL is only an origin (`https://host:port/`): no user information, path,
/// query or fragment. A host name that parses into more than that is not one.
pub fn is_origin_only(url: &url::Url) -> bool {
    !has_user_information(url)
        && url.path() == "/"
        && url.query().is_none()
        && url.fragment().is_none()
}

/// The scheme of a URL forge fetches, follows or sends credentials to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// `http`.
    Http,
    /// `https`.
    Https,
    /// Any other (`file`, `ftp`, ...): never fetched.
    Other,
}

impl Scheme {
    /// The scheme of `url` (which the `url` crate has lowercased).
    pub fn of(url: &url::Url) -> Self {
        match url.scheme() {
            "http" => Self::Http,
            "https" => Self::Https,
            _ => Self::Other,
        }
    }
}

/// Whether a host name is `localhost`, the one registry name without a dot or a port (exactly,
/// as docker reads a reference; the `url` crate has lowercased a parsed host already).
pub fn is_localhost(name: &str) -> bool {
    name == "localhost"
}

impl Url {
    /// A URL forge itself reads over HTTP (a package index, a release listing): `https://` or
    /// `http://` only, so the message names only those.
    pub fn http(value: &str) -> Result<Url, GrammarError> {
        match value.parse::<Url>() {
            Ok(url) if url.is_http() => Ok(url),
            _ => Err(GrammarError::new(
                "url",
                value,
                "expected an https:// or http:// URL without spaces, quotes or shell metacharacters: forge reads it itself, over HTTP (a folder on disk can be served with `python3 -m http.server`)",
            )),
        }
    }

    /// Whether it is an `https://` or `http://` URL.
    pub fn is_http(&self) -> bool {
        is_http(&self.0)
    }
}

/// Whether `text` starts with `https://` or `http://`.
fn is_http(text: &str) -> bool {
    text.starts_with("https://") || text.starts_with("http://")
}

/// Deserializes a `Url` with `Url::http`, for the keys of pins.toml that forge reads over HTTP.
pub fn deserialize_http<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Url, D::Error> {
    let text = <String as serde::Deserialize>::deserialize(deserializer)?;
    Url::http(&text).map_err(serde::de::Error::custom)
}

/// Like `deserialize_http`, for a key that may be left out.
pub fn deserialize_http_option<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Url>, D::Error> {
    deserialize_http(deserializer).map(Some)
}

impl FromStr for Url {
    type Err = GrammarError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let schemes = ["https://", "http://", "ssh://", "file://"];
        let rest = schemes.iter().find_map(|scheme| value.strip_prefix(scheme));
        let ok = rest.is_some_and(|rest| {
            all_chars(rest, |c| {
                c.is_ascii_alphanumeric()
                    || matches!(c, '.' | '_' | '-' | '~' | '/' | ':' | '@' | '%' | '+' | '=')
            })
        });
        if ok {
            Ok(Self(value.to_owned()))
        } else {
            Err(GrammarError::new(
                "url",
                value,
                "expected an https://, http://, ssh:// or file:// URL without spaces, quotes or shell metacharacters",
            ))
        }
    }
}

/// Where a wheel set's files are downloaded from: a `Url` in which `{file}` stands for each
/// wheel's file name and `{version}` for the set's version, such as
/// `https://github.com/OWNER/REPO/releases/download/v{version}/{file}`. No other `{` or `}`:
/// with every placeholder filled the result must still be a `Url`, so the template is checked
/// with each placeholder standing for a character the URL grammar allows.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UrlTemplate(String);
string_newtype!(UrlTemplate);

impl UrlTemplate {
    /// Whether it is an `https://` or `http://` URL (what a wheel set's files are downloaded
    /// from must be).
    pub fn is_http(&self) -> bool {
        is_http(&self.0)
    }

    /// Whether the URL carries a user name or password (`https://user:token@host/...`).
    pub fn has_user_information(&self) -> bool {
        let sample = self.0.replace("{version}", "0").replace("{file}", "x");
        url::Url::parse(&sample).is_ok_and(|url| has_user_information(&url))
    }

    /// Whether the template names a placeholder at all (a git remote's URL must not).
    pub fn has_placeholders(&self) -> bool {
        self.0.contains('{')
    }

    /// The template as a plain URL, when it has no placeholder.
    pub fn plain(&self) -> Option<Url> {
        (!self.has_placeholders()).then(|| Url(self.0.clone()))
    }

    /// The GitHub releases API list of a template on GitHub's release downloads
    /// (`https://github.com/OWNER/REPO/releases/download/...`):
    /// `https://api.github.com/repos/OWNER/REPO/releases`.
    pub fn github_releases(&self) -> Option<Url> {
        let rest = self.0.strip_prefix("https://github.com/")?;
        let mut parts = rest.splitn(4, '/');
        let (owner, repository) = (parts.next()?, parts.next()?);
        let rest = parts.next()?;
        if rest != "releases" || !parts.next()?.starts_with("download/") {
            return None;
        }
        if [owner, repository]
            .iter()
            .any(|part| part.is_empty() || part.contains('{'))
        {
            return None;
        }
        format!("https://api.github.com/repos/{owner}/{repository}/releases")
            .parse()
            .ok()
    }

    /// The URL of `file` at `version`. Both come from checked grammars (a PEP 440 version and
    /// a wheel file name), whose characters the URL grammar allows.
    pub fn expand(&self, version: &str, file: &str) -> Url {
        let url = self.0.replace("{version}", version).replace("{file}", file);
        url.parse()
            .expect("a version and a wheel file name keep a URL template a URL")
    }
}

impl FromStr for UrlTemplate {
    type Err = GrammarError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let sample = value.replace("{version}", "0").replace("{file}", "x");
        match sample.parse::<Url>() {
            Ok(_) => Ok(Self(value.to_owned())),
            Err(_) => Err(GrammarError::new(
                "url",
                value,
                "expected an https://, http://, ssh:// or file:// URL without spaces, quotes or shell metacharacters (a wheel set's url may hold {version} and {file})",
            )),
        }
    }
}

#[cfg(test)]
mod template_tests {
    use super::*;

    #[test]
    fn url_templates_take_only_version_and_file() {
        let template: UrlTemplate = "https://example.org/releases/download/v{version}/{file}"
            .parse()
            .unwrap();
        assert!(template.has_placeholders());
        assert_eq!(
            template
                .expand("0.6.14", "a-0.6.14+cu130-py3-none-any.whl")
                .as_str(),
            "https://example.org/releases/download/v0.6.14/a-0.6.14+cu130-py3-none-any.whl"
        );
        for bad in [
            "https://example.org/{name}/{file}",
            "https://example.org/{version/{file}",
            "https://example.org/$(id)/{file}",
            "https://example.org/{file} x",
            "https://example.org/{file}#sha256=00",
            "https://example.org/{file}\n",
        ] {
            assert!(
                bad.parse::<UrlTemplate>().is_err(),
                "{bad:?} must be refused"
            );
        }
        let github: UrlTemplate =
            "https://github.com/flashinfer-ai/flashinfer/releases/download/v{version}/{file}"
                .parse()
                .unwrap();
        assert_eq!(
            github.github_releases().unwrap().as_str(),
            "https://api.github.com/repos/flashinfer-ai/flashinfer/releases"
        );
        assert_eq!(template.github_releases(), None);
        let plain: UrlTemplate = "https://example.org/x.git".parse().unwrap();
        assert_eq!(plain.plain().unwrap().as_str(), "https://example.org/x.git");
    }
}
