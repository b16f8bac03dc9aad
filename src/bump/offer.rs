//! What upstream offers a version-pinned pin and its group: the packages each member installs,
//! the versions newer than the pin on every index, and each candidate with what refuses it.

use std::collections::{BTreeMap, BTreeSet};
use std::str::FromStr;

use crate::diagnostics::{Advice, Advise};
use crate::git_remote::GitRemoteError;
use crate::package_index::wheel::WheelTarget;
use crate::package_index::{Fit, IndexError, Releases, metadata_cache};
use crate::pins::HashedFile;
use crate::registry::RegistryError;
use crate::types::python::{FileSha256, LocalLabel, PackageName, Version, WheelName};
use crate::types::recipe::PinName;
use crate::types::url::Url;

use super::refusal::VersionRefusal;
use super::requires;
use super::upstream::Upstream;

/// Whether pre-releases (`a`, `b`, `rc`, `.dev`) are on offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prereleases {
    /// Only final releases (and post-releases).
    Exclude,
    /// Pre-releases too.
    Include,
}

/// One package a pin installs, and where it is looked up.
#[derive(Debug, Clone)]
pub struct Package {
    /// The pin it belongs to.
    pub pin: PinName,
    /// The distribution.
    pub name: PackageName,
    /// The local label its versions carry (`cu130`), if any.
    pub local: Option<LocalLabel>,
    /// The index it is asked on.
    pub index: Url,
    /// What that index offers.
    pub releases: Releases,
}

impl Package {
    /// The version this package carries when its pin is at `version`.
    pub fn version_at(&self, version: &Version) -> String {
        match &self.local {
            Some(local) => format!("{version}+{local}"),
            None => version.to_string(),
        }
    }

    /// Whether the index has this package at the pin version `version`.
    pub fn has(&self, version: &Version) -> bool {
        self.parsed_at(version)
            .is_some_and(|version| self.releases.has(&version))
    }

    /// Why the index yanked this package at the pin version `version`, when every file of it
    /// is yanked.
    pub fn yanked(&self, version: &Version) -> Option<String> {
        self.releases.yanked(&self.parsed_at(version)?)
    }

    /// Whether this package at the pin version `version` has a wheel for `target`.
    pub fn fit(&self, version: &Version, target: &WheelTarget) -> Fit {
        match self.parsed_at(version) {
            Some(parsed) => self.releases.fit(&parsed, target),
            None => Fit::None {
                offered: Vec::new(),
            },
        }
    }

    /// The files pip may install of this package at the pin version `version` on `target`
    /// (every wheel that fits when there is no target), yanked ones too (an exact pin may take
    /// one), each with the sha256 its index lists, in name order; the names of the fitting
    /// files the index lists no sha256 for as the error.
    pub fn hashed_files(
        &self,
        version: &Version,
        target: Option<&WheelTarget>,
    ) -> Result<Vec<HashedFile>, Vec<String>> {
        let parsed = self.parsed_at(version);
        let mut files = Vec::new();
        let mut unlisted = Vec::new();
        for file in self
            .releases
            .files
            .iter()
            .filter(|file| Some(&file.version) == parsed.as_ref())
            .filter(|file| {
                target.map_or(file.name.ends_with(".whl"), |target| {
                    target.fits_wheel(&file.name)
                        && file
                            .requires_python
                            .as_deref()
                            .is_none_or(|requires| target.requires_python_holds(requires))
                })
            })
        {
            let name = WheelName::from_str(&file.name);
            let sha256 = file.sha256.as_deref().map(FileSha256::from_str);
            match (name, sha256) {
                (Ok(file), Some(Ok(sha256))) => files.push(HashedFile { file, sha256 }),
                _ => unlisted.push(file.name.clone()),
            }
        }
        if !unlisted.is_empty() {
            return Err(unlisted);
        }
        files.sort();
        Ok(files)
    }

    pub(super) fn parsed_at(&self, version: &Version) -> Option<pep440_rs::Version> {
        pep440_rs::Version::from_str(&self.version_at(version)).ok()
    }
}

/// Whether a move may land on yanked files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum YankedFiles {
    /// Never: versions on offer are the ones with a wheel that is not yanked.
    Refused,
    /// An exact version given with `--to` (PEP 592 lets an exact pin use yanked files).
    Allowed,
}

/// A version on offer and what refuses it (nothing, when it is allowed).
#[derive(Debug, Clone)]
pub struct Candidate {
    /// The version.
    pub version: Version,
    /// What refuses it.
    pub refusals: Vec<VersionRefusal>,
}

impl Candidate {
    /// Allowed as it is.
    pub fn allowed(&self) -> bool {
        self.refusals.is_empty()
    }

    /// Allowed with `--force`.
    pub fn forceable(&self) -> bool {
        self.refusals.iter().all(VersionRefusal::forceable)
    }
}

/// What upstream offers a version-pinned pin and its group.
#[derive(Debug, Clone)]
pub struct VersionOffer {
    /// The pin.
    pub pin: PinName,
    /// Where it stands.
    pub current: Version,
    /// The pins that move with it (itself first).
    pub members: Vec<PinName>,
    /// Every package of every member, as its index sees it.
    pub packages: Vec<Package>,
    /// Every version newer than the current one, newest first.
    pub newer: Vec<Candidate>,
    /// The members whose version carries their package's local label (`Kind::versioned_locally`).
    pub locally: BTreeSet<PinName>,
    /// What the image's wheels must fit, when the platform is Linux.
    pub target: Option<WheelTarget>,
    /// Why the index yanked the current version of the pin's first package, if it did.
    pub current_yanked: Option<String>,
    /// Every package the recipe pins (normalized name), at its current version.
    pub pinned: BTreeMap<String, pep440_rs::Version>,
    /// What each package declares at a version (normalized name, version), where the index
    /// offers its METADATA.
    pub declared: BTreeMap<(String, String), Vec<requires::Declared>>,
    /// Whether the members carry one version (`[groups.NAME] lockstep = true`); otherwise each
    /// member moves to its own version (`group::plan`).
    pub lockstep: bool,
    /// Each member's versions newer than its own, newest first.
    pub available: BTreeMap<PinName, Vec<Version>>,
    /// Each member's current version.
    pub currents: BTreeMap<PinName, Version>,
    /// The distributions the last build's image holds (normalized name to version).
    pub installed: BTreeMap<String, String>,
    /// Whether the members are the pin's group (otherwise pins a requirement brought in).
    pub grouped: bool,
}

impl VersionOffer {
    /// What pins.toml writes for `member` when the group moves to `version`: a python pin
    /// keeps its local label (`2.9.0+cu130`), a wheel set carries the bare version.
    pub fn pin_version(&self, member: &PinName, version: &Version) -> String {
        let package = self.packages.iter().find(|package| &package.pin == member);
        match package {
            Some(package) if self.locally.contains(member) => package.version_at(version),
            _ => version.to_string(),
        }
    }

    /// The newest version on offer, allowed or not.
    pub fn newest(&self) -> Option<&Candidate> {
        self.newer.first()
    }

    /// The newest version the constraints allow.
    pub fn newest_allowed(&self) -> Option<&Candidate> {
        self.newer.iter().find(|candidate| candidate.allowed())
    }

    /// Reads what the packages of the move declare at `version`, where the index offers it.
    pub fn learn(&mut self, version: &Version, upstream: &Upstream<'_>) {
        let members = self.members.clone();
        for member in &members {
            self.learn_member(member, version, upstream);
        }
    }

    /// Reads what the packages of `member` declare at `version`, where the index offers it.
    pub fn learn_member(&mut self, member: &PinName, version: &Version, upstream: &Upstream<'_>) {
        for package in self
            .packages
            .iter()
            .filter(|package| &package.pin == member)
        {
            let version_text = package.version_at(version);
            let key = (package.name.normalized(), version_text);
            if self.declared.contains_key(&key) {
                continue;
            }
            if let Some(parsed) = package.parsed_at(version)
                && let Some(requirements) =
                    declared(upstream, &package.releases, &parsed, self.target.as_ref())
            {
                self.declared.insert(key, requirements);
            }
        }
    }

    /// The pin's own packages that are not on their index at `version` (yanked files count
    /// as there).
    pub fn on_index(&self, version: &Version) -> Vec<&Package> {
        self.packages
            .iter()
            .filter(|package| {
                package.pin == self.pin
                    && !package.has(version)
                    && package.yanked(version).is_none()
            })
            .collect()
    }
}

/// Why the upstream of a pin could not be asked.
#[derive(Debug, thiserror::Error)]
pub enum OfferError {
    /// The package index failed.
    #[error(transparent)]
    Index(#[from] IndexError),
    /// The git remote failed.
    #[error(transparent)]
    Git(#[from] GitRemoteError),
    /// The registry failed.
    #[error(transparent)]
    Registry(#[from] RegistryError),
}

impl Advise for OfferError {
    fn advice(&self) -> Advice {
        match self {
            OfferError::Index(error) => error.advice(),
            OfferError::Git(error) => error.advice(),
            OfferError::Registry(error) => error.advice(),
        }
    }
}

crate::advised!(OfferError);

/// What a package declares at `version`: the METADATA of a wheel of it, from the PEP 658
/// metadata file where the index offers one, else read out of a wheel that fits the image by
/// range requests; `None` when neither can be read.
pub(super) fn declared(
    upstream: &Upstream<'_>,
    releases: &Releases,
    version: &pep440_rs::Version,
    target: Option<&WheelTarget>,
) -> Option<Vec<requires::Declared>> {
    let wheels: Vec<&crate::package_index::IndexFile> = releases
        .files
        .iter()
        .filter(|file| &file.version == version && file.url.is_some())
        .filter(|file| file.name.ends_with(".whl"))
        .collect();
    let file = wheels.iter().find(|file| file.metadata).or_else(|| {
        wheels
            .iter()
            .find(|file| target.is_none_or(|target| target.fits_wheel(&file.name)))
            .or_else(|| wheels.first())
    })?;
    if let Some(text) = file.sha256.as_deref().and_then(metadata_cache::read) {
        return Some(requires::requirements(&text));
    }
    let url = file.url.as_deref()?;
    let text = if file.metadata {
        upstream.index.metadata(url).ok()?
    } else {
        upstream.index.metadata_in_wheel(url).ok()?
    };
    if let Some(sha256) = &file.sha256 {
        metadata_cache::write(sha256, &text);
    }
    Some(requires::requirements(&text))
}
