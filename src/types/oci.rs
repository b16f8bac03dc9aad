//! The OCI distribution grammars: image references, repositories, tags and tag patterns,
//! digests and platforms as text in, the checked value out.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{GrammarError, all_chars};

/// An image tag: `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`, the grammar of the distribution spec.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Tag(String);
string_newtype!(Tag);

impl FromStr for Tag {
    type Err = GrammarError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let ok = all_chars(value, |c| {
            c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')
        }) && !value.starts_with(['.', '-'])
            && value.len() <= 128;
        if ok {
            Ok(Self(value.to_owned()))
        } else {
            Err(GrammarError::new(
                "tag",
                value,
                "expected at most 128 of letters, digits, '_', '.' and '-', not starting with '.' or '-'",
            ))
        }
    }
}

/// A glob over image tags, such as `????-??-??-v*`: the tag grammar plus `?` (one character)
/// and `*` (any run of characters).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TagPattern(String);
string_newtype!(TagPattern);

impl TagPattern {
    /// Whether `tag` matches the pattern.
    pub fn matches(&self, tag: &str) -> bool {
        crate::glob::matches(&self.0, tag)
    }

    /// The pattern compiled once, to match many tags.
    pub fn compile(&self) -> crate::glob::Pattern {
        crate::glob::Pattern::new(&self.0)
            .expect("the tag pattern grammar holds only `?`, `*` and literals")
    }
}

impl FromStr for TagPattern {
    type Err = GrammarError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let ok = all_chars(value, |c| {
            c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '?' | '*')
        }) && !value.starts_with(['.', '-'])
            && value.len() <= 128;
        if ok {
            Ok(Self(value.to_owned()))
        } else {
            Err(GrammarError::new(
                "tag pattern",
                value,
                "expected a tag with ? (one character) and * (any characters) wildcards, such as ????-??-??-v*",
            ))
        }
    }
}

/// A content digest, `sha256:` and 64 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Digest(String);
string_newtype!(Digest);

impl Digest {
    /// A sha256 digest whose 64 hex digits are all `hex`: a fixture for tests.
    #[cfg(test)]
    pub(crate) fn filled(hex: char) -> Self {
        Self(format!("sha256:{}", hex.to_string().repeat(64)))
    }

    /// The digest of some bytes already hashed with SHA-256.
    pub fn from_sha256(hash: &[u8]) -> Self {
        Self(format!("sha256:{}", hex::encode(hash)))
    }

    /// The hex part after `sha256:`.
    pub fn hex(&self) -> &str {
        &self.0["sha256:".len()..]
    }
}

impl FromStr for Digest {
    type Err = GrammarError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let ok = value.strip_prefix("sha256:").is_some_and(|hex| {
            hex.len() == 64
                && hex
                    .chars()
                    .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
        });
        if ok {
            Ok(Self(value.to_owned()))
        } else {
            Err(GrammarError::new(
                "digest",
                value,
                "expected sha256: followed by 64 lowercase hex digits",
            ))
        }
    }
}

/// An image reference such as `ghcr.io/aeon-7/aeon-vllm-ultimate:2026-07-01-v0.24.0`, checked
/// against the distribution reference grammar (`[domain[:port]/]path[:tag][@sha256:hex]`, path
/// components lowercase alphanumerics joined by `.`, `_`, `__` or dashes). The text is kept as
/// written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRef {
    text: String,
    registry: Registry,
    repository: String,
    tag: Option<String>,
    digest: Option<Digest>,
}

pub use super::registry::{DEFAULT_REGISTRY, DOCKER_HUB_SERVER, Registry};

impl ImageRef {
    /// The reference as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The registry (its host and port), `docker.io` for bare names.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The repository path within the registry (`library/NAME` for a bare Docker Hub name).
    pub fn repository(&self) -> &str {
        &self.repository
    }

    /// The tag; `latest` when the reference names neither tag nor digest.
    pub fn tag(&self) -> Option<&str> {
        self.tag.as_deref()
    }

    /// The digest, when the reference pins one.
    pub fn digest(&self) -> Option<&Digest> {
        self.digest.as_ref()
    }

    fn parse(value: &str) -> Result<Self, String> {
        let Parts { name, tag, digest } = Parts::split(value);
        let digest = digest
            .map(|digest| digest.parse::<Digest>().map_err(|error| error.to_string()))
            .transpose()?;
        let tag = tag
            .map(|tag| {
                tag.parse::<Tag>()
                    .map(|tag| tag.to_string())
                    .map_err(|error| error.to_string())
            })
            .transpose()?;
        let (registry, path) = match name.split_once('/') {
            Some((first, path))
                if first.contains(['.', ':']) || super::url::is_localhost(first) =>
            {
                let registry = Some(first)
                    .filter(|first| is_domain(first))
                    .and_then(Registry::named)
                    .ok_or_else(|| format!("registry {first:?} is not a host[:port]"))?;
                (registry, path.to_owned())
            }
            _ => (
                Registry::named(DEFAULT_REGISTRY).expect("Docker Hub's name"),
                name.to_owned(),
            ),
        };
        if path.is_empty() || !path.split('/').all(is_path_component) {
            return Err(format!(
                "repository {path:?} must be lowercase letters and digits joined by '.', '_', '__' or '-', in '/'-separated parts"
            ));
        }
        if path.len() > 255 {
            return Err("repository longer than 255 characters".to_owned());
        }
        let repository = if registry.as_str() == DEFAULT_REGISTRY && !path.contains('/') {
            format!("library/{path}")
        } else {
            path
        };
        let tag = tag.or_else(|| digest.is_none().then(|| "latest".to_owned()));
        Ok(Self {
            text: value.to_owned(),
            registry,
            repository,
            tag,
            digest,
        })
    }
}

/// The three parts of an image reference, split where the docker CLI splits them and not yet
/// checked: the name (`[domain[:port]/]path`), the tag and the digest text.
struct Parts<'a> {
    name: &'a str,
    tag: Option<&'a str>,
    digest: Option<&'a str>,
}

impl<'a> Parts<'a> {
    /// Splits `reference`: the digest follows the first `@`; a tag follows the first `:` after
    /// the last `/` of what precedes it (a `:` earlier on names a registry port).
    fn split(reference: &'a str) -> Self {
        let (rest, digest) = match reference.split_once('@') {
            Some((rest, digest)) => (rest, Some(digest)),
            None => (reference, None),
        };
        let last_slash = rest.rfind('/').map_or(0, |index| index + 1);
        let (name, tag) = match rest[last_slash..].find(':') {
            Some(colon) => {
                let (name, tag) = rest.split_at(last_slash + colon);
                (name, Some(&tag[1..]))
            }
            None => (rest, None),
        };
        Self { name, tag, digest }
    }
}

/// The repository part of an image reference: without `@digest`, and without the `:tag` of
/// its last path component (a `:` earlier on names a registry port).
pub fn repository_name(reference: &str) -> &str {
    Parts::split(reference).name
}

/// `host[:port]`: dot-separated labels of letters, digits and inner dashes, then digits.
fn is_domain(value: &str) -> bool {
    let (host, port) = match value.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (value, None),
    };
    let label = |label: &str| {
        all_chars(label, |c| c.is_ascii_alphanumeric() || c == '-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    };
    host.split('.').all(label) && port.is_none_or(|port| all_chars(port, |c| c.is_ascii_digit()))
}

/// One path component: `[a-z0-9]+` runs joined by `.`, `_`, `__` or any number of `-`.
fn is_path_component(value: &str) -> bool {
    if !all_chars(value, |c| {
        c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-')
    }) {
        return false;
    }
    let alphanumeric = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    let mut runs = value
        .split(alphanumeric)
        .filter(|separator| !separator.is_empty());
    let separators_ok = runs.all(|separator| {
        matches!(separator, "." | "_" | "__") || separator.chars().all(|c| c == '-')
    });
    separators_ok && value.starts_with(alphanumeric) && value.ends_with(alphanumeric)
}

impl fmt::Display for ImageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl FromStr for ImageRef {
    type Err = GrammarError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        Self::parse(value).map_err(|reason| {
            GrammarError::new(
                "image reference",
                value,
                format!("{reason}; expected [registry/]repository[:tag][@sha256:digest]"),
            )
        })
    }
}

impl Serialize for ImageRef {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for ImageRef {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// An image repository without tag or digest, such as `ghcr.io/aeon-7/vllm-ultimate-deepseek-v4-gb10`:
/// the text as written, with its registry host and its path on that registry, split once when
/// it is parsed.
#[derive(Debug, Clone)]
pub struct Repository {
    text: String,
    registry: Registry,
    path: String,
}

impl PartialEq for Repository {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Eq for Repository {}

impl Repository {
    /// The repository as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The registry (its host and port) the repository is on, `docker.io` for bare names.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The repository's path on its registry (`library/NAME` for a bare Docker Hub name).
    pub fn path(&self) -> &str {
        &self.path
    }
}

impl fmt::Display for Repository {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for Repository {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Repository {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl FromStr for Repository {
    type Err = GrammarError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let reference = ImageRef::from_str(value).map_err(|_| {
            GrammarError::new("image repository", value, "expected [registry/]repository")
        })?;
        // Asked of the split text: a parsed reference names `latest` when no tag is written.
        let parts = Parts::split(value);
        if parts.tag.is_none() && parts.digest.is_none() {
            Ok(Self {
                text: value.to_owned(),
                registry: reference.registry().clone(),
                path: reference.repository().to_owned(),
            })
        } else {
            Err(GrammarError::new(
                "image repository",
                value,
                "expected a repository without :tag or @digest; tags go in [image.tags]",
            ))
        }
    }
}

/// A registry named by its host, as `--insecure-registry` takes it: `HOST` or `HOST:PORT` (a
/// DNS name, an IPv4 address or a bracketed IPv6 address), with no scheme, user or path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryHost(String);
string_newtype!(RegistryHost);

impl FromStr for RegistryHost {
    type Err = GrammarError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let plain = all_chars(value, |c| c.is_ascii_alphanumeric() || ".-_:[]".contains(c));
        let origin = url::Url::parse(&format!("http://{value}/"))
            .is_ok_and(|url| url.host().is_some() && super::url::is_origin_only(&url));
        if plain && origin {
            Ok(Self(value.to_owned()))
        } else {
            Err(GrammarError::new(
                "registry host",
                value,
                "expected HOST or HOST:PORT without a scheme or a path, such as registry.internal:5000",
            ))
        }
    }
}

/// A platform such as `linux/arm64` or `linux/arm64/v8`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Platform(String);
string_newtype!(Platform);

impl FromStr for Platform {
    type Err = GrammarError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let parts: Vec<&str> = value.split('/').collect();
        let ok = (2..=3).contains(&parts.len())
            && parts.iter().all(|part| {
                all_chars(part, |c| {
                    c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'
                })
            });
        if ok {
            Ok(Self(value.to_owned()))
        } else {
            Err(GrammarError::new(
                "platform",
                value,
                "expected os/arch[/variant], such as linux/arm64",
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_hosts_are_host_and_port_only() {
        for good in [
            "registry.internal",
            "127.0.0.1:5000",
            "[::1]:5000",
            "reg-1.example.org:443",
        ] {
            assert_eq!(good.parse::<RegistryHost>().unwrap().as_str(), good);
        }
        for bad in [
            "http://reg:5000",
            "reg:5000/path",
            "user@reg",
            "",
            "reg:port",
            "reg name",
        ] {
            let error = bad.parse::<RegistryHost>().unwrap_err().to_string();
            assert!(
                error.contains("expected HOST or HOST:PORT"),
                "{bad:?}: {error}"
            );
        }
    }

    #[test]
    fn tags_follow_the_distribution_grammar() {
        assert!(Tag::from_str("2026-07-08-pr4-experimental").is_ok());
        assert!(Tag::from_str(&"a".repeat(128)).is_ok());
        for bad in [
            "has space",
            "quote\"d",
            "it's",
            ".hidden",
            "-dash",
            &"a".repeat(129),
        ] {
            assert!(Tag::from_str(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn image_references_refuse_newlines_and_spaces() {
        assert!(ImageRef::from_str("ghcr.io/aeon-7/aeon-vllm-ultimate:2026-07-01-v0.24.0").is_ok());
        for bad in [
            "ghcr.io/a/b:1\nRUN x",
            "ghcr.io/a/b:1 && x",
            "ghcr.io/A/b",
            "",
        ] {
            assert!(ImageRef::from_str(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn image_references_split_like_the_docker_cli() {
        for (text, registry, repository, tag) in [
            (
                "ghcr.io/aeon-7/aeon-vllm-ultimate:2026-07-01-v0.24.0",
                "ghcr.io",
                "aeon-7/aeon-vllm-ultimate",
                "2026-07-01-v0.24.0",
            ),
            ("busybox", "docker.io", "library/busybox", "latest"),
            (
                "localhost:5000/forge/example:1.0",
                "localhost:5000",
                "forge/example",
                "1.0",
            ),
        ] {
            let reference = ImageRef::from_str(text).unwrap();
            assert_eq!(
                (
                    reference.registry().as_str(),
                    reference.repository(),
                    reference.tag()
                ),
                (registry, repository, Some(tag)),
                "{text}"
            );
        }
        let digest = format!("sha256:{}", "a".repeat(64));
        let reference = ImageRef::from_str(&format!("127.0.0.1:5000/x@{digest}")).unwrap();
        assert_eq!(
            (reference.tag(), reference.digest().map(Digest::as_str)),
            (None, Some(digest.as_str()))
        );
        for good in [
            "a__b/c",
            "a---b",
            "a.b_c-d",
            "my-registry.example:443/team/app:v1",
        ] {
            assert!(ImageRef::from_str(good).is_ok(), "{good:?} was refused");
        }
        for bad in [
            "a..b",
            "a___b",
            "-a",
            "a-",
            "Registry.io:x/a",
            "a:tag:more",
            "x@sha256:abc",
            "a//b",
            "ghcr.io/",
        ] {
            assert!(ImageRef::from_str(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn repository_names_drop_tag_and_digest_but_keep_ports() {
        assert_eq!(
            repository_name("ghcr.io/aeon-7/aeon-vllm-ultimate:2026-07-01-v0.24.0"),
            "ghcr.io/aeon-7/aeon-vllm-ultimate"
        );
        assert_eq!(
            repository_name("127.0.0.1:5000/base:1@sha256:ab"),
            "127.0.0.1:5000/base"
        );
        assert_eq!(
            repository_name("127.0.0.1:5000/base"),
            "127.0.0.1:5000/base"
        );
        assert_eq!(repository_name("busybox"), "busybox");
    }

    #[test]
    fn repositories_carry_no_tag() {
        assert!(Repository::from_str("ghcr.io/aeon-7/vllm-ultimate-deepseek-v4-gb10").is_ok());
        assert!(Repository::from_str("localhost:5000/forge/example").is_ok());
        assert!(Repository::from_str("ghcr.io/aeon-7/x:tag").is_err());
    }
}
