//! A project's releases on 127.0.0.1, laid out as GitHub serves them: `GET
//! /download/v<version>/<file>` answers the file published for that version, and `GET
//! /repos/o/r/releases` lists the releases in the GitHub releases API's shape (`tag_name`,
//! `draft`, `prerelease`, `assets[].name` and `browser_download_url`), newest first, two to a
//! page with a `Link: <...>; rel="next"` header to the next page. Anything else is 404. `wheel`
//! builds a real (tiny) wheel with Python's zipfile, so that pip can install it.

use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

use crate::support::http::{FolderServer, Request, respond};

/// The file in the server's folder that holds where downloads redirect to.
const REDIRECT: &str = ".redirect";

/// A running release server; stops when dropped.
pub struct ReleaseServer {
    folder: FolderServer,
}

impl ReleaseServer {
    /// Starts a server with nothing released on a free port.
    pub fn start() -> Self {
        Self::start_on("127.0.0.1")
    }

    /// Starts a server with nothing released on a free port of the loopback address `ip`.
    pub fn start_on(ip: &str) -> Self {
        Self {
            folder: FolderServer::start_on(ip, serve),
        }
    }

    /// `IP:PORT`.
    pub fn address(&self) -> &str {
        self.folder.address()
    }

    /// The URL template of its files, as a wheel set's `url` takes it.
    pub fn url_template(&self) -> String {
        format!(
            "http://{}/download/v{{version}}/{{file}}",
            self.folder.address()
        )
    }

    /// The GitHub releases API list of the project.
    pub fn releases_url(&self) -> String {
        format!("http://{}/repos/o/r/releases", self.folder.address())
    }

    /// Marks release `version` a draft (left out of every listing but the API's).
    pub fn draft(&self, version: &str) -> &Self {
        self.mark(version, "draft")
    }

    /// Marks release `version` a pre-release.
    pub fn prerelease(&self, version: &str) -> &Self {
        self.mark(version, "prerelease")
    }

    fn mark(&self, version: &str, mark: &str) -> &Self {
        let folder = self.folder.root().join(format!("v{version}"));
        std::fs::create_dir_all(&folder).expect("a release folder");
        std::fs::write(self.folder.root().join(format!("v{version}.{mark}")), "").expect("a mark");
        self
    }

    /// The request paths served so far.
    pub fn requests(&self) -> Vec<String> {
        self.folder.requests()
    }

    /// The URL of `file` at `version`.
    pub fn url(&self, version: &str, file: &str) -> String {
        format!(
            "http://{}/download/v{version}/{file}",
            self.folder.address()
        )
    }

    /// Answers every download with a redirect to the same path under `base` (`http://IP:PORT`).
    pub fn redirect_downloads_to(&self, base: &str) -> &Self {
        std::fs::write(self.folder.root().join(REDIRECT), base).expect("the redirect base");
        self
    }

    /// Publishes `bytes` as `file` of release `version` (replacing what was there).
    pub fn publish(&self, version: &str, file: &str, bytes: &[u8]) -> &Self {
        let folder = self.folder.root().join(format!("v{version}"));
        std::fs::create_dir_all(&folder).expect("a release folder");
        std::fs::write(folder.join(file), bytes).expect("write a release file");
        self
    }
}

/// The sha256 of `bytes`, in hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// A wheel file named `file` (its name and version read from the file name) whose one module
/// holds `marker`, built by Python's zipfile.
pub fn wheel(file: &str, marker: &str) -> Vec<u8> {
    let (name, version) = {
        let mut parts = file.trim_end_matches(".whl").split('-');
        (parts.next().unwrap(), parts.next().unwrap())
    };
    wheel_with_metadata(file, marker, &format!("Name: {name}\nVersion: {version}\n"))
}

/// `wheel`, its METADATA headers (after `Metadata-Version`) being `headers`: a wheel as a build
/// backend writes it, `WHEEL` with one `Tag:` line per tag of the name and `RECORD` with the
/// sha256 of every other file, so pip installs it with those hashes.
pub fn wheel_with_metadata(file: &str, marker: &str, headers: &str) -> Vec<u8> {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let stem = file.trim_end_matches(".whl");
    let mut parts = stem.split('-');
    let (name, version) = (parts.next().unwrap(), parts.next().unwrap());
    let triple: Vec<&str> = stem.rsplitn(4, '-').take(3).collect();
    let [platforms, abis, pythons] = triple[..] else {
        panic!("{file} is not a wheel's name");
    };
    let mut tags = String::new();
    for python in pythons.split('.') {
        for abi in abis.split('.') {
            for platform in platforms.split('.') {
                tags.push_str(&format!("Tag: {python}-{abi}-{platform}\n"));
            }
        }
    }
    let info = format!("{name}-{version}.dist-info");
    let files = [
        (
            format!("{name}/__init__.py"),
            format!("MARKER = {marker:?}\n"),
        ),
        (
            format!("{info}/METADATA"),
            format!("Metadata-Version: 2.1\n{headers}"),
        ),
        (
            format!("{info}/WHEEL"),
            format!("Wheel-Version: 1.0\nGenerator: forge-tests\nRoot-Is-Purelib: true\n{tags}"),
        ),
    ];
    let mut record = String::new();
    for (path, text) in &files {
        use base64::Engine as _;
        use sha2::Digest as _;
        let hash = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(sha2::Sha256::digest(text.as_bytes()));
        record.push_str(&format!("{path},sha256={hash},{}\n", text.len()));
        let path = folder.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    record.push_str(&format!("{info}/RECORD,,\n"));
    std::fs::write(folder.path().join(&info).join("RECORD"), record).unwrap();
    let out = folder.path().join(file);
    let status = Command::new("python3")
        .args(["-m", "zipfile", "-c"])
        .arg(&out)
        .arg(name)
        .arg(&info)
        .current_dir(folder.path())
        .status()
        .expect("python3 builds the wheel");
    assert!(status.success(), "python3 -m zipfile failed");
    std::fs::read(out).unwrap()
}

fn serve(mut stream: TcpStream, root: &Path, requests: &Mutex<Vec<String>>) {
    let Some(request) = Request::read(&stream) else {
        return;
    };
    let path = request.target.clone();
    let mut log = requests.lock().expect("the request log");
    log.push(path.clone());
    // Every credential sent, to say where one went.
    if let Some(authorization) = request.header("authorization") {
        log.push(format!("authorization {path} {authorization}"));
    }
    drop(log);
    if let Some(query) = path.strip_prefix("/repos/o/r/releases") {
        let address = stream.local_addr().expect("an address").to_string();
        let (body, next) = releases_page(root, &address, query);
        let link = next.map(|next| format!("<{next}>; rel=\"next\""));
        let mut headers = vec![("Content-Type", "application/json")];
        if let Some(link) = &link {
            headers.push(("Link", link));
        }
        respond(&mut stream, "200 OK", &headers, body.as_bytes());
        return;
    }
    if path.starts_with("/download/")
        && let Ok(base) = std::fs::read_to_string(root.join(REDIRECT))
    {
        let location = format!("{base}{path}");
        respond(&mut stream, "302 Found", &[("Location", &location)], b"");
        return;
    }
    let file = path
        .strip_prefix("/download/")
        .map(|rest| rest.replace("%2B", "+"))
        .filter(|rest| !rest.contains("..") && rest.matches('/').count() == 1)
        .and_then(|rest| std::fs::read(root.join(rest)).ok());
    let (status, body) = match file {
        Some(bytes) => ("200 OK", bytes),
        None => ("404 Not Found", b"not found\n".to_vec()),
    };
    let headers = [("Content-Type", "application/octet-stream")];
    respond(&mut stream, status, &headers, &body);
}

/// The page of the releases list `query` asks for (`?page=N`, else the first), and the URL of
/// the next page if there is one.
fn releases_page(root: &Path, address: &str, query: &str) -> (String, Option<String>) {
    let page: usize = query
        .split(['?', '&'])
        .find_map(|part| part.strip_prefix("page="))
        .and_then(|page| page.parse().ok())
        .unwrap_or(1);
    let mut versions: Vec<String> = std::fs::read_dir(root)
        .expect("the release folder")
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.path().is_dir())
        .filter_map(|entry| {
            entry
                .file_name()
                .to_str()?
                .strip_prefix('v')
                .map(ToOwned::to_owned)
        })
        .collect();
    // Newest first, as the API lists them (by the numbers of the version, enough for the tests).
    let key = |version: &String| -> Vec<u64> {
        version
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|part| part.parse().ok())
            .collect()
    };
    versions.sort_by_key(|version| std::cmp::Reverse(key(version)));
    let releases: Vec<serde_json::Value> = versions
        .iter()
        .map(|version| {
            let mut assets: Vec<String> = std::fs::read_dir(root.join(format!("v{version}")))
                .expect("a release")
                .filter_map(|entry| Some(entry.ok()?.file_name().to_str()?.to_owned()))
                .collect();
            assets.sort();
            serde_json::json!({
                "tag_name": format!("v{version}"),
                "draft": root.join(format!("v{version}.draft")).exists(),
                "prerelease": root.join(format!("v{version}.prerelease")).exists(),
                "assets": assets.iter().map(|name| serde_json::json!({
                    "name": name,
                    "browser_download_url": format!("http://{address}/download/v{version}/{}", name.replace('+', "%2B")),
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let chunk: Vec<serde_json::Value> = releases
        .iter()
        .skip((page - 1) * 2)
        .take(2)
        .cloned()
        .collect();
    let next = (releases.len() > page * 2)
        .then(|| format!("http://{address}/repos/o/r/releases?page={}", page + 1));
    (serde_json::Value::Array(chunk).to_string(), next)
}
