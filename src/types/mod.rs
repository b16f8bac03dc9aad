//! The newtypes every value of pins.toml is parsed into. Each one checks a strict grammar when it
//! is deserialized, so a value that could break out of a Dockerfile line (a newline, a quote, a
//! shell metacharacter) never gets past `pins::load`, and the TOML parser attaches the value's
//! location to the error.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Implements `Display`, `Serialize`, `Deserialize` and `as_str` for a newtype over `String`
/// whose `FromStr` does the checking.
macro_rules! string_newtype {
    ($name:ident) => {
        impl $name {
            /// The value as written in pins.toml.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = String::deserialize(deserializer)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

/// Why a value was refused: the grammar it broke, with the offending value shown escaped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {what} {value:?}: {expected}")]
pub struct GrammarError {
    what: &'static str,
    value: String,
    expected: String,
}

impl GrammarError {
    fn new(what: &'static str, value: &str, expected: impl Into<String>) -> Self {
        Self {
            what,
            value: value.to_owned(),
            expected: expected.into(),
        }
    }
}

fn all_chars(value: &str, allowed: impl Fn(char) -> bool) -> bool {
    !value.is_empty() && value.chars().all(allowed)
}

/// The name of a pin, the key under `[pins]`: lowercase letters, digits and `-`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PinName(String);
string_newtype!(PinName);

impl FromStr for PinName {
    type Err = GrammarError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let ok = all_chars(value, |c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'
        }) && !value.starts_with('-')
            && value.len() <= 64;
        if ok {
            Ok(Self(value.to_owned()))
        } else {
            Err(GrammarError::new(
                "pin name",
                value,
                "expected lowercase letters, digits and '-', starting with a letter or digit",
            ))
        }
    }
}

/// An exact version, in PEP 440 canonical form (`0.6.14`, `2.0.0rc1`, `1.2.post1`).
///
/// Non-canonical spellings (`v1.0`, `1.0-1`, surrounding spaces) are refused rather than
/// normalised, so the text in pins.toml is exactly the text that reaches pip.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Version(String);
string_newtype!(Version);

impl Version {
    /// The parsed PEP 440 version, for ordering.
    pub fn pep440(&self) -> pep440_rs::Version {
        pep440_rs::Version::from_str(&self.0).expect("checked when the Version was made")
    }
}

impl FromStr for Version {
    type Err = GrammarError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        const EXPECTED: &str = "expected an exact PEP 440 version such as 0.6.14 (digits, dots, and a/b/rc/post/dev/+local parts only)";
        let plain = all_chars(value, |c| c.is_ascii_alphanumeric() || c == '.' || c == '+');
        if !plain {
            return Err(GrammarError::new("version", value, EXPECTED));
        }
        match pep440_rs::Version::from_str(value) {
            Ok(parsed) if parsed.to_string() == value => Ok(Self(value.to_owned())),
            Ok(parsed) => Err(GrammarError::new(
                "version",
                value,
                format!("expected the canonical PEP 440 form {parsed}"),
            )),
            Err(_) => Err(GrammarError::new("version", value, EXPECTED)),
        }
    }
}

/// A PEP 440 local version label such as `cu130` (the part after `+`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LocalLabel(String);
string_newtype!(LocalLabel);

impl FromStr for LocalLabel {
    type Err = GrammarError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let ok = all_chars(value, |c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.'
        }) && !value.starts_with('.')
            && !value.ends_with('.')
            && !value.contains("..");
        if ok {
            Ok(Self(value.to_owned()))
        } else {
            Err(GrammarError::new(
                "local version label",
                value,
                "expected lowercase letters and digits separated by '.', such as cu130",
            ))
        }
    }
}

/// A distribution name on a package index (PEP 508: letters, digits, `.`, `_`, `-`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PackageName(String);
string_newtype!(PackageName);

impl PackageName {
    /// The PEP 503 normalised form, used to compare names and to build index URLs.
    pub fn normalized(&self) -> String {
        let mut out = String::with_capacity(self.0.len());
        for c in self.0.chars() {
            let c = c.to_ascii_lowercase();
            if matches!(c, '.' | '_' | '-') {
                if !out.ends_with('-') {
                    out.push('-');
                }
            } else {
                out.push(c);
            }
        }
        out
    }
}

impl FromStr for PackageName {
    type Err = GrammarError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
        let ok = all_chars(value, |c| {
            c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')
        }) && edge(value.chars().next())
            && edge(value.chars().last());
        if ok {
            Ok(Self(value.to_owned()))
        } else {
            Err(GrammarError::new(
                "package name",
                value,
                "expected a PEP 508 name: letters, digits, '.', '_' and '-', starting and ending with a letter or digit",
            ))
        }
    }
}

/// A dotted Python module path such as `cutlass.cute.core`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModulePath(String);
string_newtype!(ModulePath);

impl FromStr for ModulePath {
    type Err = GrammarError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let ok = !value.is_empty() && value.split('.').all(is_identifier);
        if ok {
            Ok(Self(value.to_owned()))
        } else {
            Err(GrammarError::new(
                "module",
                value,
                "expected a dotted Python module path such as cutlass.cute.core",
            ))
        }
    }
}

/// A Python identifier (ASCII): what a shim may re-export.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Identifier(String);
string_newtype!(Identifier);

impl FromStr for Identifier {
    type Err = GrammarError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        if is_identifier(value) {
            Ok(Self(value.to_owned()))
        } else {
            Err(GrammarError::new(
                "identifier",
                value,
                "expected a Python identifier (letters, digits, '_', not starting with a digit)",
            ))
        }
    }
}

fn is_identifier(value: &str) -> bool {
    all_chars(value, |c| c.is_ascii_alphanumeric() || c == '_')
        && !value.starts_with(|c: char| c.is_ascii_digit())
}

/// A git commit id: 7 to 40 lowercase hex digits. Anything shorter than 40 is accepted but
/// is only a prefix, which a later push to the remote can make ambiguous.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GitRev(String);
string_newtype!(GitRev);

impl GitRev {
    /// True when the revision is the full 40-hex object id rather than a prefix.
    pub fn is_full(&self) -> bool {
        self.0.len() == 40
    }

    /// The 7-character abbreviation, as `git log --oneline` shows it.
    pub fn short(&self) -> &str {
        &self.0[..7]
    }
}

impl FromStr for GitRev {
    type Err = GrammarError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let ok = all_chars(value, |c| c.is_ascii_digit() || ('a'..='f').contains(&c))
            && (7..=40).contains(&value.len());
        if ok {
            Ok(Self(value.to_owned()))
        } else {
            Err(GrammarError::new(
                "git revision",
                value,
                "expected 7 to 40 lowercase hex digits (a commit id; branch names go in `branch`)",
            ))
        }
    }
}

/// A git branch name, as `git check-ref-format --branch` would accept it, restricted to the
/// characters that are safe on a shell line.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BranchName(String);
string_newtype!(BranchName);

impl FromStr for BranchName {
    type Err = GrammarError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let ok = all_chars(value, |c| {
            c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/')
        }) && !value.starts_with(['-', '/', '.'])
            && !value.ends_with(['/', '.'])
            && !value.ends_with(".lock")
            && !value.contains("..")
            && !value.contains("//");
        if ok {
            Ok(Self(value.to_owned()))
        } else {
            Err(GrammarError::new(
                "branch",
                value,
                "expected a git branch name of letters, digits, '.', '_', '-' and '/'",
            ))
        }
    }
}

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
    registry: String,
    repository: String,
    tag: Option<String>,
    digest: Option<Digest>,
}

/// The registry a reference without a domain names, as the docker CLI resolves it.
const DEFAULT_REGISTRY: &str = "docker.io";

impl ImageRef {
    /// The reference as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The registry host (with its port), `docker.io` for bare names.
    pub fn registry(&self) -> &str {
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
        let (rest, digest) = match value.split_once('@') {
            Some((rest, digest)) => (
                rest,
                Some(
                    digest
                        .parse::<Digest>()
                        .map_err(|error| error.to_string())?,
                ),
            ),
            None => (value, None),
        };
        // A tag follows the last ':' that comes after the last '/' (an earlier ':' is a port).
        let last_slash = rest.rfind('/').map_or(0, |index| index + 1);
        let (name, tag) = match rest[last_slash..].find(':') {
            Some(colon) => {
                let (name, tag) = rest.split_at(last_slash + colon);
                (
                    name,
                    Some(
                        tag[1..]
                            .parse::<Tag>()
                            .map_err(|error| error.to_string())?
                            .to_string(),
                    ),
                )
            }
            None => (rest, None),
        };
        let (registry, path) = match name.split_once('/') {
            Some((first, path)) if first.contains(['.', ':']) || first == "localhost" => {
                if !is_domain(first) {
                    return Err(format!("registry {first:?} is not a host[:port]"));
                }
                (first.to_owned(), path.to_owned())
            }
            _ => (DEFAULT_REGISTRY.to_owned(), name.to_owned()),
        };
        if path.is_empty() || !path.split('/').all(is_path_component) {
            return Err(format!(
                "repository {path:?} must be lowercase letters and digits joined by '.', '_', '__' or '-', in '/'-separated parts"
            ));
        }
        if path.len() > 255 {
            return Err("repository longer than 255 characters".to_owned());
        }
        let repository = if registry == DEFAULT_REGISTRY && !path.contains('/') {
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

/// The repository part of an image reference: without `@digest`, and without the `:tag` of
/// its last path component (a `:` earlier on names a registry port).
pub fn repository_name(reference: &str) -> &str {
    let name = reference
        .split_once('@')
        .map_or(reference, |(name, _)| name);
    let last = name.rfind('/').map_or(0, |slash| slash + 1);
    match name[last..].find(':') {
        Some(colon) => &name[..last + colon],
        None => name,
    }
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

/// An image repository without tag or digest, such as `ghcr.io/aeon-7/vllm-ultimate-deepseek-v4-gb10`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repository(String);
string_newtype!(Repository);

impl FromStr for Repository {
    type Err = GrammarError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let reference = ImageRef::from_str(value).map_err(|_| {
            GrammarError::new("image repository", value, "expected [registry/]repository")
        })?;
        // The parser fills in `latest` when no tag is given; a repository must not carry one.
        let bare = reference.digest().is_none()
            && !value
                .rsplit('/')
                .next()
                .is_some_and(|last| last.contains(':'));
        if bare {
            Ok(Self(value.to_owned()))
        } else {
            Err(GrammarError::new(
                "image repository",
                value,
                "expected a repository without :tag or @digest; tags go in [image.tags]",
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

/// A calendar date, `YYYY-MM-DD`, used in dated tags and the image's `created` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Date(chrono::NaiveDate);

impl Date {
    /// The date of a Unix timestamp, in UTC.
    pub fn from_unix_seconds(seconds: i64) -> Option<Self> {
        chrono::DateTime::from_timestamp(seconds, 0).map(|time| Self(time.date_naive()))
    }

    /// Midnight UTC of this date, RFC 3339, as the OCI `created` annotation wants it.
    pub fn rfc3339_midnight(&self) -> String {
        format!("{}T00:00:00Z", self.0.format("%Y-%m-%d"))
    }
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.format("%Y-%m-%d"))
    }
}

impl FromStr for Date {
    type Err = GrammarError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let shaped = value.len() == 10 && all_chars(value, |c| c.is_ascii_digit() || c == '-');
        match chrono::NaiveDate::parse_from_str(value, "%Y-%m-%d") {
            Ok(date) if shaped => Ok(Self(date)),
            _ => Err(GrammarError::new(
                "date",
                value,
                "expected a calendar date YYYY-MM-DD",
            )),
        }
    }
}

impl Serialize for Date {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Date {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// An environment variable name: `[A-Za-z_][A-Za-z0-9_]*`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EnvName(String);
string_newtype!(EnvName);

impl FromStr for EnvName {
    type Err = GrammarError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        if all_chars(value, |c| c.is_ascii_alphanumeric() || c == '_')
            && !value.starts_with(|c: char| c.is_ascii_digit())
        {
            Ok(Self(value.to_owned()))
        } else {
            Err(GrammarError::new(
                "variable name",
                value,
                "expected letters, digits and '_', not starting with a digit",
            ))
        }
    }
}

/// A value that is written unquoted into a Dockerfile (`ENV`, build args): letters, digits and
/// `. _ - + : / , = @ %`, nothing a shell or the Dockerfile parser would interpret.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PlainValue(String);
string_newtype!(PlainValue);

impl FromStr for PlainValue {
    type Err = GrammarError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        if all_chars(value, |c| {
            c.is_ascii_alphanumeric()
                || matches!(c, '.' | '_' | '-' | '+' | ':' | '/' | ',' | '=' | '@' | '%')
        }) {
            Ok(Self(value.to_owned()))
        } else {
            Err(GrammarError::new(
                "value",
                value,
                "expected letters, digits and . _ - + : / , = @ % only (no spaces, quotes or shell metacharacters)",
            ))
        }
    }
}

/// A label key: lowercase reverse-DNS style, `[a-z0-9][a-z0-9.-]*`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LabelKey(String);
string_newtype!(LabelKey);

impl FromStr for LabelKey {
    type Err = GrammarError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let ok = all_chars(value, |c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '-')
        }) && value.starts_with(|c: char| c.is_ascii_alphanumeric());
        if ok {
            Ok(Self(value.to_owned()))
        } else {
            Err(GrammarError::new(
                "label key",
                value,
                "expected lowercase letters, digits, '.' and '-', such as org.example.fixes",
            ))
        }
    }
}

/// Free text for a label value or a reason: printable ASCII and spaces, without the characters
/// that end or escape a double-quoted Dockerfile string (`"`, `\`, `$`, backtick).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Text(String);
string_newtype!(Text);

impl FromStr for Text {
    type Err = GrammarError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let ok = value.len() <= 1024
            && value.chars().all(|c| {
                (c == ' ' || c.is_ascii_graphic()) && !matches!(c, '"' | '\\' | '$' | '`')
            });
        if ok {
            Ok(Self(value.to_owned()))
        } else {
            Err(GrammarError::new(
                "text",
                value,
                "expected at most 1024 printable ASCII characters without \", \\, $ or `",
            ))
        }
    }
}

/// A path inside the recipe folder: relative, `/`-separated, no `..`, no hidden components.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RecipePath(String);
string_newtype!(RecipePath);

impl FromStr for RecipePath {
    type Err = GrammarError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let trimmed = value.trim_end_matches('/');
        let ok = !trimmed.is_empty()
            && trimmed.split('/').all(|part| {
                all_chars(part, |c| {
                    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')
                }) && !part.starts_with('.')
            });
        if ok {
            Ok(Self(trimmed.to_owned()))
        } else {
            Err(GrammarError::new(
                "recipe path",
                value,
                "expected a relative path inside the recipe folder ('/'-separated; no '..', hidden or empty components)",
            ))
        }
    }
}

/// An absolute path inside the image, such as `/usr/local/lib/python3.12/site-packages/vllm/`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ImagePath(String);
string_newtype!(ImagePath);

impl FromStr for ImagePath {
    type Err = GrammarError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let ok = value.starts_with('/')
            && all_chars(value, |c| {
                c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/')
            })
            && !value.split('/').any(|part| part == "..");
        if ok {
            Ok(Self(value.to_owned()))
        } else {
            Err(GrammarError::new(
                "image path",
                value,
                "expected an absolute path of letters, digits, '.', '_', '-' and '/', without '..'",
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_must_be_canonical_and_plain() {
        assert!(Version::from_str("0.6.14").is_ok());
        assert!(Version::from_str("0.6.14+cu130").is_ok());
        assert!(Version::from_str("2.0.0rc1").is_ok());
        for bad in [
            "0.6.14\nRUN curl x | sh",
            "0.6.14 && rm -rf /",
            "v0.6.14",
            " 0.6.14",
            "0.6.14-1",
            "",
            "1.0$(id)",
        ] {
            assert!(Version::from_str(bad).is_err(), "{bad:?} was accepted");
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
        let reference =
            ImageRef::from_str("ghcr.io/aeon-7/aeon-vllm-ultimate:2026-07-01-v0.24.0").unwrap();
        assert_eq!(
            (
                reference.registry(),
                reference.repository(),
                reference.tag()
            ),
            (
                "ghcr.io",
                "aeon-7/aeon-vllm-ultimate",
                Some("2026-07-01-v0.24.0")
            )
        );
        let reference = ImageRef::from_str("busybox").unwrap();
        assert_eq!(
            (
                reference.registry(),
                reference.repository(),
                reference.tag()
            ),
            ("docker.io", "library/busybox", Some("latest"))
        );
        let reference = ImageRef::from_str("localhost:5000/forge/example:1.0").unwrap();
        assert_eq!(
            (
                reference.registry(),
                reference.repository(),
                reference.tag()
            ),
            ("localhost:5000", "forge/example", Some("1.0"))
        );
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

    #[test]
    fn git_revisions_are_hex_prefixes() {
        let short = GitRev::from_str("a6b593d").unwrap();
        assert!(!short.is_full());
        assert!(GitRev::from_str(&"a".repeat(40)).unwrap().is_full());
        for bad in ["a6b59", "nv_dev", "A6B593D", "a6b593d;id"] {
            assert!(GitRev::from_str(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn package_names_normalise_per_pep_503() {
        assert_eq!(
            PackageName::from_str("Flashinfer_JIT.cache")
                .unwrap()
                .normalized(),
            "flashinfer-jit-cache"
        );
    }
}
