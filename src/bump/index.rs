//! Moving a version-pinned pin: the version chosen (newest allowed, or --to), its group moved
//! with it, and what refuses it, said as the user reads it.

use std::str::FromStr;

use anyhow::Context as _;

use crate::bump::edit::Assignment;
use crate::bump::{
    self, BumpError, Candidate, Upstream, VersionOffer, VersionRefusal, YankedFiles,
};
use crate::diagnostics::CheckFailed;
use crate::pins::{self, Pin};
use crate::printer::Printer;
use crate::recipe::Recipe;
use crate::types::python::Version;
use crate::types::recipe::PinName;

use super::refusal::{join, refused};
use super::{Constraints, Move, PinBumpOptions, files, group};

pub(super) fn plan_version(
    recipe: &Recipe,
    pin: &Pin,
    options: &PinBumpOptions,
    upstream: &Upstream<'_>,
    printer: &Printer,
) -> anyhow::Result<Option<Move>> {
    let pins = &recipe.pins;
    let mut offer =
        bump::version_offer(pins, pin, upstream, options.prereleases).with_context(|| {
            format!(
                "cannot look up the versions of {}; pins.toml was not changed",
                pin.name
            )
        })?;
    let force = options.constraints == Constraints::Force;
    let grouped = pin.group.is_some() && !offer.lockstep;
    if grouped && options.to.is_none() {
        return group::plan_newest(recipe, pin, &mut offer, upstream, printer);
    }
    let chosen: Candidate = match &options.to {
        Some(text) => {
            let version = target_version(&offer, text)?;
            offer.learn(&version, upstream);
            let candidate = offer.judge(pins, &version, YankedFiles::Allowed);
            denied_or_absent(&offer, pin, &version, &candidate)?;
            if grouped {
                warn_yanked(&offer, &version, printer);
                return group::plan_to(
                    recipe, pin, &mut offer, &version, options, upstream, printer,
                );
            }
            if !(candidate.allowed() || force && candidate.forceable())
                && let Some(others) = coordinating(pins, &offer, &candidate)
            {
                // Refused only by what pins of no shared group declare of each other:
                // the smallest move of those pins that lets it through.
                let mut coordinated =
                    bump::coordinated_offer(pins, pin, &others, upstream, options.prereleases)?;
                return group::plan_to(
                    recipe,
                    pin,
                    &mut coordinated,
                    &version,
                    options,
                    upstream,
                    printer,
                );
            }
            if !(candidate.allowed() || force && candidate.forceable()) {
                let refusals: Vec<&VersionRefusal> = candidate.refusals.iter().collect();
                return Err(refused(&pin.name, &version, &refusals).into());
            }
            warn_yanked(&offer, &version, printer);
            if offer.pin_version(&pin.name, &version) == offer.current.as_str() {
                // `--to` where it stands records the files its index offers there, if they
                // are not what pins.toml holds.
                let planned = version_move(pins, &offer, &version)?;
                if planned.assignments.is_empty() {
                    printer.status(
                        "Fresh",
                        format_args!("{} is already at {version}", pin.name),
                    );
                    return Ok(None);
                }
                return Ok(Some(planned));
            }
            candidate
        }
        None => match newest_allowed(pin, &offer, force, printer) {
            Some(pick) => pick,
            None => return Ok(None),
        },
    };
    for refusal in &chosen.refusals {
        printer.warn(format_args!(
            "--force: moving {} to {} although it is {refusal}",
            pin.name, chosen.version
        ));
    }
    let moves: Vec<(PinName, Version)> = if offer.lockstep {
        offer
            .members
            .iter()
            .map(|member| (member.clone(), chosen.version.clone()))
            .collect()
    } else {
        vec![(pin.name.clone(), chosen.version.clone())]
    };
    report_from_base(&offer, &moves, printer);
    Ok(Some(version_move(pins, &offer, &chosen.version)?))
}

/// The newest version nothing refuses (or only what `--force` crosses), warning about each newer
/// one skipped; `None` (said as such) when the pin stays where it is.
fn newest_allowed(
    pin: &Pin,
    offer: &VersionOffer,
    force: bool,
    printer: &Printer,
) -> Option<Candidate> {
    let Some(newest) = offer.newest() else {
        printer.status(
            "Fresh",
            format_args!(
                "{} is at {}, the newest version on offer",
                pin.name, offer.current
            ),
        );
        return None;
    };
    let pick = offer
        .newer
        .iter()
        .find(|candidate| candidate.allowed() || force && candidate.forceable());
    for skipped in offer
        .newer
        .iter()
        .take_while(|candidate| pick.is_none_or(|pick| candidate.version != pick.version))
    {
        printer.warn(format_args!(
            "skipping {} {}: {}",
            pin.name,
            skipped.version,
            join(&skipped.refusals)
        ));
    }
    let Some(pick) = pick else {
        // What `pin outdated` calls the newest allowed is where the pin stands.
        printer.status(
            "Fresh",
            format_args!(
                "{} is at {}, the newest allowed version ({} newer held back; {})",
                pin.name,
                offer.current,
                offer.newer.len(),
                held_hint(&newest.refusals)
            ),
        );
        return None;
    };
    Some(pick.clone())
}

/// The pins a move refused only by declared requirements between pinned packages must move
/// with: for each requirement, the pin that provides the required package, or the pin that
/// declares it when the required package is the moved one. `None` when a refusal is of another
/// kind, or names a pin that cannot move with it (the base supplies it, or it is in a lockstep
/// group).
fn coordinating(
    pins: &pins::Pins,
    offer: &VersionOffer,
    candidate: &Candidate,
) -> Option<Vec<PinName>> {
    let own: Vec<String> = offer
        .packages
        .iter()
        .filter(|package| package.pin == offer.pin)
        .map(|package| package.name.normalized())
        .collect();
    let mut others: Vec<PinName> = Vec::new();
    for refusal in &candidate.refusals {
        let VersionRefusal::Requires {
            package,
            dependency,
            ..
        } = refusal
        else {
            return None;
        };
        let other = if own.contains(dependency) {
            package
        } else {
            dependency
        };
        let pin = bump::pin_of_package(pins, other)?;
        let movable = !pin.in_base()
            && pin.version().is_some()
            && pin.name != offer.pin
            && pin
                .group
                .as_ref()
                .is_none_or(|group| !pins.lockstep.contains(group));
        if !movable {
            return None;
        }
        if !others.contains(&pin.name) {
            others.push(pin.name.clone());
        }
    }
    (!others.is_empty()).then_some(others)
}

/// A version `--to` names that is denied (refused before anything else, whether the index has
/// it or not) or not on the index.
fn denied_or_absent(
    offer: &VersionOffer,
    pin: &Pin,
    version: &Version,
    candidate: &Candidate,
) -> anyhow::Result<()> {
    let denied: Vec<&VersionRefusal> = candidate
        .refusals
        .iter()
        .filter(|refusal| matches!(refusal, VersionRefusal::Denied { .. }))
        .collect();
    if !denied.is_empty() {
        return Err(refused(&pin.name, version, &denied).into());
    }
    if let Some(package) = offer.on_index(version).first() {
        return Err(BumpError::NotOnIndex {
            pin: pin.name.clone(),
            package: package.name.clone(),
            version: package.version_at(version),
            index: package.index.clone(),
        }
        .into());
    }
    Ok(())
}

/// Says, per moved package, what it requires of packages the recipe does not pin (the base
/// must supply them), with the version the last build's image holds where forge.lock records it.
pub(crate) fn report_from_base(
    offer: &VersionOffer,
    moves: &[(PinName, Version)],
    printer: &Printer,
) {
    let needed = bump::from_base(offer, moves);
    let mut by_package: Vec<((String, String), Vec<String>)> = Vec::new();
    for item in needed {
        let text = match (&item.installed, offer.installed.is_empty()) {
            (Some(found), _) => format!("{} (has {found})", item.requirement),
            (None, false) => format!("{} (not in the last build's image)", item.requirement),
            (None, true) => item.requirement.clone(),
        };
        let key = (item.package, item.version);
        match by_package.iter_mut().find(|(known, _)| *known == key) {
            Some((_, items)) => items.push(text),
            None => by_package.push((key, vec![text])),
        }
    }
    for ((package, version), items) in by_package {
        printer.status(
            "Base",
            format_args!(
                "{package} {version} needs from the base (not pinned): {}{}",
                items.join(", "),
                if offer.installed.is_empty() {
                    "; unchecked: no build recorded what the base holds (`forge verify-digest --contents` records it)"
                } else {
                    ""
                }
            ),
        );
    }
}

/// Warns about every package of the move that the index yanked at `version`: an exact `--to`
/// may still pin it (PEP 592).
fn warn_yanked(offer: &VersionOffer, version: &Version, printer: &Printer) {
    for package in &offer.packages {
        if let Some(reason) = package.yanked(version) {
            let reason = if reason.is_empty() {
                String::new()
            } else {
                format!(" ({reason})")
            };
            printer.warn(format_args!(
                "{} {} is yanked on {}{reason}; pinned anyway, as PEP 592 allows for an exact version",
                package.name,
                package.version_at(version),
                package.index
            ));
        }
    }
}

/// The version `--to` names, without the local label the pin adds itself: `4.7.0+cu130` and
/// `4.7.0` are the same target for a pin at `4.6.0+cu130`; another label is refused.
fn target_version(offer: &VersionOffer, text: &str) -> Result<Version, BumpError> {
    let invalid = |message: String| BumpError::InvalidTarget {
        value: text.to_owned(),
        message,
    };
    let version = Version::from_str(text).map_err(|error| invalid(error.to_string()))?;
    let Some((bare, label)) = text.split_once('+') else {
        return Ok(version);
    };
    let bare = Version::from_str(bare).map_err(|error| invalid(error.to_string()))?;
    if offer.pin_version(&offer.pin, &bare) != text {
        let expected = offer
            .packages
            .first()
            .and_then(|package| package.local.as_ref())
            .map_or_else(
                || "no local label".to_owned(),
                |local| format!("the label +{local}"),
            );
        return Err(invalid(format!(
            "{} carries {expected}, not +{label}",
            offer.pin
        )));
    }
    Ok(bare)
}

/// The move of the offer's members to `version`: each member's version where it changes, and
/// the files it records there.
fn version_move(
    pins: &pins::Pins,
    offer: &VersionOffer,
    version: &Version,
) -> Result<Move, CheckFailed> {
    let mut assignments = Vec::new();
    for member in &offer.members {
        let to = offer.pin_version(member, version);
        if offer
            .currents
            .get(member)
            .is_none_or(|current| current.as_str() != to)
        {
            assignments.push(Assignment::new(&["pins", member.as_str()], "version", to));
        }
        assignments.extend(files::assignments(pins, offer, member, version)?);
    }
    let packages: Vec<String> = offer
        .packages
        .iter()
        .map(|package| format!("{} {}", package.name, package.version_at(version)))
        .collect();
    Ok(Move {
        subject: offer.pin.to_string(),
        from: offer.current.to_string(),
        to: offer.pin_version(&offer.pin, version),
        detail: files::detail(packages.join(", "), &assignments),
        assignments,
        patches: Vec::new(),
    })
}

/// What to do about the refusals of the newest version, when nothing newer is allowed.
fn held_hint(refusals: &[VersionRefusal]) -> &'static str {
    match refusals.first() {
        Some(VersionRefusal::OutsideRange { .. }) => {
            "pass --force to cross the allowed range, or widen `allow` in pins.toml"
        }
        Some(VersionRefusal::Denied { .. }) => "the deny list in pins.toml records what broke",
        _ => "`forge pin outdated` says why",
    }
}
