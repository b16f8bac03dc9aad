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
//! Per patch, git decides: the diff is applied by `engine` exactly as `git am` applies it, and
//! the commit is written byte for byte as `git am` writes it (same tree, author, message; the
//! committer is forge's). When the diff does not apply, the patch is `already applied` only if
//! its reverse applies (`git apply -R --check`), or if a commit of the branch with the same
//! author and date carries the same change (patch id); otherwise it conflicts.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use git2::{Commit, ObjectType, Oid, Repository};

use super::diff::{self, FilePatch};
use super::engine::{self, ApplyRefusalKind, Write};
use super::intent::{self, Intent};
use super::mail::{Author, Patch, raw_date, without_crud};
use super::{PatchError, Series, patch_id};

/// The git config key that marks a scratch repository, whose commits get a fixed committer (see
/// `committer`); `target` writes it.
pub(super) const SCRATCH_KEY: &str = "forge.scratch";

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

/// What became of a patch, without the details: for counts and reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Status {
    /// Committed.
    #[serde(rename = "applied")]
    Applied,
    /// It would apply.
    #[serde(rename = "applies")]
    Applies,
    /// Its change is already there.
    #[serde(rename = "already applied")]
    AlreadyApplied,
    /// It does not apply.
    #[serde(rename = "conflicts")]
    Conflicts,
}

impl Status {
    /// The word reports use: `applied`, `applies`, `already applied`, `conflicts`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Applied => "applied",
            Status::Applies => "applies",
            Status::AlreadyApplied => "already applied",
            Status::Conflicts => "conflicts",
        }
    }
}

impl Outcome {
    /// The outcome without its details.
    pub fn status(&self) -> Status {
        match self {
            Outcome::Applied { .. } => Status::Applied,
            Outcome::Applies => Status::Applies,
            Outcome::AlreadyApplied { .. } => Status::AlreadyApplied,
            Outcome::Conflict { .. } => Status::Conflicts,
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
    /// The record of this patch, as `--json` prints it: `patch`, `file`, `original_id`,
    /// `new_id`, `author` (`name`, `email`, `date` as `seconds +hhmm`), `subject`, `status`, and
    /// `conflict` or `applied_as` when they apply.
    pub fn document(&self) -> PatchDocument<'_> {
        PatchDocument {
            patch: &self.name,
            file: &self.file,
            original_id: self.original_id.map(|id| id.to_string()),
            new_id: match &self.outcome {
                Outcome::Applied { new_id } => Some(new_id.to_string()),
                _ => None,
            },
            author: AuthorDocument {
                name: &self.author.name,
                email: &self.author.email,
                date: self.author.raw_date(),
            },
            subject: &self.subject,
            status: self.outcome.status(),
            conflict: match &self.outcome {
                Outcome::Conflict { file, hunk } => Some(ConflictDocument { file, hunk }),
                _ => None,
            },
            applied_as: match &self.outcome {
                Outcome::AlreadyApplied { by: Some(id) } => Some(id.to_string()),
                _ => None,
            },
        }
    }
}

/// One patch as `forge patch --json` prints it (`PatchResult::document`).
#[derive(Debug, serde::Serialize)]
pub struct PatchDocument<'a> {
    patch: &'a str,
    file: &'a std::path::Path,
    original_id: Option<String>,
    new_id: Option<String>,
    author: AuthorDocument<'a>,
    subject: &'a str,
    status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    conflict: Option<ConflictDocument<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    applied_as: Option<String>,
}

/// A patch's author in `PatchDocument`.
#[derive(Debug, serde::Serialize)]
struct AuthorDocument<'a> {
    name: &'a str,
    email: &'a str,
    date: String,
}

/// Where a patch conflicts, in `PatchDocument`.
#[derive(Debug, serde::Serialize)]
struct ConflictDocument<'a> {
    file: &'a str,
    hunk: &'a str,
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
    pub fn count(&self, status: Status) -> usize {
        self.patches
            .iter()
            .filter(|result| result.outcome.status() == status)
            .count()
    }

    /// Whether any patch conflicts.
    pub fn has_conflicts(&self) -> bool {
        self.count(Status::Conflicts) > 0
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
        (None, Mode::Check) => identity_line(b"forge", b"forge@localhost", now()),
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
    // From the first object written to the branch moved, a signal waits: it ends forge once
    // both are done, never between them.
    let _held = HeldSignals::hold();
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

/// Writes the objects the replay made (commits, and the trees and blobs they added) from the
/// in-memory store to the repository's own, as one pack without deltas: two files however
/// long the series, where loose objects would be a file each, and libgit2's indexer hashes
/// every object again (with SHA-1 collision detection) before the pack is kept.
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
    let mut objects = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for result in &applied.patches {
        let Outcome::Applied { new_id } = result.outcome else {
            continue;
        };
        let commit = repository
            .find_commit(new_id)
            .map_err(PatchError::git("cannot write the new commits"))?;
        new_objects(repository, &disk, commit.tree_id(), &mut seen, &mut objects)
            .map_err(PatchError::git("cannot write the new commits"))?;
        if seen.insert(new_id) {
            objects.push(new_id);
        }
    }
    write_pack(&memory, &disk, &objects).map_err(failed)?;
    // The handle that moves the branch must see the new pack.
    memory
        .refresh()
        .map_err(PatchError::git("cannot read the new commits back"))
}

/// Tree `id` and what it holds that `disk` lacks, children first.
fn new_objects(
    repository: &Repository,
    disk: &git2::Odb<'_>,
    id: Oid,
    seen: &mut std::collections::HashSet<Oid>,
    objects: &mut Vec<Oid>,
) -> Result<(), git2::Error> {
    if seen.contains(&id) || disk.exists(id) {
        return Ok(());
    }
    seen.insert(id);
    let tree = repository.find_tree(id)?;
    for entry in tree.iter() {
        match entry.kind() {
            Some(ObjectType::Tree) => new_objects(repository, disk, entry.id(), seen, objects)?,
            Some(ObjectType::Blob) if !seen.contains(&entry.id()) && !disk.exists(entry.id()) => {
                seen.insert(entry.id());
                objects.push(entry.id());
            }
            _ => {}
        }
    }
    objects.push(id);
    Ok(())
}

/// `objects`, read from `memory`, written into `disk` as one pack of whole (undeltified)
/// objects.
fn write_pack(
    memory: &git2::Odb<'_>,
    disk: &git2::Odb<'_>,
    objects: &[Oid],
) -> Result<(), git2::Error> {
    use sha1::Digest as _;
    use std::io::Write as _;
    if objects.is_empty() {
        return Ok(());
    }
    let io =
        |error: std::io::Error| git2::Error::from_str(&format!("cannot write the pack: {error}"));
    let mut writer = disk.packwriter()?;
    let mut checksum = sha1::Sha1::new();
    let mut emit =
        |bytes: &[u8], writer: &mut git2::OdbPackwriter<'_>| -> Result<(), git2::Error> {
            checksum.update(bytes);
            writer.write_all(bytes).map_err(io)
        };
    let mut header = b"PACK".to_vec();
    header.extend_from_slice(&2u32.to_be_bytes());
    header.extend_from_slice(
        &u32::try_from(objects.len())
            .unwrap_or(u32::MAX)
            .to_be_bytes(),
    );
    emit(&header, &mut writer)?;
    for &id in objects {
        let object = memory.read(id)?;
        let kind: u8 = match object.kind() {
            ObjectType::Commit => 1,
            ObjectType::Tree => 2,
            ObjectType::Blob => 3,
            _ => 4,
        };
        let data = object.data();
        let mut size = data.len();
        let mut entry = vec![(kind << 4) | (size & 0x0f) as u8];
        size >>= 4;
        while size > 0 {
            *entry.last_mut().expect("one byte") |= 0x80;
            entry.push((size & 0x7f) as u8);
            size >>= 7;
        }
        let mut encoder = flate2::write::ZlibEncoder::new(entry, flate2::Compression::fast());
        encoder.write_all(data).map_err(io)?;
        emit(&encoder.finish().map_err(io)?, &mut writer)?;
    }
    let trailer = checksum.finalize();
    writer.write_all(&trailer).map_err(io)?;
    writer.commit()?;
    Ok(())
}

/// Checks out the new tree and moves the branch (or a detached HEAD) to the new head. If the
/// branch cannot be moved the old tree is checked out again. From before the checkout until
/// the branch moved, `intent` records the move, so that a kill between them can be finished.
fn publish(
    repository: &Repository,
    branch: Option<&str>,
    base: &Commit<'_>,
    applied: &Applied,
    count: usize,
) -> Result<(), PatchError> {
    let intent = Intent {
        reference: branch.map(str::to_owned),
        from: base.id(),
        to: applied.head,
    };
    intent.write(repository)?;
    if let Err(error) = checkout(repository, applied.tree) {
        intent::remove(repository)?;
        return Err(error);
    }
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
        intent::remove(repository)?;
        return Err(PatchError::git("cannot move the branch")(error));
    }
    intent::remove(repository)
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
            source: super::Libgit2(source),
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

/// The committer line: `FORGE_COMMITTER_NAME` / `FORGE_COMMITTER_EMAIL`, else the
/// repository's git config; the time is `SOURCE_DATE_EPOCH` when set, else now. In a scratch
/// repository it is always `forge <forge@localhost>` at time 0: a scratch copy lives only inside
/// one build, and a committer of its own makes its commit ids, which the image's labels and
/// forge.lock name, a function of the series and its target alone, whoever builds where.
fn committer(repository: &Repository) -> Option<Vec<u8>> {
    let config = repository.config().ok();
    let scratch = config
        .as_ref()
        .and_then(|config| config.get_bool(SCRATCH_KEY).ok())
        .unwrap_or(false);
    if scratch {
        return Some(identity_line(b"forge", b"forge@localhost", (0, 0)));
    }
    let setting = |variable: &str, key: &str| {
        std::env::var(variable)
            .ok()
            .filter(|value| !value.trim().is_empty())
            .or_else(|| config.as_ref()?.get_string(key).ok())
    };
    let name = setting("FORGE_COMMITTER_NAME", "user.name")?;
    let email = setting("FORGE_COMMITTER_EMAIL", "user.email")?;
    let when = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|value| value.trim().parse::<i64>().ok())
        .map_or_else(now, |seconds| (seconds, 0));
    Some(identity_line(name.as_bytes(), email.as_bytes(), when))
}

/// Now, with the local offset in minutes.
fn now() -> (i64, i32) {
    let now = chrono::Local::now();
    (
        now.timestamp(),
        chrono::Offset::fix(now.offset()).local_minus_utc() / 60,
    )
}

/// `Name <email> seconds +hhmm`, trimmed as git trims identities.
fn identity_line(name: &[u8], email: &[u8], (seconds, offset): (i64, i32)) -> Vec<u8> {
    let mut line = without_crud(name);
    line.extend_from_slice(b" <");
    line.extend_from_slice(&without_crud(email));
    line.extend_from_slice(b"> ");
    line.extend_from_slice(raw_date(seconds, offset).as_bytes());
    line
}

/// Writes a commit object exactly as `git commit-tree` does.
fn write_commit(
    repository: &Repository,
    tree: Oid,
    parent: Oid,
    author: &Author,
    committer: &[u8],
    message: &[u8],
) -> Result<Oid, git2::Error> {
    let mut object = format!("tree {tree}\nparent {parent}\nauthor ").into_bytes();
    object.extend_from_slice(&author.ident_line());
    object.extend_from_slice(b"\ncommitter ");
    object.extend_from_slice(committer);
    object.extend_from_slice(b"\n\n");
    object.extend_from_slice(message);
    repository.odb()?.write(ObjectType::Commit, &object)
}

struct Replay<'a> {
    repository: &'a Repository,
    committer: &'a [u8],
    mode: Mode,
    /// Commits of the branch by author email and time, read on first need.
    history: Option<HashMap<(String, i64), Vec<Oid>>>,
}

impl Replay<'_> {
    fn run(mut self, series: &Series, base: &Commit<'_>) -> Result<Applied, PatchError> {
        let repository = self.repository;
        let mut parent = base.id();
        let mut tree = base.tree_id();
        let mut results = Vec::with_capacity(series.patches.len());
        for patch in &series.patches {
            let name = patch.name();
            let files = diff::parse(&patch.diff).map_err(|error| PatchError::Corrupt {
                patch: name.clone(),
                line: error.line,
                reason: error.reason,
            })?;
            let current = repository
                .find_tree(tree)
                .map_err(PatchError::git("cannot read the tree to patch"))?;
            let outcome = match engine::apply(repository, &current, &files, Write::Tree) {
                Ok(new_tree) => {
                    let new_tree = new_tree.expect("a written tree");
                    let commit = write_commit(
                        repository,
                        new_tree,
                        parent,
                        &patch.author,
                        self.committer,
                        &patch.message,
                    )
                    .map_err(PatchError::git(format!("{name}: cannot commit")))?;
                    parent = commit;
                    tree = new_tree;
                    match self.mode {
                        Mode::Write => Outcome::Applied { new_id: commit },
                        Mode::Check => Outcome::Applies,
                    }
                }
                Err(refusal) => self.refused(patch, &files, &current, base.id(), refusal)?,
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
            head: parent,
            tree,
            patches: results,
        })
    }

    /// What a patch that did not apply to `current` is: already applied (a commit of the
    /// branch carries it, or it reverse-applies), a conflict (an error when writing), or a
    /// refusal that stops the series.
    fn refused(
        &mut self,
        patch: &Patch,
        files: &[FilePatch],
        current: &git2::Tree<'_>,
        base: Oid,
        refusal: engine::ApplyRefusal,
    ) -> Result<Outcome, PatchError> {
        Ok(match refusal.kind {
            ApplyRefusalKind::UnsafePath => {
                return Err(PatchError::UnsafePath {
                    patch: patch.name(),
                    path: refusal.file,
                    reason: refusal.reason,
                });
            }
            ApplyRefusalKind::TooLarge => {
                return Err(PatchError::TooLarge {
                    patch: patch.name(),
                    file: refusal.file,
                    reason: refusal.reason,
                });
            }
            ApplyRefusalKind::SelfCheck => {
                return Err(PatchError::SelfCheck {
                    patch: patch.name(),
                    file: refusal.file,
                    detail: refusal.reason,
                });
            }
            ApplyRefusalKind::Conflict => {
                let reversed: Vec<FilePatch> = files.iter().rev().map(FilePatch::reverse).collect();
                if let Some(commit) = self.carried_by(patch, files, base)? {
                    Outcome::AlreadyApplied { by: Some(commit) }
                } else if engine::apply(self.repository, current, &reversed, Write::Nothing).is_ok()
                {
                    Outcome::AlreadyApplied { by: None }
                } else if self.mode == Mode::Write {
                    return Err(PatchError::Conflict {
                        patch: patch.name(),
                        file: refusal.file,
                        hunk: refusal.reason,
                    });
                } else {
                    Outcome::Conflict {
                        file: refusal.file,
                        hunk: refusal.reason,
                    }
                }
            }
        })
    }

    /// A commit of the branch with the patch's author (email and time) that carries its change:
    /// the same patch id, or the patch applied to the commit's parent gives the commit's tree.
    fn carried_by(
        &mut self,
        patch: &Patch,
        files: &[FilePatch],
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
        let wanted = patch_id::of(files);
        for &candidate in candidates {
            if patch_id::of_commit(repository, candidate).is_some_and(|id| id == wanted)
                || makes_commit(repository, candidate, files)
            {
                return Ok(Some(candidate));
            }
        }
        Ok(None)
    }
}

/// Whether applying `files` to the parent of `commit` gives the commit's tree.
fn makes_commit(repository: &Repository, commit: Oid, files: &[FilePatch]) -> bool {
    let Ok(commit) = repository.find_commit(commit) else {
        return false;
    };
    let (Ok(parent), Ok(tree)) = (commit.parent(0), commit.tree()) else {
        return false;
    };
    let Ok(parent_tree) = parent.tree() else {
        return false;
    };
    engine::apply(repository, &parent_tree, files, Write::Tree)
        .is_ok_and(|made| made == Some(tree.id()))
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
