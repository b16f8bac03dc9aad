//! A group's move: its pins move together, each to its own version (upstream does not release
//! them under one version), so that every constraint holds afterwards.
//!
//! The members are tried in an order that puts a package before the packages it requires
//! (tilelang before apache-tvm-ffi): the first member takes its newest version for which the
//! others can follow, and each next one the newest that still fits what the earlier ones chose,
//! its current version being the last resort. The first combination nothing refuses is the
//! move. With one member's version fixed (`--to`), each other member tries its current version
//! first, so that it moves only when a requirement forces it. For each member the plan keeps why it stays below its newest version (the refusals of
//! each newer version, the rest of the move as chosen) and, for a member that moves although
//! its current version was allowed, nothing; for one its current version no longer fits, the
//! requirements that forced it to move.
//!
//! `pin bump` of a pin in a group that is not lockstep: the group moves as one, each member to
//! its own version (`bump::group`), and the move says why each member lands where it does.

use std::collections::BTreeMap;

use crate::diagnostics::CheckFailed;
use crate::pins::{Pin, Pins};
use crate::printer::Printer;
use crate::recipe::Recipe;
use crate::types::python::Version;
use crate::types::recipe::PinName;

use super::edit::Assignment;
use super::refusal::join;
use super::{Candidate, Upstream, VersionOffer, VersionRefusal, YankedFiles};
use super::{Constraints, Move, PinBumpOptions, files, refused};

/// Where one member of a group lands.
#[derive(Debug, Clone)]
pub struct MemberPlan {
    /// The pin.
    pub pin: PinName,
    /// Where it stands.
    pub current: Version,
    /// Where the move puts it (its current version when it stays).
    pub to: Version,
    /// The newest version on offer, if newer than the current one.
    pub newest: Option<Version>,
    /// The versions newer than `to`, newest first, each with what refuses it alongside the
    /// rest of the move.
    pub held: Vec<Candidate>,
    /// For a member that moves: what would refuse its current version alongside the rest of the
    /// move (empty when it moves only because a newer version is allowed).
    pub forced_by: Vec<VersionRefusal>,
}

impl MemberPlan {
    /// Whether the move changes it.
    pub fn moves(&self) -> bool {
        self.to != self.current
    }
}

/// A group's move, or why there is none.
#[derive(Debug, Clone)]
pub struct GroupPlan {
    /// What moves, in words: `group tvm`, or for a coordinated move of pins in no group, the pin
    /// whose move needs the others.
    pub group: String,
    /// Every member, in the order they were tried.
    pub members: Vec<MemberPlan>,
    /// When a version was fixed (`--to`) and no combination holds: what refuses it with the
    /// others where they stand.
    pub refused: Vec<VersionRefusal>,
}

impl GroupPlan {
    /// The members that move, with their new versions.
    pub fn moves(&self) -> Vec<(PinName, Version)> {
        self.members
            .iter()
            .filter(|member| member.moves())
            .map(|member| (member.pin.clone(), member.to.clone()))
            .collect()
    }

    /// The plan of `pin`.
    pub fn member(&self, pin: &PinName) -> Option<&MemberPlan> {
        self.members.iter().find(|member| &member.pin == pin)
    }
}

/// Puts each member before the members it requires (at their current versions, by what their
/// wheels declare), else in name order.
pub fn order_members(offer: &mut VersionOffer) {
    let environment = offer.target.as_ref().and_then(super::requires::environment);
    let requires = |from: &PinName, to: &PinName| -> bool {
        let targets: Vec<String> = offer
            .packages
            .iter()
            .filter(|package| &package.pin == to)
            .map(|package| package.name.normalized())
            .collect();
        offer
            .packages
            .iter()
            .filter(|package| &package.pin == from)
            .filter_map(|package| {
                let at = offer.pinned.get(&package.name.normalized())?;
                offer
                    .declared
                    .get(&(package.name.normalized(), at.to_string()))
            })
            .flatten()
            .filter(|(_, requirement)| match &environment {
                Some(environment) => requirement.evaluate_markers(environment, &[]),
                None => requirement.marker.evaluate_extras(&[]),
            })
            .any(|(_, requirement)| targets.contains(&requirement.name.to_string()))
    };
    let members = offer.members.clone();
    let depth: BTreeMap<PinName, usize> = members
        .iter()
        .map(|member| {
            let required_by = members
                .iter()
                .filter(|other| *other != member && requires(other, member))
                .count();
            (member.clone(), required_by)
        })
        .collect();
    offer
        .members
        .sort_by(|a, b| depth[a].cmp(&depth[b]).then_with(|| a.cmp(b)));
}

/// What `moves` (members to new versions) would be refused for; members at their current
/// version are left out of the move.
fn refusals(
    pins: &Pins,
    offer: &VersionOffer,
    moves: &[(PinName, Version)],
    yanked: YankedFiles,
) -> Vec<VersionRefusal> {
    let moving: Vec<(PinName, Version)> = moves
        .iter()
        .filter(|(member, version)| offer.currents.get(member) != Some(version))
        .cloned()
        .collect();
    super::judge(pins, offer, &moving, yanked)
}

/// Plans the move of the group of `offer` (not a lockstep one). `fixed` pins one member to a
/// version (`--to`); `forced` lets refusals `--force` may cross through.
/// The versions each member may take, in the order they are tried: with a version fixed the
/// others stay where they can (the smallest move), else each takes its newest that fits.
fn member_options(offer: &VersionOffer, fixed: Option<(&PinName, &Version)>) -> Vec<Vec<Version>> {
    offer
        .members
        .iter()
        .map(|member| match fixed {
            Some((pin, version)) if pin == member => vec![version.clone()],
            _ if fixed.is_some() => {
                let mut options = vec![offer.currents[member].clone()];
                options.extend(offer.available[member].iter().cloned());
                options
            }
            _ => {
                let mut options = offer.available[member].clone();
                options.push(offer.currents[member].clone());
                options
            }
        })
        .collect()
}

/// Moves the odometer `digits` over `options` one step: the last digit advances and carries
/// leftwards. `false` once the first digit runs over (every combination was tried).
fn advance(digits: &mut [usize], options: &[Vec<Version>]) -> bool {
    let mut at = digits.len();
    loop {
        if at == 0 {
            return false;
        }
        at -= 1;
        digits[at] += 1;
        if digits[at] < options[at].len() {
            return true;
        }
        digits[at] = 0;
    }
}

pub fn plan(
    pins: &Pins,
    offer: &mut VersionOffer,
    upstream: &Upstream<'_>,
    fixed: Option<(&PinName, &Version)>,
    forced: bool,
) -> GroupPlan {
    let members = offer.members.clone();
    let options = member_options(offer, fixed);
    let yanked = if fixed.is_some() {
        YankedFiles::Allowed
    } else {
        YankedFiles::Refused
    };
    let acceptable = |refusals: &[VersionRefusal]| {
        refusals.is_empty() || forced && refusals.iter().all(VersionRefusal::forceable)
    };
    // An odometer over the options, the first member the slowest digit: the first combination
    // nothing refuses is the newest for the earlier members.
    let mut digits = vec![0usize; members.len()];
    let mut chosen: Option<Vec<(PinName, Version)>> = None;
    loop {
        let combination: Vec<(PinName, Version)> = members
            .iter()
            .zip(&digits)
            .zip(&options)
            .map(|((member, digit), options)| (member.clone(), options[*digit].clone()))
            .collect();
        let changes = combination
            .iter()
            .any(|(member, version)| offer.currents.get(member) != Some(version));
        if changes {
            for (member, version) in &combination {
                offer.learn_member(member, version, upstream);
            }
            if acceptable(&refusals(pins, offer, &combination, yanked)) {
                chosen = Some(combination);
                break;
            }
        }
        if !advance(&mut digits, &options) {
            break;
        }
    }
    let stay: Vec<(PinName, Version)> = members
        .iter()
        .map(|member| match fixed {
            Some((pin, version)) if pin == member => (member.clone(), version.clone()),
            _ => (member.clone(), offer.currents[member].clone()),
        })
        .collect();
    let refused = match (&chosen, fixed) {
        (None, Some(_)) => refusals(pins, offer, &stay, yanked),
        _ => Vec::new(),
    };
    let landing = chosen.unwrap_or_else(|| {
        members
            .iter()
            .map(|member| (member.clone(), offer.currents[member].clone()))
            .collect()
    });
    let members = landing
        .iter()
        .map(|(member, to)| explain(pins, offer, upstream, &landing, member, to))
        .collect();
    GroupPlan {
        group: match &pins.pins[&offer.pin].group {
            Some(group) if offer.grouped => format!("group {group}"),
            _ => format!("the move of {}", offer.pin),
        },
        members,
        refused,
    }
}

/// Why `member` lands on `to` with the rest of `landing`: what refuses each newer version, and
/// what would refuse its current one.
fn explain(
    pins: &Pins,
    offer: &mut VersionOffer,
    upstream: &Upstream<'_>,
    landing: &[(PinName, Version)],
    member: &PinName,
    to: &Version,
) -> MemberPlan {
    let with = |version: &Version| -> Vec<(PinName, Version)> {
        landing
            .iter()
            .map(|(other, at)| {
                if other == member {
                    (other.clone(), version.clone())
                } else {
                    (other.clone(), at.clone())
                }
            })
            .collect()
    };
    let current = offer.currents[member].clone();
    let newer: Vec<Version> = offer.available[member]
        .iter()
        .filter(|version| version.pep440() > to.pep440())
        .cloned()
        .collect();
    let mut held = Vec::new();
    for version in &newer {
        offer.learn_member(member, version, upstream);
        held.push(Candidate {
            version: version.clone(),
            refusals: refusals(pins, offer, &with(version), YankedFiles::Refused),
        });
    }
    let forced_by = if *to == current {
        Vec::new()
    } else {
        refusals(pins, offer, &with(&current), YankedFiles::Refused)
            .into_iter()
            .filter(|refusal| matches!(refusal, VersionRefusal::Requires { .. }))
            .collect()
    };
    MemberPlan {
        pin: member.clone(),
        current,
        to: to.clone(),
        newest: offer.available[member].first().cloned(),
        held,
        forced_by,
    }
}

/// The group's move to the newest versions that fit together, or `None` when it stays.
pub(super) fn plan_newest(
    recipe: &Recipe,
    pin: &Pin,
    offer: &mut VersionOffer,
    upstream: &Upstream<'_>,
    printer: &Printer,
) -> anyhow::Result<Option<Move>> {
    let plan = plan(&recipe.pins, offer, upstream, None, false);
    say_why(&plan, printer);
    if plan.moves().is_empty() {
        let member = plan.member(&pin.name).expect("the pin is a member");
        printer.status(
            "Fresh",
            format_args!(
                "{} is at {}, the newest allowed version; {} stays where it is{}",
                pin.name,
                member.current,
                plan.group,
                if plan.members.iter().any(|member| member.newest.is_some()) {
                    " (`forge pin outdated` says what holds each newer version back)"
                } else {
                    ""
                }
            ),
        );
        return Ok(None);
    }
    super::report_from_base(offer, &plan.moves(), printer);
    Ok(Some(group_move(&recipe.pins, offer, &plan, None)?))
}

/// The group's move with `pin` at `version` (`--to`): the others stay where they can, else move
/// to the newest version that fits; refused when none does.
pub(super) fn plan_to(
    recipe: &Recipe,
    pin: &Pin,
    offer: &mut VersionOffer,
    version: &Version,
    options: &PinBumpOptions,
    upstream: &Upstream<'_>,
    printer: &Printer,
) -> anyhow::Result<Option<Move>> {
    let force = options.constraints == Constraints::Force;
    let plan = plan(
        &recipe.pins,
        offer,
        upstream,
        Some((&pin.name, version)),
        force,
    );
    if !plan.refused.is_empty() {
        let refusals: Vec<&VersionRefusal> = plan.refused.iter().collect();
        return Err(refused(&pin.name, version, &refusals).into());
    }
    say_why(&plan, printer);
    // `--to` where the pin stands records the files its index offers there.
    let planned = group_move(&recipe.pins, offer, &plan, Some(&pin.name))?;
    if planned.assignments.is_empty() {
        printer.status(
            "Fresh",
            format_args!("{} is already at {version}", pin.name),
        );
        return Ok(None);
    }
    super::report_from_base(offer, &plan.moves(), printer);
    Ok(Some(planned))
}

/// Says, for each member but the ones that simply move to their newest version, why it lands
/// where it does.
fn say_why(plan: &GroupPlan, printer: &Printer) {
    for member in &plan.members {
        if member.moves() {
            if !member.forced_by.is_empty() {
                printer.status(
                    "Moving",
                    format_args!(
                        "{} {} -> {} with {}: {}",
                        member.pin,
                        member.current,
                        member.to,
                        plan.group,
                        join(&member.forced_by)
                    ),
                );
            }
        } else if !member.held.is_empty() {
            printer.status(
                "Keeping",
                format_args!(
                    "{} at {} in {}: {}",
                    member.pin,
                    member.current,
                    plan.group,
                    held_back(member)
                ),
            );
        }
    }
}

/// The versions above where `member` lands, one clause per reason with the versions it holds
/// back: `0.1.12: denied ...; 0.1.15.post2, 0.1.13.post3: tilelang 0.1.15 requires ...`.
pub fn held_back(member: &MemberPlan) -> String {
    let mut reasons: Vec<(String, Vec<String>)> = Vec::new();
    for Candidate { version, refusals } in &member.held {
        let text = if refusals.is_empty() {
            "allowed alone, but not with the rest of the move".to_owned()
        } else {
            refusals
                .iter()
                .map(VersionRefusal::held_by)
                .collect::<Vec<_>>()
                .join("; ")
        };
        match reasons.iter_mut().find(|(reason, _)| *reason == text) {
            Some((_, versions)) => versions.push(version.to_string()),
            None => reasons.push((text, vec![version.to_string()])),
        }
    }
    reasons
        .iter()
        .map(|(reason, versions)| format!("{}: {reason}", versions.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The group's move: each moving member's version and the files it records there, and the
/// files of `named` (the pin `--to` names) where it lands even when it stays.
fn group_move(
    pins: &Pins,
    offer: &VersionOffer,
    plan: &GroupPlan,
    named: Option<&PinName>,
) -> Result<Move, CheckFailed> {
    let mut assignments = Vec::new();
    for member in &plan.members {
        if member.moves() {
            assignments.push(Assignment::new(
                &["pins", member.pin.as_str()],
                "version",
                offer.pin_version(&member.pin, &member.to),
            ));
        }
        if member.moves() || named == Some(&member.pin) {
            assignments.extend(files::assignments(pins, offer, &member.pin, &member.to)?);
        }
    }
    let moves = plan.moves();
    let (first, first_to) = moves
        .first()
        .cloned()
        .or_else(|| {
            let member = plan.member(named?)?;
            Some((member.pin.clone(), member.to.clone()))
        })
        .unwrap_or_else(|| (offer.pin.clone(), offer.current.clone()));
    let parts: Vec<String> = plan
        .members
        .iter()
        .filter(|member| member.pin != first)
        .map(|member| {
            if member.moves() {
                format!(
                    "{} {} -> {}",
                    member.pin,
                    member.current,
                    offer.pin_version(&member.pin, &member.to)
                )
            } else {
                format!("{} stays at {}", member.pin, member.current)
            }
        })
        .collect();
    let from = plan
        .member(&first)
        .map_or_else(|| offer.current.clone(), |member| member.current.clone());
    Ok(Move {
        subject: first.to_string(),
        from: offer.pin_version(&first, &from),
        to: offer.pin_version(&first, &first_to),
        detail: files::detail(
            format!("{}: {}", plan.group, parts.join(", ")),
            &assignments,
        ),
        assignments,
        patches: Vec::new(),
    })
}
