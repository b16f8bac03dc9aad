//! `forge pin bump NAME [--to VERSION]`: move one pin (or `base`, the base image) to what
//! upstream offers, within the constraints pins.toml records; rewrite pins.toml with only the
//! moved values changed; re-render and say which Dockerfile steps the move invalidates.

mod base;
mod download;
mod git;
mod group;
mod write;

use std::str::FromStr;

use anyhow::Context as _;
use serde_json::json;

use crate::bump::edit::Assignment;
use crate::bump::steps::Invalidated;
use crate::bump::{
    self, BumpError, Candidate, Clients, Prereleases, Sources, Upstream, VersionOffer,
    VersionRefusal, YankedFiles,
};
use crate::diagnostics::CheckFailed;
use crate::patch::Applied;
use crate::pins::{self, Pin, Source};
use crate::printer::Printer;
use crate::recipe::Recipe;
use crate::types::python::Version;
use crate::types::recipe::PinName;

/// The name that means the base image rather than a pin.
pub const BASE: &str = "base";

/// What `forge pin bump NAME` moves: the base image, or one pin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BumpTarget {
    /// `base`: the base image's tag and digest.
    Base,
    /// A pin of pins.toml, by name.
    Pin(PinName),
}

impl std::str::FromStr for BumpTarget {
    type Err = crate::types::GrammarError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        if value == BASE {
            return Ok(BumpTarget::Base);
        }
        value.parse().map(BumpTarget::Pin)
    }
}

impl std::fmt::Display for BumpTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BumpTarget::Base => f.write_str(BASE),
            BumpTarget::Pin(name) => name.fmt(f),
        }
    }
}

/// Whether pins.toml is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BumpMode {
    /// Write pins.toml (only when it changes).
    Write,
    /// Print the pins.toml and Dockerfile diffs; write nothing.
    DryRun,
}

/// Whether the overridable constraints hold. Deny lists always hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Constraints {
    /// Every constraint holds.
    Enforce,
    /// `--force`: allowed ranges may be crossed, and a git pin may move where its patch
    /// series conflicts.
    Force,
}

/// Options of `forge pin bump`.
#[derive(Debug, Clone)]
pub struct PinBumpOptions {
    /// The pin, or the base.
    pub target: BumpTarget,
    /// The version, revision or tag to move to, instead of the newest allowed.
    pub to: Option<String>,
    /// Write or only show.
    pub mode: BumpMode,
    /// Whether pre-releases are on offer.
    pub prereleases: Prereleases,
    /// Whether allowed ranges hold.
    pub constraints: Constraints,
    /// Where to look beyond what the recipe names.
    pub sources: Sources,
}

/// What a bump did.
#[derive(Debug, Clone)]
pub enum Bumped {
    /// Nothing newer is on offer.
    UpToDate,
    /// pins.toml moved (or would move, in a dry run).
    Moved {
        /// The values changed.
        assignments: Vec<Assignment>,
        /// The Dockerfile steps a cached rebuild runs again.
        invalidated: Option<Invalidated>,
    },
}

/// Bumps with the real package index, git remote and registry clients.
pub fn pin_bump(
    recipe: &Recipe,
    options: &PinBumpOptions,
    printer: &Printer,
) -> anyhow::Result<Bumped> {
    let clients = Clients::new(recipe, &options.sources)?;
    pin_bump_with(recipe, options, &clients.upstream(), printer)
}

/// A planned move: what changes, described for people.
pub(crate) struct Move {
    subject: String,
    from: String,
    to: String,
    detail: String,
    assignments: Vec<Assignment>,
    patches: Vec<SeriesCheck>,
}

/// A patch series that applies onto the moved git pin, checked against its new revision.
#[derive(Debug, Clone)]
pub struct SeriesCheck {
    /// The series folder, as pins.toml names it.
    pub series: String,
    /// What each patch would do.
    pub applied: Applied,
}

/// Bumps against the given upstream.
pub fn pin_bump_with(
    recipe: &Recipe,
    options: &PinBumpOptions,
    upstream: &Upstream<'_>,
    printer: &Printer,
) -> anyhow::Result<Bumped> {
    let planned = if let BumpTarget::Pin(name) = &options.target {
        let pin = find_pin(&recipe.pins, name.as_str())?;
        if pin.in_base() {
            return Err(BumpError::InBase {
                pin: pin.name.clone(),
                kind: pin.kind(),
            }
            .into());
        }
        match &pin.source {
            Source::Wheels { url: Some(_), .. } => download::plan_download(pin, options, printer)?,
            Source::Python { .. } | Source::Wheels { .. } => {
                plan_version(recipe, pin, options, upstream, printer)?
            }
            Source::Git { .. } => git::plan_git(recipe, pin, options, upstream, printer)?,
            Source::Assert { .. } => unreachable!("the base supplies assert pins"),
        }
    } else {
        base::plan_base(recipe, options, upstream, printer)?
    };
    let Some(planned) = planned else {
        if printer.is_json() {
            printer.json(&json!({ "name": options.target.to_string(), "changed": false }));
        }
        return Ok(Bumped::UpToDate);
    };
    write::apply(recipe, options, planned, printer)
}

/// The pin named `name`, or an error suggesting the closest name.
pub fn find_pin<'a>(pins: &'a pins::Pins, name: &str) -> Result<&'a Pin, BumpError> {
    let found = PinName::from_str(name)
        .ok()
        .and_then(|parsed| pins.pins.get(&parsed));
    found.ok_or_else(|| {
        let known: Vec<String> = pins.pins.keys().map(ToString::to_string).collect();
        let suggestion = bump::closest_name(name, known.iter().map(String::as_str).chain([BASE]))
            .map(ToOwned::to_owned);
        BumpError::UnknownPin {
            name: name.to_owned(),
            suggestion,
            known,
        }
    })
}

fn plan_version(
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
        return Ok(group::plan_newest(
            recipe, pin, &mut offer, upstream, printer,
        ));
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
                printer.status(
                    "Fresh",
                    format_args!("{} is already at {version}", pin.name),
                );
                return Ok(None);
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
    Ok(Some(version_move(&offer, &chosen.version)))
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

fn version_move(offer: &VersionOffer, version: &Version) -> Move {
    let assignments = offer
        .members
        .iter()
        .map(|member| {
            Assignment::new(
                &["pins", member.as_str()],
                "version",
                offer.pin_version(member, version),
            )
        })
        .collect();
    let packages: Vec<String> = offer
        .packages
        .iter()
        .map(|package| format!("{} {}", package.name, package.version_at(version)))
        .collect();
    Move {
        subject: offer.pin.to_string(),
        from: offer.current.to_string(),
        to: offer.pin_version(&offer.pin, version),
        detail: packages.join(", "),
        assignments,
        patches: Vec::new(),
    }
}

/// The refusal of a move as a failed check (exit 1), with the hint the reasons call for.
pub(crate) fn refused(
    pin: &PinName,
    version: &Version,
    refusals: &[&VersionRefusal],
) -> CheckFailed {
    let message = format!(
        "refusing to move {pin} to {version}: {}",
        refusals
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    );
    let hint = match refusals.first() {
        Some(VersionRefusal::Denied { .. }) => "the deny list in pins.toml records what broke; neither --to nor --force moves past it".to_owned(),
        Some(VersionRefusal::WheelMissing { package, version, .. }) => format!("every wheel of a set moves together: wait until {package} {version} is published on its index, or check the wheel's `index` in pins.toml"),
        Some(VersionRefusal::PartnerMissing { pin: partner, version, .. }) => format!("a lockstep group moves together: wait for {partner} {version}, or pick a version every member has with --to"),
        Some(VersionRefusal::Requires { requirement, .. }) => format!("the Dockerfile installs with --no-deps, so forge checks what each wheel declares: move the pin that provides {requirement} first (for a pin in the base, move the base), or pick a version whose requirements the pinned set meets"),
        Some(VersionRefusal::Base { requirement, .. }) => format!("the base must supply {requirement}: move the base (`forge pin bump base`, then `forge build` and `forge verify-digest --contents` to record what it holds), or pick another version"),
        Some(VersionRefusal::NoFit { package, .. }) => format!("the image needs a wheel of {package} for its platform and Python (`[image] platform`, `[base] python` in pins.toml); wait until one is published, or pick a version that has one"),
        Some(VersionRefusal::OutsideRange { .. }) => "pass --force to move outside the allowed range (a denied version can never be forced), or widen `allow` in pins.toml".to_owned(),
        None => "see `forge pin outdated`".to_owned(),
    };
    CheckFailed::new(message, hint)
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

fn join(refusals: &[VersionRefusal]) -> String {
    refusals
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}
