//! Stage 5: a build context and build options in, an image id out; then tags, inspection and
//! pushes of that image.
//!
//! `Engine` is the side-effect boundary: `Docker` implements it over the Docker Engine API with
//! bollard, connecting as the docker CLI does (`address`: `DOCKER_HOST`, else the default
//! socket; `unix://`, `tcp://` plain or TLS, `ssh://` through the system `ssh`). The
//! builder's stream, BuildKit status or classic `Step N/M` text, and a push's status lines are
//! turned into `steps::Event`s handed to the caller, which shows them as it likes; a failing
//! step comes back as `EngineError::StepFailed` with its instruction and the tail of its output.

pub mod address;
pub mod bounded;
mod container;
pub mod context;
mod docker;
mod ssh;
pub mod steps;
mod tls;

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

pub use docker::Docker;

use crate::diagnostics::{Advice, Advise, ExitStatus};
use crate::registry::Credentials;
use crate::types::oci::{Digest, Platform, Repository, Tag};
use steps::Event;

/// An image id, the digest of the image's configuration (`sha256:…`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ImageId(pub Digest);

impl fmt::Display for ImageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl ImageId {
    /// The first 12 hex digits, as `docker images` shows them.
    pub fn short(&self) -> &str {
        &self.0.hex()[..12]
    }
}

/// Which of the daemon's builders runs the build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Builder {
    /// BuildKit, with a session per build.
    Buildkit,
    /// The classic builder, for engines without BuildKit.
    Classic,
}

/// What to build.
#[derive(Debug, Clone)]
pub struct BuildRequest<'a> {
    /// The context archive (a tar with `Dockerfile` at its root).
    pub context: &'a Path,
    /// The builder.
    pub builder: Builder,
    /// Build every step again instead of reusing the cache.
    pub no_cache: bool,
    /// The platform to build for.
    pub platform: Option<&'a Platform>,
    /// `--build-arg`s.
    pub args: BTreeMap<String, String>,
    /// Labels added to the image.
    pub labels: BTreeMap<String, String>,
    /// Credentials the daemon may use to pull the images the build names (the base, another
    /// stage's `FROM`, a `COPY --from` image), as the docker CLI sends them with a build: every
    /// configured registry's; the daemon uses each only for the registry it names.
    pub credentials: Vec<crate::registry::Credentials>,
    /// Images whose build cache the builder may reuse (`--cache-from`): BuildKit reads the
    /// inline cache metadata such an image carries, from its registry; the classic builder
    /// reuses the layers of these images if the daemon holds them.
    pub cache_from: Vec<String>,
    /// Whether BuildKit writes the build's cache metadata into the image it builds, for a
    /// cache image pushed beside the published one (the published, normalized image carries
    /// none).
    pub inline_cache: bool,
}

/// What the engine knows about a local image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageInfo {
    /// Its id.
    pub id: ImageId,
    /// `repository@sha256:…` for each registry it was pushed to or pulled from.
    pub repo_digests: Vec<String>,
    /// `repository:tag` for each tag that names it.
    pub tags: Vec<String>,
    /// Its layers' diff ids, bottom first.
    pub layers: Vec<Digest>,
}

impl ImageInfo {
    /// The digest the image has in the repository `reference` names (`name[:tag]`), as its
    /// repo digests record it; `None` when it was never pulled from or pushed there.
    pub fn digest_in(&self, reference: &str) -> Option<Digest> {
        let name = crate::types::oci::repository_name(reference);
        self.repo_digests.iter().find_map(|known| {
            let (repository, digest) = known.split_once('@')?;
            (repository == name).then(|| digest.parse().ok()).flatten()
        })
    }
}

/// What a container run left behind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOutput {
    /// The exit code of its command.
    pub code: i64,
    /// Everything it wrote to stdout.
    pub stdout: String,
    /// Everything it wrote to stderr.
    pub stderr: String,
}

/// Why the engine could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The daemon did not answer.
    #[error("cannot reach the Docker daemon at {host}: {message}")]
    Unreachable {
        /// `DOCKER_HOST`, or the default socket.
        host: String,
        /// What the connection attempt said.
        message: String,
    },
    /// The daemon answered, but with what forge cannot read.
    #[error("{0}")]
    Unreadable(Box<Unreadable>),
    /// The daemon's answer crossed one of its bounds (`bounded`): it sent more than an answer of
    /// its kind holds, or nothing for the idle limit, or a container it ran did not end in time.
    #[error("{0}")]
    Bounded(Box<Bounded>),
    /// The daemon's stream of a pull or a push made no headway for longer than the idle limit:
    /// it sent nothing, or only what it had sent before.
    #[error("the Docker daemon at {host} reported no progress on {reference} for {} s", idle.as_secs_f64())]
    Stalled {
        /// `DOCKER_HOST`, or the default socket.
        host: String,
        /// What was being pulled or pushed.
        reference: String,
        /// The idle limit.
        idle: std::time::Duration,
    },
    /// A step of the Dockerfile failed.
    #[error("{}", step_failure(step, message, output))]
    StepFailed {
        /// The step, as the builder names it (`[3/7] RUN python3 -c ...`, `Step 3/7 : RUN ...`).
        step: String,
        /// The builder's error.
        message: String,
        /// The last lines the step printed.
        output: Vec<String>,
    },
    /// The builder refused the build before any step ran (a Dockerfile error, a missing base).
    #[error("the build failed: {message}")]
    BuildFailed {
        /// The builder's error.
        message: String,
    },
    /// The build stream ended without an image id.
    #[error("the build finished without reporting an image id")]
    NoImageId,
    /// A registry refused a push.
    #[error("pushing {reference} failed: {message}")]
    Push {
        /// `repository:tag`.
        reference: String,
        /// The daemon's or registry's error.
        message: String,
    },
    /// The daemon could not pull an image.
    #[error("pulling {reference} failed: {message}")]
    Pull {
        /// `repository@digest`.
        reference: String,
        /// The daemon's or registry's error.
        message: String,
    },
    /// The push finished without the registry digest in its status lines.
    #[error("pushing {reference} finished without reporting the registry digest")]
    NoPushDigest {
        /// `repository:tag`.
        reference: String,
    },
    /// The context archive could not be opened.
    #[error("cannot read the build context {}", path.display())]
    Context {
        /// The archive.
        path: std::path::PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The docker context in use could not be read.
    #[error(transparent)]
    DockerContext(#[from] context::ContextError),
    /// A daemon address forge cannot connect to.
    #[error("cannot connect to the Docker daemon at {host}: {reason}")]
    UnsupportedHost {
        /// The address as given.
        host: String,
        /// Why not.
        reason: String,
    },
    /// A file TLS needs (`DOCKER_TLS_VERIFY` is set) is missing or is not what it should be.
    #[error("cannot connect to the Docker daemon at {host} over TLS: {} {problem}", path.display())]
    TlsFile {
        /// The address as given.
        host: String,
        /// `ca.pem`, `cert.pem` or `key.pem` in the certificate folder. Boxed paths here and
        /// below keep every variant smaller than `StepFailed`, so the error, which travels
        /// inside others, grows no larger.
        path: Box<Path>,
        /// What is wrong with it.
        problem: String,
    },
    /// The daemon's TLS terminator and forge did not accept each other's certificates.
    #[error("the TLS handshake with the Docker daemon at {host} failed: {message}")]
    TlsHandshake {
        /// The address as given.
        host: String,
        /// What the handshake said.
        message: String,
        /// The certificate folder.
        folder: Box<Path>,
    },
    /// ssh could not forward a port of the daemon's machine back to forge's.
    #[error("cannot forward a port of {host} back to forge's conduit over ssh: {said}")]
    SshForward {
        /// The address as given.
        host: String,
        /// What ssh printed on stderr.
        said: String,
    },
    /// ssh could not reach the host, or the host could not run `docker system dial-stdio`.
    #[error("cannot reach the Docker daemon at {host} over ssh: {said}")]
    Ssh {
        /// The address as given.
        host: String,
        /// What ssh (or the remote command) printed on stderr.
        said: String,
    },
    /// Any other refusal of the daemon.
    #[error("{action}: {message}")]
    Api {
        /// What forge asked for.
        action: String,
        /// The daemon's error.
        message: String,
    },
}

fn step_failure(step: &str, message: &str, output: &[String]) -> String {
    let mut text = format!("step {step} failed: {message}");
    if !output.is_empty() {
        text.push_str("\n  last output of the step:");
        for line in output {
            text.push_str("\n  | ");
            text.push_str(line);
        }
    }
    text
}

impl EngineError {
    /// Whether the error is the build's own failure (exit 1) rather than the environment's.
    pub fn is_failed_check(&self) -> bool {
        matches!(
            self,
            EngineError::StepFailed { .. } | EngineError::BuildFailed { .. }
        )
    }
}

impl Advise for EngineError {
    fn advice(&self) -> Advice {
        match self {
            EngineError::Unreachable { host, .. } => Advice::Hint(format!(
                "start the Docker daemon or point DOCKER_HOST at a running one (tried {host}); `forge build --dry-run` needs no daemon"
            )),
            EngineError::Unreadable(unreadable) => unreadable.advice(),
            EngineError::Bounded(bounded) => Advice::Hint(bounded.crossed.hint()),
            EngineError::Stalled { .. } => Advice::Hint(
                "check the daemon and its network (a daemon that answers and then sends nothing or the same progress again and again, or a registry it waits on); FORGE_IDLE_TIMEOUT (seconds) raises the limit for a link that is only slow".to_owned(),
            ),
            EngineError::StepFailed { .. } => Advice::Hint(
                "no tag moved and forge.lock is unchanged; fix the step (or the pin it installs) and build again"
                    .to_owned(),
            ),
            EngineError::BuildFailed { .. } => Advice::Hint(
                "no tag moved and forge.lock is unchanged; check the rendered Dockerfile with `forge render`"
                    .to_owned(),
            ),
            EngineError::NoImageId => Advice::Hint("check the daemon's log for the build".to_owned()),
            EngineError::Push { .. } | EngineError::Pull { .. } | EngineError::NoPushDigest { .. } => Advice::Hint(
                "check the registry's address and credentials (~/.docker/config.json, or FORGE_REGISTRY_USER and FORGE_REGISTRY_PASSWORD, which go to the recipe's registry or the host FORGE_REGISTRY_HOST names)"
                    .to_owned(),
            ),
            EngineError::Context { .. } => {
                Advice::Hint("the context archive lives in the temporary folder; check TMPDIR".to_owned())
            }
            EngineError::DockerContext(error) => error.advice(),
            EngineError::UnsupportedHost { .. } => Advice::Hint(
                "name the daemon as unix:///path/to/docker.sock, tcp://HOST:PORT or ssh://[USER@]HOST[:PORT], as DOCKER_HOST spells it".to_owned(),
            ),
            EngineError::TlsFile { path, .. } => Advice::Hint(format!(
                "DOCKER_TLS_VERIFY is set, so forge reads ca.pem (the CA that signed the daemon's certificate), cert.pem and key.pem (your client certificate and its key) from {}; put them there or point DOCKER_CERT_PATH at the folder that holds them, or unset DOCKER_TLS_VERIFY for a daemon without TLS",
                path.parent().unwrap_or(path).display()
            )),
            EngineError::TlsHandshake { folder, .. } => Advice::Hint(format!(
                "check the files in {}: ca.pem must be the CA that signed the daemon's certificate (whose names must include the host forge connects to), and cert.pem a client certificate signed by a CA the daemon trusts (its --tlscacert)",
                folder.display()
            )),
            EngineError::SshForward { .. } => Advice::Hint(
                "forge runs `ssh -N -R 0:127.0.0.1:PORT HOST` so that the daemon there reaches forge's conduit: the host's sshd must allow remote forwarding (AllowTcpForwarding yes, the default); or run forge on that machine".to_owned(),
            ),
            EngineError::Ssh { .. } => Advice::Hint(
                "forge runs `ssh -o BatchMode=yes [-l USER] [-p PORT] HOST docker system dial-stdio`: check that this works from this shell without a prompt (a key or an ssh agent, the host key already known) and that the remote user can run docker".to_owned(),
            ),
            EngineError::Api { .. } => Advice::Hint("check the daemon's log".to_owned()),
        }
    }

    fn exit_status(&self) -> ExitStatus {
        if self.is_failed_check() {
            ExitStatus::Failure
        } else {
            ExitStatus::Error
        }
    }
}

crate::advised!(EngineError);

/// A container engine that builds, tags, inspects and pushes images.
// The trait is used with static dispatch only, so the futures' auto traits need not be named.
#[allow(async_fn_in_trait)]
pub trait Engine {
    /// Builds the context and returns the image id, handing each step's progress to `events`.
    async fn build(
        &self,
        request: &BuildRequest<'_>,
        events: &mut dyn FnMut(Event<'_>),
    ) -> Result<ImageId, EngineError>;

    /// The image `reference` (`repository:tag` or an id) names locally, if any.
    async fn image(&self, reference: &str) -> Result<Option<ImageInfo>, EngineError>;

    /// Points `repository:tag` at `image`.
    async fn tag(
        &self,
        image: &ImageId,
        repository: &Repository,
        tag: &Tag,
    ) -> Result<(), EngineError>;

    /// Removes the tag `repository:tag` (the image stays if anything else names it).
    async fn remove_tag(&self, repository: &Repository, tag: &Tag) -> Result<(), EngineError>;

    /// Pushes `repository:tag` and returns the manifest digest the registry stored, handing
    /// the push's progress to `events`.
    async fn push(
        &self,
        repository: &Repository,
        tag: &Tag,
        credentials: Option<&Credentials>,
        events: &mut dyn FnMut(Event<'_>),
    ) -> Result<Digest, EngineError>;

    /// Runs `command` in a new container of `image` with its entrypoint replaced and no
    /// network, waits for it to end, removes it, and returns its exit code and output.
    async fn run(&self, image: &ImageId, command: &[String]) -> Result<RunOutput, EngineError>;

    /// Pulls `reference` for `platform` as `docker pull` does (quietly: for an image a build
    /// already fetched, only its manifest and config travel) and returns what it names then.
    async fn pull_reference(
        &self,
        reference: &crate::types::oci::ImageRef,
        platform: &Platform,
        credentials: Option<&Credentials>,
    ) -> Result<ImageInfo, EngineError>;

    /// Removes the image `image` names when no tag names it, keeping the images it was built
    /// on; returns whether it was removed.
    async fn remove_untagged(&self, image: &ImageId) -> Result<bool, EngineError>;

    /// The daemon's version, when it says.
    async fn version(&self) -> Option<String> {
        None
    }

    /// Where the daemon was reached, as `DOCKER_HOST` spells it.
    fn host(&self) -> &str;

    /// How the daemon reaches `port` of forge's loopback (see `ReachBack`).
    async fn reach_back(&self, port: u16) -> Result<ReachBack, EngineError> {
        Ok(ReachBack::local(port))
    }

    /// Removes the name `reference` (a tag, or a digest reference of a pulled image); the
    /// image goes with it when nothing else names it, as `docker rmi` takes it.
    async fn untag(&self, reference: &str) -> Result<(), EngineError>;

    /// How many entries the history of `image`'s config holds.
    async fn history_len(&self, image: &ImageId) -> Result<usize, EngineError>;

    /// Creates a container of `image` that is never started, to ask `path_in` of.
    async fn open_probe(&self, image: &ImageId) -> Result<String, EngineError>;

    /// What the file system of `container` holds at the absolute `path` (the path itself, not
    /// a directory's contents); `None` when nothing.
    async fn path_in(&self, container: &str, path: &str) -> Result<Option<PathMeta>, EngineError>;

    /// Removes a container `open_probe` made.
    async fn close_probe(&self, container: &str);
}

/// A daemon's answer that crossed one of its bounds: which daemon, to what, which bound.
#[derive(Debug)]
pub struct Bounded {
    /// `DOCKER_HOST`, or the default socket.
    pub host: String,
    /// What forge asked for.
    pub action: String,
    /// The bound it crossed.
    pub crossed: bounded::Crossed,
}

impl std::fmt::Display for Bounded {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            formatter,
            "the Docker daemon at {} {}",
            self.host,
            self.crossed.said_of(&self.action)
        )
    }
}

/// A daemon's answer forge could not read: which daemon, of which version, to what, and what did
/// not read.
#[derive(Debug, thiserror::Error)]
#[error(
    "the Docker daemon at {host} (Docker {version}) answered {action} with what forge cannot read: {message}"
)]
pub struct Unreadable {
    /// `DOCKER_HOST`, or the default socket.
    pub host: String,
    /// The daemon's version, as it reported it.
    pub version: String,
    /// What forge asked for: the endpoint and its subject.
    pub action: String,
    /// What did not read: the field, the value.
    pub message: String,
}

impl Advise for Unreadable {
    fn advice(&self) -> Advice {
        Advice::Hint(
            "the daemon is reachable; its answer has a shape forge does not know, which an engine version or image store forge was not tested with may give: report it with the daemon's version (`docker version`)".to_owned(),
        )
    }
}

crate::advised!(Unreadable);

/// How a daemon reaches a port of forge's loopback: the same address when it runs on forge's
/// machine, a port of its own machine's loopback forwarded over ssh when it is reached through
/// ssh. The forward lasts as long as the value.
#[derive(Debug)]
pub struct ReachBack {
    /// `127.0.0.1:PORT` as the daemon names it.
    pub address: String,
    /// The ssh process that forwards it, if one does.
    _forward: Option<tokio::process::Child>,
}

impl ReachBack {
    /// A daemon on forge's machine: `127.0.0.1:port` itself.
    pub fn local(port: u16) -> Self {
        Self {
            address: format!("127.0.0.1:{port}"),
            _forward: None,
        }
    }

    /// `127.0.0.1:remote` of the daemon's machine, forwarded by `forward`.
    pub(crate) fn forwarded(remote: u16, forward: tokio::process::Child) -> Self {
        Self {
            address: format!("127.0.0.1:{remote}"),
            _forward: Some(forward),
        }
    }
}

/// What a path of an image's file system is, as far as a directory entry above it cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathMeta {
    /// Whether it is a directory.
    pub directory: bool,
    /// Its permission bits, with set-id and sticky bits.
    pub mode: u32,
    /// Its owner and group, by number.
    pub owner: (u64, u64),
}
