//! Stage 5b: the image the engine built in; the same image as a function of its content out,
//! loaded back into the engine.
//!
//! 1. Export the built image (`Engine::export`, a `docker save` archive) and read it as it
//!    streams (`saved`): the config, and each layer by its diff id. The base's layers, known by
//!    the diff ids the base has on the daemon, are skipped unread where the archive names them
//!    by digest, else cut off again once read.
//! 2. As it streams, rewrite each layer (`layer`) into a `docker load` archive (`archive`):
//!    entries in the order the layer has them, owners by number only, mtimes clamped to the
//!    epoch, every header written one way.
//! 3. Rewrite the config (`config`): the new diff ids, timestamps clamped, nothing that says
//!    which machine or builder made it, no cache metadata.
//! 4. Load the archive. The image id is the sha256 of the config bytes forge wrote: known
//!    before the engine loads it, checked after, and the load is skipped when the engine
//!    already holds that image.
//!
//! The epoch is the recipe's date (`Recipe::source_date_epoch`). Equal layer contents give equal
//! bytes whichever engine, storage driver or clock produced them, so two daemons, a `--no-cache`
//! rebuild and a cold runner reading a registry cache all end on the same image id. What a step
//! itself makes differently on every run (a build path, a clock, a random name compiled into a
//! file) stays different, and `verify-digest --rebuild` names it file by file (`compare`).

mod archive;
pub mod compare;
mod config;
pub mod layer;
mod saved;

use std::collections::HashSet;
use std::path::PathBuf;

use futures_util::StreamExt as _;

use crate::diagnostics::{Advice, Advise, ExitStatus};
use crate::engine::{Engine, EngineError, ImageId};
use crate::types::oci::Digest;

pub use archive::LoadArchive;
pub use saved::{Content, Saved};

/// The format of the normalization, recorded with the image it made: a later forge that
/// normalizes differently bumps it, and then rewrites the images an earlier one made.
pub const FORMAT: u32 = 1;

/// How many exported chunks may wait for the reading thread.
const CHUNKS_IN_FLIGHT: usize = 8;

/// What normalizing an image did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Normalized {
    /// The normalized image.
    pub id: ImageId,
    /// Each layer above the base: its diff id as built, and as published.
    pub layers: Vec<(Digest, Digest)>,
    /// The bytes of the layers rewritten.
    pub rewritten: u64,
    /// Whether the engine held the normalized image already (nothing was loaded).
    pub already_held: bool,
    /// How long each part took: the export read as it streamed, the rewrite, the load.
    pub took: Phases,
}

/// How long each part of a normalization took.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Phases {
    /// Exporting the image and reading it.
    pub export: std::time::Duration,
    /// Rewriting the layers and the config.
    pub rewrite: std::time::Duration,
    /// Loading the result (zero when the engine held it already).
    pub load: std::time::Duration,
}

impl std::fmt::Display for Phases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "export {:.2} s, rewrite {:.2} s, load {:.2} s",
            self.export.as_secs_f64(),
            self.rewrite.as_secs_f64(),
            self.load.as_secs_f64()
        )
    }
}

/// Why an image could not be normalized.
#[derive(Debug, thiserror::Error)]
pub enum NormalizeError {
    /// The engine failed.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The export could not be read or spooled.
    #[error("cannot read {what}: {source}")]
    Export {
        /// Which part.
        what: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The export is not what an export should be.
    #[error("{0}")]
    Invalid(String),
    /// The built image does not start with the base's layers.
    #[error(
        "the built image does not start with the layers of its base {base} ({held} on the daemon, {found} in the image)"
    )]
    NotOnBase {
        /// The base, as pins.toml names it.
        base: String,
        /// How many layers the base has on the daemon.
        held: usize,
        /// How many of them start the built image.
        found: usize,
    },
    /// A layer above the base repeats a base layer the export did not keep.
    #[error(
        "layer {index} of the built image repeats a layer of its base byte for byte ({diff_id}), which forge cannot rewrite"
    )]
    RepeatsBase {
        /// Its place, from 1.
        index: usize,
        /// Its diff id.
        diff_id: Digest,
    },
    /// The temporary files could not be written.
    #[error("cannot write the normalized image in {}: {source}", folder.display())]
    Spool {
        /// The temporary folder.
        folder: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The engine loaded something else than the image forge wrote.
    #[error("the engine did not load the normalized image {expected}")]
    NotLoaded {
        /// The image id forge computed.
        expected: ImageId,
    },
}

impl Advise for NormalizeError {
    fn advice(&self) -> Advice {
        match self {
            NormalizeError::Engine(error) => error.advice(),
            NormalizeError::Spool { .. } => Advice::Hint(
                "the layers above the base are rewritten in the temporary folder; free space there or point TMPDIR at a larger one"
                    .to_owned(),
            ),
            NormalizeError::NotOnBase { .. } => Advice::Hint(
                "the base's tag moved while the build ran, or the daemon holds another image under it: pin the base by digest (`forge pin bump base`) and build again".to_owned(),
            ),
            _ => Advice::Hint("no tag moved and forge.lock is unchanged; check the daemon's log and build again".to_owned()),
        }
    }

    fn exit_status(&self) -> ExitStatus {
        match self {
            NormalizeError::Engine(error) => error.exit_status(),
            _ => ExitStatus::Error,
        }
    }
}

crate::advised!(NormalizeError);

/// Normalizes the image `built`, whose first layers are the base's `base` (diff ids, in order;
/// `base_name` names it in messages), with every timestamp later than `epoch` clamped to it, and
/// loads the result into `engine`.
pub async fn normalize<E: Engine>(
    engine: &E,
    built: &ImageId,
    base: &[Digest],
    base_name: &str,
    epoch: u64,
) -> Result<Normalized, NormalizeError> {
    let spool = spool()?;
    let started = std::time::Instant::now();
    let (saved, load) = export(engine, built, base, spool.path(), epoch).await?;
    let exported = started.elapsed();
    let found = saved
        .layers
        .iter()
        .zip(base)
        .take_while(|((diff_id, _), held)| diff_id == *held)
        .count();
    if found != base.len() {
        return Err(NormalizeError::NotOnBase {
            base: base_name.to_owned(),
            held: base.len(),
            found,
        });
    }
    let folder = spool.path().to_owned();
    let written = tokio::task::spawn_blocking(move || finish(saved, load, (found, epoch), &folder))
        .await
        .expect("the rewrite does not panic")?;
    let Written {
        archive,
        id,
        layers,
        rewritten,
    } = written;
    let id = ImageId(id);
    let rewritten_at = started.elapsed();
    let already_held = engine.image(id.0.as_str()).await?.is_some();
    if !already_held {
        engine.load(&archive).await?;
        if engine.image(id.0.as_str()).await?.is_none() {
            return Err(NormalizeError::NotLoaded { expected: id });
        }
    }
    Ok(Normalized {
        id,
        layers,
        rewritten,
        already_held,
        took: Phases {
            export: exported,
            rewrite: rewritten_at - exported,
            load: started.elapsed() - rewritten_at,
        },
    })
}

/// A temporary folder for the load archive.
pub fn spool() -> Result<tempfile::TempDir, NormalizeError> {
    tempfile::Builder::new()
        .prefix("forge-normalize-")
        .tempdir()
        .map_err(|source| spool_error(&std::env::temp_dir(), source))
}

fn spool_error(folder: &std::path::Path, source: std::io::Error) -> NormalizeError {
    NormalizeError::Spool {
        folder: folder.to_owned(),
        source,
    }
}

/// Exports `image` from `engine` and reads it as it streams: the layers not in `base` are
/// rewritten, their times clamped to `epoch`, into a load archive in `spool`.
pub async fn export<E: Engine>(
    engine: &E,
    image: &ImageId,
    base: &[Digest],
    spool: &std::path::Path,
    epoch: u64,
) -> Result<(Saved, LoadArchive), NormalizeError> {
    let mut load = LoadArchive::create(spool).map_err(|source| spool_error(spool, source))?;
    let (sender, receiver) = tokio::sync::mpsc::channel(CHUNKS_IN_FLIGHT);
    let base: HashSet<Digest> = base.iter().cloned().collect();
    let reading = tokio::task::spawn_blocking(move || {
        saved::read(ChunkReader::new(receiver), &base, &mut load, epoch).map(|saved| (saved, load))
    });
    let mut stream = std::pin::pin!(engine.export(image));
    let mut pumped = Ok(());
    while let Some(chunk) = stream.next().await {
        match chunk {
            // The reader stopped early; its own error says why.
            Ok(chunk) => {
                if sender.send(chunk).await.is_err() {
                    break;
                }
            }
            Err(error) => {
                pumped = Err(error);
                break;
            }
        }
    }
    drop(sender);
    let read = reading.await.expect("reading the export does not panic");
    pumped?;
    read
}

/// What the rewrite wrote.
struct Written {
    archive: tempfile::TempPath,
    id: Digest,
    layers: Vec<(Digest, Digest)>,
    rewritten: u64,
}

/// Finishes the load archive of `saved`: the layers above its first `base` ones rewritten (most
/// already are, as the export streamed), and the config that names them.
fn finish(
    saved: Saved,
    mut load: LoadArchive,
    (base, epoch): (usize, u64),
    folder: &std::path::Path,
) -> Result<Written, NormalizeError> {
    let spooled = |source| spool_error(folder, source);
    let mut diff_ids = Vec::with_capacity(saved.layers.len());
    let mut paths = Vec::with_capacity(saved.layers.len());
    let mut layers = Vec::new();
    let mut rewritten = 0;
    for (index, (diff_id, content)) in saved.layers.iter().enumerate() {
        if index < base {
            paths.push(archive::held_path(diff_id));
            diff_ids.push(diff_id.clone());
            continue;
        }
        let placed = match content {
            Content::Rewritten(placed) => placed.clone(),
            // A small layer, kept in memory as it came.
            Content::Memory(bytes) => {
                load.rewrite(bytes.as_slice(), epoch)
                    .map_err(|source| NormalizeError::Export {
                        what: format!("layer {} ({diff_id}) of the built image", index + 1),
                        source,
                    })?
                    .1
            }
            Content::Dropped => {
                return Err(NormalizeError::RepeatsBase {
                    index: index + 1,
                    diff_id: diff_id.clone(),
                });
            }
        };
        rewritten += placed.rewritten.size;
        layers.push((diff_id.clone(), placed.rewritten.diff_id.clone()));
        diff_ids.push(placed.rewritten.diff_id.clone());
        paths.push(placed.path);
    }
    let config = config::normalize(&saved.config, &diff_ids, epoch)?;
    let id = Digest::from_sha256(&<sha2::Sha256 as sha2::Digest>::digest(&config));
    let archive = load.finish(&config, &id, &paths).map_err(spooled)?;
    Ok(Written {
        archive,
        id,
        layers,
        rewritten,
    })
}

/// A blocking reader over the chunks an async task sends.
pub(crate) struct ChunkReader {
    receiver: tokio::sync::mpsc::Receiver<bytes::Bytes>,
    current: bytes::Bytes,
}

impl ChunkReader {
    pub(crate) fn new(receiver: tokio::sync::mpsc::Receiver<bytes::Bytes>) -> Self {
        Self {
            receiver,
            current: bytes::Bytes::new(),
        }
    }
}

impl std::io::Read for ChunkReader {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        while self.current.is_empty() {
            match self.receiver.blocking_recv() {
                Some(chunk) => self.current = chunk,
                None => return Ok(0),
            }
        }
        let length = buffer.len().min(self.current.len());
        buffer[..length].copy_from_slice(&self.current.split_to(length));
        Ok(length)
    }
}
