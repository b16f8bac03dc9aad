//! Applying a diff to the few files it names instead of the whole tree.
//!
//! `apply_to_tree` reads the entire tree into an index and writes every tree back, which on a
//! repository of thousands of files costs more than the patch itself. A git diff reads only the
//! files its headers name, so it gives the same result on a slice: a tree holding just those
//! files. The slice's result is then grafted onto the full tree, rebuilding only the folders on
//! the changed paths.

use std::collections::BTreeMap;
use std::path::Path;

use git2::{Diff, Index, ObjectType, Oid, Repository, Tree};

/// A file's blob and mode in a tree.
type Entry = (Oid, i32);

/// Every path `diff` names (from both its text and libgit2's reading of it).
pub fn touched_paths(text_paths: &[String], diff: &Diff<'_>) -> Vec<String> {
    let mut paths: Vec<String> = text_paths.to_vec();
    for delta in diff.deltas() {
        for file in [delta.old_file(), delta.new_file()] {
            if let Some(path) = file.path_bytes() {
                paths.push(String::from_utf8_lossy(path).into_owned());
            }
        }
    }
    paths.sort();
    paths.dedup();
    paths
}

/// A tree with only the files of `tree` at `paths` (missing paths and folders left out).
pub fn slice<'r>(
    repository: &'r Repository,
    tree: &Tree<'_>,
    paths: &[String],
) -> Result<Tree<'r>, git2::Error> {
    let mut files = BTreeMap::new();
    for path in paths {
        if let Ok(entry) = tree.get_path(Path::new(path))
            && entry.kind() != Some(ObjectType::Tree)
        {
            files.insert(path.clone(), Some((entry.id(), entry.filemode())));
        }
    }
    let id = graft(repository, None, &files)?;
    repository.find_tree(id)
}

/// What `index` (the result of applying a diff to a slice) holds at each of `paths`: a blob
/// and mode, or nothing when the diff deleted it.
pub fn changes(index: &Index, paths: &[String]) -> BTreeMap<String, Option<Entry>> {
    paths
        .iter()
        .map(|path| {
            let entry = index
                .get_path(Path::new(path), 0)
                .map(|entry| (entry.id, entry.mode as i32));
            (path.clone(), entry)
        })
        .collect()
}

/// `base` with `changes` made (`None` removes a file); folders left empty disappear, as in git.
pub fn graft(
    repository: &Repository,
    base: Option<&Tree<'_>>,
    changes: &BTreeMap<String, Option<Entry>>,
) -> Result<Oid, git2::Error> {
    let components: Vec<(Vec<&str>, Option<Entry>)> = changes
        .iter()
        .map(|(path, entry)| (path.split('/').collect(), *entry))
        .collect();
    let borrowed: Vec<(&[&str], Option<Entry>)> = components
        .iter()
        .map(|(parts, entry)| (parts.as_slice(), *entry))
        .collect();
    match graft_level(repository, base, &borrowed)? {
        Some(id) => Ok(id),
        None => repository.treebuilder(None)?.write(),
    }
}

/// A change below a folder: the rest of its path, and what goes there.
type Change<'a> = (&'a [&'a str], Option<Entry>);

fn graft_level(
    repository: &Repository,
    base: Option<&Tree<'_>>,
    changes: &[Change<'_>],
) -> Result<Option<Oid>, git2::Error> {
    let mut builder = repository.treebuilder(base)?;
    // Changes grouped by their first component, in order.
    let mut groups: BTreeMap<&str, Vec<Change<'_>>> = BTreeMap::new();
    for (parts, entry) in changes {
        let (first, rest) = parts.split_first().expect("a path has a component");
        if rest.is_empty() {
            match entry {
                Some((id, mode)) => {
                    builder.insert(first, *id, *mode)?;
                }
                None => {
                    if builder
                        .get(first)?
                        .is_some_and(|existing| existing.kind() != Some(ObjectType::Tree))
                    {
                        builder.remove(first)?;
                    }
                }
            }
        } else {
            groups.entry(first).or_default().push((rest, *entry));
        }
    }
    for (name, group) in groups {
        let subtree = match base.and_then(|tree| tree.get_name(name)) {
            Some(entry) if entry.kind() == Some(ObjectType::Tree) => {
                Some(repository.find_tree(entry.id())?)
            }
            _ => None,
        };
        match graft_level(repository, subtree.as_ref(), &group)? {
            Some(id) => {
                builder.insert(name, id, 0o040000)?;
            }
            None => {
                if builder.get(name)?.is_some() {
                    builder.remove(name)?;
                }
            }
        }
    }
    if builder.is_empty() {
        return Ok(None);
    }
    builder.write().map(Some)
}
