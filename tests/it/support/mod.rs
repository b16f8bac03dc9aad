//! The test harness, shared by every test module: a temporary recipe folder and a way to run the
//! real `forge` binary in it (`TestContext`, `Run`), and the real servers, daemons, images and
//! keys the tests start on loopback. No test module imports from another; what two of them share
//! lives here.
//!
//! - `process`: tools that must succeed, free ports, waiting for a child, `LoopbackServer`;
//! - `http`: the request and answer the small servers on it read and write;
//! - `snapshot`: the placeholders snapshots compare through, and `forge_snapshot!`;
//! - `images`: the Docker daemon, the offline example's base image and `Example` copies of it;
//!   `image_guard`, `host_image`, `git_image`, `python_image`: images made on the spot;
//! - `node`: a second Docker daemon in a network namespace of its own, and the bridge that lets
//!   a namespace reach the host's loopback; `engines`: the Docker engines users run, shared;
//! - `registry`, `index`, `release`, `git_http`, `git`: a registry, a package index, a project's
//!   releases, a git server over smart HTTP and bare git remotes, all on loopback;
//!   `referrers_api`: a registry with the OCI referrers API (a proxy in front of `registry`);
//! - `tls`, `credential_helper`, `keys`: certificates and stunnel, a docker credential helper,
//!   signing keys; `cosign`: the real cosign 2 and 3, and their verdict on an image;
//! - `pip`: a rendered install step run by pip itself;
//! - `verify`: `forge verify-digest` and its rows.

pub(crate) mod cosign;
pub(crate) mod credential_helper;
pub(crate) mod engines;
pub(crate) mod git;
pub(crate) mod git_http;
pub(crate) mod git_image;
pub(crate) mod host_image;
pub(crate) mod http;
pub(crate) mod image_guard;
pub(crate) mod images;
pub(crate) mod index;
pub(crate) mod keys;
pub(crate) mod node;
pub(crate) mod pip;
pub(crate) mod process;
pub(crate) mod python_image;
pub(crate) mod referrers_api;
pub(crate) mod registry;
pub(crate) mod release;
pub(crate) mod signed;
pub(crate) mod snapshot;
pub(crate) mod ssh;
pub(crate) mod tls;
pub(crate) mod verify;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

pub use process::{
    LoopbackServer, env_refs, free_port, git_in, run_tool, stdout_of, stop, wait_for_port,
    wait_until,
};
pub use snapshot::json_shape;

/// Writes `text` and a newline to stderr: why a test skipped a part, or what a long run found.
/// It goes through `std::io::Write`, past libtest's capture, so it shows even when the test
/// passes.
pub fn note(text: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "{text}");
}

/// The repository root, where the default recipe lives.
pub fn repository_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `folder`, at any depth.
pub fn rust_files(folder: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![folder.to_owned()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).expect("read folder") {
            let path = entry.expect("a folder entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|extension| extension == "rs") {
                files.push(path);
            }
        }
    }
    files
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

/// pins.toml `text` without the `files` any pin records (`files = [` to its closing `]` line):
/// every index pin installed unchecked, free to be edited to another version.
pub fn without_recorded_files(text: &str) -> String {
    let mut kept = Vec::new();
    let mut skipping = false;
    for line in text.lines() {
        if line.starts_with("files = [") {
            skipping = line != "files = []";
        } else if skipping {
            skipping = line != "]";
        } else {
            kept.push(line);
        }
    }
    kept.join("\n") + "\n"
}

/// A forge.lock for the default recipe as a build writes it, its `[base]` holding `base` (TOML
/// lines after its `image`, such as what `verify-digest --contents` records).
pub fn default_recipe_lock(base: &str) -> String {
    let digest = |c: char| format!("\"sha256:{}\"", c.to_string().repeat(64));
    format!(
        "version = 1\n\n[inputs]\npins = {}\ntemplates = {}\npatches = {}\noverlays = {}\ndockerfile = {}\ncontext = {}\n\n[base]\nimage = \"ghcr.io/aeon-7/aeon-vllm-ultimate:2026-07-01-v0.24.0\"\n{base}\n[image]\nrepository = \"ghcr.io/aeon-7/vllm-ultimate-deepseek-v4-gb10\"\nid = {}\n\n[[tags]]\nname = \"experimental-pr4\"\nmutability = \"moving\"\n",
        digest('1'),
        digest('2'),
        digest('3'),
        digest('4'),
        digest('5'),
        digest('6'),
        digest('7'),
    )
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
        self.forge_command_in("", args)
    }

    /// Runs `forge -C <folder>/<inner> args...`, from the folder: a member or lane of a
    /// workspace in it, say.
    pub fn forge_in(&self, inner: &str, args: &[&str]) -> Run {
        Run::of(&mut self.forge_command_in(inner, args))
    }

    /// The command `forge -C <folder>/<inner> args...`, as `forge_command` makes it.
    pub fn forge_command_in(&self, inner: &str, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_forge"));
        command
            .arg("-C")
            .arg(self.path().join(inner))
            .args(args)
            .current_dir(self.path());
        // Nothing of this machine's own that forge reads: a date, a GitHub token; and what forge
        // keeps in its cache folder (the paths of a base) stays in the test's own folder.
        command.env("XDG_CACHE_HOME", self.path().join(".cache"));
        command
            .env_remove("SOURCE_DATE_EPOCH")
            .env_remove("GH_TOKEN")
            .env_remove("GITHUB_TOKEN")
            .env_remove("CLICOLOR_FORCE")
            .env_remove("COSIGN_PASSWORD")
            .env_remove("GITHUB_ACTIONS")
            .env_remove("FORGE_SIGNING_PASSWORD")
            .env("NO_COLOR", "1")
            .env("COLUMNS", "100");
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
        self.forge_bounded_with(args, &[], limit)
    }

    /// `forge_bounded` with `env` set.
    pub fn forge_bounded_with(
        &self,
        args: &[&str],
        env: &[(&str, &str)],
        limit: Duration,
    ) -> Option<Run> {
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
            .env("COLUMNS", "100")
            .envs(env.iter().copied())
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

/// Panics, showing `haystack`, unless it contains `needle` once each run of white space in
/// either (a line break, a table's padding) is one space: for text forge wraps to the terminal.
#[track_caller]
pub fn assert_contains_flowed(haystack: &str, needle: &str) {
    let flowed = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flowed(haystack).contains(&flowed(needle)),
        "expected {needle:?}, white space aside, in:\n{haystack}"
    );
}

/// Panics, showing the line, unless every line of a command's answer (`stdout`) and every
/// progress line of its `stderr` (`[HH:MM:SS.mmm ...] ...` and the lines it goes on on) fits
/// 100 columns, as forge fits them at `COLUMNS=100`.
#[track_caller]
pub fn assert_fits_100_columns(stdout: &str, stderr: &str) {
    let mut progress = false;
    let progress_lines = stderr.lines().filter(|line| {
        progress = line.starts_with('[') || (progress && line.starts_with(&" ".repeat(20)));
        progress
    });
    for line in stdout.lines().chain(progress_lines) {
        assert!(
            line.chars().count() <= 100,
            "a line of {} columns:\n{line}",
            line.chars().count()
        );
    }
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

/// Runs forge in `context` with a clean environment: HOME, caches and configuration in a
/// temporary folder, no index or registry settings but those in `env`.
pub fn forge(context: &TestContext, args: &[&str], env: &[(&str, &str)]) -> Run {
    let home = context.path().join(".home");
    std::fs::create_dir_all(&home).expect("a home folder");
    let mut command = context.forge_command(args);
    for name in [
        "PIP_INDEX_URL",
        "PIP_EXTRA_INDEX_URL",
        "PIP_CONFIG_FILE",
        "NETRC",
        "FORGE_CACHE_DIR",
        "FORGE_INDEX_URL",
        "FORGE_REGISTRY_USER",
        "FORGE_REGISTRY_PASSWORD",
        "FORGE_REGISTRY_HOST",
        "DOCKER_CONFIG",
        "XDG_CONFIG_DIRS",
    ] {
        command.env_remove(name);
    }
    command
        .env("HOME", &home)
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_CONFIG_DIRS", home.join("xdg"))
        .envs(env.iter().copied());
    Run::of(&mut command)
}

/// The cells of `pin outdated`'s row for the pin `name`.
#[track_caller]
pub fn outdated_row<'a>(stdout: &'a str, name: &str) -> Vec<&'a str> {
    stdout
        .lines()
        .find(|line| line.starts_with(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no row for {name}:\n{stdout}"))
        .split_whitespace()
        .collect()
}

#[track_caller]
pub fn assert_hadolint_passes(dockerfile: &str) {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), dockerfile).unwrap();
    let output = Command::new("hadolint")
        .arg(file.path())
        .output()
        .expect("hadolint is on PATH (ci/test installs it in target/ci-venv)");
    assert!(
        output.status.success(),
        "hadolint failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Makes a FIFO at `path`.
pub(crate) fn fifo(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    if path.symlink_metadata().is_ok() {
        std::fs::remove_file(path).unwrap();
    }
    let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: `name` is a NUL-terminated path that outlives the call.
    let made = unsafe { libc::mkfifo(name.as_ptr(), 0o644) };
    assert_eq!(made, 0, "mkfifo {}", path.display());
}
