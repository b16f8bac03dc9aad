//! Replaying a `Series` onto a repository: a `Series` and a `Repository` in, an `Applied`
//! report out (one commit per patch, authors kept), and in `Mode::Write` the branch moved.
//!
//! Everything happens in memory first. A second handle on the repository gets an in-memory
//! object store in front of its own, so the trees and commits of the replay never reach the
//! disk unless every patch goes through and no untracked file is in the way; then they are
//! copied out as loose objects, the worktree is checked out once and the branch moved. A
//! conflict drops the in-memory store and leaves HEAD, index, worktree and object store as
//! they were.
//!
//! Per patch: a commit of the branch with the same author and change (patch id, else applying
//! the patch to its parent) means `already applied`; so does a clean reverse apply. Otherwise
//! the diff is applied to a slice of the tree holding only the files it names (`slice`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use git2::{ApplyOptions, Commit, Diff, Oid, Repository, Signature, Tree};

use super::mail::{Author, Patch};
use super::{PatchError, Series, reverse, slice};

/// How far back the branch is searched for commits that already carry a patch.
const HISTORY_SEARCH_LIMIT: usize = 20_000;

/// What `apply` does with the result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Commit the patches, check out the result and move the branch.
    Write,
    /// Say per patch whether it would apply; write nothing.
    Check,
}

/// What became of one patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Committed as `new_id` (`Mode::Write`).
    Applied {
        /// The new commit.
        new_id: Oid,
    },
    /// It would apply (`Mode::Check`).
    Applies,
    /// Its change is already in the target; skipped.
    AlreadyApplied {
        /// The commit on the branch that carries it, when found by author and patch id;
        /// `None` when the patch reverse-applies to the tree.
        by: Option<Oid>,
    },
    /// It does not apply (`Mode::Check`; in `Mode::Write` this is an error instead).
    Conflict {
        /// The file it fails on.
        file: String,
        /// The hunk that fails, or what else went wrong.
        hunk: String,
    },
}

impl Outcome {
    /// A short word for reports: `applied`, `applies`, `already applied`, `conflicts`.
    pub fn status(&self) -> &'static str {
        match self {
            Outcome::Applied { .. } => "applied",
            Outcome::Applies => "applies",
            Outcome::AlreadyApplied { .. } => "already applied",
            Outcome::Conflict { .. } => "conflicts",
        }
    }
}

/// One patch of the series and what became of it.
#[derive(Debug, Clone)]
pub struct PatchResult {
    /// The patch, as people name it (`0001-fix.patch`).
    pub name: String,
    /// The file it came from.
    pub file: PathBuf,
    /// The commit it was made from.
    pub original_id: Option<Oid>,
    /// Its author, as the new commit carries it.
    pub author: Author,
    /// The first line of its message.
    pub subject: String,
    /// What happened.
    pub outcome: Outcome,
}

impl PatchResult {
    /// The record of this patch, as `--json` prints it and a build record can keep it:
    /// `patch`, `file`, `original_id`, `new_id`, `author` (`name`, `email`, `date` as
    /// `seconds +hhmm`), `subject`, `status`, and `conflict` or `applied_as` when they apply.
    pub fn to_json(&self) -> serde_json::Value {
        let mut value = serde_json::json!({
            "patch": self.name,
            "file": self.file,
            "original_id": self.original_id.map(|id| id.to_string()),
            "new_id": match &self.outcome {
                Outcome::Applied { new_id } => Some(new_id.to_string()),
                _ => None,
            },
            "author": {
                "name": self.author.name,
                "email": self.author.email,
                "date": self.author.raw_date(),
            },
            "subject": self.subject,
            "status": self.outcome.status(),
        });
        let object = value.as_object_mut().expect("built as an object");
        match &self.outcome {
            Outcome::Conflict { file, hunk } => {
                object.insert(
                    "conflict".to_owned(),
                    serde_json::json!({ "file": file, "hunk": hunk }),
                );
            }
            Outcome::AlreadyApplied { by: Some(id) } => {
                object.insert("applied_as".to_owned(), serde_json::json!(id.to_string()));
            }
            _ => {}
        }
        value
    }
}

/// What `apply` did.
#[derive(Debug, Clone)]
pub struct Applied {
    /// The commit the series was applied onto.
    pub base: Oid,
    /// The commit at the end of the series (`base` when nothing was applied; in `Mode::Check`
    /// an in-memory commit that was not kept).
    pub head: Oid,
    /// The tree of `head`.
    pub tree: Oid,
    /// Every patch, in order.
    pub patches: Vec<PatchResult>,
}

impl Applied {
    /// How many patches have `status`.
    pub fn count(&self, status: &str) -> usize {
        self.patches
            .iter()
            .filter(|result| result.outcome.status() == status)
            .count()
    }

    /// Whether any patch conflicts.
    pub fn has_conflicts(&self) -> bool {
        self.count("conflicts") > 0
    }
}

/// Replays `series` onto the `HEAD` of `repository`. In `Mode::Write` a worktree must be clean;
/// on success each applied patch is one new commit with the mail's author and message, the
/// worktree and index hold the result and the branch points at it. On any error the
/// repository is left exactly as it was.
pub fn apply(series: &Series, repository: &Repository, mode: Mode) -> Result<Applied, PatchError> {
    let location = repository
        .workdir()
        .unwrap_or_else(|| repository.path())
        .to_owned();
    // A handle of our own: the in-memory object store added to it must not outlive this call
    // on the caller's handle, where later writes would silently stay in memory.
    let repository = Repository::open(repository.path()).map_err(PatchError::git(format!(
        "cannot open {}",
        location.display()
    )))?;
    let head = match repository.head() {
        Ok(head) => head,
        Err(error) if error.code() == git2::ErrorCode::UnbornBranch => {
            return Err(PatchError::Unborn {
                repository: location,
            });
        }
        Err(error) => return Err(PatchError::git("cannot read HEAD")(error)),
    };
    let branch = if head.is_branch() {
        head.name().ok().map(|name| name.to_string())
    } else {
        None
    };
    let base = head
        .peel_to_commit()
        .map_err(PatchError::git("HEAD does not name a commit"))?;
    if mode == Mode::Write && !repository.is_bare() {
        check_clean(&repository, &location)?;
    }
    let committer = match (committer(&repository), mode) {
        (Some(committer), _) => committer,
        (None, Mode::Check) => Signature::now("forge", "forge@localhost")
            .map_err(PatchError::git("cannot make a signature"))?,
        (None, Mode::Write) => {
            return Err(PatchError::Identity {
                repository: location,
            });
        }
    };

    let odb = repository
        .odb()
        .map_err(PatchError::git("cannot open the object store"))?;
    let memory = odb
        .add_new_mempack_backend(1000)
        .map_err(PatchError::git("cannot add an in-memory object store"))?;
    let replayed = Replay {
        repository: &repository,
        committer: &committer,
        mode,
        history: None,
    }
    .run(series, &base);
    let applied = match replayed {
        Ok(applied) => applied,
        Err(error) => {
            let _ = memory.reset();
            return Err(error);
        }
    };
    if mode == Mode::Check || applied.head == applied.base {
        let _ = memory.reset();
        return Ok(applied);
    }

    // Every patch went through. Look for untracked files where the series puts files first,
    // so that a refusal leaves even the object store untouched; then keep the objects, then
    // show them.
    if let Err(error) = check_untracked(&repository, &location, &base, applied.tree) {
        let _ = memory.reset();
        return Err(error);
    }
    let persisted = persist(&repository, &applied);
    let _ = memory.reset();
    persisted?;
    publish(
        &repository,
        branch.as_deref(),
        &base,
        &applied,
        series.patches.len(),
    )?;
    Ok(applied)
}

/// Copies the objects the replay made (commits, and the trees and blobs they added) from the
/// in-memory store to the repository's own, as loose objects. Writing them this way costs less
/// than the delta search of a pack, and a later `git gc` packs them as usual.
fn persist(repository: &Repository, applied: &Applied) -> Result<(), PatchError> {
    let failed = PatchError::git("cannot write the new commits");
    let memory = repository
        .odb()
        .map_err(PatchError::git("cannot write the new commits"))?;
    // A handle without the in-memory store, so that writes reach the disk.
    let on_disk = Repository::open(repository.path())
        .map_err(PatchError::git("cannot write the new commits"))?;
    let disk = on_disk
        .odb()
        .map_err(PatchError::git("cannot write the new commits"))?;
    let copy = |id: Oid| -> Result<(), git2::Error> {
        let object = memory.read(id)?;
        disk.write(object.kind(), object.data())?;
        Ok(())
    };
    let mut copied = Result::<(), git2::Error>::Ok(());
    for result in &applied.patches {
        let Outcome::Applied { new_id } = result.outcome else {
            continue;
        };
        copied = repository
            .find_commit(new_id)
            .and_then(|commit| copy_tree(repository, &disk, commit.tree_id(), &copy))
            .and_then(|()| copy(new_id));
        if copied.is_err() {
            break;
        }
    }
    copied.map_err(failed)
}

/// Copies tree `id` and what it holds that `disk` lacks, children first.
fn copy_tree(
    repository: &Repository,
    disk: &git2::Odb<'_>,
    id: Oid,
    copy: &dyn Fn(Oid) -> Result<(), git2::Error>,
) -> Result<(), git2::Error> {
    if disk.exists(id) {
        return Ok(());
    }
    let tree = repository.find_tree(id)?;
    for entry in tree.iter() {
        match entry.kind() {
            Some(git2::ObjectType::Tree) => copy_tree(repository, disk, entry.id(), copy)?,
            Some(git2::ObjectType::Blob) if !disk.exists(entry.id()) => copy(entry.id())?,
            _ => {}
        }
    }
    copy(id)
}

/// Checks out the new tree and moves the branch (or a detached HEAD) to the new head. If the
/// branch cannot be moved the old tree is checked out again.
fn publish(
    repository: &Repository,
    branch: Option<&str>,
    base: &Commit<'_>,
    applied: &Applied,
    count: usize,
) -> Result<(), PatchError> {
    // Writing the files and moving the branch finish together, or never start: a signal that
    // arrives meanwhile ends forge once they are done.
    let _held = HeldSignals::hold();
    checkout(repository, applied.tree)?;
    let message = format!("forge patch apply: {count} patches");
    let moved = match branch {
        Some(branch) => repository
            .reference_matching(branch, applied.head, true, base.id(), &message)
            .map(|_| ()),
        None => repository.set_head_detached(applied.head),
    };
    if let Err(error) = moved {
        if !repository.is_bare() {
            let old_tree = base
                .tree()
                .map_err(PatchError::git("cannot read HEAD's tree"))?;
            let _ = repository.checkout_tree(
                old_tree.as_object(),
                Some(git2::build::CheckoutBuilder::new().force()),
            );
        }
        return Err(PatchError::git("cannot move the branch")(error));
    }
    Ok(())
}

/// SIGINT, SIGTERM and SIGHUP held back from this thread (forge's only one while it applies)
/// for as long as the value lives; one that arrived meanwhile is delivered when it is dropped.
struct HeldSignals {
    previous: libc::sigset_t,
}

impl HeldSignals {
    fn hold() -> Self {
        // SAFETY: both sets are initialised (zeroed, then emptied) before use, and
        // pthread_sigmask only changes the calling thread's signal mask.
        unsafe {
            let mut held: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut held);
            for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                libc::sigaddset(&mut held, signal);
            }
            let mut previous: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_BLOCK, &held, &mut previous);
            Self { previous }
        }
    }
}

impl Drop for HeldSignals {
    fn drop(&mut self) {
        // SAFETY: `previous` is the mask pthread_sigmask filled in when the signals were held.
        unsafe {
            libc::pthread_sigmask(libc::SIG_SETMASK, &self.previous, std::ptr::null_mut());
        }
    }
}

/// Refuses when a file the series adds already exists, untracked, in the worktree (libgit2's
/// dry-run checkout does not look for conflicts, so this is checked here).
fn check_untracked(
    repository: &Repository,
    location: &Path,
    base: &Commit<'_>,
    tree: Oid,
) -> Result<(), PatchError> {
    let Some(workdir) = repository.workdir() else {
        return Ok(());
    };
    let trees = base
        .tree()
        .and_then(|old| Ok((old, repository.find_tree(tree)?)));
    let (old, new) = trees.map_err(PatchError::git("cannot read the patched tree"))?;
    let diff = repository
        .diff_tree_to_tree(Some(&old), Some(&new), None)
        .map_err(PatchError::git("cannot compare the patched tree with HEAD"))?;
    let in_the_way: Vec<String> = diff
        .deltas()
        .filter(|delta| matches!(delta.status(), git2::Delta::Added | git2::Delta::Typechange))
        .filter_map(|delta| delta.new_file().path().map(Path::to_owned))
        .filter(|path| {
            let tracked = old.get_path(path).is_ok();
            !tracked && std::fs::symlink_metadata(workdir.join(path)).is_ok()
        })
        .map(|path| path.display().to_string())
        .collect();
    if in_the_way.is_empty() {
        return Ok(());
    }
    Err(PatchError::Untracked {
        repository: location.to_owned(),
        files: in_the_way,
    })
}

/// Checks out `tree` in safe mode: nothing is overwritten that differs from HEAD, and libgit2
/// finds every conflict before it writes a file, so a refusal changes nothing. A bare
/// repository has nothing to check out.
fn checkout(repository: &Repository, tree: Oid) -> Result<(), PatchError> {
    if repository.is_bare() {
        return Ok(());
    }
    let tree = repository
        .find_tree(tree)
        .map_err(PatchError::git("cannot read the patched tree"))?;
    let mut options = git2::build::CheckoutBuilder::new();
    options.safe();
    repository
        .checkout_tree(tree.as_object(), Some(&mut options))
        .map_err(|source| PatchError::Checkout {
            repository: repository
                .workdir()
                .unwrap_or_else(|| repository.path())
                .to_owned(),
            source,
        })
}

/// Refuses a worktree or index that differs from HEAD (untracked files are fine; the checkout
/// refuses to overwrite one).
fn check_clean(repository: &Repository, location: &Path) -> Result<(), PatchError> {
    let mut options = git2::StatusOptions::new();
    options
        .include_untracked(false)
        .include_ignored(false)
        .exclude_submodules(true);
    let statuses = repository
        .statuses(Some(&mut options))
        .map_err(PatchError::git("cannot read the worktree status"))?;
    let changed: Vec<String> = statuses
        .iter()
        .filter(|entry| entry.status() != git2::Status::CURRENT)
        .map(|entry| String::from_utf8_lossy(entry.path_bytes()).into_owned())
        .collect();
    if changed.is_empty() {
        return Ok(());
    }
    let mut files: Vec<String> = changed.iter().take(5).cloned().collect();
    if changed.len() > files.len() {
        files.push(format!("and {} more", changed.len() - files.len()));
    }
    Err(PatchError::Dirty {
        repository: location.to_owned(),
        files,
    })
}

/// The committer: `FORGE_COMMITTER_NAME` / `FORGE_COMMITTER_EMAIL`, else the repository's git
/// config; the time is `SOURCE_DATE_EPOCH` when set, else 0 in a scratch repository, else now.
fn committer(repository: &Repository) -> Option<Signature<'static>> {
    let config = repository.config().ok();
    let setting = |variable: &str, key: &str| {
        std::env::var(variable)
            .ok()
            .filter(|value| !value.trim().is_empty())
            .or_else(|| config.as_ref()?.get_string(key).ok())
    };
    let name = setting("FORGE_COMMITTER_NAME", "user.name")?;
    let email = setting("FORGE_COMMITTER_EMAIL", "user.email")?;
    let epoch = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|value| value.trim().parse::<i64>().ok());
    // A scratch copy lives only inside one build: a fixed time keeps its commit ids, and so
    // the ids forge.lock records, the same from one run to the next.
    let scratch = config
        .as_ref()
        .and_then(|config| config.get_bool(super::target::SCRATCH_KEY).ok())
        .unwrap_or(false);
    match (epoch, scratch) {
        (Some(seconds), _) => Signature::new(&name, &email, &git2::Time::new(seconds, 0)).ok(),
        (None, true) => Signature::new(&name, &email, &git2::Time::new(0, 0)).ok(),
        (None, false) => Signature::now(&name, &email).ok(),
    }
}

struct Replay<'a> {
    repository: &'a Repository,
    committer: &'a Signature<'static>,
    mode: Mode,
    /// Commits of the branch by author email and time, read on first need.
    history: Option<HashMap<(String, i64), Vec<Oid>>>,
}

impl Replay<'_> {
    fn run(mut self, series: &Series, base: &Commit<'_>) -> Result<Applied, PatchError> {
        let repository = self.repository;
        let mut parent = base.clone();
        let mut tree = base
            .tree()
            .map_err(PatchError::git("cannot read HEAD's tree"))?;
        let mut results = Vec::with_capacity(series.patches.len());
        for patch in &series.patches {
            let name = patch.name();
            let diff = Diff::from_buffer(&patch.diff).map_err(|source| PatchError::Diff {
                patch: name.clone(),
                source,
            })?;
            check_paths(&name, patch, &diff, &tree)?;
            // Only the files the diff names take part; see `slice`.
            let paths = slice::touched_paths(&patch.paths, &diff);
            let files = slice::slice(repository, &tree, &paths).map_err(PatchError::git(
                format!("{name}: cannot read the files it touches"),
            ))?;
            let outcome = if let Some(commit) = self.carried_by(patch, &diff, base.id())? {
                Outcome::AlreadyApplied { by: Some(commit) }
            } else if reverse_applies(repository, &files, patch, &diff) {
                Outcome::AlreadyApplied { by: None }
            } else {
                match repository.apply_to_tree(&files, &diff, None) {
                    Ok(index) => {
                        let changes = slice::changes(&index, &paths);
                        let new_tree = slice::graft(repository, Some(&tree), &changes)
                            .and_then(|id| repository.find_tree(id))
                            .map_err(PatchError::git(format!("{name}: cannot write its tree")))?;
                        let author = patch.author.signature().map_err(PatchError::git(format!(
                            "{name}: unusable author {}",
                            patch.author.identity()
                        )))?;
                        let commit_id = repository
                            .commit(
                                None,
                                &author,
                                self.committer,
                                &patch.message,
                                &new_tree,
                                &[&parent],
                            )
                            .map_err(PatchError::git(format!("{name}: cannot commit")))?;
                        parent = repository
                            .find_commit(commit_id)
                            .map_err(PatchError::git(format!("{name}: cannot read its commit")))?;
                        tree = new_tree;
                        match self.mode {
                            Mode::Write => Outcome::Applied { new_id: commit_id },
                            Mode::Check => Outcome::Applies,
                        }
                    }
                    Err(error) => {
                        let (file, hunk) = locate_conflict(repository, &files, &diff, &error);
                        if self.mode == Mode::Write {
                            return Err(PatchError::Conflict {
                                patch: name,
                                file,
                                hunk,
                            });
                        }
                        Outcome::Conflict { file, hunk }
                    }
                }
            };
            results.push(PatchResult {
                name,
                file: patch.file.clone(),
                original_id: patch.original_id,
                author: patch.author.clone(),
                subject: patch.subject.clone(),
                outcome,
            });
        }
        Ok(Applied {
            base: base.id(),
            head: parent.id(),
            tree: tree.id(),
            patches: results,
        })
    }

    /// A commit of the branch with the patch's author (email and time) whose change is the
    /// patch's: same patch id, or the patch turns its parent's tree into its tree.
    fn carried_by(
        &mut self,
        patch: &Patch,
        diff: &Diff<'_>,
        base: Oid,
    ) -> Result<Option<Oid>, PatchError> {
        let repository = self.repository;
        let history = match &mut self.history {
            Some(history) => history,
            None => self.history.insert(read_history(repository, base)?),
        };
        let key = (patch.author.email.clone(), patch.author.seconds);
        let Some(candidates) = history.get(&key) else {
            return Ok(None);
        };
        let patch_id = diff.patchid(None).ok();
        for &candidate in candidates {
            let Ok(commit) = repository.find_commit(candidate) else {
                continue;
            };
            let (Ok(parent), Ok(tree)) = (commit.parent(0), commit.tree()) else {
                continue;
            };
            let Ok(parent_tree) = parent.tree() else {
                continue;
            };
            if let Ok(mut commit_diff) =
                repository.diff_tree_to_tree(Some(&parent_tree), Some(&tree), None)
            {
                let _ = commit_diff.find_similar(None);
                if patch_id.is_some() && commit_diff.patchid(None).ok() == patch_id {
                    return Ok(Some(candidate));
                }
            }
            // Binary and renamed changes can hash differently when parsed from text than when
            // computed from trees; applying the patch to the parent settles it.
            if let Ok(mut index) = repository.apply_to_tree(&parent_tree, diff, None)
                && index.write_tree_to(repository).ok() == Some(tree.id())
            {
                return Ok(Some(candidate));
            }
        }
        Ok(None)
    }
}

/// The commits reachable from `base` (up to a limit), by author email and time.
fn read_history(
    repository: &Repository,
    base: Oid,
) -> Result<HashMap<(String, i64), Vec<Oid>>, PatchError> {
    let mut walk = repository
        .revwalk()
        .map_err(PatchError::git("cannot walk the history"))?;
    walk.push(base)
        .map_err(PatchError::git("cannot walk the history"))?;
    let mut history: HashMap<(String, i64), Vec<Oid>> = HashMap::new();
    for id in walk.take(HISTORY_SEARCH_LIMIT).flatten() {
        let Ok(commit) = repository.find_commit(id) else {
            continue;
        };
        let author = commit.author();
        let email = String::from_utf8_lossy(author.email_bytes()).into_owned();
        history
            .entry((email, author.when().seconds()))
            .or_default()
            .push(id);
    }
    Ok(history)
}

/// Whether the patch's change is already in `tree`: its reverse applies, and applying the patch
/// to what the reverse gives yields `tree` again (so a mode change or a rename that libgit2
/// does not check on the way back cannot fool it).
fn reverse_applies(
    repository: &Repository,
    tree: &Tree<'_>,
    patch: &Patch,
    diff: &Diff<'_>,
) -> bool {
    let Some(reversed) = reverse::reverse(&patch.diff) else {
        return false;
    };
    let Ok(reversed) = Diff::from_buffer(&reversed) else {
        return false;
    };
    let mut check = ApplyOptions::new();
    check.check(true);
    if repository
        .apply_to_tree(tree, &reversed, Some(&mut check))
        .is_err()
    {
        return false;
    }
    let before = repository
        .apply_to_tree(tree, &reversed, None)
        .and_then(|mut index| index.write_tree_to(repository))
        .and_then(|id| repository.find_tree(id));
    let Ok(before) = before else {
        return false;
    };
    repository
        .apply_to_tree(&before, diff, None)
        .and_then(|mut index| index.write_tree_to(repository))
        .is_ok_and(|id| id == tree.id())
}

/// Refuses paths that leave the repository or reach into `.git`: as the patch writes them, and
/// as libgit2 read them.
fn check_paths(
    name: &str,
    patch: &Patch,
    diff: &Diff<'_>,
    tree: &Tree<'_>,
) -> Result<(), PatchError> {
    let parsed = diff.deltas().flat_map(|delta| {
        [delta.old_file(), delta.new_file()]
            .into_iter()
            .filter_map(|file| {
                file.path_bytes()
                    .map(|path| String::from_utf8_lossy(path).into_owned())
            })
            .collect::<Vec<_>>()
    });
    for path in patch.paths.iter().cloned().chain(parsed) {
        let parts: Vec<&str> = path.split('/').collect();
        let reason = if path.starts_with('/') {
            Some("it is an absolute path")
        } else if parts.iter().any(|part| *part == ".." || *part == ".") {
            Some("it climbs out of the repository")
        } else if parts.iter().any(|part| {
            part.trim_end_matches([' ', '.'])
                .eq_ignore_ascii_case(".git")
        }) {
            Some("it lies inside .git")
        } else if path.is_empty() || path.contains('\0') {
            Some("it is not a file name")
        } else if through_symlink(tree, &parts) {
            // git apply refuses this too ("beyond a symbolic link"): writing there would turn
            // the link into a folder, or follow it out of the repository on checkout.
            Some("it goes through a symbolic link")
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(PatchError::UnsafePath {
                patch: name.to_owned(),
                path,
                reason,
            });
        }
    }
    Ok(())
}

/// Whether a folder on the way to `parts` (not the file itself) is a symbolic link in `tree`.
fn through_symlink(tree: &Tree<'_>, parts: &[&str]) -> bool {
    (1..parts.len()).any(|end| {
        tree.get_path(Path::new(&parts[..end].join("/")))
            .is_ok_and(|entry| entry.filemode() == i32::from(git2::FileMode::Link))
    })
}

/// The file and hunk a failed diff stops at: libgit2 says only `hunk at line N did not apply`,
/// so the diff is tried one file at a time, then one hunk more at a time.
fn locate_conflict(
    repository: &Repository,
    tree: &Tree<'_>,
    diff: &Diff<'_>,
    error: &git2::Error,
) -> (String, String) {
    let deltas = diff.deltas().len();
    for target in 0..deltas {
        if try_apply(repository, tree, diff, target, usize::MAX).is_ok() {
            continue;
        }
        let delta = diff.get_delta(target).expect("index in range");
        let file = delta
            .new_file()
            .path()
            .or_else(|| delta.old_file().path())
            .map(|path| path.display().to_string())
            .unwrap_or_else(|| "?".to_owned());
        let whole = try_apply(repository, tree, diff, target, 0);
        if let Err(whole) = whole {
            // It fails before any hunk: the file is missing, or already exists.
            return (file, whole.message().to_owned());
        }
        let patch = git2::Patch::from_diff(diff, target).ok().flatten();
        let hunks = patch.as_ref().map_or(0, git2::Patch::num_hunks);
        for hunk in 0..hunks {
            if try_apply(repository, tree, diff, target, hunk + 1).is_err() {
                let header = patch
                    .as_ref()
                    .and_then(|patch| patch.hunk(hunk).ok())
                    .map(|(hunk, _)| String::from_utf8_lossy(hunk.header()).trim().to_owned())
                    .unwrap_or_default();
                let header = match header.find(" @@") {
                    Some(end) => header[..end + 3].to_owned(),
                    None => header,
                };
                return (
                    file,
                    format!("hunk #{} ({header}) does not apply", hunk + 1),
                );
            }
        }
        return (file, error.message().to_owned());
    }
    ("?".to_owned(), error.message().to_owned())
}

/// Applies only delta `target` of `diff`, and only its first `hunks` hunks, as a dry run.
fn try_apply(
    repository: &Repository,
    tree: &Tree<'_>,
    diff: &Diff<'_>,
    target: usize,
    hunks: usize,
) -> Result<(), git2::Error> {
    let mut delta_index = 0;
    let mut hunk_index = 0;
    let mut options = ApplyOptions::new();
    options.check(true);
    options.delta_callback(move |_| {
        let keep = delta_index == target;
        delta_index += 1;
        keep
    });
    options.hunk_callback(move |_| {
        let keep = hunk_index < hunks;
        hunk_index += 1;
        keep
    });
    repository
        .apply_to_tree(tree, diff, Some(&mut options))
        .map(|_| ())
}
