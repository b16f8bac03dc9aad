//! A real container registry on 127.0.0.1 for the tests: Debian's `docker-registry` with its
//! storage in a temporary folder, and images pushed to it with `skopeo copy` from an OCI
//! layout written on the spot (one layer holding one file), so no daemon and no network are
//! needed. `skopeo inspect` is the independent view of what the registry serves. A registry can
//! also be started behind HTTP Basic (its own `htpasswd` user) or behind a token realm (a JWT
//! signed with `openssl`), the two challenges registries answer with.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sha2::{Digest as _, Sha256};

/// A running registry; stopped when dropped.
pub struct RegistryServer {
    folder: tempfile::TempDir,
    address: String,
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
            .map(|server| server.requests.lock().expect("the request log").clone())
            .unwrap_or_default()
    }

    /// The user and password of a registry started with `start_with_basic_auth`.
    pub fn credentials(&self) -> Option<(&str, &str)> {
        self.credentials
            .as_ref()
            .map(|(user, password)| (user.as_str(), password.as_str()))
    }

    fn launch(access: Access) -> Self {
        let folder = tempfile::tempdir().expect("a temporary folder");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .expect("a free port")
            .local_addr()
            .expect("an address")
            .port();
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
            .expect("docker-registry starts");
        let mut server = Self {
            folder,
            address,
            child,
            credentials: None,
            token_server,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(&server.address).is_err() {
            assert!(
                Instant::now() < deadline,
                "docker-registry did not listen on {} within 20 s",
                server.address
            );
            std::thread::sleep(Duration::from_millis(50));
        }
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

    /// Pushes a one-file image as `repository:tag` and returns its manifest digest as skopeo
    /// reports it.
    pub fn push(&self, repository: &str, tag: &str) -> String {
        let layout = self.folder.path().join(format!("layout-{tag}"));
        write_layout(&layout, tag);
        let destination = format!("docker://{}/{repository}:{tag}", self.address);
        let mut command = Command::new("skopeo");
        command.args(["copy", "--quiet", "--dest-tls-verify=false"]);
        if let Some((user, password)) = self.credentials() {
            command.arg(format!("--dest-creds={user}:{password}"));
        }
        let output = command
            .arg(format!("oci:{}:{tag}", layout.display()))
            .arg(&destination)
            .output()
            .expect("skopeo runs");
        assert!(
            output.status.success(),
            "skopeo copy to {destination}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        self.digest(repository, tag)
    }

    /// The manifest digest of `repository:tag`, from `skopeo inspect`.
    pub fn digest(&self, repository: &str, tag: &str) -> String {
        let mut command = Command::new("skopeo");
        command.args(["inspect", "--tls-verify=false", "--format", "{{.Digest}}"]);
        if let Some((user, password)) = self.credentials() {
            command.arg(format!("--creds={user}:{password}"));
        }
        let output = command
            .arg(format!("docker://{}/{repository}:{tag}", self.address))
            .output()
            .expect("skopeo runs");
        assert!(
            output.status.success(),
            "skopeo inspect: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout)
            .expect("utf-8")
            .trim()
            .to_owned()
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
    requests: Arc<Mutex<Vec<String>>>,
}

impl TokenServer {
    /// Makes a key and a self-signed certificate in `folder`, signs a token for pull and push
    /// on every repository path the tests use, and serves it.
    fn start(folder: &Path) -> Self {
        let openssl = |args: &[&str], input: Option<&[u8]>| -> Vec<u8> {
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
        };
        openssl(
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
        let der = openssl(&["x509", "-in", "cert.pem", "-outform", "DER"], None);
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
        let claims = serde_json::json!({
            "iss": ISSUER,
            "sub": "forge-test",
            "aud": SERVICE,
            "iat": now - 60,
            "nbf": now - 60,
            "exp": now + 3600,
            "jti": "forge-test-token",
            "access": [{ "type": "repository", "name": "aeon-7/base", "actions": ["pull", "push"] }],
        });
        let signing_input = format!(
            "{}.{}",
            url(header.to_string().as_bytes()),
            url(claims.to_string().as_bytes())
        );
        let signature = openssl(
            &["dgst", "-sha256", "-sign", "key.pem"],
            Some(signing_input.as_bytes()),
        );
        let token = format!("{signing_input}.{}", url(&signature));

        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let realm = format!(
            "http://{}/token",
            listener.local_addr().expect("an address")
        );
        let requests = Arc::new(Mutex::new(Vec::new()));
        let log = requests.clone();
        // Detached: it ends with the test process; every answer closes its connection.
        std::thread::spawn(move || {
            let body = serde_json::json!({ "token": token }).to_string();
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().expect("clone the stream"));
                let mut request_line = String::new();
                let _ = reader.read_line(&mut request_line);
                let mut authorization = String::new();
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                        break;
                    }
                    if line.to_ascii_lowercase().starts_with("authorization:") {
                        authorization = line.trim().to_owned();
                    }
                }
                let path = request_line.split_whitespace().nth(1).unwrap_or("/");
                log.lock()
                    .expect("the request log")
                    .push(format!("{path} {authorization}").trim_end().to_owned());
                let answer = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(answer.as_bytes());
            }
        });
        Self { realm, requests }
    }
}

impl Drop for RegistryServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
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
