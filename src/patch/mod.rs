//! Stage: `git format-patch` mail in, commits out (author kept), all or nothing, each exactly
//! as `git am --keep-cr` would make it.
//!
//! 1. `Series::read` takes mbox files (or folders of them, in the order `git format-patch` numbers them) and reads each
//!    message into a `Patch` the way `git mailsplit` and `git mailinfo` do (`mail`,
//!    `mailinfo`, `date`): author, date, commit message, and the patch text.
//! 2. `apply(&Series, &Repository, Mode) -> Applied` replays them onto the repository's `HEAD`
//!    in memory: each patch text is read as `git apply` reads it (`diff`, `binary`), applied
//!    to the tree with git's checks and hunk placement (`engine`, `image`), and committed with
//!    the mail's author. A patch that does not apply is `already applied` only when its
//!    reverse applies or the branch carries it (`patch_id`). Only when every patch has gone
//!    through are the objects written, the worktree checked out and the branch moved; a
//!    conflict leaves the repository exactly as it was.
//! 3. `patched_tree(&PatchTarget, &Series, Mode) -> Patched` does the same onto a scratch repository
//!    made from a recipe folder, a git revision fetched into forge's cache, or a local
//!    repository's HEAD, and hands back the scratch repository and the patched tree for the
//!    build; the user's own files are never touched.

mod apply;
mod binary;
mod date;
mod diff;
mod engine;
mod image;
pub mod intent;
mod mail;
mod mailinfo;
mod patch_id;
mod path_check;
mod target;

use crate::diagnostics::{Advice, Advise, ExitStatus};
use std::path::{Path, PathBuf};

pub use apply::{Applied, Mode, Outcome, PatchDocument, PatchResult, Status, apply};
pub use mail::{Author, Patch};
pub use target::{PatchTarget, Patched, patched_tree, scratch_from_folder};

/// How many files a patch text changes, read as `git apply` reads it; the reason when git
/// would not read it.
pub fn count_files(text: &[u8]) -> Result<usize, String> {
    diff::parse(text)
        .map(|files| files.len())
        .map_err(|error| error.to_string())
}

/// A patch series: patches in the order they apply.
#[derive(Debug, Clone, Default)]
pub struct Series {
    /// The patches, in order.
    pub patches: Vec<Patch>,
}

impl Series {
    /// Reads every path in order: a file is an mbox of one or more patches, a folder holds
    /// such files and they are read in the order of the number each name starts with, then by name (hidden files skipped). With `within` (the
    /// recipe folder, for a series pins.toml names), every path and every file in a folder must
    /// resolve inside it. A special file is refused before it is opened.
    pub fn read(
        paths: &[PathBuf],
        within: Option<&crate::fs::Confined>,
    ) -> Result<Series, PatchError> {
        let inside = |path: &Path| match within {
            Some(folder) => folder.resolve(path).map(drop),
            None => Ok(()),
        };
        let mut patches = Vec::new();
        for path in paths {
            inside(path)?;
            if path.is_dir() {
                let mut files = Vec::new();
                let read_error = |source| PatchError::Read {
                    path: path.clone(),
                    source,
                };
                for entry in std::fs::read_dir(path).map_err(read_error)? {
                    let entry = entry.map_err(read_error)?;
                    if entry.file_name().to_string_lossy().starts_with('.') {
                        continue;
                    }
                    let file = entry.path();
                    inside(&file)?;
                    // A link that leads nowhere, and a folder, hold no patch.
                    let Ok(metadata) = std::fs::metadata(&file) else {
                        continue;
                    };
                    if let Some(kind) = crate::fs::Special::of(metadata.file_type()) {
                        return Err(crate::fs::PathError::Special { path: file, kind }.into());
                    }
                    if metadata.is_file() {
                        files.push(file);
                    }
                }
                files.sort_by_cached_key(|file| series_order(file));
                if files.is_empty() {
                    return Err(PatchError::EmptySeries { path: path.clone() });
                }
                for file in files {
                    patches.extend(mail::read_file(&file)?);
                }
            } else {
                patches.extend(mail::read_file(path)?);
            }
        }
        Ok(Series { patches })
    }

    /// Reads one mbox text as if it were the file `path`.
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<Series, PatchError> {
        Ok(Series {
            patches: mail::parse_mbox(path, bytes)?,
        })
    }
}

/// Where a file goes in its series folder: by the number `git format-patch` starts its name
/// with (`9999-...` before `10000-...`, which a plain sort of names puts the other way), then by
/// name; files whose name starts with no number follow, by name.
fn series_order(file: &Path) -> (bool, u128, std::ffi::OsString) {
    let name = file.file_name().unwrap_or_default().to_owned();
    let text = name.to_string_lossy();
    let digits = text.len() - text.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let number = text[..digits]
        .parse::<u128>()
        .ok()
        .filter(|_| text[digits..].starts_with('-'));
    (number.is_none(), number.unwrap_or(0), name)
}

/// Why a series could not be read or applied.
#[derive(Debug, thiserror::Error)]
pub enum PatchError {
    /// A patch file or folder could not be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file or folder.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A patch file is a special file, or leads out of the recipe folder.
    #[error(transparent)]
    Path(#[from] crate::fs::PathError),
    /// A file is not a `git format-patch` mail.
    #[error("{} is not a patch: {reason}", path.display())]
    NotAPatch {
        /// The file.
        path: PathBuf,
        /// What is missing or wrong.
        reason: String,
    },
    /// A series folder holds no file.
    #[error("patch series folder {} holds no patch", path.display())]
    EmptySeries {
        /// The folder.
        path: PathBuf,
    },
    /// A patch's diff is not one git would read.
    #[error("{patch}: corrupt patch at line {line} of its diff: {reason}")]
    Corrupt {
        /// The patch.
        patch: String,
        /// The line of the patch text (from the mail's patch break on).
        line: usize,
        /// What is wrong there.
        reason: String,
    },
    /// A patch names a path outside the repository or inside `.git`.
    #[error("{patch}: refusing to write `{path}`: {reason}")]
    UnsafePath {
        /// The patch.
        patch: String,
        /// The path it names.
        path: String,
        /// Why that path is refused.
        reason: String,
    },
    /// The result for a file differs from the blob the patch's `index` line names.
    #[error(
        "{patch}: {file}: {detail}; the patch text is damaged or was edited by hand (or forge misapplied it), so nothing was written"
    )]
    SelfCheck {
        /// The patch.
        patch: String,
        /// The file.
        file: String,
        /// The blob ids involved.
        detail: String,
    },
    /// A patch changes a file larger than the patch stage holds in memory.
    #[error("{patch}: cannot patch {file}: {reason}")]
    TooLarge {
        /// The patch.
        patch: String,
        /// The file.
        file: String,
        /// Its size and the limit.
        reason: String,
    },
    /// A patch does not apply.
    #[error("{patch} does not apply: {file}: {hunk}")]
    Conflict {
        /// The patch.
        patch: String,
        /// The file it fails on.
        file: String,
        /// The hunk that failed, as `hunk #2 (@@ -4,12 +4,18 @@)`, or what else failed.
        hunk: String,
    },
    /// The target worktree has changes that a checkout could lose.
    #[error("{} has uncommitted changes: {}", repository.display(), files.join(", "))]
    Dirty {
        /// The repository's worktree.
        repository: PathBuf,
        /// Some of the changed files.
        files: Vec<String>,
    },
    /// Untracked files sit where the series adds files.
    #[error("untracked files in {} are where the series adds files: {}", repository.display(), files.join(", "))]
    Untracked {
        /// The repository's worktree.
        repository: PathBuf,
        /// The files in the way.
        files: Vec<String>,
    },
    /// The worktree could not take the patched files.
    #[error("cannot check out the patched tree in {}", repository.display())]
    Checkout {
        /// The repository's worktree.
        repository: PathBuf,
        /// libgit2's complaint.
        source: Libgit2,
    },
    /// The target has no commit to apply onto.
    #[error("{} has no commit to apply onto (HEAD is unborn)", repository.display())]
    Unborn {
        /// The repository.
        repository: PathBuf,
    },
    /// No committer identity is configured.
    #[error("no committer identity for {}: user.name or user.email is not set", repository.display())]
    Identity {
        /// The repository.
        repository: PathBuf,
    },
    /// Neither the command line nor pins.toml names a series.
    #[error("{} declares no [[patches]] and no series was named", pins.display())]
    NothingToApply {
        /// The pins.toml consulted.
        pins: PathBuf,
    },
    /// The intent of an apply could not be written, read or removed.
    #[error("{what}")]
    Intent {
        /// What forge was doing.
        what: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// An apply's intent file is not one forge wrote.
    #[error("{} is not an intent forge wrote", path.display())]
    IntentInvalid {
        /// The file.
        path: PathBuf,
    },
    /// An interrupted apply cannot be finished: HEAD moved since.
    #[error("{} records an interrupted apply from {from} to {to}, but HEAD is now at {head}", path.display())]
    IntentStale {
        /// The file.
        path: PathBuf,
        /// What HEAD names now.
        head: String,
        /// The commit the apply started from.
        from: String,
        /// The commit it was moving to.
        to: String,
    },
    /// A git operation on the target failed.
    #[error("{what}")]
    Git {
        /// What forge was doing.
        what: String,
        /// libgit2's error.
        source: Libgit2,
    },
}

/// A libgit2 error as a cause: its message, without the class and code its `Display` adds.
#[derive(Debug)]
pub struct Libgit2(pub git2::Error);

impl std::fmt::Display for Libgit2 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.message())
    }
}

impl std::error::Error for Libgit2 {}

impl PatchError {
    pub(crate) fn git(what: impl Into<String>) -> impl FnOnce(git2::Error) -> PatchError {
        let what = what.into();
        move |source| PatchError::Git {
            what,
            source: Libgit2(source),
        }
    }
}

impl Advise for PatchError {
    fn advice(&self) -> Advice {
        Advice::Hint(match self {
            PatchError::Read { .. } => "check the path; series paths are files or folders of `git format-patch` output".to_owned(),
            PatchError::NotAPatch { .. } => "pass files made by `git format-patch` (mbox: a `From <commit> ...` line, `From:`, `Date:`, `Subject:` headers, then the message and a `diff --git`)".to_owned(),
            PatchError::EmptySeries { .. } => "put the `git format-patch` files of the series in that folder, or point pins.toml at another".to_owned(),
            PatchError::Corrupt { .. } => "regenerate the patch with `git format-patch`; hand edits often break hunk line counts".to_owned(),
            PatchError::SelfCheck { .. } => "make the patch again with `git format-patch`; if it was edited on purpose, delete its `index` lines (the check needs them); if the patch is intact, it is forge's bug: please report it with the patch".to_owned(),
            PatchError::TooLarge { .. } => "a file that large is not source a series should change: keep it in an overlay of its own, or commit the change to the file itself; nothing was applied (files a series leaves alone may be of any size)".to_owned(),
            PatchError::UnsafePath { .. } => "a patch may only touch files inside the repository; nothing was applied".to_owned(),
            PatchError::Conflict { .. } => "nothing was applied; rebase the series onto the target (`git rebase`, then `git format-patch --binary`) or fix the target, then run again".to_owned(),
            PatchError::Dirty { .. } => "commit or stash those changes first; nothing was applied".to_owned(),
            PatchError::Untracked { .. } => "move those files away (or add them to the series' base), then run again; nothing was applied".to_owned(),
            PatchError::Checkout { .. } => "`git status` shows what is in the way; HEAD, index and worktree were left as they were".to_owned(),
            PatchError::Unborn { .. } => "commit the files the series applies to, then run again".to_owned(),
            PatchError::Identity { .. } => "set user.name and user.email in git config, or FORGE_COMMITTER_NAME and FORGE_COMMITTER_EMAIL".to_owned(),
            PatchError::NothingToApply { .. } => "name them: `forge patch apply --onto REPO SERIES...`, or add a [[patches]] entry with `series` and `onto`".to_owned(),
            PatchError::Git { .. } => return Advice::Nothing("libgit2's message says what failed"),
            PatchError::Intent { .. } => "check the repository's git folder's permissions and free space".to_owned(),
            PatchError::IntentInvalid { .. } | PatchError::IntentStale { .. } => "HEAD was moved by hand since: check `git status` and `git log`, then delete the file".to_owned(),
            PatchError::Path(error) => return error.advice(),
        })
    }

    fn exit_status(&self) -> ExitStatus {
        match self {
            // A conflict is a check that did not hold; the rest stop forge from doing its job.
            PatchError::Conflict { .. } => ExitStatus::Failure,
            _ => ExitStatus::Error,
        }
    }
}

crate::advised!(PatchError);
