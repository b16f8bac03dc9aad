//! forge when things go wrong underneath it: the daemon's connection cut mid-build, two builds
//! of one recipe at once, SIGINT during a build and during a patch series, a full disk when the
//! record is written, a registry gone mid-push, SIGKILL anywhere in a publication (after a
//! push reached the registry, with the old image pruned), and hostile patches (a 100 MB one,
//! one that writes through a symlink).
//! Each test takes the state that must survive (tags' image ids, forge.lock's bytes, a
//! repository's HEAD, index and worktree) before the fault and compares it after.

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::image_guard::ImageGuard;
use crate::support::images::{
    DATED_TAG, EXAMPLE_LABEL, Example, built, docker_ready, image_id, reported_id,
};
use crate::support::process::Background;
use crate::support::registry::{MANIFEST, RegistryServer};
use crate::support::{TestContext, assert_contains, git_in, patch_args};

/// The socket the daemon listens on in these tests (the default one).
const DAEMON_SOCKET: &str = "/var/run/docker.sock";

/// Makes the example's Dockerfile take a few seconds after its context is uploaded, so that a
/// fault can be put in the middle of the build. The step is new to the build cache each time.
fn slow_down(context: &TestContext) {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    context.edit(
        "templates/Dockerfile.j2",
        "# The smoke gate:",
        &format!(
            "RUN sleep 4 && echo {}-{nanos}\n\n# The smoke gate:",
            std::process::id()
        ),
    );
}

/// A Unix-socket forwarder between forge and the daemon that notices the build request and
/// can be cut: every connection through it is shut down and new ones are refused.
struct DaemonProxy {
    path: PathBuf,
    build_requested: Arc<AtomicBool>,
    /// When set, the daemon's answer to each tag request (the only `201 Created` forge gets)
    /// waits 300 ms before it reaches forge: the tag has moved, forge does not know yet.
    slow_tags: Arc<AtomicBool>,
    /// How many answers to tags of the image's own repository (`201 Created`) have started on
    /// their way to forge; not those of the names forge gives an image to move it through its
    /// conduit (`127.0.0.1:PORT/forge/…`).
    tag_answers: Arc<AtomicUsize>,
    cut: Arc<AtomicBool>,
    streams: Arc<Mutex<Vec<UnixStream>>>,
    _folder: tempfile::TempDir,
}

impl DaemonProxy {
    fn start() -> Self {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("docker.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let build_requested = Arc::new(AtomicBool::new(false));
        let slow_tags = Arc::new(AtomicBool::new(false));
        let tag_answers = Arc::new(AtomicUsize::new(0));
        let cut = Arc::new(AtomicBool::new(false));
        let streams = Arc::new(Mutex::new(Vec::new()));
        let slow = Arc::clone(&slow_tags);
        let counted = Arc::clone(&tag_answers);
        let (requested, is_cut, open) = (
            Arc::clone(&build_requested),
            Arc::clone(&cut),
            Arc::clone(&streams),
        );
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { break };
                if is_cut.load(Ordering::SeqCst) {
                    continue;
                }
                let daemon = UnixStream::connect(DAEMON_SOCKET).expect("the daemon's socket");
                {
                    let mut open = open.lock().unwrap();
                    open.push(client.try_clone().unwrap());
                    open.push(daemon.try_clone().unwrap());
                }
                let (client_reader, daemon_writer) =
                    (client.try_clone().unwrap(), daemon.try_clone().unwrap());
                let requested = Arc::clone(&requested);
                let tagging = Arc::new(AtomicBool::new(false));
                let asked = Arc::clone(&tagging);
                std::thread::spawn(move || {
                    pump(client_reader, daemon_writer, Some(&requested), Some(&asked));
                });
                let (slow, counted) = (Arc::clone(&slow), Arc::clone(&counted));
                std::thread::spawn(move || answers(daemon, client, &slow, (&counted, &tagging)));
            }
        });
        Self {
            path,
            build_requested,
            slow_tags,
            tag_answers,
            cut,
            streams,
            _folder: folder,
        }
    }

    fn host(&self) -> String {
        format!("unix://{}", self.path.display())
    }

    fn wait_for_build(&self) {
        let deadline = Instant::now() + Duration::from_secs(120);
        while !self.build_requested.load(Ordering::SeqCst) {
            assert!(
                Instant::now() < deadline,
                "forge never asked the daemon to build"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        for stream in self.streams.lock().unwrap().iter() {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
    }
}

/// Copies bytes from `from` to `to` until either side closes; with `build`, notes a build
/// request passing through; with `tagging`, notes whether the last request on the connection
/// tags the image's own repository.
fn pump(
    from: UnixStream,
    to: UnixStream,
    build: Option<&AtomicBool>,
    tagging: Option<&AtomicBool>,
) {
    copy_until_closed(&from, &to, |bytes| {
        if let Some(build) = build
            && bytes.windows(7).any(|window| window == b"/build?")
        {
            build.store(true, Ordering::SeqCst);
        }
        let starts_request = [&b"GET "[..], b"POST ", b"DELETE ", b"HEAD ", b"PUT "]
            .iter()
            .any(|method| bytes.starts_with(method));
        if let Some(tagging) = tagging
            && starts_request
        {
            let tag = bytes.windows(5).any(|window| window == b"/tag?");
            let conduit = bytes.windows(14).any(|window| window == b"repo=127.0.0.1");
            tagging.store(tag && !conduit, Ordering::SeqCst);
        }
    });
    let _ = to.shutdown(std::net::Shutdown::Write);
}

/// The daemon's answers on their way to forge, each `201 Created` to a tag of the image's own
/// repository counted in `tag_answers`; while `slow_tags` is set, each `201` waits 300 ms first.
fn answers(
    from: UnixStream,
    to: UnixStream,
    slow_tags: &AtomicBool,
    (tag_answers, tagging): (&AtomicUsize, &AtomicBool),
) {
    copy_until_closed(&from, &to, |bytes| {
        if bytes.starts_with(b"HTTP/1.1 201") {
            if tagging.load(Ordering::SeqCst) {
                tag_answers.fetch_add(1, Ordering::SeqCst);
            }
            if slow_tags.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(300));
            }
        }
    });
    let _ = to.shutdown(std::net::Shutdown::Write);
}

/// Copies bytes from `from` to `to` until either side closes, showing each chunk to `seen`
/// first.
fn copy_until_closed(mut from: impl Read, mut to: impl Write, seen: impl Fn(&[u8])) {
    let mut buffer = vec![0; 64 * 1024];
    loop {
        let count = match from.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(count) => count,
        };
        seen(&buffer[..count]);
        if to.write_all(&buffer[..count]).is_err() {
            break;
        }
    }
}

fn lock_bytes(folder: &Path) -> Option<Vec<u8>> {
    std::fs::read(folder.join("forge.lock")).ok()
}

/// forge.lock parses as TOML whenever it exists: never torn.
#[track_caller]
fn assert_lock_parses(folder: &Path) {
    if let Some(bytes) = lock_bytes(folder) {
        let text = String::from_utf8(bytes).expect("forge.lock is UTF-8");
        text.parse::<toml::Table>()
            .unwrap_or_else(|error| panic!("forge.lock does not parse: {error}\n{text}"));
    }
}

/// The example built once, its image id and forge.lock's bytes, and then slowed down so that
/// a fault can land in the middle of its next build; `None` when the Docker tests are skipped.
fn built_then_slowed(name: &str) -> Option<(Example, String, Vec<u8>)> {
    let (example, id) = built(name)?;
    let lock = lock_bytes(example.context.path()).unwrap();
    slow_down(&example.context);
    Some((example, id, lock))
}

/// A build cut short by a fault exited 2 saying each of `messages`, and moved nothing: both
/// tags still on `id`, forge.lock still `lock`.
#[track_caller]
fn assert_cut_short(
    example: &Example,
    (status, stderr): &(std::process::ExitStatus, String),
    messages: &[&str],
    id: &str,
    lock: &[u8],
) {
    assert_eq!(status.code(), Some(2), "{stderr}");
    for message in messages {
        assert_contains(stderr, message);
    }
    example.assert_tags_on(id);
    assert_eq!(lock_bytes(example.context.path()).as_deref(), Some(lock));
}

#[test]
fn a_daemon_that_goes_away_mid_build_moves_no_tag_and_the_next_run_reuses_the_cache() {
    let Some((example, id, lock)) = built_then_slowed("daemon-cut") else {
        return;
    };

    let proxy = DaemonProxy::start();
    let host = proxy.host();
    let run = Background::start(
        example.context.path(),
        &["build", "--progress", "plain"],
        &[("DOCKER_HOST", &host)],
    );
    proxy.wait_for_build();
    std::thread::sleep(Duration::from_millis(1500));
    proxy.cut();
    let unreachable = format!("error: cannot reach the Docker daemon at {host}");
    assert_cut_short(
        &example,
        &run.finish(),
        &[&unreachable, "hint: start the Docker daemon"],
        &id,
        &lock,
    );

    // Straight to the daemon this time: the steps before the cut come from the cache. The
    // slower Dockerfile is a new image, so the dated tag moves only with --force.
    let again = example.build(&["--force"]).expect_code(0);
    assert_contains(&again.stderr, " cached");
    let second = reported_id(&again.json());
    assert_ne!(second, id);
    assert_eq!(example.tag_id("latest").as_deref(), Some(second.as_str()));
    assert_ne!(lock_bytes(example.context.path()), Some(lock));
    assert_lock_parses(example.context.path());
    let _ = Command::new("docker").args(["image", "rm", &id]).output();
}

#[test]
fn a_second_build_of_the_same_recipe_is_refused_while_the_first_runs() {
    if !docker_ready() {
        return;
    }
    let example = Example::new("two-at-once");
    slow_down(&example.context);
    let first = Background::start(
        example.context.path(),
        &["--json", "build", "--progress", "plain"],
        &[],
    );
    first.wait_for("Building");
    let second = example.build(&[]).expect_code(2);
    assert_contains(
        &second.stderr,
        &format!(
            "error: another `forge build` is running on the recipe {}",
            std::fs::canonicalize(example.context.path())
                .unwrap()
                .display()
        ),
    );
    assert_contains(&second.stderr, "hint: wait for it to finish");
    assert_lock_parses(example.context.path());
    let (status, stderr) = first.finish();
    assert!(status.success(), "{stderr}");
    assert_lock_parses(example.context.path());
    let id = example
        .tag_id("latest")
        .expect("the first build tagged its image");
    let lock = String::from_utf8(lock_bytes(example.context.path()).unwrap()).unwrap();
    assert!(lock.contains(&format!("id = \"{id}\"")), "{lock}");

    // Once the first is done the lock is free again.
    example.build(&[]).expect_code(0);
    assert_lock_parses(example.context.path());
}

#[test]
fn sigint_during_a_build_moves_no_tag_and_leaves_the_record() {
    let Some((example, id, lock)) = built_then_slowed("sigint-build") else {
        return;
    };

    let run = Background::start(
        example.context.path(),
        &["build", "--progress", "plain", "--force"],
        &[],
    );
    run.wait_for("Building");
    std::thread::sleep(Duration::from_millis(1500));
    run.signal("INT");
    assert_cut_short(
        &example,
        &run.finish(),
        &[
            "error: interrupted by SIGINT before the build was recorded",
            "forge.lock is as it was",
        ],
        &id,
        &lock,
    );
}

/// A registry that takes connections and never answers: Ctrl-C during the check of the dated
/// tag in the registry ends forge at once, with nothing moved and no record.
#[test]
fn sigint_while_a_registry_does_not_answer_ends_the_build_at_once() {
    if !docker_ready() {
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    let name = format!("forge-test/silent-registry-{}", std::process::id());
    let example = Example::with_repository(&format!("127.0.0.1:{port}/{name}"));

    let run = Background::start(
        example.context.path(),
        &["build", "--push", "--progress", "plain"],
        &[],
    );
    run.wait_for("Built");
    std::thread::sleep(Duration::from_millis(500));
    let signalled = Instant::now();
    run.signal("INT");
    let (status, stderr) = run.finish();
    assert!(
        signalled.elapsed() < Duration::from_secs(5),
        "forge took {:?} to stop:\n{stderr}",
        signalled.elapsed()
    );
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert_contains(
        &stderr,
        "error: interrupted by SIGINT before the build was recorded",
    );
    example.assert_untagged();
    assert_eq!(lock_bytes(example.context.path()), None);
}

/// A mounted tmpfs of `size`, unmounted when dropped.
struct Tmpfs {
    folder: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Self {
        let folder = tempfile::tempdir().unwrap();
        let output = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(folder.path())
            .output()
            .expect("mount runs");
        assert!(
            output.status.success(),
            "cannot mount a tmpfs to fill ({}); this test needs root (ci/test runs as root)",
            String::from_utf8_lossy(&output.stderr).trim()
        );
        Self { folder }
    }

    fn path(&self) -> &Path {
        self.folder.path()
    }

    /// Writes a file until the filesystem is full, then gives back `pages` pages of it.
    fn fill_leaving(&self, pages: u64) -> PathBuf {
        let path = self.path().join("filler");
        let mut file = std::fs::File::create(&path).unwrap();
        let block = vec![0u8; 4096];
        while file.write_all(&block).is_ok() {}
        let _ = file.sync_all();
        let length = file.metadata().unwrap().len();
        file.set_len(length - length % 4096 - pages * 4096).unwrap();
        path
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.folder.path()).status();
    }
}

#[test]
fn a_full_disk_while_recording_keeps_the_old_record_and_puts_the_tags_back() {
    if !docker_ready() {
        return;
    }
    let disk = Tmpfs::mount("4m");
    let recipe = disk.path().join("recipe");
    let repository = format!("forge-test/disk-full-{}", std::process::id());
    std::fs::create_dir_all(&recipe).unwrap();
    crate::support::images::copy_example(&recipe);
    let images = ImageGuard::new(&repository);
    let pins = std::fs::read_to_string(recipe.join("pins.toml")).unwrap();
    std::fs::write(
        recipe.join("pins.toml"),
        pins.replace(
            "repository = \"forge-example/offline\"",
            &format!("repository = \"{repository}\""),
        )
        .replace(
            EXAMPLE_LABEL,
            &format!("{EXAMPLE_LABEL}\n{}", images.label_entry()),
        ),
    )
    .unwrap();
    let tag_id = |tag: &str| image_id(&format!("{repository}:{tag}"));
    let build = |args: &[&str]| {
        let mut all = vec!["--json", "build", "--progress", "plain"];
        all.extend_from_slice(args);
        Background::start(&recipe, &all, &[]).finish()
    };

    let (status, stderr) = build(&[]);
    assert!(status.success(), "{stderr}");
    let id = tag_id("latest").unwrap();
    let lock = lock_bytes(&recipe).unwrap();

    // A new image, so a new record; then no room for it.
    let pins = std::fs::read_to_string(recipe.join("pins.toml")).unwrap();
    std::fs::write(
        recipe.join("pins.toml"),
        pins.replace("GREETING = \"hello\"", "GREETING = \"hello-disk\""),
    )
    .unwrap();
    // One page left: room for the intent written before the tags move, none for the record.
    let filler = disk.fill_leaving(1);
    let (status, stderr) = build(&["--force"]);
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(
        // Named as typed in the recipe folder, where -C puts forge.
        stderr.contains("error: cannot write forge.lock"),
        "{stderr}"
    );
    assert!(stderr.contains("No space left on device"), "{stderr}");
    assert!(stderr.contains("Restored"), "{stderr}");
    assert_eq!(lock_bytes(&recipe), Some(lock.clone()));
    assert_eq!(tag_id("latest").as_deref(), Some(id.as_str()));
    assert_eq!(tag_id(DATED_TAG).as_deref(), Some(id.as_str()));
    let leftovers: Vec<String> = std::fs::read_dir(&recipe)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(".forge-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // With room again the same build goes through and is recorded.
    std::fs::remove_file(filler).unwrap();
    let (status, stderr) = build(&["--force"]);
    assert!(status.success(), "{stderr}");
    let new_id = tag_id("latest").unwrap();
    assert_ne!(new_id, id);
    assert_eq!(tag_id(DATED_TAG).as_deref(), Some(new_id.as_str()));
    assert_ne!(lock_bytes(&recipe), Some(lock));
    assert_lock_parses(&recipe);
}

/// Runs git in `folder` with Ada Lovelace as author, panicking on failure; returns stdout.
#[track_caller]
fn git(folder: &Path, args: &[&str]) -> String {
    let identity = [
        ("GIT_AUTHOR_NAME", "Ada Lovelace"),
        ("GIT_AUTHOR_EMAIL", "ada@example.org"),
        ("GIT_COMMITTER_NAME", "Forge Test"),
        ("GIT_COMMITTER_EMAIL", "test@example.org"),
    ];
    git_in(folder, args, &identity)
}

/// A repository's HEAD, index, status and worktree files.
#[derive(Debug, PartialEq, Eq)]
struct RepositoryState {
    head: String,
    index: String,
    status: String,
    files: BTreeMap<PathBuf, Vec<u8>>,
}

fn repository_state(folder: &Path) -> RepositoryState {
    fn walk(root: &Path, folder: &Path, files: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(folder).unwrap() {
            let path = entry.unwrap().path();
            let relative = path.strip_prefix(root).unwrap().to_owned();
            if relative == Path::new(".git") {
                continue;
            }
            let metadata = std::fs::symlink_metadata(&path).unwrap();
            if metadata.file_type().is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                files.insert(relative, target.into_os_string().into_encoded_bytes());
            } else if metadata.is_dir() {
                walk(root, &path, files);
            } else {
                files.insert(relative, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut files = BTreeMap::new();
    walk(folder, folder, &mut files);
    RepositoryState {
        head: git(folder, &["rev-parse", "HEAD"]),
        index: git(folder, &["ls-files", "--stage"]),
        status: git(folder, &["status", "--porcelain", "--untracked-files=all"]),
        files,
    }
}

/// An empty repository `target` in `bench`, on `main`.
fn new_repository(bench: &Path) -> PathBuf {
    let target = bench.join("target");
    std::fs::create_dir_all(&target).unwrap();
    git(&target, &["init", "-q", "-b", "main"]);
    target
}

/// A repository `target` in `bench` with one commit, `base`, holding a README.
fn repository_with_a_base(bench: &Path) -> PathBuf {
    let target = new_repository(bench);
    std::fs::write(target.join("README"), "base\n").unwrap();
    git(&target, &["add", "."]);
    git(&target, &["commit", "-q", "-m", "base"]);
    target
}

/// A repository with one base commit and a series of `count` patches on it (made by git), the
/// repository reset to the base.
fn repository_with_series(bench: &Path, count: usize) -> (PathBuf, PathBuf) {
    let target = repository_with_a_base(bench);
    for index in 0..count {
        let folder = target.join(format!("part-{}", index % 16));
        std::fs::create_dir_all(&folder).unwrap();
        let text: String = (0..200)
            .map(|line| format!("patch {index} line {line}\n"))
            .collect();
        std::fs::write(folder.join(format!("file-{index}.txt")), text).unwrap();
        git(&target, &["add", "."]);
        git(&target, &["commit", "-q", "-m", &format!("part {index}")]);
    }
    let series = bench.join("series");
    git(
        &target,
        &[
            "format-patch",
            "-q",
            "-o",
            series.to_str().unwrap(),
            "HEAD~",
            "--root",
        ],
    );
    let _ = std::fs::remove_file(series.join("0001-base.patch"));
    git(&target, &["reset", "-q", "--hard", "HEAD~"]);
    git(
        &target,
        &["reset", "-q", "--hard", &format!("HEAD~{}", count - 1)],
    );
    (target, series)
}

#[test]
fn sigint_during_a_patch_series_leaves_the_repository_as_it_was() {
    let bench = TestContext::empty();
    let (target, series) = repository_with_series(bench.path(), 300);
    let before = repository_state(&target);
    let series = [series];
    let args = patch_args("apply", &target, &series);
    // How long the series takes to check, to interrupt the apply well inside it.
    let started = Instant::now();
    bench
        .forge(&patch_args("check", &target, &series))
        .expect_code(0);
    let takes = started.elapsed();

    let run = Background::start(bench.path(), &args, &[]);
    std::thread::sleep(takes / 3);
    run.signal("INT");
    let (status, stderr) = run.finish();
    let after = repository_state(&target);
    if status.signal() == Some(2) {
        assert_eq!(
            after, before,
            "interrupted, yet the repository changed:\n{stderr}"
        );
    } else {
        // The whole series went in before the signal arrived: all of it, cleanly.
        assert!(status.success(), "{stderr}");
        assert_eq!(after.status, "");
        assert_eq!(
            git(&target, &["rev-list", "--count", "HEAD"]).trim(),
            "301",
            "{stderr}"
        );
    }
}

/// Ctrl-C stops `patch apply` even when forge was started from a script that ignores SIGINT
/// (a non-interactive shell does so for `command &`), before anything is written.
#[test]
fn sigint_stops_a_patch_apply_started_with_sigint_ignored() {
    let bench = TestContext::empty();
    let (target, _) = repository_with_series(bench.path(), 1);
    let before = repository_state(&target);
    // One patch big enough that applying it takes a while: a file of two million lines.
    let mut mail = String::from(
        "From 0000000000000000000000000000000000000001 Mon Sep 17 00:00:00 2001\n\
         From: Big Patch <big@example.org>\nDate: Mon, 6 Jul 2026 14:12:09 +0200\n\
         Subject: [PATCH] a big file\n\n---\n\
         diff --git a/big b/big\nnew file mode 100644\nindex 0000000..1111111\n\
         --- /dev/null\n+++ b/big\n@@ -0,0 +1,2000000 @@\n",
    );
    for line in 0..2_000_000 {
        mail.push_str(&format!("+line {line} of a big file\n"));
    }
    let series = bench.path().join("big.patch");
    std::fs::write(&series, mail).unwrap();
    let script = format!(
        "trap '' INT; exec '{}' -C '{}' patch apply --onto '{}' '{}'",
        env!("CARGO_BIN_EXE_forge"),
        bench.path().display(),
        target.display(),
        series.display()
    );
    let mut child = Command::new("sh")
        .args(["-c", &script])
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sh starts");
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let started = lines
        .by_ref()
        .map_while(Result::ok)
        .any(|line| line.contains("Applying 1 patch"));
    assert!(started, "forge never started applying");
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = child.wait().unwrap();
    assert_eq!(
        status.signal(),
        Some(libc::SIGINT),
        "forge went on after SIGINT: {status:?}\n{}",
        rest.join("\n")
    );
    assert_eq!(repository_state(&target), before, "the repository changed");
}

/// A signal while the patched tree is being written out (one patch touching thousands of
/// files, so that writing them takes most of the run): the apply is all or nothing.
/// A repository of `FILES` files at its base commit, a series of one patch that changes every
/// file, and the tree the patch makes.
fn repository_changing_every_file(bench: &Path) -> (PathBuf, PathBuf, String) {
    const FILES: usize = 4000;
    let target = new_repository(bench);
    for index in 0..FILES {
        let folder = target.join(format!("part-{}", index % 40));
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join(format!("file-{index}.txt")),
            format!("{index}\n"),
        )
        .unwrap();
    }
    git(&target, &["add", "."]);
    git(&target, &["commit", "-q", "-m", "base"]);
    for index in 0..FILES {
        let path = target.join(format!("part-{}/file-{index}.txt", index % 40));
        std::fs::write(path, format!("{index}, changed\n")).unwrap();
    }
    git(&target, &["commit", "-q", "-a", "-m", "change every file"]);
    let series = bench.join("series");
    git(
        &target,
        &["format-patch", "-q", "-1", "-o", series.to_str().unwrap()],
    );
    let patched = git(&target, &["rev-parse", "HEAD^{tree}"]);
    git(&target, &["reset", "-q", "--hard", "HEAD~"]);
    (target, series, patched)
}

#[test]
fn sigint_while_the_patched_files_are_written_leaves_all_or_nothing() {
    let bench = TestContext::empty();
    let (target, series, patched) = repository_changing_every_file(bench.path());
    let before = repository_state(&target);
    let series = [series];
    let args = patch_args("apply", &target, &series);
    let started = Instant::now();
    bench.forge(&args).expect_code(0);
    let takes = started.elapsed();
    git(&target, &["reset", "-q", "--hard", "HEAD~"]);
    assert_eq!(repository_state(&target), before);

    let mut interrupted = 0;
    for step in 1..=12 {
        let run = Background::start(bench.path(), &args, &[]);
        std::thread::sleep(takes * step / 13);
        run.signal("INT");
        let (status, stderr) = run.finish();
        let after = repository_state(&target);
        if after.head == before.head {
            interrupted += 1;
            assert_eq!(
                after, before,
                "interrupted after {step}/13 of the run, HEAD stayed but the files did not:\n{stderr}"
            );
            assert!(!status.success(), "{stderr}");
        } else {
            // Everything went in: the new commit, its tree checked out, nothing left over.
            assert_eq!(after.status, "", "step {step}:\n{stderr}");
            assert_eq!(git(&target, &["rev-parse", "HEAD^{tree}"]), patched);
            git(&target, &["reset", "-q", "--hard", "HEAD~"]);
        }
    }
    assert!(interrupted > 0, "no run was interrupted before it finished");
}

#[test]
fn a_100_mb_patch_applies_within_bounded_memory_and_time() {
    let bench = TestContext::empty();
    let target = repository_with_a_base(bench.path());
    const LINES: usize = 1_700_000;
    let row = format!("+{}\n", "x".repeat(58));
    let patch = bench.path().join("big.patch");
    {
        let mut file = std::io::BufWriter::new(std::fs::File::create(&patch).unwrap());
        write!(
            file,
            "From 2222222222222222222222222222222222222222 Mon Sep 17 00:00:00 2001\n\
             From: Big Patch <big@example.org>\nDate: Mon, 6 Jul 2026 14:12:09 +0200\n\
             Subject: [PATCH] one big file\n\n---\n\
             diff --git a/big.txt b/big.txt\nnew file mode 100644\nindex 0000000..1111111\n\
             --- /dev/null\n+++ b/big.txt\n@@ -0,0 +1,{LINES} @@\n"
        )
        .unwrap();
        for _ in 0..LINES {
            file.write_all(row.as_bytes()).unwrap();
        }
        file.write_all(b"-- \n2.47.3\n").unwrap();
    }
    assert!(std::fs::metadata(&patch).unwrap().len() > 100_000_000);

    // 1.5 GB of address space for a 100 MB patch; a copy per line or per hunk would not fit.
    let started = Instant::now();
    let output = Command::new("sh")
        .args(["-c", "ulimit -v 1500000 && exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_forge"))
        .args(["patch", "apply", "--onto"])
        .arg(&target)
        .arg(&patch)
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        .env("GIT_COMMITTER_NAME", "Forge Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.org")
        .output()
        .unwrap();
    let took = started.elapsed();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(took < Duration::from_secs(120), "took {took:?}");
    let size = git(&target, &["cat-file", "-s", "HEAD:big.txt"]);
    assert_eq!(size.trim(), (LINES * 59).to_string());
    assert_eq!(
        git(&target, &["log", "-1", "--format=%an <%ae>"]).trim(),
        "Big Patch <big@example.org>"
    );
    assert_eq!(git(&target, &["status", "--porcelain"]), "");
}

/// Runs `forge args...` in `folder` within `kib` KiB of address space.
fn forge_within(folder: &Path, kib: u64, args: &[&str]) -> std::process::Output {
    Command::new("sh")
        .args(["-c", &format!("ulimit -v {kib} && exec \"$0\" \"$@\"")])
        .arg(env!("CARGO_BIN_EXE_forge"))
        .arg("-C")
        .arg(folder)
        .args(args)
        .current_dir(folder)
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        .env("GIT_COMMITTER_NAME", "Forge Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.org")
        .env_remove("SOURCE_DATE_EPOCH")
        .output()
        .unwrap()
}

/// A file of a patched overlay that the series leaves alone streams from the recipe into the
/// scratch repository and the context, as it does in an unpatched overlay: a 400 MB file goes
/// through within 300 MB of address space.
#[test]
fn a_large_file_in_a_patched_overlay_streams_into_the_context() {
    let context = TestContext::default_recipe();
    const SIZE: u64 = 400 * 1024 * 1024;
    let big = context.path().join("overlays/vllm/weights.bin");
    let file = std::fs::File::create(&big).unwrap();
    file.set_len(SIZE).unwrap();
    drop(file);
    let started = Instant::now();
    let output = forge_within(context.path(), 300_000, &["--json", "build", "--dry-run"]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert!(output.status.success(), "{stderr}");
    assert_contains(&stderr, "Patched patches/pr4 onto ");
    let bytes = serde_json::from_str::<serde_json::Value>(&stdout)
        .ok()
        .and_then(|plan| plan["context_size"].as_u64())
        .unwrap_or_else(|| panic!("no context size in {stdout}"));
    assert!(bytes > SIZE, "the context holds {bytes} bytes");
    assert!(
        started.elapsed() < Duration::from_secs(120),
        "took {:?}",
        started.elapsed()
    );
}

/// A patch that changes a file larger than the patch stage holds in memory is refused by name,
/// before the file is read, and nothing is applied.
#[test]
fn a_patch_to_a_file_past_the_limit_is_refused_by_name() {
    let bench = TestContext::empty();
    let target = repository_with_a_base(bench.path());
    let big = std::fs::File::create(target.join("big.txt")).unwrap();
    big.set_len(200 * 1024 * 1024).unwrap();
    drop(big);
    git(&target, &["add", "big.txt"]);
    git(&target, &["commit", "-q", "-m", "a big file"]);
    bench.write(
        "big.patch",
        "From 1111111111111111111111111111111111111111 Mon Sep 17 00:00:00 2001\n\
         From: Big Patch <big@example.org>\nDate: Mon, 6 Jul 2026 14:12:09 +0200\n\
         Subject: [PATCH] change the big file\n\n---\n\
         diff --git a/big.txt b/big.txt\n--- a/big.txt\n+++ b/big.txt\n\
         @@ -1 +1 @@\n-a\n+b\n-- \n2.47.3\n",
    );
    let head = git(&target, &["rev-parse", "HEAD"]);
    let series = [bench.path().join("big.patch")];
    for command in ["check", "apply"] {
        let output = forge_within(
            bench.path(),
            300_000,
            &patch_args(command, &target, &series),
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert_contains(
            &stderr,
            "big.patch: cannot patch big.txt: it is 209715200 bytes, more than the 128 MiB a patched file may have",
        );
        assert_contains(&stderr, "nothing was applied");
        assert_eq!(git(&target, &["rev-parse", "HEAD"]), head, "HEAD moved");
    }
}

#[test]
fn a_patch_through_a_symlink_is_refused_and_writes_nothing() {
    let bench = TestContext::empty();
    let outside = bench.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let target = new_repository(bench.path());
    std::os::unix::fs::symlink("../outside", target.join("link")).unwrap();
    std::fs::write(target.join("a.txt"), "a\n").unwrap();
    git(&target, &["add", "."]);
    git(&target, &["commit", "-q", "-m", "base"]);
    let mail = "From 1111111111111111111111111111111111111111 Mon Sep 17 00:00:00 2001\n\
        From: Mallory <mallory@example.org>\nDate: Mon, 6 Jul 2026 14:12:09 +0200\n\
        Subject: [PATCH] through the link\n\n---\n\
        diff --git a/link/evil.txt b/link/evil.txt\nnew file mode 100644\nindex 0000000..4903981\n\
        --- /dev/null\n+++ b/link/evil.txt\n@@ -0,0 +1 @@\n+owned\n-- \n2.47.3\n";
    bench.write("evil.patch", mail);
    let head = git(&target, &["rev-parse", "HEAD"]);
    let series = [bench.path().join("evil.patch")];
    for command in ["check", "apply"] {
        let run = bench
            .forge(&patch_args(command, &target, &series))
            .expect_code(2);
        assert_contains(&run.stderr, "link/evil.txt");
        assert_contains(&run.stderr, "it goes through a symbolic link");
        assert_eq!(git(&target, &["rev-parse", "HEAD"]), head, "HEAD moved");
        assert!(
            std::fs::symlink_metadata(target.join("link"))
                .unwrap()
                .file_type()
                .is_symlink(),
            "the link was replaced"
        );
        let written: Vec<_> = std::fs::read_dir(&outside).unwrap().collect();
        assert!(
            written.is_empty(),
            "`forge patch {command}` wrote through the symlink"
        );
    }
}

/// A TCP forwarder in front of a registry that, once `cut` is armed, lets the first manifest
/// upload through and then drops every connection, as a registry going away mid-push would;
/// `heal` lets connections through again.
struct RegistryProxy {
    port: u16,
    armed: Arc<AtomicBool>,
    cut: Arc<AtomicBool>,
    streams: Arc<Mutex<Vec<TcpStream>>>,
}

impl RegistryProxy {
    fn start(registry: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let armed = Arc::new(AtomicBool::new(false));
        let cut = Arc::new(AtomicBool::new(false));
        let streams = Arc::new(Mutex::new(Vec::new()));
        let (is_armed, is_cut, open) = (Arc::clone(&armed), Arc::clone(&cut), Arc::clone(&streams));
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { break };
                if is_cut.load(Ordering::SeqCst) {
                    continue;
                }
                let Ok(upstream) = TcpStream::connect(("127.0.0.1", registry)) else {
                    continue;
                };
                {
                    let mut open = open.lock().unwrap();
                    open.push(client.try_clone().unwrap());
                    open.push(upstream.try_clone().unwrap());
                }
                let (client_reader, upstream_writer) =
                    (client.try_clone().unwrap(), upstream.try_clone().unwrap());
                let uploaded = Arc::new(AtomicBool::new(false));
                let noted = Arc::clone(&uploaded);
                let armed = Arc::clone(&is_armed);
                let gone = Arc::clone(&is_cut);
                std::thread::spawn(move || {
                    // Once cut, a request on a connection already open (forge's own client
                    // keeps one) finds the registry gone as a new connection does.
                    let (reader, writer) = (client_reader, upstream_writer);
                    let (closing, upstream) =
                        (reader.try_clone().unwrap(), writer.try_clone().unwrap());
                    forward(reader, writer, |bytes| {
                        if gone.load(Ordering::SeqCst) {
                            let _ = upstream.shutdown(std::net::Shutdown::Both);
                            let _ = closing.shutdown(std::net::Shutdown::Both);
                        }
                        if armed.load(Ordering::SeqCst)
                            && bytes.starts_with(b"PUT /v2/")
                            && bytes.windows(11).any(|window| window == b"/manifests/")
                        {
                            noted.store(true, Ordering::SeqCst);
                        }
                    })
                });
                let (cut, open) = (Arc::clone(&is_cut), Arc::clone(&open));
                std::thread::spawn(move || {
                    forward(upstream, client, |_| {
                        // The registry has answered the manifest upload: from here on it is gone.
                        // The connections open now are the ones to cut, taken at once: cut later,
                        // a fast test could have healed the proxy and opened new ones meanwhile.
                        if uploaded.load(Ordering::SeqCst) && !cut.swap(true, Ordering::SeqCst) {
                            let doomed: Vec<TcpStream> = open.lock().unwrap().drain(..).collect();
                            std::thread::spawn(move || {
                                // Time for the answer to reach the daemon first.
                                std::thread::sleep(Duration::from_millis(200));
                                for stream in doomed {
                                    let _ = stream.shutdown(std::net::Shutdown::Both);
                                }
                            });
                        }
                    })
                });
            }
        });
        Self {
            port,
            armed,
            cut,
            streams,
        }
    }

    fn arm(&self) {
        self.armed.store(true, Ordering::SeqCst);
    }

    fn heal(&self) {
        self.armed.store(false, Ordering::SeqCst);
        self.streams.lock().unwrap().clear();
        self.cut.store(false, Ordering::SeqCst);
    }
}

/// `copy_until_closed` between TCP streams, then the end of `to`'s writing.
fn forward(from: TcpStream, to: TcpStream, seen: impl Fn(&[u8])) {
    copy_until_closed(&from, &to, seen);
    let _ = to.shutdown(std::net::Shutdown::Write);
}

#[test]
fn a_registry_that_goes_away_mid_push_is_recorded_and_a_rerun_finishes_the_job() {
    if !docker_ready() {
        return;
    }
    let registry = RegistryServer::start();
    let proxy = RegistryProxy::start(registry.port());
    let name = format!("forge-test/push-cut-{}", std::process::id());
    let example = Example::with_repository(&format!("127.0.0.1:{}/{name}", proxy.port));
    proxy.arm();

    // The dated tag goes first; the registry is gone before the moving tag's push.
    let run = example.build(&["--push"]).expect_code(2);
    assert_contains(
        &run.stderr,
        &format!("error: the push stopped part way: pushed {DATED_TAG}; not pushed latest"),
    );
    assert_contains(&run.stderr, "run `forge build --push` again");
    assert_lock_parses(example.context.path());
    let lock = String::from_utf8(lock_bytes(example.context.path()).unwrap()).unwrap();
    let recorded: Vec<&str> = lock
        .lines()
        .filter_map(|line| line.strip_prefix("pushed = \""))
        .map(|line| line.trim_end_matches('"'))
        .collect();
    assert_eq!(recorded.len(), 1, "{lock}");
    assert!(
        lock.contains(&format!(
            "name = \"{DATED_TAG}\"\nmutability = \"immutable\"\npushed = \"{}\"",
            recorded[0]
        )),
        "{lock}"
    );
    assert!(
        lock.contains("name = \"latest\"\nmutability = \"moving\"\n\n"),
        "{lock}"
    );
    let manifest = |tag: &str| {
        registry
            .get(&format!("/v2/{name}/manifests/{tag}"), MANIFEST)
            .expect("the registry answers")
    };
    let (code, served, _) = manifest(DATED_TAG);
    assert_eq!((code, served.as_deref()), (200, Some(recorded[0])));
    assert_eq!(manifest("latest").0, 404);
    // The tags stay on the image the record names.
    let id = example.tag_id("latest").unwrap();
    assert_eq!(example.tag_id(DATED_TAG).as_deref(), Some(id.as_str()));
    assert!(lock.contains(&format!("id = \"{id}\"")), "{lock}");

    // The registry is back: the same build pushes the rest and records both.
    proxy.heal();
    let done = example.build(&["--push"]).expect_code(0).json();
    assert_eq!(done["image"]["id"].as_str(), Some(id.as_str()));
    let pushed = done["image"]["pushed"].as_array().unwrap();
    assert_eq!(pushed.len(), 2, "{done}");
    let (code, served, _) = manifest("latest");
    assert_eq!(code, 200);
    assert_eq!(served.as_deref(), Some(recorded[0]));
    assert_lock_parses(example.context.path());
}

#[test]
fn sigkill_during_the_checkout_is_finished_by_the_next_apply() {
    let bench = TestContext::empty();
    let (target, series, patched) = repository_changing_every_file(bench.path());
    let before = repository_state(&target);
    let series = [series];
    let args = patch_args("apply", &target, &series);
    let started = Instant::now();
    bench.forge(&args).expect_code(0);
    let takes = started.elapsed();
    git(&target, &["reset", "-q", "--hard", before.head.trim()]);

    // Half the kills land as soon as the checkout changes its first file; the others at
    // points spread over a whole run.
    let first_file = target.join("part-0/file-0.txt");
    let mut mid_checkout = 0;
    for step in 0..6 {
        let run = Background::start(bench.path(), &args, &[]);
        if step % 2 == 0 {
            let deadline = Instant::now() + Duration::from_secs(60);
            while std::fs::read(&first_file).unwrap_or_default() == b"0\n"
                && Instant::now() < deadline
            {
                std::thread::sleep(Duration::from_micros(200));
            }
        } else {
            std::thread::sleep(takes * step / 6);
        }
        run.signal("KILL");
        let (status, stderr) = run.finish();
        // A run may end before its kill arrives.
        assert!(
            status.signal() == Some(9) || status.success(),
            "step {step}: {status:?} {stderr}"
        );
        let after = repository_state(&target);
        let killed_mid_checkout = after.head == before.head && after != before;
        if killed_mid_checkout {
            mid_checkout += 1;
        } else if after.head != before.head {
            assert_eq!(after.status, "", "step {step}");
        }

        // The next apply finishes what the killed one started, or does it all itself.
        let next = bench.forge(&args).expect_code(0);
        assert_eq!(git(&target, &["rev-parse", "HEAD^{tree}"]), patched);
        assert_eq!(
            git(&target, &["status", "--porcelain", "--untracked-files=all"]),
            "",
            "step {step}"
        );
        if killed_mid_checkout {
            assert_contains(&next.stderr, "Recovered");
        }
        assert!(!target.join(".git/FORGE_APPLY").exists(), "step {step}");
        git(&target, &["reset", "-q", "--hard", before.head.trim()]);
    }
    assert!(mid_checkout > 0, "no kill landed during the checkout");
}

/// SIGKILL at points spread over the end of a build (as the first tag moves, between the tags,
/// just after the image is built, a little later; tag requests are slowed on their way to the
/// daemon so that the window between them is wide): whatever the point, the next forge command
/// of the recipe (`verify-digest` here) leaves both tags and forge.lock on the old image or
/// both on the new one, and no intent behind.
#[test]
fn sigkill_at_any_point_of_a_build_is_settled_to_all_old_or_all_new() {
    let Some((example, first)) = built("sigkill-build") else {
        return;
    };
    let folder = example.context.path();
    // Each tag request takes 300 ms on its way, so that kills land between the tags.
    let proxy = DaemonProxy::start();
    proxy.slow_tags.store(true, Ordering::SeqCst);
    let host = proxy.host();
    let mut old = (first, lock_bytes(folder).unwrap());
    let mut recovered = 0;
    for step in 0..8u32 {
        // Every run builds a new image (one step differs), so that every tag has to move.
        example.context.edit(
            "templates/Dockerfile.j2",
            "# The smoke gate:",
            &format!(
                "RUN echo kill-{}-{step}\n\n# The smoke gate:",
                std::process::id()
            ),
        );
        let run = Background::start(
            folder,
            &["build", "--progress", "plain", "--force"],
            &[("DOCKER_HOST", &host)],
        );
        match step % 4 {
            0 => run.wait_for("Tagged"),
            1 => {
                run.wait_for("Tagged");
                std::thread::sleep(Duration::from_millis(u64::from(step)));
            }
            2 => run.wait_for("Built"),
            _ => {
                run.wait_for("Built");
                std::thread::sleep(Duration::from_millis(5 * u64::from(step)));
            }
        }
        run.signal("KILL");
        let (status, stderr) = run.finish();
        assert!(
            status.signal() == Some(9) || status.success(),
            "step {step}: {status:?} {stderr}"
        );

        let next = crate::support::verify::verify(&example, &[], &[]);
        assert_ne!(next.code, 2, "step {step}: {}", next.stderr);
        recovered += usize::from(next.stderr.contains("Recovered"));
        assert!(!folder.join("forge.lock.intent").exists(), "step {step}");
        let lock = lock_bytes(folder).unwrap();
        let text = String::from_utf8(lock.clone()).unwrap();
        let latest = example.tag_id("latest").unwrap();
        example.assert_tags_on(&latest);
        if lock == old.1 {
            assert_eq!(
                latest, old.0,
                "step {step}: the tags moved, the record did not"
            );
        } else {
            assert!(
                text.contains(&format!("id = \"{latest}\"")),
                "step {step}: {text}"
            );
            old = (latest, lock);
        }
    }
    assert!(
        recovered > 0,
        "no kill landed between the first tag and the record"
    );
}

/// A TCP forwarder in front of a registry that holds back the registry's answer to the first
/// manifest upload for a minute, noting in `stored` that the registry has stored it: the
/// daemon, and so forge, cannot know yet that the push landed.
struct HoldingProxy {
    port: u16,
    stored: Arc<AtomicBool>,
}

impl HoldingProxy {
    fn start(registry: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stored = Arc::new(AtomicBool::new(false));
        let held = Arc::clone(&stored);
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { break };
                let Ok(upstream) = TcpStream::connect(("127.0.0.1", registry)) else {
                    continue;
                };
                let (client_reader, upstream_writer) =
                    (client.try_clone().unwrap(), upstream.try_clone().unwrap());
                let uploading = Arc::new(AtomicBool::new(false));
                let noted = Arc::clone(&uploading);
                std::thread::spawn(move || {
                    forward(client_reader, upstream_writer, |bytes| {
                        if bytes.starts_with(b"PUT /v2/")
                            && bytes.windows(11).any(|window| window == b"/manifests/")
                        {
                            noted.store(true, Ordering::SeqCst);
                        }
                    })
                });
                let held = Arc::clone(&held);
                std::thread::spawn(move || {
                    forward(upstream, client, |bytes| {
                        if uploading.swap(false, Ordering::SeqCst)
                            && bytes.starts_with(b"HTTP/1.1 201")
                            && !held.swap(true, Ordering::SeqCst)
                        {
                            std::thread::sleep(Duration::from_secs(60));
                        }
                    })
                });
            }
        });
        Self { port, stored }
    }

    #[track_caller]
    fn wait_until_stored(&self) {
        let deadline = Instant::now() + Duration::from_secs(300);
        while !self.stored.load(Ordering::SeqCst) {
            assert!(
                Instant::now() < deadline,
                "the registry never stored a manifest"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// SIGKILL once the registry stored the dated tag's manifest, before the daemon (and so
/// forge) heard back: the next forge command asks the registry, keeps both tags on the new
/// image and records the digest the registry holds; `forge build --push` then pushes the rest.
#[test]
fn sigkill_after_a_push_reached_the_registry_is_rolled_forward_from_what_it_holds() {
    if !docker_ready() {
        return;
    }
    let registry = RegistryServer::start();
    let proxy = HoldingProxy::start(registry.port());
    let name = format!("forge-test/push-kill-{}", std::process::id());
    let example = Example::with_repository(&format!("127.0.0.1:{}/{name}", proxy.port));
    let folder = example.context.path();
    let run = Background::start(folder, &["build", "--push", "--progress", "plain"], &[]);
    proxy.wait_until_stored();
    run.signal("KILL");
    let (status, stderr) = run.finish();
    assert_eq!(status.signal(), Some(9), "{stderr}");
    assert!(folder.join("forge.lock.intent").exists(), "{stderr}");
    assert_eq!(lock_bytes(folder), None, "no record before the kill");
    let built = example
        .tag_id("latest")
        .expect("the tags moved before the push");
    example.assert_tags_on(&built);

    let next = crate::support::verify::verify(&example, &[], &[]);
    assert_contains(&next.stderr, "Recovered");
    assert_contains(&next.stderr, "had pushed part of its tags");
    assert!(
        !folder.join("forge.lock.intent").exists(),
        "{}",
        next.stderr
    );
    example.assert_tags_on(&built);
    let (code, served, _) = registry
        .get(&format!("/v2/{name}/manifests/{DATED_TAG}"), MANIFEST)
        .expect("the registry answers");
    assert_eq!(code, 200);
    let served = served.expect("the registry names the manifest's digest");
    let lock = String::from_utf8(lock_bytes(folder).unwrap()).unwrap();
    assert!(lock.contains(&format!("id = \"{built}\"")), "{lock}");
    assert!(
        lock.contains(&format!(
            "name = \"{DATED_TAG}\"\nmutability = \"immutable\"\npushed = \"{served}\""
        )),
        "{lock}"
    );
    assert!(
        lock.contains("name = \"latest\"\nmutability = \"moving\"\n\n"),
        "{lock}"
    );
}

/// SIGKILL while the second tag moves, then the image both tags named before is removed: the
/// next forge cannot put them back, moves nothing, keeps the intent and names the choices;
/// `forge recover --roll-forward` keeps the tags on the new image and records it.
#[test]
fn a_kill_whose_old_image_is_gone_waits_for_forge_recover() {
    let Some((example, first)) = built("kill-pruned") else {
        return;
    };
    let folder = example.context.path();
    let proxy = DaemonProxy::start();
    proxy.slow_tags.store(true, Ordering::SeqCst);
    example.context.edit(
        "templates/Dockerfile.j2",
        "# The smoke gate:",
        &format!(
            "RUN echo pruned-{}\n\n# The smoke gate:",
            std::process::id()
        ),
    );
    let run = Background::start(
        folder,
        &["build", "--progress", "plain", "--force"],
        &[("DOCKER_HOST", &proxy.host())],
    );
    // The second tag has moved on the daemon; its answer is on its way to forge.
    let deadline = Instant::now() + Duration::from_secs(300);
    while proxy.tag_answers.load(Ordering::SeqCst) < 2 {
        assert!(
            Instant::now() < deadline,
            "the tags never moved:\n{}",
            run.stderr.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    run.signal("KILL");
    let (status, stderr) = run.finish();
    assert_eq!(status.signal(), Some(9), "{stderr}");
    let old_lock = lock_bytes(folder).unwrap();
    let built = example.tag_id("latest").unwrap();
    assert_ne!(built, first);
    example.assert_tags_on(&built);
    let removed = Command::new("docker")
        .args(["rmi", &first])
        .output()
        .unwrap();
    assert!(removed.status.success(), "{removed:?}");

    let stuck = crate::support::verify::verify(&example, &[], &[]).expect_code(2);
    assert_contains(
        &stuck.stderr,
        &format!("({first}) is no longer on the daemon"),
    );
    assert_contains(
        &stuck.stderr,
        "hint: nothing was moved; `forge recover --roll-forward`",
    );
    assert_contains(&stuck.stderr, "`forge recover --drop`");
    assert!(folder.join("forge.lock.intent").exists());
    example.assert_tags_on(&built);
    assert_eq!(lock_bytes(folder).unwrap(), old_lock);

    let recovered = example
        .context
        .forge(&["--json", "recover", "--roll-forward"])
        .expect_code(0);
    assert_eq!(recovered.json()["settled"], "rolled-forward");
    assert_contains(&recovered.stderr, "is kept as asked");
    assert!(!folder.join("forge.lock.intent").exists());
    example.assert_tags_on(&built);
    let lock = String::from_utf8(lock_bytes(folder).unwrap()).unwrap();
    assert!(lock.contains(&format!("id = \"{built}\"")), "{lock}");
    crate::support::verify::verify(&example, &[], &[]).expect_code(0);
    let again = example.context.forge(&["recover"]).expect_code(0);
    assert_contains(&again.stderr, "no interrupted publication in");
}

/// A series of 10,000 patches, named as `git format-patch --start-number 1` would past 9999
/// (`9999-...`, `10000-...`), each moving one counter on by one so that any other order
/// conflicts: `patch check` finds every one applying, in git's order, within 1 GiB of address
/// space.
#[test]
fn ten_thousand_patches_check_in_order_within_bounded_memory() {
    let bench = TestContext::empty();
    let target = new_repository(bench.path());
    std::fs::write(target.join("counter.txt"), "0\n").unwrap();
    git(&target, &["add", "."]);
    git(&target, &["commit", "-q", "-m", "base"]);
    let series = bench.path().join("series");
    std::fs::create_dir_all(&series).unwrap();
    const COUNT: usize = 10_000;
    for number in 1..=COUNT {
        let name = if number < 10_000 {
            format!("{number:04}-count-{number}.patch")
        } else {
            format!("{number}-count-{number}.patch")
        };
        let mail = format!(
            "From 1111111111111111111111111111111111111111 Mon Sep 17 00:00:00 2001\n\
             From: Many Patches <many@example.org>\nDate: Mon, 6 Jul 2026 14:12:09 +0200\n\
             Subject: [PATCH] count {number}\n\n---\n\
             diff --git a/counter.txt b/counter.txt\n--- a/counter.txt\n+++ b/counter.txt\n\
             @@ -1 +1 @@\n-{}\n+{number}\n-- \n2.47.3\n",
            number - 1
        );
        std::fs::write(series.join(name), mail).unwrap();
    }
    let started = Instant::now();
    let output = Command::new("sh")
        .args(["-c", "ulimit -v 1048576 && exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_forge"))
        .args(["patch", "check", "--onto"])
        .arg(&target)
        .arg(&series)
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        .output()
        .unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{}",
        &stderr[stderr.len().saturating_sub(2000)..]
    );
    assert_contains(
        &stderr,
        &format!("{COUNT} apply, 0 already applied, 0 conflicts"),
    );
    assert!(took < Duration::from_secs(120), "took {took:?}");
}

/// forge's own state files as special files or endless ones: forge.lock or forge.lock.intent a
/// FIFO, or a link to `/dev/zero`, and an apply's intent `.git/FORGE_APPLY` a FIFO. Each command
/// that reads them refuses at once naming the file and what it is, never blocking or reading
/// without end.
#[test]
fn forges_state_files_as_special_files_are_refused_without_being_read() {
    use std::time::Duration;
    let cases: [(&str, &[&str], &str); 4] = [
        ("forge.lock", &["verify-digest"], "FIFO"),
        ("forge.lock.intent", &["verify-digest"], "FIFO"),
        ("forge.lock", &["report"], "character device"),
        (
            "repo/.git/FORGE_APPLY",
            &["patch", "apply", "patches/pr4", "--onto", "repo"],
            "FIFO",
        ),
    ];
    for (file, command, kind) in cases {
        let context = crate::support::TestContext::default_recipe();
        crate::support::git_in(context.path(), &["init", "--quiet", "repo"], &[]);
        let path = context.path().join(file);
        if kind == "FIFO" {
            crate::support::fifo(&path);
        } else {
            std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
        }
        let run = context
            .forge_bounded(command, Duration::from_secs(30))
            .unwrap_or_else(|| panic!("{command:?} with {file} a {kind} hung"));
        assert_ne!(run.code, 0, "{command:?} with {file} a {kind}");
        let name = file.rsplit('/').next().unwrap();
        assert!(
            run.stderr.contains(name) && run.stderr.contains(kind),
            "{command:?} with {file} a {kind}:\n{}",
            run.stderr
        );
    }
}
