//! `forge patch apply` and `forge patch check`: which series go onto which targets (the command
//! line, else pins.toml's `[[patches]]`), the patch stage for each, and the report.

use std::path::PathBuf;

use anyhow::Context as _;

use crate::diagnostics::CheckFailed;
use crate::patch::{self, Applied, Mode, Outcome, PatchTarget, Series, Status};
use crate::pins::Onto;
use crate::printer::{Document, Printer};
use crate::recipe::Recipe;

/// Options of `forge patch apply|check`.
#[derive(Debug, Clone)]
pub struct PatchOptions {
    /// Apply, or only check.
    pub mode: Mode,
    /// The target repository named on the command line, if any.
    pub onto: Option<PathBuf>,
    /// Series files or folders named on the command line, if any.
    pub series: Vec<PathBuf>,
}

impl PatchOptions {
    /// Whether pins.toml is needed to fill in what the command line leaves out.
    pub fn needs_recipe(&self) -> bool {
        self.onto.is_none() || self.series.is_empty()
    }
}

/// One series and the target it goes onto.
#[derive(Debug, Clone)]
pub struct PatchJob {
    /// The series: files or folders, in order.
    pub series: Vec<PathBuf>,
    /// Where it applies.
    pub target: PatchTarget,
    /// The target as the user named it.
    pub label: String,
    /// For a series pins.toml names, the recipe folder it must resolve inside.
    pub within: Option<crate::fs::Confined>,
}

/// What the command line and pins.toml ask for: with both `--onto` and series, that; otherwise
/// the missing half comes from pins.toml (every `[[patches]]` entry when both are missing).
pub fn patch_jobs(
    recipe: Option<&Recipe>,
    options: &PatchOptions,
) -> anyhow::Result<Vec<PatchJob>> {
    let given_target = options.onto.as_ref().map(|path| {
        let target = if path.is_dir() && !is_repository(path) {
            PatchTarget::Folder(path.clone())
        } else {
            PatchTarget::Repository(path.clone())
        };
        (target, path.display().to_string())
    });
    if let (Some((target, label)), false) = (&given_target, options.series.is_empty()) {
        return Ok(vec![PatchJob {
            series: options.series.clone(),
            target: target.clone(),
            label: label.clone(),
            within: None,
        }]);
    }
    let recipe = recipe.context("forge patch needs pins.toml to know the series or the target")?;
    let entries = &recipe.pins.patches;
    if entries.is_empty() {
        return Err(patch::PatchError::NothingToApply {
            pins: recipe.pins_path(),
        }
        .into());
    }
    let from_pins = |onto: &Onto| {
        let label = match onto {
            Onto::Folder(folder) => folder.to_string(),
            Onto::Git { git, rev } => format!("{git} at {rev}"),
        };
        (PatchTarget::from_onto(onto, &recipe.files), label)
    };
    let within = Some(crate::fs::Confined::new(&recipe.files)?);
    let jobs = match (given_target, options.series.is_empty()) {
        (Some((target, label)), true) => vec![PatchJob {
            series: entries
                .iter()
                .map(|entry| crate::fs::in_folder(&recipe.files, entry.series.as_str()))
                .collect(),
            target,
            label,
            within,
        }],
        (None, false) => {
            let (target, label) = from_pins(&entries[0].onto);
            vec![PatchJob {
                series: options.series.clone(),
                target,
                label,
                within: None,
            }]
        }
        _ => entries
            .iter()
            .map(|entry| {
                let (target, label) = from_pins(&entry.onto);
                PatchJob {
                    series: vec![crate::fs::in_folder(&recipe.files, entry.series.as_str())],
                    target,
                    label,
                    within: within.clone(),
                }
            })
            .collect(),
    };
    Ok(jobs)
}

/// The closing line of one job: what applied, and where.
fn summarise(job: &PatchJob, applied: &Applied, mode: Mode, printer: &Printer) {
    let conflicts = applied.count(Status::Conflicts);
    match (mode, &job.target) {
        // A scratch repository was patched; the folder or remote it was made from is not.
        (Mode::Write, PatchTarget::Folder(_) | PatchTarget::Git { .. }) => printer.status(
            "Checked",
            format_args!(
                "{}: {} apply, {} already applied, in a scratch copy (tree {}); the source is unchanged, `forge build` applies the series in its own copy",
                job.label,
                applied.count(Status::Applied),
                applied.count(Status::AlreadyApplied),
                short(applied.tree),
            ),
        ),
        (Mode::Write, PatchTarget::Repository(_)) => printer.status(
            "Patched",
            format_args!(
                "{}: {} applied, {} already applied; head {}, tree {}",
                job.label,
                applied.count(Status::Applied),
                applied.count(Status::AlreadyApplied),
                short(applied.head),
                short(applied.tree),
            ),
        ),
        (Mode::Check, _) => printer.status(
            "Checked",
            format_args!(
                "{}: {} apply, {} already applied, {conflicts} conflict{}",
                job.label,
                applied.count(Status::Applies),
                applied.count(Status::AlreadyApplied),
                if conflicts == 1 { "" } else { "s" },
            ),
        ),
    }
}

/// One target of the `--json` document.
/// One target as `forge patch --json` prints it.
#[derive(Debug, serde::Serialize)]
struct TargetDocument<'a> {
    onto: &'a str,
    kind: &'static str,
    base: String,
    head: Option<String>,
    tree: Option<String>,
    patches: Vec<patch::PatchDocument<'a>>,
}

impl<'a> TargetDocument<'a> {
    fn of(job: &'a PatchJob, applied: &'a Applied, mode: Mode) -> Self {
        TargetDocument {
            onto: &job.label,
            kind: match job.target {
                PatchTarget::Repository(_) => "repository",
                PatchTarget::Folder(_) => "folder",
                PatchTarget::Git { .. } => "git",
            },
            base: applied.base.to_string(),
            // A check keeps no commit: its head and tree are what an apply would give, when
            // nothing conflicts (committer times aside).
            head: (mode == Mode::Write && matches!(job.target, PatchTarget::Repository(_)))
                .then(|| applied.head.to_string()),
            tree: (!applied.has_conflicts()).then(|| applied.tree.to_string()),
            patches: applied
                .patches
                .iter()
                .map(patch::PatchResult::document)
                .collect(),
        }
    }
}

/// `forge patch`'s answer: the statuses and the patch table say it; `--json` prints this.
#[derive(Debug, serde::Serialize)]
struct Patched<'a> {
    mode: &'static str,
    targets: Vec<TargetDocument<'a>>,
}

impl Document for Patched<'_> {}

/// Applies (or checks) each job's series onto its target and reports every patch. A conflict
/// is an error in `Mode::Write` (nothing changed) and a failed check in `Mode::Check`.
pub fn patch(
    recipe: Option<&Recipe>,
    options: &PatchOptions,
    printer: &Printer,
) -> anyhow::Result<Vec<Applied>> {
    let jobs = patch_jobs(recipe, options)?;
    let mut reports = Vec::new();
    for job in &jobs {
        let series = Series::read(&job.series, job.within.as_ref())?;
        let count = series.patches.len();
        let verb = match options.mode {
            Mode::Write => "Applying",
            Mode::Check => "Checking",
        };
        printer.status(
            verb,
            format_args!(
                "{count} patch{} onto {}",
                if count == 1 { "" } else { "es" },
                describe(&job.target, &job.label)
            ),
        );
        let applied = run_job(job, &series, options.mode, printer).with_context(|| {
            format!(
                "cannot apply {} onto {}; nothing was changed",
                job.series
                    .iter()
                    .map(|path| path.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                job.label
            )
        })?;
        report(printer, &applied);
        summarise(job, &applied, options.mode, printer);
        reports.push(applied);
    }
    printer.document(&Patched {
        mode: match options.mode {
            Mode::Write => "apply",
            Mode::Check => "check",
        },
        targets: jobs
            .iter()
            .zip(&reports)
            .map(|(job, applied)| TargetDocument::of(job, applied, options.mode))
            .collect(),
    });
    let conflicts: usize = reports
        .iter()
        .map(|applied| applied.count(Status::Conflicts))
        .sum();
    if conflicts > 0 {
        let total: usize = reports.iter().map(|applied| applied.patches.len()).sum();
        return Err(CheckFailed::new(
            format!("{conflicts} of {total} patches conflict with their target"),
            "rebase the series onto the target (`git rebase`, then `git format-patch --binary`), or fix the target",
        )
        .into());
    }
    Ok(reports)
}

fn run_job(
    job: &PatchJob,
    series: &Series,
    mode: Mode,
    printer: &Printer,
) -> anyhow::Result<Applied> {
    Ok(match &job.target {
        PatchTarget::Repository(path) => {
            let repository = git2::Repository::open(path).map_err(patch::PatchError::git(
                format!("{} is not a git repository", path.display()),
            ))?;
            if mode == Mode::Write
                && let Some(head) = patch::intent::settle(&repository)?
            {
                printer.status(
                    "Recovered",
                    format_args!(
                        "finished the interrupted apply onto {}: HEAD at {}",
                        job.label,
                        short(head)
                    ),
                );
            }
            patch::apply(series, &repository, mode)?
        }
        target => patch::patched_tree(target, series, mode)?.applied,
    })
}

/// Whether `path` holds a git repository (a worktree with `.git`, or a bare one), judged by
/// its files: opening it with libgit2 reads its configuration and packs, which is wasted here.
fn is_repository(path: &std::path::Path) -> bool {
    path.join(".git").exists() || (path.join("HEAD").is_file() && path.join("objects").is_dir())
}

fn describe(target: &PatchTarget, label: &str) -> String {
    match target {
        PatchTarget::Repository(_) => label.to_owned(),
        PatchTarget::Folder(_) => format!("{label} (a scratch repository of the folder)"),
        PatchTarget::Git { .. } => format!("{label} (a scratch repository from the git cache)"),
    }
}

fn report(printer: &Printer, applied: &Applied) {
    for result in &applied.patches {
        let author = result.author.identity();
        match &result.outcome {
            Outcome::Applied { new_id } => printer.status(
                "Applied",
                format_args!("{} ({author}) as {}", result.name, short(*new_id)),
            ),
            Outcome::Applies => {
                printer.status("Applies", format_args!("{} ({author})", result.name))
            }
            Outcome::AlreadyApplied { by } => printer.status(
                "Skipped",
                format_args!(
                    "{}: already applied{}",
                    result.name,
                    by.map(|id| format!(" as {}", short(id)))
                        .unwrap_or_default()
                ),
            ),
            Outcome::Conflict { file, hunk } => {
                printer.error(format_args!("{} conflicts: {file}: {hunk}", result.name))
            }
        }
    }
}

fn short(id: git2::Oid) -> String {
    id.to_string()[..12].to_owned()
}
