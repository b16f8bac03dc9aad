//! What `forge patch apply` is about to do to a repository, written in its git folder before
//! the checkout starts, as git keeps `ORIG_HEAD` and its rebase state: a forge killed during
//! the checkout (SIGKILL, an OOM kill: nothing it can catch) leaves HEAD old and the worktree
//! part new, and the next `forge patch apply` onto that repository finishes the move.
//!
//! `FORGE_APPLY` holds three lines: `ref <name>` (or `ref HEAD` when HEAD is detached),
//! `from <commit>` and `to <commit>`. Every commit of `to` is in the object store before the
//! file is written, so finishing is always possible: check out `to`'s tree over `from`'s and
//! move the reference, as the apply would have.

use std::path::PathBuf;

use git2::{Oid, Repository};

use super::PatchError;
use crate::fs::write_if_changed;

/// What the `ref` line holds when HEAD was detached (no branch to move).
const DETACHED: &str = "HEAD";

/// The file's name in the repository's git folder.
pub const INTENT_FILE: &str = "FORGE_APPLY";

/// A move of a reference from one commit to another, with the checkout between.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Intent {
    /// The branch moved (`refs/heads/...`), or `None` for a detached HEAD.
    pub reference: Option<String>,
    /// The commit HEAD named before.
    pub from: Oid,
    /// The commit HEAD names after.
    pub to: Oid,
}

fn path(repository: &Repository) -> PathBuf {
    repository.path().join(INTENT_FILE)
}

fn io(what: &'static str) -> impl FnOnce(std::io::Error) -> PatchError {
    move |source| PatchError::Intent {
        what: what.to_owned(),
        source,
    }
}

impl Intent {
    /// Writes the intent into `repository`'s git folder, atomically.
    pub fn write(&self, repository: &Repository) -> Result<(), PatchError> {
        let text = format!(
            "ref {}\nfrom {}\nto {}\n",
            self.reference.as_deref().unwrap_or(DETACHED),
            self.from,
            self.to
        );
        write_if_changed(&path(repository), text.as_bytes())
            .map_err(io("cannot write the apply's intent"))?;
        Ok(())
    }

    /// The intent an interrupted apply left in `repository`, if any.
    pub fn read(repository: &Repository) -> Result<Option<Self>, PatchError> {
        let path = path(repository);
        let text = match crate::fs::read_state(&path) {
            Ok(Some(text)) => text,
            Ok(None) => return Ok(None),
            Err(source) => {
                return Err(PatchError::Intent {
                    what: format!("cannot read the apply's intent {}", path.display()),
                    source,
                });
            }
        };
        let field = |name: &str| {
            text.lines()
                .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        };
        let oid = |name: &str| field(name).and_then(|value| Oid::from_str(value).ok());
        match (field("ref"), oid("from"), oid("to")) {
            (Some(reference), Some(from), Some(to)) => Ok(Some(Self {
                reference: (reference != DETACHED).then(|| reference.to_owned()),
                from,
                to,
            })),
            _ => Err(PatchError::IntentInvalid { path }),
        }
    }
}

/// Removes the intent from `repository`; one already gone is fine.
pub fn remove(repository: &Repository) -> Result<(), PatchError> {
    crate::fs::remove_optional(&path(repository)).map_err(io("cannot remove the apply's intent"))
}

/// Removes the index lock a killed checkout left behind. The apply takes that lock only during
/// its checkout, after the intent was written, so a lock no older than the intent is the killed
/// apply's own; an older one belongs to someone else and stays (the checkout then says so).
fn remove_stale_index_lock(repository: &Repository) -> Result<(), PatchError> {
    let lock = repository.path().join("index.lock");
    let modified =
        |path: &std::path::Path| std::fs::metadata(path).and_then(|meta| meta.modified());
    if let (Ok(locked), Ok(intended)) = (modified(&lock), modified(&path(repository)))
        && locked >= intended
    {
        std::fs::remove_file(&lock)
            .map_err(io("cannot remove the interrupted checkout's index lock"))?;
    }
    Ok(())
}

/// Finishes what an interrupted apply left in `repository`: when HEAD still names the old
/// commit, the new tree is checked out over it (the worktree holds a mix of both) and the
/// reference moves; when it names the new one, only the intent was left. Returns the commit
/// HEAD names now, or `None` when there was nothing to finish. A HEAD that names neither
/// (moved since by hand) is refused: forge cannot tell what the worktree holds.
pub fn settle(repository: &Repository) -> Result<Option<Oid>, PatchError> {
    let Some(intent) = Intent::read(repository)? else {
        return Ok(None);
    };
    let head = repository
        .head()
        .and_then(|head| head.peel_to_commit())
        .map_err(PatchError::git("cannot read HEAD"))?
        .id();
    if head == intent.from {
        remove_stale_index_lock(repository)?;
        if !repository.is_bare() {
            let tree = repository
                .find_commit(intent.to)
                .and_then(|commit| commit.tree())
                .map_err(PatchError::git(
                    "cannot read the interrupted apply's commit",
                ))?;
            // Forced: the worktree holds part of the new tree already, and the apply checked
            // that it held nothing else but HEAD's files.
            repository
                .checkout_tree(
                    tree.as_object(),
                    Some(git2::build::CheckoutBuilder::new().force()),
                )
                .map_err(PatchError::git("cannot finish the interrupted checkout"))?;
        }
        let message = "forge patch apply: finished after an interruption";
        let moved = match &intent.reference {
            Some(reference) => repository
                .reference_matching(reference, intent.to, true, intent.from, message)
                .map(|_| ()),
            None => repository.set_head_detached(intent.to),
        };
        moved.map_err(PatchError::git("cannot move the branch"))?;
    } else if head != intent.to {
        return Err(PatchError::IntentStale {
            path: path(repository),
            head: head.to_string(),
            from: intent.from.to_string(),
            to: intent.to.to_string(),
        });
    }
    remove(repository)?;
    Ok(Some(intent.to))
}
