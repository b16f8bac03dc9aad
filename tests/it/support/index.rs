//! A package index on 127.0.0.1 for the tests: a thread that serves the simple repository API
//! from a temporary folder holding one folder per package (PEP 503 normalised names) with the
//! distribution files in it. `GET /simple/<name>/` answers PEP 691 JSON, or the PEP 503 HTML
//! page when the request does not accept JSON; `GET /pypi/<name>/json` answers as PyPI's JSON
//! API does. A file with a `.yanked` twin is marked yanked; one with a `.requires-python` twin
//! declares that range; one with a `.metadata` twin offers it as its PEP 658 metadata file
//! (`core-metadata` in the JSON page, served at `/files/<name>/<file>.metadata`).
//!
//! Each file's sha256 is on the JSON page (`hashes`) and after its HTML link (`#sha256=`): the
//! served file's own, or the one its `.sha256` twin records. `refuse_ranges` makes the server
//! answer a range request with the whole file, as servers without range support do.
//!
//! `load_fixture` publishes a package recorded from the real index by
//! `tests/fixtures/index/record.py`.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::support::http::{FolderServer, Request, respond};

/// A running index; stops when dropped.
pub struct IndexServer {
    folder: FolderServer,
}

impl IndexServer {
    /// Starts an empty index on a free port.
    pub fn start() -> Self {
        Self {
            folder: FolderServer::start(serve),
        }
    }

    /// The index URL, as pip's `--index-url` takes it.
    pub fn url(&self) -> String {
        format!("http://{}/simple", self.folder.address())
    }

    /// The base of the PyPI-style JSON API (`/pypi/<name>/json`).
    pub fn json_api_url(&self) -> String {
        format!("http://{}/pypi", self.folder.address())
    }

    /// Publishes `files` (file names) of `package`.
    pub fn publish(&self, package: &str, files: &[&str]) -> &Self {
        let folder = self.folder.root().join(normalize(package));
        std::fs::create_dir_all(&folder).expect("package folder");
        for file in files {
            std::fs::write(folder.join(file), format!("{file}\n")).expect("write a file");
        }
        self
    }

    /// Publishes a wheel of `package` at `version` (`0.6.15`, `0.6.15+cu130`).
    pub fn wheel(&self, package: &str, version: &str) -> &Self {
        let name = normalize(package).replace('-', "_");
        self.publish(
            package,
            &[&format!(
                "{name}-{version}-py3-none-manylinux_2_28_aarch64.whl"
            )],
        )
    }

    /// Publishes `file` of `package` with its content, served (with range requests) at the
    /// `url` the JSON page gives.
    pub fn publish_bytes(&self, package: &str, file: &str, bytes: &[u8]) -> &Self {
        let folder = self.folder.root().join(normalize(package));
        std::fs::create_dir_all(&folder).expect("package folder");
        std::fs::write(folder.join(file), bytes).expect("write a file");
        self
    }

    /// From now on lists `hash` as the sha256 of `file` of `package`, whatever the file holds:
    /// a mirror whose listing and files disagree.
    pub fn list_sha256(&self, package: &str, file: &str, hash: &str) -> &Self {
        let folder = self.folder.root().join(normalize(package));
        std::fs::write(folder.join(format!("{file}.sha256")), hash).expect("write the hash");
        self
    }

    /// How many bytes of `/files/...` paths ending in `file` the server sent, and in how many
    /// answers.
    pub fn sent(&self, file: &str) -> (usize, usize) {
        self.requests()
            .iter()
            .filter_map(|line| line.strip_prefix("sent "))
            .filter_map(|line| line.rsplit_once(' '))
            .filter(|(path, _)| path.ends_with(file))
            .fold((0, 0), |(bytes, answers), (_, sent)| {
                (bytes + sent.parse::<usize>().unwrap_or(0), answers + 1)
            })
    }

    /// Publishes `file` of `package` with the PEP 691 `requires-python` it declares.
    pub fn publish_requiring(&self, package: &str, file: &str, requires_python: &str) -> &Self {
        self.publish(package, &[file]);
        let path = self
            .folder
            .root()
            .join(normalize(package))
            .join(format!("{file}.requires-python"));
        std::fs::write(path, requires_python).expect("write the requirement");
        self
    }

    /// Publishes a package recorded from the real index (`tests/fixtures/index/NAME.json`):
    /// its wheel names, their `requires-python` and yanked marks and sha256 (listed, though the
    /// stand-in served has another), and for every version the METADATA headers, offered as PEP
    /// 658 metadata files.
    pub fn load_fixture(&self, package: &str) -> &Self {
        let path = crate::support::repository_root()
            .join("tests/fixtures/index")
            .join(format!("{package}.json"));
        let text = std::fs::read_to_string(&path).expect("a recorded fixture");
        let document: serde_json::Value = serde_json::from_str(&text).expect("fixture JSON");
        let folder = self.folder.root().join(normalize(package));
        for file in document["files"].as_array().expect("files") {
            let name = file["filename"].as_str().expect("a file name");
            self.publish(package, &[name]);
            if let Some(range) = file["requires-python"].as_str() {
                std::fs::write(folder.join(format!("{name}.requires-python")), range)
                    .expect("write the requirement");
            }
            if file["yanked"] != serde_json::json!(false) {
                self.yank(package, name);
            }
            // The real file's hash, which the stand-in served here does not have.
            if let Some(sha256) = file["sha256"].as_str() {
                std::fs::write(folder.join(format!("{name}.sha256")), sha256)
                    .expect("write the hash");
            }
            let version = name.split('-').nth(1).expect("a version");
            if let Some(metadata) = document["metadata"][version].as_str() {
                std::fs::write(folder.join(format!("{name}.metadata")), metadata)
                    .expect("write the metadata");
            }
        }
        self
    }

    /// From now on, answers every request without these HTTP Basic credentials with 401.
    pub fn require_login(&self, user: &str, password: &str) -> &Self {
        use base64::Engine as _;
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        std::fs::write(self.folder.root().join(LOGIN), format!("Basic {token}"))
            .expect("write the login");
        self
    }

    /// From now on, answers every range request with the whole file (200).
    pub fn refuse_ranges(&self) -> &Self {
        std::fs::write(self.folder.root().join(NO_RANGES), "").expect("write the switch");
        self
    }

    /// Marks a published file yanked.
    pub fn yank(&self, package: &str, file: &str) -> &Self {
        let path = self
            .folder
            .root()
            .join(normalize(package))
            .join(format!("{file}.yanked"));
        std::fs::write(path, "yanked for the test\n").expect("write the marker");
        self
    }

    /// The paths requested so far.
    pub fn requests(&self) -> Vec<String> {
        self.folder.requests()
    }
}

/// The file in the index's folder that turns range requests off (not a package folder: no
/// normalised name starts with a dot).
const NO_RANGES: &str = ".no-ranges";

/// The file that holds the `Authorization` value every request must carry, when there is one.
const LOGIN: &str = ".login";

fn normalize(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        let c = c.to_ascii_lowercase();
        if matches!(c, '.' | '_' | '-') {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn serve(mut stream: TcpStream, root: &Path, requests: &Mutex<Vec<String>>) {
    let Some(request) = Request::read(&stream) else {
        return;
    };
    let path = request.target.clone();
    let log = |line: String| requests.lock().expect("the request log").push(line);
    log(path.clone());
    if let Ok(login) = std::fs::read_to_string(root.join(LOGIN))
        && Some(login.as_str()) != request.header("authorization")
    {
        log(format!("refused {path}"));
        let headers = [
            ("WWW-Authenticate", "Basic realm=\"index\""),
            ("Content-Type", "text/plain"),
        ];
        respond(
            &mut stream,
            "401 Unauthorized",
            &headers,
            b"login required\n",
        );
        return;
    }
    if let Some(file) = distribution(root, &path) {
        let range = request
            .header("range")
            .filter(|_| !root.join(NO_RANGES).exists());
        let (status, content_range, body) = file_answer(&file, range);
        log(format!("sent {path} {}", body.len()));
        let mut headers = vec![("Content-Type", "application/octet-stream")];
        if let Some(content_range) = &content_range {
            headers.push(("Content-Range", content_range));
        }
        respond(&mut stream, status, &headers, body);
        return;
    }
    let accept = request.header("accept").unwrap_or_default();
    let (status, content_type, body) = answer(root, &path, accept);
    respond(
        &mut stream,
        status,
        &[("Content-Type", content_type)],
        body.as_bytes(),
    );
}

/// The bytes of a distribution file `/files/<name>/<file>` published with `publish_bytes`.
fn distribution(root: &Path, path: &str) -> Option<Vec<u8>> {
    let (name, file) = path.strip_prefix("/files/")?.split_once('/')?;
    if is_twin(file)
        || [name, file]
            .iter()
            .any(|part| part.contains("..") || part.contains('/'))
    {
        return None;
    }
    let bytes = std::fs::read(root.join(name).join(file)).ok()?;
    // `publish` writes the file's name as a stand-in; only real files are served.
    (bytes != format!("{file}\n").as_bytes()).then_some(bytes)
}

/// The whole file, or the one range asked for (`bytes=A-B`, `bytes=A-`, `bytes=-N`) as 206
/// with its `Content-Range`.
fn file_answer<'a>(
    bytes: &'a [u8],
    range: Option<&str>,
) -> (&'static str, Option<String>, &'a [u8]) {
    let total = bytes.len();
    let parsed = range
        .and_then(|range| range.strip_prefix("bytes="))
        .and_then(|range| range.split_once('-'))
        .and_then(
            |(from, to)| match (from.parse::<usize>(), to.parse::<usize>()) {
                (Ok(from), Ok(to)) => Some((from, to.min(total - 1))),
                (Ok(from), Err(_)) if to.is_empty() => Some((from, total - 1)),
                (Err(_), Ok(last)) if from.is_empty() => {
                    Some((total.saturating_sub(last), total - 1))
                }
                _ => None,
            },
        )
        .filter(|(from, to)| from <= to);
    match parsed {
        Some((from, to)) => (
            "206 Partial Content",
            Some(format!("bytes {from}-{to}/{total}")),
            &bytes[from..=to],
        ),
        None => ("200 OK", None, bytes),
    }
}

/// A file that says something about another one rather than being published itself.
fn is_twin(file: &str) -> bool {
    [".yanked", ".requires-python", ".metadata", ".sha256"]
        .iter()
        .any(|suffix| file.ends_with(suffix))
}

fn answer(root: &Path, path: &str, accept: &str) -> (&'static str, &'static str, String) {
    let not_found = ("404 Not Found", "text/plain", "not found\n".to_owned());
    if let Some(rest) = path.strip_prefix("/files/") {
        // Only metadata files are served: nothing reads the (empty) distributions themselves.
        return match rest.split_once('/') {
            Some((name, file))
                if file.ends_with(".metadata")
                    && !name.contains("..")
                    && !file.contains("..")
                    && !file.contains('/') =>
            {
                std::fs::read_to_string(root.join(name).join(file))
                    .map_or(not_found, |text| ("200 OK", "text/plain", text))
            }
            _ => not_found,
        };
    }
    if let Some(name) = path
        .strip_prefix("/pypi/")
        .and_then(|rest| rest.strip_suffix("/json"))
    {
        return json_api(root, name).unwrap_or(not_found);
    }
    let Some(name) = path
        .strip_prefix("/simple/")
        .map(|rest| rest.trim_end_matches('/'))
        .filter(|name| !name.is_empty() && !name.contains('/'))
    else {
        return not_found;
    };
    simple(root, name, accept).unwrap_or(not_found)
}

/// The simple repository API's page for the package `name`: PEP 691 JSON when `accept` asks for
/// it, PEP 503 HTML otherwise; `None` for a package the index does not hold.
fn simple(root: &Path, name: &str, accept: &str) -> Option<(&'static str, &'static str, String)> {
    let folder: PathBuf = root.join(name);
    let entries = std::fs::read_dir(&folder).ok()?;
    let mut files: Vec<String> = entries
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|file| !is_twin(file))
        .collect();
    files.sort();
    Some(if accept.contains("application/vnd.pypi.simple.v1+json") {
        (
            "200 OK",
            "application/vnd.pypi.simple.v1+json",
            simple_json(&folder, name, &files),
        )
    } else {
        ("200 OK", "text/html", simple_html(&folder, name, &files))
    })
}

/// Whether `file` in `folder` is yanked.
fn yanked(folder: &Path, file: &str) -> bool {
    folder.join(format!("{file}.yanked")).exists()
}

/// The `Requires-Python` range of `file` in `folder`, if it has one.
fn requires_python(folder: &Path, file: &str) -> Option<String> {
    std::fs::read_to_string(folder.join(format!("{file}.requires-python"))).ok()
}

/// The PEP 691 JSON page of `name`, whose distributions in `folder` are `files`.
fn simple_json(folder: &Path, name: &str, files: &[String]) -> String {
    let files: Vec<serde_json::Value> = files
        .iter()
        .map(|file| {
            let mut entry = serde_json::json!({
                "filename": file,
                "url": format!("/files/{name}/{file}"),
                "hashes": { "sha256": listed_sha256(folder, file) },
                "yanked": if yanked(folder, file) { serde_json::json!("yanked for the test") } else { serde_json::json!(false) },
            });
            if let Some(range) = requires_python(folder, file) {
                entry["requires-python"] = serde_json::json!(range);
            }
            if folder.join(format!("{file}.metadata")).exists() {
                entry["core-metadata"] = serde_json::json!(true);
            }
            entry
        })
        .collect();
    let document = serde_json::json!({
        "meta": { "api-version": "1.1" },
        "name": name,
        "files": files,
    });
    document.to_string()
}

/// The PEP 503 HTML page of `name`, whose distributions in `folder` are `files`.
fn simple_html(folder: &Path, name: &str, files: &[String]) -> String {
    let mut page = String::from("<!DOCTYPE html>\n<html><body>\n");
    for file in files {
        let mut mark = if yanked(folder, file) {
            " data-yanked=\"\"".to_owned()
        } else {
            String::new()
        };
        if let Some(range) = requires_python(folder, file) {
            mark.push_str(&format!(
                " data-requires-python=\"{}\"",
                range.replace('<', "&lt;").replace('>', "&gt;")
            ));
        }
        page.push_str(&format!(
            "<a href=\"/files/{name}/{}#sha256={}\"{mark}>{file}</a><br/>\n",
            file.replace('+', "%2B"),
            listed_sha256(folder, file)
        ));
    }
    page.push_str("</body></html>\n");
    page
}

/// The sha256 of a published file, in hex.
/// The sha256 the pages list for `file`: a recorded one (`load_fixture`), else the served
/// file's own.
fn listed_sha256(folder: &Path, file: &str) -> String {
    std::fs::read_to_string(folder.join(format!("{file}.sha256")))
        .unwrap_or_else(|_| sha256_of(&folder.join(file)))
}

fn sha256_of(path: &Path) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(
        std::fs::read(path).unwrap_or_default(),
    ))
}

/// PyPI's JSON API: `releases` maps each version to its files.
fn json_api(root: &Path, name: &str) -> Option<(&'static str, &'static str, String)> {
    let folder = root.join(name);
    let mut releases = serde_json::Map::new();
    for entry in std::fs::read_dir(&folder)
        .ok()?
        .filter_map(|entry| entry.ok())
    {
        let file = entry.file_name().to_string_lossy().into_owned();
        if is_twin(&file) {
            continue;
        }
        let version = file.split('-').nth(1).unwrap_or_default().to_owned();
        let yanked = folder.join(format!("{file}.yanked")).exists();
        let files = releases
            .entry(version)
            .or_insert_with(|| serde_json::json!([]));
        files
            .as_array_mut()
            .expect("an array")
            .push(serde_json::json!({
                "filename": file,
                "yanked": yanked,
                "url": format!("/files/{name}/{file}"),
                "digests": { "sha256": listed_sha256(&folder, &file) },
            }));
    }
    let document = serde_json::json!({ "info": { "name": name }, "releases": releases });
    Some(("200 OK", "application/json", document.to_string()))
}

/// An index offering everything the default recipe pins at its current versions.
pub(crate) fn default_index() -> IndexServer {
    let index = IndexServer::start();
    for (package, version) in [
        ("flashinfer-python", "0.6.14"),
        ("flashinfer-cubin", "0.6.14"),
        ("flashinfer-jit-cache", "0.6.14+cu130"),
        ("apache-tvm-ffi", "0.1.11"),
        ("tilelang", "0.1.11"),
        ("nvidia-cutlass-dsl", "4.6.0"),
    ] {
        index.wheel(package, version);
    }
    index
}

/// An index holding what the real one offers for the default recipe's packages (recorded by
/// tests/fixtures/index/record.py, METADATA offered as PEP 658 files), plus the FlashInfer
/// wheels it lacks: the cubin (PyPI has no 0.6.14 or 0.7.4) and the jit-cache (on FlashInfer's
/// own index).
pub(crate) fn recorded_index() -> IndexServer {
    let index = IndexServer::start();
    for package in [
        "tilelang",
        "apache-tvm-ffi",
        "flashinfer-python",
        "flashinfer-cubin",
        "nvidia-cutlass-dsl",
    ] {
        index.load_fixture(package);
    }
    for version in ["0.6.14", "0.7.4"] {
        index
            .wheel("flashinfer-cubin", version)
            .wheel("flashinfer-jit-cache", &format!("{version}+cu130"));
    }
    index
}
