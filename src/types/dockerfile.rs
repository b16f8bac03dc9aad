//! The Dockerfile's grammars: variable names, unquoted values, label keys, double-quoted text
//! and paths inside the image as text in, values that cannot break out of their line out.

use std::str::FromStr;

use super::{GrammarError, all_chars};

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

/// Whether `value` may stand inside a double-quoted Dockerfile or shell string as it is: at most
/// 1024 printable ASCII characters and spaces, none of `"`, `\`, `$` or backtick.
pub(crate) fn fits_double_quotes(value: &str) -> bool {
    value.len() <= 1024
        && value
            .chars()
            .all(|c| (c == ' ' || c.is_ascii_graphic()) && !matches!(c, '"' | '\\' | '$' | '`'))
}

/// Free text for a label value or a reason: printable ASCII and spaces, without the characters
/// that end or escape a double-quoted Dockerfile string (`"`, `\`, `$`, backtick).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Text(String);
string_newtype!(Text);

impl FromStr for Text {
    type Err = GrammarError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let ok = fits_double_quotes(value);
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
            && !super::segments(value).any(|part| part == super::Segment::Parent);
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
