//! One mail's git diff applied to a tree, as `git am` applies it (`git apply --index` on a
//! clean checkout): every file patch is checked against the tree and the earlier file patches
//! of the same diff, its result made in memory, and only when all of them hold is a new tree
//! written. The checks are git's:
//!
//! - a file to change, rename or delete must exist with the type the patch says
//!   (`does not exist in index`, `wrong type`);
//! - a file to create must not exist, unless an earlier or later file patch of the same diff
//!   takes it away (a type change, a swap of two names);
//! - a path git would never write (`.git`, `..`, an empty component, NTFS aliases of `.git`)
//!   or one beyond a symbolic link is refused;
//! - hunks are placed by `image` (git's search, no fuzz); binary patches need the full blob
//!   ids of their `index` line and must produce the blob it names;
//! - a deleted file must end empty, a gitlink must end as `Subproject commit <id>`;
//! - deletions are made before creations, and a file cannot be written where a folder still
//!   holds files or below a path that is still a file.
//!
//! Beyond git, one self-check: a text patch whose `index` line names the very blob it is
//! applied to must produce the blob that line names afterwards. A mismatch means the patch
//! text lost or changed a hunk on the way (git would commit the partial change) or forge
//! misapplied it; either way nothing is committed.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;

use git2::{ObjectType, Oid, Repository, Tree};

use super::binary::{self, Method};
use super::diff::{DIRECTORY, FilePatch, GITLINK, SYMLINK, TYPE_MASK, canonical_mode};
use super::image::Image;
use super::path_check::verify_path;

/// Why a diff does not apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplyRefusal {
    /// The file it fails on.
    pub file: String,
    /// What fails there, in git's terms: `hunk #2 (@@ -4,12 +4,18 @@) does not apply`,
    /// `already exists in index`, ...
    pub reason: String,
    /// What kind of failure this is.
    pub kind: ApplyRefusalKind,
}

/// The kinds of `ApplyRefusal`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApplyRefusalKind {
    /// The diff does not fit the tree: git refuses it too.
    Conflict,
    /// The diff names a path git never writes (or one beyond a symbolic link).
    UnsafePath,
    /// The result is not the blob the patch's `index` line names.
    SelfCheck,
    /// The file is larger than the patch stage holds in memory (`limits::PATCH_TARGET_LIMIT`).
    TooLarge,
}

/// Whether to write the new tree or only say whether the diff applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    /// Write blobs and trees; return the new tree.
    Tree,
    /// Check only; write nothing.
    Nothing,
}

/// Applies `patches` (one mail's diff) to `tree`; with `Write::Tree` the new tree's id.
pub fn apply(
    repository: &Repository,
    tree: &Tree<'_>,
    patches: &[FilePatch],
    write: Write,
) -> Result<Option<Oid>, ApplyRefusal> {
    let mut run = Run {
        repository,
        tree,
        patches: patches.to_vec(),
        results: vec![None; patches.len()],
        table: HashMap::new(),
        kept_links: HashSet::new(),
        removed_links: HashSet::new(),
        promises: Vec::new(),
    };
    run.check_all()?;
    run.write_out(write)
}

/// The blob a text patch promises to produce: when its `index` line names the blob `before`
/// it starts from, the abbreviated id that line names for afterwards.
fn promised_blob(patch: &FilePatch, before: Oid) -> Option<String> {
    let abbreviated = |id: &str| id.len() >= 4 && id.bytes().all(|c| c.is_ascii_hexdigit());
    let applies = !patch.is_new
        && !patch.is_delete
        && patch.old_mode != GITLINK
        && patch.new_mode != GITLINK
        && abbreviated(&patch.old_id)
        && abbreviated(&patch.new_id)
        && before.to_string().starts_with(&patch.old_id);
    applies.then(|| patch.new_id.clone())
}

/// A path's state in the patch's own bookkeeping (git's `fn_table`).
#[derive(Debug, Clone, Copy)]
enum Slot {
    /// A later file patch deletes or renames it away.
    ToBeDeleted,
    /// An earlier file patch deleted or renamed it away.
    WasDeleted,
    /// An earlier file patch wrote it; its result is that patch's.
    Written(usize),
}

/// A tree entry: its mode (canonical) and object.
#[derive(Debug, Clone, Copy)]
struct Entry {
    mode: u32,
    id: Oid,
}

struct Run<'a> {
    repository: &'a Repository,
    tree: &'a Tree<'a>,
    patches: Vec<FilePatch>,
    results: Vec<Option<Vec<u8>>>,
    table: HashMap<Vec<u8>, Slot>,
    kept_links: HashSet<Vec<u8>>,
    removed_links: HashSet<Vec<u8>>,
    /// File patches whose result must be a given blob (see `promised_blob`).
    promises: Vec<(usize, String)>,
}

fn path_of(name: &[u8]) -> &Path {
    Path::new(OsStr::from_bytes(name))
}

fn show(name: &[u8]) -> String {
    String::from_utf8_lossy(name).into_owned()
}

impl Run<'_> {
    fn refuse(&self, file: &[u8], reason: impl Into<String>) -> ApplyRefusal {
        ApplyRefusal {
            file: show(file),
            reason: reason.into(),
            kind: ApplyRefusalKind::Conflict,
        }
    }

    /// Refuses a blob past `limits::PATCH_TARGET_LIMIT` before it is read: its size comes from
    /// the object's header.
    fn within_limit(&self, file: &[u8], id: Oid) -> Result<(), ApplyRefusal> {
        let limit = crate::limits::PATCH_TARGET_LIMIT;
        let size = self
            .repository
            .odb()
            .and_then(|odb| odb.read_header(id))
            .map(|(size, _)| size as u64)
            .map_err(|error| {
                self.refuse(file, format!("cannot read its blob: {}", error.message()))
            })?;
        if size <= limit {
            return Ok(());
        }
        Err(ApplyRefusal {
            file: show(file),
            reason: format!(
                "it is {size} bytes, more than the {} MiB a patched file may have",
                limit / (1024 * 1024)
            ),
            kind: ApplyRefusalKind::TooLarge,
        })
    }

    /// The entry at `path` in the tree being patched (folders included).
    fn entry(&self, path: &[u8]) -> Option<Entry> {
        if path.is_empty() {
            return None;
        }
        let entry = self.tree.get_path(path_of(path)).ok()?;
        let mode = u32::try_from(entry.filemode()).ok()?;
        Some(Entry {
            mode: if mode & TYPE_MASK == DIRECTORY {
                DIRECTORY
            } else {
                canonical_mode(mode)
            },
            id: entry.id(),
        })
    }

    /// The entry at `path` when it is a file, link or gitlink (an index entry).
    fn file_entry(&self, path: &[u8]) -> Option<Entry> {
        self.entry(path).filter(|entry| entry.mode != DIRECTORY)
    }

    fn check_all(&mut self) -> Result<(), ApplyRefusal> {
        for patch in &self.patches {
            if let Some(old) = &patch.old_name
                && patch.old_mode & TYPE_MASK == SYMLINK
                && (patch.is_rename || patch.is_delete)
            {
                self.removed_links.insert(old.clone());
            }
            if let Some(new) = &patch.new_name
                && patch.new_mode & TYPE_MASK == SYMLINK
            {
                self.kept_links.insert(new.clone());
            }
            if (patch.new_name.is_none() || patch.is_rename)
                && let Some(old) = &patch.old_name
            {
                self.table.insert(old.clone(), Slot::ToBeDeleted);
            }
        }
        for index in 0..self.patches.len() {
            self.check(index)?;
        }
        Ok(())
    }

    /// The earlier file patch whose result this one starts from; `Err` when an earlier one
    /// took its file away.
    fn previous(&self, index: usize) -> Result<Option<usize>, ApplyRefusal> {
        let patch = &self.patches[index];
        if patch.is_copy || patch.is_rename {
            return Ok(None);
        }
        let Some(old) = &patch.old_name else {
            return Ok(None);
        };
        match self.table.get(old) {
            Some(Slot::WasDeleted) => {
                Err(self.refuse(old, format!("path {} has been renamed/deleted", show(old))))
            }
            Some(Slot::Written(previous)) => Ok(Some(*previous)),
            Some(Slot::ToBeDeleted) | None => Ok(None),
        }
    }

    fn check(&mut self, index: usize) -> Result<(), ApplyRefusal> {
        self.check_preimage(index)?;
        let patch = &self.patches[index];
        let ok_if_exists = patch.new_name.as_ref().is_some_and(|new| {
            matches!(
                self.table.get(new),
                Some(Slot::WasDeleted | Slot::ToBeDeleted)
            )
        });
        if let Some(new) = patch.new_name.clone()
            && (patch.is_new || patch.is_rename || patch.is_copy)
        {
            if !ok_if_exists && self.file_entry(&new).is_some() {
                return Err(self.refuse(&new, "already exists in index"));
            }
            let patch = &mut self.patches[index];
            if patch.new_mode == 0 {
                patch.new_mode = if patch.is_new {
                    0o100644
                } else {
                    patch.old_mode
                };
            }
        }
        let patch = &mut self.patches[index];
        if let (Some(new), Some(old)) = (patch.new_name.clone(), patch.old_name.clone()) {
            if patch.new_mode == 0 {
                patch.new_mode = patch.old_mode;
            }
            if (patch.old_mode ^ patch.new_mode) & TYPE_MASK != 0 {
                let reason = if new == old {
                    format!(
                        "new mode ({:o}) does not match old mode ({:o})",
                        patch.new_mode, patch.old_mode
                    )
                } else {
                    format!(
                        "new mode ({:o}) does not match old mode ({:o}) of {}",
                        patch.new_mode,
                        patch.old_mode,
                        show(&old)
                    )
                };
                return Err(self.refuse(&new, reason));
            }
        }
        self.check_paths(index)?;
        let patch = &self.patches[index];
        if !patch.is_delete
            && let Some(new) = &patch.new_name
            && self.beyond_symlink(new)
        {
            return Err(ApplyRefusal {
                file: show(new),
                reason: "it goes through a symbolic link".to_owned(),
                kind: ApplyRefusalKind::UnsafePath,
            });
        }
        self.apply_data(index)
    }

    /// The file to change, rename or delete exists with the right type; the modes the patch
    /// leaves out are filled in from it.
    fn check_preimage(&mut self, index: usize) -> Result<(), ApplyRefusal> {
        let Some(old) = self.patches[index].old_name.clone() else {
            return Ok(());
        };
        let current_mode = match self.previous(index)? {
            Some(previous) => self.patches[previous].new_mode,
            None => match self.file_entry(&old) {
                Some(entry) => entry.mode,
                None => return Err(self.refuse(&old, "does not exist in index")),
            },
        };
        let patch = &mut self.patches[index];
        if patch.old_mode == 0 {
            patch.old_mode = current_mode;
        }
        if (current_mode ^ patch.old_mode) & TYPE_MASK != 0 {
            return Err(self.refuse(&old, "wrong type"));
        }
        let patch = &mut self.patches[index];
        if patch.new_mode == 0 && !patch.is_delete {
            patch.new_mode = current_mode;
        }
        Ok(())
    }

    fn check_paths(&self, index: usize) -> Result<(), ApplyRefusal> {
        let patch = &self.patches[index];
        let old = if patch.is_delete || (!patch.is_new && !patch.is_copy) {
            patch.old_name.as_deref()
        } else {
            None
        };
        let new = if patch.is_delete {
            None
        } else {
            patch.new_name.as_deref()
        };
        for (name, mode) in [(old, patch.old_mode), (new, patch.new_mode)] {
            if let Some(name) = name
                && !verify_path(name, mode)
            {
                return Err(ApplyRefusal {
                    file: show(name),
                    reason: "invalid path".to_owned(),
                    kind: ApplyRefusalKind::UnsafePath,
                });
            }
        }
        Ok(())
    }

    /// Whether a folder on the way to `path` is a symbolic link, in the tree or as this diff
    /// leaves it.
    fn beyond_symlink(&self, path: &[u8]) -> bool {
        let mut end = path.len();
        while let Some(slash) = path[..end].iter().rposition(|&c| c == b'/') {
            end = slash;
            if end == 0 {
                break;
            }
            let prefix = &path[..end];
            if self.kept_links.contains(prefix) {
                return true;
            }
            if self.removed_links.contains(prefix) {
                continue;
            }
            if self
                .file_entry(prefix)
                .is_some_and(|entry| entry.mode == SYMLINK)
            {
                return true;
            }
        }
        false
    }

    /// The content the patch starts from, and the blob it is when it comes from the tree.
    fn preimage(&self, index: usize) -> Result<(Vec<u8>, Option<Oid>), ApplyRefusal> {
        if let Some(previous) = self.previous(index)? {
            return Ok((self.results[previous].clone().unwrap_or_default(), None));
        }
        let patch = &self.patches[index];
        let Some(old) = &patch.old_name else {
            return Ok((Vec::new(), None));
        };
        let Some(entry) = self.file_entry(old) else {
            return Ok((Vec::new(), None));
        };
        if entry.mode == GITLINK {
            return Ok((
                format!("Subproject commit {}\n", entry.id).into_bytes(),
                None,
            ));
        }
        self.within_limit(old, entry.id)?;
        let blob = self.repository.find_blob(entry.id).map_err(|error| {
            self.refuse(old, format!("cannot read its blob: {}", error.message()))
        })?;
        Ok((blob.content().to_vec(), Some(entry.id)))
    }

    fn apply_data(&mut self, index: usize) -> Result<(), ApplyRefusal> {
        let (preimage, from_blob) = self.preimage(index)?;
        let patch = &self.patches[index];
        let name = patch
            .old_name
            .as_ref()
            .or(patch.new_name.as_ref())
            .cloned()
            .unwrap_or_default();
        let result = if patch.is_binary {
            self.apply_binary(patch, &name, preimage)?
        } else {
            let mut image = Image::new(preimage);
            for (number, fragment) in patch.fragments.iter().enumerate() {
                if !image.apply(fragment) {
                    return Err(self.refuse(
                        &name,
                        format!(
                            "hunk #{} ({}) does not apply",
                            number + 1,
                            fragment.header()
                        ),
                    ));
                }
            }
            image.into_bytes()
        };
        let patch = &self.patches[index];
        if let Some(new) = &patch.new_name {
            self.table.insert(new.clone(), Slot::Written(index));
        }
        if (patch.new_name.is_none() || patch.is_rename)
            && let Some(old) = &patch.old_name
        {
            self.table.insert(old.clone(), Slot::WasDeleted);
        }
        if patch.is_delete && !result.is_empty() {
            return Err(self.refuse(&name, "removal patch leaves file contents"));
        }
        if !patch.is_binary
            && let Some(before) = from_blob
            && let Some(after) = promised_blob(patch, before)
        {
            self.promises.push((index, after));
        }
        self.results[index] = Some(result);
        Ok(())
    }

    fn apply_binary(
        &self,
        patch: &FilePatch,
        name: &[u8],
        preimage: Vec<u8>,
    ) -> Result<Vec<u8>, ApplyRefusal> {
        let full = |id: &str| id.len() == 40 && id.bytes().all(|c| c.is_ascii_hexdigit());
        if !full(&patch.old_id) || !full(&patch.new_id) {
            return Err(self.refuse(name, "cannot apply binary patch without full index line"));
        }
        let hash =
            |bytes: &[u8]| Oid::hash_object(ObjectType::Blob, bytes).map(|id| id.to_string());
        if patch.old_name.is_some() {
            let current =
                hash(&preimage).map_err(|error| self.refuse(name, error.message().to_owned()))?;
            if current != patch.old_id {
                return Err(self.refuse(
                    name,
                    format!("the patch applies to {}, which does not match the current contents ({current})", patch.old_id),
                ));
            }
        } else if !preimage.is_empty() {
            return Err(self.refuse(
                name,
                "the patch applies to an empty file but it is not empty",
            ));
        }
        let target = Oid::from_str(&patch.new_id)
            .map_err(|error| self.refuse(name, error.message().to_owned()))?;
        if target.is_zero() {
            return Ok(Vec::new());
        }
        if self.repository.find_blob(target).is_ok() {
            self.within_limit(name, target)?;
            if let Ok(blob) = self.repository.find_blob(target) {
                return Ok(blob.content().to_vec());
            }
        }
        let hunk = if patch.reversed {
            patch.binary.get(1)
        } else {
            patch.binary.first()
        };
        let Some(hunk) = hunk else {
            let reason = if patch.reversed && !patch.binary.is_empty() {
                "cannot reverse-apply a binary patch without the reverse hunk"
            } else {
                "missing binary patch data"
            };
            return Err(self.refuse(name, reason));
        };
        let result = match hunk.method {
            Method::Literal => Some(hunk.data.clone()),
            Method::Delta => binary::apply_delta(&preimage, &hunk.data),
        }
        .ok_or_else(|| self.refuse(name, "binary patch does not apply"))?;
        let made = hash(&result).map_err(|error| self.refuse(name, error.message().to_owned()))?;
        if made != patch.new_id {
            return Err(self.refuse(
                name,
                format!(
                    "binary patch creates incorrect result (expecting {}, got {made})",
                    patch.new_id
                ),
            ));
        }
        Ok(result)
    }

    /// Removals first, then every new or changed file written where nothing is in its way.
    fn write_out(self, write: Write) -> Result<Option<Oid>, ApplyRefusal> {
        let mut stage = Stage {
            run: &self,
            removed: HashSet::new(),
            added: BTreeMap::new(),
        };
        for patch in &self.patches {
            let removes = patch.is_delete || !(patch.is_new || patch.is_copy);
            if removes && let Some(old) = &patch.old_name {
                stage.removed.insert(old.clone());
            }
        }
        for (index, patch) in self.patches.iter().enumerate() {
            if patch.is_delete {
                continue;
            }
            let Some(new) = &patch.new_name else { continue };
            let mode = if patch.new_mode == 0 {
                0o100644
            } else {
                patch.new_mode
            };
            let content = self.results[index].as_deref().unwrap_or_default();
            stage.add(new, mode, content)?;
        }
        if write == Write::Nothing {
            return Ok(None);
        }
        stage.write().map(Some)
    }
}

/// The index as the write-out leaves it: the tree's entries, minus `removed`, plus `added`.
struct Stage<'a> {
    run: &'a Run<'a>,
    removed: HashSet<Vec<u8>>,
    added: BTreeMap<Vec<u8>, (u32, Content)>,
}

#[derive(Debug, Clone)]
enum Content {
    Bytes(Vec<u8>),
    Commit(Oid),
}

impl Stage<'_> {
    /// Whether `path` holds a file (not a folder) at this point of the write-out.
    fn is_file(&self, path: &[u8]) -> bool {
        self.added.contains_key(path)
            || (self.run.file_entry(path).is_some() && !self.removed.contains(path))
    }

    /// Whether `path` is a folder that still holds something.
    fn holds_files(&self, path: &[u8]) -> bool {
        let mut prefix = path.to_vec();
        prefix.push(b'/');
        if self
            .added
            .range(prefix.clone()..)
            .next()
            .is_some_and(|(key, _)| key.starts_with(&prefix))
        {
            return true;
        }
        let Some(entry) = self.run.entry(path) else {
            return false;
        };
        if entry.mode != DIRECTORY {
            return false;
        }
        let Ok(tree) = self.run.repository.find_tree(entry.id) else {
            return true;
        };
        let mut remains = false;
        let _ = tree.walk(git2::TreeWalkMode::PreOrder, |root, item| {
            if item.kind() == Some(ObjectType::Tree) {
                return git2::TreeWalkResult::Ok;
            }
            let mut full = prefix.clone();
            full.extend_from_slice(root.as_bytes());
            full.extend_from_slice(item.name_bytes());
            if self.removed.contains(&full) {
                git2::TreeWalkResult::Ok
            } else {
                remains = true;
                git2::TreeWalkResult::Abort
            }
        });
        remains
    }

    fn add(&mut self, path: &[u8], mode: u32, content: &[u8]) -> Result<(), ApplyRefusal> {
        let content = if mode == GITLINK {
            let id = content
                .strip_prefix(b"Subproject commit ")
                .and_then(|rest| rest.get(..40))
                .and_then(|hex| std::str::from_utf8(hex).ok())
                .and_then(|hex| Oid::from_str(hex).ok())
                .ok_or_else(|| self.run.refuse(path, "corrupt patch for submodule"))?;
            Content::Commit(id)
        } else {
            Content::Bytes(content.to_vec())
        };
        let mut end = 0;
        while let Some(slash) = path[end..].iter().position(|&c| c == b'/') {
            end += slash;
            if self.is_file(&path[..end]) {
                return Err(self.run.refuse(
                    path,
                    format!("unable to write file: {} is a file", show(&path[..end])),
                ));
            }
            end += 1;
        }
        if self.holds_files(path) {
            return Err(self.run.refuse(
                path,
                "unable to write file: a folder that still holds files is in the way",
            ));
        }
        self.added.insert(path.to_vec(), (mode, content));
        Ok(())
    }

    fn write(self) -> Result<Oid, ApplyRefusal> {
        let repository = self.run.repository;
        let failed = |path: &[u8], error: git2::Error| {
            self.run
                .refuse(path, format!("cannot write: {}", error.message()))
        };
        let mut changes: BTreeMap<Vec<u8>, Option<(Oid, u32)>> = BTreeMap::new();
        for path in &self.removed {
            changes.insert(path.clone(), None);
        }
        for (path, (mode, content)) in &self.added {
            let id = match content {
                Content::Commit(id) => *id,
                Content::Bytes(bytes) => repository
                    .blob(bytes)
                    .map_err(|error| failed(path, error))?,
            };
            changes.insert(path.clone(), Some((id, *mode)));
        }
        for (index, promised) in &self.run.promises {
            let patch = &self.run.patches[*index];
            let Some(path) = &patch.new_name else {
                continue;
            };
            let made = changes.get(path).copied().flatten().map(|(id, _)| id);
            if let Some(made) = made
                && !made.to_string().starts_with(promised.as_str())
            {
                return Err(ApplyRefusal {
                    file: show(path),
                    reason: format!(
                        "its index line says blob {} becomes {promised}, but its hunks make {made}",
                        patch.old_id
                    ),
                    kind: ApplyRefusalKind::SelfCheck,
                });
            }
        }
        graft(repository, Some(self.run.tree), &changes).map_err(|error| failed(b"", error))
    }
}

/// A change below a folder: the rest of its path, and what goes there (`None` removes it).
type Change<'a> = (&'a [u8], Option<(Oid, u32)>);

/// The changes at one name of a folder: at the name itself (a file put there, or `None` for a
/// removal), and below it.
type Level<'a> = (Option<Option<(Oid, u32)>>, Vec<Change<'a>>);

/// `base` with `changes` made; folders left empty disappear, as in git.
pub fn graft(
    repository: &Repository,
    base: Option<&Tree<'_>>,
    changes: &BTreeMap<Vec<u8>, Option<(Oid, u32)>>,
) -> Result<Oid, git2::Error> {
    let changes: Vec<Change<'_>> = changes
        .iter()
        .map(|(path, entry)| (path.as_slice(), *entry))
        .collect();
    match graft_level(repository, base, &changes)? {
        Some(id) => Ok(id),
        None => repository.treebuilder(None)?.write(),
    }
}

fn graft_level(
    repository: &Repository,
    base: Option<&Tree<'_>>,
    changes: &[Change<'_>],
) -> Result<Option<Oid>, git2::Error> {
    let mut builder = repository.treebuilder(base)?;
    // Per name at this level: what is put at the name itself, and the changes below it.
    let mut names: BTreeMap<&[u8], Level<'_>> = BTreeMap::new();
    for &(path, entry) in changes {
        match path.iter().position(|&c| c == b'/') {
            None => names.entry(path).or_default().0 = Some(entry),
            Some(slash) => names
                .entry(&path[..slash])
                .or_default()
                .1
                .push((&path[slash + 1..], entry)),
        }
    }
    for (name, (own, below)) in names {
        let name_path = path_of(name);
        match own {
            // A file (or link, or gitlink) put here replaces whatever was here, a folder
            // included: the changes below it can only be its old files going away.
            Some(Some((id, mode))) => {
                builder.insert(name_path, id, mode as i32)?;
            }
            own => {
                let existing = builder
                    .get(name_path)?
                    .map(|entry| (entry.kind(), entry.id()));
                let subtree = match existing {
                    Some((Some(ObjectType::Tree), id)) if own.is_none() || !below.is_empty() => {
                        Some(repository.find_tree(id)?)
                    }
                    _ => None,
                };
                if below.is_empty() {
                    // Only a removal of the name itself.
                    if existing.is_some_and(|(kind, _)| kind != Some(ObjectType::Tree)) {
                        builder.remove(name_path)?;
                    }
                    continue;
                }
                match graft_level(repository, subtree.as_ref(), &below)? {
                    Some(id) => {
                        builder.insert(name_path, id, 0o040000)?;
                    }
                    None => {
                        if builder.get(name_path)?.is_some() {
                            builder.remove(name_path)?;
                        }
                    }
                }
            }
        }
    }
    if builder.is_empty() {
        return Ok(None);
    }
    builder.write().map(Some)
}
