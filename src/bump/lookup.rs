//! Asking upstream for a version-pinned pin and its group: the packages each member installs,
//! their releases on every index, and each version newer than the pin judged into a candidate.

use std::collections::BTreeMap;
use std::str::FromStr;

use crate::package_index::wheel::WheelTarget;
use crate::package_index::{IndexError, Releases};
use crate::pins::{Distribution, Pin, Pins};
use crate::types::python::{PackageName, Version};
use crate::types::recipe::PinName;
use crate::types::url::Url;

use super::group;
use super::offer::{OfferError, Package, Prereleases, VersionOffer, YankedFiles, declared};
use super::requires;
use super::upstream::Upstream;

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
    let packages = member_packages(pins, &members, upstream, &mut fetched)?;

    let (available, currents) = member_versions(pins, &members, &packages, prereleases);
    let versions = available[&pin.name].clone();
    let current_parsed = current.pep440();
    let locally = members
        .iter()
        .filter(|member| pins.pins[*member].as_kind().versioned_locally())
        .cloned()
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
        locally,
        target: WheelTarget::new(&pins.image.platform, pins.base.python.as_ref())
            .map(|target| target.with_glibc(upstream.glibc)),
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

/// The packages `members` install, each with its releases on its index (fetched once per
/// index and name, into `fetched`). A package after the first that its index lacks altogether
/// has no releases: a refusal names it, not a failed lookup.
fn member_packages(
    pins: &Pins,
    members: &[PinName],
    upstream: &Upstream<'_>,
    fetched: &mut BTreeMap<(String, String), Releases>,
) -> Result<Vec<Package>, OfferError> {
    let mut packages = Vec::new();
    for member in members {
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
    Ok(packages)
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

/// Every package the recipe pins (normalized name) at its current version, local label kept.
fn pinned_versions(pins: &Pins) -> Vec<(&Pin, Distribution<'_>, pep440_rs::Version)> {
    let mut pinned = Vec::new();
    for pin in pins.pins.values() {
        let Some(version) = pin.version() else {
            continue;
        };
        let bare = Version::from_str(&version.pep440().without_local().to_string())
            .unwrap_or_else(|_| version.clone());
        for distribution in pin.distributions() {
            let text = match &distribution.local {
                Some(local) => format!("{bare}+{local}"),
                None => bare.to_string(),
            };
            if let Ok(parsed) = pep440_rs::Version::from_str(&text) {
                pinned.push((pin, distribution, parsed));
            }
        }
    }
    pinned
}

/// Records every pinned package at its current version and, for the pins outside the move,
/// what they declare there: a move must meet their requirements too.
fn learn_the_others(
    pins: &Pins,
    offer: &mut VersionOffer,
    upstream: &Upstream<'_>,
    fetched: &mut BTreeMap<(String, String), Releases>,
) {
    for (_, distribution, parsed) in pinned_versions(pins) {
        let (name, own_index) = (distribution.package, distribution.index);
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

/// One file of a wheel set downloaded by URL, with the METADATA read out of it.
#[derive(Debug, Clone)]
pub struct Downloaded {
    /// The wheel's package.
    pub package: PackageName,
    /// Its local label, if any.
    pub local: Option<crate::types::python::LocalLabel>,
    /// The file's name.
    pub file: String,
    /// Where it was downloaded from.
    pub url: Url,
    /// Its sha256.
    pub sha256: String,
    /// The METADATA inside it.
    pub metadata: String,
}

/// What a wheel set downloaded by URL offers at `version`: the files downloaded, each a
/// package whose one release is that file (its `Requires-Python` the one its METADATA
/// declares), what each declares, and the pinned set at its current versions, so that the move
/// is judged as an index pin's is: its requirements on the other pins and the base's packages,
/// and the image's Python. What the other pins require of the set is not looked up (no index
/// is asked for a set that comes from a URL).
pub fn download_offer(
    pins: &Pins,
    pin: &Pin,
    version: &Version,
    files: &[Downloaded],
    upstream: &Upstream<'_>,
) -> VersionOffer {
    let packages: Vec<Package> = files
        .iter()
        .map(|downloaded| {
            let mut releases = Releases::from_files(
                &downloaded.package,
                [(
                    downloaded.file.as_str(),
                    None,
                    requires::requires_python(&downloaded.metadata).as_deref(),
                )],
            );
            for file in &mut releases.files {
                file.url = Some(downloaded.url.to_string());
                file.sha256 = Some(downloaded.sha256.clone());
            }
            Package {
                pin: pin.name.clone(),
                name: downloaded.package.clone(),
                local: downloaded.local.clone(),
                index: downloaded.url.clone(),
                releases,
            }
        })
        .collect();
    let mut offer = VersionOffer {
        pin: pin.name.clone(),
        current: pin.version().expect("a version-pinned kind").clone(),
        members: vec![pin.name.clone()],
        packages,
        newer: Vec::new(),
        locally: [pin.name.clone()]
            .into_iter()
            .filter(|_| pin.as_kind().versioned_locally())
            .collect(),
        target: WheelTarget::new(&pins.image.platform, pins.base.python.as_ref())
            .map(|target| target.with_glibc(upstream.glibc)),
        current_yanked: None,
        pinned: BTreeMap::new(),
        declared: BTreeMap::new(),
        lockstep: false,
        available: BTreeMap::new(),
        currents: [(pin.name.clone(), pin.version().expect("a version").clone())]
            .into_iter()
            .collect(),
        installed: upstream.installed.clone(),
        grouped: false,
    };
    for (_, distribution, parsed) in pinned_versions(pins) {
        offer
            .pinned
            .insert(distribution.package.normalized(), parsed);
    }
    for (downloaded, package) in files.iter().zip(&offer.packages) {
        offer.declared.insert(
            (downloaded.package.normalized(), package.version_at(version)),
            requires::requirements(&downloaded.metadata),
        );
    }
    offer
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
