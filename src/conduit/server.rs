//! The conduit's HTTP side: the part of the distribution API a daemon's push and pull use.
//!
//! - `GET /v2/`: the API's version check.
//! - `HEAD|GET /v2/NAME/blobs/DIGEST`: a held blob is present (HEAD only: forge has no bytes
//!   for it), a received or offered one is served.
//! - `POST /v2/NAME/blobs/uploads/` starts an upload (a mount of a blob the conduit has is
//!   answered as done); `PATCH` appends to it; `PUT ?digest=` ends it, the bytes checked
//!   against the digest.
//! - `PUT|HEAD|GET /v2/NAME/manifests/REFERENCE`: a manifest kept under its digest and a tag.
//!
//! A connection that opens with a TLS handshake (a daemon trying https first) is answered in
//! plain HTTP, which is what tells both the classic store and containerd to fall back to http.

use std::io::Write as _;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::TryStreamExt as _;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use sha2::Digest as _;

use super::{DOCUMENT_LIMIT, Document, Offered, Shared, Stored, sha256};
use crate::types::oci::Digest;

type Body = BoxBody<Bytes, std::io::Error>;

/// An upload under way.
#[derive(Debug)]
pub(crate) struct Upload {
    file: std::io::BufWriter<std::fs::File>,
    path: std::path::PathBuf,
    hasher: sha2::Sha256,
    size: u64,
}

/// Accepts connections until the task is aborted; each is served on a task of its own, all of
/// them ended with the accepting one.
pub(super) async fn serve(listener: tokio::net::TcpListener, shared: Arc<Shared>) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let shared = Arc::clone(&shared);
        connections.spawn(async move {
            let mut first = [0_u8; 1];
            // 0x16 opens a TLS handshake record.
            if matches!(stream.peek(&mut first).await, Ok(1)) && first[0] == 0x16 {
                refuse_tls(stream).await;
                return;
            }
            let service = hyper::service::service_fn(move |request| {
                let shared = Arc::clone(&shared);
                async move { Ok::<_, std::convert::Infallible>(answer(&shared, request).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
        // Finished connections are reaped as new ones come.
        while connections.try_join_next().is_some() {}
    }
}

/// Answers a TLS handshake with plain HTTP, so that the client falls back to http.
async fn refuse_tls(mut stream: tokio::net::TcpStream) {
    use tokio::io::AsyncWriteExt as _;
    let _ = stream
        .write_all(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
        .await;
    let _ = stream.shutdown().await;
}

/// The answer to one request.
async fn answer(shared: &Shared, request: Request<Incoming>) -> Response<Body> {
    let path = request.uri().path().to_owned();
    let query = request.uri().query().unwrap_or_default().to_owned();
    let method = request.method().clone();
    if matches!(path.as_str(), "/v2/" | "/v2") {
        return respond(StatusCode::OK, &[], Bytes::from_static(b"{}"));
    }
    let Some(rest) = path.strip_prefix("/v2/") else {
        return not_found("NAME_UNKNOWN");
    };
    if let Some((name, upload)) = rest.split_once("/blobs/uploads/") {
        let name = name.to_owned();
        return match (method, upload) {
            (Method::POST, "") => start_upload(shared, &name, &query, request).await,
            (Method::PATCH | Method::PUT, id) => {
                let last = request.method() == Method::PUT;
                continue_upload(shared, (&name, id), &query, last, request).await
            }
            _ => not_found("UNSUPPORTED"),
        };
    }
    if let Some((_, digest)) = rest.rsplit_once("/blobs/") {
        return match digest.parse::<Digest>() {
            Ok(digest) => blob(shared, &method, &digest).await,
            Err(_) => not_found("DIGEST_INVALID"),
        };
    }
    if let Some((name, reference)) = rest.rsplit_once("/manifests/") {
        let name = name.to_owned();
        let reference = reference.to_owned();
        return if method == Method::PUT {
            put_manifest(shared, (&name, &reference), request).await
        } else {
            manifest(shared, &method, (&name, &reference))
        };
    }
    not_found("NAME_UNKNOWN")
}

/// A response with `headers` and `body`.
fn respond(status: StatusCode, headers: &[(&str, String)], body: Bytes) -> Response<Body> {
    let length = body.len();
    let mut response = Response::new(Full::new(body).map_err(|never| match never {}).boxed());
    *response.status_mut() = status;
    let map = response.headers_mut();
    map.insert(
        "docker-distribution-api-version",
        http::HeaderValue::from_static("registry/2.0"),
    );
    map.insert("content-length", http::HeaderValue::from(length));
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(name.as_bytes()),
            http::HeaderValue::from_str(value),
        ) {
            map.insert(name, value);
        }
    }
    response
}

/// A distribution API error.
fn not_found(code: &str) -> Response<Body> {
    error(StatusCode::NOT_FOUND, code, "not here")
}

fn error(status: StatusCode, code: &str, message: &str) -> Response<Body> {
    /// The distribution API's error body.
    #[derive(serde::Serialize)]
    struct Errors<'a> {
        errors: [Error<'a>; 1],
    }
    #[derive(serde::Serialize)]
    struct Error<'a> {
        code: &'a str,
        message: &'a str,
    }
    let body = serde_json::to_vec(&Errors {
        errors: [Error { code, message }],
    })
    .expect("an error body serializes");
    respond(
        status,
        &[("content-type", "application/json".to_owned())],
        Bytes::from(body),
    )
}

/// A response to HEAD: the headers of a body of `size` bytes, with none sent.
fn head(digest: &Digest, size: u64, media_type: Option<&str>) -> Response<Body> {
    let mut response = respond(
        StatusCode::OK,
        &[("docker-content-digest", digest.to_string())],
        Bytes::new(),
    );
    let map = response.headers_mut();
    map.insert("content-length", http::HeaderValue::from(size));
    if let Some(media_type) = media_type.and_then(|text| http::HeaderValue::from_str(text).ok()) {
        map.insert("content-type", media_type);
    }
    response
}

/// `HEAD|GET /v2/NAME/blobs/DIGEST`.
async fn blob(shared: &Shared, method: &Method, digest: &Digest) -> Response<Body> {
    let (offered, held) = {
        let state = shared.state();
        let offered = match (state.offered.get(digest), state.received.get(digest)) {
            (Some(offered), _) => Some(offered.clone()),
            (None, Some(stored)) => Some(Offered::File(stored.clone())),
            (None, None) => None,
        };
        (offered, state.held.get(digest).copied())
    };
    let size = match (&offered, held) {
        (Some(Offered::Bytes(bytes)), _) => bytes.len() as u64,
        (Some(Offered::File(stored)), _) => stored.size,
        (None, Some(size)) => size,
        (None, None) => return not_found("BLOB_UNKNOWN"),
    };
    if *method == Method::HEAD {
        return head(digest, size, Some("application/octet-stream"));
    }
    let headers = [
        ("docker-content-digest", digest.to_string()),
        ("content-type", "application/octet-stream".to_owned()),
    ];
    match offered {
        Some(Offered::Bytes(bytes)) => respond(StatusCode::OK, &headers, bytes),
        Some(Offered::File(stored)) => match tokio::fs::File::open(&stored.path).await {
            Ok(file) => {
                let frames =
                    tokio_util::io::ReaderStream::with_capacity(file, 1 << 20).map_ok(Frame::data);
                let mut response = Response::new(BodyExt::boxed(StreamBody::new(frames)));
                let map = response.headers_mut();
                for (name, value) in headers {
                    map.insert(name, http::HeaderValue::from_str(&value).expect("a header"));
                }
                map.insert("content-length", http::HeaderValue::from(stored.size));
                response
            }
            Err(_) => not_found("BLOB_UNKNOWN"),
        },
        // Held, not had: the daemon was expected to hold it itself.
        None => error(
            StatusCode::NOT_FOUND,
            "BLOB_UNKNOWN",
            "forge answered this blob as present because the daemon holds it already",
        ),
    }
}

/// `POST /v2/NAME/blobs/uploads/`: a mount of a blob the conduit has is done at once; anything
/// else starts an upload, whose bytes may come with this request (a monolithic upload).
async fn start_upload(
    shared: &Shared,
    name: &str,
    query: &str,
    request: Request<Incoming>,
) -> Response<Body> {
    let asked = |key: &str| {
        url::form_urlencoded::parse(query.as_bytes())
            .find(|(k, _)| k == key)
            .map(|(_, value)| value.into_owned())
    };
    if let Some(mounted) = asked("mount").and_then(|text| text.parse::<Digest>().ok()) {
        let has = {
            let state = shared.state();
            state.held.contains_key(&mounted) || state.received.contains_key(&mounted)
        };
        if has {
            return respond(
                StatusCode::CREATED,
                &[
                    ("location", format!("/v2/{name}/blobs/{mounted}")),
                    ("docker-content-digest", mounted.to_string()),
                ],
                Bytes::new(),
            );
        }
    }
    let id = {
        let mut state = shared.state();
        state.next_upload += 1;
        format!("u{}", state.next_upload)
    };
    let path = shared.spool.join(format!("upload-{id}"));
    let file = match std::fs::File::create(&path) {
        Ok(file) => file,
        Err(error) => return error_response(&error),
    };
    let upload = Upload {
        file: std::io::BufWriter::with_capacity(1 << 20, file),
        path,
        hasher: sha2::Sha256::new(),
        size: 0,
    };
    shared.state().uploads.insert(id.clone(), upload);
    if let Some(digest) = asked("digest") {
        let last = format!("digest={digest}");
        return continue_upload(shared, (name, &id), &last, true, request).await;
    }
    drop(request);
    respond(
        StatusCode::ACCEPTED,
        &[
            ("location", format!("/v2/{name}/blobs/uploads/{id}")),
            ("range", "0-0".to_owned()),
            ("docker-upload-uuid", id),
        ],
        Bytes::new(),
    )
}

/// A failure of the conduit's own, such as a spool file it cannot write.
fn error_response(failure: &std::io::Error) -> Response<Body> {
    error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "UNKNOWN",
        &failure.to_string(),
    )
}

/// `PATCH` (more bytes) or `PUT ?digest=` (the last bytes, then the check) of upload `id`.
async fn continue_upload(
    shared: &Shared,
    (name, id): (&str, &str),
    query: &str,
    last: bool,
    request: Request<Incoming>,
) -> Response<Body> {
    let Some(mut upload) = shared.state().uploads.remove(id) else {
        return not_found("BLOB_UPLOAD_UNKNOWN");
    };
    let mut body = request.into_body();
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else {
            let _ = std::fs::remove_file(&upload.path);
            return error(
                StatusCode::BAD_REQUEST,
                "BLOB_UPLOAD_INVALID",
                "the body broke off",
            );
        };
        if let Ok(data) = frame.into_data() {
            if let Err(error) = upload.file.write_all(&data) {
                let _ = std::fs::remove_file(&upload.path);
                return error_response(&error);
            }
            upload.hasher.update(&data);
            upload.size += data.len() as u64;
        }
    }
    if !last {
        let range = format!("0-{}", upload.size.saturating_sub(1));
        shared.state().uploads.insert(id.to_owned(), upload);
        return respond(
            StatusCode::ACCEPTED,
            &[
                ("location", format!("/v2/{name}/blobs/uploads/{id}")),
                ("range", range),
                ("docker-upload-uuid", id.to_owned()),
            ],
            Bytes::new(),
        );
    }
    finish_upload(shared, name, query, upload)
}

/// Ends an upload: its bytes are checked against the digest asked for and kept under it.
fn finish_upload(shared: &Shared, name: &str, query: &str, upload: Upload) -> Response<Body> {
    let Upload {
        file,
        path,
        hasher,
        size,
    } = upload;
    let asked =
        url::form_urlencoded::parse(query.as_bytes()).find_map(|(key, value)| match key.as_ref() {
            "digest" => value.parse::<Digest>().ok(),
            _ => None,
        });
    let digest = Digest::from_sha256(&hasher.finalize());
    let flushed = file.into_inner().map_err(|error| error.into_error());
    if asked.as_ref() != Some(&digest) || flushed.is_err() {
        let _ = std::fs::remove_file(&path);
        return error(
            StatusCode::BAD_REQUEST,
            "DIGEST_INVALID",
            "the bytes do not have the digest given",
        );
    }
    let kept = shared.spool.join(format!("blob-{}", digest.hex()));
    if let Err(error) = std::fs::rename(&path, &kept) {
        return error_response(&error);
    }
    {
        let mut state = shared.state();
        state.received_bytes += size;
        state
            .received
            .insert(digest.clone(), Stored { path: kept, size });
    }
    respond(
        StatusCode::CREATED,
        &[
            ("location", format!("/v2/{name}/blobs/{digest}")),
            ("docker-content-digest", digest.to_string()),
        ],
        Bytes::new(),
    )
}

/// `PUT /v2/NAME/manifests/REFERENCE`: kept under its digest, and under the tag when the
/// reference is one.
async fn put_manifest(
    shared: &Shared,
    (name, reference): (&str, &str),
    request: Request<Incoming>,
) -> Response<Body> {
    let media_type = request
        .headers()
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let limited = http_body_util::Limited::new(request.into_body(), DOCUMENT_LIMIT as usize);
    let Ok(collected) = limited.collect().await else {
        return error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "MANIFEST_INVALID",
            "a manifest larger than forge reads",
        );
    };
    let bytes = collected.to_bytes();
    let digest = sha256(&bytes);
    {
        let mut state = shared.state();
        state
            .manifests
            .insert(digest.clone(), Document { media_type, bytes });
        if reference.parse::<Digest>().is_err() {
            state
                .tags
                .insert((name.to_owned(), reference.to_owned()), digest.clone());
        }
    }
    respond(
        StatusCode::CREATED,
        &[
            ("location", format!("/v2/{name}/manifests/{digest}")),
            ("docker-content-digest", digest.to_string()),
        ],
        Bytes::new(),
    )
}

/// `HEAD|GET /v2/NAME/manifests/REFERENCE`.
fn manifest(shared: &Shared, method: &Method, (name, reference): (&str, &str)) -> Response<Body> {
    let state = shared.state();
    let digest = match reference.parse::<Digest>() {
        Ok(digest) => Some(digest),
        Err(_) => state
            .tags
            .get(&(name.to_owned(), reference.to_owned()))
            .cloned(),
    };
    let Some((digest, document)) =
        digest.and_then(|digest| state.manifests.get(&digest).cloned().map(|d| (digest, d)))
    else {
        return not_found("MANIFEST_UNKNOWN");
    };
    if *method == Method::HEAD {
        return head(
            &digest,
            document.bytes.len() as u64,
            Some(&document.media_type),
        );
    }
    respond(
        StatusCode::OK,
        &[
            ("docker-content-digest", digest.to_string()),
            ("content-type", document.media_type),
        ],
        document.bytes,
    )
}
