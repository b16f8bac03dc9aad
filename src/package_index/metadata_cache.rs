//! METADATA already read, kept by the sha256 of the distribution file it came from (a file on an
//! index never changes under its hash): `<cache>/metadata/<sha256>`, the cache folder being
//! `FORGE_CACHE_DIR`, else `$XDG_CACHE_HOME/forge`, else `~/.cache/forge`. A second look at the
//! same wheel asks the index nothing. The cache is best effort: one that cannot be read or
//! written is as if empty.

use std::path::PathBuf;

fn path(sha256: &str) -> Option<PathBuf> {
    let valid = sha256.len() == 64 && sha256.bytes().all(|b| b.is_ascii_hexdigit());
    valid.then(|| {
        crate::git_remote::cache_root()
            .join("metadata")
            .join(sha256.to_ascii_lowercase())
    })
}

/// The METADATA cached for the file whose sha256 is `sha256`.
pub fn read(sha256: &str) -> Option<String> {
    std::fs::read_to_string(path(sha256)?).ok()
}

/// Keeps `text` as the METADATA of the file whose sha256 is `sha256`.
pub fn write(sha256: &str, text: &str) {
    let Some(path) = path(sha256) else { return };
    if let Some(folder) = path.parent()
        && std::fs::create_dir_all(folder).is_ok()
    {
        // A cache that cannot be written only costs the next run a request.
        let _ = crate::fs::write_if_changed(&path, text.as_bytes());
    }
}
