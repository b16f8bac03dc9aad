//! The checked value types: text in, a newtype out that holds only what its grammar allows.
//! Each one checks a strict grammar when it is parsed or deserialized, so a value that could break
//! out of a Dockerfile line (a newline, a quote, a shell metacharacter) never gets past the
//! boundary where it is read, and the TOML parser attaches the value's location to the error.
//!
//! One module per grammar:
//!
//! - `oci`: image references, repositories, tags, tag patterns, digests, platforms.
//! - `git`: commit ids and branch names.
//! - `url`: the URLs forge hands to git and pip.
//! - `python`: PEP 440 versions, local labels and specifiers, package names, module paths,
//!   identifiers.
//! - `dockerfile`: variable names, unquoted values, label keys, quoted text, paths in the image.
//! - `recipe`: pin names, paths in the recipe folder and in the build context, the build date.
//!
//! `GrammarError` is the one error every grammar refuses a value with.

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

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(
                deserializer: D,
            ) -> Result<Self, D::Error> {
                let text = <String as ::serde::Deserialize>::deserialize(deserializer)?;
                text.parse().map_err(::serde::de::Error::custom)
            }
        }
    };
}

pub mod dockerfile;
pub mod git;
pub mod manifest;
pub mod oci;
pub mod python;
pub mod python_syntax;
pub mod recipe;
pub mod registry;
pub mod url;

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

impl crate::diagnostics::Advise for GrammarError {
    fn advice(&self) -> crate::diagnostics::Advice {
        crate::diagnostics::Advice::Nothing(
            "the message names the grammar; the error that read the value names where it is",
        )
    }
}
crate::advised!(GrammarError);

fn all_chars(value: &str, allowed: impl Fn(char) -> bool) -> bool {
    !value.is_empty() && value.chars().all(allowed)
}

/// One `/`-separated part of a slash path, as the path grammars and `.dockerignore` cleaning
/// tell them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Segment<'a> {
    /// Nothing between two slashes (or before a leading one).
    Empty,
    /// `.`
    Current,
    /// `..`
    Parent,
    /// Anything else.
    Name(&'a str),
}

impl<'a> Segment<'a> {
    /// The text the segment stands for.
    pub fn as_str(self) -> &'a str {
        match self {
            Self::Empty => "",
            Self::Current => ".",
            Self::Parent => "..",
            Self::Name(name) => name,
        }
    }
}

/// The segments of `path`, split at every `/`.
pub fn segments(path: &str) -> impl Iterator<Item = Segment<'_>> {
    path.split('/').map(|part| match part {
        "" => Segment::Empty,
        "." => Segment::Current,
        ".." => Segment::Parent,
        name => Segment::Name(name),
    })
}
