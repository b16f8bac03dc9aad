//! Stage 5b: the image the engine built in; the same image as a function of its content out,
//! held by the daemon under the manifest forge publishes.
//!
//! 1. Read (`Conduit::read`): the daemon pushes the built image to forge's conduit. The base's
//!    blobs, named by the digests and sizes its registry gives them (`Base::blobs`), are
//!    answered as present and never sent: only the layers above the base leave the daemon, so
//!    the cost grows with forge's layers and never with the base.
//! 2. Rewrite each layer above the base (`layer`): read once for its index (and checked against
//!    the diff id the config names), then written again, every time the epoch, permission bits
//!    only, owners by number, each directory entry that changes nothing below left out
//!    (`lower`), every header one way; compressed by forge (`blob`), so that the compressed
//!    bytes too are one wherever it runs.
//! 3. Rewrite the config (`config`): the new diff ids, forge's steps at the epoch, nothing that
//!    says which machine, engine or builder made it, no empty fields.
//! 4. Write the manifest (`manifest`): Docker's schema 2, the base's layers as the daemon
//!    pushed them, forge's as it wrote them. Its digest is the image's in every store (the
//!    containerd store names images by it) and in the registry.
//! 5. Unless the daemon holds the image already, offer it on the conduit and have the daemon
//!    pull it (`Conduit::write`): only forge's layers travel.
//!
//! The epoch is the recipe's date (`Recipe::source_date_epoch`). What a step itself makes
//! differently on every run (a build path, a clock, a random name compiled into a file) stays
//! different, and `verify-digest --rebuild` names it file by file (`compare`).

mod blob;
pub mod compare;
mod config;
pub mod layer;
mod lower;
pub use lower::Probe;
pub mod manifest;

use std::time::{Duration, Instant};

use crate::conduit::{Conduit, ConduitError, Pushed, Stored};
use crate::diagnostics::{Advice, Advise, ExitStatus};
use crate::engine::{Engine, EngineError, ImageId};
use crate::types::oci::{Digest, Platform};
use manifest::{DOCKER_CONFIG, Descriptor, Manifest};

/// The format of the normalization, recorded with the image it made: a later forge that
/// normalizes differently bumps it, and then rewrites the images an earlier one made. 2: every
/// time the epoch, permission bits only, no-op directory entries left out, empty config fields
/// dropped, layers compressed by forge and the manifest written by forge.
pub const FORMAT: u32 = 2;

/// The base an image was built on, as the daemon and its registry know it.
#[derive(Debug, Clone)]
pub struct Base {
    /// The base as pins.toml names it, for messages.
    pub name: String,
    /// The daemon's id of it.
    pub id: ImageId,
    /// Its layers' diff ids, bottom first.
    pub diff_ids: Vec<Digest>,
    /// How many history entries its config holds.
    pub history: usize,
    /// Its layers' blobs as its registry holds them; empty when forge could not ask.
    pub blobs: Vec<Descriptor>,
}

/// What normalizing an image did.
#[derive(Debug, Clone)]
pub struct Normalized {
    /// The normalized image, as the daemon names it (the config's digest in the classic store,
    /// the manifest's in the containerd store).
    pub id: ImageId,
    /// Its config's digest: the image id, one on every engine.
    pub config: Digest,
    /// Its manifest's digest, one on every engine and in the registry.
    pub manifest: Digest,
    /// Each layer above the base: its diff id as built, and as published.
    pub layers: Vec<(Digest, Digest)>,
    /// The bytes of the layers rewritten.
    pub rewritten: u64,
    /// The bytes the daemon sent forge to read the image.
    pub read: u64,
    /// The base's layers the daemon sent all the same (a base it holds under no digest its
    /// registry gives: loaded, imported, or compressed by the daemon itself), by place from 1.
    pub base_sent: Vec<(usize, Descriptor)>,
    /// Whether the engine held the normalized image already (nothing was pulled).
    pub already_held: bool,
    /// How long each part took.
    pub took: Phases,
    /// The image's blobs as forge wrote them, while the conduit that holds them is open.
    pub blobs: Option<Blobs>,
}

/// An image's blobs as forge wrote them: what a push to a registry uploads.
#[derive(Debug, Clone)]
pub struct Blobs {
    /// The manifest's bytes.
    pub manifest: Vec<u8>,
    /// The manifest the daemon pulls: the same but for the base's blobs, named as the daemon
    /// knows them (by the digests it pushed them as), which a daemon that holds them under
    /// another compression than the registry's can pull. Most often the same bytes.
    pub local: Vec<u8>,
    /// The config's bytes.
    pub config: Vec<u8>,
    /// The base's layers, as the manifest names them.
    pub base: Vec<Descriptor>,
    /// Whether the manifest names the base's layers as its registry does, so that it is one
    /// whichever daemon pushes it; a base of no registry has only a daemon's names for them,
    /// and a push leaves that daemon's manifest.
    pub from_registry: bool,
    /// forge's layers: each descriptor and the file that holds its bytes.
    pub layers: Vec<(Descriptor, Stored)>,
}

impl Blobs {
    /// Readies `repository` for the daemon's push of the image, with `client`: the base's
    /// blobs mounted from `base` (its repository, when on the same registry), so that the
    /// daemon finds them under the digests the manifest names and sends none of its own; the
    /// config and forge's layers uploaded, each unless the registry holds it. Returns how many
    /// blobs it sent.
    pub fn upload(
        &self,
        client: &crate::registry::RegistryClient,
        (repository, base): (
            &crate::registry::RemoteRepository,
            &crate::registry::RemoteRepository,
        ),
    ) -> Result<usize, crate::registry::RegistryError> {
        for blob in &self.base {
            client.mount_blob(repository, &blob.digest, base)?;
        }
        let layers: Vec<(Digest, &std::path::Path)> = self
            .layers
            .iter()
            .map(|(descriptor, stored)| (descriptor.digest.clone(), stored.path.as_path()))
            .collect();
        client.push_image_blobs(repository, &self.config, &layers)
    }
}

/// How long each part of a normalization took.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Phases {
    /// The daemon's push to the conduit.
    pub read: Duration,
    /// Rewriting the layers and the config.
    pub rewrite: Duration,
    /// The daemon's pull from the conduit (zero when it held the image).
    pub write: Duration,
}

impl std::fmt::Display for Phases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "read {:.2} s, rewrite {:.2} s, write {:.2} s",
            self.read.as_secs_f64(),
            self.rewrite.as_secs_f64(),
            self.write.as_secs_f64()
        )
    }
}

/// Why an image could not be normalized.
#[derive(Debug, thiserror::Error)]
pub enum NormalizeError {
    /// The engine failed.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The conduit failed.
    #[error(transparent)]
    Conduit(#[from] ConduitError),
    /// A layer could not be read or written.
    #[error("cannot read {what}: {source}")]
    Layer {
        /// Which layer.
        what: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The image is not what an image should be.
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
    /// A layer above the base was not sent: it repeats a base layer.
    #[error(
        "layer {index} of the built image repeats a layer of its base byte for byte ({digest}), which forge cannot rewrite"
    )]
    RepeatsBase {
        /// Its place, from 1.
        index: usize,
        /// Its blob's digest.
        digest: Digest,
    },
    /// The daemon holds something else than the image it pulled.
    #[error(
        "the daemon pulled the normalized image {manifest} but names it {found}, which is neither its manifest nor its config {config}"
    )]
    NotLoaded {
        /// The manifest forge offered.
        manifest: Digest,
        /// The config forge wrote.
        config: Digest,
        /// What the daemon named the image it pulled.
        found: ImageId,
    },
}

impl Advise for NormalizeError {
    fn advice(&self) -> Advice {
        match self {
            NormalizeError::Engine(error) => error.advice(),
            NormalizeError::Conduit(error) => error.advice(),
            NormalizeError::Layer { .. } => Advice::Hint(
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

/// Normalizes the image `built` of `engine`, built on `base` for `platform`, with every time of
/// forge's layers and steps `epoch`, and leaves the result on the daemon. `probe`, a container
/// of the base made while the build ran, answers what the base holds, when it is of that base.
pub async fn normalize<E: Engine>(
    (engine, conduit, probe): (&E, &Conduit, Option<&Probe>),
    built: &ImageId,
    (base, platform): (&Base, &Platform),
    epoch: u64,
) -> Result<Normalized, NormalizeError> {
    let started = Instant::now();
    let pushed = read(engine, conduit, built, base, platform).await?;
    let read_at = started.elapsed();
    let (indexes, above) = indexed(&pushed, base).await?;
    let unchanged = lower::unchanged(engine, (&base.id, probe), &indexes).await?;
    let built: Vec<Digest> = indexes
        .iter()
        .filter_map(|index| index.diff_id.clone())
        .collect();
    let spool = conduit.spool().to_owned();
    let layers = tokio::task::spawn_blocking(move || {
        above
            .into_iter()
            .zip(unchanged)
            .map(|((index, stored, descriptor), drop)| {
                blob::rewrite(&stored, &descriptor, (epoch, &drop), &spool)
                    .map_err(|source| layer_error(index, &descriptor, source))
            })
            .collect::<Result<Vec<_>, _>>()
    })
    .await
    .expect("the rewrite does not panic")?;
    let (blobs, base_sent) = assemble(&pushed, base, &layers, epoch)?;
    let rewritten_at = started.elapsed();
    let (id, already_held) = write(engine, conduit, &blobs, platform).await?;
    Ok(Normalized {
        id,
        config: crate::conduit::sha256(&blobs.config),
        manifest: crate::conduit::sha256(&blobs.manifest),
        layers: built
            .into_iter()
            .zip(&layers)
            .map(|(built, layer)| (built, layer.diff_id.clone()))
            .collect(),
        rewritten: layers.iter().map(|layer| layer.size).sum(),
        read: conduit.received_bytes(),
        base_sent,
        already_held,
        took: Phases {
            read: read_at,
            rewrite: rewritten_at - read_at,
            write: started.elapsed() - rewritten_at,
        },
        blobs: Some(blobs),
    })
}

/// The image's blobs as forge publishes them, from what the daemon pushed and the layers forge
/// wrote: the config, the manifest, the base's blobs and forge's; and the base's layers the
/// daemon sent all the same.
fn assemble(
    pushed: &Pushed,
    base: &Base,
    layers: &[blob::Written],
    epoch: u64,
) -> Result<(Blobs, Vec<(usize, Descriptor)>), NormalizeError> {
    let new_ids: Vec<Digest> = layers.iter().map(|layer| layer.diff_id.clone()).collect();
    let diff_ids = [base.diff_ids.as_slice(), &new_ids].concat();
    let config = config::normalize(&pushed.config, &diff_ids, (epoch, base.history))?;
    // The base's blobs as its registry names them, so that the manifest is one whichever
    // compression of them a daemon holds; as the daemon pushed them for a base of no registry.
    let pushed_base = &pushed.manifest.layers[..base.diff_ids.len()];
    let base_blobs: Vec<Descriptor> = if base.blobs.is_empty() {
        pushed_base.iter().map(Descriptor::as_docker).collect()
    } else {
        base.blobs.iter().map(Descriptor::as_docker).collect()
    };
    let base_sent = pushed_base
        .iter()
        .zip(&pushed.blobs)
        .enumerate()
        .filter(|(_, (_, sent))| sent.is_some())
        .map(|(index, (descriptor, _))| (index + 1, descriptor.clone()))
        .collect();
    let forge_blobs: Vec<(Descriptor, Stored)> = layers
        .iter()
        .map(|layer| (layer.descriptor.clone(), layer.stored.clone()))
        .collect();
    let with_base = |base: &[Descriptor]| {
        Manifest::docker(
            Descriptor {
                media_type: DOCKER_CONFIG.to_owned(),
                size: config.len() as u64,
                digest: crate::conduit::sha256(&config),
            },
            base.iter()
                .cloned()
                .chain(forge_blobs.iter().map(|(descriptor, _)| descriptor.clone()))
                .collect(),
        )
    };
    let manifest = with_base(&base_blobs);
    let daemons: Vec<Descriptor> = pushed_base.iter().map(Descriptor::as_docker).collect();
    let local = with_base(&daemons);
    let blobs = Blobs {
        manifest,
        local,
        config,
        from_registry: !base.blobs.is_empty(),
        base: base_blobs,
        layers: forge_blobs,
    };
    Ok((blobs, base_sent))
}

fn layer_error(index: usize, descriptor: &Descriptor, source: std::io::Error) -> NormalizeError {
    NormalizeError::Layer {
        what: format!("layer {index} ({}) of the built image", descriptor.digest),
        source,
    }
}

/// Has the daemon push `image` to the conduit, holding the base's blobs, and checks that what
/// arrived is that image on that base.
pub async fn read<E: Engine>(
    engine: &E,
    conduit: &Conduit,
    image: &ImageId,
    base: &Base,
    platform: &Platform,
) -> Result<Pushed, NormalizeError> {
    for blob in &base.blobs {
        conduit.hold(blob.digest.clone(), blob.size);
    }
    let pushed = conduit.read(engine, image, platform).await?;
    let config_digest = crate::conduit::sha256(&pushed.config);
    if config_digest != image.0 && pushed.top != image.0 {
        return Err(NormalizeError::Invalid(format!(
            "the daemon pushed {} (config {config_digest}) when asked for the image {image}",
            pushed.top
        )));
    }
    let diff_ids = config::diff_ids(&pushed.config)?;
    if diff_ids.len() != pushed.manifest.layers.len() {
        return Err(NormalizeError::Invalid(format!(
            "the image {image} names {} layers in its config and {} in its manifest",
            diff_ids.len(),
            pushed.manifest.layers.len()
        )));
    }
    let found = diff_ids
        .iter()
        .zip(&base.diff_ids)
        .take_while(|(built, held)| built == held)
        .count();
    if found != base.diff_ids.len() {
        return Err(NormalizeError::NotOnBase {
            base: base.name.clone(),
            held: base.diff_ids.len(),
            found,
        });
    }
    Ok(pushed)
}

/// `image` of `engine`, built on `base`, read for a comparison: only its layers above the base
/// travel.
pub async fn read_image<E: Engine>(
    engine: &E,
    conduit: &Conduit,
    image: &ImageId,
    (base, platform): (&Base, &Platform),
) -> Result<compare::Image, NormalizeError> {
    let pushed = read(engine, conduit, image, base, platform).await?;
    let diff_ids = config::diff_ids(&pushed.config)?;
    let layers = diff_ids
        .into_iter()
        .zip(pushed.manifest.layers.iter().zip(&pushed.blobs))
        .map(|(diff_id, (descriptor, stored))| {
            (
                diff_id,
                stored.clone().map(|stored| (stored, descriptor.clone())),
            )
        })
        .collect();
    Ok(compare::Image {
        config: pushed.config,
        layers,
    })
}

/// A layer above the base, ready to rewrite: its place from 1, its blob, its descriptor.
type Above = (usize, Stored, Descriptor);

/// Each layer above the base read once for its index, and checked against the diff id the
/// config names for it.
async fn indexed(
    pushed: &Pushed,
    base: &Base,
) -> Result<(Vec<layer::Index>, Vec<Above>), NormalizeError> {
    let diff_ids = config::diff_ids(&pushed.config)?;
    let mut above = Vec::new();
    for (position, descriptor) in pushed.manifest.layers.iter().enumerate() {
        if position < base.diff_ids.len() {
            continue;
        }
        let Some(stored) = pushed.blobs[position].clone() else {
            return Err(NormalizeError::RepeatsBase {
                index: position + 1,
                digest: descriptor.digest.clone(),
            });
        };
        above.push((position + 1, stored, descriptor.clone()));
    }
    let listed = above.clone();
    let indexes = tokio::task::spawn_blocking(move || {
        listed
            .iter()
            .map(|(index, stored, descriptor)| {
                let index_of = blob::index(stored, descriptor)
                    .map_err(|source| layer_error(*index, descriptor, source))?;
                let expected = &diff_ids[index - 1];
                if index_of.diff_id.as_ref() != Some(expected) {
                    return Err(NormalizeError::Invalid(format!(
                        "layer {index} of the built image does not have the diff id its config names ({expected})"
                    )));
                }
                Ok(index_of)
            })
            .collect::<Result<Vec<_>, _>>()
    })
    .await
    .expect("indexing does not panic")?;
    Ok((indexes, above))
}

/// Puts the image of `blobs` on the daemon unless it holds it already; returns the daemon's id
/// of it and whether it held it.
async fn write<E: Engine>(
    engine: &E,
    conduit: &Conduit,
    blobs: &Blobs,
    platform: &Platform,
) -> Result<(ImageId, bool), NormalizeError> {
    let config = crate::conduit::sha256(&blobs.config);
    let manifest = crate::conduit::sha256(&blobs.local);
    let published = crate::conduit::sha256(&blobs.manifest);
    for candidate in [&published, &manifest, &config] {
        if let Some(held) = engine.image(candidate.as_str()).await? {
            return Ok((held.id, true));
        }
    }
    conduit.offer_bytes(bytes::Bytes::from(blobs.config.clone()));
    for (descriptor, stored) in &blobs.layers {
        conduit.offer_file(descriptor.digest.clone(), stored.clone());
    }
    conduit.offer_manifest(
        manifest::DOCKER_MANIFEST,
        bytes::Bytes::from(blobs.local.clone()),
    );
    let pulled = conduit.write(engine, &manifest, platform).await?;
    if pulled.id.0 != config && pulled.id.0 != manifest {
        return Err(NormalizeError::NotLoaded {
            manifest,
            config,
            found: pulled.id,
        });
    }
    Ok((pulled.id, false))
}
