//! What a publication is about to do, written next to forge.lock before the first tag moves,
//! so that a forge killed part way (SIGKILL, a power cut, an OOM kill: nothing it can catch)
//! leaves enough behind for the next forge to finish or undo it.
//!
//! `forge.lock.intent` holds the record about to be written, what each tag named before it
//! moved, whether the publication pushes, and each push as forge saw it reach the registry. The
//! next `forge build`, `verify-digest`, `pull` or `recover` of the recipe (under the recipe's
//! lock) settles it, by the rule a failure in the running forge follows too:
//! - forge.lock already holds the intended record: the publication finished; the intent is
//!   removed;
//! - a push reached the registry, as forge noted it or as the registry says when asked (the
//!   daemon may have pushed a tag just before forge was killed, so every tag not noted is asked
//!   for): the tags stay on the new image and forge.lock records what the registry holds (all
//!   new);
//! - nothing reached the registry: every moved tag is put back (all old).
//!
//! An intent names only the recipe's repository and tags; one that names anything else is
//! refused before anything moves. When the rule cannot be followed (the registry does not
//! answer, an image a tag must go back to is gone), nothing moves and the error names the
//! choices `forge recover` offers.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

use crate::diagnostics::{Advice, Advise};
use crate::engine::{Engine, EngineError, ImageId};
use crate::fs::write_if_changed;
use crate::lock::{self, Record};
use crate::printer::Printer;
use crate::recipe::Recipe;
use crate::types::oci::{Digest, Platform, RegistryHost, Repository, Tag};

use super::RegistryTags;

/// The intent's file name, in the recipe folder next to forge.lock.
pub const INTENT_FILE: &str = "forge.lock.intent";

/// A publication under way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Intent {
    /// Each tag about to move, and the image it named before (absent: it did not exist).
    pub moves: Vec<Move>,
    /// Whether the publication pushes its tags (intents written before forge noted it say so
    /// only by a push already noted).
    #[serde(default)]
    pub push: bool,
    /// Each tag pushed so far, with the digest the registry stored.
    #[serde(default)]
    pub pushed: BTreeMap<Tag, Digest>,
    /// The record to write once every tag moved and every push is done, without the digests
    /// of the pushes still to come.
    pub record: Record,
    /// What forge.lock held when the publication began: the sha256 of its record's text, or
    /// `none` when there was none. An intent written before forge noted it has none here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_before: Option<String>,
}

/// What `lock_before` says of `record` (forge.lock's record, if any).
pub fn lock_mark(record: Option<&Record>) -> String {
    use sha2::Digest as _;
    record.map_or_else(
        || "none".to_owned(),
        |record| hex::encode(sha2::Sha256::digest(record.to_text().as_bytes())),
    )
}

/// One tag about to move.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Move {
    /// The tag.
    pub tag: Tag,
    /// The image it named before, if it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<Digest>,
}

/// Why the intent could not be written, read or settled.
#[derive(Debug, thiserror::Error)]
pub enum IntentError {
    /// The file could not be written or removed.
    #[error("cannot {action} {}", path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not an intent forge wrote.
    #[error("{}: not an intent forge wrote: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A tag could not be put back or moved on.
    #[error("cannot settle the interrupted publication in {}", path.display())]
    Settle {
        /// The file.
        path: PathBuf,
        /// The daemon's error.
        source: EngineError,
    },
    /// The publication is no longer what the recipe or the registry holds: forge.lock moved
    /// since it began, or a push it noted is no longer its image in the registry (an intent
    /// left behind and brought back, say by `git stash`).
    #[error("{}: the interrupted publication of {} is stale: {why}", path.display(), short(image))]
    Stale {
        /// The file.
        path: PathBuf,
        /// The image the publication built.
        image: Digest,
        /// What moved.
        why: String,
    },
    /// The intent names a repository or a tag the recipe does not.
    #[error("{}: the interrupted publication names {what}, which is not the recipe's ({recipe})", path.display())]
    Foreign {
        /// The file.
        path: PathBuf,
        /// What it names (`repository R`, `tag T`).
        what: String,
        /// What the recipe names instead.
        recipe: String,
    },
    /// The registry could not say what the publication pushed.
    #[error("cannot ask {repository} which tags the interrupted publication of {image} pushed")]
    RegistryUnknown {
        /// The repository.
        repository: Repository,
        /// The image the publication built.
        image: Digest,
        /// Why.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A roll forward to an image that is neither on the daemon nor known to be in the registry.
    #[error(
        "cannot keep the tags on {image}: it is no longer on the daemon, and no tag of it is known to be in the registry"
    )]
    Nowhere {
        /// The image the publication built.
        image: Digest,
    },
    /// A tag cannot go back: the image it named before is gone from the daemon.
    #[error(
        "cannot put {}:{} back: the image it named before the interrupted publication ({}) is no longer on the daemon",
        .0.repository, .0.tag, .0.before
    )]
    BeforeGone(Box<Gone>),
}

/// A tag that cannot go back, and the publication it moved in.
#[derive(Debug)]
pub struct Gone {
    /// The repository.
    pub repository: Repository,
    /// The tag.
    pub tag: Tag,
    /// The image it named.
    pub before: Digest,
    /// The image the publication built.
    pub image: Digest,
}

/// The choices `forge recover` offers for the interrupted publication of `image`.
fn choices(image: &Digest, roll_back: bool) -> String {
    let back = if roll_back {
        "; `forge recover --roll-back` puts every moved tag back and leaves forge.lock, for when \
         you know nothing reached the registry"
    } else {
        ""
    };
    format!(
        "nothing was moved; `forge recover --roll-forward` keeps every tag on the new image {} and \
         records it in forge.lock{back}; `forge recover --drop` forgets the publication, leaving \
         the tags and forge.lock as they are now",
        short(image)
    )
}

fn short(digest: &Digest) -> String {
    ImageId(digest.clone()).short().to_string()
}

impl Advise for IntentError {
    fn advice(&self) -> Advice {
        Advice::Hint(match self {
            IntentError::Io { .. } => {
                "check the recipe folder's permissions and free space".to_owned()
            }
            IntentError::Invalid { .. } => {
                "compare the tags with forge.lock (`forge verify-digest`), then delete the file"
                    .to_owned()
            }
            IntentError::Settle { .. } => {
                "the file stays; run the command again once the daemon answers".to_owned()
            }
            IntentError::Foreign { .. } => {
                "a publication of `forge build --repository R` is settled by `forge recover \
                 --repository R`; if the recipe's date changed since, set it back first; \
                 `forge recover --drop` forgets the publication without moving any tag"
                    .to_owned()
            }
            IntentError::RegistryUnknown { image, .. } => format!(
                "run the command again once the registry answers; else {}",
                choices(image, true)
            ),
            IntentError::BeforeGone(gone) => choices(&gone.image, false),
            IntentError::Stale { image, .. } => format!(
                "settling it by the rule would write an untrue forge.lock; `forge recover --drop` \
                 forgets it (what you want when it was left behind), else {}",
                choices(image, true)
            ),
            IntentError::Nowhere { .. } => {
                "`forge recover --roll-back` puts every moved tag back; \
                `forge recover --drop` forgets the publication, leaving the tags as they are now"
                    .to_owned()
            }
        })
    }
}

crate::advised!(IntentError);

/// The intent's path in the recipe folder `root`.
pub fn path(root: &Path) -> PathBuf {
    crate::fs::in_folder(root, INTENT_FILE)
}

impl Intent {
    /// Writes the intent to `root`, atomically.
    pub fn write(&self, root: &Path) -> Result<(), IntentError> {
        let path = path(root);
        let text = format!(
            "# forge.lock.intent: a publication under way. The next `forge build`, `verify-digest`,\n\
             # `pull` or `recover` of this recipe finishes or undoes it; do not edit by hand.\n\n{}",
            toml::to_string(self).expect("an intent serializes")
        );
        write_if_changed(&path, text.as_bytes()).map_err(|source| IntentError::Io {
            action: "write",
            path,
            source,
        })?;
        Ok(())
    }

    /// The intent in `root`, if a publication left one.
    pub fn read(root: &Path) -> Result<Option<Self>, IntentError> {
        let path = path(root);
        let text = match crate::fs::read_state(&path) {
            Ok(Some(text)) => text,
            Ok(None) => return Ok(None),
            Err(source) => {
                return Err(IntentError::Io {
                    action: "read",
                    path,
                    source,
                });
            }
        };
        toml::from_str(&text)
            .map(Some)
            .map_err(|error| IntentError::Invalid {
                path,
                message: error.message().trim_end().to_owned(),
            })
    }

    /// The record with every push so far.
    pub fn record_so_far(&self) -> Record {
        let mut record = self.record.clone();
        for tag in &mut record.tags {
            if let Some(digest) = self.pushed.get(&tag.name) {
                tag.pushed = Some(digest.clone());
            }
        }
        record
    }
}

/// Removes the intent in `root`; one already gone is fine.
pub fn remove(root: &Path) -> Result<(), IntentError> {
    let path = path(root);
    crate::fs::remove_optional(&path).map_err(|source| IntentError::Io {
        action: "remove",
        path,
        source,
    })
}

/// How an interrupted publication was settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Settled {
    /// There was none.
    Nothing,
    /// It had finished: forge.lock held its record.
    Finished,
    /// Its pushes had reached the registry: the tags stay and forge.lock records them.
    RolledForward,
    /// Nothing had reached the registry: every moved tag was put back.
    RolledBack,
    /// It was forgotten, as `forge recover --drop` asked: nothing moved.
    Dropped,
}

/// How to settle an interrupted publication.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// By the rule: all new when a push of it reached the registry, else all old.
    Rule,
    /// All new, whatever the registry holds: every tag on the new image, forge.lock records it.
    RollForward,
    /// All old, whatever the registry holds: every moved tag put back, forge.lock as it was.
    RollBack,
    /// Forget it: the intent removed, no tag moved, forge.lock as it is.
    Drop,
}

/// Settles what a publication killed part way left in `recipe`'s folder, on `engine` (the
/// daemon it published on), as `choice` says. `registry` opens the registry of a repository, to
/// ask it for a publication that pushed which tags hold the new image. The caller holds the
/// recipe's lock.
pub async fn settle<E: Engine, R: RegistryTags>(
    recipe: &Recipe,
    engine: &E,
    registry: impl FnOnce(Repository, Platform) -> anyhow::Result<R> + Send + 'static,
    choice: Choice,
    printer: &Printer,
) -> anyhow::Result<Settled> {
    let root = &recipe.root;
    let Some(intent) = Intent::read(root)? else {
        return Ok(Settled::Nothing);
    };
    // Settling may write forge.lock: what the recipe kept of it is read again after.
    recipe.lock_written();
    let image = intent.record.image.id.clone();
    if choice == Choice::Drop {
        return forget(root, printer);
    }
    let recorded = lock::read(root)?;
    check_names(&intent, recipe, recorded.as_ref(), root)?;
    let mut record = intent.record_so_far();
    let settled = if recorded.as_ref() == Some(&record) {
        Settled::Finished
    } else {
        if choice == Choice::Rule
            && let Some(before) = &intent.lock_before
            && *before != lock_mark(recorded.as_ref())
        {
            let now = recorded.as_ref().map_or_else(
                || "it is gone".to_owned(),
                |record| format!("it records {} now", short(&record.image.id)),
            );
            return Err(IntentError::Stale {
                path: path(root),
                image: image.clone(),
                why: format!("forge.lock has changed since it began ({now})"),
            }
            .into());
        }
        let asked = if choice == Choice::Rule && (intent.push || !intent.pushed.is_empty()) {
            let platform = record.image.platform.clone();
            let platform = platform.unwrap_or_else(|| recipe.pins.image.platform.clone());
            held_by_the_registry(&intent, root, platform, registry).await?
        } else {
            BTreeMap::new()
        };
        for tag in &mut record.tags {
            if let Some(digest) = asked.get(&tag.name) {
                tag.pushed = Some(digest.clone());
            }
        }
        let forward = match choice {
            Choice::RollForward => true,
            Choice::RollBack | Choice::Drop => false,
            Choice::Rule => !intent.pushed.is_empty() || !asked.is_empty(),
        };
        if forward {
            let present = engine.image(image.as_str()).await?.is_some();
            roll_forward(root, &intent, &record, engine, present, printer).await?;
            Settled::RolledForward
        } else {
            roll_back(root, &intent, engine, printer).await?;
            Settled::RolledBack
        }
    };
    remove(root)?;
    let what = match (settled, choice) {
        (Settled::RolledForward, Choice::RollForward) => {
            "is kept as asked: its tags stay on the new image and forge.lock records it"
        }
        (Settled::RolledForward, _) => {
            "had pushed part of its tags: they stay on the new image and forge.lock records what the registry holds"
        }
        (Settled::RolledBack, Choice::RollBack) => {
            "is undone as asked: its tags are back where they were and forge.lock is unchanged"
        }
        (Settled::RolledBack, _) => {
            "was stopped before any push: its tags are back where they were and forge.lock is unchanged"
        }
        _ => "had finished; forge.lock records it",
    };
    printer.status(
        "Recovered",
        format_args!("the publication of {} {what}", short(&image)),
    );
    Ok(settled)
}

/// Forgets the interrupted publication in `root` without moving a tag or touching forge.lock
/// (`forge recover --drop`); it needs no daemon. The caller holds the recipe's lock.
pub fn forget(root: &Path, printer: &Printer) -> anyhow::Result<Settled> {
    let Some(intent) = Intent::read(root)? else {
        return Ok(Settled::Nothing);
    };
    remove(root)?;
    printer.status(
        "Dropped",
        format_args!(
            "the interrupted publication of {}: the tags and forge.lock stay as they are",
            short(&intent.record.image.id)
        ),
    );
    Ok(Settled::Dropped)
}

/// Refuses an intent that names a repository or a tag the recipe does not: the repository
/// must be pins.toml's (or `--repository`'s) or the one forge.lock records, every tag one of
/// the recipe's.
fn check_names(
    intent: &Intent,
    recipe: &Recipe,
    recorded: Option<&Record>,
    root: &Path,
) -> Result<(), IntentError> {
    let foreign = |what: String, recipe: String| IntentError::Foreign {
        path: path(root),
        what,
        recipe,
    };
    let repository = &intent.record.image.repository;
    let ours = &recipe.pins.image.repository;
    if repository != ours && recorded.is_none_or(|record| &record.image.repository != repository) {
        return Err(foreign(
            format!("repository {repository}"),
            format!("repository {ours}"),
        ));
    }
    let tags = recipe.tags();
    let named = (intent.moves.iter().map(|planned| &planned.tag))
        .chain(intent.record.tags.iter().map(|tag| &tag.name))
        .chain(intent.pushed.keys());
    for tag in named {
        if !tags.iter().any(|resolved| &resolved.tag == tag) {
            let list: Vec<&str> = tags.iter().map(|resolved| resolved.tag.as_str()).collect();
            return Err(foreign(
                format!("tag {tag}"),
                format!("tags {}", list.join(", ")),
            ));
        }
    }
    Ok(())
}

/// The tags of the publication that forge did not see pushed but the registry holds with the
/// new image, with their digests: the daemon may have pushed a tag just before forge was
/// stopped. Every tag forge noted pushed is asked for too, and must still hold the new image:
/// else the publication is stale (`Stale`, in `Ok(Err)`), and settling it by the rule would
/// record what the registry does not hold.
async fn held_by_the_registry<R: RegistryTags>(
    intent: &Intent,
    root: &Path,
    platform: Platform,
    open: impl FnOnce(Repository, Platform) -> anyhow::Result<R> + Send + 'static,
) -> Result<BTreeMap<Tag, Digest>, IntentError> {
    let repository = intent.record.image.repository.clone();
    let image = intent.record.image.id.clone();
    let tags: Vec<(Tag, bool)> = (intent.record.tags.iter())
        .map(|tag| (tag.name.clone(), intent.pushed.contains_key(&tag.name)))
        .collect();
    let (asked_repository, asked_image) = (repository.clone(), image.clone());
    // The registry is asked on a thread of its own: its client and credential helpers block.
    let asked = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
        let registry = open(asked_repository, platform)?;
        let mut held = BTreeMap::new();
        for (tag, noted) in tags {
            let found = registry.held(&tag)?;
            let holds = found
                .as_ref()
                .is_some_and(|found| found.image.as_ref() == Some(&asked_image));
            if noted && !holds {
                let now = found.and_then(|found| found.image).map_or_else(
                    || "it holds no such tag now".to_owned(),
                    |other| format!("it holds {} there now", short(&other)),
                );
                return Ok(Err(format!(
                    "forge saw :{tag} pushed, and the registry no longer holds it ({now})"
                )));
            }
            if let (Some(found), true, false) = (found, holds, noted) {
                held.insert(tag, found.digest);
            }
        }
        Ok(Ok(held))
    })
    .await;
    let unknown = |source: Box<dyn std::error::Error + Send + Sync>| IntentError::RegistryUnknown {
        repository,
        image,
        source,
    };
    match asked {
        Ok(Ok(Ok(held))) => Ok(held),
        Ok(Ok(Err(why))) => Err(IntentError::Stale {
            path: path(root),
            image: intent.record.image.id.clone(),
            why,
        }),
        Ok(Err(error)) => Err(unknown(error.into())),
        Err(error) => Err(unknown(Box::new(error))),
    }
}

/// Keeps every tag on the new image (when the daemon still has it) and records `record`.
async fn roll_forward<E: Engine>(
    root: &Path,
    intent: &Intent,
    record: &Record,
    engine: &E,
    present: bool,
    printer: &Printer,
) -> anyhow::Result<()> {
    let repository = &record.image.repository;
    let image = ImageId(record.image.id.clone());
    if present {
        for planned in &intent.moves {
            engine
                .tag(&image, repository, &planned.tag)
                .await
                .map_err(|source| IntentError::Settle {
                    path: path(root),
                    source,
                })?;
        }
    } else if record.tags.iter().any(|tag| tag.pushed.is_some()) {
        printer.warn(format_args!(
            "the image {} is no longer on this daemon, so its tags are not here either; the registry holds it: `forge pull` brings it back",
            image.short()
        ));
    } else {
        return Err(IntentError::Nowhere { image: image.0 }.into());
    }
    record.write(root)?;
    Ok(())
}

/// Puts every moved tag back, last moved first, once every image they go back to is known to
/// be on the daemon.
async fn roll_back<E: Engine>(
    root: &Path,
    intent: &Intent,
    engine: &E,
    printer: &Printer,
) -> anyhow::Result<()> {
    let repository = &intent.record.image.repository;
    for planned in &intent.moves {
        if let Some(before) = &planned.before
            && engine.image(before.as_str()).await?.is_none()
        {
            return Err(IntentError::BeforeGone(Box::new(Gone {
                repository: repository.clone(),
                tag: planned.tag.clone(),
                before: before.clone(),
                image: intent.record.image.id.clone(),
            }))
            .into());
        }
    }
    for planned in intent.moves.iter().rev() {
        let restored = match &planned.before {
            Some(before) => {
                engine
                    .tag(&ImageId(before.clone()), repository, &planned.tag)
                    .await
            }
            None => engine.remove_tag(repository, &planned.tag).await,
        };
        restored.map_err(|source| IntentError::Settle {
            path: path(root),
            source,
        })?;
        printer.status("Restored", format_args!("{repository}:{}", planned.tag));
    }
    Ok(())
}

/// Settles a publication killed part way before forge.lock is read (by `verify-digest` or
/// `pull`), on the default daemon, asking the registry with `insecure` hosts allowed plain
/// HTTP, unless a build of the recipe is still under way: then forge.lock may still change, and
/// a warning says so.
pub fn settle_before_reading(
    recipe: &Recipe,
    insecure: &[RegistryHost],
    printer: &Printer,
) -> anyhow::Result<()> {
    if Intent::read(&recipe.root)?.is_none() {
        return Ok(());
    }
    let _exclusive = match super::lock_recipe(&recipe.root) {
        Ok(exclusive) => exclusive,
        Err(super::BuildError::Busy { .. }) => {
            printer.warn("a build of this recipe is under way; forge.lock may change when it ends");
            return Ok(());
        }
        Err(error) => return Err(error.into()),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let engine = crate::engine::Docker::connect().await?;
        settle(
            recipe,
            &engine,
            registry_of(insecure),
            Choice::Rule,
            printer,
        )
        .await
    })?;
    Ok(())
}

/// Opens a repository's registry as a push asks it, with `insecure` hosts allowed plain HTTP.
pub fn registry_of(
    insecure: &[RegistryHost],
) -> impl FnOnce(Repository, Platform) -> anyhow::Result<super::RemoteTags> + Send + 'static {
    let insecure = insecure.to_vec();
    move |repository, platform| super::RemoteTags::connect(&repository, platform, insecure)
}
