//! The images the Docker tests build on and build: whether a daemon answers, the offline
//! example's base image made once per test process under a name of its own, copies of the offline example under a repository
//! name of each test's own (`Example`), and what the tests' daemon (or another, by `--host`)
//! says about an image.
//!
//! Docker tests fail when no daemon answers, unless `FORGE_SKIP_DOCKER=1`.

use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

use crate::support::image_guard::ImageGuard;
use crate::support::{Run, TestContext, copy_tree, repository_root};

/// The base image the offline example's recipe names.
pub(crate) const EXAMPLE_BASE: &str = "forge-example-base:busybox";

/// The base image the tests build the offline example on: the example's base made by this test
/// process under a name of its own, as long as `EXAMPLE_BASE` so that tables keep their
/// columns, and removed when the process ends (`removed_at_exit`). Another suite or a user on
/// the same daemon never sees it re-imported under a build.
pub(crate) fn base_image() -> &'static str {
    static NAME: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        let name = format!("forge-test-{:07}:busybox", std::process::id());
        assert_eq!(name.len(), EXAMPLE_BASE.len());
        name
    });
    &NAME
}

/// The line of the offline example's pins.toml that names its base, as the tests' copies hold
/// it.
pub(crate) fn base_line() -> String {
    format!("image = \"{}\"", base_image())
}
/// The offline example's dated tag, beside `latest`.
pub(crate) const DATED_TAG: &str = "2026-07-08-offline";

/// Whether the Docker tests run; panics when no daemon answers and skipping was not asked for.
pub(crate) fn docker_available() -> bool {
    if std::env::var("FORGE_SKIP_DOCKER").as_deref() == Ok("1") {
        return false;
    }
    let output = Command::new("docker")
        .args(["version", "--format", "{{.Server.APIVersion}}"])
        .output();
    match output {
        Ok(output) if output.status.success() => true,
        Ok(output) => panic!(
            "no Docker daemon is reachable ({}); start one, or set FORGE_SKIP_DOCKER=1 to skip the Docker tests",
            String::from_utf8_lossy(&output.stderr).trim()
        ),
        Err(error) => panic!(
            "the docker CLI cannot run ({error}); install docker, or set FORGE_SKIP_DOCKER=1 to skip the Docker tests"
        ),
    }
}

/// Whether the Docker tests run (as `docker_available` says), with the example's base image
/// made.
pub(crate) fn docker_ready() -> bool {
    docker_available() && {
        ensure_base_image();
        true
    }
}

/// Makes the example's base image under `base_image()`, with the example's own script, once
/// per test process.
pub(crate) fn ensure_base_image() {
    static MADE: Mutex<bool> = Mutex::new(false);
    let mut made = MADE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if *made {
        return;
    }
    removed_at_exit(base_image());
    let script = repository_root().join("examples/offline/make-base.sh");
    let output = Command::new("sh")
        .arg(&script)
        .arg(base_image())
        .output()
        .expect("make-base.sh runs");
    assert!(
        output.status.success(),
        "make-base.sh failed (is busybox-static installed?):\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    *made = true;
}

/// Untags `reference` on the tests' daemon when this test process ends, however it ends: one
/// watcher shell per process reads the names on a pipe whose other end only this process holds,
/// and removes them all when the pipe closes. It runs in a process group of its own, so an
/// interrupt of the test run does not stop it first.
pub(crate) fn removed_at_exit(reference: &str) {
    use std::io::Write as _;
    use std::os::unix::process::CommandExt as _;
    static WATCHER: Mutex<Option<std::process::ChildStdin>> = Mutex::new(None);
    let mut watcher = WATCHER
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if watcher.is_none() {
        let mut child = Command::new("sh")
            .args([
                "-c",
                r#"names=""; while read -r name; do names="$names $name"; done
[ -z "$names" ] || docker rmi $names >/dev/null 2>&1"#,
            ])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .spawn()
            .expect("a watcher shell");
        *watcher = child.stdin.take();
        // The watcher outlives the handle: it ends after this process does.
        std::mem::forget(child);
    }
    let pipe = watcher.as_mut().expect("the watcher's pipe");
    writeln!(pipe, "{reference}").expect("the watcher reads its names");
}

/// The daemon's platform, `os/architecture`, for a recipe built on it.
pub(crate) fn daemon_platform() -> String {
    let output = Command::new("docker")
        .args(["version", "--format", "{{.Server.Os}}/{{.Server.Arch}}"])
        .output()
        .expect("docker runs");
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// The id `reference` names in the local engine, asked of the docker CLI.
pub(crate) fn image_id(reference: &str) -> Option<String> {
    let output = Command::new("docker")
        .args(["image", "inspect", "--format", "{{.Id}}", reference])
        .output()
        .expect("docker runs");
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// A copy of the offline example whose image repository is unique to one test; every image
/// built from it is removed when it is dropped.
pub(crate) struct Example {
    pub(crate) context: TestContext,
    pub(crate) repository: String,
    images: ImageGuard,
}

impl Example {
    pub(crate) fn new(name: &str) -> Self {
        Self::with_repository(&format!("forge-test/{name}-{}", std::process::id()))
    }

    pub(crate) fn with_repository(repository: &str) -> Self {
        let context = TestContext::empty();
        copy_example(context.path());
        context.edit(
            "pins.toml",
            "repository = \"forge-example/offline\"",
            &format!("repository = \"{repository}\""),
        );
        let images = ImageGuard::new(repository);
        context.edit(
            "pins.toml",
            EXAMPLE_LABEL,
            &format!("{EXAMPLE_LABEL}\n{}", images.label_entry()),
        );
        Self {
            context,
            repository: repository.to_owned(),
            images,
        }
    }

    /// The ids of every image the daemon holds of this example's builds.
    pub(crate) fn images(&self) -> Vec<String> {
        self.images.images()
    }

    pub(crate) fn tag_id(&self, tag: &str) -> Option<String> {
        image_id(&format!("{}:{tag}", self.repository))
    }

    /// Panics unless both of the example's tags name the image `id`.
    #[track_caller]
    pub(crate) fn assert_tags_on(&self, id: &str) {
        assert_eq!(self.tag_id("latest").as_deref(), Some(id));
        assert_eq!(self.tag_id(DATED_TAG).as_deref(), Some(id));
    }

    /// Panics unless neither of the example's tags names an image.
    #[track_caller]
    pub(crate) fn assert_untagged(&self) {
        assert_eq!(self.tag_id("latest"), None);
        assert_eq!(self.tag_id(DATED_TAG), None);
    }

    /// Builds with `args` and `SOURCE_DATE_EPOCH` fixed, so forge.lock is reproducible too.
    pub(crate) fn build(&self, args: &[&str]) -> Run {
        self.build_with(args, &[])
    }

    /// `build` with `env` added.
    pub(crate) fn build_with(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        build_in(&self.context, args, env)
    }
}

/// `forge --json build --progress plain args...` in `context` with `env` added and
/// `SOURCE_DATE_EPOCH` fixed, so forge.lock is reproducible too. Every progress line it
/// prints fits 100 columns.
pub(crate) fn build_in(context: &TestContext, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut all = vec!["--json", "build", "--progress", "plain"];
    all.extend_from_slice(args);
    let mut env = env.to_vec();
    env.push(("SOURCE_DATE_EPOCH", "1783500000"));
    let run = context.forge_with(&all, &env);
    crate::support::assert_fits_100_columns("", &run.stderr);
    run
}

/// The offline example built on the tests' daemon, and its image id; `None` when the Docker
/// tests are skipped.
pub(crate) fn built(name: &str) -> Option<(Example, String)> {
    built_report(name).map(|(example, report)| (example, reported_id(&report)))
}

/// The offline example built on the tests' daemon, and the build's `--json` report; `None`
/// when the Docker tests are skipped.
pub(crate) fn built_report(name: &str) -> Option<(Example, serde_json::Value)> {
    if !docker_ready() {
        return None;
    }
    let example = Example::new(name);
    let report = example.build(&[]).expect_code(0).json();
    Some((example, report))
}

/// The image id a build's `--json` report names.
pub(crate) fn reported_id(report: &serde_json::Value) -> String {
    report["image"]["id"]
        .as_str()
        .expect("the build reports an image id")
        .to_owned()
}

/// The address of the daemon the tests build on: `DOCKER_HOST`, or the default socket.
pub(crate) fn daemon_host() -> String {
    std::env::var("DOCKER_HOST")
        .ok()
        .filter(|host| !host.is_empty())
        .unwrap_or_else(|| "unix:///var/run/docker.sock".to_owned())
}

/// The offline example's own label in pins.toml, after which a test adds its guard's.
pub(crate) const EXAMPLE_LABEL: &str = "\"dev.forge.example\" = \"offline\"";

/// Copies the offline example's recipe (pins.toml, templates, patches, overlays) into `to`,
/// its base the one this test process made (`base_image()`).
pub(crate) fn copy_example(to: &Path) {
    let example = repository_root().join("examples/offline");
    for entry in ["pins.toml", "templates", "patches", "overlays"] {
        copy_tree(&example.join(entry), &to.join(entry));
    }
    on_the_tests_base(&to.join("pins.toml"));
}

/// Points the offline example's pins.toml at `path` to the base this test process made.
pub(crate) fn on_the_tests_base(path: &Path) {
    let pins = std::fs::read_to_string(path).expect("the example's pins.toml");
    let line = format!("image = \"{EXAMPLE_BASE}\"");
    assert!(pins.contains(&line), "{} names its base", path.display());
    std::fs::write(path, pins.replace(&line, &base_line())).expect("pins.toml written");
}

/// The text of the example's forge.lock, if a build wrote one.
pub(crate) fn lock_text(example: &Example) -> Option<String> {
    std::fs::read_to_string(example.context.path().join("forge.lock")).ok()
}

/// The image `reference` names on the daemon at `host`.
pub(crate) fn id_on(host: &str, reference: &str) -> Option<String> {
    let output = Command::new("docker")
        .args([
            "-H", host, "image", "inspect", "--format", "{{.Id}}", reference,
        ])
        .output()
        .unwrap();
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// Tags the daemon was given by the test itself (not by forge, whose images `ImageGuard`
/// removes), untagged when dropped.
pub(crate) struct Tagged(pub(crate) Vec<String>);

impl Drop for Tagged {
    fn drop(&mut self) {
        for reference in &self.0 {
            let _ = Command::new("docker").args(["rmi", reference]).output();
        }
    }
}

/// Runs `docker ARGS`, panicking with its stderr when it fails.
pub(crate) fn docker(args: &[&str]) {
    let output = Command::new("docker").args(args).output().unwrap();
    assert!(
        output.status.success(),
        "docker {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
}
