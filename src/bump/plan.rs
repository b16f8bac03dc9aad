//! `forge pin bump NAME [--to VERSION]`: move one pin (or `base`, the base image) to what
//! upstream offers, within the constraints pins.toml records (each kind's plan in its own file:
//! `index`, `download`, `git`, `base`, and `group` for a lockstep group); then `write` rewrites
//! pins.toml with only the moved values changed, re-renders and says which Dockerfile steps the
//! move invalidates.

use std::str::FromStr;

use crate::bump::edit::Assignment;
use crate::bump::steps::Invalidated;
use crate::bump::{self, BumpError, Prereleases, Sources, Upstream};
use crate::patch::Applied;
use crate::pins::Moves;
use crate::pins::{self, Pin};
use crate::printer::{Document, Printer};
use crate::recipe::Recipe;
use crate::types::recipe::PinName;

use super::index::plan_version;
use super::{base, download, git, write};

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

/// A planned move: what changes, described for people.
pub(crate) struct Move {
    pub(super) subject: String,
    pub(super) from: String,
    pub(super) to: String,
    pub(super) detail: String,
    pub(super) assignments: Vec<Assignment>,
    pub(super) patches: Vec<SeriesCheck>,
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
        match pin.moves() {
            Moves::WithTheBase { .. } => {
                return Err(BumpError::InBase {
                    pin: pin.name.clone(),
                    kind: pin.kind(),
                }
                .into());
            }
            Moves::ByCommit(git) => git::plan_git(recipe, pin, git, options, upstream, printer)?,
            Moves::ByDownload(set, url) => {
                download::plan_download(recipe, pin, set, url, options, upstream, printer)?
            }
            Moves::ByIndex => plan_version(recipe, pin, options, upstream, printer)?,
        }
    } else {
        base::plan_base(recipe, options, upstream, printer)?
    };
    let Some(planned) = planned else {
        printer.document(&UpToDate {
            name: options.target.to_string(),
            changed: false,
        });
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

/// A pin already at what upstream offers: the status says it; `--json` prints this.
#[derive(Debug, serde::Serialize)]
struct UpToDate {
    /// The pin, or `base`.
    name: String,
    /// Always false: nothing moved.
    changed: bool,
}

impl Document for UpToDate {}
