//! Glob patterns: a pattern and a name in, whether the name matches out.
//!
//! One engine serves both places forge matches names against globs: `.dockerignore` rules,
//! which `context::ignore` matches one path component at a time (it handles `**`, `!` and
//! folders itself), and the `TagPattern` of `[base] tags`, whose grammar allows only `?`, `*`
//! and tag characters, so classes and escapes never occur there.
//!
//! The grammar is the docker CLI's for one path component: `*` stands for any run of characters
//! (maybe none), `?` for one character, `[...]` for one character of a class (`a-z` ranges; a
//! leading `!` or `^` negates it; a `[` with no `]` after it is a literal `[`), and `\` makes the
//! next character literal. Every other character matches itself.

/// Whether `name` matches `pattern` as a whole.
pub fn matches(pattern: &str, name: &str) -> bool {
    let tokens = tokens(pattern);
    let name: Vec<char> = name.chars().collect();
    // Each token but `*` matches exactly one character, so on a mismatch it is enough to let
    // the last `*` seen take one more character: at most pattern × name steps, however many
    // `*` there are, where trying every split for every `*` grows exponentially.
    let (mut token, mut index) = (0, 0);
    let mut last_star: Option<(usize, usize)> = None;
    while index < name.len() {
        match tokens.get(token) {
            Some(Token::One(one)) if one.matches(name[index]) => {
                token += 1;
                index += 1;
            }
            Some(Token::Star) => {
                last_star = Some((token, index));
                token += 1;
            }
            _ => match last_star {
                Some((star, taken_from)) => {
                    token = star + 1;
                    index = taken_from + 1;
                    last_star = Some((star, taken_from + 1));
                }
                None => return false,
            },
        }
    }
    tokens[token..]
        .iter()
        .all(|token| matches!(token, Token::Star))
}

/// One element of a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    /// `*`: any run of characters.
    Star,
    /// Exactly one character.
    One(One),
}

/// What one character must be.
#[derive(Debug, Clone, PartialEq, Eq)]
enum One {
    /// `?`: anything.
    Any,
    /// This character.
    Literal(char),
    /// `[...]`: one of the class (or, negated, none of it).
    Class {
        /// `[!...]` or `[^...]`.
        negated: bool,
        /// The characters between the brackets, `a-z` ranges unexpanded.
        members: Vec<char>,
    },
}

impl One {
    fn matches(&self, c: char) -> bool {
        match self {
            One::Any => true,
            One::Literal(literal) => *literal == c,
            One::Class { negated, members } => {
                let mut matched = false;
                let mut index = 0;
                while index < members.len() {
                    if index + 2 < members.len() && members[index + 1] == '-' {
                        matched |= (members[index]..=members[index + 2]).contains(&c);
                        index += 3;
                    } else {
                        matched |= members[index] == c;
                        index += 1;
                    }
                }
                matched != *negated
            }
        }
    }
}

/// The tokens of `pattern`, read left to right.
fn tokens(pattern: &str) -> Vec<Token> {
    let pattern: Vec<char> = pattern.chars().collect();
    let mut tokens = Vec::new();
    let mut index = 0;
    while index < pattern.len() {
        let (token, length) = match pattern[index] {
            '*' => (Token::Star, 1),
            '?' => (Token::One(One::Any), 1),
            '[' => match pattern[index + 1..].iter().position(|&c| c == ']') {
                Some(close) => {
                    let class = &pattern[index + 1..index + 1 + close];
                    let (negated, members) = match class.split_first() {
                        Some(('^' | '!', members)) => (true, members),
                        _ => (false, class),
                    };
                    let class = One::Class {
                        negated,
                        members: members.to_vec(),
                    };
                    (Token::One(class), close + 2)
                }
                None => (Token::One(One::Literal('[')), 1),
            },
            '\\' if index + 1 < pattern.len() => (Token::One(One::Literal(pattern[index + 1])), 2),
            literal => (Token::One(One::Literal(literal)), 1),
        };
        tokens.push(token);
        index += length;
    }
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_dated_tags() {
        assert!(matches("????-??-??-v*", "2026-07-01-v0.24.0"));
        assert!(!matches("????-??-??-v*", "latest"));
        assert!(!matches("????-??-??-v*", "2026-07-01-rc"));
        assert!(matches("*", ""));
    }

    #[test]
    fn globs_handle_classes_and_escapes() {
        assert!(matches("file[0-9].txt", "file7.txt"));
        assert!(!matches("file[!0-9].txt", "file7.txt"));
        assert!(matches("a\\*b", "a*b"));
        assert!(!matches("a\\*b", "axb"));
        assert!(matches("id_rsa*", "id_rsa"));
    }

    #[test]
    fn many_stars_do_not_backtrack_exponentially() {
        let pattern = "*a".repeat(64) + "b";
        assert!(!matches(&pattern, &"a".repeat(128)));
    }
}
