//! TLS and process helpers for tests that put real servers on loopback: a CA with server and
//! client certificates made by `openssl`, and stunnel terminating TLS in front of a socket or
//! port. The tools come from ci/test; a missing one fails the test, saying so.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `program args...`, which must succeed; a program that is not installed fails the test
/// with the way to install it.
#[track_caller]
pub fn run_tool(program: &str, args: &[&str], folder: &Path) {
    let output = Command::new(program)
        .args(args)
        .current_dir(folder)
        .output()
        .unwrap_or_else(|error| {
            panic!("{program} cannot run ({error}): run ci/test, which installs it")
        });
    assert!(
        output.status.success(),
        "{program} {args:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A loopback port nobody listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free loopback port")
        .port()
}

/// Waits until something accepts connections on `port`, or fails the test with `log`.
pub fn wait_for_port(port: u16, child: &mut Child, log: &Path, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        let exited = child.try_wait().ok().flatten();
        if exited.is_some() || Instant::now() > deadline {
            panic!(
                "{what} did not listen on 127.0.0.1:{port} ({exited:?}):\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Stops `child` and reaps it.
pub fn stop(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// A CA, a server certificate for 127.0.0.1 and a client certificate signed by it, and the
/// certificate folders a client may be given.
pub struct Certificates {
    folder: tempfile::TempDir,
}

impl Certificates {
    pub fn make() -> Self {
        let folder = tempfile::tempdir().expect("a temporary folder");
        let path = folder.path();
        let openssl = |args: &[&str]| run_tool("openssl", args, path);
        let self_signed_ca = |name: &str| {
            openssl(&[
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "2",
                "-subj",
                &format!("/CN={name}"),
                "-keyout",
                &format!("{name}.key"),
                "-out",
                &format!("{name}.pem"),
            ]);
        };
        // The CA, and a second one that signed neither certificate.
        self_signed_ca("ca");
        self_signed_ca("other-ca");
        let signed = |name: &str, ca: &str, extension: &str| {
            openssl(&[
                "req",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-subj",
                &format!("/CN={name}"),
                "-keyout",
                &format!("{name}.key"),
                "-out",
                &format!("{name}.csr"),
            ]);
            std::fs::write(path.join(format!("{name}.ext")), extension).unwrap();
            openssl(&[
                "x509",
                "-req",
                "-days",
                "2",
                "-in",
                &format!("{name}.csr"),
                "-CA",
                &format!("{ca}.pem"),
                "-CAkey",
                &format!("{ca}.key"),
                "-CAcreateserial",
                "-extfile",
                &format!("{name}.ext"),
                "-out",
                &format!("{name}.pem"),
            ]);
        };
        signed("server", "ca", "subjectAltName=IP:127.0.0.1\n");
        signed("client", "ca", "extendedKeyUsage=clientAuth\n");
        signed("stranger", "other-ca", "extendedKeyUsage=clientAuth\n");
        Self { folder }
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.folder.path().join(name)
    }

    /// A `DOCKER_CERT_PATH` folder named `name` with `ca.pem`, `cert.pem` and `key.pem` copied
    /// from the given files (`None` leaves that one out).
    pub fn client_folder(
        &self,
        name: &str,
        ca: &str,
        certificate: Option<&str>,
        key: &str,
    ) -> PathBuf {
        let folder = self.folder.path().join(name);
        std::fs::create_dir(&folder).unwrap();
        std::fs::copy(self.file(ca), folder.join("ca.pem")).unwrap();
        if let Some(certificate) = certificate {
            std::fs::copy(self.file(certificate), folder.join("cert.pem")).unwrap();
        }
        std::fs::copy(self.file(key), folder.join("key.pem")).unwrap();
        folder
    }
}

/// stunnel on 127.0.0.1 in front of `connect` (a unix socket path or `HOST:PORT`): TLS with
/// the server certificate and, when asked, only clients whose certificate the CA signed get
/// through. Stopped when dropped.
pub struct TlsTerminator {
    child: Child,
    port: u16,
}

impl TlsTerminator {
    pub fn start(certificates: &Certificates, connect: &str, client_certificates: bool) -> Self {
        let port = free_port();
        let config = certificates.file(&format!("stunnel-{port}.conf"));
        let log = certificates.file(&format!("stunnel-{port}.log"));
        std::fs::write(
            &config,
            format!(
                "foreground = yes\npid =\ndebug = 5\n[service]\naccept = 127.0.0.1:{port}\n\
                 connect = {connect}\ncert = {}\nkey = {}\nCAfile = {}\nrequireCert = {}\n\
                 verifyChain = {}\n",
                certificates.file("server.pem").display(),
                certificates.file("server.key").display(),
                certificates.file("ca.pem").display(),
                if client_certificates { "yes" } else { "no" },
                if client_certificates { "yes" } else { "no" },
            ),
        )
        .unwrap();
        // stunnel rather than socat: socat sets no TLS session id context, so OpenSSL refuses
        // a client that resumes a session while client certificates are checked, and a rustls
        // client resumes from its second connection on.
        let child = Command::new("stunnel4")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap_or_else(|error| {
                panic!("stunnel4 cannot run ({error}): run ci/test, which installs it")
            });
        let mut terminator = Self { child, port };
        wait_for_port(port, &mut terminator.child, &log, "stunnel");
        terminator
    }

    /// The loopback port it accepts TLS on.
    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for TlsTerminator {
    fn drop(&mut self) {
        stop(&mut self.child);
    }
}
