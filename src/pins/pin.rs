//! A pin: its name, kind and source (a package on an index, wheels by URL, a git commit, an
//! assertion about the base), its constraints, and the wheels it records.

use crate::types::dockerfile::Text;
use crate::types::git::{BranchName, GitRev};
use crate::types::python::{
    FileSha256, Identifier, LocalLabel, ModulePath, PackageName, Specifiers, Version, WheelFile,
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
            Source::Assert { .. } | Source::Python { install: false, .. }
        )
    }

    /// The kind, as written in pins.toml.
    pub fn kind(&self) -> PinKind {
        match self.source {
            Source::Python { .. } => PinKind::Python,
            Source::Wheels { .. } => PinKind::Wheels,
            Source::Git { .. } => PinKind::Git,
            Source::Assert { .. } => PinKind::Assert,
        }
    }

    /// The version for version-pinned kinds.
    pub fn version(&self) -> Option<&Version> {
        match &self.source {
            Source::Python { version, .. }
            | Source::Wheels { version, .. }
            | Source::Assert { version, .. } => Some(version),
            Source::Git { .. } => None,
        }
    }

    /// What the pin stands at: the version, or the git revision.
    pub fn current(&self) -> &str {
        match &self.source {
            Source::Git { rev, .. } => rev.as_str(),
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
}

/// Where a pin comes from.
#[derive(Debug, Clone)]
pub enum Source {
    /// One distribution from a package index.
    Python {
        /// Its name on the index.
        package: PackageName,
        /// The exact version.
        version: Version,
        /// False when the base already ships it and the layer only asserts it.
        install: bool,
        /// An index of its own, if it is not on the default one.
        index: Option<Url>,
        /// A re-export shim appended to one of its modules.
        shim: Option<Shim>,
    },
    /// Wheels that always share one version.
    Wheels {
        /// The shared version.
        version: Version,
        /// The wheels.
        wheels: Vec<Wheel>,
        /// Where the files are downloaded from instead of an index: `{version}` and each
        /// wheel's `{file}` filled in.
        url: Option<UrlTemplate>,
        /// Where the versions of a set with a `url` are listed: a GitHub releases API URL
        /// (`releases`, else derived from a `https://github.com/OWNER/REPO/releases/download/`
        /// url).
        releases: Option<Url>,
    },
    /// A git repository built from source.
    Git {
        /// Where to clone from.
        url: Url,
        /// The branch the revision lives on.
        branch: Option<BranchName>,
        /// The commit.
        rev: GitRev,
    },
    /// A component of the base image, only checked.
    Assert {
        /// How the image reports its version.
        probe: Probe,
        /// The version it must report.
        version: Version,
    },
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

/// The packages of `wheels` downloaded without a recorded sha256.
pub fn unhashed(wheels: &[Wheel]) -> Vec<String> {
    wheels
        .iter()
        .filter(|wheel| wheel.file.is_some() && wheel.sha256.is_none())
        .map(|wheel| wheel.package.to_string())
        .collect()
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
