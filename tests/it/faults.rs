//! forge when things go wrong underneath a build: the daemon's connection cut mid-build, two
//! builds of one recipe at once, SIGINT during a build, a full disk when the record is written,
//! a registry gone mid-push, SIGKILL anywhere in a publication (after a push reached the
//! registry, with the old image pruned). Faults under `patch apply` are in `patch_faults`.
//! Each test takes the state that must survive (tags' image ids, forge.lock's bytes, a
//! repository's HEAD, index and worktree) before the fault and compares it after.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::image_guard::ImageGuard;
use crate::support::images::{
    DATED_TAG, EXAMPLE_LABEL, Example, built, docker_ready, image_id, reported_id,
};
use crate::support::process::Background;
use crate::support::registry::{MANIFEST, RegistryServer};
use crate::support::snapshot::forge_snapshot;
use crate::support::{TestContext, assert_contains};

/// The lines of `stderr` that are forge's word on how a command ended (`error:`, `hint:`,
/// `warning:`), without the builder's output around them, which its cache and timing decide,
/// nor the causes, which quote the daemon's own words.
fn outcome(stderr: &str) -> String {
    stderr
        .lines()
        .filter(|line| {
            ["error:", "hint:", "warning:"]
                .iter()
                .any(|word| line.starts_with(word))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

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
    let recipe = std::fs::canonicalize(example.context.path()).unwrap();
    let refusal = second
        .stderr
        .replace(&recipe.display().to_string(), "<canonical recipe>");
    forge_snapshot!(refusal, example.context.path(), @"
    error: another `forge build` is running on the recipe <canonical recipe>
    hint: wait for it to finish (its tags and forge.lock are moved only when it succeeds), then build again
    ");
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
    forge_snapshot!(outcome(&stderr), example.context.path(), @"
    warning: the registry did not say within 10 s whether it holds the build cache 127.0.0.1:<port>/forge-test/silent-registry-<pid>:buildcache; building without it
    error: interrupted by SIGINT before the build was recorded
    hint: every tag moved was put back and forge.lock is as it was; build again to finish
    ");
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
    forge_snapshot!(outcome(&run.stderr), example.context.path(), @"
    error: the push stopped part way: pushed 2026-07-08-offline; not pushed latest
    hint: the tags stay on the image built and forge.lock records the digests pushed; run `forge build --push` again to push the rest
    hint: check the registry's address and credentials (~/.docker/config.json, or FORGE_REGISTRY_USER and FORGE_REGISTRY_PASSWORD, which go to the recipe's registry or the host FORGE_REGISTRY_HOST names)
    ");
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
    let report = stuck
        .stderr
        .replace(&first, "<first>")
        .replace(&built, "<built>");
    forge_snapshot!(report, folder, @"
    error: cannot put forge-test/kill-pruned-<pid>:latest back: the image it named before the interrupted publication (<first>) is no longer on the daemon
    hint: nothing was moved; `forge recover --roll-forward` keeps every tag on the new image <short> and records it in forge.lock; `forge recover --drop` forgets the publication, leaving the tags and forge.lock as they are now
    ");
    assert!(folder.join("forge.lock.intent").exists());
    example.assert_tags_on(&built);
    assert_eq!(lock_bytes(folder).unwrap(), old_lock);

    let recovered = example
        .context
        .forge(&["--json", "recover", "--roll-forward"])
        .expect_code(0);
    assert_eq!(recovered.json()["settled"], "rolled-forward");
    let report = recovered
        .stderr
        .replace(&first, "<first>")
        .replace(&built, "<built>");
    forge_snapshot!(report, folder, @"   Recovered the publication of <short> is kept as asked: its tags stay on the new image and forge.lock records it");
    assert!(!folder.join("forge.lock.intent").exists());
    example.assert_tags_on(&built);
    let lock = String::from_utf8(lock_bytes(folder).unwrap()).unwrap();
    assert!(lock.contains(&format!("id = \"{built}\"")), "{lock}");
    crate::support::verify::verify(&example, &[], &[]).expect_code(0);
    let again = example.context.forge(&["recover"]).expect_code(0);
    forge_snapshot!(again.stderr, folder, @"       Fresh no interrupted publication in .");
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
    let mut refusals = String::new();
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
        refusals += &crate::support::snapshot::human(&run.stderr, context.path());
        refusals += "\n";
    }
    forge_snapshot!(refusals, "", @"
    error: cannot read forge.lock
    caused by: it is a FIFO (a named pipe), not a file forge wrote
    hint: check the recipe folder's permissions
    error: cannot read forge.lock.intent
    caused by: it is a FIFO (a named pipe), not a file forge wrote
    hint: check the recipe folder's permissions and free space
    error: cannot read forge.lock
    caused by: it is a character device, not a file forge wrote
    hint: check the recipe folder's permissions
        Applying 2 patches onto repo
    error: cannot apply patches/pr4 onto repo; nothing was changed
    caused by: cannot read the apply's intent <recipe>/repo/.git/FORGE_APPLY
    caused by: it is a FIFO (a named pipe), not a file forge wrote
    hint: check the repository's git folder's permissions and free space
    ");
}
