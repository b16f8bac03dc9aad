//! `forge build`: the whole pipeline.
//!
//! 1. Render the Dockerfile; apply each patch series to a scratch copy of its target.
//! 2. Assemble the context (Dockerfile, shims, overlays with the patched trees standing in for
//!    the folders they patch) and take its digest. `--locked` compares the inputs with
//!    forge.lock here; `--dry-run` prints the plan here and stops.
//! 3. Build through the engine; check that no immutable tag would be re-pointed (locally, and
//!    in the registry when pushing); move the tags; push; write forge.lock. Any failure before
//!    the end puts every moved tag back and leaves forge.lock as it was, with one exception: a
//!    push that stops after some tags reached the registry keeps the tags and records exactly
//!    the tags pushed, so that the record never disagrees with the registry.
//!
//! One build per recipe at a time (an advisory lock on the recipe folder); SIGINT and SIGTERM
//! stop the build at its next step and put back what it moved.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde_json::{Value, json};
use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::context::{self, BuildContext, Exclusions, Generated, Member, Output};
use crate::diagnostics::CheckFailed;
use crate::engine::progress::{Display, ProgressMode};
use crate::engine::{BuildRequest, Builder, Docker, Engine, ImageId};
use crate::fs::Written;
use crate::lock::{self, BaseRecord, ImageRecord, Inputs, PatchRecord, Record, TagRecord};
use crate::patch::{self, Outcome, Series, Target};
use crate::pins::{Mutability, Onto, Source};
use crate::printer::Printer;
use crate::recipe::{Recipe, ResolvedTag};
use crate::registry::{self, Lookup, Registry, RegistryClient, RegistryError, RemoteRepository};
use crate::render::{self, Dockerfile, REVISION_ARG, gate};
use crate::types::oci::{Digest, ImageRef, Platform, Repository, Tag};

/// How far `forge build` goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuildMode {
    /// Build, tag, push when asked, record.
    Build,
    /// Stop at the context digest and print the plan; no daemon.
    DryRun,
}

/// Options of `forge build`.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// How far to go.
    pub mode: BuildMode,
    /// Refuse to build when the inputs differ from forge.lock.
    pub locked: bool,
    /// Push every tag after tagging.
    pub push: bool,
    /// Re-point immutable tags that name another image.
    pub force: bool,
    /// Ignore the build cache.
    pub no_cache: bool,
    /// The platform, instead of pins.toml's.
    pub platform: Option<Platform>,
    /// The daemon's builder.
    pub builder: Builder,
    /// How progress is shown.
    pub progress: ProgressMode,
    /// Show each step's output lines on a terminal too.
    pub verbose: bool,
    /// Keep the context archive in this file.
    pub context_out: Option<PathBuf>,
    /// Registry hosts besides loopback ones that the dated-tag check may ask over plain HTTP.
    pub insecure_registries: Vec<String>,
}

/// The label that ties the image to the context it was built from.
const CONTEXT_LABEL: &str = "dev.forge.context.digest";

/// The label that lists the applied patches: original and new commit, author, subject.
const PATCHES_LABEL: &str = "dev.forge.patches";

/// Everything the build needs, computed without a daemon.
pub(crate) struct Plan {
    dockerfile: Dockerfile,
    /// The assembled context.
    pub(crate) context: BuildContext,
    /// Computed for a build and for `--locked`; a dry run does not re-read the recipe for it.
    pub(crate) inputs: Option<Inputs>,
    patches: Vec<PatchRecord>,
    tags: Vec<ResolvedTag>,
    // The patched trees must outlive the context they are archived into.
    _patched: Vec<tempfile::TempDir>,
}

/// Runs `forge build` on `recipe`.
pub fn build(recipe: &Recipe, options: &BuildOptions, printer: &Printer) -> anyhow::Result<()> {
    let output = match (&options.context_out, options.mode) {
        (Some(path), _) => Output::File(path.clone()),
        (None, BuildMode::Build) => Output::TemporaryFile,
        (None, BuildMode::DryRun) => Output::Discard,
    };
    let with_inputs = options.mode == BuildMode::Build || options.locked;
    if options.mode == BuildMode::DryRun {
        let plan = plan(recipe, output, with_inputs, None, printer)?;
        if options.locked {
            check_locked(
                recipe,
                plan.inputs.as_ref().expect("--locked computes the inputs"),
            )?;
            printer.status("Locked", "inputs match forge.lock");
        }
        print_plan(recipe, &plan, printer);
        return Ok(());
    }
    // Held until the build returns; the kernel lets go of it if forge dies.
    let _exclusive = lock_recipe(&recipe.root)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let built = runtime.block_on(async {
        // An unreachable daemon is reported before any work that would be wasted.
        let engine = Docker::connect().await?;
        let plan = plan(recipe, output, with_inputs, None, printer)?;
        if options.locked {
            check_locked(
                recipe,
                plan.inputs.as_ref().expect("a build computes its inputs"),
            )?;
            printer.status("Locked", "inputs match forge.lock");
        }
        run(recipe, options, &plan, &engine, printer).await
    });
    // An interrupted registry check may still be waiting on the network: leave it behind.
    runtime.shutdown_background();
    built
}

/// Why a build could not start.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// Another `forge build` holds the recipe.
    #[error("another `forge build` is running on the recipe {}", root.display())]
    Busy {
        /// The recipe folder.
        root: PathBuf,
    },
    /// SIGINT or SIGTERM arrived before the build was recorded.
    #[error("interrupted by {signal} before the build was recorded")]
    Interrupted {
        /// `SIGINT` or `SIGTERM`.
        signal: &'static str,
    },
    /// A push failed after other tags were pushed; forge.lock records those.
    #[error(
        "the push stopped part way: pushed {}; not pushed {}",
        pushed.join(", "),
        not_pushed.join(", ")
    )]
    PartlyPushed {
        /// The tags in the registry, recorded with their digests.
        pushed: Vec<String>,
        /// The tags not pushed.
        not_pushed: Vec<String>,
        /// Why the push stopped.
        source: crate::engine::EngineError,
    },
    /// The recipe folder could not be locked.
    #[error("cannot lock the recipe folder {} for the build: {source}", root.display())]
    Lock {
        /// The recipe folder.
        root: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

impl BuildError {
    /// What to do about it.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            BuildError::Busy { .. } => {
                "wait for it to finish (its tags and forge.lock are moved only when it succeeds), then build again".to_owned()
            }
            BuildError::Interrupted { .. } => {
                "every tag moved was put back and forge.lock is as it was; build again to finish".to_owned()
            }
            BuildError::PartlyPushed { .. } => {
                "the tags stay on the image built and forge.lock records the digests pushed; run `forge build --push` again to push the rest".to_owned()
            }
            BuildError::Lock { .. } => "check the recipe folder's permissions".to_owned(),
        })
    }
}

/// SIGINT and SIGTERM, caught from the moment the daemon is asked to build: instead of ending
/// forge on the spot they stop the build at its next step and let it put back what it moved.
struct Stop {
    interrupt: Signal,
    terminate: Signal,
}

impl Stop {
    fn listen() -> anyhow::Result<Self> {
        let listen = |kind| signal(kind).context("cannot listen for SIGINT and SIGTERM");
        Ok(Self {
            interrupt: listen(SignalKind::interrupt())?,
            terminate: listen(SignalKind::terminate())?,
        })
    }

    /// Waits for either signal and names it.
    async fn received(&mut self) -> &'static str {
        tokio::select! {
            _ = self.interrupt.recv() => "SIGINT",
            _ = self.terminate.recv() => "SIGTERM",
        }
    }
}

/// Takes the recipe's build lock: an advisory lock on the recipe folder itself, so that two
/// builds never move the same tags or write the same forge.lock at once. Locking the folder
/// rather than a file in it needs no free space, which matters when the disk is full.
fn lock_recipe(root: &Path) -> Result<std::fs::File, BuildError> {
    let folder = std::fs::File::open(root).map_err(|source| BuildError::Lock {
        root: root.to_owned(),
        source,
    })?;
    match folder.try_lock() {
        Ok(()) => Ok(folder),
        Err(std::fs::TryLockError::WouldBlock) => Err(BuildError::Busy {
            root: root.to_owned(),
        }),
        Err(std::fs::TryLockError::Error(source)) => Err(BuildError::Lock {
            root: root.to_owned(),
            source,
        }),
    }
}

impl Plan {
    /// The labels forge adds to the image: the context digest, and the patches applied.
    fn labels(&self) -> BTreeMap<String, String> {
        let mut labels =
            BTreeMap::from([(CONTEXT_LABEL.to_owned(), self.context.digest.to_string())]);
        if !self.patches.is_empty() {
            let applied: Vec<String> = self.patches.iter().map(PatchRecord::summary).collect();
            labels.insert(PATCHES_LABEL.to_owned(), applied.join("; "));
        }
        labels
    }
}

/// The build arguments: pins.toml's, and the recipe's revision.
fn build_args(recipe: &Recipe, revision: &str) -> BTreeMap<String, String> {
    let mut args: BTreeMap<String, String> = recipe
        .pins
        .args
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect();
    args.insert(REVISION_ARG.to_owned(), revision.to_owned());
    args
}

/// Renders, patches and assembles the context of `recipe` (`forge verify-digest` compares
/// the same plan with the record). Context entries carry `mtime`, else `SOURCE_DATE_EPOCH`,
/// else 0.
pub(crate) fn plan(
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

    let trees = patched_trees(recipe, printer)?;
    let mut members = recipe_members(recipe);
    members.extend(trees.members);

    let exclusions = Exclusions::load(&recipe.root)?;
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

/// The recipe paths the Dockerfile copies, as checked in: shim files, then overlay folders.
fn recipe_members(recipe: &Recipe) -> Vec<Member> {
    let mut members = Vec::new();
    for pin in recipe.pins.pins.values() {
        if let Source::Python {
            shim: Some(shim), ..
        } = &pin.source
        {
            members.push(Member {
                at: shim.file.to_string(),
                from: recipe.root.join(shim.file.as_str()),
            });
        }
    }
    for overlay in &recipe.pins.overlays {
        members.push(Member {
            at: overlay.from.to_string(),
            from: recipe.root.join(overlay.from.as_str()),
        });
    }
    members
}

/// Applies each `[[patches]]` series to a scratch copy of its target. A recipe folder inside an
/// overlay is checked out patched into a temporary folder, which stands in for it in the
/// context; a series onto a git pin's remote puts the patches it applied into the context for
/// the pin's build step. Every series is applied and recorded.
fn patched_trees(recipe: &Recipe, printer: &Printer) -> anyhow::Result<PatchedTrees> {
    let mut members = Vec::new();
    let mut applied_series = Vec::new();
    let mut records = Vec::new();
    let mut folders = Vec::new();
    for entry in &recipe.pins.patches {
        let series_path = recipe.root.join(entry.series.as_str());
        let series = Series::read(std::slice::from_ref(&series_path))?;
        let target = Target::from_onto(&entry.onto, &recipe.root);
        let patched = patch::patched_tree(&target, &series, patch::Mode::Write)?;
        let count = patched.applied.count("applied");
        printer.status(
            "Patched",
            format_args!(
                "{} onto {} ({count} applied, {} already there)",
                entry.series,
                target,
                patched.applied.count("already applied")
            ),
        );
        for result in &patched.applied.patches {
            let applied = match &result.outcome {
                Outcome::Applied { new_id } => Some(new_id.to_string()),
                _ => None,
            };
            let file = result
                .file
                .strip_prefix(&recipe.root)
                .unwrap_or(&result.file)
                .to_string_lossy()
                .into_owned();
            records.push(PatchRecord {
                file,
                original: result.original_id.map(|id| id.to_string()),
                applied,
                author: result.author.identity(),
                subject: result.subject.clone(),
            });
        }
        // A series onto a git pin's remote reaches the image through that pin's build step,
        // which applies these mails onto the same commit.
        if let Some(pin) = &entry.pin {
            applied_series.push(Generated {
                at: gate::series_context_folder(pin.as_str()),
                files: patched.applied_mails()?,
            });
        }
        if let Onto::Folder(folder) = &entry.onto
            && copied_into_image(recipe, folder.as_str())
        {
            let checkout = tempfile::Builder::new()
                .prefix("forge-patched-")
                .tempdir()
                .context("cannot create a folder for the patched tree")?;
            let tree = patched
                .repository
                .find_tree(patched.tree)
                .context("cannot read the patched tree")?;
            let mut options = git2::build::CheckoutBuilder::new();
            options.target_dir(checkout.path()).force();
            patched
                .repository
                .checkout_tree(tree.as_object(), Some(&mut options))
                .with_context(|| format!("cannot check out the patched tree of {folder}"))?;
            members.push(Member {
                at: folder.to_string(),
                from: checkout.path().to_owned(),
            });
            folders.push(checkout);
        }
    }
    Ok(PatchedTrees {
        members,
        series: applied_series,
        records,
        folders,
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

/// Whether the recipe folder `path` is, or lies inside, an overlay folder: only then does the
/// Dockerfile copy it, and only then does its patched tree belong in the context.
fn copied_into_image(recipe: &Recipe, path: &str) -> bool {
    recipe.pins.overlays.iter().any(|overlay| {
        let from = overlay.from.as_str();
        path == from
            || path
                .strip_prefix(from)
                .is_some_and(|rest| rest.starts_with('/'))
    })
}

fn check_locked(recipe: &Recipe, current: &Inputs) -> anyhow::Result<()> {
    let path = lock::path(&recipe.root);
    let Some(record) = lock::read(&recipe.root)? else {
        return Err(CheckFailed::new(
            format!("--locked: {} does not exist", path.display()),
            "run `forge build` without --locked once and commit forge.lock",
        )
        .into());
    };
    let differences = record.inputs.differences(current);
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
        "build without --locked to record the new inputs, and commit forge.lock",
    )
    .into())
}

fn print_plan(recipe: &Recipe, plan: &Plan, printer: &Printer) {
    let repository = &recipe.pins.image.repository;
    if printer.is_json() {
        printer.json(&json!({
            "dry_run": true,
            "dockerfile_digest": plan.dockerfile.digest().as_str(),
            "context_digest": plan.context.digest.as_str(),
            "context_size": plan.context.size,
            "context_entries": plan.context.entries,
            "inputs": plan.inputs.as_ref().map(|inputs| serde_json::to_value(inputs).expect("inputs serialize")),
            "patches": patches_json(&plan.patches),
            "build_args": build_args(recipe, &revision(&recipe.root)),
            "labels": plan.labels(),
            "image": {
                "repository": repository.as_str(),
                "tags": plan.tags.iter().map(|tag| json!({
                    "tag": tag.tag.as_str(),
                    "mutability": tag.mutability,
                })).collect::<Vec<_>>(),
            },
        }));
        return;
    }
    let mut text = String::new();
    text.push_str(&format!("dockerfile  {}\n", plan.dockerfile.digest()));
    text.push_str(&format!(
        "context     {} ({} entries, {} bytes)\n",
        plan.context.digest, plan.context.entries, plan.context.size
    ));
    for patch in &plan.patches {
        let original = patch
            .original
            .as_deref()
            .map(|id| format!(", from {}", &id[..id.len().min(12)]))
            .unwrap_or_default();
        text.push_str(&format!(
            "patch       {} by {}{original}\n",
            patch.file, patch.author
        ));
    }
    for tag in &plan.tags {
        let mutability = match tag.mutability {
            Mutability::Moving => "moving",
            Mutability::Immutable => "immutable",
        };
        text.push_str(&format!(
            "tag         {repository}:{} ({mutability})\n",
            tag.tag
        ));
    }
    printer.stdout(&text);
}

fn patches_json(patches: &[PatchRecord]) -> Vec<Value> {
    patches
        .iter()
        .map(|patch| {
            json!({
                "file": patch.file,
                "original": patch.original,
                "applied": patch.applied,
                "author": patch.author,
                "subject": patch.subject,
            })
        })
        .collect()
}

/// The daemon part: build, check tags, move them, push, record.
async fn run<E: Engine>(
    recipe: &Recipe,
    options: &BuildOptions,
    plan: &Plan,
    engine: &E,
    printer: &Printer,
) -> anyhow::Result<()> {
    let repository = &recipe.pins.image.repository;
    let archive = plan
        .context
        .archive()
        .expect("a build assembles its context into a file");
    let platform = options
        .platform
        .as_ref()
        .unwrap_or(&recipe.pins.image.platform);
    let revision = revision(&recipe.root);
    let request = BuildRequest {
        context: archive,
        builder: options.builder,
        no_cache: options.no_cache,
        platform: Some(platform),
        args: build_args(recipe, &revision),
        labels: plan.labels(),
    };
    printer.status(
        "Building",
        format_args!(
            "{repository} for {platform} with the {} builder",
            match options.builder {
                Builder::Buildkit => "BuildKit",
                Builder::Classic => "classic",
            }
        ),
    );
    let mut stop = Stop::listen()?;
    let mut display = Display::new(options.progress, printer, options.verbose);
    // Dropping the build's stream closes its connection, and the daemon cancels the build.
    let built = tokio::select! {
        biased;
        signal = stop.received() => Err(BuildError::Interrupted { signal }.into()),
        built = engine.build(&request, &mut display) => built.map_err(anyhow::Error::from),
    };
    display.finish();
    let image = built?;
    printer.status("Built", &image);

    // What the tags and the base name now, asked all at once rather than one after another.
    let lookups = plan.tags.iter().map(|tag| {
        let reference = format!("{repository}:{}", tag.tag);
        async move { engine.image(&reference).await.map_err(anyhow::Error::from) }
    });
    let (current, base) = tokio::try_join!(
        futures_util::future::try_join_all(lookups),
        base_record(recipe, engine),
    )?;
    // Every refusal comes before the first tag moves.
    let mut previous = Vec::new();
    for (tag, current) in plan.tags.iter().zip(current) {
        if let Some(current) = &current
            && tag.mutability == Mutability::Immutable
            && current.id != image
            && !options.force
        {
            return Err(CheckFailed::new(
                format!(
                    "tag {} already points at {}, not at the image just built ({})",
                    tag.tag, current.id, image
                ),
                "dated tags are immutable; bump the date in pins.toml, or pass --force to re-point it",
            )
            .into());
        }
        previous.push((tag, current.map(|info| info.id)));
    }
    let (credentials, kept) = if options.push {
        // The credential helpers and the registry are asked on a thread of their own, so that a
        // signal is acted on at once however long they take to answer.
        let checked = tokio::task::spawn_blocking({
            let (repository, tags, image, platform, options) = (
                repository.clone(),
                plan.tags.clone(),
                image.clone(),
                platform.clone(),
                options.clone(),
            );
            move || -> anyhow::Result<_> {
                let lookup = registry_credentials(&repository)?;
                let kept =
                    check_registry(&repository, &tags, &image, &platform, &lookup, &options)?;
                Ok((lookup.credentials, kept))
            }
        });
        tokio::select! {
            biased;
            signal = stop.received() => return Err(BuildError::Interrupted { signal }.into()),
            checked = checked => checked.context("the registry check stopped")??,
        }
    } else {
        (None, BTreeMap::new())
    };

    let mut moved: Vec<(&Tag, Option<ImageId>)> = Vec::new();
    let finish = async {
        for (tag, before) in &previous {
            if before.as_ref() == Some(&image) {
                printer.status("Fresh", format_args!("{repository}:{}", tag.tag));
                continue;
            }
            // Listed before the daemon is asked, so that an interruption while it answers
            // still puts the tag back.
            moved.push((&tag.tag, before.clone()));
            engine.tag(&image, repository, &tag.tag).await?;
            printer.status("Tagged", format_args!("{repository}:{}", tag.tag));
        }
        let mut pushed = BTreeMap::new();
        let mut stopped = None;
        if options.push {
            // Immutable tags first: a refusal there leaves the moving tags where they were.
            let mut order: Vec<&ResolvedTag> = plan.tags.iter().collect();
            order.sort_by_key(|tag| tag.mutability == Mutability::Moving);
            for tag in order {
                // Already in the registry with this image: pushing again could only re-point
                // it (at this daemon's manifest, or from a multi-platform index to one image).
                if let Some(digest) = kept.get(&tag.tag) {
                    printer.status(
                        "Kept",
                        format_args!(
                            "{repository}:{} {digest} (the registry already holds this image)",
                            tag.tag
                        ),
                    );
                    pushed.insert(tag.tag.clone(), digest.clone());
                    continue;
                }
                match engine
                    .push(repository, &tag.tag, credentials.as_ref(), &mut display)
                    .await
                {
                    Ok(digest) => {
                        printer.status("Pushed", format_args!("{repository}:{} {digest}", tag.tag));
                        pushed.insert(tag.tag.clone(), digest);
                    }
                    // Once a tag is in the registry the record must say so: keep the tags,
                    // record what was pushed, then fail.
                    Err(error) if !pushed.is_empty() => {
                        stopped = Some(error);
                        break;
                    }
                    Err(error) => return Err(error.into()),
                }
            }
        }
        let record = Record::new(
            plan.inputs.clone().expect("a build computes its inputs"),
            base.clone(),
            ImageRecord {
                repository: repository.clone(),
                id: image.0.clone(),
                platform: Some(platform.clone()),
                revision: (revision != UNKNOWN_REVISION).then(|| revision.clone()),
            },
            plan.tags
                .iter()
                .map(|tag| TagRecord {
                    name: tag.tag.clone(),
                    mutability: tag.mutability,
                    pushed: pushed.get(&tag.tag).cloned(),
                })
                .collect(),
            plan.patches.clone(),
        );
        // A synchronous write: a signal cannot stop it half way.
        let written = record.write(&recipe.root)?;
        anyhow::Ok((record, written, stopped))
    };
    let outcome = tokio::select! {
        biased;
        signal = stop.received() => Err(BuildError::Interrupted { signal }.into()),
        outcome = finish => outcome,
    };

    let (record, written, stopped) = match outcome {
        Ok(done) => done,
        Err(error) => {
            restore_tags(engine, repository, &moved, printer).await;
            return Err(error);
        }
    };
    let lock_path = lock::path(&recipe.root);
    match written {
        Written::Changed => printer.status("Recorded", lock_path.display()),
        Written::Unchanged => printer.status("Fresh", lock_path.display()),
    }
    if let Some(source) = stopped {
        let names = |pushed: bool| -> Vec<String> {
            record
                .tags
                .iter()
                .filter(|tag| tag.pushed.is_some() == pushed)
                .map(|tag| tag.name.to_string())
                .collect()
        };
        return Err(BuildError::PartlyPushed {
            pushed: names(true),
            not_pushed: names(false),
            source,
        }
        .into());
    }
    if printer.is_json() {
        printer.json(&result_json(&record, plan, written));
    } else {
        printer.stdout(&format!("{image}\n"));
    }
    Ok(())
}

/// Puts every moved tag back where it was (or removes it if it did not exist).
async fn restore_tags<E: Engine>(
    engine: &E,
    repository: &Repository,
    moved: &[(&Tag, Option<ImageId>)],
    printer: &Printer,
) {
    for (tag, before) in moved.iter().rev() {
        let restored = match before {
            Some(id) => engine.tag(id, repository, tag).await,
            None => engine.remove_tag(repository, tag).await,
        };
        match restored {
            Ok(()) => printer.status("Restored", format_args!("{repository}:{tag}")),
            Err(error) => printer.warn(format_args!(
                "could not put {repository}:{tag} back: {error}"
            )),
        }
    }
}

/// The credentials for the registry of `repository`, wherever the docker CLI would find them.
fn registry_credentials(repository: &Repository) -> anyhow::Result<Lookup> {
    let reference: ImageRef = repository
        .as_str()
        .parse()
        .expect("a repository is a valid reference");
    Ok(registry::credentials::lookup(reference.registry())?)
}

/// Refuses a push that would re-point an immutable tag in the registry, asking the registry
/// itself: a tag may stay only if it holds the image just built (its manifest, or for an index
/// the entry for `platform`, names this image as its configuration or is this image, as a
/// containerd image store names images by manifest). Returns those tags with their registry
/// digest: they are kept as they are, not pushed again.
fn check_registry(
    repository: &Repository,
    tags: &[ResolvedTag],
    image: &ImageId,
    platform: &Platform,
    lookup: &Lookup,
    options: &BuildOptions,
) -> anyhow::Result<BTreeMap<Tag, Digest>> {
    let mut kept = BTreeMap::new();
    if options.force {
        return Ok(kept);
    }
    let reference: ImageRef = repository
        .as_str()
        .parse()
        .expect("a repository is a valid reference");
    let remote = RemoteRepository::of(&reference);
    let client =
        RegistryClient::new(options.insecure_registries.clone()).with_lookup(lookup.clone());
    for tag in tags
        .iter()
        .filter(|tag| tag.mutability == Mutability::Immutable)
    {
        let checking = || format!("could not check {repository}:{} in its registry", tag.tag);
        let held = match client.manifest(&remote, tag.tag.as_str()) {
            Ok(manifest) => manifest,
            // A tag the registry does not hold yet cannot be re-pointed.
            Err(RegistryError::NotFound { .. }) => continue,
            Err(error) => return Err(anyhow::Error::from(error).context(checking())),
        };
        let digest = held
            .claimed
            .clone()
            .unwrap_or_else(|| held.received.clone());
        let entry = if held.is_index() {
            held.platform_entry(platform.as_str())
        } else {
            Some(held.received.clone())
        };
        let held_image =
            registry::image_of(&client, &remote, &held, platform).with_context(checking)?;
        let holds_this_image =
            held_image.as_ref() == Some(&image.0) || entry.as_ref() == Some(&image.0);
        if !holds_this_image {
            let holds = match &held_image {
                Some(id) => format!("image {id}"),
                None => format!("no image for {platform}"),
            };
            return Err(CheckFailed::new(
                format!(
                    "tag {} already names {digest} in the registry ({holds}), which is not the image just built ({image})",
                    tag.tag
                ),
                "dated tags are immutable; bump the date in pins.toml, or pass --force to re-point it",
            )
            .into());
        }
        kept.insert(tag.tag.clone(), digest);
    }
    Ok(kept)
}

async fn base_record<E: Engine>(recipe: &Recipe, engine: &E) -> anyhow::Result<BaseRecord> {
    let base = &recipe.pins.base;
    let mut record = BaseRecord {
        image: base.image.clone(),
        digest: base.digest.clone(),
        id: None,
    };
    if let Some(local) = engine.image(base.image.as_str()).await? {
        if record.digest.is_none() {
            let name = crate::types::oci::repository_name(base.image.as_str());
            record.digest = local.repo_digests.iter().find_map(|known| {
                let (repository, digest) = known.split_once('@')?;
                (repository == name).then(|| digest.parse().ok()).flatten()
            });
        }
        record.id = Some(local.id.0);
    }
    Ok(record)
}

/// The revision label's value outside git.
const UNKNOWN_REVISION: &str = "unknown";

/// The recipe repository's `HEAD` commit, for the revision label; `unknown` outside git.
fn revision(root: &Path) -> String {
    let Ok(repository) = git2::Repository::discover(root) else {
        return UNKNOWN_REVISION.to_owned();
    };
    repository
        .head()
        .and_then(|head| head.peel_to_commit())
        .map(|commit| commit.id().to_string())
        .unwrap_or_else(|_| UNKNOWN_REVISION.to_owned())
}

fn result_json(record: &Record, plan: &Plan, written: Written) -> Value {
    let repository = record.image.repository.as_str();
    json!({
        "image": {
            "id": record.image.id.as_str(),
            "repository": repository,
            "tags": record.tags.iter().map(|tag| format!("{repository}:{}", tag.name)).collect::<Vec<_>>(),
            "pushed": record.tags.iter().filter_map(|tag| {
                let digest = tag.pushed.as_ref()?;
                Some(json!({ "tag": format!("{repository}:{}", tag.name), "digest": digest.as_str() }))
            }).collect::<Vec<_>>(),
        },
        "context_digest": plan.context.digest.as_str(),
        "dockerfile_digest": plan.dockerfile.digest().as_str(),
        "patches": patches_json(&record.patches),
        "base": serde_json::to_value(&record.base).expect("the base record serializes"),
        "lock": {
            "path": lock::LOCK_FILE,
            "changed": written == Written::Changed,
        },
    })
}

fn human_size(bytes: u64) -> String {
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
