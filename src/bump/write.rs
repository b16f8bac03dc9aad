//! A planned move applied: pins.toml edited in memory, the recipe rendered before and after,
//! both written together with the committed render and, where the recipe has one, forge.lock's
//! inputs (or only shown, in a dry run), and the Dockerfile steps it invalidates reported.

use anyhow::Context as _;
use serde::Serialize;
use serde_json::Value;

use super::{BumpMode, Bumped, Move, PinBumpOptions};
use crate::bump::edit;
use crate::bump::steps::{self, Invalidated};
use crate::context::Output;
use crate::fs::{Written, write_together};
use crate::lock::{self, Lock};
use crate::pins;
use crate::pipeline;
use crate::printer::{ColorChoice, Document, OutputFormat, Printer, Verbosity};
use crate::recipe::Recipe;
use crate::render::{self, Dockerfile};
use crate::types::oci::Digest;

/// pins.toml and the Dockerfile before and after a move.
struct Edited {
    path: std::path::PathBuf,
    new_recipe: Recipe,
    old_text: String,
    new_text: String,
    old_render: Dockerfile,
    new_render: Dockerfile,
}

/// Makes the move's edit of pins.toml in memory and renders the recipe before and after it;
/// nothing is written.
fn edit_recipe(recipe: &Recipe, planned: &Move) -> anyhow::Result<Edited> {
    let path = recipe.pins_path();
    let old_text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let new_text = edit::apply(&old_text, &planned.assignments)
        .with_context(|| format!("cannot edit {}; it was not changed", path.display()))?;
    let new_pins = pins::parse(&path, &new_text).with_context(|| {
        format!(
            "the edited {} would not load; it was not changed",
            path.display()
        )
    })?;
    let new_recipe = recipe.clone().with_pins(new_pins);
    let old_render = render::dockerfile(recipe)?;
    let new_render = render::dockerfile(&new_recipe).with_context(|| {
        format!(
            "the bumped recipe does not render; {} was not changed",
            path.display()
        )
    })?;
    Ok(Edited {
        path,
        new_recipe,
        old_text,
        new_text,
        old_render,
        new_render,
    })
}

pub(super) fn apply(
    recipe: &Recipe,
    options: &PinBumpOptions,
    planned: Move,
    printer: &Printer,
) -> anyhow::Result<Bumped> {
    let edited = edit_recipe(recipe, &planned)?;
    let path = &edited.path;
    let invalidated = steps::invalidated(edited.old_render.as_str(), edited.new_render.as_str());
    // A move that only records the files of where the pin stands says so.
    let stays = planned.from == planned.to;
    let verb = match (options.mode, stays) {
        (BumpMode::Write, false) => "Bumping",
        (BumpMode::DryRun, false) => "Would bump",
        (BumpMode::Write, true) => "Recording",
        (BumpMode::DryRun, true) => "Would record",
    };
    let moved = if stays {
        planned.from.clone()
    } else {
        format!("{} -> {}", planned.from, planned.to)
    };
    printer.status(
        verb,
        format_args!("{} {moved} ({})", planned.subject, planned.detail),
    );
    let pins_diff = unified_diff(&edited.old_text, &edited.new_text, "pins.toml");
    let dockerfile_diff = unified_diff(
        edited.old_render.as_str(),
        edited.new_render.as_str(),
        "Dockerfile",
    );
    let written = match options.mode {
        BumpMode::Write => {
            let written = write_recipe(recipe, &edited, printer)?;
            let changed: Vec<String> = planned
                .assignments
                .iter()
                .map(ToString::to_string)
                .collect();
            printer.status(
                "Updated",
                format_args!("{}: {}", path.display(), changed.join(", ")),
            );
            Some(written == Written::Changed)
        }
        BumpMode::DryRun => {
            printer.text_part(&pins_diff);
            printer.text_part(&dockerfile_diff);
            None
        }
    };
    printer.status(
        "Rendered",
        format_args!(
            "Dockerfile {} (was {})",
            edited.new_render.digest(),
            edited.old_render.digest()
        ),
    );
    report_invalidated(invalidated.as_ref(), printer);
    if options.mode == BumpMode::DryRun {
        printer.status(
            "Unchanged",
            format_args!("{} (a dry run writes nothing)", path.display()),
        );
    }
    printer.document(&Moved::of(
        options,
        &planned,
        &edited,
        written,
        invalidated.as_ref(),
        [pins_diff, dockerfile_diff],
    ));
    Ok(Bumped::Moved {
        assignments: planned.assignments,
        invalidated,
    })
}

/// Writes pins.toml, the committed render where the recipe declares one, and forge.lock's
/// inputs where the recipe has a forge.lock: all of them or none.
fn write_recipe(recipe: &Recipe, edited: &Edited, printer: &Printer) -> anyhow::Result<Written> {
    let path = &edited.path;
    let mut files: Vec<(std::path::PathBuf, Vec<u8>)> =
        vec![(path.clone(), edited.new_text.clone().into_bytes())];
    if let Some(committed) = &recipe.pins.committed_render {
        files.push((
            crate::fs::in_folder(&recipe.files, committed.as_str()),
            edited.new_render.as_str().as_bytes().to_vec(),
        ));
    }
    let relocked = relocked(recipe, edited)?;
    if let Some(lock) = &relocked {
        files.push((lock::path(&recipe.root), lock.to_text().into_bytes()));
    }
    let staged: Vec<(&std::path::Path, &[u8])> = files
        .iter()
        .map(|(path, bytes)| (path.as_path(), bytes.as_slice()))
        .collect();
    let written = write_together(&staged).map_err(|source| WriteTogetherError {
        files: files.iter().map(|(path, _)| path.clone()).collect(),
        source,
    })?;
    recipe.lock_written();
    for ((written_path, _), written) in files.iter().zip(&written).skip(1) {
        if *written != Written::Changed {
            continue;
        }
        if relocked.is_some() && *written_path == lock::path(&recipe.root) {
            printer.status(
                "Locked",
                format_args!("the new inputs in {}", written_path.display()),
            );
        } else {
            printer.status(
                "Updated",
                format_args!(
                    "{} (the committed render, {})",
                    written_path.display(),
                    edited.new_render.digest()
                ),
            );
        }
    }
    Ok(written[0])
}

/// forge.lock with the bumped recipe's inputs, when the recipe has a forge.lock: computed as
/// `forge lock` computes them, from the edited pins.toml before anything is written.
fn relocked(recipe: &Recipe, edited: &Edited) -> anyhow::Result<Option<Lock>> {
    let Some(previous) = recipe.lock()?.map(std::sync::Arc::unwrap_or_clone) else {
        return Ok(None);
    };
    // The plan's own status lines and warnings were printed for the move already.
    let quiet = Printer::new(Verbosity::Quiet, OutputFormat::Human, ColorChoice::Never);
    let plan = pipeline::plan(&edited.new_recipe, Output::Discard, true, None, &quiet)
        .with_context(|| {
            format!(
                "cannot compute the inputs {} records for the bumped recipe; nothing was written",
                lock::LOCK_FILE
            )
        })?;
    let mut inputs = plan.inputs.expect("the plan computes the inputs");
    // The plan read pins.toml from the folder, where the edit is not written yet.
    inputs.pins = Digest::from_sha256(&<sha2::Sha256 as sha2::Digest>::digest(
        edited.new_text.as_bytes(),
    ));
    Ok(Some(previous.with_inputs(inputs)))
}

/// pins.toml and the files written with it could not be written together.
#[derive(Debug, thiserror::Error)]
#[error(
    "cannot write {} together with {}; {} was changed",
    files[0].display(),
    files[1..].iter().map(|path| path.display().to_string()).collect::<Vec<_>>().join(" and "),
    if files.len() == 2 { "neither" } else { "none of them" }
)]
pub struct WriteTogetherError {
    files: Vec<std::path::PathBuf>,
    source: std::io::Error,
}

impl crate::diagnostics::Advise for WriteTogetherError {
    fn advice(&self) -> crate::diagnostics::Advice {
        let others: Vec<String> = self
            .files
            .iter()
            .skip(1)
            .map(|path| path.display().to_string())
            .collect();
        crate::diagnostics::Advice::Hint(format!(
            "{} must be {} (`[render] committed` in pins.toml names the render); fix it and run the bump again",
            others.join(" and "),
            if others.len() == 1 {
                "a writable file"
            } else {
                "writable files"
            }
        ))
    }
}

crate::advised!(WriteTogetherError);

/// `pin bump`'s answer for a move: the statuses say it (a dry run's diffs are printed as they
/// come, `Printer::text_part`); `--json` prints this.
#[derive(Debug, Serialize)]
struct Moved<'a> {
    name: String,
    changed: bool,
    from: &'a str,
    to: &'a str,
    assignments: Vec<AssignmentDocument<'a>>,
    written: Option<bool>,
    dockerfile: Change,
    invalidated: Option<&'a Invalidated>,
    patches: Vec<PatchStatus<'a>>,
    pins_diff: String,
    dockerfile_diff: String,
}

/// One value the move writes into pins.toml.
#[derive(Debug, Serialize)]
struct AssignmentDocument<'a> {
    table: String,
    key: &'a str,
    value: Value,
}

/// The rendered Dockerfile's digest before and after the move.
#[derive(Debug, Serialize)]
struct Change {
    before: Digest,
    after: Digest,
}

/// What a moved git pin's series does at the new revision.
#[derive(Debug, Serialize)]
struct PatchStatus<'a> {
    series: &'a str,
    patch: &'a str,
    status: crate::patch::Status,
}

impl<'a> Moved<'a> {
    fn of(
        options: &PinBumpOptions,
        planned: &'a Move,
        edited: &'a Edited,
        written: Option<bool>,
        invalidated: Option<&'a Invalidated>,
        [pins_diff, dockerfile_diff]: [String; 2],
    ) -> Self {
        Moved {
            name: options.target.to_string(),
            changed: true,
            from: &planned.from,
            to: &planned.to,
            assignments: planned
                .assignments
                .iter()
                .map(|assignment| AssignmentDocument {
                    table: assignment.table_path(),
                    key: &assignment.key,
                    value: assignment.value.to_json(),
                })
                .collect(),
            // A dry run writes nothing: `written` is null.
            written,
            dockerfile: Change {
                before: edited.old_render.digest(),
                after: edited.new_render.digest(),
            },
            invalidated,
            patches: planned
                .patches
                .iter()
                .flat_map(|check| {
                    check.applied.patches.iter().map(|result| PatchStatus {
                        series: &check.series,
                        patch: &result.name,
                        status: result.outcome.status(),
                    })
                })
                .collect(),
            pins_diff,
            dockerfile_diff,
        }
    }
}

impl Document for Moved<'_> {}

fn report_invalidated(invalidated: Option<&Invalidated>, printer: &Printer) {
    let Some(invalidated) = invalidated else {
        printer.status(
            "Cached",
            "no Dockerfile instruction changed; a rebuild reuses every step",
        );
        return;
    };
    let first = &invalidated.steps[0];
    printer.status(
        "Invalidated",
        format_args!(
            "{} of {} steps, from step {} (Dockerfile line {}) on:",
            invalidated.steps.len(),
            invalidated.total,
            first.number,
            first.line
        ),
    );
    let mut lines = String::new();
    for step in &invalidated.steps {
        lines.push_str(&format!(
            "{:>12} {:>2}/{}  {}\n",
            "step",
            step.number,
            invalidated.total,
            step.summary(88)
        ));
    }
    printer.stderr(lines);
}

/// A unified diff with `a/` and `b/` headers, empty when the texts are equal.
fn unified_diff(old: &str, new: &str, name: &str) -> String {
    if old == new {
        return String::new();
    }
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{name}"), &format!("b/{name}"))
        .to_string()
}
