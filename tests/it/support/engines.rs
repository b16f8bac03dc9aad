//! The Docker engines users run, each a real daemon: Docker 20.10 (the machine's own daemon),
//! 26.1 with containerd 1.7, 28.5 with containerd 2.1 and the classic image store, and the same
//! 28.5 with the containerd image store (what a fresh Docker 29 install runs).
//!
//! `ci/test` brings the three newer ones from Debian's trixie and forky suites, unpacked under
//! `target/engines/` and named by `FORGE_TEST_ENGINES`; each runs with its own containerd, data
//! root and socket in a network namespace of its own (where its bridge cannot touch the
//! machine's `docker0`), started once per test process and shared by every test, and stopped
//! by a watcher when the test process ends, however it ends. A registry or forge's conduit on
//! the host's loopback is reached from a namespace through `reach`, as `node::SecondDaemon`
//! does.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};

use crate::support::node::Bridge;

/// One engine of the set.
#[derive(Debug)]
pub struct Engine {
    /// `docker-20.10`, `docker-26.1`, `docker-28.5`, `docker-28.5-containerd`.
    pub name: String,
    /// Its address, as `DOCKER_HOST` spells it.
    pub host: String,
    /// Whether it keeps images in containerd's store.
    pub containerd_store: bool,
    /// The process whose network namespace the daemon runs in; `None` for the machine's daemon.
    namespace: Option<u32>,
    /// Held by a test while it builds on the engine and relies on what its build cache holds.
    turn: Mutex<()>,
}

impl Engine {
    /// Waits for the engine to be this test's alone: a test that empties its build cache, or
    /// counts on what it holds, takes its turn. Engines are taken in the set's order.
    pub fn turn(&self) -> MutexGuard<'_, ()> {
        self.turn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The process whose network namespace the daemon runs in; `None` for the machine's daemon.
    pub fn namespace(&self) -> Option<u32> {
        self.namespace
    }

    /// Lets the daemon reach `127.0.0.1:port` of the host (nothing to do for the machine's own
    /// daemon, which shares the host's loopback).
    pub fn reach(&self, port: u16) -> Option<Bridge> {
        self.namespace
            .map(|pid| crate::support::node::bridge_into(pid, port))
    }

    /// The environment a forge run on this engine needs: its address, and a conduit port the
    /// daemon reaches, bridged while the returned guard lives.
    pub fn forge_env(&self) -> (Vec<(&'static str, String)>, Option<Bridge>) {
        let port = crate::support::free_port();
        let bridge = self.reach(port);
        (
            vec![
                ("DOCKER_HOST", self.host.clone()),
                ("FORGE_CONDUIT_PORT", port.to_string()),
            ],
            bridge,
        )
    }

    /// `docker` on this engine, run with `args`; its stdout, which must be a success.
    #[track_caller]
    pub fn docker(&self, args: &[&str]) -> String {
        let output = Command::new("docker")
            .arg("-H")
            .arg(&self.host)
            .args(args)
            .output()
            .expect("docker runs");
        assert!(
            output.status.success(),
            "docker {args:?} on {} failed:\n{}",
            self.name,
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    }
}

/// The engines started: the Debian suite under `FORGE_TEST_ENGINES` whose `docker.io` and
/// `containerd` each runs, and whether it keeps images in containerd's store.
const STARTED: [(&str, bool); 3] = [("trixie", false), ("forky", false), ("forky", true)];

/// Every engine of the set, the machine's daemon first; `None`, saying why on the test's output,
/// where this machine cannot start them (no `FORGE_TEST_ENGINES`: `ci/test` brings them; not
/// root).
pub fn engines() -> Option<&'static [Engine]> {
    static SET: OnceLock<Result<Vec<Engine>, String>> = OnceLock::new();
    match SET.get_or_init(start_all) {
        Ok(engines) => Some(engines),
        Err(reason) => {
            crate::support::note(&format!("skipped the engine matrix: {reason}"));
            None
        }
    }
}

fn start_all() -> Result<Vec<Engine>, String> {
    let folder = std::env::var_os("FORGE_TEST_ENGINES")
        .map(PathBuf::from)
        .ok_or("FORGE_TEST_ENGINES is not set (ci/test brings the engines and sets it)")?;
    let uid = Command::new("id")
        .arg("-u")
        .output()
        .map_err(|e| e.to_string())?;
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        return Err("starting a dockerd needs root".to_owned());
    }
    let root = tempfile::Builder::new()
        .prefix("forge-engines-")
        .tempdir_in("/tmp")
        .map_err(|e| e.to_string())?
        .keep();
    let mut engines = vec![Engine {
        name: "docker-20.10".to_owned(),
        host: crate::support::images::daemon_host(),
        containerd_store: false,
        namespace: None,
        turn: Mutex::new(()),
    }];
    let mut starting = Vec::new();
    for (suite, store) in STARTED {
        let docker = folder.join(suite).join("docker.io");
        let version = version_of(&docker)?;
        let name = if store {
            format!("docker-{version}-containerd")
        } else {
            format!("docker-{version}")
        };
        let containerd = folder.join(suite).join("containerd");
        starting.push(start(&root, name, (&docker, &containerd), store)?);
    }
    for (engine, log) in starting {
        wait_ready(&engine, &log)?;
        engines.push(engine);
    }
    Ok(engines)
}

/// Starts one daemon in a network namespace of its own under a watcher shell that stops it, and
/// removes its folder, once this test process is gone.
fn start(
    root: &Path,
    name: String,
    (docker, containerd): (&Path, &Path),
    containerd_store: bool,
) -> Result<(Engine, PathBuf), String> {
    let folder = root.join(&name);
    std::fs::create_dir_all(&folder).map_err(|e| e.to_string())?;
    let config = if containerd_store {
        r#"{"features": {"containerd-snapshotter": true}}"#
    } else {
        "{}"
    };
    std::fs::write(folder.join("daemon.json"), config).map_err(|e| e.to_string())?;
    let socket = folder.join("docker.sock");
    let log = folder.join("dockerd.log");
    // The daemon's own containerd and shim come first on PATH; runc is the machine's (forky's
    // needs a newer glibc than bookworm's).
    let path = format!(
        "{}:{}:/usr/sbin:/usr/bin:/sbin:/bin",
        containerd.join("usr/bin").display(),
        docker.join("usr/sbin").display()
    );
    let script = format!(
        r#"ip link set lo up
dockerd --config-file {folder}/daemon.json --host unix://{socket} --data-root {folder}/data \
  --exec-root {folder}/exec --pidfile {folder}/docker.pid --iptables=false --ip6tables=false \
  >{log} 2>&1 &
daemon=$!
while kill -0 {parent} 2>/dev/null && kill -0 $daemon 2>/dev/null; do sleep 1; done
kill -TERM $daemon 2>/dev/null
wait $daemon
grep " {folder}/" /proc/mounts | cut -d' ' -f2 | sort -r | xargs -r umount -l 2>/dev/null
rm -rf {folder}
"#,
        folder = folder.display(),
        socket = socket.display(),
        log = log.display(),
        parent = std::process::id(),
    );
    let child = Command::new("unshare")
        .args(["--net", "sh", "-c", &script])
        .env("PATH", path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|error| format!("unshare cannot run: {error}"))?;
    let namespace = child.id();
    // The watcher outlives the handle: it ends when this process does.
    std::mem::forget(child);
    Ok((
        Engine {
            name,
            host: format!("unix://{}", socket.display()),
            containerd_store,
            namespace: Some(namespace),
            turn: Mutex::new(()),
        },
        log,
    ))
}

/// `MAJOR.MINOR` of the dockerd under `docker` (`usr/sbin/dockerd`), as it reports itself.
fn version_of(docker: &Path) -> Result<String, String> {
    let output = Command::new(docker.join("usr/sbin/dockerd"))
        .arg("--version")
        .output()
        .map_err(|error| format!("{} cannot run: {error}", docker.display()))?;
    let text = String::from_utf8_lossy(&output.stdout);
    // "Docker version 26.1.5+dfsg1, build 411e817"
    let version = text
        .split_whitespace()
        .nth(2)
        .ok_or_else(|| format!("dockerd --version said {text:?}"))?;
    Ok(version.split('.').take(2).collect::<Vec<_>>().join("."))
}

/// Waits up to 60 s for `engine` to answer.
fn wait_ready(engine: &Engine, log: &Path) -> Result<(), String> {
    crate::support::node::wait_for_daemon(&engine.host, &engine.name, log)
}
