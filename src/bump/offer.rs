//! What upstream offers a version-pinned pin and its group: the packages each member installs,
//! the versions newer than the pin on every index, each judged (`judge`) into a candidate.

use std::collections::BTreeMap;
use std::str::FromStr;

use crate::diagnostics::{Advice, Advise};
use crate::git_remote::GitRemoteError;
use crate::package_index::wheel::WheelTarget;
use crate::package_index::{Fit, IndexError, Releases, metadata_cache};
use crate::pins::{Pin, PinKind, Pins};
use crate::registry::RegistryError;
use crate::types::python::{LocalLabel, PackageName, Version};
use crate::types::recipe::PinName;
use crate::types::url::Url;

use super::judging::judge;
use super::refusal::VersionRefusal;
use super::upstream::Upstream;
use super::{group, requires};

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
    /// The kind of each member.
    pub kinds: BTreeMap<PinName, PinKind>,
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
        match (self.kinds.get(member), package) {
            (Some(PinKind::Python), Some(package)) => package.version_at(version),
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

    /// The constraints as they apply to `version`, which need not be newer or on the index:
    /// every member at `version` in a lockstep group, the pin alone otherwise.
    pub fn judge(&self, pins: &Pins, version: &Version, yanked: YankedFiles) -> Candidate {
        let moves: Vec<(PinName, Version)> = if self.lockstep {
            self.members
                .iter()
                .map(|member| (member.clone(), version.clone()))
                .collect()
        } else {
            vec![(self.pin.clone(), version.clone())]
        };
        Candidate {
            version: version.clone(),
            refusals: judge(pins, self, &moves, yanked),
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

/// What the index offers the version-pinned `pin` (python or wheels) and its group.
pub fn version_offer(
    pins: &Pins,
    pin: &Pin,
    upstream: &Upstream<'_>,
    prereleases: Prereleases,
) -> Result<VersionOffer, OfferError> {
    let mut members = vec![pin.name.clone()];
    if let Some(group) = &pin.group {
        members.extend(
            pins.pins
                .values()
                .filter(|other| other.group.as_ref() == Some(group) && other.name != pin.name)
                .map(|other| other.name.clone()),
        );
    }
    offer_for(pins, pin, members, true, upstream, prereleases)
}

/// What the index offers `pin` moved together with `others`, pins outside its group whose
/// requirements tie them to it: a coordinated move, each at its own version.
pub fn coordinated_offer(
    pins: &Pins,
    pin: &Pin,
    others: &[PinName],
    upstream: &Upstream<'_>,
    prereleases: Prereleases,
) -> Result<VersionOffer, OfferError> {
    let mut members = vec![pin.name.clone()];
    members.extend(others.iter().filter(|other| **other != pin.name).cloned());
    offer_for(pins, pin, members, false, upstream, prereleases)
}

fn offer_for(
    pins: &Pins,
    pin: &Pin,
    members: Vec<PinName>,
    members_are_group: bool,
    upstream: &Upstream<'_>,
    prereleases: Prereleases,
) -> Result<VersionOffer, OfferError> {
    let current = pin.version().expect("a version-pinned kind").clone();
    let mut fetched: BTreeMap<(String, String), Releases> = BTreeMap::new();
    let mut packages = Vec::new();
    for member in &members {
        let member = &pins.pins[member];
        for distribution in member.distributions() {
            let (name, local, own_index) =
                (distribution.package, distribution.local, distribution.index);
            let index = upstream.indexes.for_package(own_index).clone();
            let key = (index.to_string(), name.normalized());
            let primary = packages.is_empty();
            let releases = match fetched.get(&key) {
                Some(releases) => releases.clone(),
                None => {
                    let releases = match releases_everywhere(upstream, own_index, name) {
                        Ok(releases) => releases,
                        // A wheel or partner the index lacks altogether is missing at every
                        // version: a refusal naming it, not a failed lookup.
                        Err(IndexError::NotFound { .. }) if !primary => Releases::default(),
                        Err(error) => return Err(error.into()),
                    };
                    fetched.insert(key, releases.clone());
                    releases
                }
            };
            packages.push(Package {
                pin: member.name.clone(),
                name: name.clone(),
                local,
                index,
                releases,
            });
        }
    }

    let (available, currents) = member_versions(pins, &members, &packages, prereleases);
    let versions = available[&pin.name].clone();
    let current_parsed = current.pep440();
    let kinds = members
        .iter()
        .map(|member| (member.clone(), pins.pins[member].kind()))
        .collect();
    let current_yanked = packages[0].yanked(
        &Version::from_str(&current_parsed.clone().without_local().to_string())
            .unwrap_or_else(|_| current.clone()),
    );
    let lockstep = members_are_group
        && pin
            .group
            .as_ref()
            .is_some_and(|group| pins.lockstep.contains(group));
    let mut offer = VersionOffer {
        pin: pin.name.clone(),
        current,
        members,
        packages,
        newer: Vec::new(),
        kinds,
        target: WheelTarget::new(&pins.image.platform, pins.base.python.as_ref()),
        current_yanked,
        pinned: BTreeMap::new(),
        declared: BTreeMap::new(),
        lockstep,
        available,
        currents,
        installed: upstream.installed.clone(),
        grouped: members_are_group,
    };
    learn_the_others(pins, &mut offer, upstream, &mut fetched);
    if !offer.lockstep {
        group::order_members(&mut offer);
    }
    offer.newer = versions
        .iter()
        .map(|version| {
            if offer.lockstep {
                offer.learn(version, upstream);
            } else {
                offer.learn_member(&pin.name.clone(), version, upstream);
            }
            offer.judge(pins, version, YankedFiles::Refused)
        })
        .collect();
    Ok(offer)
}

/// Each member's versions newer than its own (newest first; its first package says which
/// exist) and its current version without a local label.
fn member_versions(
    pins: &Pins,
    members: &[PinName],
    packages: &[Package],
    prereleases: Prereleases,
) -> (BTreeMap<PinName, Vec<Version>>, BTreeMap<PinName, Version>) {
    let mut available = BTreeMap::new();
    let mut currents = BTreeMap::new();
    for member in members {
        let first = packages
            .iter()
            .find(|package| &package.pin == member)
            .expect("every member installs a package");
        let member_current = pins.pins[member]
            .version()
            .expect("a version-pinned kind")
            .clone();
        available.insert(
            member.clone(),
            newer_versions(first, &member_current, prereleases),
        );
        let bare = Version::from_str(&member_current.pep440().without_local().to_string())
            .unwrap_or(member_current);
        currents.insert(member.clone(), bare);
    }
    (available, currents)
}

/// The versions of `package` newer than `current` (pre-releases only when asked), newest
/// first, without the local label the pin adds itself.
fn newer_versions(package: &Package, current: &Version, prereleases: Prereleases) -> Vec<Version> {
    let current_parsed = current.pep440();
    let wanted_local = package.local.as_ref().map(ToString::to_string);
    let mut versions: Vec<Version> = package
        .releases
        .versions
        .iter()
        .filter(|version| local_label(version) == wanted_local)
        .map(|version| version.clone().without_local())
        .filter(|version| *version > current_parsed.clone().without_local())
        .filter(|version| prereleases == Prereleases::Include || !version.any_prerelease())
        .filter_map(|version| Version::from_str(&version.to_string()).ok())
        .collect();
    versions.sort_by_key(|version| std::cmp::Reverse(version.pep440()));
    versions.dedup();
    versions
}

/// What every index a package is asked on offers it (pip's extra indexes after the default),
/// merged as pip merges them; an index that lacks the package adds nothing, and the package is
/// `NotFound` only when none has it.
fn releases_everywhere(
    upstream: &Upstream<'_>,
    own_index: Option<&Url>,
    name: &PackageName,
) -> Result<Releases, IndexError> {
    let mut merged: Option<Releases> = None;
    let mut missing = None;
    for index in upstream.indexes.all_for_package(own_index) {
        match upstream.index.releases(index, name) {
            Ok(releases) => match &mut merged {
                Some(merged) => {
                    merged.versions.extend(releases.versions);
                    merged.files.extend(releases.files);
                }
                None => merged = Some(releases),
            },
            Err(error @ IndexError::NotFound { .. }) => {
                missing.get_or_insert(error);
            }
            Err(error) => return Err(error),
        }
    }
    match (merged, missing) {
        (Some(merged), _) => Ok(merged),
        (None, Some(error)) => Err(error),
        (None, None) => Ok(Releases::default()),
    }
}

/// Records every pinned package at its current version and, for the pins outside the move,
/// what they declare there: a move must meet their requirements too.
fn learn_the_others(
    pins: &Pins,
    offer: &mut VersionOffer,
    upstream: &Upstream<'_>,
    fetched: &mut BTreeMap<(String, String), Releases>,
) {
    for pin in pins.pins.values() {
        let Some(version) = pin.version() else {
            continue;
        };
        let bare = Version::from_str(&version.pep440().without_local().to_string())
            .unwrap_or_else(|_| version.clone());
        for distribution in pin.distributions() {
            let (name, own_index) = (distribution.package, distribution.index);
            let text = match &distribution.local {
                Some(local) => format!("{bare}+{local}"),
                None => bare.to_string(),
            };
            let Ok(parsed) = pep440_rs::Version::from_str(&text) else {
                continue;
            };
            offer.pinned.insert(name.normalized(), parsed.clone());
            let index = upstream.indexes.for_package(own_index).clone();
            let key = (index.to_string(), name.normalized());
            if !fetched.contains_key(&key) {
                // A pin outside the move that cannot be looked up declares nothing here.
                let releases = releases_everywhere(upstream, own_index, name).unwrap_or_default();
                fetched.insert(key.clone(), releases);
            }
            let target = offer.target.as_ref();
            if let Some(requirements) = declared(upstream, &fetched[&key], &parsed, target) {
                offer
                    .declared
                    .insert((name.normalized(), parsed.to_string()), requirements);
            }
        }
    }
}

/// What a package declares at `version`: the METADATA of a wheel of it, from the PEP 658
/// metadata file where the index offers one, else read out of a wheel that fits the image by
/// range requests; `None` when neither can be read.
fn declared(
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

fn local_label(version: &pep440_rs::Version) -> Option<String> {
    version
        .to_string()
        .split_once('+')
        .map(|(_, local)| local.to_owned())
}

/// The pin that installs `package` (normalized name), if one does.
pub fn pin_of_package<'a>(pins: &'a Pins, package: &str) -> Option<&'a Pin> {
    pins.pins.values().find(|pin| {
        pin.distributions()
            .iter()
            .any(|distribution| distribution.package.normalized() == package)
    })
}
