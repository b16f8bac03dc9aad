//! Stages 2 to 4 for one recipe: the recipe in, a `Plan` out, without a daemon.
//!
//! 1. Render the Dockerfile.
//! 2. Apply each patch series to a scratch copy of its target: a recipe folder the Dockerfile
//!    copies is checked out patched into a temporary folder, and a series onto a git pin's
//!    remote hands the patches it applied to that pin's build step.
//! 3. Assemble the context (Dockerfile, shims, overlays with the patched trees standing in for
//!    the folders they patch) and take its digest, and with it the inputs forge.lock records.
//!
//! `forge build` hands the plan to the engine with the labels and build arguments made here;
//! `forge verify-digest` compares the same plan with the record.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context as _;

use crate::context::{self, BuildContext, Exclusions, Generated, Member, Output};
use crate::diagnostics::CheckFailed;
use crate::lock::{self, Inputs, PatchRecord};
use crate::patch::{self, Outcome, PatchTarget, Patched, Series};
use crate::pins::Mutability;
use crate::pins::Onto;
use crate::pins::gate;
use crate::printer::Printer;
use crate::recipe::{Recipe, ResolvedTag};
use crate::render::{self, Dockerfile, REVISION_ARG};
use crate::types::oci::Digest;

/// The label that ties the image to the context it was built from.
const CONTEXT_LABEL: &str = "dev.forge.context.digest";

/// The label that lists the applied patches: original and new commit, author, subject.
const PATCHES_LABEL: &str = "dev.forge.patches";

/// The label naming the authors of the applied patches, from their `From:` headers.
const AUTHORS_LABEL: &str = "dev.forge.patches.authors";

/// The revision build argument's value when the recipe is not in git.
const UNKNOWN_REVISION: &str = "unknown";

/// Everything the build needs, computed without a daemon.
pub struct Plan {
    /// The rendered Dockerfile.
    pub dockerfile: Dockerfile,
    /// The assembled context.
    pub context: BuildContext,
    /// Computed for a build and for `--locked`; a dry run does not re-read the recipe for it.
    pub inputs: Option<Inputs>,
    /// The record of every patch applied, in order.
    pub patches: Vec<PatchRecord>,
    /// The tags the build applies, in pins.toml order.
    pub tags: Vec<ResolvedTag>,
    // The patched trees must outlive the context they are archived into.
    _patched: Vec<tempfile::TempDir>,
}

impl Plan {
    /// The labels forge adds to the image: the context digest, and the patches applied.
    pub fn labels(&self) -> BTreeMap<String, String> {
        let mut labels =
            BTreeMap::from([(CONTEXT_LABEL.to_owned(), self.context.digest.to_string())]);
        if !self.patches.is_empty() {
            let applied: Vec<String> = self.patches.iter().map(PatchRecord::summary).collect();
            labels.insert(PATCHES_LABEL.to_owned(), applied.join("; "));
            // Each author once, in the order the series applied them, as their `From:` said.
            let mut authors: Vec<&str> = Vec::new();
            for patch in &self.patches {
                if !authors.contains(&patch.author.as_str()) {
                    authors.push(&patch.author);
                }
            }
            labels.insert(AUTHORS_LABEL.to_owned(), authors.join("; "));
        }
        labels
    }
}

/// `forge build --dry-run`'s answer: the digests, the inputs, the patches, what the build would
/// pass to the engine, and the tags; as text, the digests, patches and tags in a labelled list.
#[derive(Debug, serde::Serialize)]
pub struct PlanDocument<'a> {
    dry_run: bool,
    dockerfile_digest: Digest,
    context_digest: &'a Digest,
    context_size: u64,
    context_entries: usize,
    inputs: Option<&'a crate::lock::Inputs>,
    patches: Vec<PatchEntry<'a>>,
    build_args: BTreeMap<String, String>,
    labels: BTreeMap<String, String>,
    image: PlannedImage<'a>,
}

/// The image a plan tags.
#[derive(Debug, serde::Serialize)]
struct PlannedImage<'a> {
    repository: &'a str,
    tags: Vec<PlannedTag<'a>>,
}

/// A tag a plan puts on the image.
#[derive(Debug, serde::Serialize)]
struct PlannedTag<'a> {
    tag: &'a str,
    mutability: Mutability,
}

impl Plan {
    /// The plan as `--dry-run` prints it.
    pub fn document<'a>(&'a self, recipe: &'a Recipe) -> PlanDocument<'a> {
        PlanDocument {
            dry_run: true,
            dockerfile_digest: self.dockerfile.digest(),
            context_digest: &self.context.digest,
            context_size: self.context.size,
            context_entries: self.context.entries,
            inputs: self.inputs.as_ref(),
            patches: patch_entries(&self.patches),
            build_args: build_args(recipe, revision(&recipe.root).as_deref()),
            labels: self.labels(),
            image: PlannedImage {
                repository: recipe.pins.image.repository.as_str(),
                tags: self
                    .tags
                    .iter()
                    .map(|tag| PlannedTag {
                        tag: tag.tag.as_str(),
                        mutability: tag.mutability,
                    })
                    .collect(),
            },
        }
    }
}

/// The build arguments: pins.toml's, and the recipe's revision (`revision`, `None` outside
/// git).
pub fn build_args(recipe: &Recipe, revision: Option<&str>) -> BTreeMap<String, String> {
    let mut args: BTreeMap<String, String> = recipe
        .pins
        .args
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect();
    args.insert(
        REVISION_ARG.to_owned(),
        revision.unwrap_or(UNKNOWN_REVISION).to_owned(),
    );
    args
}

/// The recipe repository's `HEAD` commit, for the revision label; `None` outside git.
pub fn revision(root: &Path) -> Option<String> {
    let repository = git2::Repository::discover(root).ok()?;
    let commit = repository
        .head()
        .and_then(|head| head.peel_to_commit())
        .ok()?;
    Some(commit.id().to_string())
}

/// Renders, patches and assembles the context of `recipe`, assembled into `output`; with
/// `with_inputs`, also the inputs forge.lock records. Context entries carry `mtime`, else
/// `SOURCE_DATE_EPOCH`, else 0.
pub fn plan(
    recipe: &Recipe,
    output: Output,
    with_inputs: bool,
    mtime: Option<u64>,
    printer: &Printer,
) -> anyhow::Result<Plan> {
    let dockerfile = render::dockerfile(recipe)?;
    printer.status(
        "Rendered",
        format_args!("Dockerfile {}", dockerfile.digest()),
    );
    for warning in render::unhashed_warnings(recipe) {
        printer.warn(warning);
    }
    wheels_load_on_the_base(recipe)?;

    let trees = patched_trees(recipe, printer)?;
    let mut members: Vec<Member> = recipe
        .copied_paths()
        .into_iter()
        .map(|path| Member {
            at: path.to_owned(),
            from: recipe.files.join(path),
        })
        .collect();
    members.extend(trees.members);

    let exclusions = Exclusions::load(&recipe.files)?;
    let mtime = match mtime {
        Some(mtime) => mtime,
        None => context::mtime_from_environment()?,
    };
    let context = context::assemble(
        context::Inputs {
            dockerfile: dockerfile.as_str(),
            members: &members,
            generated: &trees.series,
            exclusions: &exclusions,
            allowed_secrets: &recipe.pins.context.allow_secrets,
            mtime,
        },
        output,
    )?;
    printer.status(
        "Assembled",
        format_args!(
            "context {} ({} entries, {})",
            context.digest,
            context.entries,
            human_size(context.size)
        ),
    );
    let inputs = if with_inputs {
        Some(Inputs::of(recipe, &dockerfile, &context, mtime)?)
    } else {
        None
    };
    Ok(Plan {
        dockerfile,
        context,
        inputs,
        patches: trees.records,
        tags: recipe.tags(),
        _patched: trees.folders,
    })
}

/// What the patch stage hands the context: patched trees standing in for recipe folders, the
/// patches applied to git pins, the record of every patch, and the folders to keep meanwhile.
struct PatchedTrees {
    members: Vec<Member>,
    series: Vec<Generated>,
    records: Vec<PatchRecord>,
    folders: Vec<tempfile::TempDir>,
}

/// Applies each `[[patches]]` series to a scratch copy of its target. A recipe folder inside an
/// overlay is checked out patched into a temporary folder, which stands in for it in the
/// context; a series onto a git pin's remote puts the patches it applied into the context for
/// the pin's build step. Every series is applied and recorded.
fn patched_trees(recipe: &Recipe, printer: &Printer) -> anyhow::Result<PatchedTrees> {
    let mut trees = PatchedTrees {
        members: Vec::new(),
        series: Vec::new(),
        records: Vec::new(),
        folders: Vec::new(),
    };
    let folder = crate::fs::Confined::new(&recipe.files)?;
    for entry in &recipe.pins.patches {
        let series_path = crate::fs::in_folder(&recipe.files, entry.series.as_str());
        let series = Series::read(std::slice::from_ref(&series_path), Some(&folder))?;
        let target = PatchTarget::from_onto(&entry.onto, &recipe.files);
        let patched = patch::patched_tree(&target, &series, patch::Mode::Write)?;
        let count = patched.applied.count(patch::Status::Applied);
        printer.status(
            "Patched",
            format_args!(
                "{} onto {} ({count} applied, {} already there)",
                entry.series,
                target,
                patched.applied.count(patch::Status::AlreadyApplied)
            ),
        );
        trees
            .records
            .extend(patched.applied.patches.iter().map(|result| {
                PatchRecord {
                    file: result
                        .file
                        .strip_prefix(&recipe.files)
                        .unwrap_or(&result.file)
                        .to_string_lossy()
                        .into_owned(),
                    original: result.original_id.map(|id| id.to_string()),
                    applied: match &result.outcome {
                        Outcome::Applied { new_id } => Some(new_id.to_string()),
                        _ => None,
                    },
                    author: result.author.identity(),
                    subject: result.subject.clone(),
                }
            }));
        // A series onto a git pin's remote reaches the image through that pin's build step,
        // which applies these mails onto the same commit.
        if let Some(pin) = &entry.pin {
            trees.series.push(Generated {
                at: gate::series_context_folder(pin.as_str()),
                files: patched.applied_mails()?,
            });
        }
        if let Onto::Folder(folder) = &entry.onto
            && recipe.copies_folder(folder.as_str())
        {
            let checkout = check_out(
                &patched,
                &crate::fs::in_folder(&recipe.files, folder.as_str()),
                folder.as_str(),
            )?;
            trees.members.push(Member {
                at: folder.to_string(),
                from: checkout.path().to_owned(),
            });
            trees.members.extend(left_out_by_git(
                &crate::fs::in_folder(&recipe.files, folder.as_str()),
                checkout.path(),
                folder.as_str(),
            )?);
            trees.folders.push(checkout);
        }
    }
    Ok(trees)
}

/// What a git tree cannot hold but docker would send of the recipe folder `original` (at `at`
/// in the context): the `.git` entries and the empty folders that its patched checkout
/// `checkout` lacks, as members of their own.
fn left_out_by_git(original: &Path, checkout: &Path, at: &str) -> anyhow::Result<Vec<Member>> {
    let mut members = Vec::new();
    let mut folders = vec![(original.to_owned(), String::new())];
    while let Some((folder, relative)) = folders.pop() {
        let entries = std::fs::read_dir(&folder)
            .with_context(|| format!("cannot read {}", folder.display()))?;
        let mut empty = true;
        for entry in entries {
            let entry = entry.with_context(|| format!("cannot read {}", folder.display()))?;
            empty = false;
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            let child = if relative.is_empty() {
                name.clone()
            } else {
                format!("{relative}/{name}")
            };
            let is_folder =
                std::fs::symlink_metadata(&path).is_ok_and(|metadata| metadata.is_dir());
            if crate::fs::is_git_entry(&entry.file_name()) {
                members.push(Member {
                    at: format!("{at}/{child}"),
                    from: path,
                });
            } else if is_folder {
                folders.push((path, child));
            }
        }
        if empty && !relative.is_empty() && checkout.join(&relative).symlink_metadata().is_err() {
            members.push(Member {
                at: format!("{at}/{relative}"),
                from: folder,
            });
        }
    }
    Ok(members)
}

/// Checks the patched tree of the recipe folder `folder` (on disk at `original`) out into a
/// temporary folder.
fn check_out(
    patched: &Patched,
    original: &Path,
    folder: &str,
) -> anyhow::Result<tempfile::TempDir> {
    let checkout = tempfile::Builder::new()
        .prefix("forge-patched-")
        .tempdir()
        .context("cannot create a folder for the patched tree")?;
    patched
        .check_out(original, checkout.path())
        .with_context(|| format!("cannot check out the patched tree of {folder}"))?;
    Ok(checkout)
}

/// `--locked`: refuses when the inputs `current` of `recipe` differ from those forge.lock
/// records (a build's record, or the inputs `forge lock` wrote).
pub fn check_locked(recipe: &Recipe, current: &Inputs) -> anyhow::Result<()> {
    let path = lock::path(&recipe.root);
    let Some(recorded) = recipe.lock()? else {
        return Err(CheckFailed::new(
            format!("--locked: {} does not exist", path.display()),
            "run `forge lock` to record the recipe's inputs, and commit forge.lock",
        )
        .into());
    };
    let differences = recorded.inputs().differences(current);
    if differences.is_empty() {
        return Ok(());
    }
    let listed: Vec<String> = differences
        .iter()
        .map(|(field, recorded, now)| format!("{field}: recorded {recorded}, now {now}"))
        .collect();
    Err(CheckFailed::new(
        format!(
            "--locked: the inputs no longer match {} ({})",
            path.display(),
            listed.join("; ")
        ),
        "run `forge lock` to record the new inputs (`forge pin bump` does it as it moves a pin), and commit forge.lock",
    )
    .into())
}

/// A patch applied, as `forge build --json` lists it (every field, `null` when absent).
#[derive(Debug, serde::Serialize)]
pub struct PatchEntry<'a> {
    file: &'a str,
    original: Option<&'a str>,
    applied: Option<&'a str>,
    author: &'a str,
    subject: &'a str,
}

/// The patches applied, as `forge build --json` lists them.
pub fn patch_entries(patches: &[PatchRecord]) -> Vec<PatchEntry<'_>> {
    patches
        .iter()
        .map(|patch| PatchEntry {
            file: &patch.file,
            original: patch.original.as_deref(),
            applied: patch.applied.as_deref(),
            author: &patch.author,
            subject: &patch.subject,
        })
        .collect()
}

/// `bytes` for people: `812 B`, `15.5 KiB`. indicatif's `HumanBytes` prints two decimals
/// (`15.50 KiB`), where forge's messages and documents show one.
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut size = bytes as f64;
    let mut unit = 0;
    while size >= 1024.0 && unit < UNITS.len() - 1 {
        size /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{size:.1} {}", UNITS[unit])
    }
}

/// Refuses a recipe with a wheel that cannot load on the base: one whose manylinux tags need a
/// newer glibc than the one forge.lock records for the base (`verify-digest --contents` reads
/// it). Without a recorded glibc nothing is refused.
pub fn wheels_load_on_the_base(recipe: &Recipe) -> anyhow::Result<()> {
    let glibc = recipe
        .lock()?
        .and_then(|lock| lock.base().and_then(|base| base.glibc.clone()));
    let Some(glibc) = glibc else {
        return Ok(());
    };
    let found = recipe.pins.needing_newer_glibc(&glibc);
    if found.is_empty() {
        return Ok(());
    }
    Err(CheckFailed::new(
        format!(
            "the base runs glibc {glibc} ({}, from `verify-digest --contents`), which cannot load {}",
            lock::LOCK_FILE,
            found.join("; ")
        ),
        "move the pin to a version with a wheel for this glibc (`forge pin bump NAME --to VERSION` records its files), or move the base (`forge pin bump base`, then `forge build` and `forge verify-digest --contents`)",
    )
    .into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_with_one_decimal_in_binary_units() {
        assert_eq!(human_size(812), "812 B");
        assert_eq!(human_size(15_872), "15.5 KiB");
        assert_eq!(human_size(6 * 1024), "6.0 KiB");
        assert_eq!(human_size(3 * 1024 * 1024 + 512 * 1024), "3.5 MiB");
        assert_eq!(human_size(5 * 1024 * 1024 * 1024 * 1024), "5120.0 GiB");
    }
}
