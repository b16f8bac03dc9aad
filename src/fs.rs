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
