//! Nodes of a rig for the tests: a second Docker daemon beside the tests' own, in a network
//! namespace of its own, and a bridge that lets it reach a registry on the host's loopback
//! under the same address, as a node of a real rig reaches the lab's registry.

use std::io::ErrorKind;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::AsRawFd as _;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Daemons started by this test process, so that each has its own containerd namespace.
static STARTED: AtomicUsize = AtomicUsize::new(0);

/// A second Docker daemon with its own socket, data root, exec root, pidfile and containerd
/// namespace, holding no images. It runs in a network namespace of its own, where its own
/// `docker0` bridge (for the containers of RUN steps) cannot touch the host's.
pub struct SecondDaemon {
    child: Child,
    folder: PathBuf,
    /// Its address, as `DOCKER_HOST` spells it.
    pub host: String,
}

impl SecondDaemon {
    /// Starts it, or says why this machine cannot (only root may start a daemon).
    pub fn start() -> Result<Self, String> {
        let uid = Command::new("id")
            .arg("-u")
            .output()
            .map_err(|e| e.to_string())?;
        if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
            return Err("a second dockerd needs root".to_owned());
        }
        let folder = tempfile::Builder::new()
            .prefix("forge-node-")
            .tempdir_in("/tmp")
            .map_err(|e| e.to_string())?
            .keep();
        // An empty configuration: the machine's daemon.json names the first daemon's data root.
        std::fs::write(folder.join("daemon.json"), "{}").map_err(|e| e.to_string())?;
        let namespace = format!(
            "forge-node-{}-{}",
            std::process::id(),
            STARTED.fetch_add(1, Ordering::Relaxed)
        );
        let host = format!("unix://{}", folder.join("docker.sock").display());
        let log = std::fs::File::create(folder.join("dockerd.log")).map_err(|e| e.to_string())?;
        let child = Command::new("unshare")
            .arg("--net")
            .arg("dockerd")
            .arg("--config-file")
            .arg(folder.join("daemon.json"))
            .args(["--host", &host])
            .arg("--data-root")
            .arg(folder.join("data"))
            .arg("--exec-root")
            .arg(folder.join("exec"))
            .arg("--pidfile")
            .arg(folder.join("docker.pid"))
            .args(["--iptables=false", "--ip6tables=false"])
            .args(["--storage-driver", "vfs"])
            .args(["--containerd-namespace", &namespace])
            .args([
                "--containerd-plugins-namespace",
                &format!("{namespace}-plugins"),
            ])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("unshare dockerd cannot run: {e}"))?;
        let daemon = Self {
            child,
            folder,
            host,
        };
        wait_for_daemon(
            &daemon.host,
            "the second dockerd",
            &daemon.folder.join("dockerd.log"),
        )?;
        Ok(daemon)
    }
}

/// Waits up to 60 s for the daemon at `host` (`what`, in the failure, with its `log`) to answer.
pub fn wait_for_daemon(host: &str, what: &str, log: &std::path::Path) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let answered = Command::new("docker")
            .args(["-H", host, "version", "--format", "{{.Server.Version}}"])
            .output()
            .is_ok_and(|output| output.status.success());
        if answered {
            return Ok(());
        }
        if Instant::now() > deadline {
            let log = std::fs::read_to_string(log).unwrap_or_default();
            return Err(format!("{what} did not answer within 60 s:\n{log}"));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

impl SecondDaemon {
    /// Starts it; `None`, saying why on the test's output, where this machine cannot (only root
    /// may start a daemon). Any other failure panics.
    pub fn start_or_skip() -> Option<Self> {
        match Self::start() {
            Ok(node) => Some(node),
            Err(reason) if reason == "a second dockerd needs root" => {
                crate::support::note(&format!("skipped the second daemon: {reason}"));
                None
            }
            Err(reason) => panic!("{reason}"),
        }
    }
}

impl Drop for SecondDaemon {
    fn drop(&mut self) {
        // `unshare` execs dockerd, so the child is the daemon itself: ask it to stop cleanly.
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.folder);
    }
}

impl SecondDaemon {
    /// Copies `image` from the tests' daemon to this one, as a runner's base is provisioned.
    pub fn load(&self, image: &str) {
        let mut save = Command::new("docker")
            .args(["save", image])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let loaded = Command::new("docker")
            .args(["-H", &self.host, "load", "--quiet"])
            .stdin(save.stdout.take().unwrap())
            .output()
            .unwrap();
        assert!(save.wait().unwrap().success(), "docker save {image}");
        assert!(
            loaded.status.success(),
            "{}",
            String::from_utf8_lossy(&loaded.stderr)
        );
    }

    /// Lets the daemon reach `127.0.0.1:port` of the host: in its network namespace that
    /// address answers with a connection forwarded to the host's, so a registry on the host's
    /// loopback is reached under the name it has there. Dropping the bridge closes it.
    pub fn reach(&self, port: u16) -> Bridge {
        bridge_into(self.child.id(), port)
    }

    /// A port for forge's conduit (`FORGE_CONDUIT_PORT`) that the daemon reaches, as a user
    /// forwards one to a daemon on another machine; bridged while the returned guard lives.
    pub fn conduit(&self) -> (String, Bridge) {
        let port = crate::support::free_port();
        (port.to_string(), self.reach(port))
    }
}

/// Lets the network namespace of process `pid` reach `127.0.0.1:port` of the host: in that
/// namespace the address answers with a connection forwarded to the host's. Dropping the
/// bridge closes it.
pub fn bridge_into(pid: u32, port: u16) -> Bridge {
    let namespace = format!("/proc/{pid}/ns/net");
    let up = Command::new("nsenter")
        .arg(format!("--net={namespace}"))
        .args(["ip", "link", "set", "lo", "up"])
        .status()
        .expect("nsenter runs");
    assert!(up.success(), "cannot bring up the node's loopback");
    // A socket belongs to the namespace it was made in, whichever thread later uses it:
    // make the listener on a thread that entered the node's namespace.
    let listener = std::thread::spawn(move || {
        let file = std::fs::File::open(&namespace).expect("the node's network namespace");
        // SAFETY: setns on a namespace file this thread opened; it moves only this thread.
        let entered = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(entered, 0, "setns: {}", std::io::Error::last_os_error());
        TcpListener::bind(("127.0.0.1", port)).expect("listen on the node's loopback")
    })
    .join()
    .expect("the listener thread");
    listener.set_nonblocking(true).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = Arc::clone(&stop);
    let thread = std::thread::spawn(move || {
        while !stopping.load(Ordering::Relaxed) {
            match listener.accept() {
                Ok((inbound, _)) => {
                    inbound.set_nonblocking(false).unwrap();
                    if let Ok(outbound) = TcpStream::connect(("127.0.0.1", port)) {
                        splice(inbound, outbound);
                    }
                }
                Err(error) if error.kind() == ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(error) => panic!("accept on the node's loopback: {error}"),
            }
        }
    });
    Bridge {
        stop,
        thread: Some(thread),
    }
}

/// Lets the host reach `127.0.0.1:port` of the network namespace of process `pid`: a port of
/// the host's loopback, returned, answers with a connection made in that namespace. Dropping
/// the bridge closes it.
pub fn bridge_out_of(pid: u32, port: u16) -> (u16, Bridge) {
    let listener = TcpListener::bind(("127.0.0.1", 0)).expect("a free loopback port");
    let outer = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let namespace = format!("/proc/{pid}/ns/net");
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = Arc::clone(&stop);
    let thread = std::thread::spawn(move || {
        while !stopping.load(Ordering::Relaxed) {
            match listener.accept() {
                Ok((outbound, _)) => {
                    outbound.set_nonblocking(false).unwrap();
                    let namespace = namespace.clone();
                    // The connection inward is made on a thread that entered the namespace.
                    std::thread::spawn(move || {
                        let file = std::fs::File::open(&namespace).expect("the namespace");
                        // SAFETY: setns on a namespace file this thread opened; it moves only
                        // this thread.
                        let entered = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
                        assert_eq!(entered, 0, "setns: {}", std::io::Error::last_os_error());
                        if let Ok(inbound) = TcpStream::connect(("127.0.0.1", port)) {
                            splice(outbound, inbound);
                        }
                    });
                }
                Err(error) if error.kind() == ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(error) => panic!("accept on the host's loopback: {error}"),
            }
        }
    });
    (
        outer,
        Bridge {
            stop,
            thread: Some(thread),
        },
    )
}

/// Copies each way between `a` and `b` until either side closes.
fn splice(a: TcpStream, b: TcpStream) {
    let (a2, b2) = (a.try_clone().unwrap(), b.try_clone().unwrap());
    let copy = |mut from: TcpStream, mut to: TcpStream| {
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut from, &mut to);
            let _ = to.shutdown(Shutdown::Write);
        })
    };
    copy(a, b2);
    copy(b, a2);
}

/// A registry port of the host, reachable from a node (see `SecondDaemon::reach`).
pub struct Bridge {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Bridge {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
