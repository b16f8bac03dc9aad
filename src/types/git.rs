//! git's grammars: a commit id or a branch name as text in, the checked value out.

use std::str::FromStr;

use super::{GrammarError, all_chars};

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_revisions_are_hex_prefixes() {
        let short = GitRev::from_str("a6b593d").unwrap();
        assert!(!short.is_full());
        assert!(GitRev::from_str(&"a".repeat(40)).unwrap().is_full());
        for bad in ["a6b59", "nv_dev", "A6B593D", "a6b593d;id"] {
            assert!(GitRev::from_str(bad).is_err(), "{bad:?} was accepted");
        }
    }
}
