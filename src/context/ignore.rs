//! The recipe's `.dockerignore`, read and applied exactly as the docker CLI reads and applies it
//! when it sends a folder to the daemon; forge drops nothing else.
//!
//! Reading, line by line: a UTF-8 byte order mark is dropped; a line that begins with `#` is a
//! comment (only in its first column); spaces around a pattern go; a leading `!` re-includes;
//! the pattern is cleaned as Go's `filepath.Clean` cleans a path (`//`, `.` and `..` resolved,
//! a trailing `/` dropped) and a leading `/` removed. Matching is `glob::Pattern`'s.
//!
//! Applying, along a walk of the folders from the context's root: the last pattern that matches
//! a path, or a folder above it, decides; a folder that matched a pattern keeps matching it
//! below, without being matched again. An excluded folder is not walked at all unless some
//! `!` pattern begins with its path, in which case its contents are decided one by one. This
//! is Docker's own order of work, and with it its outcomes: `docs` then `!**/keep.md` leaves
//! `docs/keep.md` out, since no `!` pattern begins with `docs/`.

use std::path::{Path, PathBuf};

use crate::diagnostics::{Advice, Advise};
use crate::fs::PathError;
use crate::glob::{self, PatternError};
use crate::types::{Segment, segments};

/// The file whose patterns exclude paths from the context.
pub const DOCKERIGNORE_FILE: &str = ".dockerignore";

/// The recipe's `.dockerignore` patterns, in order.
#[derive(Debug, Clone, Default)]
pub struct Exclusions {
    rules: Vec<Rule>,
}

#[derive(Debug, Clone)]
struct Rule {
    pattern: glob::Pattern,
    /// A `!` pattern: a match includes again.
    include: bool,
}

/// Which patterns a folder matched, handed to what lies in it. Empty at the top of the walk.
#[derive(Debug, Clone, Default)]
pub struct Matched(Vec<bool>);

/// What the walk does with a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// It goes into the context (a folder: with whatever its contents are decided to be).
    Sent,
    /// An excluded folder whose contents are still decided one by one: a `!` pattern begins
    /// with its path.
    Walked,
    /// It stays out, and so does everything under it.
    Skipped,
}

/// Why `.dockerignore` could not be used.
#[derive(Debug, thiserror::Error)]
pub enum IgnoreFileError {
    /// It could not be read, or is not a file inside the recipe.
    #[error(transparent)]
    Read(#[from] PathError),
    /// It is not UTF-8.
    #[error("{} is not UTF-8 text", path.display())]
    NotText {
        /// The file.
        path: PathBuf,
    },
    /// A line is not a pattern Docker would use.
    #[error("{}:{line}: `{text}`: {reason}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// The line as written.
        text: String,
        /// What is wrong with it.
        reason: String,
    },
}

impl Advise for IgnoreFileError {
    fn advice(&self) -> Advice {
        match self {
            IgnoreFileError::Read(error) => error.advice(),
            IgnoreFileError::NotText { .. } => {
                Advice::Hint("save .dockerignore as UTF-8 text, or remove it".to_owned())
            }
            IgnoreFileError::Invalid { .. } => Advice::Hint(
                "fix or remove the pattern; docs/template-and-context.md says how Docker reads each one".to_owned(),
            ),
        }
    }
}
crate::advised!(IgnoreFileError);

impl Exclusions {
    /// The recipe's `.dockerignore` in `root`, if there is one. It must be a file inside the
    /// recipe folder.
    pub fn load(root: &Path) -> Result<Self, IgnoreFileError> {
        let path = crate::fs::in_folder(root, DOCKERIGNORE_FILE);
        let folder = crate::fs::Confined::new(root)?;
        let bytes = match folder.read(&path) {
            Ok(bytes) => bytes,
            Err(PathError::Read { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                return Ok(Self::default());
            }
            Err(error) => return Err(error.into()),
        };
        let text = String::from_utf8(bytes)
            .map_err(|_| IgnoreFileError::NotText { path: path.clone() })?;
        Self::parse(&path, &text)
    }

    /// The patterns of a `.dockerignore` text; `path` names the file in errors.
    pub fn parse(path: &Path, text: &str) -> Result<Self, IgnoreFileError> {
        let invalid = |line: usize, text: &str, reason: String| IgnoreFileError::Invalid {
            path: path.to_owned(),
            line,
            text: text.to_owned(),
            reason,
        };
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut rules = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let Some(pattern) = read_line(line) else {
                continue;
            };
            // Docker trims and cleans once more when it compiles the patterns, the `!` still
            // in front.
            let pattern = clean(pattern.trim());
            let (include, pattern) = match pattern.strip_prefix('!') {
                Some("") => {
                    return Err(invalid(
                        index + 1,
                        line,
                        "a `!` with no pattern after it".to_owned(),
                    ));
                }
                Some(rest) => (true, rest),
                None => (false, pattern.as_str()),
            };
            let pattern = glob::Pattern::new(pattern)
                .map_err(|PatternError { reason }| invalid(index + 1, line, reason))?;
            rules.push(Rule { pattern, include });
        }
        Ok(Self { rules })
    }

    /// What the walk does with `path` (relative to the context root, `/`-separated), a folder
    /// or not, given what the folder holding it matched; and what `path` itself matched, for
    /// what lies in it.
    pub fn decide(&self, path: &str, folder: bool, parent: &Matched) -> (Verdict, Matched) {
        let mut excluded = false;
        let mut matched = vec![false; self.rules.len()];
        for (index, rule) in self.rules.iter().enumerate() {
            let mut hit = parent.0.get(index).copied().unwrap_or(false);
            if !hit {
                // A pattern that could not change the outcome is not tried, and then does not
                // count as matched for what lies below either: Docker's shortcut, kept for its
                // outcomes.
                if rule.include != excluded {
                    continue;
                }
                hit = rule.pattern.matches(path)
                    || (parent.0.is_empty() && self.matches_a_folder_above(rule, path));
            }
            matched[index] = hit;
            if hit {
                excluded = !rule.include;
            }
        }
        let verdict = if !excluded {
            Verdict::Sent
        } else if folder && self.reincluded_below(path) {
            Verdict::Walked
        } else {
            Verdict::Skipped
        };
        (verdict, Matched(matched))
    }

    /// What the folders above `path` matched, deciding each from the top as the walk does;
    /// `None` when one of them is skipped, and with it `path`.
    pub fn above(&self, path: &str) -> Option<Matched> {
        let components: Vec<&str> = path.split('/').filter(|part| !part.is_empty()).collect();
        let mut matched = Matched::default();
        for end in 1..components.len() {
            let (verdict, folder) = self.decide(&components[..end].join("/"), true, &matched);
            if verdict == Verdict::Skipped {
                return None;
            }
            matched = folder;
        }
        Some(matched)
    }

    /// Whether the file at `path` (relative to the context root) stays out of the context,
    /// the folders above it walked first.
    pub fn excludes(&self, path: &str) -> bool {
        self.above(path)
            .is_none_or(|parent| self.decide(path, false, &parent).0 != Verdict::Sent)
    }

    /// Whether `rule` matches a folder above `path`: asked only where the walk has no record of
    /// the folders above.
    fn matches_a_folder_above(&self, rule: &Rule, path: &str) -> bool {
        let Some((above, _)) = path.rsplit_once('/') else {
            return false;
        };
        let mut end = 0;
        above.split('/').any(|part| {
            end += part.len() + usize::from(end > 0);
            rule.pattern.matches(&above[..end])
        })
    }

    /// Whether a `!` pattern begins with the folder `path`, so that its contents may come back.
    fn reincluded_below(&self, path: &str) -> bool {
        let folder = format!("{path}/");
        self.rules
            .iter()
            .any(|rule| rule.include && format!("{}/", rule.pattern.as_str()).starts_with(&folder))
    }
}

/// The pattern a `.dockerignore` line holds, cleaned (with its `!`), or `None` for a comment or
/// a blank line.
fn read_line(line: &str) -> Option<String> {
    if line.starts_with('#') {
        return None;
    }
    let pattern = line.trim();
    if pattern.is_empty() {
        return None;
    }
    let (include, pattern) = match pattern.strip_prefix('!') {
        Some(rest) => (true, rest.trim()),
        None => (false, pattern),
    };
    let mut cleaned = if pattern.is_empty() {
        String::new()
    } else {
        clean(pattern)
    };
    if cleaned.len() > 1 && cleaned.starts_with('/') {
        cleaned.remove(0);
    }
    Some(if include {
        format!("!{cleaned}")
    } else {
        cleaned
    })
}

/// `path` cleaned as Go's `filepath.Clean` cleans it: repeated `/` and `.` components dropped,
/// each `..` removing the component before it (at the root, nothing), no trailing `/`, and
/// `.` for nothing at all.
fn clean(path: &str) -> String {
    let rooted = path.starts_with('/');
    let mut parts: Vec<Segment<'_>> = Vec::new();
    for part in segments(path) {
        match part {
            Segment::Empty | Segment::Current => {}
            Segment::Parent => match parts.last() {
                Some(Segment::Name(_)) => {
                    parts.pop();
                }
                _ if rooted => {}
                _ => parts.push(Segment::Parent),
            },
            Segment::Name(_) => parts.push(part),
        }
    }
    let joined = parts
        .iter()
        .map(|part| part.as_str())
        .collect::<Vec<_>>()
        .join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_owned(),
        (false, false) => joined,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Exclusions {
        Exclusions::parse(Path::new(".dockerignore"), text).unwrap()
    }

    /// The paths of `tree` a walk sends, as Docker's walk would: `tree` lists files, and
    /// folders with a trailing `/`.
    fn sent(exclusions: &Exclusions, tree: &[&str]) -> Vec<String> {
        tree.iter()
            .filter(|entry| {
                let path = entry.trim_end_matches('/');
                exclusions.above(path).is_some_and(|parent| {
                    exclusions.decide(path, entry.ends_with('/'), &parent).0 == Verdict::Sent
                })
            })
            .map(|entry| entry.trim_end_matches('/').to_owned())
            .collect()
    }

    #[test]
    fn nothing_is_excluded_without_a_pattern() {
        let exclusions = parse("# only a comment\n\n");
        for path in [
            ".git/HEAD",
            "overlays/.env",
            "overlays/server.pem",
            "overlays/target/debug/forge",
        ] {
            assert!(!exclusions.excludes(path), "{path} was dropped");
        }
    }

    #[test]
    fn a_negation_brings_back_a_file_of_an_excluded_folder() {
        let exclusions = parse("overlays/app/docs\n!overlays/app/docs/keep.md\n");
        let tree = [
            "overlays/app/docs/",
            "overlays/app/docs/keep.md",
            "overlays/app/docs/other.md",
            "overlays/app/docs/sub/",
            "overlays/app/docs/sub/keep.md",
            "overlays/app/main.py",
        ];
        assert_eq!(
            sent(&exclusions, &tree),
            ["overlays/app/docs/keep.md", "overlays/app/main.py"]
        );
        // A `!` pattern that does not begin with the folder's path does not reopen it.
        let exclusions = parse("docs\n!**/keep.md\n");
        assert_eq!(
            sent(&exclusions, &["docs/", "docs/keep.md", "other/keep.md"]),
            ["other/keep.md"]
        );
        // What an excluded folder matched holds below it without being tried again.
        let exclusions = parse("a\n!a/x\na\n");
        assert_eq!(sent(&exclusions, &["a/", "a/x", "a/y"]), ["a/x"]);
    }

    #[test]
    fn lines_are_read_as_the_docker_cli_reads_them() {
        let exclusions = parse(
            "\u{feff}# a comment\n #not-a-comment\n  spaced.txt   \r\n/rooted\n./dotted\nx/../cleaned\n\
             trailing/\n! reincluded\n\\#escaped\n",
        );
        let tree = [
            "#not-a-comment",
            "# a comment",
            "spaced.txt",
            "rooted",
            "dotted",
            "cleaned",
            "x/",
            "trailing/",
            "trailing/file",
            "reincluded",
            "#escaped",
        ];
        assert_eq!(sent(&exclusions, &tree), ["# a comment", "x", "reincluded"]);
        assert_eq!(read_line("!"), Some("!".to_owned()));
        assert!(Exclusions::parse(Path::new(".dockerignore"), "!\n").is_err());
        assert!(Exclusions::parse(Path::new(".dockerignore"), "ok\n[a-\n").is_err());
        assert_eq!(clean("a//b/./c/.."), "a/b");
        assert_eq!(clean("../a/../../b"), "../../b");
        assert_eq!(clean("/../a"), "/a");
        assert_eq!(clean("./"), ".");
    }

    #[test]
    fn classes_stars_and_double_stars() {
        let exclusions = parse("x[!0-9]\n**/*.md\n!keep/**\nlogs/**\n");
        let tree = [
            "x!",
            "x7",
            "xa",
            "a.md",
            "deep/er/b.md",
            "keep/c.md",
            "logs/",
            "logs/1",
        ];
        assert_eq!(sent(&exclusions, &tree), ["xa", "keep/c.md", "logs"]);
    }

    #[test]
    fn matching_is_linear_in_the_pattern_and_the_path() {
        // A dozen `**` against a path 30 folders deep that almost matches: trying every way of
        // splitting the path among the `**` takes minutes; a linear matcher, milliseconds.
        let pattern = "**/a/".repeat(12) + "b";
        let path = vec!["a"; 30].join("/") + "/c";
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let exclusions = parse(&format!("{pattern}\n"));
            let started = std::time::Instant::now();
            let excluded = exclusions.excludes(&path);
            let _ = done.send((excluded, started.elapsed()));
        });
        let (excluded, took) = finished
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("matching one path took more than 10 s");
        assert!(!excluded);
        assert!(
            took < std::time::Duration::from_millis(200),
            "took {took:?}"
        );
    }
}
