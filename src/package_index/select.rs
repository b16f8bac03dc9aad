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
    /// The `PIP_EXTRA_INDEX_URL` environment variable.
    PipExtraEnvironment,
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
            IndexOrigin::PipExtraEnvironment => f.write_str("PIP_EXTRA_INDEX_URL"),
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
    /// pip's `extra-index-url`s: asked too, their files merged with the default index's.
    extra: Vec<Url>,
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

/// A pip setting and where it came from.
type Setting = (String, IndexOrigin);

impl Indexes {
    /// Reads the environment and pip's configuration files. `mirror` is `--index-url` (clap
    /// already read `FORGE_INDEX_URL` into it); `recipe` is pins.toml's `[index] url`.
    pub fn discover(mirror: Option<&Url>, recipe: Option<&Url>) -> Result<Self, SelectError> {
        if let Some(mirror) = mirror {
            return Ok(Self {
                default: mirror.clone(),
                origin: IndexOrigin::Mirror,
                extra: Vec::new(),
            });
        }
        let parse = |text: &str, origin: &IndexOrigin| {
            text.trim().parse::<Url>().map_err(|source| SelectError {
                origin: origin.clone(),
                source,
            })
        };
        let (index_url, extra_index_url) = pip_settings();
        let extra = match &extra_index_url {
            Some((text, origin)) => text
                .split_whitespace()
                .map(|url| parse(url, origin))
                .collect::<Result<Vec<Url>, SelectError>>()?,
            None => Vec::new(),
        };
        let (default, origin) = match index_url {
            Some((text, origin)) => (parse(&text, &origin)?, origin),
            None => match recipe {
                Some(url) => (url.clone(), IndexOrigin::PinsFile),
                None => (parse(PYPI, &IndexOrigin::PyPI)?, IndexOrigin::PyPI),
            },
        };
        Ok(Self {
            default,
            origin,
            extra,
        })
    }

    /// The index a package is asked on: the mirror, else the pin's own index, else the default.
    pub fn for_package<'a>(&'a self, own: Option<&'a Url>) -> &'a Url {
        match (&self.origin, own) {
            (IndexOrigin::Mirror, _) | (_, None) => &self.default,
            (_, Some(own)) => own,
        }
    }

    /// Every index a package is asked on, the one `for_package` names first: pip's extra
    /// indexes follow the default one (not a mirror or the pin's own index).
    pub fn all_for_package<'a>(&'a self, own: Option<&'a Url>) -> Vec<&'a Url> {
        let first = self.for_package(own);
        let mut all = vec![first];
        if first == &self.default && self.origin != IndexOrigin::Mirror {
            all.extend(self.extra.iter().filter(|extra| *extra != first));
        }
        all
    }

    /// The default index and where it came from.
    pub fn default_index(&self) -> (&Url, &IndexOrigin) {
        (&self.default, &self.origin)
    }

    /// pip's extra indexes.
    pub fn extra(&self) -> &[Url] {
        &self.extra
    }
}

fn non_empty_env(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .filter(|value| !value.trim().is_empty())
}

/// `index-url` and `extra-index-url` as pip reads them for `pip install`: every configuration
/// file in pip's order (the machine's, the user's unless `PIP_CONFIG_FILE` names a file that
/// exists, then `PIP_CONFIG_FILE`), a later file's value replacing an earlier one's, the
/// `[global]` section's first and then the `[install]` section's, which wins; then the
/// environment (`PIP_INDEX_URL`, `PIP_EXTRA_INDEX_URL`) over every file.
fn pip_settings() -> (Option<Setting>, Option<Setting>) {
    let files: Vec<(PathBuf, String)> = pip_config_files()
        .into_iter()
        .filter_map(|path| Some((path.clone(), std::fs::read_to_string(&path).ok()?)))
        .collect();
    let mut index_url = None;
    let mut extra_index_url = None;
    for section in ["global", "install"] {
        for (path, text) in &files {
            let origin = || IndexOrigin::PipConfig(path.clone());
            if let Some(value) = ini_value(text, section, "index-url") {
                index_url = Some((value, origin()));
            }
            if let Some(value) = ini_value(text, section, "extra-index-url") {
                extra_index_url = Some((value, origin()));
            }
        }
    }
    if let Some(value) = non_empty_env("PIP_INDEX_URL") {
        index_url = Some((value, IndexOrigin::PipEnvironment));
    }
    if let Some(value) = non_empty_env("PIP_EXTRA_INDEX_URL") {
        extra_index_url = Some((value, IndexOrigin::PipExtraEnvironment));
    }
    (index_url, extra_index_url)
}

/// pip's configuration files, the one that wins last: the machine's (`$XDG_CONFIG_DIRS`, else
/// `/etc/xdg`, each `pip/pip.conf`, then `/etc/pip.conf`), the user's (the legacy
/// `~/.pip/pip.conf`, then `$XDG_CONFIG_HOME/pip/pip.conf`) unless `PIP_CONFIG_FILE` names a
/// file that exists, then `PIP_CONFIG_FILE`.
fn pip_config_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let config_dirs = non_empty_env("XDG_CONFIG_DIRS").unwrap_or_else(|| "/etc/xdg".to_owned());
    for folder in config_dirs.split(':').filter(|folder| !folder.is_empty()) {
        files.push(Path::new(folder).join("pip").join("pip.conf"));
    }
    files.push(PathBuf::from("/etc/pip.conf"));
    let env_file = non_empty_env("PIP_CONFIG_FILE").map(PathBuf::from);
    if !env_file.as_ref().is_some_and(|file| file.exists()) {
        let home = non_empty_env("HOME").map(PathBuf::from);
        if let Some(home) = &home {
            files.push(home.join(".pip").join("pip.conf"));
        }
        let config_home = non_empty_env("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|home| home.join(".config")));
        if let Some(config_home) = config_home {
            files.push(config_home.join("pip").join("pip.conf"));
        }
    }
    files.extend(env_file);
    files
}

/// The value of `key` in `section` of a pip INI file (`index_url` and `--index-url` name
/// `index-url` too; indented lines continue a value; the last assignment wins).
fn ini_value(text: &str, section: &str, key: &str) -> Option<String> {
    let mut current = String::new();
    let mut value: Option<String> = None;
    let mut continuing = false;
    for raw in text.lines() {
        let line = raw.trim();
        if line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if line.is_empty() {
            continuing = false;
            continue;
        }
        if raw.starts_with([' ', '\t']) && continuing {
            if let Some(value) = &mut value {
                value.push('\n');
                value.push_str(line);
            }
            continue;
        }
        continuing = false;
        if let Some(name) = line
            .strip_prefix('[')
            .and_then(|rest| rest.strip_suffix(']'))
        {
            current = name.trim().to_owned();
            continue;
        }
        let Some((name, assigned)) = line.split_once(['=', ':']) else {
            continue;
        };
        let name = name
            .trim()
            .trim_start_matches("--")
            .replace('_', "-")
            .to_ascii_lowercase();
        if current == section && name == key {
            value = Some(assigned.trim().to_owned());
            continuing = true;
        }
    }
    value.filter(|value| !value.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_key_of_one_section_with_continuation_lines() {
        let text = "[install]\nindex-url = http://install.example/simple\n\n[global]\n# a comment\ntimeout = 3\nindex_url = https://mirror.example/simple\nextra-index-url =\n    https://a.example/simple\n    https://b.example/simple\ncert = /x\n";
        assert_eq!(
            ini_value(text, "global", "index-url").as_deref(),
            Some("https://mirror.example/simple")
        );
        assert_eq!(
            ini_value(text, "install", "index-url").as_deref(),
            Some("http://install.example/simple")
        );
        assert_eq!(
            ini_value(text, "global", "extra-index-url")
                .unwrap()
                .split_whitespace()
                .collect::<Vec<_>>(),
            ["https://a.example/simple", "https://b.example/simple"]
        );
        assert_eq!(
            ini_value("[global]\ncert = /x\n", "global", "index-url"),
            None
        );
    }
}
