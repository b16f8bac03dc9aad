//! An `sshd` on loopback for the tests of daemons reached through `ssh://`: one temporary
//! ed25519 key let in as the current user, and an `ssh` wrapper first on PATH that uses that
//! key and a known-hosts file of the test's own, nothing of the real ~/.ssh. `start` runs it on
//! the host's loopback, where its sessions reach the tests' daemon; `start_beside` runs it in an
//! engine's network namespace, its sessions reaching that engine, and bridges a port of the
//! host's loopback to it, as a machine of its own reached over ssh.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::support::{free_port, run_tool, stop, wait_for_port};

/// Writes into `path` a host key, a client key the server lets in, and an sshd configuration
/// that listens on 127.0.0.1:`port`.
fn write_sshd_config(path: &Path, port: u16) {
    for key in ["host_key", "client_key"] {
        run_tool(
            "ssh-keygen",
            &[
                "-q",
                "-t",
                "ed25519",
                "-N",
                "",
                "-C",
                "forge-test",
                "-f",
                key,
            ],
            path,
        );
    }
    std::fs::copy(path.join("client_key.pub"), path.join("authorized_keys")).unwrap();
    std::fs::write(
        path.join("sshd_config"),
        format!(
            "ListenAddress 127.0.0.1\nPort {port}\nHostKey {folder}/host_key\n\
             AuthorizedKeysFile {folder}/authorized_keys\nPidFile {folder}/sshd.pid\n\
             PasswordAuthentication no\nKbdInteractiveAuthentication no\n\
             PermitRootLogin prohibit-password\nUsePAM no\n\
             # the temporary folder is group- or world-writable on some machines\n\
             StrictModes no\n",
            folder = path.display()
        ),
    )
    .unwrap();
}

/// Writes into `path` an ssh configuration and, in `bin/`, an `ssh` wrapper that uses it.
fn write_ssh_wrapper(path: &Path) {
    // forge runs `ssh` from PATH, which reads ~/.ssh and would ask about an unknown host
    // key. The wrapper first on PATH points ssh at a configuration of this test's own: its
    // key, a known-hosts file in the temporary folder that takes the new host key, and
    // nothing from the real ~/.ssh.
    std::fs::write(
        path.join("ssh_config"),
        format!(
            "Host *\n  IdentityFile {folder}/client_key\n  IdentitiesOnly yes\n  \
             IdentityAgent none\n  UserKnownHostsFile {folder}/known_hosts\n  \
             GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking accept-new\n",
            folder = path.display()
        ),
    )
    .unwrap();
    let bin = path.join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::fs::write(
        bin.join("ssh"),
        format!(
            "#!/bin/sh\nexec /usr/bin/ssh -F {}/ssh_config \"$@\"\n",
            path.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        bin.join("ssh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
}

/// An `sshd` on a free loopback port that lets in one temporary ed25519 key as the current
/// user, and an `ssh` wrapper that uses that key and a temporary known-hosts file. Stopped when
/// dropped.
pub(crate) struct SshServer {
    child: Option<Child>,
    folder: tempfile::TempDir,
    /// The port of the host's loopback it answers on.
    pub(crate) port: u16,
    /// The bridge into the engine's namespace, for one started beside an engine.
    _bridge: Option<crate::support::node::Bridge>,
}

impl SshServer {
    pub(crate) fn start() -> Self {
        let folder = tempfile::tempdir().expect("a temporary folder");
        let path = folder.path();
        let port = free_port();
        write_sshd_config(path, port);
        write_ssh_wrapper(path);
        // sshd insists on its privilege separation folder, which only a boot makes.
        std::fs::create_dir_all("/run/sshd").expect("/run/sshd (sshd needs root)");
        let log = path.join("sshd.log");
        let child = Command::new("/usr/sbin/sshd")
            .args(["-D", "-e", "-f"])
            .arg(path.join("sshd_config"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap_or_else(|error| {
                panic!("/usr/sbin/sshd cannot run ({error}): run ci/test, which installs openssh-server")
            });
        let mut server = Self {
            child: Some(child),
            folder,
            port,
            _bridge: None,
        };
        wait_for_port(
            port,
            server.child.as_mut().expect("just started"),
            &log,
            "sshd",
        );
        server
    }

    /// An sshd in `engine`'s network namespace, as on a machine of its own: its sessions reach
    /// that engine (`DOCKER_HOST` set for them) and a forward it opens binds that namespace's
    /// loopback, where the engine reaches it. A port of the host's loopback is bridged to it.
    pub(crate) fn start_beside(engine: &crate::support::engines::Engine) -> Self {
        let folder = tempfile::tempdir().expect("a temporary folder");
        let path = folder.path();
        let inner = free_port();
        write_sshd_config(path, inner);
        let mut config = std::fs::read_to_string(path.join("sshd_config")).unwrap();
        config.push_str(&format!(
            "SetEnv DOCKER_HOST={}\nAllowTcpForwarding yes\n",
            engine.host
        ));
        std::fs::write(path.join("sshd_config"), config).unwrap();
        write_ssh_wrapper(path);
        std::fs::create_dir_all("/run/sshd").expect("/run/sshd (sshd needs root)");
        let namespace = engine.namespace().expect("an engine of its own namespace");
        let log = path.join("sshd.log");
        let child = Command::new("nsenter")
            .arg(format!("--net=/proc/{namespace}/ns/net"))
            .args(["/usr/sbin/sshd", "-D", "-e", "-f"])
            .arg(path.join("sshd_config"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("nsenter runs sshd");
        let (port, bridge) = crate::support::node::bridge_out_of(namespace, inner);
        let mut server = Self {
            child: Some(child),
            folder,
            port,
            _bridge: Some(bridge),
        };
        // Through the bridge: the first connection that sshd answers with its banner.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let banner = std::net::TcpStream::connect(("127.0.0.1", port))
                .ok()
                .and_then(|mut stream| {
                    use std::io::Read as _;
                    stream
                        .set_read_timeout(Some(std::time::Duration::from_millis(500)))
                        .ok()?;
                    let mut first = [0_u8; 4];
                    stream.read_exact(&mut first).ok().map(|()| first)
                });
            if banner == Some(*b"SSH-") {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "sshd beside {} did not answer:\n{}",
                engine.name,
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let _ = &mut server;
        server
    }

    /// `ssh://USER@127.0.0.1:PORT` for the current user.
    pub(crate) fn host(&self) -> String {
        format!("ssh://{}@127.0.0.1:{}", current_user(), self.port)
    }

    /// PATH with the ssh wrapper first.
    pub(crate) fn path(&self) -> String {
        format!(
            "{}:{}",
            self.folder.path().join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        )
    }

    /// Stops sshd now.
    pub(crate) fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            stop(&mut child);
        }
    }
}

impl Drop for SshServer {
    fn drop(&mut self) {
        self.stop();
    }
}

pub(crate) fn current_user() -> String {
    let output = Command::new("id").arg("-un").output().expect("id runs");
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}
