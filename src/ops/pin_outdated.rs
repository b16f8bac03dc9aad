//! `forge pin outdated`: every pin with where it stands, the newest version the constraints
//! allow, the newest upstream offers, and why each newer version is not allowed. Being behind
//! is not a failure: the exit status is 0 unless a lookup fails.

use anyhow::Context as _;

use crate::bump::{self, Clients, Prereleases, Sources, Upstream};
use crate::pins::WheelSet;
use crate::pins::{Moves, Pin};
use crate::printer::{Document, Printer};
use crate::recipe::Recipe;

/// Options of `forge pin outdated`.
#[derive(Debug, Clone)]
pub struct PinOutdatedOptions {
    /// Whether pre-releases are on offer.
    pub prereleases: Prereleases,
    /// Where to look beyond what the recipe names.
    pub sources: Sources,
}

/// Where one pin stands against upstream.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Standing {
    /// The pin, or `base`.
    pub name: String,
    /// Its kind (`base` for the base image).
    pub kind: String,
    /// Where it stands.
    pub current: String,
    /// The newest version the constraints allow (the current one when nothing newer is).
    pub newest_allowed: Option<String>,
    /// The newest version upstream offers.
    pub newest: Option<String>,
    /// Where it stands against upstream.
    pub state: State,
    /// Newer versions that are not allowed, each with why.
    pub held: Vec<Held>,
    /// What the lookup said when it failed, or why the pin is not followed.
    pub note: Option<String>,
    /// For a pin in a group: the group's move, one entry per member (those that stay too).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_move: Option<Vec<GroupMember>>,
}

/// Where the move of a group puts one member.
#[derive(Debug, Clone, serde::Serialize)]
pub struct GroupMember {
    /// The pin.
    pub name: String,
    /// Where it stands.
    pub current: String,
    /// Where the move puts it.
    pub to: String,
    /// The requirements its current version would not meet after the move (why it must move).
    pub forced_by: Vec<String>,
}

/// Where a pin stands against upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// Nothing newer.
    UpToDate,
    /// A newer version is allowed.
    Outdated,
    /// Newer versions exist, none allowed.
    Held,
    /// Not looked up: the base without a tag pattern.
    NotFollowed,
    /// Supplied by the base image (an assert pin, `install = false`): moves with the base.
    InBase,
    /// The index yanked the current version (PEP 592).
    Yanked,
    /// The lookup failed.
    Error,
}

impl State {
    /// The word the table shows: `up-to-date`, `outdated`, `held`, `not-followed`, `in-base`,
    /// `yanked`, `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            State::UpToDate => "up-to-date",
            State::Outdated => "outdated",
            State::Held => "held",
            State::NotFollowed => "not-followed",
            State::InBase => "in-base",
            State::Yanked => "yanked",
            State::Error => "error",
        }
    }
}

/// A newer version that is not allowed.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Held {
    /// The version.
    pub version: String,
    /// Why, one entry per constraint.
    pub reasons: Vec<Reason>,
}

/// One constraint that holds a version back.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Reason {
    /// `denied`, `range`, `wheel-set` or `group`.
    pub kind: &'static str,
    /// The reason in words.
    pub message: String,
    /// The reason without the version it holds back, for the grouped notes.
    #[serde(skip)]
    pub summary: String,
}

/// Looks every pin up with the real clients and prints where each stands.
pub fn pin_outdated(
    recipe: &Recipe,
    options: &PinOutdatedOptions,
    printer: &Printer,
) -> anyhow::Result<Vec<Standing>> {
    let clients = Clients::new(recipe, &options.sources)?;
    pin_outdated_with(recipe, options, &clients.upstream(), printer)
}

/// Looks every pin up against `upstream` and prints where each stands.
pub fn pin_outdated_with(
    recipe: &Recipe,
    options: &PinOutdatedOptions,
    upstream: &Upstream<'_>,
    printer: &Printer,
) -> anyhow::Result<Vec<Standing>> {
    let mut standings = vec![base_standing(recipe, upstream)];
    for pin in recipe.pins.pins.values() {
        printer.detail("Checking", &pin.name);
        standings.push(pin_standing(recipe, pin, options, upstream));
    }
    printer.document(&Outdated { pins: &standings });
    let failed: Vec<&str> = standings
        .iter()
        .filter(|standing| standing.state == State::Error)
        .map(|standing| standing.name.as_str())
        .collect();
    if !failed.is_empty() {
        return Err(anyhow::anyhow!(
            "could not look up {} (see the notes above)",
            failed.join(", ")
        ))
        .context("forge pin outdated is incomplete");
    }
    Ok(standings)
}

/// The notes under the table: per pin, one note per kind of reason with the versions it holds
/// back (newest first), then the pin's note, each wrapped to the terminal.
fn notes(standings: &[Standing]) -> String {
    let width = crate::table::width();
    let mut lines = String::new();
    for standing in standings {
        // (kind, versions, summaries), in the order the kinds first appear.
        let mut kinds: Vec<(&str, Vec<&str>, Vec<&str>)> = Vec::new();
        for held in &standing.held {
            for reason in &held.reasons {
                let at = kinds
                    .iter()
                    .position(|(kind, _, _)| *kind == reason.kind)
                    .unwrap_or_else(|| {
                        kinds.push((reason.kind, Vec::new(), Vec::new()));
                        kinds.len() - 1
                    });
                let (_, versions, summaries) = &mut kinds[at];
                if !versions.contains(&held.version.as_str()) {
                    versions.push(&held.version);
                }
                if !summaries.contains(&reason.summary.as_str()) {
                    summaries.push(&reason.summary);
                }
            }
        }
        for (kind, versions, summaries) in kinds {
            let note = format!(
                "{} {}: {} ({kind})",
                standing.name,
                versions.join(", "),
                summaries.join("; ")
            );
            lines.push_str(&crate::table::wrap(&note, width, 2));
        }
        if let Some(note) = &standing.note {
            let note = format!("{}: {note}", standing.name);
            lines.push_str(&crate::table::wrap(&note, width, 2));
        }
    }
    lines
}

fn base_standing(recipe: &Recipe, upstream: &Upstream<'_>) -> Standing {
    let base = &recipe.pins.base;
    let mut standing = Standing {
        name: "base".to_owned(),
        kind: "base".to_owned(),
        current: base.image.to_string(),
        newest_allowed: None,
        newest: None,
        state: State::NotFollowed,
        held: Vec::new(),
        note: None,
        group_move: None,
    };
    let Some(pattern) = &base.tags else {
        standing.note =
            Some("not followed: declare [base] tags = \"PATTERN\" to follow newer tags".to_owned());
        return standing;
    };
    match bump::base_offer(&recipe.pins, upstream, None) {
        Ok(offer) => {
            standing.newest = Some(offer.newest.clone());
            standing.newest_allowed = Some(offer.newest.clone());
            standing.state =
                if offer.newer.is_empty() && base.digest.as_ref() == Some(&offer.digest) {
                    State::UpToDate
                } else {
                    State::Outdated
                };
            if offer.newer.is_empty() && base.digest.as_ref() != Some(&offer.digest) {
                standing.note = Some(format!(
                    "tags matching {pattern}: none newer; digest {} is not recorded yet",
                    offer.digest
                ));
            }
        }
        Err(error) => fail(&mut standing, &error),
    }
    standing
}

/// A version pin's standing from what the index offers it.
fn version_standing(pin: &Pin, offer: &bump::VersionOffer, standing: &mut Standing) {
    let shown = |candidate: &bump::Candidate| offer.pin_version(&pin.name, &candidate.version);
    let newest = offer.newest().map(shown);
    let allowed = offer.newest_allowed().map(shown);
    standing.state = match (&newest, &allowed) {
        (None, _) => State::UpToDate,
        (Some(_), Some(_)) => State::Outdated,
        (Some(_), None) => State::Held,
    };
    if let Some(reason) = &offer.current_yanked {
        standing.state = State::Yanked;
        let reason = if reason.is_empty() {
            "no reason given".to_owned()
        } else {
            reason.clone()
        };
        standing.note = Some(format!(
            "{} is yanked on the index ({reason}): move with `forge pin bump {}`{}",
            standing.current,
            pin.name,
            if allowed.is_some() {
                ""
            } else {
                " once a newer version is allowed"
            }
        ));
    }
    standing.newest = Some(newest.unwrap_or_else(|| standing.current.clone()));
    standing.newest_allowed = Some(allowed.unwrap_or_else(|| standing.current.clone()));
    standing.held = offer
        .newer
        .iter()
        .filter(|candidate| !candidate.allowed())
        .map(|candidate| held(offer, candidate))
        .collect();
}

fn pin_standing(
    recipe: &Recipe,
    pin: &Pin,
    options: &PinOutdatedOptions,
    upstream: &Upstream<'_>,
) -> Standing {
    let mut standing = Standing {
        name: pin.name.to_string(),
        kind: pin.kind().to_string(),
        current: pin.current().to_owned(),
        newest_allowed: None,
        newest: None,
        state: State::UpToDate,
        held: Vec::new(),
        note: None,
        group_move: None,
    };
    match pin.moves() {
        Moves::WithTheBase { asserted } => {
            standing.state = State::InBase;
            standing.note = Some(if asserted {
                "asserted in the base image: moves with `forge pin bump base`".to_owned()
            } else {
                "in the base image (install = false): moves with `forge pin bump base`, never alone"
                    .to_owned()
            });
        }
        Moves::ByCommit(git) => match bump::git_offer(git, upstream) {
            Ok(offer) => {
                standing.newest = Some(offer.head.to_string());
                standing.newest_allowed = Some(offer.head.to_string());
                standing.state = if offer.is_current() {
                    State::UpToDate
                } else {
                    State::Outdated
                };
            }
            Err(error) => fail(&mut standing, &error),
        },
        Moves::ByDownload(set, _) => url_set_standing(pin, set, options, &mut standing),
        Moves::ByIndex => {
            match bump::version_offer(&recipe.pins, pin, upstream, options.prereleases) {
                Ok(mut offer) if pin.group.is_some() && !offer.lockstep => {
                    group_standing(recipe, pin, &mut offer, upstream, &mut standing);
                }
                Ok(offer) => version_standing(pin, &offer, &mut standing),
                Err(error) => fail(&mut standing, &error),
            }
        }
    }
    standing
}

/// A version held back, with its reasons; a requirement another package declares is named
/// with that package's version (`tilelang 0.1.15 requires apache-tvm-ffi<0.1.13,>=0.1.11`).
fn held(offer: &bump::VersionOffer, candidate: &bump::Candidate) -> Held {
    Held {
        version: offer.pin_version(&offer.pin, &candidate.version),
        reasons: candidate
            .refusals
            .iter()
            .map(|refusal| Reason {
                kind: refusal.kind(),
                message: refusal.to_string(),
                summary: match refusal {
                    bump::VersionRefusal::Requires { package, .. }
                        if !offer.packages.iter().any(|own| {
                            own.pin == offer.pin && own.name.normalized() == *package
                        }) =>
                    {
                        refusal.held_by()
                    }
                    _ => refusal.summary(),
                },
            })
            .collect(),
    }
}

/// Where a pin of a group (not lockstep) stands: the group moves as one, each member to its
/// own version, so the pin's row shows where the group's move puts it.
fn group_standing(
    recipe: &Recipe,
    pin: &Pin,
    offer: &mut bump::VersionOffer,
    upstream: &Upstream<'_>,
    standing: &mut Standing,
) {
    let plan = bump::group::plan(&recipe.pins, offer, upstream, None, false);
    let member = plan.member(&pin.name).expect("the pin is a member");
    let newest = member
        .newest
        .as_ref()
        .map(|version| offer.pin_version(&pin.name, version));
    standing.newest = Some(newest.clone().unwrap_or_else(|| standing.current.clone()));
    standing.newest_allowed = Some(offer.pin_version(&pin.name, &member.to));
    standing.state = if member.moves() {
        State::Outdated
    } else if newest.is_some() {
        State::Held
    } else {
        State::UpToDate
    };
    standing.held = member
        .held
        .iter()
        .map(|candidate| held(offer, candidate))
        .collect();
    if let Some(reason) = &offer.current_yanked {
        standing.state = State::Yanked;
        standing.note = Some(format!(
            "{} is yanked on the index ({}): move with `forge pin bump {}`",
            standing.current,
            if reason.is_empty() {
                "no reason given"
            } else {
                reason
            },
            pin.name
        ));
    }
    if !plan.moves().is_empty() && member.moves() {
        let parts: Vec<String> = plan
            .members
            .iter()
            .map(|member| {
                if member.moves() {
                    format!("{} {} -> {}", member.pin, member.current, member.to)
                } else {
                    format!("{} stays at {}", member.pin, member.current)
                }
            })
            .collect();
        standing.note = Some(format!(
            "{} moves as one: {} (`forge pin bump {}`)",
            plan.group,
            parts.join(", "),
            pin.name
        ));
    }
    standing.group_move = Some(
        plan.members
            .iter()
            .map(|member| GroupMember {
                name: member.pin.to_string(),
                current: member.current.to_string(),
                to: offer.pin_version(&member.pin, &member.to),
                forced_by: member.forced_by.iter().map(ToString::to_string).collect(),
            })
            .collect(),
    );
}

/// Where a wheel set downloaded by URL stands: against the releases `releases` lists, or not
/// followed when nothing lists them.
fn url_set_standing(
    pin: &Pin,
    set: &WheelSet,
    options: &PinOutdatedOptions,
    standing: &mut Standing,
) {
    match &set.releases {
        Some(releases) => {
            match bump::download::candidates(pin, set, releases, options.prereleases, true) {
                Ok(listed) => release_standing(&listed.newer, standing),
                Err(error) => fail(standing, &error),
            }
        }
        None => {
            standing.state = State::NotFollowed;
            standing.note = Some(format!(
                "downloaded by URL and no `releases` lists its versions: move with `forge pin bump {} --to VERSION`",
                pin.name
            ));
        }
    }
}

/// Where a wheel set downloaded by URL stands against the project's releases newer than it.
fn release_standing(newer: &[bump::download::ReleaseCandidate], standing: &mut Standing) {
    let newest = newer.first().map(|candidate| candidate.version.to_string());
    let allowed = newer
        .iter()
        .find(|candidate| candidate.refusals.is_empty())
        .map(|candidate| candidate.version.to_string());
    standing.state = match (&newest, &allowed) {
        (None, _) => State::UpToDate,
        (Some(_), Some(_)) => State::Outdated,
        (Some(_), None) => State::Held,
    };
    standing.newest = Some(newest.unwrap_or_else(|| standing.current.clone()));
    standing.newest_allowed = Some(allowed.unwrap_or_else(|| standing.current.clone()));
    standing.held = newer
        .iter()
        .filter(|candidate| !candidate.refusals.is_empty())
        .map(|candidate| Held {
            version: candidate.version.to_string(),
            reasons: candidate
                .refusals
                .iter()
                .map(|(kind, message)| Reason {
                    kind,
                    message: message.clone(),
                    summary: message.clone(),
                })
                .collect(),
        })
        .collect();
}

fn fail(standing: &mut Standing, error: &dyn std::error::Error) {
    standing.state = State::Error;
    standing.note = Some(error.to_string());
}

fn table(standings: &[Standing]) -> String {
    let short = |text: &str| {
        if text.len() == 40 && text.chars().all(|c| c.is_ascii_hexdigit()) {
            text[..7].to_owned()
        } else {
            text.to_owned()
        }
    };
    let rows: Vec<[String; 5]> = standings
        .iter()
        .map(|standing| {
            let dash = || "-".to_owned();
            [
                standing.name.clone(),
                short(&standing.current),
                standing.newest_allowed.as_deref().map_or_else(dash, short),
                standing.newest.as_deref().map_or_else(dash, short),
                standing.state.as_str().to_owned(),
            ]
        })
        .collect();
    crate::table::table(["NAME", "CURRENT", "ALLOWED", "NEWEST", "STATE"], &rows)
}

/// `forge pin outdated`'s answer: where each pin stands, as a table with its notes, or as
/// `{"pins": [...]}`.
#[derive(Debug, serde::Serialize)]
struct Outdated<'a> {
    pins: &'a [Standing],
}

impl Document for Outdated<'_> {
    fn text(&self) -> Option<String> {
        let reasons = notes(self.pins);
        Some(match reasons.is_empty() {
            true => table(self.pins),
            false => format!("{}\n{reasons}", table(self.pins)),
        })
    }
}
