//! `pin bump` of a pin in a group that is not lockstep: the group moves as one, each member to
//! its own version (`bump::group`), and the move says why each member lands where it does.

use super::refusing::join;
use super::{Constraints, Move, PinBumpOptions, files, refused};
use crate::bump::edit::Assignment;
use crate::bump::group::{self, GroupPlan, MemberPlan};
use crate::bump::{Candidate, Upstream, VersionOffer, VersionRefusal};
use crate::diagnostics::CheckFailed;
use crate::pins::{Pin, Pins};
use crate::printer::Printer;
use crate::recipe::Recipe;
use crate::types::python::Version;
use crate::types::recipe::PinName;

/// The group's move to the newest versions that fit together, or `None` when it stays.
pub(super) fn plan_newest(
    recipe: &Recipe,
    pin: &Pin,
    offer: &mut VersionOffer,
    upstream: &Upstream<'_>,
    printer: &Printer,
) -> anyhow::Result<Option<Move>> {
    let plan = group::plan(&recipe.pins, offer, upstream, None, false);
    explain(&plan, printer);
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
    let plan = group::plan(
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
    explain(&plan, printer);
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
fn explain(plan: &GroupPlan, printer: &Printer) {
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
