//! Git's smart HTTP protocol for libgit2, carried by forge's own HTTP client.
//!
//! libgit2 speaks the git protocol; this module only moves its bytes: a `GET
//! URL/info/refs?service=git-upload-pack` for the ref listing, a `POST URL/git-upload-pack` for
//! each negotiation round. Carried by `ureq`, git remotes get the same TLS (the machine's trust
//! store through rustls), proxy settings and timeouts as the package index and registry
//! clients, and libgit2 is built without a TLS library of its own, whose OpenSSL set-up would
//! parse the whole CA bundle at the start of every forge command. Fetching is all forge does
//! with a remote, so pushing (`receive-pack`) is refused.

use std::io::{self, Read, Write};
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

use git2::transport::{Service, SmartSubtransport, SmartSubtransportStream, Transport};
use ureq::ResponseExt as _;

/// How long connecting and waiting for a response's headers may take. A body may take as long
/// as a large repository takes, but never longer than `http::idle_timeout()` without a byte.
const WAIT: Duration = Duration::from_secs(60);

/// The largest pack forge receives from a negotiation.
const PACK_LIMIT: u64 = 16 * 1024 * 1024 * 1024;

/// Makes libgit2 use this transport for `http://` and `https://` remotes. Safe to call any
/// number of times; only the first call registers.
pub(super) fn register() {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        for scheme in ["http", "https"] {
            // SAFETY: registration happens once, before any remote of either scheme is made
            // (forge makes remotes only through `git_remote::detached_remote` and
            // `anonymous_remote`, which call this first), as `register` requires.
            let registered = unsafe {
                git2::transport::register(scheme, |remote| {
                    Transport::smart(remote, true, SmartHttp::new())
                })
            };
            registered.expect("a transport scheme is registered only once");
        }
    });
}

/// One remote's HTTP side: the agent all its requests share (one TLS set-up, connections
/// kept alive between negotiation rounds), and the URL later requests go to, which follows a
/// redirect of the ref listing the way git does.
struct SmartHttp {
    agent: ureq::Agent,
    base: Arc<Mutex<Option<String>>>,
}

impl SmartHttp {
    fn new() -> Self {
        Self {
            agent: crate::http::config()
                .timeout_global(None)
                .timeout_connect(Some(WAIT))
                .timeout_recv_response(Some(WAIT))
                .build()
                .into(),
            base: Arc::default(),
        }
    }
}

impl SmartSubtransport for SmartHttp {
    fn action(
        &self,
        url: &str,
        action: Service,
    ) -> Result<Box<dyn SmartSubtransportStream>, git2::Error> {
        let base = {
            let mut base = self
                .base
                .lock()
                .expect("the base URL lock is never poisoned");
            base.get_or_insert_with(|| url.trim_end_matches('/').to_owned())
                .clone()
        };
        let request = match action {
            Service::UploadPackLs => Request::List,
            Service::UploadPack => Request::Negotiate,
            Service::ReceivePackLs | Service::ReceivePack => {
                return Err(git2::Error::from_str(
                    "forge only fetches from git remotes; it does not push",
                ));
            }
        };
        Ok(Box::new(Exchange {
            agent: self.agent.clone(),
            base,
            redirected: Arc::clone(&self.base),
            request,
            sent: Vec::new(),
            response: None,
        }))
    }

    fn close(&self) -> Result<(), git2::Error> {
        Ok(())
    }
}

/// Which request an exchange makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Request {
    /// `GET info/refs?service=git-upload-pack`: the advertised refs.
    List,
    /// `POST git-upload-pack`: the wants and haves written to the stream, the pack back.
    Negotiate,
}

impl Request {
    fn content_type(self) -> &'static str {
        match self {
            Request::List => "application/x-git-upload-pack-advertisement",
            Request::Negotiate => "application/x-git-upload-pack-result",
        }
    }
}

/// One request and its response, as the byte stream libgit2 reads and writes: what it writes
/// is the request body, sent when it first reads.
struct Exchange {
    agent: ureq::Agent,
    base: String,
    redirected: Arc<Mutex<Option<String>>>,
    request: Request,
    sent: Vec<u8>,
    response: Option<Box<dyn Read + Send>>,
}

impl Exchange {
    fn send(&mut self) -> io::Result<Box<dyn Read + Send>> {
        let agent = &self.agent;
        let accept = self.request.content_type();
        let (url, response) = match self.request {
            Request::List => {
                let url = format!("{}/info/refs?service=git-upload-pack", self.base);
                let response = agent.get(&url).header("Accept", accept).call();
                (url, response)
            }
            Request::Negotiate => {
                let url = format!("{}/git-upload-pack", self.base);
                let response = agent
                    .post(&url)
                    .header("Accept", accept)
                    .content_type("application/x-git-upload-pack-request")
                    .send(&self.sent[..]);
                (url, response)
            }
        };
        let response = response.map_err(|error| io::Error::other(format!("{url}: {error}")))?;
        let status = response.status();
        if !status.is_success() {
            return Err(io::Error::other(format!("{url} answered HTTP {status}")));
        }
        let content_type = crate::http::header(&response, "content-type").unwrap_or_default();
        // Parameters such as `; charset=...` do not change what the body is.
        let media_type = content_type.split(';').next().unwrap_or_default().trim();
        if media_type != accept {
            return Err(io::Error::other(format!(
                "{url} is not a git smart HTTP server (content type `{content_type}`, expected `{accept}`)"
            )));
        }
        if self.request == Request::List {
            // Later requests go where the listing ended up, as git does after a redirect.
            let landed = response.get_uri().to_string();
            if let Some(base) = landed.strip_suffix("/info/refs?service=git-upload-pack") {
                *self
                    .redirected
                    .lock()
                    .expect("the base URL lock is never poisoned") = Some(base.to_owned());
            }
        }
        let body = crate::http::Guarded::new(
            response.into_body().into_reader(),
            crate::http::idle_timeout(),
            match self.request {
                Request::List => crate::http::BODY_LIMIT,
                Request::Negotiate => PACK_LIMIT,
            },
            url.clone(),
        );
        if self.request == Request::Negotiate {
            return Ok(Box::new(body));
        }
        // The ref listing is read whole and checked before libgit2 sees it: a malformed one
        // would otherwise surface as an unrelated libgit2 error.
        let mut listing = Vec::new();
        let mut body = body;
        body.read_to_end(&mut listing)?;
        check_pkt_lines(&listing).map_err(|reason| {
            io::Error::other(format!("{url} is not a git smart HTTP reply: {reason}"))
        })?;
        Ok(Box::new(io::Cursor::new(listing)))
    }
}

/// Whether `bytes` is a sequence of git pkt-lines: each a four-digit hexadecimal length that
/// counts itself (`0000` to `0002` are markers) and that many bytes.
fn check_pkt_lines(bytes: &[u8]) -> Result<(), String> {
    let mut at = 0;
    while at < bytes.len() {
        let field = bytes
            .get(at..at + 4)
            .ok_or_else(|| format!("it ends inside a pkt-line length at byte {at}"))?;
        let text = std::str::from_utf8(field).unwrap_or_default();
        let length = usize::from_str_radix(text, 16)
            .ok()
            .filter(|_| text.len() == 4)
            .ok_or_else(|| {
                format!(
                    "`{}` at byte {at} is not a pkt-line length",
                    String::from_utf8_lossy(field)
                )
            })?;
        match length {
            0..=2 => at += 4,
            3 => {
                return Err(format!(
                    "pkt-line length 0003 at byte {at} is shorter than its own length field"
                ));
            }
            _ if at + length > bytes.len() => {
                return Err(format!(
                    "the pkt-line at byte {at} claims {length} bytes, but the reply ends first"
                ));
            }
            _ => at += length,
        }
    }
    Ok(())
}

impl Read for Exchange {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        if self.response.is_none() {
            self.response = Some(self.send()?);
        }
        self.response
            .as_mut()
            .expect("the response was just received")
            .read(buffer)
    }
}

impl Write for Exchange {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.response.is_some() {
            return Err(io::Error::other(
                "git wrote to a request that was already sent",
            ));
        }
        self.sent.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkt_lines_are_checked() {
        assert!(check_pkt_lines(b"001e# service=git-upload-pack\n0000").is_ok());
        let error = check_pkt_lines(b"0003").unwrap_err();
        assert!(error.contains("0003"), "{error}");
        assert!(
            check_pkt_lines(b"00ffshort")
                .unwrap_err()
                .contains("claims 255 bytes")
        );
        assert!(
            check_pkt_lines(b"zzzz")
                .unwrap_err()
                .contains("not a pkt-line length")
        );
    }
}
