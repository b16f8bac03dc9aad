//! A registry with the OCI 1.1 referrers API, which Debian's `docker-registry` lacks: a small
//! proxy on loopback in front of a real `RegistryServer` that passes every request through,
//! and, as the distribution spec has a registry with the API do, answers a manifest put with a
//! `subject` with `OCI-Subject` and lists such manifests at `GET /v2/<name>/referrers/<digest>`.
//! It can also hide a manifest (answer 404 for it), as a registry that lost it would.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use sha2::Digest as _;

use super::LoopbackServer;
use super::http::{Request, respond};
use super::registry::RegistryServer;

/// The referrers each `(repository, subject)` has, as index entries.
type Listed = Arc<Mutex<BTreeMap<(String, String), Vec<Value>>>>;

/// The proxy, and the registry behind it.
pub(crate) struct ReferrersApi {
    server: LoopbackServer,
    hidden: Arc<Mutex<Vec<String>>>,
    /// The registry that holds everything.
    pub(crate) backend: RegistryServer,
}

impl ReferrersApi {
    /// Starts a registry and the proxy in front of it.
    pub(crate) fn start() -> Self {
        let backend = RegistryServer::start();
        let behind = backend.address().to_owned();
        let listed: Listed = Arc::default();
        let hidden: Arc<Mutex<Vec<String>>> = Arc::default();
        let hiding = Arc::clone(&hidden);
        let server = LoopbackServer::start(move |stream, requests| {
            let hidden = hiding.lock().unwrap().clone();
            serve(stream, &behind, &listed, &hidden, requests);
        });
        Self {
            server,
            hidden,
            backend,
        }
    }

    /// Answers 404 from now on for every manifest whose reference ends with `suffix`.
    pub(crate) fn hide(&self, suffix: &str) {
        self.hidden.lock().unwrap().push(suffix.to_owned());
    }

    /// `127.0.0.1:PORT` of the proxy.
    pub(crate) fn address(&self) -> &str {
        self.server.address()
    }

    /// Each request it answered, `METHOD TARGET`.
    pub(crate) fn requests(&self) -> Vec<String> {
        self.server.requests()
    }
}

fn serve(
    mut stream: TcpStream,
    backend: &str,
    listed: &Listed,
    hidden: &[String],
    requests: &Mutex<Vec<String>>,
) {
    let Some(mut request) = Request::read(&stream) else {
        return;
    };
    requests
        .lock()
        .unwrap()
        .push(format!("{} {}", request.method, request.target));
    let chunked = request
        .header("transfer-encoding")
        .is_some_and(|value| value.eq_ignore_ascii_case("chunked"));
    let body = if chunked {
        request.chunked_body()
    } else {
        request.body()
    };
    let Some(body) = body else { return };
    let path = request
        .target
        .split('?')
        .next()
        .unwrap_or_default()
        .to_owned();
    if path.contains("/manifests/") && hidden.iter().any(|suffix| path.ends_with(suffix.as_str())) {
        respond(&mut stream, "404 Not Found", &[], b"");
        return;
    }
    if request.method == "GET"
        && let Some((name, subject)) = path
            .strip_prefix("/v2/")
            .and_then(|rest| rest.split_once("/referrers/"))
    {
        let key = (name.to_owned(), subject.to_owned());
        let entries = listed
            .lock()
            .unwrap()
            .get(&key)
            .cloned()
            .unwrap_or_default();
        let index = json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": entries,
        });
        respond(
            &mut stream,
            "200 OK",
            &[("Content-Type", "application/vnd.oci.image.index.v1+json")],
            &serde_json::to_vec(&index).unwrap(),
        );
        return;
    }
    let answer = forward(&request, &body, backend);
    let taken = answer.starts_with(b"HTTP/1.1 201") || answer.starts_with(b"HTTP/1.0 201");
    let indexed = if request.method == "PUT" && taken {
        referred(&path, &body, listed)
    } else {
        None
    };
    let _ = match indexed {
        // The spec's sign that the registry indexed it: `OCI-Subject` on the answer.
        Some(subject) => {
            let end = answer
                .windows(2)
                .position(|pair| pair == b"\r\n")
                .unwrap_or(0);
            let mut marked = answer[..end + 2].to_vec();
            marked.extend_from_slice(format!("OCI-Subject: {subject}\r\n").as_bytes());
            marked.extend_from_slice(&answer[end + 2..]);
            stream.write_all(&marked)
        }
        None => stream.write_all(&answer),
    };
}

/// When the manifest `body` put at `path` has a `subject`, lists it among that subject's
/// referrers in `listed` and returns the subject's digest.
fn referred(path: &str, body: &[u8], listed: &Listed) -> Option<String> {
    let (name, _) = path.strip_prefix("/v2/")?.split_once("/manifests/")?;
    let manifest: Value = serde_json::from_slice(body).ok()?;
    let subject = manifest["subject"]["digest"].as_str()?.to_owned();
    let entry = json!({
        "mediaType": manifest["mediaType"],
        "digest": format!("sha256:{}", hex::encode(sha2::Sha256::digest(body))),
        "size": body.len(),
        "artifactType": manifest.get("artifactType").unwrap_or(&manifest["config"]["mediaType"]),
        "annotations": manifest.get("annotations").cloned().unwrap_or(json!({})),
    });
    listed
        .lock()
        .unwrap()
        .entry((name.to_owned(), subject.clone()))
        .or_default()
        .push(entry);
    Some(subject)
}

/// `request` (with its `body`) sent to `backend` as it came but for `Connection: close` and a
/// `Content-Length`; the whole answer.
fn forward(request: &Request, body: &[u8], backend: &str) -> Vec<u8> {
    let mut head = format!("{} {} HTTP/1.1\r\n", request.method, request.target);
    for (name, value) in request.headers() {
        if !["connection", "content-length", "transfer-encoding"].contains(&name) {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    let mut upstream = TcpStream::connect(backend).expect("the registry behind the proxy");
    upstream.write_all(head.as_bytes()).unwrap();
    upstream.write_all(body).unwrap();
    let mut answer = Vec::new();
    let _ = upstream.read_to_end(&mut answer);
    answer
}
