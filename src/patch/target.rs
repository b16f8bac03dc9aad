//! What a series applies onto: a repository of the user's, or a scratch repository made from a
//! recipe folder or from a git revision fetched into forge's cache. `patched_tree` gives the
//! build the patched tree of a scratch repository; the user's own files are never touched.

use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use git2::{Oid, Repository, Signature};

use super::apply::{Applied, Mode, SCRATCH_KEY, apply};
use super::{PatchError, Series};
use crate::pins::Onto;
use crate::types::git::GitRev;
use crate::types::url::Url;

/// A target resolved from the command line or pins.toml.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchTarget {
    /// A repository of the user's: `apply` commits onto its branch and checks out.
    Repository(PathBuf),
    /// A recipe folder: its files become the first commit of a scratch repository.
    Folder(PathBuf),
    /// A git URL at a revision, fetched into forge's cache, applied in a scratch repository.
    Git {
        /// Where to fetch from.
        url: Url,
        /// The commit to apply onto: its full id, or a prefix of it.
        rev: GitRev,
    },
}

impl PatchTarget {
    /// What a `[[patches]]` entry of pins.toml applies onto: its folder, found in `recipe_root`
    /// (written as `fs::in_folder` writes recipe paths), or its remote at its commit.
    pub fn from_onto(onto: &Onto, recipe_root: &Path) -> Self {
        match onto {
            Onto::Folder(folder) => {
                PatchTarget::Folder(crate::fs::in_folder(recipe_root, folder.as_str()))
            }
            Onto::Git { git, rev } => PatchTarget::Git {
                url: git.clone(),
                rev: rev.clone(),
            },
        }
    }
}

impl std::fmt::Display for PatchTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PatchTarget::Repository(path) => write!(f, "{}", path.display()),
            PatchTarget::Folder(path) => write!(f, "{} (scratch repository)", path.display()),
            PatchTarget::Git { url, rev } => write!(f, "{url} at {rev} (scratch repository)"),
        }
    }
}

/// A series applied to a scratch copy of its target.
pub struct Patched {
    /// The scratch repository (bare); its `HEAD` is the last applied commit.
    pub repository: Repository,
    /// The patched tree, for the build context.
    pub tree: Oid,
    /// What happened to each patch.
    pub applied: Applied,
    /// Keeps the scratch repository on disk while `repository` is in use.
    _scratch: tempfile::TempDir,
}

impl std::fmt::Debug for Patched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Patched")
            .field("repository", &self.repository.path())
            .field("tree", &self.tree)
            .field("applied", &self.applied)
            .finish()
    }
}

impl Patched {
    /// The patches this run applied (not those already in the target), each as the mail `git
    /// format-patch` writes for its new commit and named as it names them (`0001-subject.patch`,
    /// numbered in the order applied): what a build step applies again onto the same commit.
    pub fn applied_mails(&self) -> Result<Vec<(String, Vec<u8>)>, PatchError> {
        let mut mails = Vec::new();
        let count = (self.applied.patches.iter())
            .filter(|result| matches!(result.outcome, super::Outcome::Applied { .. }))
            .count();
        for result in &self.applied.patches {
            let super::Outcome::Applied { new_id } = &result.outcome else {
                continue;
            };
            let commit = self
                .repository
                .find_commit(*new_id)
                .map_err(PatchError::git(format!(
                    "cannot read the commit of {}",
                    result.name
                )))?;
            let mail =
                git2::Email::from_commit(&commit, &mut git2::EmailCreateOptions::new()).map_err(
                    PatchError::git(format!("cannot write {} as a patch", result.name)),
                )?;
            mails.push((
                series_name(mails.len() + 1, count, &result.subject),
                mail.as_slice().to_vec(),
            ));
        }
        Ok(mails)
    }
}

/// The file name of patch `position` (from 1) of a series of `count`: numbered as wide as the
/// series needs, at least four digits as `git format-patch` numbers, so that a byte-wise sort of
/// the names is the series' order even past 9999.
fn series_name(position: usize, count: usize, subject: &str) -> String {
    let width = count.to_string().len().max(4);
    format!("{position:0width$}-{}.patch", slug(subject))
}

impl Patched {
    /// Writes the patched tree into the empty folder `into`, for a series applied onto the
    /// recipe folder `original`. A file the series changed or added is written from its blob; a
    /// file it left alone is the recipe's own file, hard-linked (or copied where no link can be
    /// made), so that no file the series did not touch is read into memory, whatever its size.
    pub fn check_out(&self, original: &Path, into: &Path) -> Result<(), PatchError> {
        let tree = |id: Oid| {
            self.repository
                .find_tree(id)
                .map_err(PatchError::git("cannot read the patched tree"))
        };
        let base = self
            .repository
            .find_commit(self.applied.base)
            .and_then(|commit| commit.tree())
            .map_err(PatchError::git(
                "cannot read the tree the series applied onto",
            ))?;
        self.write_tree(&tree(self.tree)?, Some(&base), original, into)
    }

    fn write_tree(
        &self,
        tree: &git2::Tree<'_>,
        base: Option<&git2::Tree<'_>>,
        original: &Path,
        into: &Path,
    ) -> Result<(), PatchError> {
        let failed = |path: &Path| {
            let path = path.to_owned();
            move |source| PatchError::Read { path, source }
        };
        for entry in tree {
            let name = std::ffi::OsStr::from_bytes(entry.name_bytes());
            let (from, to) = (original.join(name), into.join(name));
            let unchanged = base
                .and_then(|base| base.get_name_bytes(entry.name_bytes()))
                .filter(|old| old.id() == entry.id() && old.filemode() == entry.filemode());
            match entry.filemode() {
                0o040000 => {
                    std::fs::create_dir(&to).map_err(failed(&to))?;
                    let subtree = entry
                        .to_object(&self.repository)
                        .and_then(|object| object.peel_to_tree())
                        .map_err(PatchError::git("cannot read the patched tree"))?;
                    let old = base
                        .and_then(|base| base.get_name_bytes(entry.name_bytes()))
                        .and_then(|old| old.to_object(&self.repository).ok())
                        .and_then(|object| object.into_tree().ok());
                    self.write_tree(&subtree, old.as_ref(), &from, &to)?;
                }
                0o100644 | 0o100755 if unchanged.is_some() => {
                    if std::fs::hard_link(&from, &to).is_err() {
                        std::fs::copy(&from, &to).map_err(failed(&from))?;
                    }
                }
                mode @ (0o100644 | 0o100755 | 0o120000) => {
                    let blob = self
                        .repository
                        .find_blob(entry.id())
                        .map_err(PatchError::git("cannot read the patched tree"))?;
                    if mode == 0o120000 {
                        let target = std::ffi::OsStr::from_bytes(blob.content());
                        std::os::unix::fs::symlink(target, &to).map_err(failed(&to))?;
                    } else {
                        std::fs::write(&to, blob.content()).map_err(failed(&to))?;
                        let permissions = std::fs::Permissions::from_mode(if mode == 0o100755 {
                            0o755
                        } else {
                            0o644
                        });
                        std::fs::set_permissions(&to, permissions).map_err(failed(&to))?;
                    }
                }
                // A submodule's commit: an empty folder, as a checkout leaves it.
                _ => std::fs::create_dir(&to).map_err(failed(&to))?,
            }
        }
        Ok(())
    }
}

/// A subject as a file name, the way `git format-patch` shortens it: letters and digits kept,
/// every other run of characters one `-`, at most 52 characters.
fn slug(subject: &str) -> String {
    let mut slug = String::new();
    for c in subject.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
            slug.push(c);
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let mut slug: String = slug.trim_end_matches(['-', '.']).chars().take(52).collect();
    while slug.ends_with(['-', '.']) {
        slug.pop();
    }
    if slug.is_empty() {
        "patch".to_owned()
    } else {
        slug
    }
}

/// Applies `series` to a scratch repository made from `target` (`PatchTarget::Folder` or
/// `PatchTarget::Git`; a `PatchTarget::Repository` is copied by reference, its branch untouched) and
/// returns the patched tree. In `Mode::Check` nothing is committed even in the scratch copy.
pub fn patched_tree(
    target: &PatchTarget,
    series: &Series,
    mode: Mode,
) -> Result<Patched, PatchError> {
    let (scratch, repository) = match target {
        PatchTarget::Folder(folder) => scratch_from_folder(folder)?,
        PatchTarget::Git { url, rev } => scratch_from_git(url, rev)?,
        PatchTarget::Repository(path) => {
            let source = Repository::open(path)
                .map_err(PatchError::git(format!("cannot open {}", path.display())))?;
            let head = source
                .head()
                .and_then(|head| head.peel_to_commit())
                .map_err(|_| PatchError::Unborn {
                    repository: path.clone(),
                })?;
            scratch_with_alternate(source.path(), head.id())?
        }
    };
    let applied = apply(series, &repository, mode)?;
    Ok(Patched {
        tree: applied.tree,
        repository,
        applied,
        _scratch: scratch,
    })
}

/// A bare scratch repository whose one commit holds the files of `folder` (modes and symlinks
/// kept, `.git` skipped), committed by `forge` at time 0 so the same folder gives the same id.
pub fn scratch_from_folder(folder: &Path) -> Result<(tempfile::TempDir, Repository), PatchError> {
    let (scratch, repository) = scratch_repository()?;
    let tree = write_folder(&repository, folder)?;
    let tree = repository
        .find_tree(tree)
        .map_err(PatchError::git("cannot read the scratch tree"))?;
    let signature = Signature::new("forge", "forge@localhost", &git2::Time::new(0, 0))
        .map_err(PatchError::git("cannot make a signature"))?;
    let message = format!(
        "The files of {}\n",
        folder
            .file_name()
            .unwrap_or(folder.as_os_str())
            .to_string_lossy()
    );
    repository
        .commit(Some("HEAD"), &signature, &signature, &message, &tree, &[])
        .map_err(PatchError::git("cannot commit the scratch base"))?;
    drop(tree);
    Ok((scratch, repository))
}

/// The whole git config of a scratch repository: bare, forge as its committer, marked scratch.
fn scratch_config() -> String {
    let (section, name) = SCRATCH_KEY
        .split_once('.')
        .expect("the scratch key is a section and a name");
    format!(
        "[core]\n\trepositoryformatversion = 0\n\tbare = true\n\
         [user]\n\tname = forge\n\temail = forge@localhost\n\
         [{section}]\n\t{name} = true\n"
    )
}

/// A bare repository in a temporary folder, with forge as its committer.
///
/// Its few files are written directly rather than through `git init` and three config
/// settings: each setting rewrites the config file and renames it over the old one, and ext4
/// flushes a file renamed over another to disk, tens of milliseconds each on a busy disk. A new
/// file written once is not flushed.
fn scratch_repository() -> Result<(tempfile::TempDir, Repository), PatchError> {
    let scratch = tempfile::Builder::new()
        .prefix("forge-patch-")
        .tempdir()
        .map_err(|source| PatchError::Read {
            path: std::env::temp_dir(),
            source,
        })?;
    let root = scratch.path();
    let written = std::fs::create_dir_all(root.join("objects/info"))
        .and_then(|()| std::fs::create_dir_all(root.join("objects/pack")))
        .and_then(|()| std::fs::create_dir_all(root.join("refs/heads")))
        .and_then(|()| std::fs::write(root.join("HEAD"), "ref: refs/heads/main\n"))
        .and_then(|()| std::fs::write(root.join("config"), scratch_config()));
    written.map_err(|source| PatchError::Read {
        path: root.to_owned(),
        source,
    })?;
    let repository = Repository::open_bare(root)
        .map_err(PatchError::git("cannot create a scratch repository"))?;
    Ok((scratch, repository))
}

/// Writes the files under `folder` as blobs and trees, returning the root tree.
fn write_folder(repository: &Repository, folder: &Path) -> Result<Oid, PatchError> {
    let read_error = |source| PatchError::Read {
        path: folder.to_owned(),
        source,
    };
    let mut entries: Vec<_> = std::fs::read_dir(folder)
        .map_err(read_error)?
        .collect::<Result<_, _>>()
        .map_err(read_error)?;
    entries.sort_by_key(|entry| entry.file_name());
    let mut builder = repository
        .treebuilder(None)
        .map_err(PatchError::git("cannot build a tree"))?;
    for entry in entries {
        let name = entry.file_name();
        if crate::fs::is_git_entry(&name) {
            continue;
        }
        let path = entry.path();
        let metadata = std::fs::symlink_metadata(&path).map_err(|source| PatchError::Read {
            path: path.clone(),
            source,
        })?;
        let read = |source| PatchError::Read {
            path: path.clone(),
            source,
        };
        let (id, mode) = if metadata.file_type().is_symlink() {
            let target = std::fs::read_link(&path).map_err(read)?;
            let bytes = std::os::unix::ffi::OsStrExt::as_bytes(target.as_os_str()).to_vec();
            (repository.blob(&bytes), 0o120000)
        } else if metadata.is_dir() {
            let tree = write_folder(repository, &path)?;
            let empty = repository
                .find_tree(tree)
                .map(|tree| tree.is_empty())
                .unwrap_or(true);
            if empty {
                continue;
            }
            (Ok(tree), 0o040000)
        } else {
            // A FIFO would block the read for ever, a device never end it.
            if let Some(kind) = crate::fs::Special::of(metadata.file_type()) {
                return Err(crate::fs::PathError::Special { path, kind }.into());
            }
            let executable =
                std::os::unix::fs::PermissionsExt::mode(&metadata.permissions()) & 0o111 != 0;
            (
                Ok(stream_blob(repository, &path)?),
                if executable { 0o100755 } else { 0o100644 },
            )
        };
        let id = id.map_err(PatchError::git(format!("cannot store {}", path.display())))?;
        builder
            .insert(&name, id, mode)
            .map_err(PatchError::git(format!("cannot store {}", path.display())))?;
    }
    builder
        .write()
        .map_err(PatchError::git("cannot write a tree"))
}

/// Stores the regular file at `path` as a blob, streamed from the file into the object store
/// (git's own `hash-object -w` streams the same way), so a file of any size passes through a
/// fixed buffer. A file that changes size while it is read is refused rather than stored torn.
fn stream_blob(repository: &Repository, path: &Path) -> Result<Oid, PatchError> {
    let read = |source| PatchError::Read {
        path: path.to_owned(),
        source,
    };
    let file = crate::fs::open_regular(path)?;
    let size = file.metadata().map_err(read)?.len();
    let odb = repository
        .odb()
        .map_err(PatchError::git("cannot open the object store"))?;
    let mut writer = odb
        .writer(
            usize::try_from(size).expect("a file size fits in memory's address range"),
            git2::ObjectType::Blob,
        )
        .map_err(PatchError::git(format!("cannot store {}", path.display())))?;
    let mut capped = std::io::Read::take(file, size + 1);
    let copied = std::io::copy(&mut capped, &mut writer).map_err(read)?;
    if copied != size {
        return Err(read(std::io::Error::other(format!(
            "it changed while it was read ({size} bytes before, {copied} read)"
        ))));
    }
    writer
        .finalize()
        .map_err(PatchError::git(format!("cannot store {}", path.display())))
}

/// A scratch repository at `rev` of `url`, fetched into forge's cache first when the cache
/// does not hold it yet.
fn scratch_from_git(
    url: &Url,
    rev: &GitRev,
) -> Result<(tempfile::TempDir, Repository), PatchError> {
    let cache = crate::git_remote::cache_folder(url.as_str());
    let cached = match Repository::open_bare(&cache) {
        Ok(repository) => repository,
        Err(_) => {
            std::fs::create_dir_all(&cache).map_err(|source| PatchError::Read {
                path: cache.clone(),
                source,
            })?;
            Repository::init_bare(&cache).map_err(PatchError::git(format!(
                "cannot create the git cache {}",
                cache.display()
            )))?
        }
    };
    let resolve = |repository: &Repository| {
        repository
            .revparse_single(rev.as_str())
            .and_then(|object| object.peel_to_commit())
            .map(|commit| commit.id())
    };
    let commit = match resolve(&cached) {
        Ok(commit) => commit,
        Err(_) => {
            let mut remote = crate::git_remote::anonymous_remote(&cached, url.as_str())
                .map_err(PatchError::git(format!("cannot use {url}")))?;
            let refspecs = [
                "+refs/heads/*:refs/remotes/origin/*",
                "+refs/tags/*:refs/tags/*",
            ];
            remote
                .fetch(&refspecs, None, None)
                .map_err(PatchError::git(format!("cannot fetch {url}")))?;
            // A full commit id that no branch or tag reaches: ask for it by name.
            if resolve(&cached).is_err() && rev.is_full() {
                let _ = remote.fetch(&[rev.as_str()], None, None);
            }
            resolve(&cached).map_err(PatchError::git(format!(
                "{url} has no commit `{rev}` (fetched into {})",
                cache.display()
            )))?
        }
    };
    scratch_with_alternate(cached.path(), commit)
}

/// A scratch repository that borrows the objects of the repository at `git_dir` and whose
/// `HEAD` is `commit`.
fn scratch_with_alternate(
    git_dir: &Path,
    commit: Oid,
) -> Result<(tempfile::TempDir, Repository), PatchError> {
    let (scratch, repository) = scratch_repository()?;
    let objects = git_dir.join("objects");
    let objects = objects.canonicalize().unwrap_or(objects);
    let alternates = repository.path().join("objects/info/alternates");
    std::fs::write(&alternates, format!("{}\n", objects.display())).map_err(|source| {
        PatchError::Read {
            path: alternates.clone(),
            source,
        }
    })?;
    // Reopened so that libgit2 reads the alternates file just written.
    drop(repository);
    let repository = Repository::open_bare(scratch.path())
        .map_err(PatchError::git("cannot open the scratch repository"))?;
    repository
        .reference("refs/heads/main", commit, true, "forge: scratch base")
        .and_then(|_| repository.set_head("refs/heads/main"))
        .map_err(PatchError::git(
            "cannot point the scratch repository at its base",
        ))?;
    Ok((scratch, repository))
}

#[cfg(test)]
mod tests {
    use super::series_name;

    #[test]
    fn series_names_sort_in_the_series_order_past_9999() {
        for count in [1, 9, 9_999, 10_000, 123_456] {
            let names: Vec<String> = (1..=count.min(10_001))
                .chain([count])
                .map(|position| series_name(position, count, "Fix it"))
                .collect();
            let mut sorted = names.clone();
            sorted.sort();
            assert_eq!(sorted, names, "a series of {count}");
        }
        assert_eq!(series_name(1, 3, "Fix it"), "0001-Fix-it.patch");
        assert_eq!(series_name(42, 10_000, "Fix it"), "00042-Fix-it.patch");
    }
}
