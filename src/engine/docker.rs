//! `Engine` over the Docker Engine API, with bollard, over connections forge opens itself and
//! bounds (`bounded`); TLS to a daemon is in `tls`, the containers forge runs in `container`.

use std::collections::HashMap;
use std::str::FromStr;
use std::time::Duration;

use bollard::errors::Error as BollardError;
use bollard::models::BuildInfoAux;
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    BuildImageOptionsBuilder, BuilderVersion, CreateImageOptionsBuilder, PushImageOptionsBuilder,
    RemoveContainerOptionsBuilder, RemoveImageOptionsBuilder, TagImageOptionsBuilder,
};
use futures_util::StreamExt as _;

use super::address::{DaemonAddress, TlsFiles};
use super::bounded::{Crossed, Dial};
use super::container::{PROBE_BYTES, first_entry};
use super::ssh::SshConnector;
use super::steps::{Event, Steps};
use super::tls::{refused_by_tls, tls_dial};
use super::{BuildRequest, Builder, Engine, EngineError, ImageId, ImageInfo, PathMeta, RunOutput};
use crate::registry::Credentials;
use crate::types::oci::{Digest, Platform, Repository, Tag};

/// How long a daemon may take to answer its first request.
const PING_TIMEOUT: Duration = Duration::from_secs(20);

/// How long a request may wait for the daemon's response to begin: a build's response starts
/// once the whole context is uploaded, which for a large context on a remote daemon is slow.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// A Docker daemon.
#[derive(Debug, Clone)]
pub struct Docker {
    pub(super) client: bollard::Docker,
    pub(super) host: String,
    /// What the daemon said of itself when forge connected (`GET /version`, which also proves
    /// it answers): its platform and version are asked for once.
    version: bollard::models::SystemVersion,
    /// Where ssh goes, for a daemon reached through it.
    ssh: Option<super::address::SshDestination>,
}

impl Docker {
    /// Connects as the docker CLI does (`DOCKER_HOST`, else the docker context in use, else the
    /// default socket; see `context`), and checks that the daemon answers.
    pub async fn connect() -> Result<Self, EngineError> {
        let selected = super::context::select()?;
        Self::connect_with(&selected.host, selected.tls).await
    }

    /// Connects to the daemon at `host`, spelt as `DOCKER_HOST` spells it (`unix:///path`,
    /// `tcp://HOST:PORT`, over TLS when `DOCKER_TLS_VERIFY` is set, or
    /// `ssh://[USER@]HOST[:PORT]`), and checks that it answers.
    pub async fn connect_to(host: &str) -> Result<Self, EngineError> {
        Self::connect_with(host, TlsFiles::from_environment()).await
    }

    /// Connects to the daemon at `host`, with the TLS files `tls` for a `tcp://` address.
    async fn connect_with(host: &str, tls: Option<TlsFiles>) -> Result<Self, EngineError> {
        let address =
            DaemonAddress::parse(host, tls).map_err(|error| EngineError::UnsupportedHost {
                host: host.to_owned(),
                reason: error.reason,
            })?;
        let unreachable = |error: BollardError| match Crossed::within(&error) {
            Some(crossed) => EngineError::Bounded(Box::new(super::Bounded {
                host: host.to_owned(),
                action: "GET /version".to_owned(),
                crossed,
            })),
            None => EngineError::Unreachable {
                host: host.to_owned(),
                message: describe(&error),
            },
        };
        let timeout = PING_TIMEOUT.as_secs();
        let mut ssh = None;
        let (dial, authority) = match &address {
            DaemonAddress::Unix(path) => (Dial::Unix(path.clone()), "docker".to_owned()),
            DaemonAddress::Tcp {
                authority,
                tls: None,
            } => (Dial::Tcp(authority.clone()), authority.clone()),
            DaemonAddress::Tcp {
                authority,
                tls: Some(files),
            } => (tls_dial(host, authority, files)?, authority.clone()),
            DaemonAddress::Ssh(destination) => {
                let connector = SshConnector::new(destination.clone());
                ssh = Some(connector.clone());
                (Dial::Ssh(connector), "docker".to_owned())
            }
        };
        let client = dial.client(&authority, timeout).map_err(unreachable)?;
        let version = match client.version().await {
            Ok(version) => version,
            Err(error) => {
                if let DaemonAddress::Tcp {
                    tls: Some(files), ..
                } = &address
                    && refused_by_tls(&error)
                {
                    return Err(EngineError::TlsHandshake {
                        host: host.to_owned(),
                        message: describe(&error),
                        folder: files.folder.as_path().into(),
                    });
                }
                if let Some(connector) = ssh {
                    let said = connector.said().await;
                    if !said.is_empty() {
                        return Err(EngineError::Ssh {
                            host: host.to_owned(),
                            said,
                        });
                    }
                }
                return Err(unreachable(error));
            }
        };
        let ssh = match address {
            DaemonAddress::Ssh(destination) => Some(destination),
            _ => None,
        };
        Ok(Self {
            client: client.with_timeout(REQUEST_TIMEOUT),
            host: host.to_owned(),
            version,
            ssh,
        })
    }

    /// Where the daemon was reached.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The platform the daemon runs on (`os/arch`, as `docker version` reports it): the one it
    /// builds for natively.
    pub async fn platform(&self) -> Result<String, EngineError> {
        Ok(format!(
            "{}/{}",
            self.version.os.as_deref().unwrap_or_default(),
            self.version.arch.as_deref().unwrap_or_default()
        ))
    }

    /// Pulls `repository@digest` (for an image index, its entry for `platform`) with
    /// `credentials`, handing each layer state to `events` once, and returns the local image
    /// the digest now names.
    pub async fn pull(
        &self,
        repository: &Repository,
        digest: &Digest,
        platform: &Platform,
        credentials: Option<&Credentials>,
        events: &mut dyn FnMut(Event<'_>),
    ) -> Result<ImageInfo, EngineError> {
        let reference = format!("{repository}@{digest}");
        self.pull_named(
            (repository.as_str(), digest.as_str()),
            reference,
            platform,
            credentials,
            events,
        )
        .await
    }

    /// Pulls `name` at `tag_or_digest` (as the docker CLI asks: the repository, and the tag or
    /// digest in the tag's place), calling it `reference` in messages and events.
    async fn pull_named(
        &self,
        (name, tag_or_digest): (&str, &str),
        reference: String,
        platform: &Platform,
        credentials: Option<&Credentials>,
        events: &mut dyn FnMut(Event<'_>),
    ) -> Result<ImageInfo, EngineError> {
        let options = CreateImageOptionsBuilder::default()
            .from_image(name)
            .tag(tag_or_digest)
            .platform(platform.as_str())
            .build();
        let mut stream =
            self.client
                .create_image(Some(options), None, credentials.map(docker_credentials));
        let mut seen = std::collections::HashSet::new();
        let mut headway = Headway::default();
        while let Some(item) = self.next_within(&mut stream, &reference, &headway).await? {
            if let Ok(info) = &item {
                headway.note(
                    info.id.as_deref(),
                    info.status.as_deref(),
                    info.progress_detail.as_ref(),
                );
            }
            let info = match item {
                Ok(info) => info,
                Err(
                    BollardError::DockerStreamError { error: message }
                    | BollardError::DockerResponseServerError { message, .. },
                ) => return Err(EngineError::Pull { reference, message }),
                Err(other) => return Err(self.failed(format!("the pull of {reference}"), &other)),
            };
            let Some(status) = info.status else { continue };
            if let Some(layer) = info.id.as_deref()
                && let Some((current, total)) =
                    layer_progress(&status, info.progress_detail.as_ref())
            {
                events(Event::Layer {
                    reference: &reference,
                    layer,
                    status: &status,
                    current,
                    total,
                });
            }
            // Each state once: byte counts and per-layer repeats would flood a log.
            if !is_byte_progress(&status) && seen.insert(status.clone()) {
                events(Event::Pull {
                    reference: &reference,
                    status: &status,
                });
            }
        }
        self.image(&reference)
            .await?
            .ok_or_else(|| EngineError::Pull {
                reference,
                message: "the daemon reported success but holds no image under that reference"
                    .to_owned(),
            })
    }

    /// The next item of a pull's or a push's progress `stream`, or `Stalled` once the stream
    /// has not moved on (`headway`) for the idle limit (`FORGE_IDLE_TIMEOUT`): a daemon that
    /// sends nothing and one that repeats itself without end are stalled alike. A build's and a
    /// container's streams have no such limit: a step may rightly work for long without a word.
    async fn next_within<S: futures_util::Stream + Unpin>(
        &self,
        stream: &mut S,
        reference: &str,
        headway: &Headway,
    ) -> Result<Option<S::Item>, EngineError> {
        let idle = crate::http::idle_timeout();
        tokio::time::timeout_at(headway.since + idle, stream.next())
            .await
            .map_err(|_| EngineError::Stalled {
                host: self.host.clone(),
                reference: reference.to_owned(),
                idle,
            })
    }

    pub(super) fn api(
        &self,
        action: impl Into<String>,
    ) -> impl FnOnce(BollardError) -> EngineError + '_ {
        let action = action.into();
        move |error| match error {
            BollardError::DockerResponseServerError { message, .. } => {
                EngineError::Api { action, message }
            }
            other => self.failed(action, &other),
        }
    }

    /// What a failed request other than the daemon's own refusal says: an answer forge could
    /// not read (named with the endpoint and the daemon's version), else the connection
    /// failing under us.
    fn failed(&self, action: String, error: &BollardError) -> EngineError {
        if let Some(crossed) = Crossed::within(error) {
            return EngineError::Bounded(Box::new(super::Bounded {
                host: self.host.clone(),
                action,
                crossed,
            }));
        }
        let unreadable = |message: String| {
            EngineError::Unreadable(Box::new(super::Unreadable {
                host: self.host.clone(),
                version: (self.version.version.clone()).unwrap_or_else(|| "unknown".to_owned()),
                action: action.clone(),
                message,
            }))
        };
        match error {
            BollardError::JsonDataError { message, .. } => unreadable(message.clone()),
            BollardError::JsonSerdeError { err } => unreadable(err.to_string()),
            other => EngineError::Unreachable {
                host: self.host.clone(),
                message: describe(other),
            },
        }
    }
}

/// The Engine API's options for `request`: Dockerfile, build arguments, labels, platform,
/// cache sources and builder.
fn build_options(request: &BuildRequest<'_>) -> bollard::query_parameters::BuildImageOptions {
    let mut args: HashMap<&str, &str> = request
        .args
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .collect();
    // Only for the cache image: the normalized image forge publishes drops this metadata,
    // which BuildKit writes in no stable order.
    if request.builder == Builder::Buildkit && request.inline_cache {
        args.insert("BUILDKIT_INLINE_CACHE", "1");
    }
    let labels: HashMap<&str, &str> = request
        .labels
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .collect();
    let mut options = BuildImageOptionsBuilder::default()
        .dockerfile(crate::context::DOCKERFILE)
        .rm(true)
        .forcerm(true)
        .nocache(request.no_cache)
        .buildargs(&args)
        .labels(&labels);
    if let Some(platform) = request.platform {
        options = options.platform(platform.as_str());
    }
    if !request.cache_from.is_empty() {
        options = options.cachefrom(&request.cache_from);
    }
    options = match request.builder {
        Builder::Buildkit => options
            .version(BuilderVersion::BuilderBuildKit)
            .session(&session_id()),
        Builder::Classic => options.version(BuilderVersion::BuilderV1),
    };
    options.build()
}

/// `error` and its causes: bollard's own text for a failed connection is only
/// `client error (Connect)`, and what went wrong (a refused connection, a certificate the
/// daemon would not accept) is in the causes.
/// The credentials a build sends for pulls, keyed as the docker CLI keys them (Docker Hub by its
/// v1 index address); `None` when there are none.
fn pull_credentials(
    request: &BuildRequest<'_>,
) -> Option<HashMap<String, bollard::auth::DockerCredentials>> {
    let credentials: HashMap<String, bollard::auth::DockerCredentials> = request
        .credentials
        .iter()
        .map(|credentials| {
            let server = crate::registry::credentials::server_address(&credentials.registry);
            let answer = bollard::auth::DockerCredentials {
                username: Some(credentials.username.clone()),
                password: Some(credentials.password.clone()),
                serveraddress: Some(server.clone()),
                ..Default::default()
            };
            (server, answer)
        })
        .collect();
    (!credentials.is_empty()).then_some(credentials)
}

fn describe(error: &BollardError) -> String {
    // Where the failure is the operating system's (a refused connection, a missing socket, a
    // timeout), its words are the whole story; the HTTP client's layers around it only name
    // library internals.
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    let mut system = None;
    while let Some(error) = cause {
        if let Some(io) = error.downcast_ref::<std::io::Error>() {
            system = Some(innermost(io).to_string());
        }
        cause = error.source();
    }
    if let Some(system) = system {
        return system;
    }
    let mut text = error.to_string();
    let mut cause = std::error::Error::source(error);
    while let Some(error) = cause {
        let more = error.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        cause = error.source();
    }
    text
}

/// The I/O error an I/O error wraps, all the way down.
fn innermost(error: &std::io::Error) -> &std::io::Error {
    match error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<std::io::Error>())
    {
        Some(inner) => innermost(inner),
        None => error,
    }
}

/// A session id for one BuildKit build, unique on this machine.
fn session_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_nanos())
        .unwrap_or_default();
    format!("forge-{}-{nanos:x}", std::process::id())
}

fn reference(repository: &Repository, tag: &Tag) -> String {
    format!("{repository}:{tag}")
}

impl Engine for Docker {
    async fn version(&self) -> Option<String> {
        self.version.version.clone()
    }

    async fn build(
        &self,
        request: &BuildRequest<'_>,
        events: &mut dyn FnMut(Event<'_>),
    ) -> Result<ImageId, EngineError> {
        let file = tokio::fs::File::open(request.context)
            .await
            .map_err(|source| EngineError::Context {
                path: request.context.to_owned(),
                source,
            })?;
        let body =
            bollard::body_try_stream(tokio_util::io::ReaderStream::with_capacity(file, 1 << 20));
        let mut stream = self.client.build_image(
            build_options(request),
            pull_credentials(request),
            Some(body),
        );
        let mut steps = Steps::default();
        let mut image = None;
        let mut failure = None;
        while let Some(item) = stream.next().await {
            match item {
                Ok(info) => {
                    if let Some(text) = &info.stream {
                        steps.classic(text, events);
                    }
                    match &info.aux {
                        Some(BuildInfoAux::BuildKit(status)) => steps.buildkit(status, events),
                        Some(BuildInfoAux::Default(id)) => image = id.id.clone(),
                        None => {}
                    }
                }
                Err(BollardError::DockerStreamError { error }) => {
                    failure = Some(error);
                    break;
                }
                Err(BollardError::DockerResponseServerError { message, .. }) => {
                    failure = Some(message);
                    break;
                }
                Err(other) => return Err(self.failed("the build".to_owned(), &other)),
            }
        }
        if failure.is_none() {
            steps.finish_classic_step(events);
        }
        if let Some(message) = failure {
            let message = message.trim().to_owned();
            return Err(match steps.failed() {
                Some((step, output)) => EngineError::StepFailed {
                    step,
                    message,
                    output,
                },
                None => EngineError::BuildFailed { message },
            });
        }
        let id = image.ok_or(EngineError::NoImageId)?;
        Digest::from_str(&id)
            .map(ImageId)
            .map_err(|_| EngineError::Api {
                action: "build".to_owned(),
                message: format!("the daemon reported the image id {id:?}"),
            })
    }

    async fn image(&self, reference: &str) -> Result<Option<ImageInfo>, EngineError> {
        match self.client.inspect_image(reference).await {
            Ok(inspect) => {
                let id = inspect.id.unwrap_or_default();
                let id = Digest::from_str(&id).map_err(|_| EngineError::Api {
                    action: format!("inspect {reference}"),
                    message: format!("the daemon reported the image id {id:?}"),
                })?;
                let layers = inspect
                    .root_fs
                    .and_then(|root| root.layers)
                    .unwrap_or_default()
                    .iter()
                    .map(|layer| Digest::from_str(layer))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|error| EngineError::Api {
                        action: format!("inspect {reference}"),
                        message: format!("the daemon reported a layer {error}"),
                    })?;
                Ok(Some(ImageInfo {
                    id: ImageId(id),
                    repo_digests: inspect.repo_digests.unwrap_or_default(),
                    tags: inspect.repo_tags.unwrap_or_default(),
                    layers,
                }))
            }
            Err(BollardError::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(None),
            Err(error) => Err(self.api(format!(
                "the inspect of {reference} (GET /images/{reference}/json)"
            ))(error)),
        }
    }

    async fn tag(
        &self,
        image: &ImageId,
        repository: &Repository,
        tag: &Tag,
    ) -> Result<(), EngineError> {
        let options = TagImageOptionsBuilder::default()
            .repo(repository.as_str())
            .tag(tag.as_str())
            .build();
        self.client
            .tag_image(image.0.as_str(), Some(options))
            .await
            .map_err(self.api(format!("tag {image} as {}", reference(repository, tag))))
    }

    async fn remove_tag(&self, repository: &Repository, tag: &Tag) -> Result<(), EngineError> {
        let reference = reference(repository, tag);
        let options = RemoveImageOptionsBuilder::default().noprune(true).build();
        match self
            .client
            .remove_image(&reference, Some(options), None)
            .await
        {
            Ok(_)
            | Err(BollardError::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(()),
            Err(error) => Err(self.api(format!("remove the tag {reference}"))(error)),
        }
    }

    async fn push(
        &self,
        repository: &Repository,
        tag: &Tag,
        credentials: Option<&Credentials>,
        events: &mut dyn FnMut(Event<'_>),
    ) -> Result<Digest, EngineError> {
        let reference = reference(repository, tag);
        let options = PushImageOptionsBuilder::default().tag(tag.as_str()).build();
        let mut stream = self.client.push_image(
            repository.as_str(),
            Some(options),
            credentials.map(docker_credentials),
        );
        let mut digest = None;
        let mut seen = std::collections::HashSet::new();
        let mut headway = Headway::default();
        while let Some(item) = self.next_within(&mut stream, &reference, &headway).await? {
            if let Ok(info) = &item {
                headway.note(None, info.status.as_deref(), info.progress_detail.as_ref());
            }
            let info = match item {
                Ok(info) => info,
                Err(BollardError::DockerStreamError { error }) => {
                    return Err(EngineError::Push {
                        reference,
                        message: error,
                    });
                }
                Err(BollardError::DockerResponseServerError { message, .. }) => {
                    return Err(EngineError::Push { reference, message });
                }
                Err(other) => return Err(self.failed(format!("the push of {reference}"), &other)),
            };
            let Some(status) = info.status else { continue };
            // The registry's manifest digest is only ever reported in this status line:
            // `TAG: digest: sha256:... size: N`.
            if let Some(found) = status
                .split_once(" digest: ")
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .and_then(|text| Digest::from_str(text).ok())
            {
                events(Event::Push {
                    reference: &reference,
                    status: &format!("pushed {found}"),
                });
                digest = Some(found);
                continue;
            }
            // Each state once (the stream names no layer); byte counts would flood a log.
            if !is_byte_progress(&status) && seen.insert(status.clone()) {
                events(Event::Push {
                    reference: &reference,
                    status: &status,
                });
            }
        }
        digest.ok_or(EngineError::NoPushDigest { reference })
    }

    async fn pull_reference(
        &self,
        reference: &crate::types::oci::ImageRef,
        platform: &Platform,
        credentials: Option<&Credentials>,
    ) -> Result<ImageInfo, EngineError> {
        let text = reference.as_str();
        let name = crate::types::oci::repository_name(text);
        let tag_or_digest = match (reference.digest(), reference.tag()) {
            (Some(digest), _) => digest.as_str(),
            (None, Some(tag)) => tag,
            (None, None) => "latest",
        };
        self.pull_named(
            (name, tag_or_digest),
            text.to_owned(),
            platform,
            credentials,
            &mut |_| {},
        )
        .await
    }

    async fn remove_untagged(&self, image: &ImageId) -> Result<bool, EngineError> {
        match self.image(image.0.as_str()).await? {
            Some(info) if info.tags.is_empty() => {}
            _ => return Ok(false),
        }
        let options = RemoveImageOptionsBuilder::default().noprune(true).build();
        match self
            .client
            .remove_image(image.0.as_str(), Some(options), None)
            .await
        {
            Ok(_) => Ok(true),
            // Still in use (a container, an image built on it): it stays, as `docker rmi` leaves it.
            Err(BollardError::DockerResponseServerError {
                status_code: 404 | 409,
                ..
            }) => Ok(false),
            Err(error) => Err(self.api(format!("remove the image {image}"))(error)),
        }
    }

    fn host(&self) -> &str {
        &self.host
    }

    async fn reach_back(&self, port: u16) -> Result<super::ReachBack, EngineError> {
        let Some(destination) = &self.ssh else {
            return Ok(super::ReachBack::local(port));
        };
        let (remote, forward) = super::ssh::forward(destination, port)
            .await
            .map_err(|said| EngineError::SshForward {
                host: self.host.clone(),
                said,
            })?;
        Ok(super::ReachBack::forwarded(remote, forward))
    }

    async fn untag(&self, reference: &str) -> Result<(), EngineError> {
        let options = RemoveImageOptionsBuilder::default().noprune(true).build();
        match self
            .client
            .remove_image(reference, Some(options), None)
            .await
        {
            Ok(_)
            | Err(BollardError::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(()),
            Err(error) => Err(self.api(format!("remove the name {reference}"))(error)),
        }
    }

    async fn history_len(&self, image: &ImageId) -> Result<usize, EngineError> {
        self.client
            .image_history(image.0.as_str())
            .await
            .map(|history| history.len())
            .map_err(self.api(format!("read the history of {image}")))
    }

    async fn open_probe(&self, image: &ImageId) -> Result<String, EngineError> {
        let config = ContainerCreateBody {
            image: Some(image.0.to_string()),
            // Never run: a command only so that an image without one can be made a container.
            entrypoint: Some(vec!["/forge-never-runs".to_owned()]),
            network_disabled: Some(true),
            ..Default::default()
        };
        self.client
            .create_container(None, config)
            .await
            .map(|created| created.id)
            .map_err(self.api(format!("create a container of {image}")))
    }

    async fn path_in(&self, container: &str, path: &str) -> Result<Option<PathMeta>, EngineError> {
        let options = bollard::query_parameters::DownloadFromContainerOptions {
            path: path.to_owned(),
        };
        let mut stream = std::pin::pin!(
            self.client
                .download_from_container(container, Some(options))
        );
        let mut bytes = Vec::new();
        // The first entry is the path itself: its header, and a PAX record before it at most.
        while bytes.len() < PROBE_BYTES {
            match stream.next().await {
                Some(Ok(chunk)) => bytes.extend_from_slice(&chunk),
                Some(Err(BollardError::DockerResponseServerError {
                    status_code: 404, ..
                })) => return Ok(None),
                Some(Err(error)) => {
                    return Err(self.api(format!("read {path} of a container"))(error));
                }
                None => break,
            }
        }
        let action = || format!("read {path} of a container");
        first_entry(&bytes)
            .map(Some)
            .map_err(|message| EngineError::Api {
                action: action(),
                message,
            })
    }

    async fn close_probe(&self, container: &str) {
        let options = RemoveContainerOptionsBuilder::default().force(true).build();
        let _ = self.client.remove_container(container, Some(options)).await;
    }

    async fn run(&self, image: &ImageId, command: &[String]) -> Result<RunOutput, EngineError> {
        let config = ContainerCreateBody {
            image: Some(image.0.to_string()),
            entrypoint: Some(command.to_vec()),
            cmd: Some(Vec::new()),
            network_disabled: Some(true),
            attach_stdout: Some(true),
            attach_stderr: Some(true),
            host_config: Some(HostConfig {
                network_mode: Some("none".to_owned()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let created = self
            .client
            .create_container(None, config)
            .await
            .map_err(self.api(format!("create a container of {image}")))?;
        let id = created.id;
        let outcome = async {
            self.client
                .start_container(&id, None)
                .await
                .map_err(self.api(format!("start a container of {image}")))?;
            let code = self.wait_for(&id, image).await?;
            let (stdout, stderr) = self.output_of(&id, image).await?;
            Ok(RunOutput {
                code,
                stdout: String::from_utf8_lossy(&stdout).into_owned(),
                stderr: String::from_utf8_lossy(&stderr).into_owned(),
            })
        }
        .await;
        // The container goes whatever happened; a failure to remove it is not the run's result.
        self.close_probe(&id).await;
        outcome
    }
}

/// The credentials as bollard sends them to the daemon.
fn docker_credentials(credentials: &Credentials) -> bollard::auth::DockerCredentials {
    bollard::auth::DockerCredentials {
        username: Some(credentials.username.clone()),
        password: Some(credentials.password.clone()),
        serveraddress: Some(crate::registry::credentials::server_address(
            &credentials.registry,
        )),
        ..Default::default()
    }
}

/// How far a pull's or a push's stream has got: each state of each layer (its id, status and
/// size) once, and each byte count past the highest yet for that state. Only an item that adds
/// to it moves the stream on; the idle limit counts from the last one that did.
struct Headway {
    since: tokio::time::Instant,
    reached: HashMap<(String, String, i64), i64>,
}

impl Default for Headway {
    fn default() -> Self {
        Self {
            since: tokio::time::Instant::now(),
            reached: HashMap::new(),
        }
    }
}

impl Headway {
    /// Notes an item of the stream; the clock starts again when it moves the stream on.
    fn note(
        &mut self,
        id: Option<&str>,
        status: Option<&str>,
        detail: Option<&bollard::models::ProgressDetail>,
    ) {
        let (current, total) = detail.map_or((0, 0), |detail| {
            (detail.current.unwrap_or(0), detail.total.unwrap_or(0))
        });
        let state = (
            id.unwrap_or_default().to_owned(),
            status.unwrap_or_default().to_owned(),
            total,
        );
        let moved = match self.reached.get_mut(&state) {
            Some(reached) if *reached >= current => false,
            Some(reached) => {
                *reached = current;
                true
            }
            None => {
                self.reached.insert(state, current);
                true
            }
        };
        if moved {
            self.since = tokio::time::Instant::now();
        }
    }
}

/// Whether a push or pull status is a layer's byte count or queue state, which the daemon sends
/// many times a second.
/// The bytes a pull's status of one layer reports (`Downloading` and `Extracting` with their
/// detail), or none for a state that ends the layer (`Pull complete`, `Already exists`); `None`
/// for any other state.
fn layer_progress(
    status: &str,
    detail: Option<&bollard::models::ProgressDetail>,
) -> Option<(u64, Option<u64>)> {
    if ["Pull complete", "Already exists"].contains(&status) {
        return Some((0, None));
    }
    if !["Downloading", "Extracting"].contains(&status) {
        return None;
    }
    let detail = detail?;
    let current = u64::try_from(detail.current?).ok()?;
    let total = detail
        .total
        .and_then(|total| u64::try_from(total).ok())
        .filter(|total| *total > 0);
    Some((current, total))
}

fn is_byte_progress(status: &str) -> bool {
    ["Pushing", "Downloading", "Extracting", "Waiting"].contains(&status)
}
