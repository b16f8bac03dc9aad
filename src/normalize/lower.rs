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
//! daemon what a container of the base holds at the path (`Engine::path_in`), one path at a
//! time, parents first, never a directory's contents.

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
    base: &ImageId,
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
    let mut base_paths = BasePaths::open(engine, base).await?;
    let mut result = Ok(());
    for (index, path, directory) in asked {
        match base_paths.directory(&path).await {
            Ok(Some(lower)) if lower.mode == directory.mode && lower.owner == directory.owner => {
                dropped[index].insert(path);
            }
            Ok(_) => {}
            Err(error) => {
                result = Err(error);
                break;
            }
        }
    }
    base_paths.close().await;
    result.map(|()| dropped)
}

/// The base's paths, asked of the daemon through one container that never runs, and kept.
struct BasePaths<'a, E: Engine> {
    engine: &'a E,
    container: String,
    known: HashMap<Vec<u8>, Option<PathMeta>>,
}

impl<'a, E: Engine> BasePaths<'a, E> {
    async fn open(engine: &'a E, base: &ImageId) -> Result<Self, EngineError> {
        Ok(Self {
            engine,
            container: engine.open_probe(base).await?,
            known: HashMap::new(),
        })
    }

    /// The base's directory at `path`; `None` when the base holds no directory there. Each
    /// parent is asked first, and a path under anything but a directory is not asked at all.
    async fn directory(&mut self, path: &[u8]) -> Result<Option<Directory>, EngineError> {
        let mut chain = vec![path];
        let mut at = path;
        while !parent(at).is_empty() {
            at = parent(at);
            chain.push(at);
        }
        for step in chain.into_iter().rev() {
            if !self.known.contains_key(step) {
                let text = format!("/{}", String::from_utf8_lossy(step));
                let found = self.engine.path_in(&self.container, &text).await?;
                self.known.insert(step.to_vec(), found);
            }
            match &self.known[step] {
                Some(meta) if meta.directory => {}
                _ => return Ok(None),
            }
        }
        Ok(self.known[path].as_ref().map(|meta| Directory {
            mode: meta.mode,
            owner: meta.owner,
            attributes: Default::default(),
        }))
    }

    async fn close(self) {
        self.engine.close_probe(&self.container).await;
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
