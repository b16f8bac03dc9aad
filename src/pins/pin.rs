//! A pin: its name, kind and source (a package on an index, wheels by URL, a git commit, an
//! assertion about the base), its constraints, and the wheels it records.

use crate::types::dockerfile::Text;
use crate::types::git::{BranchName, GitRev};
use crate::types::python::{
    FileSha256, Identifier, LocalLabel, ModulePath, PackageName, Specifiers, Version, WheelFile,
    WheelName,
};
use crate::types::recipe::{PinName, RecipePath};
use crate::types::url::{Url, UrlTemplate};

use super::schema::{PinKind, Probe};

/// One pinned component.
#[derive(Debug, Clone)]
pub struct Pin {
    /// Its name under `[pins]`.
    pub name: PinName,
    /// Where it comes from and at what version.
    pub source: Source,
    /// The Python module whose import proves it landed.
    pub module: Option<ModulePath>,
    /// The lockstep group it moves with.
    pub group: Option<PinName>,
    /// Versions it must never move to.
    pub deny: Vec<Denied>,
    /// The range it may move within.
    pub allow: Option<Specifiers>,
}

impl Pin {
    /// Whether the base image supplies it: an assert pin, or a python pin with `install = false`.
    pub fn in_base(&self) -> bool {
        matches!(
            self.source,
            Source::Assert(_) | Source::Python(PythonSource { install: false, .. })
        )
    }

    /// The distributions the layer installs without a hash pip checks (none for a pin that
    /// installs nothing).
    pub fn unhashed(&self) -> Vec<String> {
        match &self.source {
            Source::Python(python) if python.install && python.files.is_empty() => {
                vec![python.package.to_string()]
            }
            Source::Wheels(set) => set.unhashed(),
            _ => Vec::new(),
        }
    }

    /// Each distribution the layer installs for the pin, and what pins.toml records of its
    /// files: none for a pin the base supplies or one built from source.
    pub fn installed(&self) -> Vec<Installed<'_>> {
        match &self.source {
            Source::Python(python) if python.install => vec![Installed::Indexed {
                wheel: None,
                package: &python.package,
                files: &python.files,
            }],
            Source::Wheels(set) => set
                .wheels
                .iter()
                .enumerate()
                .map(|(index, wheel)| match &wheel.file {
                    Some(file) => Installed::Downloaded {
                        package: &wheel.package,
                        file: file.expand(&set.version),
                    },
                    None => Installed::Indexed {
                        wheel: Some(index),
                        package: &wheel.package,
                        files: &wheel.files,
                    },
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The kind, as written in pins.toml.
    pub fn kind(&self) -> PinKind {
        match self.source {
            Source::Python(_) => PinKind::Python,
            Source::Wheels(_) => PinKind::Wheels,
            Source::Git(_) => PinKind::Git,
            Source::Assert(_) => PinKind::Assert,
        }
    }

    /// The version for version-pinned kinds.
    pub fn version(&self) -> Option<&Version> {
        match &self.source {
            Source::Python(PythonSource { version, .. })
            | Source::Wheels(WheelSet { version, .. })
            | Source::Assert(AssertSource { version, .. }) => Some(version),
            Source::Git(_) => None,
        }
    }

    /// What the pin stands at: the version, or the git revision.
    pub fn current(&self) -> &str {
        match &self.source {
            Source::Git(GitSource { rev, .. }) => rev.as_str(),
            _ => self
                .version()
                .expect("every other kind has a version")
                .as_str(),
        }
    }

    /// The reason a version is denied, if it is.
    pub fn denied(&self, version: &Version) -> Option<&Denied> {
        self.deny.iter().find(|denied| &denied.version == version)
    }

    /// Its payload when it is a `python` pin.
    pub fn python(&self) -> Option<&PythonSource> {
        match &self.source {
            Source::Python(python) => Some(python),
            _ => None,
        }
    }

    /// Its payload when it is a `wheels` pin.
    pub fn wheel_set(&self) -> Option<&WheelSet> {
        match &self.source {
            Source::Wheels(set) => Some(set),
            _ => None,
        }
    }

    /// Its payload when it is a `git` pin.
    pub fn git(&self) -> Option<&GitSource> {
        match &self.source {
            Source::Git(git) => Some(git),
            _ => None,
        }
    }

    /// The Python distributions it installs or asserts: one for a `python` pin, one per wheel
    /// of a wheel set, none for the other kinds.
    pub fn distributions(&self) -> Vec<Distribution<'_>> {
        match &self.source {
            Source::Python(python) => vec![Distribution {
                package: &python.package,
                version: python.version.to_string(),
                local: python
                    .version
                    .as_str()
                    .split_once('+')
                    .and_then(|(_, local)| local.parse().ok()),
                index: python.index.as_ref(),
            }],
            Source::Wheels(set) => set
                .wheels
                .iter()
                .map(|wheel| Distribution {
                    package: &wheel.package,
                    version: wheel.version(&set.version),
                    local: wheel.local.clone(),
                    index: wheel.index.as_ref(),
                })
                .collect(),
            Source::Git(_) | Source::Assert(_) => Vec::new(),
        }
    }
}

/// A distribution the layer installs, and what pins.toml records of its files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Installed<'a> {
    /// From an index: the files pins.toml records (`files`, the pin's own or, at `wheel`, a
    /// wheel's of its set).
    Indexed {
        /// Which wheel of the set, for a wheel set.
        wheel: Option<usize>,
        /// The distribution.
        package: &'a PackageName,
        /// The recorded files.
        files: &'a [HashedFile],
    },
    /// Downloaded by URL: its one file at the pin's version.
    Downloaded {
        /// The distribution.
        package: &'a PackageName,
        /// The file's name.
        file: String,
    },
}

/// A Python distribution a pin installs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Distribution<'a> {
    /// Its name on the index.
    pub package: &'a PackageName,
    /// The version it is installed at, with a wheel's local label (`0.6.14+cu130`).
    pub version: String,
    /// That local label, if any.
    pub local: Option<LocalLabel>,
    /// The index it is looked up on, when it is not the default one.
    pub index: Option<&'a Url>,
}

/// What an image built with a pin must show for it: the one answer to the question both the
/// build's gate (`render::gate`) and the image's read-back (`verify::probe`) ask, so that a kind
/// says it once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shown {
    /// A Python distribution, installed at exactly this version.
    Distribution {
        /// Its name on the index.
        package: String,
        /// The version.
        version: String,
    },
    /// The commit a git pin was built from, written in its revision file.
    Revision {
        /// The commit, as pins.toml names it (a prefix of the one found).
        rev: String,
    },
    /// A version the base reports for a component it ships, as `probe` asks it.
    Reported {
        /// How the image is asked.
        probe: Probe,
        /// The version.
        version: String,
    },
}

impl Pin {
    /// What the image must show for this pin (`Shown`), one entry per distribution, revision or
    /// reported version.
    pub fn shown(&self) -> Vec<Shown> {
        match &self.source {
            Source::Python(python) => vec![Shown::Distribution {
                package: python.package.to_string(),
                version: python.version.to_string(),
            }],
            Source::Wheels(set) => set
                .wheels
                .iter()
                .map(|wheel| Shown::Distribution {
                    package: wheel.package.to_string(),
                    version: wheel.version(&set.version),
                })
                .collect(),
            Source::Git(git) => vec![Shown::Revision {
                rev: git.rev.to_string(),
            }],
            Source::Assert(assert) => vec![Shown::Reported {
                probe: assert.probe,
                version: assert.version.to_string(),
            }],
        }
    }
}

/// How a pin moves to a newer version: the one answer `pin bump` and `pin outdated` both ask, so
/// that a kind says it once.
#[derive(Debug, Clone, Copy)]
pub enum Moves<'a> {
    /// It is the base's (asserted, or `install = false`): it moves with `pin bump base`.
    WithTheBase {
        /// Whether it is only asserted (`kind = "assert"`), not a distribution the base ships.
        asserted: bool,
    },
    /// To the newest commit of its branch.
    ByCommit(&'a GitSource),
    /// To a version its download URL serves, listed by its releases.
    ByDownload(&'a WheelSet, &'a UrlTemplate),
    /// To a version its package index offers.
    ByIndex,
}

impl Pin {
    /// How this pin moves to a newer version (`Moves`).
    pub fn moves(&self) -> Moves<'_> {
        match &self.source {
            Source::Assert(_) => Moves::WithTheBase { asserted: true },
            Source::Python(python) if !python.install => Moves::WithTheBase { asserted: false },
            Source::Python(_) => Moves::ByIndex,
            Source::Git(git) => Moves::ByCommit(git),
            Source::Wheels(set) => match &set.url {
                Some(url) => Moves::ByDownload(set, url),
                None => Moves::ByIndex,
            },
        }
    }
}

/// Where a pin comes from: one payload per kind, each with the fields only that kind has.
#[derive(Debug, Clone)]
pub enum Source {
    /// One distribution from a package index.
    Python(PythonSource),
    /// Wheels that always share one version.
    Wheels(WheelSet),
    /// A git repository built from source.
    Git(GitSource),
    /// A component of the base image, only checked.
    Assert(AssertSource),
}

/// One distribution from a package index.
#[derive(Debug, Clone)]
pub struct PythonSource {
    /// Its name on the index.
    pub package: PackageName,
    /// The exact version.
    pub version: Version,
    /// False when the base already ships it and the layer only asserts it.
    pub install: bool,
    /// An index of its own, if it is not on the default one.
    pub index: Option<Url>,
    /// A re-export shim appended to one of its modules.
    pub shim: Option<Shim>,
    /// Every file of `version` pip may install on the image, with its sha256 (empty until
    /// `forge pin bump` records them).
    pub files: Vec<HashedFile>,
}

/// Wheels that always share one version.
#[derive(Debug, Clone)]
pub struct WheelSet {
    /// The shared version.
    pub version: Version,
    /// The wheels.
    pub wheels: Vec<Wheel>,
    /// Where the files are downloaded from instead of an index: `{version}` and each
    /// wheel's `{file}` filled in.
    pub url: Option<UrlTemplate>,
    /// Where the versions of a set with a `url` are listed: a GitHub releases API URL
    /// (`releases`, else derived from a `https://github.com/OWNER/REPO/releases/download/`
    /// url).
    pub releases: Option<Url>,
}

/// A git repository built from source.
#[derive(Debug, Clone)]
pub struct GitSource {
    /// Where to clone from.
    pub url: Url,
    /// The branch the revision lives on.
    pub branch: Option<BranchName>,
    /// The commit.
    pub rev: GitRev,
}

/// A component of the base image, only checked.
#[derive(Debug, Clone)]
pub struct AssertSource {
    /// How the image reports its version.
    pub probe: Probe,
    /// The version it must report.
    pub version: Version,
}

/// One wheel of a wheel set.
#[derive(Debug, Clone)]
pub struct Wheel {
    /// Its distribution name.
    pub package: PackageName,
    /// A local version label (`cu130`) appended to the shared version.
    pub local: Option<LocalLabel>,
    /// An index of its own.
    pub index: Option<Url>,
    /// Its file name at `{version}`, when the set is downloaded from a URL.
    pub file: Option<WheelFile>,
    /// The sha256 of that file at the set's version, once recorded.
    pub sha256: Option<FileSha256>,
    /// From an index: every file of its version pip may install on the image, with its sha256
    /// (empty until `forge pin bump` records them).
    pub files: Vec<HashedFile>,
}

/// One file of a version on an index that pip may install, and its sha256: what pip's `--hash`
/// checks the download against.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct HashedFile {
    /// The file name, as the index lists it.
    pub file: WheelName,
    /// Its sha256.
    pub sha256: FileSha256,
}

impl Wheel {
    /// Whether pip checks what it installs for this wheel: a downloaded file's `sha256`, or the
    /// files recorded from its index.
    pub fn hashed(&self) -> bool {
        match self.file {
            Some(_) => self.sha256.is_some(),
            None => !self.files.is_empty(),
        }
    }
}

impl Wheel {
    /// Where this wheel's file is at `version`, for a set downloaded from `url`.
    pub fn url(&self, url: Option<&UrlTemplate>, version: &Version) -> Option<Url> {
        let file = self.file.as_ref()?;
        Some(url?.expand(version.as_str(), &file.expand(version)))
    }

    /// The version this wheel carries for the set's `version`: `0.6.14+cu130`.
    pub fn version(&self, version: &Version) -> String {
        match &self.local {
            Some(local) => format!("{version}+{local}"),
            None => version.to_string(),
        }
    }

    /// The start of its wheel file name for `version` (`flashinfer_jit_cache-0.6.14+cu130-`),
    /// as the wheel spec escapes the distribution name.
    pub fn file_prefix(&self, version: &Version) -> String {
        format!(
            "{}-{}-",
            self.package.normalized().replace('-', "_"),
            self.version(version)
        )
    }
}

impl WheelSet {
    /// The packages of the set pip installs without a hash to check: a downloaded file with no
    /// `sha256`, a wheel from an index with no recorded `files`.
    pub fn unhashed(&self) -> Vec<String> {
        self.wheels
            .iter()
            .filter(|wheel| !wheel.hashed())
            .map(|wheel| wheel.package.to_string())
            .collect()
    }
}

/// A module shim: a file appended to an installed module to restore names it lost.
#[derive(Debug, Clone)]
pub struct Shim {
    /// The shim's source, in the recipe.
    pub file: RecipePath,
    /// The module it is appended to.
    pub module: ModulePath,
    /// The names it must make importable again.
    pub exports: Vec<Identifier>,
}

/// A version a pin must not move to, and why.
#[derive(Debug, Clone)]
pub struct Denied {
    /// The refused version.
    pub version: Version,
    /// What goes wrong with it.
    pub reason: Text,
}
