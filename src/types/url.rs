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
