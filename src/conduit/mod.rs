//! The conduit: a registry forge serves on its own loopback to the daemon it builds with, the
//! one path in and out of the daemon's image store that moves only what the other side lacks.
//!
//! - Out of the daemon (`read`): forge names the image `127.0.0.1:PORT/forge/read-N:image` and
//!   the daemon pushes it here. The blobs forge says it holds (`hold`: the base's, by the digest
//!   and size its registry gives them) are answered as present, so the daemon never sends them;
//!   every other blob arrives in a spool folder, checked against its digest as it lands.
//! - Into the daemon (`write`): forge offers a manifest, its config and the layers it wrote,
//!   and the daemon pulls the manifest by digest, fetching only the blobs it does not hold.
//!
//! Every engine speaks this protocol the same way: the classic image store and the containerd
//! one, Docker 20.10 to 29, whose `docker save` and `docker load` differ in format and cost
//! (a save writes the whole image, base and all). The daemon must reach the port: it does when
//! it runs on the machine forge runs on; `FORGE_CONDUIT_PORT` fixes the port for a daemon that
//! reaches forge's loopback through a forward (`ssh -R`, a network namespace's bridge).
//!
//! What forge names in the daemon to push or pull (a tag, a digest reference) it removes again
//! in `close`; an image that no other name holds goes with it, as `docker rmi` would take it.

mod server;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use crate::diagnostics::{Advice, Advise, ExitStatus};
use crate::engine::{Engine, EngineError, ImageId, ImageInfo};
use crate::normalize::manifest::{Manifest, Parsed};
use crate::types::oci::{Digest, Platform, Repository, Tag};

/// The repository path every conduit reference starts with.
const NAMESPACE: &str = "forge";

/// The largest manifest or config the conduit accepts or forge reads whole.
pub const DOCUMENT_LIMIT: u64 = 16 * 1024 * 1024;

/// Why the conduit could not do its part.
#[derive(Debug, thiserror::Error)]
pub enum ConduitError {
    /// The loopback port could not be opened.
    #[error("cannot listen on {address} for the daemon: {source}")]
    Listen {
        /// The address tried.
        address: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// `FORGE_CONDUIT_PORT` is not a port.
    #[error("FORGE_CONDUIT_PORT is {value:?}, not a port number")]
    Port {
        /// What it holds.
        value: String,
    },
    /// The spool folder could not be made or written.
    #[error("cannot keep the image's layers in {}: {source}", folder.display())]
    Spool {
        /// The folder.
        folder: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The daemon could not push to or pull from the conduit.
    #[error("the daemon at {host} could not {action} forge's conduit at {address}: {source}")]
    Daemon {
        /// The daemon's address.
        host: String,
        /// `push the image to`, `pull the image from`.
        action: &'static str,
        /// The conduit's address.
        address: String,
        /// What the daemon said.
        source: Box<EngineError>,
    },
    /// The daemon pushed, but not what a push of the image should leave.
    #[error("the daemon's push of {image} to forge's conduit {problem}")]
    Incomplete {
        /// The image pushed.
        image: String,
        /// What is missing or wrong.
        problem: String,
    },
}

impl Advise for ConduitError {
    fn advice(&self) -> Advice {
        match self {
            ConduitError::Listen { .. } | ConduitError::Port { .. } => Advice::Hint(
                "forge serves the daemon its image through a port of 127.0.0.1; unset FORGE_CONDUIT_PORT to take any free one, or set it to a free port".to_owned(),
            ),
            ConduitError::Spool { .. } => Advice::Hint(
                "the layers above the base pass through the temporary folder; free space there or point TMPDIR at a larger one".to_owned(),
            ),
            ConduitError::Daemon { source, .. } if !is_unreachable(source) => source.advice(),
            ConduitError::Daemon { .. } => Advice::Hint(
                "the daemon reaches forge's conduit on 127.0.0.1 of its own machine: run forge on the machine the daemon runs on, or forward a port of that machine's loopback to forge's (`ssh -N -R PORT:127.0.0.1:PORT HOST`) and name it with FORGE_CONDUIT_PORT=PORT".to_owned(),
            ),
            ConduitError::Incomplete { .. } => Advice::Hint(
                "no tag moved and forge.lock is unchanged; check the daemon's log and build again".to_owned(),
            ),
        }
    }

    fn exit_status(&self) -> ExitStatus {
        ExitStatus::Error
    }
}

crate::advised!(ConduitError);

/// Whether the daemon's error says it could not connect to the conduit at all.
fn is_unreachable(error: &EngineError) -> bool {
    let text = error.to_string();
    [
        "connection refused",
        "no route to host",
        "i/o timeout",
        "dial tcp",
    ]
    .iter()
    .any(|said| text.contains(said))
}

/// A blob stored in the spool folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// The file.
    pub path: PathBuf,
    /// Its size.
    pub size: u64,
}

/// What the conduit serves for a digest.
#[derive(Debug, Clone)]
pub(crate) enum Offered {
    /// Bytes in memory (a config, a manifest).
    Bytes(Bytes),
    /// A file (a layer).
    File(Stored),
}

/// A manifest pushed to or offered by the conduit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// Its media type.
    pub media_type: String,
    /// Its bytes.
    pub bytes: Bytes,
}

/// An image the daemon pushed to the conduit.
#[derive(Debug, Clone)]
pub struct Pushed {
    /// The image's manifest (for a pushed index, its entry for the platform).
    pub manifest: Manifest,
    /// The manifest's bytes, as the daemon pushed them.
    pub manifest_bytes: Bytes,
    /// The digest the daemon pushed under the tag: the manifest's, or an index's over it.
    pub top: Digest,
    /// The config's bytes.
    pub config: Vec<u8>,
    /// Each layer's blob, when the daemon sent it (`None` for a blob forge held).
    pub blobs: Vec<Option<Stored>>,
}

/// The state the server and forge share.
#[derive(Debug, Default)]
pub(crate) struct State {
    /// Blobs answered as present without being held: digest and size.
    pub(crate) held: HashMap<Digest, u64>,
    /// Blobs the daemon sent.
    pub(crate) received: HashMap<Digest, Stored>,
    /// Blobs forge offers.
    pub(crate) offered: HashMap<Digest, Offered>,
    /// Manifests, by digest, pushed or offered.
    pub(crate) manifests: HashMap<Digest, Document>,
    /// Tags, by repository path and tag, naming a manifest digest.
    pub(crate) tags: HashMap<(String, String), Digest>,
    /// Uploads under way, by id.
    pub(crate) uploads: HashMap<String, server::Upload>,
    /// The next upload's number.
    pub(crate) next_upload: u64,
    /// Bytes the daemon sent, in every blob.
    pub(crate) received_bytes: u64,
}

/// The shared state and the spool folder the server writes to.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) state: Mutex<State>,
    pub(crate) spool: PathBuf,
}

impl Shared {
    pub(crate) fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The conduit, serving until it is closed or dropped.
pub struct Conduit {
    address: SocketAddr,
    /// How the daemon reaches the conduit, when not at `address` itself.
    reach: Option<crate::engine::ReachBack>,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
    /// References forge made in the daemon, removed by `close`.
    names: Mutex<Vec<String>>,
    reads: std::sync::atomic::AtomicU64,
    _spool: tempfile::TempDir,
}

impl Drop for Conduit {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl Conduit {
    /// Starts serving on 127.0.0.1, on `FORGE_CONDUIT_PORT` or any free port.
    pub async fn open() -> Result<Self, ConduitError> {
        let port = match std::env::var("FORGE_CONDUIT_PORT") {
            Ok(value) if !value.trim().is_empty() => value
                .trim()
                .parse::<u16>()
                .map_err(|_| ConduitError::Port { value })?,
            _ => 0,
        };
        let address = SocketAddr::from(([127, 0, 0, 1], port));
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .map_err(|source| ConduitError::Listen {
                address: address.to_string(),
                source,
            })?;
        let address = listener
            .local_addr()
            .map_err(|source| ConduitError::Listen {
                address: address.to_string(),
                source,
            })?;
        let spool = tempfile::Builder::new()
            .prefix("forge-conduit-")
            .tempdir()
            .map_err(|source| ConduitError::Spool {
                folder: std::env::temp_dir(),
                source,
            })?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            spool: spool.path().to_owned(),
        });
        let server = tokio::spawn(server::serve(listener, Arc::clone(&shared)));
        Ok(Self {
            address,
            reach: None,
            shared,
            server,
            names: Mutex::new(Vec::new()),
            reads: std::sync::atomic::AtomicU64::new(0),
            _spool: spool,
        })
    }

    /// Starts serving (see `open`) where `engine`'s daemon reaches it: on this machine, or
    /// through a port of the daemon's machine forwarded over ssh.
    pub async fn open_for<E: Engine>(engine: &E) -> Result<Self, ConduitError> {
        let mut conduit = Self::open().await?;
        let reach = engine
            .reach_back(conduit.address.port())
            .await
            .map_err(|source| ConduitError::Daemon {
                host: engine.host().to_owned(),
                action: "reach",
                address: conduit.address.to_string(),
                source: Box::new(source),
            })?;
        conduit.reach = Some(reach);
        Ok(conduit)
    }

    /// `127.0.0.1:PORT`, the registry the daemon reaches forge at, as the daemon names it.
    pub fn registry(&self) -> String {
        match &self.reach {
            Some(reach) => reach.address.clone(),
            None => self.address.to_string(),
        }
    }

    /// The spool folder, where received blobs are and where forge writes the ones it offers.
    pub fn spool(&self) -> &Path {
        &self.shared.spool
    }

    /// Answers `digest` as present, with `size` bytes, without holding it: the daemon then
    /// never sends it.
    pub fn hold(&self, digest: Digest, size: u64) {
        self.shared.state().held.insert(digest, size);
    }

    /// How many bytes of blobs the daemon has sent so far.
    pub fn received_bytes(&self) -> u64 {
        self.shared.state().received_bytes
    }

    /// Offers the blob in `stored` under `digest`.
    pub fn offer_file(&self, digest: Digest, stored: Stored) {
        self.shared
            .state()
            .offered
            .insert(digest, Offered::File(stored));
    }

    /// Offers `bytes` as a blob; returns its digest.
    pub fn offer_bytes(&self, bytes: Bytes) -> Digest {
        let digest = sha256(&bytes);
        self.shared
            .state()
            .offered
            .insert(digest.clone(), Offered::Bytes(bytes));
        digest
    }

    /// Offers a manifest; returns its digest.
    pub fn offer_manifest(&self, media_type: &str, bytes: Bytes) -> Digest {
        let digest = sha256(&bytes);
        self.shared.state().manifests.insert(
            digest.clone(),
            Document {
                media_type: media_type.to_owned(),
                bytes,
            },
        );
        digest
    }

    /// The blob the daemon sent under `digest`.
    pub fn received(&self, digest: &Digest) -> Option<Stored> {
        self.shared.state().received.get(digest).cloned()
    }

    /// A fresh repository of the conduit, for one push or pull.
    fn repository(&self, purpose: &str) -> Repository {
        let n = self
            .reads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!(
            "{}/{NAMESPACE}/{purpose}-{}-{n}",
            self.registry(),
            std::process::id()
        )
        .parse()
        .expect("a conduit repository is a repository")
    }

    fn named(&self, reference: String) {
        self.names
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(reference);
    }

    /// Has the daemon push `image` here and returns what it pushed: the manifest for
    /// `platform`, the config, and the blobs the conduit did not hold.
    pub async fn read<E: Engine>(
        &self,
        engine: &E,
        image: &ImageId,
        platform: &Platform,
    ) -> Result<Pushed, ConduitError> {
        let repository = self.repository("read");
        let tag: Tag = "image".parse().expect("a tag");
        let daemon = |action, source| ConduitError::Daemon {
            host: engine.host().to_owned(),
            action,
            address: self.registry(),
            source: Box::new(source),
        };
        engine
            .tag(image, &repository, &tag)
            .await
            .map_err(|source| daemon("push the image to", source))?;
        self.named(format!("{repository}:{tag}"));
        let pushed = engine.push(&repository, &tag, None, &mut |_| {}).await;
        let digest = pushed.map_err(|source| daemon("push the image to", source))?;
        self.pushed(image, repository.path(), &digest, platform)
    }

    /// What the daemon pushed to `path` as `digest`, resolved to the image for `platform`.
    fn pushed(
        &self,
        image: &ImageId,
        path: &str,
        digest: &Digest,
        platform: &Platform,
    ) -> Result<Pushed, ConduitError> {
        let incomplete = |problem: String| ConduitError::Incomplete {
            image: image.to_string(),
            problem,
        };
        let state = self.shared.state();
        let document_of = |digest: &Digest| {
            let document = state
                .manifests
                .get(digest)
                .cloned()
                .ok_or_else(|| incomplete(format!("left no manifest {digest} in {path}")))?;
            let parsed = Manifest::parse(&document.bytes).map_err(|error| {
                incomplete(format!("left a manifest forge cannot read: {error}"))
            })?;
            Ok::<_, ConduitError>((document, parsed))
        };
        let (mut document, mut parsed) = document_of(digest)?;
        if let Parsed::Index(_) = parsed {
            let entry = parsed.platform_entry(platform).ok_or_else(|| {
                incomplete(format!("left an index with no manifest for {platform}"))
            })?;
            (document, parsed) = document_of(&entry)?;
        }
        let Parsed::Image(manifest) = parsed else {
            return Err(incomplete("left an index of indexes".to_owned()));
        };
        let config = manifest.config.digest.clone();
        let config = match (state.received.get(&config), state.offered.get(&config)) {
            (Some(stored), _) => read_document(&stored.path)
                .map_err(|error| incomplete(format!("left a config forge cannot read: {error}")))?,
            (None, Some(Offered::Bytes(bytes))) => bytes.to_vec(),
            _ => return Err(incomplete(format!("did not send its config {config}"))),
        };
        // A blob the daemon did not send is one the conduit had: received before, or offered.
        let blobs = manifest
            .layers
            .iter()
            .map(|layer| {
                match (
                    state.received.get(&layer.digest),
                    state.offered.get(&layer.digest),
                ) {
                    (Some(stored), _) | (None, Some(Offered::File(stored))) => Some(stored.clone()),
                    _ => None,
                }
            })
            .collect();
        Ok(Pushed {
            manifest,
            manifest_bytes: document.bytes,
            top: digest.clone(),
            config,
            blobs,
        })
    }

    /// Has the daemon pull the manifest `digest` (offered before, with every blob it names
    /// that the daemon may lack) and returns what the daemon then holds.
    pub async fn write<E: Engine>(
        &self,
        engine: &E,
        digest: &Digest,
        platform: &Platform,
    ) -> Result<ImageInfo, ConduitError> {
        let repository = self.repository("image");
        let reference: crate::types::oci::ImageRef = format!("{repository}@{digest}")
            .parse()
            .expect("a conduit reference is a reference");
        self.named(reference.as_str().to_owned());
        engine
            .pull_reference(&reference, platform, None)
            .await
            .map_err(|source| ConduitError::Daemon {
                host: engine.host().to_owned(),
                action: "pull the image from",
                address: self.registry(),
                source: Box::new(source),
            })
    }

    /// Removes every name forge made in the daemon, and stops serving.
    pub async fn close<E: Engine>(self, engine: &E) {
        let names = std::mem::take(
            &mut *self
                .names
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        for name in names.iter().rev() {
            // A name already gone, or a daemon that no longer answers, leaves nothing to do.
            let _ = engine.untag(name).await;
        }
    }
}

/// Reads a document (a config, a manifest) of at most `DOCUMENT_LIMIT` bytes.
pub(crate) fn read_document(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(DOCUMENT_LIMIT + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > DOCUMENT_LIMIT {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than {DOCUMENT_LIMIT} bytes"),
        ));
    }
    Ok(bytes)
}

/// The sha256 digest of `bytes`.
pub(crate) fn sha256(bytes: &[u8]) -> Digest {
    Digest::from_sha256(&<sha2::Sha256 as sha2::Digest>::digest(bytes))
}
