//! File writes that never leave a half-written file behind.

use std::io::Write;
use std::path::Path;

/// Whether `write_if_changed` touched the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// The file held other bytes (or did not exist) and now holds the new ones.
    Changed,
    /// The file already held exactly these bytes; it was not rewritten.
    Unchanged,
}

/// Writes `bytes` to `path` through a temporary file in the same folder and a rename, so a
/// reader sees the old content or the new, never a mix; a file that already holds `bytes` is
/// left alone (its mtime too).
pub fn write_if_changed(path: &Path, bytes: &[u8]) -> std::io::Result<Written> {
    if std::fs::read(path).is_ok_and(|current| current == bytes) {
        return Ok(Written::Unchanged);
    }
    let folder = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let mut temporary = tempfile::Builder::new()
        .prefix(".forge-")
        .suffix(".tmp")
        .tempfile_in(folder)?;
    temporary.write_all(bytes)?;
    // A temporary file is created 0600; give the result the mode the old file had, else 0644.
    let permissions = match std::fs::metadata(path) {
        Ok(metadata) => metadata.permissions(),
        Err(_) => std::os::unix::fs::PermissionsExt::from_mode(0o644),
    };
    temporary.as_file().set_permissions(permissions)?;
    temporary.as_file().sync_all()?;
    temporary.persist(path).map_err(|error| error.error)?;
    Ok(Written::Changed)
}

/// Writes several files so that they change together: every new content goes to a temporary
/// file next to its target first, then each is renamed into place; when a rename fails, the
/// files already replaced get their old bytes back (a file that did not exist is removed), so
/// the set is left all old or all new. Files that already hold their bytes are not touched.
pub fn write_together(files: &[(&Path, &[u8])]) -> std::io::Result<Vec<Written>> {
    let mut staged = Vec::new();
    for (path, bytes) in files {
        let old = std::fs::read(path).ok();
        if old.as_deref() == Some(*bytes) {
            staged.push((*path, old, None));
            continue;
        }
        let folder = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        let mut temporary = tempfile::Builder::new()
            .prefix(".forge-")
            .suffix(".tmp")
            .tempfile_in(folder)?;
        temporary.write_all(bytes)?;
        let permissions = match std::fs::metadata(path) {
            Ok(metadata) => metadata.permissions(),
            Err(_) => std::os::unix::fs::PermissionsExt::from_mode(0o644),
        };
        temporary.as_file().set_permissions(permissions)?;
        temporary.as_file().sync_all()?;
        staged.push((*path, old, Some(temporary)));
    }
    let mut replaced: Vec<(&Path, Option<Vec<u8>>)> = Vec::new();
    let mut written = Vec::new();
    for (path, old, temporary) in staged {
        let Some(temporary) = temporary else {
            written.push(Written::Unchanged);
            continue;
        };
        if let Err(error) = temporary.persist(path) {
            for (path, old) in replaced.into_iter().rev() {
                // Best effort: the error that stopped the write is the one to report.
                let _ = match old {
                    Some(old) => write_if_changed(path, &old).map(drop),
                    None => std::fs::remove_file(path),
                };
            }
            return Err(error.error);
        }
        replaced.push((path, old));
        written.push(Written::Changed);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_written_together_are_left_all_old_when_one_cannot_be_written() {
        let folder = tempfile::tempdir().unwrap();
        let first = folder.path().join("first.txt");
        std::fs::write(&first, "old\n").unwrap();
        // A folder where the second file should go: its rename fails after the first's.
        let second = folder.path().join("second.txt");
        std::fs::create_dir(&second).unwrap();
        std::fs::write(second.join("keep"), "x").unwrap();
        let result = write_together(&[(&first, b"new\n"), (&second, b"new\n")]);
        assert!(result.is_err());
        assert_eq!(std::fs::read_to_string(&first).unwrap(), "old\n");

        let third = folder.path().join("third.txt");
        let written = write_together(&[(&first, b"new\n"), (&third, b"3\n")]).unwrap();
        assert_eq!(written, [Written::Changed, Written::Changed]);
        assert_eq!(std::fs::read_to_string(&first).unwrap(), "new\n");
        assert_eq!(std::fs::read_to_string(&third).unwrap(), "3\n");
    }
}
