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

/// How long connecting and waiting for a response's headers may take. A fetch's body has no
/// limit: a large repository takes as long as it takes.
const WAIT: Duration = Duration::from_secs(60);

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
    response: Option<ureq::BodyReader<'static>>,
}

impl Exchange {
    fn send(&mut self) -> io::Result<ureq::BodyReader<'static>> {
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
        Ok(response.into_body().into_reader())
    }
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
