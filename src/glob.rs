//! Glob patterns as Docker reads them: a pattern and a path in, whether the path matches out.
//!
//! One engine serves both places forge matches names against globs: `.dockerignore` patterns,
//! which `context::ignore` cleans, negates and applies along a walk of the folders as the docker
//! CLI does, and the `TagPattern` of `[base] tags`, whose grammar allows only `?`, `*` and tag
//! characters.
//!
//! The meaning is Docker's own (moby's pattern matcher), which is not quite a shell glob:
//!
//! - `*` is any run of characters but `/`, `?` one character but `/`;
//! - `**` followed by more of the pattern is any number of folders (`a/**/b` matches `a/b` and
//!   `a/x/y/b`); at the end it is anything at all (`a/**` matches what lies under `a/`, `a**`
//!   anything that begins with `a`); at the start the rest is compared as a suffix (`**/foo`
//!   matches `foo` and `x/foo`, and `**foo` matches `barfoo`);
//! - `[...]` is a character class as a regular expression reads it: `^` negates it, and `!`
//!   is a character like any other (`[!0-9]` is `!` or a digit), `a-z` a range;
//! - `\` makes the next character literal;
//! - a pattern with none of these is compared with the path as it is.
//!
//! Docker checks a pattern's syntax as Go's `filepath.Match` would (a class must close, a `\`
//! must escape something) and then hands a regular expression made from it to Go's regexp;
//! forge builds the same expression for the `regex` crate, which matches in time linear in the
//! path whatever the pattern. The few spellings where Docker's translation hands Go a
//! regular-expression feature rather than a glob (`\d`, `[[:alpha:]]`, a `*` inside a class)
//! are refused rather than guessed at.

use std::fmt::Write as _;

/// A pattern, checked and compiled.
#[derive(Debug, Clone)]
pub struct Pattern {
    text: String,
    test: Test,
}

/// How a pattern is compared with a path, as Docker decides from its shape.
#[derive(Debug, Clone)]
enum Test {
    /// No wildcard: the path is the pattern.
    Exact,
    /// Literal text, then `**`: the path begins with the text.
    Prefix(String),
    /// `**`, then literal text: the path ends with the text (or, for `**/name`, is `name`).
    Suffix(String),
    /// Anything else: the regular expression matches the whole path.
    Expression(regex::Regex),
}

/// Why a pattern was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct PatternError {
    /// What is wrong with it.
    pub reason: String,
}

impl crate::diagnostics::Advise for PatternError {
    fn advice(&self) -> crate::diagnostics::Advice {
        crate::diagnostics::Advice::Nothing(
            "the error that read the pattern names where it is and gives the hint",
        )
    }
}
crate::advised!(PatternError);

impl PatternError {
    fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
        }
    }
}

impl Pattern {
    /// Checks and compiles `text`, a pattern already cleaned as Docker cleans it.
    pub fn new(text: &str) -> Result<Self, PatternError> {
        let chars: Vec<char> = text.chars().collect();
        check_syntax(&chars)?;
        let test = translate(text, &chars)?;
        Ok(Self {
            text: text.to_owned(),
            test,
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether `path` (`/`-separated) matches.
    pub fn matches(&self, path: &str) -> bool {
        match &self.test {
            Test::Exact => path == self.text,
            Test::Prefix(prefix) => path.starts_with(prefix.as_str()),
            Test::Suffix(suffix) => {
                path.ends_with(suffix.as_str())
                    || suffix.strip_prefix('/').is_some_and(|name| path == name)
            }
            Test::Expression(expression) => expression.is_match(path),
        }
    }
}

/// Whether `name` matches `pattern`; a pattern that does not compile matches nothing.
pub fn matches(pattern: &str, name: &str) -> bool {
    Pattern::new(pattern).is_ok_and(|pattern| pattern.matches(name))
}

/// Refuses what Go's `filepath.Match` refuses: a class that does not close or that holds an
/// empty range end, and a `\` with nothing after it.
fn check_syntax(chars: &[char]) -> Result<(), PatternError> {
    let mut at = 0;
    while at < chars.len() {
        match chars[at] {
            '\\' if at + 1 == chars.len() => {
                return Err(PatternError::new(
                    "it ends with a `\\` that escapes nothing",
                ));
            }
            '\\' => at += 2,
            '[' => {
                at += 1;
                if chars.get(at) == Some(&'^') {
                    at += 1;
                }
                let mut items = 0;
                loop {
                    if chars.get(at) == Some(&']') && items > 0 {
                        at += 1;
                        break;
                    }
                    at = class_character(chars, at)?;
                    if chars[at] == '-' {
                        at = class_character(chars, at + 1)?;
                    }
                    items += 1;
                }
            }
            _ => at += 1,
        }
    }
    Ok(())
}

/// One character of a class in Go's `filepath.Match` (maybe escaped): the index after it.
/// Something must follow it, since a class ends with `]`.
fn class_character(chars: &[char], at: usize) -> Result<usize, PatternError> {
    let malformed = || {
        PatternError::new(
            "a character class `[...]` is empty, unclosed, or has a range with no end",
        )
    };
    let after = match chars.get(at) {
        None | Some('-' | ']') => return Err(malformed()),
        Some('\\') if at + 1 == chars.len() => return Err(malformed()),
        Some('\\') => at + 2,
        Some(_) => at + 1,
    };
    if after >= chars.len() {
        return Err(malformed());
    }
    Ok(after)
}

/// What Docker makes of the pattern: how to compare it, and for a regular expression, the
/// expression it hands to Go, written for the `regex` crate.
fn translate(text: &str, chars: &[char]) -> Result<Test, PatternError> {
    #[derive(PartialEq)]
    enum Kind {
        Exact,
        Prefix,
        Suffix,
        Expression,
    }
    let mut expression = String::from("^");
    let mut kind = Kind::Exact;
    let mut at = 0;
    let mut step = 0;
    while at < chars.len() {
        let character = chars[at];
        at += 1;
        match character {
            '*' if chars.get(at) == Some(&'*') => {
                at += 1;
                if chars.get(at) == Some(&'/') {
                    at += 1;
                }
                if at == chars.len() {
                    if kind == Kind::Exact {
                        kind = Kind::Prefix;
                    } else {
                        expression.push_str(".*");
                        kind = Kind::Expression;
                    }
                } else {
                    expression.push_str("(?:.*/)?");
                    kind = Kind::Expression;
                }
                if step == 0 {
                    kind = Kind::Suffix;
                }
            }
            '*' => {
                expression.push_str("[^/]*");
                kind = Kind::Expression;
            }
            '?' => {
                expression.push_str("[^/]");
                kind = Kind::Expression;
            }
            '\\' => {
                // The syntax check saw to it that something follows.
                literal(&mut expression, escaped(chars[at])?);
                at += 1;
                kind = Kind::Expression;
            }
            '[' => {
                at = class(chars, at, &mut expression)?;
                kind = Kind::Expression;
            }
            ']' => {
                literal(&mut expression, ']');
                kind = Kind::Expression;
            }
            // Docker leaves `^` as it is: outside a class, Go's regexp reads it as the start of
            // the text.
            '^' => expression.push('^'),
            other => literal(&mut expression, other),
        }
        step += 1;
    }
    Ok(match kind {
        Kind::Exact => Test::Exact,
        Kind::Prefix => Test::Prefix(text[..text.len() - 2].to_owned()),
        Kind::Suffix => Test::Suffix(text[2..].to_owned()),
        Kind::Expression => {
            expression.push('$');
            let compiled = regex::Regex::new(&expression).map_err(|error| {
                PatternError::new(format!("it is not a valid pattern ({error})"))
            })?;
            Test::Expression(compiled)
        }
    })
}

/// The character `\character` stands for. Go's regexp reads an escaped punctuation character
/// as itself, but an escaped letter or digit as a class or a control character (`\d`, `\n`).
fn escaped(character: char) -> Result<char, PatternError> {
    if character.is_ascii() && !character.is_ascii_alphanumeric() {
        Ok(character)
    } else {
        Err(PatternError::new(format!(
            "Docker reads `\\{character}` as a regular-expression escape, not as `{character}`; write the character without the `\\`"
        )))
    }
}

/// Appends `character`, matched as itself.
fn literal(expression: &mut String, character: char) {
    write!(expression, "\\x{{{:X}}}", u32::from(character)).expect("writing to a String");
}

/// Reads the class whose `[` is just before `at`, as Go's regexp reads the text Docker hands it,
/// and appends it to `expression`; the index after its `]`.
fn class(chars: &[char], mut at: usize, expression: &mut String) -> Result<usize, PatternError> {
    expression.push('[');
    if chars.get(at) == Some(&'^') {
        expression.push('^');
        at += 1;
    }
    let mut first = true;
    loop {
        let character = chars[at];
        if character == ']' && !first {
            expression.push(']');
            return Ok(at + 1);
        }
        let (low, after) = class_member(chars, at)?;
        at = after;
        let mut high = low;
        if chars[at] == '-' && chars.get(at + 1).is_some_and(|&next| next != ']') {
            (high, at) = class_member(chars, at + 1)?;
        }
        if high < low {
            return Err(PatternError::new(format!(
                "the range `{low}-{high}` of a character class runs backwards"
            )));
        }
        literal(expression, low);
        if high != low {
            expression.push('-');
            literal(expression, high);
        }
        first = false;
    }
}

/// One member of a class as Go's regexp reads it, and the index after it.
fn class_member(chars: &[char], at: usize) -> Result<(char, usize), PatternError> {
    match chars[at] {
        '\\' => Ok((escaped(chars[at + 1])?, at + 2)),
        // Docker rewrites these inside a class too, into expressions of their own.
        '*' | '?' => Err(PatternError::new(format!(
            "Docker turns a `{}` inside a character class into a regular expression; escape it as `\\{}`",
            chars[at], chars[at]
        ))),
        '[' if chars.get(at + 1) == Some(&':') => Err(PatternError::new(
            "Docker reads `[:` inside a character class as a POSIX class such as `[:alpha:]`; escape the `[` as `\\[`",
        )),
        character => Ok((character, at + 1)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(text: &str) -> Pattern {
        Pattern::new(text).unwrap_or_else(|error| panic!("{text}: {error}"))
    }

    #[test]
    fn globs_match_dated_tags() {
        assert!(matches("????-??-??-v*", "2026-07-01-v0.24.0"));
        assert!(!matches("????-??-??-v*", "latest"));
        assert!(!matches("????-??-??-v*", "2026-07-01-rc"));
        assert!(matches("*", ""));
    }

    #[test]
    fn classes_and_escapes_read_as_docker_reads_them() {
        assert!(matches("file[0-9].txt", "file7.txt"));
        assert!(!matches("file[^0-9].txt", "file7.txt"));
        assert!(matches("file[^0-9].txt", "filex.txt"));
        // `!` does not negate: it is one more member of the class.
        assert!(matches("file[!0-9].txt", "file7.txt"));
        assert!(matches("file[!0-9].txt", "file!.txt"));
        assert!(!matches("file[!0-9].txt", "filex.txt"));
        assert!(matches("a\\*b", "a*b"));
        assert!(!matches("a\\*b", "axb"));
        assert!(matches("[\\]]", "]"));
        assert!(matches("a.b", "a.b") && !matches("a.b", "axb"));
        assert!(matches("a+(b)|{c}$", "a+(b)|{c}$"));
        assert!(matches("id_rsa*", "id_rsa"));
    }

    #[test]
    fn stars_stay_within_a_folder_and_double_stars_cross_them() {
        assert!(matches("a/*", "a/b") && !matches("a/*", "a/b/c"));
        assert!(matches("a/?", "a/b") && !matches("a?b", "a/b"));
        assert!(matches("a/**/b", "a/b") && matches("a/**/b", "a/x/y/b"));
        assert!(
            !matches("a**b", "axb"),
            "a `**` inside a name is a run of folders"
        );
        assert!(matches("a/**", "a/b/c") && !matches("a/**", "a"));
        assert!(matches("a**", "abc/d") && matches("a**", "a"));
        assert!(matches("**/foo", "foo") && matches("**/foo", "x/y/foo"));
        assert!(
            matches("**foo", "barfoo"),
            "a leading `**` compares a suffix"
        );
        assert!(matches("**", "anything/at/all"));
        assert!(matches("*/**", "a/b") && matches("*/**/*.md", "a/b/c.md"));
    }

    #[test]
    fn what_go_refuses_and_what_docker_reads_as_a_regular_expression_are_refused() {
        for text in [
            "[", "[]", "[a", "a[b-", "[a-]", "[-a]", "a\\", "[^]", "[z-a]",
        ] {
            assert!(Pattern::new(text).is_err(), "{text} was accepted");
        }
        for text in ["\\d", "a[\\w]", "[[:alpha:]]", "[*]", "[?]", "\\é"] {
            assert!(Pattern::new(text).is_err(), "{text} was accepted");
        }
        assert!(Pattern::new("[[]").unwrap().matches("["));
    }

    #[test]
    fn many_stars_do_not_backtrack_exponentially() {
        let started = std::time::Instant::now();
        let text = "*a".repeat(64) + "b";
        assert!(!pattern(&text).matches(&"a".repeat(128)));
        let text = "**/a/".repeat(16) + "b";
        let path = vec!["a"; 64].join("/") + "/c";
        assert!(!pattern(&text).matches(&path));
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }
}
