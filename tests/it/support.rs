//! The test harness: a temporary recipe folder and a way to run the real `forge` binary in it,
//! and the process helpers the tests that start real servers on loopback share.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The repository root, where the default recipe lives.
pub fn repository_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// What a forge run left behind.
#[derive(Debug)]
pub struct Run {
    /// The exit code.
    pub code: i32,
    /// Everything on stdout.
    pub stdout: String,
    /// Everything on stderr.
    pub stderr: String,
}

impl Run {
    /// Runs `command` (a forge command) to its end.
    pub fn of(command: &mut Command) -> Self {
        let output = command.output().expect("forge runs");
        Self {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Panics with both streams unless forge exited with `code`.
    #[track_caller]
    pub fn expect_code(self, code: i32) -> Self {
        assert_eq!(
            self.code, code,
            "forge exited {} (wanted {code})\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        );
        self
    }

    /// stdout parsed as the one JSON document `--json` promises.
    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|error| {
            panic!(
                "stdout is not one JSON document ({error}):\n{}",
                self.stdout
            )
        })
    }
}

/// The default recipe's pins.toml `text` with FlashInfer's wheels looked up on package indexes
/// (the jit-cache wheel on its own) instead of downloaded from the release assets.
pub fn flashinfer_on_indexes(text: &str) -> String {
    let start = text
        .find("# The project's release assets")
        .expect("the default recipe's FlashInfer url");
    let end = start
        + text[start..]
            .find("]\n")
            .expect("the end of the wheel list")
        + 2;
    let indexed = "wheels = [\n  { package = \"flashinfer-python\" },\n  { package = \"flashinfer-cubin\" },\n  { package = \"flashinfer-jit-cache\", local = \"cu130\", index = \"https://flashinfer.ai/whl/cu130\" },\n]\n";
    format!("{}{indexed}{}", &text[..start], &text[end..])
}

/// A temporary recipe folder.
pub struct TestContext {
    dir: tempfile::TempDir,
}

impl TestContext {
    /// An empty folder.
    pub fn empty() -> Self {
        Self {
            dir: tempfile::tempdir().expect("a temporary folder"),
        }
    }

    /// A copy of the default recipe at the repository root (pins.toml, templates, patches,
    /// overlays, and its committed render ci/Dockerfile.rendered).
    pub fn default_recipe() -> Self {
        let context = Self::empty();
        let root = repository_root();
        std::fs::create_dir_all(context.path().join("ci")).expect("a ci folder");
        for entry in [
            "pins.toml",
            "templates",
            "patches",
            "overlays",
            "ci/Dockerfile.rendered",
        ] {
            copy_tree(&root.join(entry), &context.path().join(entry));
        }
        context
    }

    /// The default recipe with FlashInfer's wheels looked up on package indexes (the jit-cache
    /// wheel on its own) instead of downloaded from the release assets, its committed render
    /// brought up to date: the shape the index-driven pin moves are tested on.
    pub fn default_recipe_on_indexes() -> Self {
        let context = Self::default_recipe();
        context.write(
            "pins.toml",
            &flashinfer_on_indexes(&context.read("pins.toml")),
        );
        context
            .forge(&["render", "--out", "ci/Dockerfile.rendered"])
            .expect_code(0);
        context
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes `text` to `relative` inside the folder, creating parents.
    pub fn write(&self, relative: &str, text: &str) -> &Self {
        let path = self.path().join(relative);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("create parents");
        std::fs::write(path, text).expect("write");
        self
    }

    /// The text of `relative` inside the folder.
    pub fn read(&self, relative: &str) -> String {
        std::fs::read_to_string(self.path().join(relative)).expect("read")
    }

    /// Replaces the first occurrence of `from` with `to` in `relative`, which must contain it.
    pub fn edit(&self, relative: &str, from: &str, to: &str) -> &Self {
        let text = self.read(relative);
        assert!(text.contains(from), "{relative} does not contain {from:?}");
        self.write(relative, &text.replacen(from, to, 1))
    }

    /// Runs `forge -C <folder> args...`.
    pub fn forge(&self, args: &[&str]) -> Run {
        self.forge_with(args, &[])
    }

    /// Runs `forge -C <folder> args...` with extra environment variables.
    pub fn forge_with(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut command = self.forge_command(args);
        command.envs(env.iter().copied());
        Run::of(&mut command)
    }

    /// The command `forge -C <folder> args...`, run in the folder, without `SOURCE_DATE_EPOCH`
    /// and without colour, for a caller to add to its environment.
    pub fn forge_command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_forge"));
        command
            .arg("-C")
            .arg(self.path())
            .args(args)
            .current_dir(self.path());
        command.env_remove("SOURCE_DATE_EPOCH").env("NO_COLOR", "1");
        command
    }
}

/// Adds to the recipe in `context` a `[[patches]]` entry onto DeepGEMM, with `onto` as given,
/// before the overlays: a copy of the series in patches/pr4 as patches/deepgemm.
pub fn with_deepgemm_series(context: &TestContext, onto: &str) {
    copy_tree(
        &context.path().join("patches/pr4"),
        &context.path().join("patches/deepgemm"),
    );
    context.edit(
        "pins.toml",
        "[[overlays]]",
        &format!("[[patches]]\nseries = \"patches/deepgemm\"\nonto = {onto}\n\n[[overlays]]"),
    );
}

/// `forge render --out OUT --check` in `context` passes, and fails once pins.toml changes the
/// render; returns the failing run.
#[track_caller]
pub fn assert_check_catches_a_stale_render(context: &TestContext, out: &str) -> Run {
    context
        .forge(&["render", "--out", out, "--check"])
        .expect_code(0);
    context.edit(
        "pins.toml",
        "VLLM_DEEP_GEMM_WARMUP = \"skip\"",
        "VLLM_DEEP_GEMM_WARMUP = \"full\"",
    );
    let stale = context
        .forge(&["render", "--out", out, "--check"])
        .expect_code(1);
    assert_contains(&stale.stderr, "is out of date");
    stale
}

impl TestContext {
    /// Runs `forge -C <folder> args...` for at most `limit`, with its address space capped at
    /// 1 GiB: a forge that hangs is killed and gives `None`, one that would read without end
    /// fails to allocate instead of taking the machine's memory.
    pub fn forge_bounded(&self, args: &[&str], limit: Duration) -> Option<Run> {
        let streams = tempfile::tempdir().expect("a folder for the streams");
        let stdout = streams.path().join("stdout");
        let stderr = streams.path().join("stderr");
        let mut child = Command::new("sh")
            .arg("-c")
            .arg("ulimit -v 1048576 && exec \"$0\" \"$@\"")
            .arg(env!("CARGO_BIN_EXE_forge"))
            .arg("-C")
            .arg(self.path())
            .args(args)
            .current_dir(self.path())
            .env_remove("SOURCE_DATE_EPOCH")
            .env("NO_COLOR", "1")
            .stdin(std::process::Stdio::null())
            .stdout(std::fs::File::create(&stdout).expect("the stdout file"))
            .stderr(std::fs::File::create(&stderr).expect("the stderr file"))
            .spawn()
            .expect("forge starts");
        let deadline = Instant::now() + limit;
        let status = loop {
            if let Some(status) = child.try_wait().expect("forge can be waited for") {
                break Some(status);
            }
            if Instant::now() > deadline {
                stop(&mut child);
                break None;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let read = |path: &Path| {
            String::from_utf8_lossy(&std::fs::read(path).unwrap_or_default()).into_owned()
        };
        status.map(|status| Run {
            code: status.code().unwrap_or(-1),
            stdout: read(&stdout),
            stderr: read(&stderr),
        })
    }
}

/// Copies a file or folder tree.
pub fn copy_tree(from: &Path, to: &Path) {
    if from.is_dir() {
        std::fs::create_dir_all(to).expect("create folder");
        for entry in std::fs::read_dir(from).expect("read folder") {
            let entry = entry.expect("folder entry");
            copy_tree(&entry.path(), &to.join(entry.file_name()));
        }
    } else {
        std::fs::copy(from, to).expect("copy file");
    }
}

/// Panics, showing `haystack`, unless it contains `needle`.
#[track_caller]
pub fn assert_contains(haystack: &str, needle: &str) {
    assert!(
        haystack.contains(needle),
        "expected {needle:?} in:\n{haystack}"
    );
}

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

/// A `--json` document with what varies from run to run or machine to machine replaced by a
/// placeholder (digests, commit ids, temporary paths, loopback ports, times, and a build's
/// `steps`, which the builder's cache decides), pretty-printed: what a snapshot of its shape
/// compares.
pub fn json_shape(document: &serde_json::Value, root: &Path) -> String {
    fn walk(value: &serde_json::Value, root: &str) -> serde_json::Value {
        match value {
            serde_json::Value::Object(map) => map
                .iter()
                .map(|(key, value)| match (key.as_str(), value) {
                    ("steps", serde_json::Value::Array(steps))
                        if steps.iter().all(|step| step.get("state").is_some()) =>
                    {
                        (key.clone(), serde_json::Value::from("<steps>"))
                    }
                    _ => (key.clone(), walk(value, root)),
                })
                .collect::<serde_json::Map<_, _>>()
                .into(),
            serde_json::Value::Array(items) => items.iter().map(|item| walk(item, root)).collect(),
            serde_json::Value::String(text) => serde_json::Value::String(placeholders(text, root)),
            other => other.clone(),
        }
    }
    let root = root.display().to_string();
    serde_json::to_string_pretty(&walk(document, &root)).expect("JSON prints")
}

/// `text` with its temporary paths, digests, commit ids, ports and times replaced.
fn placeholders(text: &str, root: &str) -> String {
    // Test names carry the process id to stay apart from other runs.
    let mut out = text
        .replace(root, "<recipe>")
        .replace(&format!("-{}", std::process::id()), "-<pid>");
    let hex_run = |text: &str, at: usize| {
        text[at..]
            .bytes()
            .take_while(|byte| byte.is_ascii_hexdigit() && !byte.is_ascii_uppercase())
            .count()
    };
    let mut result = String::new();
    let mut at = 0;
    while at < out.len() {
        let rest = &out[at..];
        if let Some(after) = rest.strip_prefix("sha256:")
            && hex_run(after, 0) == 64
        {
            result.push_str("sha256:<digest>");
            at += 7 + 64;
            continue;
        }
        // An attachment's tag names the manifest it is attached to.
        if let Some(after) = rest.strip_prefix("sha256-")
            && hex_run(after, 0) == 64
        {
            result.push_str("sha256-<digest>");
            at += 7 + 64;
            continue;
        }
        let run = hex_run(&out, at);
        let boundary = at == 0 || !out.as_bytes()[at - 1].is_ascii_alphanumeric();
        if boundary
            && (run == 40 || run == 12)
            && !out[at + run..].starts_with(|c: char| c.is_ascii_alphanumeric())
        {
            result.push_str(if run == 40 { "<commit>" } else { "<short>" });
            at += run;
            continue;
        }
        let character = rest.chars().next().expect("not at the end");
        result.push(character);
        at += character.len_utf8();
    }
    out = result;
    for host in ["127.0.0.1:", "localhost:"] {
        let mut replaced = String::new();
        let mut rest = out.as_str();
        while let Some(found) = rest.find(host) {
            replaced.push_str(&rest[..found + host.len()]);
            rest = &rest[found + host.len()..];
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            if digits > 0 {
                replaced.push_str("<port>");
                rest = &rest[digits..];
            }
        }
        replaced.push_str(rest);
        out = replaced;
    }
    if out.len() >= 20 && out.as_bytes()[4] == b'-' && out.as_bytes()[10] == b'T' {
        return "<time>".to_owned();
    }
    out
}

/// The arguments of `git format-patch` as the patch tests call it (renames and copies found,
/// binary changes in full), followed by `rest`: where the mails go, and the range.
pub fn format_patch_args<'a>(rest: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["format-patch", "-M", "-C", "--binary"];
    args.extend_from_slice(rest);
    args
}

/// The arguments of `forge patch COMMAND --onto TARGET SERIES...`.
pub fn patch_args<'a>(
    command: &'a str,
    target: &'a Path,
    series: &'a [impl AsRef<Path>],
) -> Vec<&'a str> {
    let mut args = vec!["patch", command, "--onto", utf8(target)];
    args.extend(series.iter().map(|path| utf8(path.as_ref())));
    args
}

/// `path` as text, which the tests' temporary paths always are.
fn utf8(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

/// splitmix64: small, fast, reproducible from a seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound.max(1) as u64) as usize
    }

    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The build context `forge build --dry-run` assembles in `context`, read back as a tar archive.
pub fn dry_run_context(context: &TestContext) -> tar::Archive<std::fs::File> {
    let folder = tempfile::tempdir().unwrap();
    let archive = folder.path().join("context.tar");
    context
        .forge(&[
            "build",
            "--dry-run",
            "--context-out",
            archive.to_str().unwrap(),
        ])
        .expect_code(0);
    // An open file stays readable after its folder is removed.
    tar::Archive::new(std::fs::File::open(&archive).unwrap())
}
