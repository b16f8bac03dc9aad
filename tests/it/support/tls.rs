//! TLS for tests that put real servers on loopback: a CA with server and client certificates
//! made by `openssl`, and stunnel terminating TLS in front of a socket or port. The tools come
//! from ci/test; a missing one fails the test, saying so.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use crate::support::{free_port, run_tool, stop, wait_for_port};

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
