//! The blocking HTTP client the package index, registry and git clients share: one `ureq` agent with
//! timeouts, rustls for TLS, and status codes returned as responses rather than errors (the
//! callers tell a 404 from a 401 from a 500 in their own terms).

use std::io::{self, Read};
use std::sync::mpsc;
use std::time::Duration;

/// How long one request may take, connection and body included.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(60);

/// The largest body forge reads: an index page of a package with thousands of files.
pub const BODY_LIMIT: u64 = 64 * 1024 * 1024;

/// A fresh agent for requests with a bounded body: each takes at most `TIMEOUT` in all.
pub fn agent() -> ureq::Agent {
    config().timeout_global(Some(TIMEOUT)).build().into()
}

/// Like `agent`, but redirects come back as responses: for a client that decides itself where
/// a redirect may lead and what goes with it (the registry client, see `registry::trust`).
pub fn agent_without_redirects() -> ureq::Agent {
    config()
        .timeout_global(Some(TIMEOUT))
        .max_redirects(0)
        .build()
        .into()
}

/// The most redirects one request follows (curl's default is 50, requests' 30; a file host
/// needs one or two).
pub const MAX_REDIRECTS: usize = 10;

/// Why a redirect was not followed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RedirectRefusal {
    /// It leads to something that is not http or https (`file:`, `ftp:`, ...).
    #[error(
        "it redirects to {}, which is not an http:// or https:// URL",
        crate::redact::Redacted(to)
    )]
    NotHttp {
        /// Where it leads.
        to: String,
    },
    /// It leads from https to plain http.
    #[error(
        "it redirects from https to plain http ({})",
        crate::redact::Redacted(to)
    )]
    Downgrade {
        /// Where it leads.
        to: String,
    },
    /// It carries a user name or password.
    #[error(
        "it redirects to a URL with a user name or token in it ({})",
        crate::redact::Redacted(to)
    )]
    UserInformation {
        /// Where it leads.
        to: String,
    },
    /// The redirects did not end.
    #[error(
        "it redirects more than {MAX_REDIRECTS} times (the last to {})",
        crate::redact::Redacted(to)
    )]
    TooMany {
        /// The last place it led.
        to: String,
    },
    /// The `Location` is no URL.
    #[error("it redirects to {location:?}, which is not a URL ({reason})")]
    Unreadable {
        /// The `Location` header as sent.
        location: String,
        /// Why it does not parse.
        reason: String,
    },
}

impl crate::diagnostics::Advise for RedirectRefusal {
    fn advice(&self) -> crate::diagnostics::Advice {
        crate::diagnostics::Advice::Hint(match self {
            RedirectRefusal::Downgrade { .. } => "forge hashes only what came over https when the url is https: ask the host to serve the file over https, or name its https location in the pin's `url`",
            RedirectRefusal::NotHttp { .. } | RedirectRefusal::UserInformation { .. } => "forge downloads over http and https only, and sends no login it was not given: name the file's https location in the pin's `url`",
            RedirectRefusal::TooMany { .. } | RedirectRefusal::Unreadable { .. } => "the server's redirects lead nowhere: check the pin's `url` in a browser, or name where the file really is",
        }.to_owned())
    }
}

crate::advised!(RedirectRefusal);

/// Why a request that follows redirects got no answer.
#[derive(Debug)]
pub enum FollowError {
    /// A redirect was refused.
    Refused(RedirectRefusal),
    /// The request itself failed.
    Request(ureq::Error),
}

/// `GET url`, following redirects by hand with `agent` (made with `max_redirects(0)`): each
/// `Location` is read against the URL that sent it, and refused when it leads out of HTTP, from
/// https back to plain http (once on https, a chain stays there), or to a URL with user
/// information, each named with where it led. The answer that is not a redirect comes back
/// with the URL that gave it.
pub fn get_following(
    agent: &ureq::Agent,
    url: &str,
) -> Result<(String, ureq::http::Response<ureq::Body>), FollowError> {
    let mut current = url.to_owned();
    for _ in 0..=MAX_REDIRECTS {
        let response = agent.get(&current).call().map_err(FollowError::Request)?;
        let location = header(&response, "location").map(ToOwned::to_owned);
        let Some(location) = location.filter(|_| response.status().is_redirection()) else {
            return Ok((current, response));
        };
        current = redirect(&current, &location).map_err(FollowError::Refused)?;
    }
    Err(FollowError::Refused(RedirectRefusal::TooMany {
        to: current,
    }))
}

/// Where a redirect from `from` to `location` leads, if it may be followed.
fn redirect(from: &str, location: &str) -> Result<String, RedirectRefusal> {
    let unreadable = |reason: String| RedirectRefusal::Unreadable {
        location: location.to_owned(),
        reason,
    };
    let base = url::Url::parse(from).map_err(|error| unreadable(error.to_string()))?;
    let to = base
        .join(location)
        .map_err(|error| unreadable(error.to_string()))?;
    let named = to.as_str().to_owned();
    use crate::types::url::Scheme;
    match (Scheme::of(&base), Scheme::of(&to)) {
        (_, Scheme::Other) => Err(RedirectRefusal::NotHttp { to: named }),
        (Scheme::Https, Scheme::Http) => Err(RedirectRefusal::Downgrade { to: named }),
        _ if crate::types::url::has_user_information(&to) => {
            Err(RedirectRefusal::UserInformation { to: named })
        }
        _ => Ok(named),
    }
}

/// What every forge agent shares. Redirects are followed (PyPI and registries redirect to
/// CDNs); the proxy settings of the environment (`HTTPS_PROXY`, `NO_PROXY`) apply. Certificates
/// are checked against the machine's trust store, as pip, git and docker do, so a site that adds
/// its own CA (a TLS-inspecting proxy, an internal mirror) works here as it does for them.
pub fn config() -> ureq::config::ConfigBuilder<ureq::typestate::AgentScope> {
    ureq::Agent::config_builder()
        .tls_config(
            ureq::tls::TlsConfig::builder()
                .root_certs(ureq::tls::RootCerts::PlatformVerifier)
                .build(),
        )
        .http_status_as_error(false)
        .user_agent(concat!("forge/", env!("CARGO_PKG_VERSION")))
}

/// The configuration of an agent with no overall time limit (a large download takes long on a
/// slow link), whose connection, request and response head are each bounded by the idle time
/// instead, so that a server that never answers, or trickles its headers, ends the request;
/// the body is bounded by `Guarded`.
pub fn config_without_deadline() -> ureq::config::ConfigBuilder<ureq::typestate::AgentScope> {
    let idle = Some(idle_timeout());
    config()
        .timeout_global(None)
        .timeout_connect(idle)
        .timeout_send_request(idle)
        .timeout_recv_response(idle)
}

/// Reads the body of `response`, fetched from `what` (a URL), within `BODY_LIMIT` and the
/// agent's time limit.
pub fn body_bytes(
    response: &mut ureq::http::Response<ureq::Body>,
    what: &str,
) -> Result<Vec<u8>, BodyError> {
    response
        .body_mut()
        .with_config()
        .limit(BODY_LIMIT)
        .read_to_vec()
        .map_err(|error| BodyError::of(error, what))
}

/// Reads the body of `response`, fetched from `what` (a URL), as UTF-8 text, within
/// `BODY_LIMIT` and the agent's time limit.
pub fn body_text(
    response: &mut ureq::http::Response<ureq::Body>,
    what: &str,
) -> Result<String, BodyError> {
    String::from_utf8(body_bytes(response, what)?).map_err(|_| BodyError::Broken {
        what: what.to_owned(),
        message: "the answer is not UTF-8 text".to_owned(),
    })
}

/// How long a response body may send nothing before forge gives up on it:
/// `FORGE_IDLE_TIMEOUT` seconds, else 60.
pub fn idle_timeout() -> Duration {
    std::env::var("FORGE_IDLE_TIMEOUT")
        .ok()
        .and_then(|seconds| seconds.trim().parse::<f64>().ok())
        .filter(|seconds| *seconds > 0.0)
        .map_or(Duration::from_secs(60), Duration::from_secs_f64)
}

/// A body read on a thread of its own, so that a server that stops sending ends the read after
/// an idle time instead of never, and one that sends without end ends it at a size cap instead
/// of filling memory or disk. Errors name `what` (the URL) and which bound was crossed.
pub struct Guarded {
    chunks: mpsc::Receiver<io::Result<Vec<u8>>>,
    pending: Vec<u8>,
    offset: usize,
    received: u64,
    idle: Duration,
    cap: u64,
    what: String,
    ended: bool,
}

/// Why a guarded body stopped.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// Nothing arrived for the idle time.
    #[error("{} sent nothing for {} s", crate::redact::Redacted(what), idle.as_secs_f64())]
    Idle {
        /// The URL.
        what: String,
        /// The idle time.
        idle: Duration,
    },
    /// More than the cap arrived.
    #[error("{} sent more than {cap} bytes", crate::redact::Redacted(what))]
    TooLarge {
        /// The URL.
        what: String,
        /// The cap.
        cap: u64,
    },
    /// The whole exchange took longer than the agent allows.
    #[error("{} did not finish its answer within {} s", crate::redact::Redacted(what), TIMEOUT.as_secs())]
    Slow {
        /// The URL.
        what: String,
    },
    /// The answer broke off or could not be read.
    #[error(
        "the answer from {} broke off: {message}",
        crate::redact::Redacted(what)
    )]
    Broken {
        /// The URL.
        what: String,
        /// What the connection said.
        message: String,
    },
}

impl BodyError {
    /// The body error a ureq read error stands for.
    fn of(error: ureq::Error, what: &str) -> Self {
        let what = what.to_owned();
        match error {
            ureq::Error::BodyExceedsLimit(_) => BodyError::TooLarge {
                what,
                cap: BODY_LIMIT,
            },
            ureq::Error::Timeout(_) => BodyError::Slow { what },
            other => BodyError::Broken {
                what,
                message: other.to_string(),
            },
        }
    }
}

impl crate::diagnostics::Advise for BodyError {
    fn advice(&self) -> crate::diagnostics::Advice {
        crate::diagnostics::Advice::Hint(match self {
            BodyError::Idle { .. } => "the server stopped answering; try again, or set FORGE_IDLE_TIMEOUT (seconds) for a slow link".to_owned(),
            BodyError::TooLarge { .. } => "the server sends far more than such an answer holds; check the URL".to_owned(),
            BodyError::Slow { .. } | BodyError::Broken { .. } => "try again; if it keeps failing, check the server and the network between".to_owned(),
        })
    }
}

crate::advised!(BodyError);

impl Guarded {
    /// Reads `reader` on a thread; `idle` and `cap` bound what arrives.
    pub fn new(
        reader: impl Read + Send + 'static,
        idle: Duration,
        cap: u64,
        what: impl Into<String>,
    ) -> Self {
        let (sender, chunks) = mpsc::sync_channel(4);
        std::thread::spawn(move || {
            let mut reader = reader;
            loop {
                let mut chunk = vec![0u8; 64 * 1024];
                let read = reader.read(&mut chunk);
                let done = !matches!(read, Ok(count) if count > 0);
                let sent = sender.send(read.map(|count| {
                    chunk.truncate(count);
                    chunk
                }));
                if done || sent.is_err() {
                    break;
                }
            }
        });
        Self {
            chunks,
            pending: Vec::new(),
            offset: 0,
            received: 0,
            idle,
            cap,
            what: what.into(),
            ended: false,
        }
    }
}

impl Read for Guarded {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        if self.offset == self.pending.len() {
            if self.ended {
                return Ok(0);
            }
            match self.chunks.recv_timeout(self.idle) {
                Ok(Ok(chunk)) if chunk.is_empty() => {
                    self.ended = true;
                    return Ok(0);
                }
                Ok(Ok(chunk)) => {
                    self.received += chunk.len() as u64;
                    if self.received > self.cap {
                        return Err(io::Error::other(BodyError::TooLarge {
                            what: self.what.clone(),
                            cap: self.cap,
                        }));
                    }
                    self.pending = chunk;
                    self.offset = 0;
                }
                Ok(Err(error)) => return Err(error),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        BodyError::Idle {
                            what: self.what.clone(),
                            idle: self.idle,
                        },
                    ));
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    self.ended = true;
                    return Ok(0);
                }
            }
        }
        let count = buffer.len().min(self.pending.len() - self.offset);
        buffer[..count].copy_from_slice(&self.pending[self.offset..self.offset + count]);
        self.offset += count;
        Ok(count)
    }
}

/// A header's value as text, if present and printable.
pub fn header<'a>(response: &'a ureq::http::Response<ureq::Body>, name: &str) -> Option<&'a str> {
    response
        .headers()
        .get(name)
        .and_then(|value| value.to_str().ok())
}

/// The target of the `rel="next"` link of a `Link` header (RFC 8288: `<URI>; rel="next"`, the
/// relation unquoted or among several space-separated ones), as written.
pub fn next_link(header: &str) -> Option<String> {
    header.split(',').find_map(|link| {
        let (target, parameters) = link.split_once(';')?;
        let next = parameters.split(';').any(|parameter| {
            parameter.split_once('=').is_some_and(|(name, value)| {
                name.trim().eq_ignore_ascii_case("rel")
                    && value
                        .trim()
                        .trim_matches('"')
                        .split_whitespace()
                        .any(|rel| rel.eq_ignore_ascii_case("next"))
            })
        });
        next.then(|| {
            target
                .trim()
                .trim_start_matches('<')
                .trim_end_matches('>')
                .to_owned()
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_links_are_found_in_every_spelling() {
        assert_eq!(
            next_link(r#"</v2/a/tags/list?n=2&last=b>; rel="next""#).as_deref(),
            Some("/v2/a/tags/list?n=2&last=b")
        );
        assert_eq!(
            next_link(r#"<https://h/r?page=2>; rel="next", <https://h/r?page=9>; rel="last""#)
                .as_deref(),
            Some("https://h/r?page=2")
        );
        assert_eq!(
            next_link("<https://h/p3>; REL=next").as_deref(),
            Some("https://h/p3")
        );
        assert_eq!(
            next_link(r#"<https://h/p1>; rel="prev first", <https://h/p3>; rel="next last""#)
                .as_deref(),
            Some("https://h/p3")
        );
        assert_eq!(next_link(r#"<https://h/r?page=9>; rel="last""#), None);
        assert_eq!(next_link(r#"<https://h/r?page=9>; title="next""#), None);
    }

    #[test]
    fn redirects_stay_on_http_and_never_go_back_from_https() {
        let from = "https://files.example.org/a/b.whl";
        assert_eq!(
            redirect(from, "/c/d.whl").as_deref(),
            Ok("https://files.example.org/c/d.whl")
        );
        assert_eq!(
            redirect(from, "https://cdn.example.net/x").as_deref(),
            Ok("https://cdn.example.net/x")
        );
        assert_eq!(
            redirect("http://127.0.0.1:9/a", "https://cdn.example.net/x").as_deref(),
            Ok("https://cdn.example.net/x")
        );
        assert_eq!(
            redirect(from, "file:///etc/passwd"),
            Err(RedirectRefusal::NotHttp {
                to: "file:///etc/passwd".to_owned()
            })
        );
        assert_eq!(
            redirect(from, "http://cdn.example.net/x"),
            Err(RedirectRefusal::Downgrade {
                to: "http://cdn.example.net/x".to_owned()
            })
        );
        assert!(matches!(
            redirect(from, "https://user:token@cdn.example.net/x"),
            Err(RedirectRefusal::UserInformation { .. })
        ));
        assert!(matches!(
            redirect(from, "http://[::1"),
            Err(RedirectRefusal::Unreadable { .. })
        ));
        let refused = RedirectRefusal::UserInformation {
            to: "https://user:token@cdn.example.net/x".to_owned(),
        };
        assert!(!refused.to_string().contains("user:token"), "{refused}");
        assert!(
            refused
                .to_string()
                .contains("https://***@cdn.example.net/x"),
            "{refused}"
        );
    }

    #[test]
    fn a_guarded_body_ends_at_its_cap_and_its_idle_time() {
        let mut capped = Guarded::new(io::repeat(b'x'), Duration::from_secs(5), 100_000, "endless");
        let error = io::copy(&mut capped, &mut io::sink()).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("endless sent more than 100000 bytes"),
            "{error}"
        );

        struct Stalls;
        impl Read for Stalls {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                std::thread::sleep(Duration::from_secs(30));
                Ok(0)
            }
        }
        let started = std::time::Instant::now();
        let mut stalled = Guarded::new(Stalls, Duration::from_millis(200), 100, "stalled");
        let error = stalled.read(&mut [0u8; 8]).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(5));

        let mut whole = Guarded::new(&b"hello"[..], Duration::from_secs(5), 100, "short");
        let mut text = String::new();
        whole.read_to_string(&mut text).unwrap();
        assert_eq!(text, "hello");
    }
}
