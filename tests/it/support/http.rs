//! The HTTP/1.1 the harness's small servers speak: one request read from a connection (its
//! line, headers and body), one answer written that closes it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Mutex;

use super::LoopbackServer;

/// A server whose answers come from a temporary folder the test fills (a package index, a
/// project's releases); it stops before its folder goes.
pub struct FolderServer {
    // Dropped first: the server stops before its folder goes.
    server: LoopbackServer,
    root: tempfile::TempDir,
}

impl FolderServer {
    /// Starts `serve` on a free port of 127.0.0.1 with an empty folder.
    pub fn start(serve: fn(TcpStream, &Path, &Mutex<Vec<String>>)) -> Self {
        Self::start_on("127.0.0.1", serve)
    }

    /// Starts `serve` on a free port of the loopback address `ip` with an empty folder.
    pub fn start_on(ip: &str, serve: fn(TcpStream, &Path, &Mutex<Vec<String>>)) -> Self {
        let root = tempfile::tempdir().expect("a temporary folder");
        let folder = root.path().to_owned();
        let server =
            LoopbackServer::start_on(ip, move |stream, requests| serve(stream, &folder, requests));
        Self { server, root }
    }

    /// The folder its answers come from.
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// `IP:PORT`.
    pub fn address(&self) -> &str {
        self.server.address()
    }

    /// What it logged so far.
    pub fn requests(&self) -> Vec<String> {
        self.server.requests()
    }
}

/// One request as a server read it.
pub struct Request {
    /// `GET`, `POST`, `HEAD`...
    pub method: String,
    /// The request target: path and query.
    pub target: String,
    headers: Vec<(String, String)>,
    reader: BufReader<TcpStream>,
}

impl Request {
    /// Reads the request line and headers from `stream`; `None` when the client sent no request
    /// line (a port probe, or the accept loop woken to stop).
    pub fn read(stream: &TcpStream) -> Option<Self> {
        let mut reader = BufReader::new(stream.try_clone().ok()?);
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let mut parts = line.split_whitespace();
        let (method, target) = (parts.next()?.to_owned(), parts.next()?.to_owned());
        let mut headers = Vec::new();
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
            }
        }
        Some(Self {
            method,
            target,
            headers,
            reader,
        })
    }

    /// The value of header `name` (any case), if it was sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(sent, _)| *sent == name)
            .map(|(_, value)| value.as_str())
    }

    /// Each header as sent: its name in lowercase, and its value.
    pub fn headers(&self) -> impl Iterator<Item = (&str, &str)> {
        self.headers
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()))
    }

    /// The body sent with `Transfer-Encoding: chunked`, its chunks joined; `None` when the
    /// client closed before the last chunk.
    pub fn chunked_body(&mut self) -> Option<Vec<u8>> {
        let mut body = Vec::new();
        loop {
            let mut size = String::new();
            self.reader.read_line(&mut size).ok()?;
            let size = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
            // The chunk and the line end after it (after the last, empty one: no trailers).
            let mut chunk = vec![0; size + 2];
            self.reader.read_exact(&mut chunk).ok()?;
            if size == 0 {
                return Some(body);
            }
            body.extend_from_slice(&chunk[..size]);
        }
    }

    /// The body its `Content-Length` announces (empty without one); `None` when the client
    /// closed before sending it all.
    pub fn body(&mut self) -> Option<Vec<u8>> {
        let length = self
            .header("content-length")
            .and_then(|value| value.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; length];
        self.reader.read_exact(&mut body).ok()?;
        Some(body)
    }
}

/// Writes an answer with `status` (`200 OK`), `headers`, a `Content-Length` and
/// `Connection: close`, then `body`. A client that went away is not the server's failure.
pub fn respond(stream: &mut TcpStream, status: &str, headers: &[(&str, &str)], body: &[u8]) {
    write_answer(stream, status, headers, body, true);
}

/// `respond` to a `HEAD` request: the same head, no body.
pub fn respond_to_head(
    stream: &mut TcpStream,
    status: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) {
    write_answer(stream, status, headers, body, false);
}

fn write_answer(
    stream: &mut TcpStream,
    status: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    with_body: bool,
) {
    let mut head = format!("HTTP/1.1 {status}\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    let _ = stream.write_all(head.as_bytes());
    if with_body {
        let _ = stream.write_all(body);
    }
    let _ = stream.flush();
}
