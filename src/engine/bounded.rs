//! Every answer of the daemon bounded in size and in idle time.
//!
//! forge opens its connections to the daemon itself (a unix socket, TCP, TLS, or an ssh process)
//! and hands them to bollard as its transport, one connection per request, each read through
//! `Bounded`: a read ends with `Crossed` once the answer passes its size cap or sends nothing
//! for the idle limit. Which bounds an answer gets follows from its request (`Bound::of`):
//!
//! - a paced stream (a build, a pull, a push, a container's wait, an upgraded BuildKit session)
//!   is bounded where forge reads it: pulls and pushes by their headway, a container by a
//!   deadline; a build step may rightly work for long without a word;
//! - a flowing stream (a container's logs or archive) is as large as it is (forge caps what it
//!   keeps of it) and may be silent for at most the idle limit (`FORGE_IDLE_TIMEOUT`);
//! - every other answer (an inspect, the version, a container's creation or start, a tag) is
//!   capped at `ANSWER_CAP` and may be silent for at most the idle limit, a removal for at least
//!   `REMOVAL_IDLE`: removing an image of gigabytes answers when it is done.

use std::future::Future;
use std::io;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::ssh::SshConnector;

/// The largest answer forge reads of a request that is not a stream: an image's inspect is a few
/// KiB, one of a thousand layers well under a MiB.
pub(super) const ANSWER_CAP: u64 = 16 << 20;

/// How long a removal may be silent, at least: the daemon answers once it has removed what
/// may be gigabytes of layers.
const REMOVAL_IDLE: Duration = Duration::from_secs(600);

/// The bounds of one answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Bound {
    /// The most bytes the answer may hold, headers included.
    cap: Option<u64>,
    /// The longest the daemon may send nothing.
    idle: Option<Duration>,
}

impl Bound {
    /// The bounds of the answer to `method path`.
    pub(super) fn of(method: &http::Method, path: &str) -> Self {
        // `/v1.41/images/x/json` → `/images/x/json`
        let path = match path.strip_prefix("/v") {
            Some(rest) if rest.starts_with(|c: char| c.is_ascii_digit()) => {
                rest.find('/').map_or(path, |at| &rest[at..])
            }
            _ => path,
        };
        let container_stream = |ends: &[&str]| {
            path.starts_with("/containers/") && ends.iter().any(|end| path.ends_with(end))
        };
        let idle = crate::http::idle_timeout();
        // Read where forge reads them, by their headway or a deadline: a build step may rightly
        // work for long without a word, and a container's wait answers when it ends.
        let paced = matches!(path, "/build" | "/session" | "/grpc" | "/events")
            || path.starts_with("/images/create")
            || path.starts_with("/images/load")
            || (path.starts_with("/images/") && path.ends_with("/push"))
            || container_stream(&["/wait", "/attach"]);
        // Streams of what is already there: as large as they are, never silent for long.
        let flowing = path.starts_with("/images/get")
            || (path.starts_with("/images/") && path.ends_with("/get"))
            || container_stream(&["/logs", "/archive", "/export"]);
        if paced {
            Self {
                cap: None,
                idle: None,
            }
        } else if flowing {
            Self {
                cap: None,
                idle: Some(idle),
            }
        } else if method == http::Method::DELETE {
            // Removing an image of gigabytes answers once it is done.
            Self {
                cap: Some(ANSWER_CAP),
                idle: Some(idle.max(REMOVAL_IDLE)),
            }
        } else {
            Self {
                cap: Some(ANSWER_CAP),
                idle: Some(idle),
            }
        }
    }
}

/// A bound an answer crossed: the error a read of it ends with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Crossed {
    /// It held more than the cap.
    #[error("an answer of more than {} MiB", .0 >> 20)]
    TooLarge(u64),
    /// It sent nothing for the idle limit.
    #[error("nothing for {} s", .0.as_secs_f64())]
    Silent(Duration),
    /// A container forge ran was still running at the deadline.
    #[error("a container still running after {} s", .0.as_secs_f64())]
    Running(Duration),
}

impl Crossed {
    /// What the daemon did, said of `action` (what forge asked for).
    pub fn said_of(&self, action: &str) -> String {
        match self {
            Crossed::TooLarge(cap) => format!(
                "answered {action} with more than {} MiB; forge stopped reading",
                cap >> 20
            ),
            Crossed::Silent(idle) => format!(
                "sent nothing for {} s in answer to {action}",
                idle.as_secs_f64()
            ),
            Crossed::Running(deadline) => format!(
                "still ran {action} after {} s; forge stopped it and removed the container",
                deadline.as_secs_f64()
            ),
        }
    }

    /// What to do about it.
    pub fn hint(&self) -> String {
        match self {
            Crossed::TooLarge(_) => "no Docker daemon answers that with so much: check that DOCKER_HOST (or --host) names a Docker daemon, and not another service or a proxy that adds to its answers".to_owned(),
            Crossed::Silent(_) => "check the daemon (`docker version` against the same host) and the link to it; FORGE_IDLE_TIMEOUT (seconds) raises the limit for a daemon that is only slow".to_owned(),
            Crossed::Running(_) => "the image's probe reads versions and files and ends in seconds; check that the image's shell and python start, and the daemon's load; FORGE_RUN_TIMEOUT (seconds) raises the limit".to_owned(),
        }
    }

    /// The bound `error` or one of its causes crossed, if any.
    pub(super) fn within(error: &(dyn std::error::Error + 'static)) -> Option<Self> {
        let mut cause = Some(error);
        while let Some(error) = cause {
            if let Some(crossed) = error.downcast_ref::<Self>() {
                return Some(*crossed);
            }
            // An I/O error's `source` is its inner error's cause, not the inner error.
            if let Some(crossed) = error
                .downcast_ref::<io::Error>()
                .and_then(io::Error::get_ref)
                .and_then(|inner| inner.downcast_ref::<Self>())
            {
                return Some(*crossed);
            }
            cause = error.source();
        }
        None
    }
}

impl crate::diagnostics::Advise for Crossed {
    fn advice(&self) -> crate::diagnostics::Advice {
        crate::diagnostics::Advice::Hint(self.hint())
    }
}

crate::advised!(Crossed);

/// A connection read within a `Bound`.
pub(super) struct Bounded<S> {
    inner: S,
    bound: Bound,
    read: u64,
    /// When the current wait for bytes ends, once one has begun.
    silence: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S> Bounded<S> {
    fn new(inner: S, bound: Bound) -> Self {
        Self {
            inner,
            bound,
            read: 0,
            silence: None,
        }
    }
}

fn crossed(crossed: Crossed) -> io::Error {
    let kind = match crossed {
        // Not `InvalidData`, which is how rustls reports a handshake it refused.
        Crossed::TooLarge(_) => io::ErrorKind::Other,
        Crossed::Silent(_) | Crossed::Running(_) => io::ErrorKind::TimedOut,
    };
    io::Error::new(kind, crossed)
}

impl<S: AsyncRead + Unpin> AsyncRead for Bounded<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        // The read that passes the cap delivers its bytes (a failed read must fill nothing);
        // the next one fails.
        if let Some(cap) = this.bound.cap
            && this.read > cap
        {
            return Poll::Ready(Err(crossed(Crossed::TooLarge(cap))));
        }
        let before = buffer.filled().len();
        match Pin::new(&mut this.inner).poll_read(context, buffer) {
            Poll::Ready(Ok(())) => {
                this.silence = None;
                this.read += (buffer.filled().len() - before) as u64;
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(error)) => Poll::Ready(Err(error)),
            Poll::Pending => {
                let Some(idle) = this.bound.idle else {
                    return Poll::Pending;
                };
                let silence = this
                    .silence
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(idle)));
                match silence.as_mut().poll(context) {
                    Poll::Ready(()) => Poll::Ready(Err(crossed(Crossed::Silent(idle)))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Bounded<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(context, buffer)
    }

    fn poll_flush(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(context)
    }

    fn poll_shutdown(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(context)
    }
}

impl<S> Connection for Bounded<S> {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

/// A connection of any of the ways to a daemon.
pub(super) trait Stream: AsyncRead + AsyncWrite + Send + Unpin {}
impl<S: AsyncRead + AsyncWrite + Send + Unpin> Stream for S {}

/// How forge reaches the daemon.
#[derive(Clone)]
pub(super) enum Dial {
    /// A unix socket.
    Unix(PathBuf),
    /// TCP to `host:port`, without TLS.
    Tcp(String),
    /// TCP to `host:port`, then TLS with a client certificate.
    Tls {
        authority: String,
        server: rustls::pki_types::ServerName<'static>,
        config: Arc<rustls::ClientConfig>,
    },
    /// One ssh process per connection.
    Ssh(SshConnector),
}

impl Dial {
    async fn open(&self) -> io::Result<Box<dyn Stream>> {
        Ok(match self {
            Dial::Unix(path) => Box::new(tokio::net::UnixStream::connect(path).await?),
            Dial::Tcp(authority) => Box::new(tokio::net::TcpStream::connect(authority).await?),
            Dial::Tls {
                authority,
                server,
                config,
            } => {
                let tcp = tokio::net::TcpStream::connect(authority).await?;
                let connector = tokio_rustls::TlsConnector::from(Arc::clone(config));
                Box::new(connector.connect(server.clone(), tcp).await?)
            }
            Dial::Ssh(connector) => Box::new(connector.open()?),
        })
    }

    /// A bollard client whose every request goes over a connection of its own, read within
    /// the bounds of its answer. `authority` is the `Host` the requests name.
    pub(super) fn client(
        self,
        authority: &str,
        timeout: u64,
    ) -> Result<bollard::Docker, bollard::errors::Error> {
        let dial = Arc::new(self);
        bollard::Docker::connect_with_custom_transport(
            move |request: bollard::BollardRequest| {
                let bound = Bound::of(request.method(), request.uri().path());
                let connector = Connector {
                    dial: Arc::clone(&dial),
                    bound,
                };
                let client = Client::builder(TokioExecutor::new())
                    .pool_max_idle_per_host(0)
                    .build(connector);
                async move {
                    client
                        .request(request)
                        .await
                        .map_err(bollard::errors::Error::from)
                }
            },
            Some(format!("http://{authority}")),
            timeout,
            bollard::API_DEFAULT_VERSION,
        )
    }
}

/// Opens one bounded connection for one request.
#[derive(Clone)]
struct Connector {
    dial: Arc<Dial>,
    bound: Bound,
}

impl tower_service::Service<http::Uri> for Connector {
    type Response = TokioIo<Bounded<Box<dyn Stream>>>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<Self::Response>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: http::Uri) -> Self::Future {
        let (dial, bound) = (Arc::clone(&self.dial), self.bound);
        Box::pin(async move {
            let stream = dial.open().await?;
            Ok(TokioIo::new(Bounded::new(stream, bound)))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt as _;

    #[test]
    fn streams_are_left_to_their_readers_and_answers_are_bounded() {
        let get = http::Method::GET;
        let post = http::Method::POST;
        let paced = Bound {
            cap: None,
            idle: None,
        };
        for (method, path) in [
            (&post, "/v1.41/build"),
            (&post, "/v1.41/images/create"),
            (&post, "/v1.41/images/127.0.0.1:5000/app/push"),
            (&post, "/v1.41/containers/abc/wait"),
            (&post, "/session"),
            (&post, "/grpc"),
        ] {
            assert_eq!(Bound::of(method, path), paced, "{method} {path}");
        }
        for path in [
            "/v1.41/containers/abc/logs",
            "/v1.41/containers/abc/archive",
        ] {
            let bound = Bound::of(&get, path);
            assert_eq!(bound.cap, None, "{path}");
            assert!(bound.idle.is_some(), "{path}");
        }
        for (method, path) in [
            (&get, "/v1.41/images/app:latest/json"),
            (&get, "/v1.41/version"),
            (&get, "/_ping"),
            (&post, "/v1.41/containers/create"),
            (&post, "/v1.41/containers/abc/start"),
            (&post, "/v1.41/images/app/tag"),
        ] {
            let bound = Bound::of(method, path);
            assert_eq!(bound.cap, Some(ANSWER_CAP), "{method} {path}");
            assert!(bound.idle.is_some(), "{method} {path}");
        }
        let removal = Bound::of(&http::Method::DELETE, "/v1.41/images/app:latest");
        assert_eq!(removal.cap, Some(ANSWER_CAP));
        assert!(removal.idle >= Some(REMOVAL_IDLE));
    }

    #[tokio::test]
    async fn a_read_ends_past_the_cap_and_after_the_idle_time() {
        let bytes = vec![7u8; 1000];
        let mut capped = Bounded::new(
            &bytes[..],
            Bound {
                cap: Some(999),
                idle: None,
            },
        );
        let error = capped.read_to_end(&mut Vec::new()).await.unwrap_err();
        assert_eq!(
            Crossed::within(&error),
            Some(Crossed::TooLarge(999)),
            "{error}"
        );
        let mut whole = Bounded::new(
            &bytes[..],
            Bound {
                cap: Some(1000),
                idle: None,
            },
        );
        assert_eq!(whole.read_to_end(&mut Vec::new()).await.unwrap(), 1000);
        let (_writer, reader) = tokio::io::duplex(64);
        let idle = Duration::from_millis(50);
        let mut silent = Bounded::new(
            reader,
            Bound {
                cap: None,
                idle: Some(idle),
            },
        );
        let error = silent.read_to_end(&mut Vec::new()).await.unwrap_err();
        assert_eq!(Crossed::within(&error), Some(Crossed::Silent(idle)));
    }
}
