//! Which index a package is asked on, the way the user already configured pip.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::diagnostics::{Advice, Advise};
use crate::types::GrammarError;
use crate::types::url::Url;

/// PyPI's simple index, the last resort.
pub const PYPI: &str = "https://pypi.org/simple";

/// Where the default index came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexOrigin {
    /// `--index-url` or `FORGE_INDEX_URL`: a mirror that replaces every index.
    Mirror,
    /// The `PIP_INDEX_URL` environment variable.
    PipEnvironment,
    /// `[global] index-url` in a pip configuration file.
    PipConfig(PathBuf),
    /// `[index] url` in pins.toml.
    PinsFile,
    /// Nothing said otherwise.
    PyPI,
}

impl fmt::Display for IndexOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IndexOrigin::Mirror => f.write_str("--index-url / FORGE_INDEX_URL"),
            IndexOrigin::PipEnvironment => f.write_str("PIP_INDEX_URL"),
            IndexOrigin::PipConfig(path) => write!(f, "{}", path.display()),
            IndexOrigin::PinsFile => f.write_str("pins.toml [index]"),
            IndexOrigin::PyPI => f.write_str("the default, PyPI"),
        }
    }
}

/// The indexes in force for one run.
#[derive(Debug, Clone)]
pub struct Indexes {
    default: Url,
    origin: IndexOrigin,
}

/// A configured index URL that is not one forge will use.
#[derive(Debug, thiserror::Error)]
#[error("{origin} names an index URL forge cannot use")]
pub struct SelectError {
    origin: IndexOrigin,
    source: GrammarError,
}

impl Advise for SelectError {
    fn advice(&self) -> Advice {
        Advice::Hint(format!(
            "fix the index URL in {}, or pass --index-url URL",
            self.origin
        ))
    }
}

crate::advised!(SelectError);

impl Indexes {
    /// Reads the environment and pip's configuration files. `mirror` is `--index-url` (clap
    /// already read `FORGE_INDEX_URL` into it); `recipe` is pins.toml's `[index] url`.
    pub fn discover(mirror: Option<&Url>, recipe: Option<&Url>) -> Result<Self, SelectError> {
        if let Some(mirror) = mirror {
            return Ok(Self {
                default: mirror.clone(),
                origin: IndexOrigin::Mirror,
            });
        }
        let parse = |text: &str, origin: IndexOrigin| {
            text.trim()
                .parse::<Url>()
                .map(|default| Self {
                    default,
                    origin: origin.clone(),
                })
                .map_err(|source| SelectError { origin, source })
        };
        if let Some(value) = non_empty_env("PIP_INDEX_URL") {
            return parse(&value, IndexOrigin::PipEnvironment);
        }
        for path in pip_config_files() {
            if let Some(value) = std::fs::read_to_string(&path)
                .ok()
                .and_then(|text| global_index_url(&text))
            {
                return parse(&value, IndexOrigin::PipConfig(path));
            }
        }
        if let Some(url) = recipe {
            return Ok(Self {
                default: url.clone(),
                origin: IndexOrigin::PinsFile,
            });
        }
        parse(PYPI, IndexOrigin::PyPI)
    }

    /// The index a package is asked on: the mirror, else the pin's own index, else the default.
    pub fn for_package<'a>(&'a self, own: Option<&'a Url>) -> &'a Url {
        match (&self.origin, own) {
            (IndexOrigin::Mirror, _) | (_, None) => &self.default,
            (_, Some(own)) => own,
        }
    }

    /// The default index and where it came from.
    pub fn default_index(&self) -> (&Url, &IndexOrigin) {
        (&self.default, &self.origin)
    }
}

fn non_empty_env(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .filter(|value| !value.trim().is_empty())
}

/// pip's configuration files, the one that wins first: `PIP_CONFIG_FILE`, the user's
/// (`$XDG_CONFIG_HOME/pip/pip.conf`, then the legacy `~/.pip/pip.conf`), then the machine's.
fn pip_config_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    if let Some(file) = non_empty_env("PIP_CONFIG_FILE") {
        files.push(PathBuf::from(file));
    }
    let home = non_empty_env("HOME").map(PathBuf::from);
    let config_home = non_empty_env("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|home| home.join(".config")));
    if let Some(config_home) = config_home {
        files.push(config_home.join("pip").join("pip.conf"));
    }
    if let Some(home) = &home {
        files.push(home.join(".pip").join("pip.conf"));
    }
    let config_dirs = non_empty_env("XDG_CONFIG_DIRS").unwrap_or_else(|| "/etc/xdg".to_owned());
    for folder in config_dirs.split(':').filter(|folder| !folder.is_empty()) {
        files.push(Path::new(folder).join("pip").join("pip.conf"));
    }
    files.push(PathBuf::from("/etc/pip.conf"));
    files
}

/// `index-url` (or `index_url`) from the `[global]` section of a pip INI file.
fn global_index_url(text: &str) -> Option<String> {
    let mut in_global = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') || line.starts_with(';') || line.is_empty() {
            continue;
        }
        if let Some(section) = line
            .strip_prefix('[')
            .and_then(|rest| rest.strip_suffix(']'))
        {
            in_global = section.trim() == "global";
            continue;
        }
        if !in_global {
            continue;
        }
        if let Some((_, value)) = line
            .split_once(['=', ':'])
            .filter(|(key, _)| matches!(key.trim(), "index-url" | "index_url"))
        {
            return Some(value.trim().to_owned());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_index_url_from_the_global_section_only() {
        let text = "[install]\nindex-url = http://wrong\n\n[global]\n# a comment\ntimeout = 3\nindex-url = https://mirror.example/simple\n";
        assert_eq!(
            global_index_url(text).as_deref(),
            Some("https://mirror.example/simple")
        );
        assert_eq!(global_index_url("[global]\ncert = /x\n"), None);
    }
}
