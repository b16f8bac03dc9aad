//! A pin: its name, kind and source (a package on an index, wheels by URL, a git commit, an
//! assertion about the base), its constraints, and the wheels it records.

use crate::types::dockerfile::Text;
use crate::types::python::{
    FileSha256, LocalLabel, ModulePath, PackageName, Specifiers, Version, WheelName,
};
use crate::types::recipe::PinName;
use crate::types::url::{Url, UrlTemplate};

use super::kind::{AssertSource, GitSource, Kind, PythonSource, WheelSet};
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
    /// Its kind, as the capability every stage asks (`Kind`).
    pub fn as_kind(&self) -> &dyn Kind {
        self.source.as_kind()
    }

    /// Whether the base image supplies it: an assert pin, or a python pin with `install = false`.
    pub fn in_base(&self) -> bool {
        self.as_kind().in_base()
    }

    /// The distributions the layer installs without a hash pip checks (none for a pin that
    /// installs nothing).
    pub fn unhashed(&self) -> Vec<String> {
        self.as_kind().unhashed()
    }

    /// Each distribution the layer installs for the pin, and what pins.toml records of its
    /// files: none for a pin the base supplies or one built from source.
    pub fn installed(&self) -> Vec<Installed<'_>> {
        self.as_kind().installed()
    }

    /// The kind, as written in pins.toml.
    pub fn kind(&self) -> PinKind {
        self.as_kind().kind()
    }

    /// The version for version-pinned kinds.
    pub fn version(&self) -> Option<&Version> {
        self.as_kind().version()
    }

    /// What the pin stands at: the version, or the git revision.
    pub fn current(&self) -> &str {
        self.as_kind().current()
    }

    /// The reason a version is denied, if it is.
    pub fn denied(&self, version: &Version) -> Option<&Denied> {
        self.deny.iter().find(|denied| &denied.version == version)
    }

    /// The Python distributions it installs or asserts: one for a `python` pin, one per wheel
    /// of a wheel set, none for the other kinds.
    pub fn distributions(&self) -> Vec<Distribution<'_>> {
        self.as_kind().distributions()
    }

    /// What the image must show for this pin (`Shown`), one entry per distribution, revision or
    /// reported version.
    pub fn shown(&self) -> Vec<Shown> {
        self.as_kind().shown()
    }

    /// How this pin moves to a newer version (`Moves`).
    pub fn moves(&self) -> Moves<'_> {
        self.as_kind().moves()
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
/// build's gate (`pins::gate`) and the image's read-back (`verify::probe`) ask, so that a kind
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

/// One file of a version on an index that pip may install, and its sha256: what pip's `--hash`
/// checks the download against.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct HashedFile {
    /// The file name, as the index lists it.
    pub file: WheelName,
    /// Its sha256.
    pub sha256: FileSha256,
}

/// A version a pin must not move to, and why.
#[derive(Debug, Clone)]
pub struct Denied {
    /// The refused version.
    pub version: Version,
    /// What goes wrong with it.
    pub reason: Text,
}
