//! What a publication is about to do, written next to forge.lock before the first tag moves,
//! so that a forge killed part way (SIGKILL, a power cut, an OOM kill: nothing it can catch)
//! leaves enough behind for the next forge to finish or undo it.
//!
//! `forge.lock.intent` holds the record about to be written, what each tag named before it
//! moved, and each push as it reaches the registry. The next `forge build` or
//! `forge verify-digest` of the recipe (under the recipe's lock) settles it with the same rule
//! a failure in the running forge follows:
//! - forge.lock already holds the intended record: the publication finished; the intent is
//!   removed;
//! - a push reached the registry: the tags stay on the new image and forge.lock records what
//!   the registry holds (all new);
//! - nothing was pushed, or the new image is gone: every moved tag is put back (all old).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

use crate::diagnostics::{Advice, Advise};
use crate::engine::{Engine, EngineError, ImageId};
use crate::fs::write_if_changed;
use crate::lock::{self, Record};
use crate::printer::Printer;
use crate::types::oci::{Digest, Tag};

/// The intent's file name, in the recipe folder next to forge.lock.
pub const INTENT_FILE: &str = "forge.lock.intent";

/// A publication under way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Intent {
    /// Each tag about to move, and the image it named before (absent: it did not exist).
    pub moves: Vec<Move>,
    /// Each tag pushed so far, with the digest the registry stored.
    #[serde(default)]
    pub pushed: BTreeMap<Tag, Digest>,
    /// The record to write once every tag moved and every push is done, without the digests
    /// of the pushes still to come.
    pub record: Record,
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
        })
    }
}

crate::advised!(IntentError);

/// The intent's path in the recipe folder `root`.
pub fn path(root: &Path) -> PathBuf {
    root.join(INTENT_FILE)
}

impl Intent {
    /// Writes the intent to `root`, atomically.
    pub fn write(&self, root: &Path) -> Result<(), IntentError> {
        let path = path(root);
        let text = format!(
            "# forge.lock.intent: a publication under way. The next `forge build` or\n\
             # `forge verify-digest` of this recipe finishes or undoes it; do not edit by hand.\n\n{}",
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
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
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
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(IntentError::Io {
            action: "remove",
            path,
            source,
        }),
    }
}

/// How an interrupted publication was settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Settled {
    /// There was none.
    Nothing,
    /// It had finished: forge.lock held its record.
    Finished,
    /// Its pushes had reached the registry: the tags stay and forge.lock records them.
    RolledForward,
    /// Nothing had reached the registry: every moved tag was put back.
    RolledBack,
}

/// Settles what a publication killed part way left in `root`, on `engine` (the daemon it
/// published on). The caller holds the recipe's lock.
pub async fn settle<E: Engine>(
    root: &Path,
    engine: &E,
    printer: &Printer,
) -> anyhow::Result<Settled> {
    let Some(intent) = Intent::read(root)? else {
        return Ok(Settled::Nothing);
    };
    let record = intent.record_so_far();
    let repository = &record.image.repository;
    let image = ImageId(record.image.id.clone());
    let settle_error = |source| IntentError::Settle {
        path: path(root),
        source,
    };
    let settled = if lock::read(root)?.as_ref() == Some(&record) {
        Settled::Finished
    } else if !intent.pushed.is_empty() && engine.image(image.0.as_str()).await?.is_some() {
        for planned in &intent.moves {
            engine
                .tag(&image, repository, &planned.tag)
                .await
                .map_err(settle_error)?;
        }
        record.write(root)?;
        Settled::RolledForward
    } else {
        for planned in intent.moves.iter().rev() {
            let restored = match &planned.before {
                Some(before) => {
                    engine
                        .tag(&ImageId(before.clone()), repository, &planned.tag)
                        .await
                }
                None => engine.remove_tag(repository, &planned.tag).await,
            };
            restored.map_err(settle_error)?;
            printer.status("Restored", format_args!("{repository}:{}", planned.tag));
        }
        Settled::RolledBack
    };
    remove(root)?;
    let what = match settled {
        Settled::Nothing | Settled::Finished => "had finished; forge.lock records it",
        Settled::RolledForward => {
            "had pushed part of its tags: they stay on the new image and forge.lock records what the registry holds"
        }
        Settled::RolledBack => {
            "was stopped before any push: its tags are back where they were and forge.lock is unchanged"
        }
    };
    printer.status(
        "Recovered",
        format_args!("the publication of {} {what}", image.short()),
    );
    Ok(settled)
}

/// Settles a publication killed part way before forge.lock is read (by `verify-digest` or
/// `pull`), on the default daemon, unless a build of the recipe is still under way: then
/// forge.lock may still change, and a warning says so.
pub fn settle_before_reading(root: &Path, printer: &Printer) -> anyhow::Result<()> {
    if Intent::read(root)?.is_none() {
        return Ok(());
    }
    let _exclusive = match super::lock_recipe(root) {
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
        settle(root, &engine, printer).await
    })?;
    Ok(())
}
