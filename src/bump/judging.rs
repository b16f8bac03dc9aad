//! Judging a move: the refusals of each member's version (constraints, packages on their index,
//! wheels that fit the image) and the requirements the moved set leaves to the base.

use std::str::FromStr;

use crate::package_index::Fit;
use crate::pins::Pins;
use crate::types::python::{PackageName, Version};
use crate::types::recipe::PinName;

use super::offer::Candidate;
use super::offer::{Package, VersionOffer, YankedFiles};
use super::refusal::VersionRefusal;
use super::requires;

/// What refuses `moves` (each member to its version): deny lists and allowed ranges, the
/// packages each member installs (on their index, with a wheel that fits the image), and the
/// requirements the pinned set would leave unmet afterwards.
pub(super) fn judge(
    pins: &Pins,
    offer: &VersionOffer,
    moves: &[(PinName, Version)],
    yanked: YankedFiles,
) -> Vec<VersionRefusal> {
    let mut refusals = Vec::new();
    let moves: Vec<(PinName, Version)> = moves
        .iter()
        .map(|(member, version)| {
            let bare = Version::from_str(version.as_str().split('+').next().unwrap_or_default())
                .unwrap_or_else(|_| version.clone());
            (member.clone(), bare)
        })
        .collect();
    for (member, version) in &moves {
        let pin = &pins.pins[member];
        let written = offer.pin_version(member, version);
        let written = Version::from_str(&written).unwrap_or_else(|_| version.clone());
        if let Some(denied) = pin.denied(&written).or_else(|| pin.denied(version)) {
            refusals.push(VersionRefusal::Denied {
                pin: member.clone(),
                reason: denied.reason.clone(),
            });
        }
    }
    for (member, version) in &moves {
        let pin = &pins.pins[member];
        if let Some(allow) = pin
            .allow
            .as_ref()
            .filter(|allow| !allow.contains(&version.pep440()))
        {
            refusals.push(VersionRefusal::OutsideRange {
                pin: member.clone(),
                range: allow.as_str().to_owned(),
            });
        }
    }
    for (member, version) in &moves {
        let mut packages = offer
            .packages
            .iter()
            .filter(|package| &package.pin == member);
        let first = packages.next().map(|package| package.name.clone());
        for package in offer
            .packages
            .iter()
            .filter(|package| &package.pin == member)
        {
            package_refusals(
                offer,
                package,
                version,
                yanked,
                first.as_ref(),
                &mut refusals,
            );
        }
    }
    refusals.extend(requirement_refusals(offer, &moves));
    refusals.extend(from_base(offer, &moves).into_iter().filter_map(|needed| {
        let found = needed.installed?;
        (!needed.holds).then_some(VersionRefusal::Base {
            package: needed.package,
            version: needed.version,
            requirement: needed.requirement,
            found,
        })
    }));
    refusals
}

/// A requirement of a moved package on a package the recipe does not pin: the base must
/// supply it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FromBase {
    /// The package that declares it.
    pub package: String,
    /// Its version.
    pub version: String,
    /// The requirement (`cuda-python>=12.0`).
    pub requirement: String,
    /// The version the last build's image holds, when forge.lock records one.
    pub installed: Option<String>,
    /// Whether that version meets the requirement (true when none is recorded).
    pub holds: bool,
}

/// What the packages `moves` installs require of packages the recipe does not pin, checked
/// against what the last build's image holds where forge.lock records it.
pub fn from_base(offer: &VersionOffer, moves: &[(PinName, Version)]) -> Vec<FromBase> {
    let environment = offer.target.as_ref().and_then(requires::environment);
    let mut needed = Vec::new();
    for (member, version) in moves {
        for package in offer
            .packages
            .iter()
            .filter(|package| &package.pin == member)
        {
            let at = package.version_at(version);
            let Some(declared) = offer.declared.get(&(package.name.normalized(), at.clone()))
            else {
                continue;
            };
            for (written, requirement) in declared {
                let applies = match &environment {
                    Some(environment) => requirement.evaluate_markers(environment, &[]),
                    None => requirement.marker.evaluate_extras(&[]),
                };
                let name = requirement.name.to_string();
                if !applies || offer.pinned.contains_key(&name) {
                    continue;
                }
                let installed = offer.installed.get(&name).cloned();
                let holds = installed.as_ref().is_none_or(|found| {
                    match (
                        &requirement.version_or_url,
                        pep440_rs::Version::from_str(found),
                    ) {
                        (
                            Some(pep508_rs::VersionOrUrl::VersionSpecifier(specifiers)),
                            Ok(found),
                        ) => specifiers.contains(&found.without_local()),
                        _ => true,
                    }
                });
                needed.push(FromBase {
                    package: package.name.to_string(),
                    version: at.clone(),
                    requirement: written.replace(' ', ""),
                    installed,
                    holds,
                });
            }
        }
    }
    needed
}

/// Whether `package` is on its index at `version` with a wheel that fits the image.
fn package_refusals(
    offer: &VersionOffer,
    package: &Package,
    version: &Version,
    yanked: YankedFiles,
    first_of_member: Option<&PackageName>,
    refusals: &mut Vec<VersionRefusal>,
) {
    let present =
        package.has(version) || yanked == YankedFiles::Allowed && package.yanked(version).is_some();
    if present {
        let Some(target) = &offer.target else { return };
        match package.fit(version, target) {
            Fit::Fits => {}
            Fit::OnlyYanked if yanked == YankedFiles::Allowed => {}
            Fit::OnlyYanked => refusals.push(VersionRefusal::NoFit {
                package: package.name.clone(),
                version: package.version_at(version),
                target: target.describe(),
                offered: vec!["only yanked ones".to_owned()],
            }),
            Fit::None { offered } => refusals.push(VersionRefusal::NoFit {
                package: package.name.clone(),
                version: package.version_at(version),
                target: target.describe(),
                offered,
            }),
        }
        return;
    }
    if package.pin == offer.pin || !offer.lockstep {
        // The pin's first package not having it is "not on the index", said by the caller.
        if Some(&package.name) != first_of_member || package.pin != offer.pin {
            refusals.push(VersionRefusal::WheelMissing {
                package: package.name.clone(),
                version: package.version_at(version),
                index: package.index.clone(),
            });
        }
    } else {
        refusals.push(VersionRefusal::PartnerMissing {
            pin: package.pin.clone(),
            package: package.name.clone(),
            version: package.version_at(version),
            index: package.index.clone(),
        });
    }
}

/// The requirements `moves` would leave unmet: those the moved packages declare at their new
/// versions on any pinned package, and those the other pins declare on the moved ones.
fn requirement_refusals(offer: &VersionOffer, moves: &[(PinName, Version)]) -> Vec<VersionRefusal> {
    let environment = offer.target.as_ref().and_then(requires::environment);
    let mut after = offer.pinned.clone();
    let mut moved = Vec::new();
    for (member, version) in moves {
        for package in offer
            .packages
            .iter()
            .filter(|package| &package.pin == member)
        {
            if let Some(parsed) = package.parsed_at(version) {
                after.insert(package.name.normalized(), parsed);
                moved.push((package.name.normalized(), package.version_at(version)));
            }
        }
    }
    let mut unmet = Vec::new();
    for ((name, at), requirements) in &offer.declared {
        let is_moved = moved.iter().any(|(moved, _)| moved == name);
        if is_moved && !moved.contains(&(name.clone(), at.clone())) {
            continue; // another version of a moved package
        }
        if !is_moved && offer.pinned.get(name).map(ToString::to_string).as_ref() != Some(at) {
            continue;
        }
        for found in requires::unmet(name, at, requirements, environment.as_ref(), &after) {
            // A pin outside the move is only held to what the move changes.
            let on_moved = moved.iter().any(|(moved, _)| *moved == found.dependency);
            if is_moved || on_moved {
                unmet.push(found);
            }
        }
    }
    unmet
        .into_iter()
        .map(|found| VersionRefusal::Requires {
            package: found.package,
            version: found.version,
            requirement: found.requirement,
            found: found.found,
            dependency: found.dependency,
        })
        .collect()
}

impl VersionOffer {
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
}
