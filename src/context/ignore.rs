//! What never enters a build context: forge's own exclusions (version control, build output,
//! secrets) and the recipe's `.dockerignore`, read with the docker CLI's rules: one pattern a
//! line, `#` comments, `!` re-includes, `*` and `?` within one path component, `**` across
//! components, and a pattern that names a folder excludes everything under it.

use std::path::{Path, PathBuf};

use crate::glob;

/// The file whose patterns exclude paths from the context.
pub const DOCKERIGNORE_FILE: &str = ".dockerignore";

/// Names excluded wherever they appear, whatever `.dockerignore` says: they are either large
/// and useless to a build (`.git`, `target`) or secrets that must never reach a daemon.
const ALWAYS_EXCLUDED: &[&str] = &[".git", "target", ".env", "*.pem", "*.key", "id_rsa*"];

/// Decides, for a context-relative path, whether it stays out of the context.
#[derive(Debug, Clone, Default)]
pub struct Exclusions {
    rules: Vec<Rule>,
}

#[derive(Debug, Clone)]
struct Rule {
    components: Vec<String>,
    include: bool,
}

/// Why `.dockerignore` could not be read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read {}", path.display())]
pub struct IgnoreFileError {
    /// The file.
    pub path: PathBuf,
    /// The I/O error.
    pub source: std::io::Error,
}

impl crate::diagnostics::Advise for IgnoreFileError {
    fn advice(&self) -> crate::diagnostics::Advice {
        crate::diagnostics::Advice::Hint(
            "make .dockerignore a readable UTF-8 file, or remove it".to_owned(),
        )
    }
}
crate::advised!(IgnoreFileError);

impl Exclusions {
    /// The recipe's `.dockerignore` in `root`, if there is one.
    pub fn load(root: &Path) -> Result<Self, IgnoreFileError> {
        let path = root.join(DOCKERIGNORE_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(Self::parse(&text)),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(source) => Err(IgnoreFileError { path, source }),
        }
    }

    /// The rules of a `.dockerignore` text.
    pub fn parse(text: &str) -> Self {
        let rules = text
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty() && !line.starts_with('#'))
            .filter_map(|line| {
                let (include, pattern) = match line.strip_prefix('!') {
                    Some(rest) => (true, rest.trim()),
                    None => (false, line),
                };
                let components: Vec<String> = pattern
                    .split('/')
                    .filter(|part| !part.is_empty() && *part != ".")
                    .map(str::to_owned)
                    .collect();
                (!components.is_empty()).then_some(Rule {
                    components,
                    include,
                })
            })
            .collect();
        Self { rules }
    }

    /// Whether `path` (relative to the context root, `/`-separated) is left out.
    pub fn excludes(&self, path: &str) -> bool {
        let components: Vec<&str> = path.split('/').filter(|part| !part.is_empty()).collect();
        let forced = components.iter().any(|name| {
            ALWAYS_EXCLUDED
                .iter()
                .any(|pattern| glob::matches(pattern, name))
        });
        if forced {
            return true;
        }
        // The last matching rule wins; a rule matching a parent folder covers its contents.
        let mut excluded = false;
        for rule in &self.rules {
            let matched = (1..=components.len())
                .any(|length| path_matches(&rule.components, &components[..length]));
            if matched {
                excluded = !rule.include;
            }
        }
        excluded
    }
}

/// Whether pattern components match path components exactly, `**` standing for any number.
fn path_matches(pattern: &[String], path: &[&str]) -> bool {
    match pattern.split_first() {
        None => path.is_empty(),
        Some((first, rest)) if first == "**" => {
            (0..=path.len()).any(|skip| path_matches(rest, &path[skip..]))
        }
        Some((first, rest)) => match path.split_first() {
            Some((name, remaining)) => glob::matches(first, name) && path_matches(rest, remaining),
            None => false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_and_version_control_are_always_excluded() {
        let exclusions = Exclusions::parse("!*.pem\n!.git\n");
        for path in [
            ".git/HEAD",
            "overlays/vllm/.git/config",
            "overlays/.env",
            "overlays/server.pem",
            "overlays/tls/server.key",
            "overlays/id_rsa.pub",
            "overlays/target/debug/forge",
        ] {
            assert!(exclusions.excludes(path), "{path} was kept");
        }
        assert!(!exclusions.excludes("overlays/vllm/platforms/sm12x.py"));
        assert!(!exclusions.excludes("overlays/keys.py"));
    }

    #[test]
    fn dockerignore_rules_follow_the_docker_cli() {
        let exclusions =
            Exclusions::parse("# build output\n**/__pycache__\n*.md\n!README.md\noverlays/tmp\n");
        assert!(exclusions.excludes("overlays/vllm/__pycache__/x.pyc"));
        assert!(exclusions.excludes("__pycache__"));
        assert!(exclusions.excludes("NOTES.md"));
        assert!(!exclusions.excludes("README.md"));
        assert!(
            !exclusions.excludes("overlays/NOTES.md"),
            "* stays in one folder"
        );
        assert!(exclusions.excludes("overlays/tmp/scratch/file"));
        assert!(!exclusions.excludes("overlays/tmpfile"));
    }
}
