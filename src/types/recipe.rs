//! The recipe's own grammars: a pin name, a path inside the recipe folder, a path inside the
//! build context and the build date as text in, the checked value out.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{GrammarError, all_chars};

/// Whether `value` is a table key forge names things by: lowercase letters, digits and `-`, not
/// starting with `-`, at most 64 characters.
fn is_key_name(value: &str) -> bool {
    all_chars(value, |c| {
        c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'
    }) && !value.starts_with('-')
        && value.len() <= 64
}

/// The name of a pin, the key under `[pins]`: lowercase letters, digits and `-`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PinName(String);
string_newtype!(PinName);

impl FromStr for PinName {
    type Err = GrammarError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let ok = is_key_name(value);
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

/// The name of a fix, the key under `[fixes]`: lowercase letters, digits and `-`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FixName(String);
string_newtype!(FixName);

impl FromStr for FixName {
    type Err = GrammarError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let ok = is_key_name(value);
        if ok {
            Ok(Self(value.to_owned()))
        } else {
            Err(GrammarError::new(
                "fix name",
                value,
                "expected lowercase letters, digits and '-', starting with a letter or digit",
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

/// A path inside the build context, as `.dockerignore` and docker see it: relative,
/// `/`-separated, hidden components allowed (`overlays/app/.env`), no `.`, `..` or empty
/// component, no control character.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ContextPath(String);
string_newtype!(ContextPath);

impl FromStr for ContextPath {
    type Err = GrammarError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let ok = !value.is_empty()
            && super::segments(value).all(|part| matches!(part, super::Segment::Name(_)))
            && !value.chars().any(char::is_control);
        if ok {
            Ok(Self(value.to_owned()))
        } else {
            Err(GrammarError::new(
                "context path",
                value,
                "expected the path of a file in the build context, relative to the recipe folder ('/'-separated; no '.', '..' or empty components)",
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

    /// Midnight UTC of this date, in seconds since 1970: the recipe's `SOURCE_DATE_EPOCH`.
    pub fn unix_midnight(&self) -> u64 {
        let seconds = self
            .0
            .and_time(chrono::NaiveTime::MIN)
            .and_utc()
            .timestamp();
        u64::try_from(seconds).unwrap_or(0)
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
