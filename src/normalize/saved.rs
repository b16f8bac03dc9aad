//! A `docker save` archive, read once as it streams in: its manifest, the image's config, and
//! every layer by its diff id. A layer the archive names by a base layer's digest is skipped
//! unread; a small file is kept in memory; a large one (a layer) is rewritten into the load
//! archive as it streams, and cut off again when its digest shows it is the base's.
//!
//! Both layouts the Engine API writes are read: the legacy one (`<id>/layer.tar`,
//! `<config>.json`, `manifest.json` last; engines before 25) and the OCI one (`blobs/sha256/…`
//! beside a legacy `manifest.json`). Which file is which is taken from `manifest.json` and the
//! config, never from the order of the archive; a layer whose bytes do not hash to the diff id
//! the config names is refused.

use std::collections::{HashMap, HashSet};
use std::io::{self, Read};

use serde::Deserialize;

use super::NormalizeError;
use super::archive::{LoadArchive, Placed};
use crate::types::oci::Digest;

/// Files up to this size are kept in memory: every config and manifest, and the small layers.
const IN_MEMORY: u64 = 1 << 20;

/// Where a file of the archive went.
#[derive(Debug, Clone)]
pub enum Content {
    /// Dropped: a layer of the base.
    Dropped,
    /// Kept in memory, as the engine wrote it.
    Memory(Vec<u8>),
    /// Rewritten into the load archive.
    Rewritten(Placed),
}

impl Content {
    /// A reader of the kept bytes (for a rewritten layer, the rewritten ones, whose entries are
    /// the engine's with times clamped); `None` for a dropped file.
    pub fn reader(&self) -> io::Result<Option<Box<dyn Read + '_>>> {
        Ok(match self {
            Content::Dropped => None,
            Content::Memory(bytes) => Some(Box::new(bytes.as_slice())),
            Content::Rewritten(placed) => Some(Box::new(placed.reader()?)),
        })
    }
}

/// One file of the archive: its sha256, and where its bytes went.
#[derive(Debug)]
struct Stored {
    digest: Digest,
    content: Content,
}

/// The image a `docker save` archive holds.
#[derive(Debug)]
pub struct Saved {
    /// The config's bytes, as the engine wrote them.
    pub config: Vec<u8>,
    /// The layers in the config's order: each diff id, and its bytes unless dropped.
    pub layers: Vec<(Digest, Content)>,
}

/// `manifest.json` of a `docker save` archive: one entry per image.
#[derive(Debug, Deserialize)]
struct ManifestEntry {
    #[serde(rename = "Config")]
    config: String,
    #[serde(rename = "Layers")]
    layers: Vec<String>,
}

/// The part of an image config that says which layers it has.
#[derive(Debug, Deserialize)]
struct RootFsOnly {
    rootfs: RootFs,
}

#[derive(Debug, Deserialize)]
struct RootFs {
    diff_ids: Vec<Digest>,
}

/// Reads the `docker save` archive of one image from `archive`, dropping the layers whose diff
/// ids are in `base`, keeping small files in memory and rewriting large ones (the layers) into
/// `load` with their times clamped to `epoch`.
pub fn read(
    archive: impl Read,
    base: &HashSet<Digest>,
    load: &mut LoadArchive,
    epoch: u64,
) -> Result<Saved, NormalizeError> {
    let mut files: HashMap<String, Stored> = HashMap::new();
    let mut links: HashMap<String, String> = HashMap::new();
    let mut archive = tar::Archive::new(archive);
    let broken = |source: io::Error| NormalizeError::Export {
        what: "the exported image".to_owned(),
        source,
    };
    for entry in archive.entries().map_err(broken)? {
        let mut entry = entry.map_err(broken)?;
        let path = clean(&String::from_utf8_lossy(&entry.path_bytes()));
        let kind = entry.header().entry_type();
        if kind.is_symlink() {
            if let Some(target) = entry.link_name_bytes() {
                links.insert(
                    path.clone(),
                    joined(&path, &String::from_utf8_lossy(&target)),
                );
            }
            continue;
        }
        if !kind.is_file() {
            continue;
        }
        let size = entry.size();
        let stored = store(&mut entry, (&path, size), base, load, epoch).map_err(|source| {
            NormalizeError::Export {
                what: format!("{path} of the exported image"),
                source,
            }
        })?;
        files.insert(path, stored);
    }
    assemble(files, &links)
}

/// Reads one file of the archive (`path`, of `size` bytes): skipped when its name is a base
/// layer's digest, else hashed and kept in memory or rewritten into `load`, and cut off again
/// once its digest shows it is a base layer.
fn store(
    entry: &mut impl Read,
    (path, size): (&str, u64),
    base: &HashSet<Digest>,
    load: &mut LoadArchive,
    epoch: u64,
) -> io::Result<Stored> {
    if let Some(digest) = blob_digest(path).filter(|digest| base.contains(digest)) {
        return Ok(Stored {
            digest,
            content: Content::Dropped,
        });
    }
    if size <= IN_MEMORY {
        let mut bytes = Vec::with_capacity(size as usize);
        entry.read_to_end(&mut bytes)?;
        let digest = Digest::from_sha256(&<sha2::Sha256 as sha2::Digest>::digest(&bytes));
        return Ok(Stored {
            digest,
            content: Content::Memory(bytes),
        });
    }
    let (digest, placed) = load.rewrite(entry, epoch)?;
    if base.contains(&digest) {
        load.discard(&placed)?;
        return Ok(Stored {
            digest,
            content: Content::Dropped,
        });
    }
    Ok(Stored {
        digest,
        content: Content::Rewritten(placed),
    })
}

/// Picks the image out of the archive's files: the manifest's config and layers, each layer
/// checked against the diff id the config gives it.
fn assemble(
    files: HashMap<String, Stored>,
    links: &HashMap<String, String>,
) -> Result<Saved, NormalizeError> {
    let invalid = |what: String| NormalizeError::Invalid(what);
    let manifest = match files.get("manifest.json").map(|stored| &stored.content) {
        Some(Content::Memory(bytes)) => bytes.clone(),
        _ => {
            return Err(invalid(
                "the exported image holds no manifest.json".to_owned(),
            ));
        }
    };
    let entries: Vec<ManifestEntry> = serde_json::from_slice(&manifest)
        .map_err(|error| invalid(format!("manifest.json of the exported image: {error}")))?;
    let [entry] = <[ManifestEntry; 1]>::try_from(entries).map_err(|entries| {
        invalid(format!(
            "the exported archive holds {} images, not one",
            entries.len()
        ))
    })?;
    let config = take_bytes(&files, &resolve(&entry.config, links)).ok_or_else(|| {
        invalid(format!(
            "the exported image lacks its config {}",
            entry.config
        ))
    })?;
    let rootfs: RootFsOnly = serde_json::from_slice(&config)
        .map_err(|error| invalid(format!("the exported image's config: {error}")))?;
    let diff_ids = rootfs.rootfs.diff_ids;
    if diff_ids.len() != entry.layers.len() {
        return Err(invalid(format!(
            "the exported image's config names {} layers and its manifest {}",
            diff_ids.len(),
            entry.layers.len()
        )));
    }
    let mut layers = Vec::with_capacity(diff_ids.len());
    for (index, (diff_id, path)) in diff_ids.into_iter().zip(&entry.layers).enumerate() {
        let path = resolve(path, links);
        let stored = files.get(&path).ok_or_else(|| {
            invalid(format!(
                "layer {} ({path}) is missing from the exported image",
                index + 1
            ))
        })?;
        if stored.digest != diff_id {
            return Err(invalid(format!(
                "layer {} ({path}) of the exported image is {}, not {diff_id} as its config says",
                index + 1,
                stored.digest
            )));
        }
        // A layer listed twice is written once, and named twice.
        layers.push((diff_id, stored.content.clone()));
    }
    Ok(Saved { config, layers })
}

/// The bytes of the file at `path`, kept in memory (every config and manifest is small).
fn take_bytes(files: &HashMap<String, Stored>, path: &str) -> Option<Vec<u8>> {
    match &files.get(path)?.content {
        Content::Memory(bytes) => Some(bytes.clone()),
        _ => None,
    }
}

/// `blobs/sha256/HEX` names its content's digest.
fn blob_digest(path: &str) -> Option<Digest> {
    path.strip_prefix("blobs/sha256/")
        .and_then(|hex| format!("sha256:{hex}").parse().ok())
}

/// The path a link chain ends at.
fn resolve(path: &str, links: &HashMap<String, String>) -> String {
    let mut path = clean(path);
    for _ in 0..16 {
        match links.get(&path) {
            Some(target) => path = target.clone(),
            None => break,
        }
    }
    path
}

/// `target` of a link at `link`, as a path from the archive's root.
fn joined(link: &str, target: &str) -> String {
    if target.starts_with('/') {
        return clean(target);
    }
    let folder = link.rsplit_once('/').map_or("", |(folder, _)| folder);
    clean(&format!("{folder}/{target}"))
}

/// A path with `.`, `..` and empty components resolved, no leading `/` or `./`.
fn clean(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    parts.join("/")
}
