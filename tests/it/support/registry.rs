//! A real container registry on 127.0.0.1 for the tests: Debian's `docker-registry` with its
//! storage in a temporary folder, and images pushed to it with `skopeo copy` from an OCI
//! layout written on the spot (one layer holding one file), so no daemon and no network are
//! needed. `skopeo inspect` is the independent view of what the registry serves. A registry can
//! also be started behind HTTP Basic (its own `htpasswd` user) or behind a token realm (a JWT
//! signed with `openssl`), the two challenges registries answer with. Plain HTTP `GET` and
//! `PUT` reach its API directly, for what no client would send.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use base64::Engine as _;
use sha2::{Digest as _, Sha256};

use crate::support::http::{Request, respond};
use crate::support::images::Example;
use crate::support::{LoopbackServer, free_port, stdout_of, stop, wait_until};

/// The Docker v2 image manifest media type.
pub const MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
/// The Docker manifest list (multi-platform) media type.
pub const MANIFEST_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";

/// A running registry on a free loopback port with its storage in a temporary folder; stopped
/// when dropped.
pub struct RegistryServer {
    folder: tempfile::TempDir,
    address: String,
    port: u16,
    child: Child,
    credentials: Option<(String, String)>,
    token_server: Option<TokenServer>,
}

/// Why the registry tests cannot run here.
pub fn missing_tools() -> Option<String> {
    let missing: Vec<&str> = ["docker-registry", "skopeo", "openssl"]
        .into_iter()
        .filter(|tool| {
            Command::new(tool)
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_err()
        })
        .collect();
    (!missing.is_empty()).then(|| format!("{} not installed", missing.join(" and ")))
}

impl RegistryServer {
    /// Starts an anonymous registry on a free loopback port and waits until it answers.
    pub fn start() -> Self {
        Self::launch(Access::Anonymous)
    }

    /// Starts a registry that wants HTTP Basic credentials; the registry makes up the user and
    /// password itself (an `htpasswd` path that does not exist yet) and logs them.
    pub fn start_with_basic_auth() -> Self {
        Self::launch(Access::Basic)
    }

    /// Starts a registry that answers with a `Bearer` challenge, and the token server of its
    /// realm: a thread on loopback that hands every caller one token, a JWT signed (with the
    /// `openssl` command) by a certificate the registry trusts.
    pub fn start_with_token_auth() -> Self {
        Self::launch(Access::Token)
    }

    /// The requests the token server answered (path and query).
    pub fn token_requests(&self) -> Vec<String> {
        self.token_server
            .as_ref()
            .map(|token_server| token_server.server.requests())
            .unwrap_or_default()
    }

    /// The requests the token server answered (path and query) whose `User-Agent` starts with
    /// `agent` (`forge/`, `docker/`).
    pub fn token_requests_from(&self, agent: &str) -> Vec<String> {
        self.token_server
            .as_ref()
            .map(|token_server| {
                token_server
                    .agents
                    .lock()
                    .expect("the agent log")
                    .iter()
                    .filter_map(|line| line.strip_prefix(agent))
                    .filter_map(|rest| rest.split_once(' ').map(|(_, path)| path.to_owned()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The user and password of a registry started with `start_with_basic_auth`.
    pub fn credentials(&self) -> Option<(&str, &str)> {
        self.credentials
            .as_ref()
            .map(|(user, password)| (user.as_str(), password.as_str()))
    }

    /// The user and password of a registry started with `start_with_basic_auth`, as the
    /// environment forge takes them from.
    pub fn credentials_env(&self) -> [(&'static str, &str); 2] {
        let (user, password) = self.credentials().expect("a registry with credentials");
        [
            ("FORGE_REGISTRY_USER", user),
            ("FORGE_REGISTRY_PASSWORD", password),
        ]
    }

    fn launch(access: Access) -> Self {
        let folder = tempfile::tempdir().expect("a temporary folder");
        let port = free_port();
        let address = format!("127.0.0.1:{port}");
        let config = folder.path().join("config.yml");
        let mut text = format!(
            "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: {address}\n",
            folder.path().join("storage").display()
        );
        let mut token_server = None;
        match access {
            Access::Anonymous => {}
            Access::Basic => text.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: forge-test\n    path: {}\n",
                folder.path().join("htpasswd").display()
            )),
            Access::Token => {
                let server = TokenServer::start(folder.path());
                text.push_str(&format!(
                    "auth:\n  token:\n    realm: {}\n    service: {SERVICE}\n    issuer: {ISSUER}\n    rootcertbundle: {}\n",
                    server.realm,
                    folder.path().join("cert.pem").display()
                ));
                token_server = Some(server);
            }
        }
        std::fs::write(&config, text).expect("write the registry config");
        let log = folder.path().join("registry.log");
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("a log file"))
            .spawn()
            .unwrap_or_else(|error| {
                panic!("docker-registry cannot run ({error}); install it with `apt-get install docker-registry`")
            });
        let mut server = Self {
            folder,
            address,
            port,
            child,
            credentials: None,
            token_server,
        };
        // Listening is not enough: the API must answer, if only with a challenge.
        let failure = format!("docker-registry did not answer on {}", server.address);
        wait_until(&mut server.child, &log, &failure, || {
            get(&server.address, "/v2/", "").is_some()
        });
        if access == Access::Basic {
            // `level=warning msg="htpasswd is missing, provisioning with default user" ... password=P user=U`
            let field = |line: &str, name: &str| {
                line.split_whitespace()
                    .find_map(|part| part.strip_prefix(&format!("{name}=")))
                    .map(ToOwned::to_owned)
            };
            let logged = std::fs::read_to_string(&log).unwrap_or_default();
            let line = logged
                .lines()
                .find(|line| line.contains("provisioning with default user"))
                .unwrap_or_else(|| panic!("docker-registry logged no credentials:\n{logged}"));
            server.credentials = Some((
                field(line, "user").expect("a user"),
                field(line, "password").expect("a password"),
            ));
        }
        server
    }

    /// `127.0.0.1:PORT`.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// The loopback port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A plain HTTP GET: the status line's code, the `Docker-Content-Digest` header and the body.
    pub fn get(&self, path: &str, accept: &str) -> Option<(u16, Option<String>, Vec<u8>)> {
        get(&self.address, path, accept)
    }

    /// A plain HTTP PUT of `body` as `content_type`; the status line's code.
    pub fn put(&self, path: &str, content_type: &str, body: &[u8]) -> Option<u16> {
        let response = exchange(
            &self.address,
            &format!(
                "PUT {path} HTTP/1.0\r\nHost: {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
                self.address,
                body.len()
            ),
            body,
        )?;
        String::from_utf8_lossy(&response)
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    }

    /// Uploads `bytes` as a blob of `repository` (the distribution API's upload: a POST that
    /// opens it, a PUT of the bytes with their digest that closes it); its digest.
    #[track_caller]
    pub fn put_blob(&self, repository: &str, bytes: &[u8]) -> String {
        use sha2::Digest as _;
        let digest = format!("sha256:{}", hex::encode(sha2::Sha256::digest(bytes)));
        let opened = exchange(
            &self.address,
            &format!(
                "POST /v2/{repository}/blobs/uploads/ HTTP/1.0\r\nHost: {}\r\nContent-Length: 0\r\n\r\n",
                self.address
            ),
            &[],
        )
        .expect("the registry answers");
        let head = String::from_utf8_lossy(&opened).into_owned();
        let location = head
            .lines()
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("location")
                    .then(|| value.trim().to_owned())
            })
            .unwrap_or_else(|| panic!("an upload location in {head}"));
        let path = location
            .strip_prefix(&format!("http://{}", self.address))
            .unwrap_or(&location);
        let separator = if path.contains('?') { '&' } else { '?' };
        let code = self.put(
            &format!("{path}{separator}digest={digest}"),
            "application/octet-stream",
            bytes,
        );
        assert_eq!(code, Some(201), "PUT the blob {digest}");
        digest
    }

    /// The `Docker-Content-Digest` and the bytes of the manifest `repository:reference`, which
    /// the registry must hold, asked for as any of `accept` (asked for one type only, a
    /// registry converts the others).
    #[track_caller]
    pub fn held(&self, repository: &str, reference: &str, accept: &[&str]) -> (String, Vec<u8>) {
        let (code, digest, body) = self
            .get(&manifest_path(repository, reference), &accept.join(", "))
            .expect("the registry answers");
        assert_eq!(code, 200, "{reference}");
        (digest.expect("a Docker-Content-Digest"), body)
    }

    /// PUTs `body` as the manifest `repository:reference` of `media_type`; the registry must
    /// take it.
    #[track_caller]
    pub fn put_manifest(&self, repository: &str, reference: &str, media_type: &str, body: &[u8]) {
        let code = self.put(&manifest_path(repository, reference), media_type, body);
        assert_eq!(code, Some(201), "PUT the manifest to {reference}");
    }

    /// Pushes a one-file image as `repository:tag` and returns its manifest digest as skopeo
    /// reports it.
    pub fn push(&self, repository: &str, tag: &str) -> String {
        let layout = self.folder.path().join(format!("layout-{tag}"));
        write_layout(&layout, tag);
        let credentials = self
            .credentials()
            .map(|(user, password)| format!("--dest-creds={user}:{password}"));
        skopeo_copy(
            credentials.as_deref().as_slice(),
            &format!("oci:{}:{tag}", layout.display()),
            &format!("{}/{repository}:{tag}", self.address),
        );
        self.digest(repository, tag)
    }

    /// The image config `repository:tag` names, from `skopeo inspect --config`.
    pub fn config(&self, repository: &str, tag: &str) -> serde_json::Value {
        let stdout = stdout_of(
            Command::new("skopeo")
                .args(["inspect", "--tls-verify=false", "--config", "--raw"])
                .arg(format!("docker://{}/{repository}:{tag}", self.address)),
        );
        serde_json::from_slice(&stdout).expect("an image config")
    }

    /// The last layer of the attachment `suffix` (`att`, `sbom`, `sig`) of the manifest `digest`
    /// in `repository`: the envelope or document forge pushed there.
    pub fn attached(&self, repository: &str, digest: &str, suffix: &str) -> Vec<u8> {
        let tag = format!("sha256-{}.{suffix}", digest.trim_start_matches("sha256:"));
        let (_, manifest) = self.held(repository, &tag, &[crate::support::signed::OCI_MANIFEST]);
        let manifest: serde_json::Value = serde_json::from_slice(&manifest).unwrap();
        let layers = manifest["layers"].as_array().unwrap();
        let blob = layers.last().unwrap()["digest"].as_str().unwrap();
        let (code, _, bytes) = self
            .get(&format!("/v2/{repository}/blobs/{blob}"), "*/*")
            .unwrap();
        assert_eq!(code, 200);
        bytes
    }

    /// The manifest digest of `repository:tag`, from `skopeo inspect`.
    pub fn digest(&self, repository: &str, tag: &str) -> String {
        let mut command = Command::new("skopeo");
        command.args(["inspect", "--tls-verify=false", "--format", "{{.Digest}}"]);
        if let Some((user, password)) = self.credentials() {
            command.arg(format!("--creds={user}:{password}"));
        }
        let stdout =
            stdout_of(command.arg(format!("docker://{}/{repository}:{tag}", self.address)));
        String::from_utf8(stdout).expect("utf-8").trim().to_owned()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    Anonymous,
    Basic,
    Token,
}

/// The `service` and `issuer` the token registry and its tokens agree on.
const SERVICE: &str = "forge-test-registry";
const ISSUER: &str = "forge-test-issuer";

/// A token endpoint on loopback that answers every request with the same signed token.
struct TokenServer {
    realm: String,
    server: LoopbackServer,
    /// `USER-AGENT PATH` of each request answered.
    agents: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl TokenServer {
    /// Makes a key and a self-signed certificate in `folder`, signs two tokens for every
    /// repository path the tests use, one for pull and one for pull and push, and serves the
    /// one the asked scope names: a token asked for pull only cannot push.
    fn start(folder: &Path) -> Self {
        let [pull, push] =
            signed_tokens(folder).map(|token| serde_json::json!({ "token": token }).to_string());
        let agents = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen_agents = std::sync::Arc::clone(&agents);
        // Every answer closes its connection.
        let server = LoopbackServer::start(move |mut stream, log| {
            let Some(request) = Request::read(&stream) else {
                return;
            };
            let path = request.target.as_str();
            let body = if path.contains("push") { &push } else { &pull };
            let agent = request.header("user-agent").unwrap_or_default();
            seen_agents
                .lock()
                .expect("the agent log")
                .push(format!("{agent} {path}"));
            // The header's name spelled one way, whatever case the client sent it in.
            let authorization = request
                .header("authorization")
                .map_or_else(String::new, |value| format!(" Authorization: {value}"));
            log.lock()
                .expect("the request log")
                .push(format!("{path}{authorization}"));
            let headers = [("Content-Type", "application/json")];
            respond(&mut stream, "200 OK", &headers, body.as_bytes());
        });
        Self {
            realm: format!("http://{}/token", server.address()),
            server,
            agents,
        }
    }
}

/// Runs `openssl args...` in `folder` with `input` on stdin; panics on failure and returns
/// stdout.
fn openssl(folder: &Path, args: &[&str], input: Option<&[u8]>) -> Vec<u8> {
    let mut child = Command::new("openssl")
        .args(args)
        .current_dir(folder)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("openssl runs");
    if let Some(input) = input {
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input)
            .expect("write to openssl");
    }
    let output = child.wait_with_output().expect("openssl ends");
    assert!(
        output.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

/// Two JWTs for every repository path the tests use, for pull and for pull and push, signed by
/// a key and self-signed certificate made in `folder` (`key.pem`, `cert.pem`), the certificate
/// in their header.
fn signed_tokens(folder: &Path) -> [String; 2] {
    openssl(
        folder,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "key.pem",
            "-out",
            "cert.pem",
            "-days",
            "3650",
            "-subj",
            "/CN=forge-test-token",
        ],
        None,
    );
    let der = openssl(
        folder,
        &["x509", "-in", "cert.pem", "-outform", "DER"],
        None,
    );
    let url = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let header = serde_json::json!({
        "typ": "JWT",
        "alg": "RS256",
        "x5c": [base64::engine::general_purpose::STANDARD.encode(&der)],
    });
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs();
    [vec!["pull"], vec!["pull", "push"]].map(|actions| {
        let claims = serde_json::json!({
            "iss": ISSUER,
            "sub": "forge-test",
            "aud": SERVICE,
            "iat": now - 60,
            "nbf": now - 60,
            "exp": now + 3600,
            "jti": format!("forge-test-token-{}", actions.join("-")),
            "access": [{ "type": "repository", "name": "aeon-7/base", "actions": actions }],
        });
        let signing_input = format!(
            "{}.{}",
            url(header.to_string().as_bytes()),
            url(claims.to_string().as_bytes())
        );
        let signature = openssl(
            folder,
            &["dgst", "-sha256", "-sign", "key.pem"],
            Some(signing_input.as_bytes()),
        );
        format!("{signing_input}.{}", url(&signature))
    })
}

impl Drop for RegistryServer {
    fn drop(&mut self) {
        stop(&mut self.child);
    }
}

/// The API path of the manifest `repository:reference`.
fn manifest_path(repository: &str, reference: &str) -> String {
    format!("/v2/{repository}/manifests/{reference}")
}

/// A multi-platform index of `media_type` whose entries are the Docker manifests `(digest,
/// size, architecture)`, each for linux.
pub fn index_of(media_type: &str, entries: &[(&str, usize, &str)]) -> String {
    let manifests: Vec<serde_json::Value> = entries
        .iter()
        .map(|(digest, size, architecture)| {
            serde_json::json!({
                "mediaType": MANIFEST,
                "digest": digest,
                "size": size,
                "platform": { "os": "linux", "architecture": architecture },
            })
        })
        .collect();
    serde_json::json!({
        "schemaVersion": 2,
        "mediaType": media_type,
        "manifests": manifests,
    })
    .to_string()
}

/// `RegistryServer::get` against `address`.
fn get(address: &str, path: &str, accept: &str) -> Option<(u16, Option<String>, Vec<u8>)> {
    let response = exchange(
        address,
        &format!("GET {path} HTTP/1.0\r\nHost: {address}\r\nAccept: {accept}\r\n\r\n"),
        &[],
    )?;
    let split = response
        .windows(4)
        .position(|window| window == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&response[..split]).into_owned();
    let code = head.split_whitespace().nth(1)?.parse().ok()?;
    let digest = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("docker-content-digest")
            .then(|| value.trim().to_owned())
    });
    Some((code, digest, response[split + 4..].to_vec()))
}

/// Sends `head` and `body` to `address` over one HTTP/1.0 connection; the whole response.
fn exchange(address: &str, head: &str, body: &[u8]) -> Option<Vec<u8>> {
    let mut stream = TcpStream::connect(address).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    stream.write_all(head.as_bytes()).ok()?;
    stream.write_all(body).ok()?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).ok()?;
    Some(response)
}

/// Copies `from` to the registry reference `to` with skopeo, as another machine would push it.
pub fn skopeo_copy(args: &[&str], from: &str, to: &str) {
    stdout_of(
        Command::new("skopeo")
            .args(["copy", "--quiet", "--dest-tls-verify=false"])
            .args(args)
            .arg(from)
            .arg(format!("docker://{to}")),
    );
}

/// Writes an OCI image layout holding one image: one layer with `/tag.txt` saying `tag`.
fn write_layout(folder: &Path, tag: &str) {
    let blobs = folder.join("blobs").join("sha256");
    std::fs::create_dir_all(&blobs).expect("layout folders");
    let put = |bytes: &[u8]| -> (String, usize) {
        let hex = hex::encode(Sha256::digest(bytes));
        std::fs::write(blobs.join(&hex), bytes).expect("write a blob");
        (format!("sha256:{hex}"), bytes.len())
    };

    let mut layer = tar::Builder::new(Vec::new());
    let content = format!("{tag}\n");
    let mut header = tar::Header::new_gnu();
    header.set_size(content.len() as u64);
    header.set_mode(0o644);
    header.set_mtime(0);
    header.set_cksum();
    layer
        .append_data(&mut header, "tag.txt", content.as_bytes())
        .expect("a layer entry");
    let layer = layer.into_inner().expect("a layer");
    let (layer_digest, layer_size) = put(&layer);

    let config = serde_json::json!({
        "architecture": "arm64",
        "os": "linux",
        "rootfs": { "type": "layers", "diff_ids": [layer_digest] },
        "config": {},
    });
    let (config_digest, config_size) = put(config.to_string().as_bytes());
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            "digest": config_digest,
            "size": config_size,
        },
        "layers": [{
            "mediaType": "application/vnd.oci.image.layer.v1.tar",
            "digest": layer_digest,
            "size": layer_size,
        }],
    });
    let (manifest_digest, manifest_size) = put(manifest.to_string().as_bytes());
    let index = serde_json::json!({
        "schemaVersion": 2,
        "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": manifest_digest,
            "size": manifest_size,
            "annotations": { "org.opencontainers.image.ref.name": tag },
        }],
    });
    std::fs::write(folder.join("index.json"), index.to_string()).expect("index.json");
    let mut layout = std::fs::File::create(folder.join("oci-layout")).expect("oci-layout");
    layout
        .write_all(br#"{"imageLayoutVersion":"1.0.0"}"#)
        .expect("write oci-layout");
}

pub(crate) fn registry_tools_missing() -> bool {
    match missing_tools() {
        Some(missing) if std::env::var("FORGE_SKIP_REGISTRY").as_deref() == Ok("1") => {
            crate::support::note(&format!("skipped: {missing}"));
            true
        }
        Some(missing) => panic!("{missing}; install them, or set FORGE_SKIP_REGISTRY=1"),
        None => false,
    }
}

/// The repository path of `example` on its registry (without the registry host).
pub(crate) fn path_of(example: &Example, registry: &RegistryServer) -> String {
    example
        .repository
        .strip_prefix(&format!("{}/", registry.address()))
        .unwrap()
        .to_owned()
}

/// No credentials anywhere: an empty Docker configuration folder.
pub(crate) fn no_credentials() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}
