//! A patch id: what a change is, whatever it was applied onto. As git's, it hashes each file's
//! names and the lines of its hunks with all whitespace removed, and leaves out line numbers
//! and blob ids (a binary change is its new blob id). A commit's patch id is taken from the
//! diff of the commit against its parent, printed as git prints it and read by the same parser
//! as a mail's, so both sides are hashed by one function.

use git2::{Oid, Repository};
use sha2::Digest as _;

use super::diff::{self, FilePatch};

/// The patch id of a parsed diff.
pub fn of(files: &[FilePatch]) -> [u8; 32] {
    let mut hash = sha2::Sha256::new();
    for file in files {
        for name in [&file.old_name, &file.new_name] {
            hash.update(name.as_deref().unwrap_or(b"/dev/null"));
            hash.update([0]);
        }
        let flags = [file.is_new, file.is_delete, file.is_rename, file.is_copy];
        hash.update(flags.map(u8::from));
        if file.is_new || file.is_delete || file.old_mode != file.new_mode {
            hash.update(format!("{:o} {:o}", file.old_mode, file.new_mode));
        }
        if file.is_binary {
            hash.update(&file.new_id);
        }
        for fragment in &file.fragments {
            for line in fragment.text.split(|&c| c == b'\n') {
                if matches!(line.first(), Some(b'@' | b'\\') | None) {
                    continue;
                }
                let kept: Vec<u8> = line
                    .iter()
                    .copied()
                    .filter(|c| !c.is_ascii_whitespace())
                    .collect();
                hash.update(&kept);
                hash.update([b'\n']);
            }
        }
        hash.update([0xff]);
    }
    hash.finalize().into()
}

/// The patch id of a commit with one parent, or `None` when it has another number of parents
/// or its diff cannot be read.
pub fn of_commit(repository: &Repository, id: Oid) -> Option<[u8; 32]> {
    let commit = repository.find_commit(id).ok()?;
    if commit.parent_count() != 1 {
        return None;
    }
    let old = commit.parent(0).ok()?.tree().ok()?;
    let new = commit.tree().ok()?;
    let mut options = git2::DiffOptions::new();
    options
        .show_binary(true)
        .id_abbrev(40)
        .indent_heuristic(true);
    let mut changes = repository
        .diff_tree_to_tree(Some(&old), Some(&new), Some(&mut options))
        .ok()?;
    let mut find = git2::DiffFindOptions::new();
    find.renames(true);
    changes.find_similar(Some(&mut find)).ok()?;
    let mut text = Vec::new();
    changes
        .print(git2::DiffFormat::Patch, |_, _, line| {
            if matches!(line.origin(), '+' | '-' | ' ') {
                text.push(line.origin() as u8);
            }
            text.extend_from_slice(line.content());
            true
        })
        .ok()?;
    let files = diff::parse(&text).ok()?;
    Some(of(&files))
}
