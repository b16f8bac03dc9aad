//! `pin bump` of a git pin: what its remote offers (the head of its branch), and the move to it
//! or to a revision `--to` names (resolved on the branch), with every patch series that applies
//! onto it checked at the new revision.

use std::str::FromStr;

use anyhow::Context as _;

use crate::bump::{self, BumpError};
use crate::diagnostics::CheckFailed;
use crate::patch::{self, Outcome, PatchTarget, Series};
use crate::pins::{GitSource, Onto, Pin};
use crate::printer::Printer;
use crate::recipe::Recipe;
use crate::types::git::GitRev;
use crate::types::recipe::RecipePath;
use crate::types::url::Url;

use super::edit::Assignment;
use super::offer::OfferError;
use super::upstream::Upstream;
use super::{Constraints, Move, PinBumpOptions, SeriesCheck};

/// What a git remote offers a git pin.
#[derive(Debug, Clone)]
pub struct GitOffer {
    /// Where the pin stands.
    pub current: GitRev,
    /// The head of its branch (or the remote's HEAD), full 40-hex.
    pub head: GitRev,
}

impl GitOffer {
    /// Whether the pin already names the head (a short revision that prefixes it counts as
    /// behind, since it is not yet the full id).
    pub fn is_current(&self) -> bool {
        self.current == self.head
    }
}

/// What the remote offers a git pin.
pub fn git_offer(git: &GitSource, upstream: &Upstream<'_>) -> Result<GitOffer, OfferError> {
    Ok(GitOffer {
        current: git.rev.clone(),
        head: upstream.git.head(&git.url, git.branch.as_ref())?,
    })
}

/// Refuses the move to `target` when a series checked there conflicts, unless `--force`
/// (then it warns, naming each conflict).
fn refuse_conflicts(
    pin: &Pin,
    target: &GitRev,
    checks: &[SeriesCheck],
    options: &PinBumpOptions,
    printer: &Printer,
) -> anyhow::Result<()> {
    let conflicts: Vec<String> = checks
        .iter()
        .flat_map(|check| {
            check
                .applied
                .patches
                .iter()
                .filter_map(move |result| match &result.outcome {
                    Outcome::Conflict { file, hunk } => {
                        Some(format!("{}/{} ({file}: {hunk})", check.series, result.name))
                    }
                    _ => None,
                })
        })
        .collect();
    if conflicts.is_empty() {
        return Ok(());
    }
    if options.constraints == Constraints::Force {
        printer.warn(format_args!(
            "--force: moving {} to {} although these patches conflict there: {}",
            pin.name,
            target.short(),
            conflicts.join(", ")
        ));
        return Ok(());
    }
    Err(CheckFailed::new(
        format!(
            "refusing to move {} to {}: its patch series would not apply there: {}",
            pin.name,
            target.short(),
            conflicts.join(", ")
        ),
        "rebase the series onto the new revision (`forge patch check` shows each hunk), or pass --force to move anyway",
    )
    .into())
}

pub(super) fn plan_git(
    recipe: &Recipe,
    pin: &Pin,
    git: &GitSource,
    options: &PinBumpOptions,
    upstream: &Upstream<'_>,
    printer: &Printer,
) -> anyhow::Result<Option<Move>> {
    let GitSource { url, branch, rev } = git;
    let context = || {
        format!(
            "cannot look up {} on {}; pins.toml was not changed",
            pin.name,
            crate::redact::Redacted(url.as_str())
        )
    };
    let target: GitRev = match &options.to {
        Some(text) => {
            GitRev::from_str(text).map_err(|error| BumpError::InvalidTarget {
                value: text.clone(),
                message: error.to_string(),
            })?;
            upstream
                .git
                .resolve(url, branch.as_ref(), text)
                .with_context(context)?
        }
        None => bump::git_offer(git, upstream).with_context(context)?.head,
    };
    if &target == rev {
        printer.status(
            "Fresh",
            format_args!("{} is at {target}, the head of its branch", pin.name),
        );
        return Ok(None);
    }
    let mut assignments = vec![Assignment::new(
        &["pins", pin.name.as_str()],
        "rev",
        target.as_str(),
    )];
    let mut checks = Vec::new();
    for (index, entry) in recipe.pins.patches.iter().enumerate() {
        let Onto::Git { git, .. } = &entry.onto else {
            continue;
        };
        if !git.same_repository(url) {
            continue;
        }
        let check = check_series(recipe, &entry.series, git, &target, printer)?;
        assignments.push(Assignment::in_array(
            "patches",
            index,
            &["onto"],
            "rev",
            target.as_str(),
        ));
        checks.push(check);
    }
    refuse_conflicts(pin, &target, &checks, options, printer)?;
    Ok(Some(Move {
        subject: pin.name.to_string(),
        from: rev.short().to_owned(),
        to: target.short().to_owned(),
        detail: format!(
            "{}, recorded as {target}",
            branch.as_ref().map_or("HEAD", |branch| branch.as_str()),
        ),
        assignments,
        patches: checks,
    }))
}

/// Checks the series at `series` onto `url` at `revision`, printing each patch's outcome.
fn check_series(
    recipe: &Recipe,
    series: &RecipePath,
    url: &Url,
    revision: &GitRev,
    printer: &Printer,
) -> anyhow::Result<SeriesCheck> {
    let folder = crate::fs::Confined::new(&recipe.files)?;
    let patches = Series::read(
        &[crate::fs::in_folder(&recipe.files, series.as_str())],
        Some(&folder),
    )?;
    let target = PatchTarget::Git {
        url: url.clone(),
        rev: revision.clone(),
    };
    printer.status(
        "Checking",
        format_args!(
            "{series} ({} patches) onto {url} at {}",
            patches.patches.len(),
            revision.short()
        ),
    );
    let patched =
        patch::patched_tree(&target, &patches, patch::Mode::Check).with_context(|| {
            format!(
                "cannot check {series} onto {}; pins.toml was not changed",
                revision.short()
            )
        })?;
    for result in &patched.applied.patches {
        let (verb, note) = match &result.outcome {
            Outcome::Applies | Outcome::Applied { .. } => ("Applies", String::new()),
            Outcome::AlreadyApplied { .. } => {
                ("Upstream", " (already in the new revision)".to_owned())
            }
            Outcome::Conflict { file, hunk } => ("Conflicts", format!(" ({file}: {hunk})")),
        };
        printer.status(verb, format_args!("{}{note}", result.name));
    }
    Ok(SeriesCheck {
        series: series.to_string(),
        applied: patched.applied,
    })
}
