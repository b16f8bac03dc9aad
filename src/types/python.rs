//! Python's grammars: a PEP 440 version, local label or version range, a PEP 508 distribution
//! name, a module path or identifier as text in, the checked value out.

use std::str::FromStr;

use serde::de;
use serde::{Deserialize, Deserializer};

use super::{GrammarError, all_chars};

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

/// The image's Python as `MAJOR.MINOR` (`3.12`): which wheels fit it and which
/// `Requires-Python` ranges hold.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PythonVersion(String);
string_newtype!(PythonVersion);

impl PythonVersion {
    /// The major and minor numbers.
    pub fn parts(&self) -> (u64, u64) {
        let (major, minor) = self.0.split_once('.').expect("checked when it was made");
        (
            major.parse().expect("checked"),
            minor.parse().expect("checked"),
        )
    }

    /// As a PEP 440 version, for `Requires-Python`.
    pub fn pep440(&self) -> pep440_rs::Version {
        pep440_rs::Version::from_str(&self.0).expect("checked when it was made")
    }
}

impl FromStr for PythonVersion {
    type Err = GrammarError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let ok = value.split_once('.').is_some_and(|(major, minor)| {
            [major, minor].iter().all(|part| {
                !part.is_empty()
                    && part.len() <= 3
                    && part.chars().all(|c| c.is_ascii_digit())
                    && (part.len() == 1 || !part.starts_with('0'))
            })
        });
        if ok {
            Ok(Self(value.to_owned()))
        } else {
            Err(GrammarError::new(
                "Python version",
                value,
                "expected MAJOR.MINOR, such as 3.12",
            ))
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

/// PEP 440 version specifiers bounding where a pin may move, such as `>=0.6,<0.7`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Specifiers {
    text: String,
    parsed: pep440_rs::VersionSpecifiers,
}

impl Specifiers {
    /// The specifiers as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether `version` is inside the range.
    pub fn contains(&self, version: &pep440_rs::Version) -> bool {
        self.parsed.contains(version)
    }
}

impl serde::Serialize for Specifiers {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Specifiers {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        let plain = text.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(c, '.' | ',' | '<' | '>' | '=' | '!' | '~' | '*' | '+' | ' ')
        });
        let parsed = text
            .parse::<pep440_rs::VersionSpecifiers>()
            .ok()
            .filter(|_| plain);
        match parsed {
            Some(parsed) => Ok(Specifiers { text, parsed }),
            None => Err(de::Error::custom(format!(
                "invalid version range {text:?}: expected PEP 440 specifiers such as >=0.6,<0.7"
            ))),
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

/// A Python expression that is true in an image where a fix is in place, such as
/// `'swa_topk_lens' in inspect.signature(f).parameters`: one line of printable ASCII without the
/// characters that end or escape a double-quoted shell string (`"`, `\`, `$`, backtick), so it
/// can be spliced into a gate and a probe as it is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PythonExpr(String);
string_newtype!(PythonExpr);

impl FromStr for PythonExpr {
    type Err = GrammarError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let ok = !value.trim().is_empty() && super::dockerfile::fits_double_quotes(value);
        if !ok {
            return Err(GrammarError::new(
                "check",
                value,
                "expected one line of Python (at most 1024 printable ASCII characters) without \", \\, $ or `; use single quotes for strings",
            ));
        }
        // Compiled here, as Python would compile it in the image's gate, so that a check that
        // is not Python fails when pins.toml is read rather than at the end of a build.
        match super::python_syntax::error(value) {
            None => Ok(Self(value.to_owned())),
            Some(error) => Err(GrammarError::new(
                "check",
                value,
                format!("it is not a Python expression: {error}"),
            )),
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
    fn package_names_normalise_per_pep_503() {
        assert_eq!(
            PackageName::from_str("Flashinfer_JIT.cache")
                .unwrap()
                .normalized(),
            "flashinfer-jit-cache"
        );
    }
}

/// A wheel's file name written as a template of the set's version, such as
/// `flashinfer_jit_cache-{version}+cu130-cp39-abi3-manylinux_2_28_aarch64.whl`: the wheel file
/// name grammar (`NAME-VERSION[-BUILD]-PYTHON-ABI-PLATFORM.whl`, each part letters, digits, `.`,
/// `_` or `+`), with the version part `{version}` and an optional `+LOCAL` label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WheelFile(String);
string_newtype!(WheelFile);

impl WheelFile {
    /// The file name at `version`.
    pub fn expand(&self, version: &Version) -> String {
        self.0.replace("{version}", version.as_str())
    }

    /// The distribution part, as the file spells it (`flashinfer_jit_cache`).
    pub fn distribution(&self) -> &str {
        self.0.split('-').next().unwrap_or_default()
    }

    /// The local version label the file carries after `{version}` (`cu130`), if any.
    pub fn local(&self) -> Option<&str> {
        let version = self.0.split('-').nth(1).unwrap_or_default();
        version.strip_prefix("{version}+")
    }
}

impl FromStr for WheelFile {
    type Err = GrammarError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let refuse = |why: &str| {
            GrammarError::new(
                "wheel file",
                value,
                format!(
                    "{why}; expected a wheel file name with {{version}} as its version, such as name-{{version}}-py3-none-any.whl"
                ),
            )
        };
        let stem = value
            .strip_suffix(".whl")
            .ok_or_else(|| refuse("it does not end in .whl"))?;
        let parts: Vec<&str> = stem.split('-').collect();
        if !(5..=6).contains(&parts.len()) {
            return Err(refuse("a wheel file name has 5 or 6 parts separated by -"));
        }
        let part_ok = |part: &str| {
            all_chars(part, |c| {
                c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+')
            }) && !part.starts_with('.')
        };
        if !parts
            .iter()
            .skip(2)
            .chain([&parts[0]])
            .all(|part| part_ok(part))
        {
            return Err(refuse("each part is letters, digits, '.', '_' or '+'"));
        }
        let local = match parts[1].strip_prefix("{version}") {
            Some("") => None,
            Some(rest) => Some(
                rest.strip_prefix('+')
                    .ok_or_else(|| refuse("after {version} comes only +LOCAL"))?,
            ),
            None => return Err(refuse("its version part is not {version}")),
        };
        if let Some(local) = local {
            local
                .parse::<LocalLabel>()
                .map_err(|_| refuse("the local label after {version}+ is lowercase letters and digits separated by '.'"))?;
        }
        Ok(Self(value.to_owned()))
    }
}

/// The name of one wheel file as an index lists it, such as
/// `apache_tvm_ffi-0.1.11-cp312-abi3-manylinux_2_24_aarch64.manylinux_2_28_aarch64.whl`: the
/// wheel file name grammar (`NAME-VERSION[-BUILD]-PYTHON-ABI-PLATFORM.whl`, each part letters,
/// digits, `.`, `_` or `+`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct WheelName(String);
string_newtype!(WheelName);

impl WheelName {
    /// The version part, as the file spells it (`0.1.11`, `0.6.14+cu130`).
    pub fn version(&self) -> &str {
        self.0.split('-').nth(1).unwrap_or_default()
    }

    /// The distribution part, as the file spells it (`apache_tvm_ffi`).
    pub fn distribution(&self) -> &str {
        self.0.split('-').next().unwrap_or_default()
    }
}

impl FromStr for WheelName {
    type Err = GrammarError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let parts: Option<Vec<&str>> = value
            .strip_suffix(".whl")
            .map(|stem| stem.split('-').collect());
        let ok = parts.is_some_and(|parts| {
            (5..=6).contains(&parts.len())
                && parts.iter().all(|part| {
                    all_chars(part, |c| {
                        c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+')
                    }) && !part.starts_with('.')
                })
        });
        if ok {
            Ok(Self(value.to_owned()))
        } else {
            Err(GrammarError::new(
                "wheel file name",
                value,
                "expected NAME-VERSION[-BUILD]-PYTHON-ABI-PLATFORM.whl, each part letters, digits, '.', '_' or '+'",
            ))
        }
    }
}

/// The sha256 of a file, 64 lowercase hex digits, as pip's `#sha256=` and `--hash` take it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct FileSha256(String);
string_newtype!(FileSha256);

impl FileSha256 {
    /// The hash of some bytes already hashed with SHA-256.
    pub fn from_sha256(hash: &[u8]) -> Self {
        Self(hex::encode(hash))
    }
}

impl FromStr for FileSha256 {
    type Err = GrammarError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        if value.len() == 64
            && value
                .chars()
                .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
        {
            Ok(Self(value.to_owned()))
        } else {
            Err(GrammarError::new(
                "sha256",
                value,
                "expected 64 lowercase hex digits (the file's sha256, as `sha256sum` prints it)",
            ))
        }
    }
}

#[cfg(test)]
mod wheel_file_tests {
    use super::*;

    #[test]
    fn wheel_files_are_templates_of_the_version() {
        let file: WheelFile =
            "flashinfer_jit_cache-{version}+cu130-cp39-abi3-manylinux_2_28_aarch64.whl"
                .parse()
                .unwrap();
        assert_eq!(file.distribution(), "flashinfer_jit_cache");
        assert_eq!(file.local(), Some("cu130"));
        let version: Version = "0.6.14".parse().unwrap();
        assert_eq!(
            file.expand(&version),
            "flashinfer_jit_cache-0.6.14+cu130-cp39-abi3-manylinux_2_28_aarch64.whl"
        );
        let plain: WheelFile = "flashinfer_python-{version}-py3-none-any.whl"
            .parse()
            .unwrap();
        assert_eq!(plain.local(), None);
        for bad in [
            "flashinfer_python-0.6.14-py3-none-any.whl",
            "flashinfer_python-{version}-py3-none-any.tar.gz",
            "flashinfer_python-{version}-py3-none-any.whl; rm -rf /",
            "flashinfer_python-{version}-py3-none-$(id).whl",
            "flashinfer python-{version}-py3-none-any.whl",
            "flashinfer_python-{version}-py3-any.whl",
            "a/b-{version}-py3-none-any.whl",
            "x-{version}+CU-py3-none-any.whl",
            "x-{version}-{file}-none-any.whl",
        ] {
            assert!(bad.parse::<WheelFile>().is_err(), "{bad:?} must be refused");
        }
        assert!("a".repeat(64).parse::<FileSha256>().is_ok());
        assert!("A".repeat(64).parse::<FileSha256>().is_err());
        assert!("a".repeat(63).parse::<FileSha256>().is_err());
    }
}
