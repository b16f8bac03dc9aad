//! Which directory entries of a layer change nothing of the layers below it.
//!
//! A directory entry sets the permissions, owner, group and attributes of a directory. Where
//! the layers below already hold that directory with the same ones, the entry changes nothing
//! but the directory's time, and engines differ in whether they write it: one writes an entry
//! for every mount point of a RUN step (`/etc` for its `hosts` and `resolv.conf`), another none.
//! forge leaves every such entry out, so that the layer is one whichever engine made it.
//!
//! What lies below is read from forge's own layers first (their entries, deletions and opaque
//! directories, nearest first), and only where they say nothing from the base, by asking the
//! daemon what a container of the base holds at the path (`Engine::path_in`): the path itself,
//! never a directory's contents, a level at a time and the paths of a level at once, a path
//! only where its parent is a directory. What the daemon said of a base is kept in forge's
//! cache folder (`base-paths/`, a file per base image id): an image's file system never
//! changes, and a later build of the same base asks the daemon nothing it answered before.

use std::collections::{HashMap, HashSet};

use super::layer::{Directory, Held, Index, parent};
use crate::engine::{Engine, EngineError, ImageId, PathMeta};

/// What the layers below a layer hold at a path, as forge's own layers tell.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Below {
    /// A layer of forge's holds it.
    Held(Held),
    /// A layer of forge's deletes it, or it lies under one that hides it.
    Absent,
    /// None of forge's layers says: it is as the base holds it.
    Base,
}

/// What `layers` (bottom first) hold at `path` beneath them all.
fn below(layers: &[Index], path: &[u8]) -> Below {
    for layer in layers.iter().rev() {
        if let Some(held) = layer.entries.get(path) {
            return Below::Held(held.clone());
        }
        let mut at = path;
        loop {
            if layer.deleted.contains(at) {
                return Below::Absent;
            }
            if at != path && layer.entries.get(at) == Some(&Held::Other) {
                return Below::Absent;
            }
            if at.is_empty() {
                break;
            }
            let up = parent(at);
            if layer.opaque.contains(up) {
                return Below::Absent;
            }
            at = up;
        }
    }
    Below::Base
}

/// The directory entries of each layer in `layers` (bottom first, all above the base `base`)
/// that change nothing below them, by layer.
pub async fn unchanged<E: Engine>(
    engine: &E,
    (base, opened): (&ImageId, Option<&Probe>),
    layers: &[Index],
) -> Result<Vec<HashSet<Vec<u8>>>, EngineError> {
    let mut asked: Vec<(usize, Vec<u8>, Directory)> = Vec::new();
    let mut dropped = vec![HashSet::new(); layers.len()];
    for (index, layer) in layers.iter().enumerate() {
        for (path, held) in &layer.entries {
            let Held::Directory(directory) = held else {
                continue;
            };
            if path.is_empty() || layer.opaque.contains(path) {
                continue;
            }
            match below(&layers[..index], path) {
                Below::Held(Held::Directory(lower)) if lower == *directory => {
                    dropped[index].insert(path.clone());
                }
                Below::Base if directory.attributes.is_empty() => {
                    asked.push((index, path.clone(), directory.clone()));
                }
                _ => {}
            }
        }
    }
    if asked.is_empty() {
        return Ok(dropped);
    }
    let paths: Vec<&[u8]> = asked.iter().map(|(_, path, _)| path.as_slice()).collect();
    let mut known = remembered(base);
    let before = known.len();
    let opened = opened.filter(|probe| probe.base == *base);
    let mut own = None;
    let mut outcome = Ok(());
    for level in levels(&paths) {
        let asked = to_ask(&level, &known);
        if asked.is_empty() {
            continue;
        }
        let probe = match (opened, &own) {
            (Some(probe), _) => probe,
            (None, Some(probe)) => probe,
            (None, None) => own.insert(Probe::open(engine, base).await?),
        };
        if let Err(error) = ask(engine, &probe.container, &asked, &mut known).await {
            outcome = Err(error);
            break;
        }
    }
    if let Some(probe) = own {
        probe.close(engine).await;
    }
    outcome?;
    if known.len() > before {
        remember(base, &known);
    }
    for (index, path, directory) in asked {
        if let Some(Some(lower)) = known.get(&path)
            && lower.directory
            && lower.mode == directory.mode
            && lower.owner == directory.owner
        {
            dropped[index].insert(path);
        }
    }
    Ok(dropped)
}

/// A container of the base that never runs, for the daemon to say what the base holds at a
/// path. Made while the build runs, where the daemon holds the base by name already.
#[derive(Debug)]
pub struct Probe {
    base: ImageId,
    container: String,
}

impl Probe {
    /// A container of `base` on `engine`.
    pub async fn open<E: Engine>(engine: &E, base: &ImageId) -> Result<Self, EngineError> {
        Ok(Self {
            base: base.clone(),
            container: engine.open_probe(base).await?,
        })
    }

    /// Removes the container.
    pub async fn close<E: Engine>(self, engine: &E) {
        engine.close_probe(&self.container).await;
    }

    /// Whether the cache holds what the daemon said of `base` before: a later build of it
    /// most likely needs no container.
    pub fn remembered(base: &ImageId) -> bool {
        cache_file(base).is_file()
    }
}

/// Each of `paths` and every directory above them, a level of depth at a time, shallowest first.
fn levels<'a>(paths: &[&'a [u8]]) -> Vec<HashSet<&'a [u8]>> {
    let mut levels: Vec<HashSet<&[u8]>> = Vec::new();
    for path in paths {
        let mut at = *path;
        loop {
            let depth = at.iter().filter(|byte| **byte == b'/').count();
            if levels.len() <= depth {
                levels.resize_with(depth + 1, HashSet::new);
            }
            levels[depth].insert(at);
            if parent(at).is_empty() {
                break;
            }
            at = parent(at);
        }
    }
    levels
}

/// The paths of `level` the daemon must be asked about: not known yet, under a directory.
fn to_ask<'a>(
    level: &HashSet<&'a [u8]>,
    known: &HashMap<Vec<u8>, Option<PathMeta>>,
) -> Vec<&'a [u8]> {
    level
        .iter()
        .copied()
        .filter(|path| !known.contains_key(*path))
        .filter(|path| {
            let up = parent(path);
            up.is_empty() || matches!(known.get(up), Some(Some(meta)) if meta.directory)
        })
        .collect()
}

/// Asks the daemon, through `container`, what the base holds at each of `paths`, all at once.
async fn ask<E: Engine>(
    engine: &E,
    container: &str,
    paths: &[&[u8]],
    known: &mut HashMap<Vec<u8>, Option<PathMeta>>,
) -> Result<(), EngineError> {
    let answers = futures_util::future::join_all(paths.iter().map(|path| {
        let text = format!("/{}", String::from_utf8_lossy(path));
        async move { engine.path_in(container, &text).await }
    }))
    .await;
    for (path, answer) in paths.iter().zip(answers) {
        known.insert(path.to_vec(), answer?);
    }
    Ok(())
}

/// One path of a base as the cache keeps it.
#[derive(serde::Serialize, serde::Deserialize)]
struct Kept {
    path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mode: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    owner: Option<(u64, u64)>,
    #[serde(default)]
    directory: bool,
}

/// The cache file of the base `base`.
fn cache_file(base: &ImageId) -> std::path::PathBuf {
    crate::git_remote::cache_root()
        .join("base-paths")
        .join(format!("{}.json", base.0.hex()))
}

/// What the daemon said of `base` before, as the cache keeps it; nothing when there is no
/// cache, or one that does not read.
fn remembered(base: &ImageId) -> HashMap<Vec<u8>, Option<PathMeta>> {
    let Ok(file) = crate::fs::open_regular(&cache_file(base)) else {
        return HashMap::new();
    };
    let mut text = String::new();
    let read = std::io::Read::read_to_string(
        &mut std::io::Read::take(file, crate::conduit::DOCUMENT_LIMIT),
        &mut text,
    );
    let Ok(kept) = read
        .map_err(|_| ())
        .and_then(|_| serde_json::from_str::<Vec<Kept>>(&text).map_err(|_| ()))
    else {
        return HashMap::new();
    };
    kept.into_iter()
        .map(|kept| {
            let meta = kept.mode.map(|mode| PathMeta {
                directory: kept.directory,
                mode,
                owner: kept.owner.unwrap_or_default(),
            });
            (kept.path.into_bytes(), meta)
        })
        .collect()
}

/// Keeps what the daemon said of `base` in the cache; a cache that cannot be written is only
/// not kept.
fn remember(base: &ImageId, known: &HashMap<Vec<u8>, Option<PathMeta>>) {
    let mut kept: Vec<Kept> = known
        .iter()
        .filter_map(|(path, meta)| {
            Some(Kept {
                path: String::from_utf8(path.clone()).ok()?,
                mode: meta.as_ref().map(|meta| meta.mode),
                owner: meta.as_ref().map(|meta| meta.owner),
                directory: meta.as_ref().is_some_and(|meta| meta.directory),
            })
        })
        .collect();
    kept.sort_by(|one, two| one.path.cmp(&two.path));
    let file = cache_file(base);
    if let (Some(folder), Ok(bytes)) = (file.parent(), serde_json::to_vec_pretty(&kept)) {
        let _ = std::fs::create_dir_all(folder);
        let _ = crate::fs::write_if_changed(&file, &bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn directory(mode: u32) -> Held {
        Held::Directory(Directory {
            mode,
            owner: (0, 0),
            attributes: Default::default(),
        })
    }

    fn layer(entries: &[(&str, Held)], deleted: &[&str], opaque: &[&str]) -> Index {
        Index {
            entries: entries
                .iter()
                .map(|(path, held)| (path.as_bytes().to_vec(), held.clone()))
                .collect(),
            deleted: deleted.iter().map(|p| p.as_bytes().to_vec()).collect(),
            opaque: opaque.iter().map(|p| p.as_bytes().to_vec()).collect(),
            diff_id: None,
        }
    }

    #[test]
    fn the_nearest_layer_that_says_anything_decides() {
        let layers = [
            layer(
                &[("opt", directory(0o755)), ("opt/app", directory(0o700))],
                &[],
                &[],
            ),
            layer(&[("opt/app", directory(0o755))], &[], &[]),
        ];
        assert_eq!(below(&layers, b"opt/app"), Below::Held(directory(0o755)));
        assert_eq!(
            below(&layers[..1], b"opt/app"),
            Below::Held(directory(0o700))
        );
        assert_eq!(below(&layers, b"etc"), Below::Base);
    }

    #[test]
    fn a_deletion_an_opaque_folder_or_a_file_on_the_way_hides_what_lies_below() {
        let deleted = [layer(&[], &["opt"], &[])];
        assert_eq!(below(&deleted, b"opt/app"), Below::Absent);
        assert_eq!(below(&deleted, b"opt"), Below::Absent);
        let opaque = [layer(&[("opt", directory(0o755))], &[], &["opt"])];
        assert_eq!(below(&opaque, b"opt/app"), Below::Absent);
        assert_eq!(below(&opaque, b"opt"), Below::Held(directory(0o755)));
        let file = [layer(&[("opt", Held::Other)], &[], &[])];
        assert_eq!(below(&file, b"opt/app"), Below::Absent);
    }
}
