//! The publication's journal: the intent on disk while tags move and pushes run, the record it
//! ends in, and what is put back when a push fails part way.

use std::collections::BTreeMap;

use crate::engine::{Engine, EngineError, ImageId};
use crate::lock::{BaseRecord, ImageRecord, Record, TagRecord};
use crate::printer::Printer;
use crate::recipe::ResolvedTag;
use crate::types::oci::{Digest, Repository, Tag};

use super::error::BuildError;
use super::{Publication, intent};

/// A tag moved, and the image it named before (`None`: it did not exist).
pub(super) type Moved = (Tag, Option<ImageId>);

/// The intent of a publication, kept on disk from the first tag move until forge.lock is
/// written. A publication that moves no tag and pushes nothing writes none.
pub(super) struct Journal<'a> {
    root: &'a std::path::Path,
    pub(super) intent: intent::Intent,
    on_disk: bool,
}

impl<'a> Journal<'a> {
    /// Plans the record and, when a tag is about to move or a push to happen, writes the intent.
    pub(super) fn new(
        publication: &'a Publication<'_>,
        previous: &[(&ResolvedTag, Option<ImageId>)],
        base: BaseRecord,
        recorded: Option<&Record>,
    ) -> anyhow::Result<Self> {
        let moves: Vec<intent::Move> = previous
            .iter()
            .filter(|(_, before)| before.as_ref() != Some(publication.image))
            .map(|(tag, before)| intent::Move {
                tag: tag.tag.clone(),
                before: before.as_ref().map(|id| id.0.clone()),
            })
            .collect();
        let on_disk = !moves.is_empty() || publication.push;
        let journal = Self {
            root: &publication.recipe.root,
            intent: intent::Intent {
                moves,
                push: publication.push,
                pushed: BTreeMap::new(),
                record: record(publication, base, &BTreeMap::new(), recorded),
                lock_before: Some(intent::lock_mark(recorded)),
            },
            on_disk,
        };
        if journal.on_disk {
            journal.intent.write(journal.root)?;
        }
        Ok(journal)
    }

    /// Notes that `tag` is in the registry as `digest`.
    pub(super) fn pushed(&mut self, tag: &Tag, digest: &Digest) -> anyhow::Result<()> {
        self.intent.pushed.insert(tag.clone(), digest.clone());
        if self.on_disk {
            self.intent.write(self.root)?;
        }
        Ok(())
    }
}

/// The record of the publication, with the registry digest of each tag in `pushed`. A tag not
/// pushed now keeps the digest `recorded` holds for it when that record is of the same image
/// in the same repository: the registry still holds what was pushed of it, and what was
/// attached to it.
fn record(
    publication: &Publication<'_>,
    base: BaseRecord,
    pushed: &BTreeMap<Tag, Digest>,
    recorded: Option<&Record>,
) -> Record {
    let same_image = recorded.filter(|recorded| {
        recorded.image.id == *publication.id
            && &recorded.image.repository == publication.repository()
    });
    // The engine image a record of the same image names stays named: builds with and without
    // the inline cache metadata of a push end on two engine images of one normalized image, and
    // the record of that image does not change with them.
    let same_normalization = same_image.filter(|recorded| {
        recorded.image.built.is_some()
            && recorded.image.normalized == Some(crate::normalize::FORMAT)
            && recorded.image.epoch == Some(publication.epoch)
    });
    let (built, normalized) = match same_normalization {
        Some(recorded) => (recorded.image.built.clone(), recorded.image.normalized),
        None => (
            publication.built.map(|built| built.0.clone()),
            publication.built.map(|_| crate::normalize::FORMAT),
        ),
    };
    let pushed_before = |tag: &Tag| {
        same_image?
            .tags
            .iter()
            .find(|recorded| &recorded.name == tag)?
            .pushed
            .clone()
    };
    let mut record = Record::new(
        publication.inputs.clone(),
        base,
        ImageRecord {
            repository: publication.repository().clone(),
            id: publication.id.clone(),
            manifest: publication.manifest.cloned(),
            epoch: publication.built.map(|_| publication.epoch),
            platform: Some(publication.platform.clone()),
            revision: publication.revision.map(str::to_owned),
            builder: Some(publication.builder),
            built,
            normalized,
        },
        publication
            .tags
            .iter()
            .map(|tag| TagRecord {
                name: tag.tag.clone(),
                mutability: tag.mutability,
                pushed: pushed
                    .get(&tag.tag)
                    .cloned()
                    .or_else(|| pushed_before(&tag.tag)),
            })
            .collect(),
        publication.patches.to_vec(),
    );
    // What is attached to a manifest the record still names stays attached to it.
    if let Some(recorded) = same_image {
        record.attachments = recorded
            .attachments
            .iter()
            .filter(|attachment| {
                record
                    .tags
                    .iter()
                    .any(|tag| tag.pushed.as_ref() == Some(&attachment.subject))
            })
            .cloned()
            .collect();
    }
    record
}

/// The failure of a push that stopped after `record`'s pushed tags reached the registry.
pub(super) fn partly_pushed(record: &Record, source: EngineError) -> BuildError {
    let names = |pushed: bool| -> Vec<String> {
        record
            .tags
            .iter()
            .filter(|tag| tag.pushed.is_some() == pushed)
            .map(|tag| tag.name.to_string())
            .collect()
    };
    BuildError::PartlyPushed {
        pushed: names(true),
        not_pushed: names(false),
        source,
    }
}

/// Puts every moved tag back where it was (or removes it if it did not exist), last moved
/// first. Returns whether every tag went back.
pub(super) async fn rollback<E: Engine>(
    engine: &E,
    repository: &Repository,
    moved: &[Moved],
    printer: &Printer,
) -> bool {
    let mut all = true;
    for (tag, before) in moved.iter().rev() {
        let restored = match before {
            Some(id) => engine.tag(id, repository, tag).await,
            None => engine.remove_tag(repository, tag).await,
        };
        match restored {
            Ok(()) => printer.status("Restored", format_args!("{repository}:{tag}")),
            Err(error) => {
                all = false;
                printer.warn(format_args!(
                    "could not put {repository}:{tag} back: {error}; the next forge build puts it back"
                ));
            }
        }
    }
    all
}
