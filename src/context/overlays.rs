//! The files each overlay puts in the image, as the build context holds them: what
//! `verify-digest --contents` reads back from the image and the SBOM lists.

use std::io::Read as _;
use std::path::Path;

use sha2::{Digest as _, Sha256};

use crate::types::dockerfile::ImagePath;
use crate::types::oci::Digest;
use crate::types::recipe::RecipePath;

/// One file the recipe copies into the image, with the digest it must have there.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ExpectedFile {
    /// Its absolute path in the image.
    pub path: String,
    /// The sha256 of its bytes in the build context.
    pub digest: Digest,
}

/// The files each overlay copies into the image, read from the context archive the image was
/// built from (with the patched trees standing in for the folders they patch).
pub fn overlay_files(
    archive: &Path,
    overlays: &[(&RecipePath, &ImagePath)],
) -> std::io::Result<Vec<ExpectedFile>> {
    let mut files = Vec::new();
    let mut tar = tar::Archive::new(std::fs::File::open(archive)?);
    for entry in tar.entries()? {
        let mut entry = entry?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let path = entry.path()?.to_string_lossy().into_owned();
        for overlay in overlays {
            let from = overlay.0.as_str().trim_end_matches('/');
            let Some(rest) = path
                .strip_prefix(from)
                .and_then(|rest| rest.strip_prefix('/'))
            else {
                continue;
            };
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes)?;
            files.push(ExpectedFile {
                path: format!("{}/{rest}", overlay.1.as_str().trim_end_matches('/')),
                digest: Digest::from_sha256(&Sha256::digest(&bytes)),
            });
            break;
        }
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(files)
}
