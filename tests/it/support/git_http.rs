//! A git server on 127.0.0.1 for the tests: git's own `git http-backend` behind a small CGI
//! gateway, so that forge's smart HTTP transport talks to the same server code as git's.
//! One thread accepts connections; each request runs `git http-backend` once with the CGI
//! variables set, its body on stdin, and its CGI answer turned into an HTTP response.

use std::io::Write;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use crate::support::LoopbackServer;
use crate::support::http::Request;

/// A running server for the bare repositories under one folder; stops when dropped.
pub struct GitHttpServer {
    server: LoopbackServer,
}

impl GitHttpServer {
    /// Serves the repositories under `root` (`root/NAME.git` at `/NAME.git`) on a free port.
    pub fn start(root: &Path) -> Self {
        let root = root.to_owned();
        Self {
            server: LoopbackServer::start(move |stream, requests| serve(stream, &root, requests)),
        }
    }

    /// The URL of the repository at `path` under the root.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}/{path}", self.server.address())
    }

    /// Every request so far, as `METHOD /path?query (user agent)`.
    pub fn requests(&self) -> Vec<String> {
        self.server.requests()
    }
}

fn serve(stream: TcpStream, root: &Path, requests: &Mutex<Vec<String>>) {
    let Some(mut request) = Request::read(&stream) else {
        return;
    };
    let user_agent = request.header("user-agent").unwrap_or_default();
    requests.lock().unwrap().push(format!(
        "{} {} ({user_agent})",
        request.method, request.target
    ));
    let content_type = request
        .header("content-type")
        .unwrap_or_default()
        .to_owned();
    let Some(body) = request.body() else {
        return;
    };
    let (path, query) = request
        .target
        .split_once('?')
        .unwrap_or((&request.target, ""));
    let answer = backend(root, &request.method, path, query, &content_type, &body);
    let _ = respond(stream, &answer);
}

/// Runs `git http-backend` for one request and returns its CGI output.
fn backend(
    root: &Path,
    method: &str,
    path: &str,
    query: &str,
    content_type: &str,
    body: &[u8],
) -> Vec<u8> {
    let mut child = Command::new("git")
        .arg("http-backend")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GIT_PROJECT_ROOT", PathBuf::from(root))
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REQUEST_METHOD", method)
        .env("PATH_INFO", path)
        .env("QUERY_STRING", query)
        .env("CONTENT_TYPE", content_type)
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("REMOTE_ADDR", "127.0.0.1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("git http-backend starts");
    let mut stdin = child.stdin.take().expect("a stdin");
    let body = body.to_vec();
    // Written from a thread: a large request and a large answer would otherwise block each other.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&body);
    });
    let output = child.wait_with_output().expect("git http-backend runs");
    let _ = writer.join();
    output.stdout
}

/// Turns a CGI answer (headers, a blank line, the body; `Status:` for anything but 200) into an
/// HTTP/1.1 response that closes the connection.
fn respond(mut stream: TcpStream, answer: &[u8]) -> std::io::Result<()> {
    let split = answer
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .map(|at| (at, at + 4))
        .or_else(|| {
            answer
                .windows(2)
                .position(|window| window == b"\n\n")
                .map(|at| (at, at + 2))
        });
    let Some((end, start)) = split else {
        return stream.write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n");
    };
    let head = String::from_utf8_lossy(&answer[..end]);
    let body = &answer[start..];
    let mut status = "200 OK".to_owned();
    let mut headers = String::new();
    for line in head.lines() {
        match line.split_once(':') {
            Some((name, value)) if name.eq_ignore_ascii_case("status") => {
                status = value.trim().to_owned();
            }
            Some(_) => headers.push_str(&format!("{line}\r\n")),
            None => {}
        }
    }
    stream.write_all(
        format!(
            "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .as_bytes(),
    )?;
    stream.write_all(body)
}
