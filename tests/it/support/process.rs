//! Processes and servers on loopback: tools that must succeed, free ports, waiting for a child
//! to listen, and a small threaded server that hands each connection to a handler.

use std::io::{BufRead as _, BufReader, Read as _};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
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
    wait_until(
        child,
        log,
        &format!("{what} did not listen on 127.0.0.1:{port}"),
        || TcpStream::connect(("127.0.0.1", port)).is_ok(),
    );
}

/// Polls `ready` for up to 20 s; fails the test with `log` if `child` exits first or time runs
/// out.
pub fn wait_until(child: &mut Child, log: &Path, failure: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ready() {
        let exited = child.try_wait().ok().flatten();
        if exited.is_some() || Instant::now() > deadline {
            panic!(
                "{failure} ({exited:?}):\n{}",
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

/// A thread on a free loopback port that hands each connection, one at a time, to a handler
/// along with the log of requests it keeps; stopped when dropped.
pub struct LoopbackServer {
    address: String,
    stop: Arc<AtomicBool>,
    requests: Arc<Mutex<Vec<String>>>,
    thread: Option<JoinHandle<()>>,
}

impl LoopbackServer {
    /// Starts accepting connections on 127.0.0.1 and passing them to `serve`.
    pub fn start(serve: impl Fn(TcpStream, &Mutex<Vec<String>>) + Send + 'static) -> Self {
        Self::start_on("127.0.0.1", serve)
    }

    /// Starts accepting connections on the loopback address `ip` (any of 127.0.0.0/8, so that
    /// two servers can stand for two hosts) and passing them to `serve`.
    pub fn start_on(
        ip: &str,
        serve: impl Fn(TcpStream, &Mutex<Vec<String>>) + Send + 'static,
    ) -> Self {
        let listener =
            TcpListener::bind((ip, 0)).unwrap_or_else(|error| panic!("bind {ip}: {error}"));
        let address = listener.local_addr().expect("an address").to_string();
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let thread = {
            let (stop, requests) = (stop.clone(), requests.clone());
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    if let Ok(stream) = stream {
                        serve(stream, &requests);
                    }
                }
            })
        };
        Self {
            address,
            stop,
            requests,
            thread: Some(thread),
        }
    }

    /// `IP:PORT`.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// What the handler logged so far.
    pub fn requests(&self) -> Vec<String> {
        self.requests.lock().expect("the request log").clone()
    }
}

impl Drop for LoopbackServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so that it sees the flag.
        let _ = TcpStream::connect(&self.address);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Borrows owned environment values as the `(name, value)` pairs `forge_with` takes.
pub fn env_refs<'a>(env: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    env.iter()
        .map(|(name, value)| (*name, value.as_str()))
        .collect()
}

/// Runs git in `folder` with `env` added, out of reach of a surrounding repository's
/// `GIT_DIR`, `GIT_INDEX_FILE` and `GIT_WORK_TREE`; panics on failure and returns stdout.
#[track_caller]
pub fn git_in(folder: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let stdout = stdout_of(
        Command::new("git")
            // A test run from a git hook or a script must not point these at another repository.
            .env_remove("GIT_DIR")
            .env_remove("GIT_INDEX_FILE")
            .env_remove("GIT_WORK_TREE")
            .envs(env.iter().copied())
            .args(args)
            .current_dir(folder),
    );
    String::from_utf8(stdout).expect("git prints UTF-8")
}

/// Runs `command`, which must succeed; its stdout.
#[track_caller]
pub fn stdout_of(command: &mut Command) -> Vec<u8> {
    let output = command
        .output()
        .unwrap_or_else(|error| panic!("{command:?} cannot run: {error}"));
    assert!(
        output.status.success(),
        "{command:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

/// A forge run in the background whose stderr is collected as it comes.
pub(crate) struct Background {
    child: Child,
    /// What forge has printed on stderr so far.
    pub(crate) stderr: Arc<Mutex<String>>,
}

impl Background {
    pub(crate) fn start(folder: &Path, args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_forge"));
        command
            .arg("-C")
            .arg(folder)
            .args(args)
            .current_dir(folder)
            .env("NO_COLOR", "1")
            .env("COLUMNS", "100")
            .env("SOURCE_DATE_EPOCH", "1783500000")
            .env("XDG_CACHE_HOME", folder.join(".cache"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = command.spawn().expect("forge starts");
        let stderr = Arc::new(Mutex::new(String::new()));
        let pipe = child.stderr.take().expect("stderr is piped");
        let collected = Arc::clone(&stderr);
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let mut text = collected.lock().unwrap();
                text.push_str(&line);
                text.push('\n');
            }
        });
        Self { child, stderr }
    }

    /// Waits until stderr contains `text`.
    #[track_caller]
    pub(crate) fn wait_for(&self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(120);
        while !self.stderr.lock().unwrap().contains(text) {
            assert!(
                Instant::now() < deadline,
                "forge never printed {text:?}:\n{}",
                self.stderr.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub(crate) fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success());
    }

    /// Waits for the exit; returns the status and everything forge printed on stderr.
    pub(crate) fn finish(mut self) -> (std::process::ExitStatus, String) {
        let mut stdout = String::new();
        if let Some(mut pipe) = self.child.stdout.take() {
            let _ = pipe.read_to_string(&mut stdout);
        }
        let status = self.child.wait().expect("forge ends");
        // The reader thread ends with the pipe; give it a moment to take the last lines.
        std::thread::sleep(Duration::from_millis(100));
        let stderr = self.stderr.lock().unwrap().clone();
        (status, stderr)
    }
}
