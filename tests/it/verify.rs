//! `forge verify-digest`: the offline example built on the real daemon, pushed to a real
//! `docker-registry` on loopback, then tampered with one way at a time. Each tampering must turn
//! exactly the row it touches to failing and exit 1; an unreachable node or a registry refusing
//! access exits 2.

use std::process::Command;

use serde_json::Value;

use crate::support::credential_helper::{CredentialHelper, HELPER};
use crate::support::image_guard::ImageGuard;
use crate::support::images::{
    DATED_TAG, Example, base_image, build_in, built, daemon_host, daemon_platform,
    docker_available, ensure_base_image, image_id, reported_id,
};
use crate::support::node::SecondDaemon;
use crate::support::python_image::{self, PythonImage};
use crate::support::registry::{self, MANIFEST, MANIFEST_LIST, RegistryServer, skopeo_copy};
use crate::support::registry::{no_credentials, path_of, registry_tools_missing};
use crate::support::snapshot::forge_snapshot;
use crate::support::verify::{failing, row, verify, verify_in};
use crate::support::{Run, TestContext, assert_contains, stdout_of};

#[test]
fn no_record_exits_2_naming_the_file() {
    let example = Example::new("verify-none");
    let run = example.context.forge(&["verify-digest"]).expect_code(2);
    forge_snapshot!(run.stderr, example.context.path(), @"
    error: there is no build record to verify: forge.lock does not exist
    hint: run `forge build` (with --push for --remote) to record a build here, or name the image (`forge verify-digest REF`) to verify the record attached to it in its registry
    ");
}

#[test]
fn local_checks_hold_after_a_build_and_name_a_moved_tag_and_a_stale_input() {
    let Some((example, id)) = built("verify-local") else {
        return;
    };
    let host = daemon_host();
    let json = verify(&example, &[], &[]).expect_code(0).json();
    assert_eq!(json["ok"], true, "{json:#}");
    let latest = format!("{host}: {}:latest", example.repository);
    let dated = format!("{host}: {}:{DATED_TAG}", example.repository);
    assert_eq!(row(&json, "tag", &latest)["actual"], id.as_str());
    assert_eq!(row(&json, "tag", &dated)["expected"], id.as_str());
    assert_eq!(
        row(&json, "tags agree", &format!("{host}: latest, {DATED_TAG}"))["actual"],
        "one image"
    );
    let base_id = image_id(base_image()).unwrap();
    assert_eq!(
        row(&json, "base id", &format!("{host}: {}", base_image()))["actual"],
        base_id.as_str()
    );
    for input in [
        "pins.toml",
        "templates",
        "patches",
        "overlays",
        "Dockerfile",
        "context",
    ] {
        assert_eq!(row(&json, "input", input)["ok"], true, "{input}");
    }

    // The dated tag re-pointed at another image: its row and the agreement fail, nothing else.
    let dated_reference = format!("{}:{DATED_TAG}", example.repository);
    let tagged = Command::new("docker")
        .args(["tag", base_image(), &dated_reference])
        .status()
        .unwrap();
    assert!(tagged.success());
    let run = verify(&example, &[], &[]).expect_code(1);
    let json = run.json();
    assert_eq!(json["ok"], false);
    assert_eq!(
        failing(&json),
        [
            format!("tag {dated}"),
            format!("tags agree {host}: latest, {DATED_TAG}")
        ]
    );
    assert_eq!(row(&json, "tag", &dated)["actual"], base_id.as_str());
    // Each image once, in the order of the tags that name it, whatever the ids.
    assert_eq!(
        row(&json, "tags agree", &format!("{host}: latest, {DATED_TAG}"))["actual"],
        format!("latest → {id}; {DATED_TAG} → {base_id}").as_str()
    );
    let report = |run: &Run| table_of(run, &[(&host, "<daemon>")]);
    let root = example.context.path();
    forge_snapshot!("verify_local_moved_tag", report(&run), root);
    let restored = Command::new("docker")
        .args(["tag", &id, &dated_reference])
        .status()
        .unwrap();
    assert!(restored.success());
    verify(&example, &[], &[]).expect_code(0);

    // A file added to the overlay after the build: the overlays and the context are stale.
    example
        .context
        .write("overlays/app/notes.txt", "a new file\n");
    let run = verify(&example, &[], &[]).expect_code(1);
    let json = run.json();
    assert_eq!(failing(&json), ["input overlays", "input context"]);
    let overlays = row(&json, "input", "overlays");
    assert_ne!(overlays["expected"], overlays["actual"]);
    forge_snapshot!("verify_local_stale_input", report(&run), root);

    // No daemon at DOCKER_HOST: the checks that need one could not run.
    let run = verify(
        &example,
        &[],
        &[("DOCKER_HOST", "unix:///nonexistent/docker.sock")],
    )
    .expect_code(2);
    forge_snapshot!("verify_local_no_daemon", report(&run), root);
}

#[test]
fn contents_read_back_the_git_pin_and_every_overlay_file() {
    let Some((example, id)) = built("verify-contents") else {
        return;
    };
    const REV: &str = "3f1c0de5a9b2e47c8d6f0a1b2c3d4e5f60718293";
    let json = verify(&example, &["--contents"], &[]).expect_code(0).json();
    let pin = row(&json, "pin", "app");
    assert_eq!(
        (pin["expected"].as_str(), pin["actual"].as_str()),
        (Some(REV), Some(REV))
    );
    // The patched file, not the checked-in one: the image holds what the context held.
    let conf = row(&json, "file", "/opt/app/conf/app.conf");
    assert_eq!(conf["ok"], true, "{conf}");
    assert_eq!(row(&json, "file", "/opt/app/greet.sh")["ok"], true);

    // The pin moved in pins.toml but the image was not rebuilt: the pin did not land.
    const MOVED: &str = "0badc0de0badc0de0badc0de0badc0de0badc0de";
    example.context.edit(
        "pins.toml",
        &format!("rev = \"{REV}\""),
        &format!("rev = \"{MOVED}\""),
    );
    let run = verify(&example, &["--contents"], &[]).expect_code(1);
    let json = run.json();
    let pin = row(&json, "pin", "app");
    assert_eq!(
        (
            pin["expected"].as_str(),
            pin["actual"].as_str(),
            pin["ok"].as_bool()
        ),
        (Some(MOVED), Some(REV), Some(false))
    );
    assert_eq!(
        failing(&json),
        [
            "input pins.toml",
            "input Dockerfile",
            "input context",
            "pin app"
        ]
    );

    // A file of the overlay changed inside the image: only its row fails.
    example.context.edit(
        "pins.toml",
        &format!("rev = \"{MOVED}\""),
        &format!("rev = \"{REV}\""),
    );
    let tampered = tamper(&example, "echo tampered > /opt/app/greet.sh");
    let json = verify(&example, &["--contents"], &[]).expect_code(1).json();
    assert_eq!(failing(&json), ["file /opt/app/greet.sh"]);
    assert_eq!(
        row(&json, "file", "/opt/app/greet.sh")["actual"],
        tampered.as_str()
    );
    // The build's own image lost its tags to the tampered one.
    let _ = Command::new("docker").args(["image", "rm", &id]).output();
}

/// The report `run` printed, each of `hosts` (a daemon's address, a machine's image name) as its
/// placeholder, and the context's size, which the length of the process id in the Dockerfile's
/// base image may move by a tar block, as `<size>`.
fn table_of(run: &Run, hosts: &[(&str, &str)]) -> String {
    static SIZE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?m)^( +Assembled context \S+ \(\d+ entries), [0-9.]+ \w+\)$").unwrap()
    });
    let text = hosts.iter().fold(run.stderr.clone(), |text, (host, to)| {
        text.replace(host, to)
    });
    SIZE.replace_all(&text, "$1, <size>)").into_owned()
}

/// Runs `script` in a container of the example's recorded image, commits the result, makes the
/// record name the new image and re-points both tags there; returns the sha256 of what the
/// script left in /opt/app/greet.sh.
fn tamper(example: &Example, script: &str) -> String {
    let lock = example.context.read("forge.lock");
    let id = image_id(&format!("{}:latest", example.repository)).unwrap();
    let name = format!("forge-verify-tamper-{}", std::process::id());
    let run = Command::new("docker")
        .args([
            "run",
            "--name",
            &name,
            "--network",
            "none",
            &id,
            "sh",
            "-c",
            script,
        ])
        .status()
        .unwrap();
    assert!(run.success());
    let committed = Command::new("docker")
        .args(["commit", &name])
        .output()
        .unwrap();
    let _ = Command::new("docker").args(["rm", &name]).output();
    let new_id = String::from_utf8(committed.stdout)
        .unwrap()
        .trim()
        .to_owned();
    assert!(new_id.starts_with("sha256:"), "{new_id}");
    for tag in ["latest", DATED_TAG] {
        let tagged = Command::new("docker")
            .args(["tag", &new_id, &format!("{}:{tag}", example.repository)])
            .status()
            .unwrap();
        assert!(tagged.success());
    }
    example
        .context
        .write("forge.lock", &lock.replace(&id, &new_id));
    let digest = Command::new("docker")
        .args(["run", "--rm", &new_id, "sha256sum", "/opt/app/greet.sh"])
        .output()
        .unwrap();
    let text = String::from_utf8(digest.stdout).unwrap();
    format!("sha256:{}", text.split_whitespace().next().unwrap())
}

/// A recipe on the Python base image: a distribution the base ships (asserted, never installed,
/// as cutlass-dsl is in the default recipe) and the NCCL that torch loads, each with its smoke
/// gate in the build. The images built or committed from it are removed when it is dropped.
struct PythonRecipe {
    context: TestContext,
    repository: String,
    base: PythonImage,
    _images: ImageGuard,
}

impl PythonRecipe {
    /// The pin names, as pins.toml spells them.
    const PACKAGE_PIN: &str = "fixture";
    const NCCL_PIN: &str = "nccl";

    fn new(name: &str) -> Self {
        let base = python_image::ensure();
        let repository = format!("forge-test/{name}-{}", std::process::id());
        let platform = daemon_platform();
        let images = ImageGuard::new(&repository);
        let context = TestContext::empty();
        context.write(
            "pins.toml",
            &format!(
                "[image]\nrepository = \"{repository}\"\ndate = \"2026-07-08\"\nplatform = \"{platform}\"\n\n\
                 [image.tags]\nmoving = [\"latest\"]\n\n\
                 [image.labels]\n{}\n\n\
                 [base]\nimage = \"{}\"\n\n\
                 [pins.{}]\nkind = \"python\"\npackage = \"{}\"\nmodule = \"{}\"\nversion = \"{}\"\ninstall = false\n\n\
                 [pins.{}]\nkind = \"assert\"\nprobe = \"nccl\"\nversion = \"{}\"\n",
                images.label_entry(),
                base.name,
                Self::PACKAGE_PIN,
                python_image::FIXTURE_PACKAGE,
                python_image::FIXTURE_MODULE,
                python_image::FIXTURE_VERSION,
                Self::NCCL_PIN,
                python_image::nccl_version_text(python_image::NCCL_VERSION),
            ),
        );
        context.write(
            "templates/Dockerfile.j2",
            &format!(
                "FROM {{{{ base.reference }}}}\n\
                 # In the base, asserted and never installed.\n\
                 RUN {{{{ pins.{package}.gate }}}}\n\
                 RUN {{{{ pins.{nccl}.gate }}}}\n\
                 # The recipe's labels, by which the test's images are found and removed.\n\
                 LABEL{{% for label in image.labels %}} {{{{ label.name }}}}=\"{{{{ label.value }}}}\"{{% endfor %}}\n",
                package = Self::PACKAGE_PIN,
                nccl = Self::NCCL_PIN,
            ),
        );
        Self {
            context,
            repository,
            base,
            _images: images,
        }
    }

    /// Builds it; returns the image id.
    fn build(&self) -> String {
        let run = build_in(&self.context, &[], &[]).expect_code(0);
        run.json()["image"]["id"].as_str().unwrap().to_owned()
    }

    /// The subject of the Python pin's row.
    fn package_subject() -> String {
        format!("{} ({})", Self::PACKAGE_PIN, python_image::FIXTURE_PACKAGE)
    }

    /// Replaces the recorded image's `libnccl.so.2` with one reporting `version`, commits the
    /// result, makes the record name it and re-points the tag there.
    fn swap_nccl(&self, version: (u32, u32, u32)) {
        let lock = self.context.read("forge.lock");
        let id = image_id(&format!("{}:latest", self.repository)).unwrap();
        let folder = tempfile::tempdir().unwrap();
        let library = folder.path().join("libnccl.so.2");
        std::fs::write(&library, python_image::nccl_library(version)).unwrap();
        let name = format!("forge-verify-nccl-{}", std::process::id());
        let docker = |args: &[&str]| {
            let output = Command::new("docker").args(args).output().unwrap();
            assert!(
                output.status.success(),
                "docker {args:?}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            String::from_utf8(output.stdout).unwrap().trim().to_owned()
        };
        docker(&["create", "--name", &name, &id, "true"]);
        docker(&[
            "cp",
            library.to_str().unwrap(),
            &format!("{name}:{}", self.base.nccl_path),
        ]);
        let swapped = docker(&["commit", &name]);
        docker(&["rm", &name]);
        docker(&["tag", &swapped, &format!("{}:latest", self.repository)]);
        self.context
            .write("forge.lock", &lock.replace(&id, &swapped));
    }
}

/// The row as one JSON object, for comparing every field at once.
fn pin_row(subject: &str, expected: &str, actual: &str, ok: bool) -> Value {
    serde_json::json!({
        "name": "pin",
        "subject": subject,
        "expected": expected,
        "actual": actual,
        "ok": ok,
    })
}

#[test]
fn contents_read_back_a_python_pin_the_base_ships_and_name_a_moved_version() {
    if !docker_available() {
        return;
    }
    let recipe = PythonRecipe::new("verify-python");
    recipe.build();
    let nccl = python_image::nccl_version_text(python_image::NCCL_VERSION);
    let package = PythonRecipe::package_subject();
    let json = verify_in(&recipe.context, &["--contents"], &[])
        .expect_code(0)
        .json();
    assert_eq!(
        row(&json, "pin", &package),
        &pin_row(
            &package,
            python_image::FIXTURE_VERSION,
            python_image::FIXTURE_VERSION,
            true
        )
    );
    // What the image holds is recorded for `pin bump` to check requirements against.
    let lock: toml::Value = toml::from_str(&recipe.context.read("forge.lock")).unwrap();
    assert_eq!(
        lock["base"]["packages"][python_image::FIXTURE_PACKAGE].as_str(),
        Some(python_image::FIXTURE_VERSION),
        "{lock}"
    );
    // And the glibc and Python it runs: which wheel tags load there.
    let glibc = lock["base"]["glibc"].as_str().unwrap_or_default();
    assert!(
        glibc.starts_with("2.") && glibc[2..].parse::<u32>().is_ok(),
        "{lock}"
    );
    let python = lock["base"]["python"].as_str().unwrap_or_default();
    assert!(python.starts_with("3."), "{lock}");
    assert_eq!(
        row(&json, "pin", PythonRecipe::NCCL_PIN),
        &pin_row(PythonRecipe::NCCL_PIN, &nccl, &nccl, true)
    );

    // The pin moved in pins.toml but the image was not rebuilt: the base still ships the old
    // version, and the row names both.
    const MOVED: &str = "1.4.3";
    assert_ne!(MOVED, python_image::FIXTURE_VERSION);
    recipe.context.edit(
        "pins.toml",
        &format!("version = \"{}\"", python_image::FIXTURE_VERSION),
        &format!("version = \"{MOVED}\""),
    );
    let run = verify_in(&recipe.context, &["--contents"], &[]).expect_code(1);
    let json = run.json();
    assert_eq!(json["ok"], false);
    assert_eq!(
        failing(&json),
        [
            "input pins.toml".to_owned(),
            "input Dockerfile".to_owned(),
            "input context".to_owned(),
            format!("pin {package}"),
        ]
    );
    assert_eq!(
        row(&json, "pin", &package),
        &pin_row(&package, MOVED, python_image::FIXTURE_VERSION, false)
    );
    let table_row = run
        .stderr
        .lines()
        .find(|line| line.starts_with("pin") && line.contains(&package))
        .unwrap_or_else(|| panic!("no row for {package} in:\n{}", run.stderr));
    assert_eq!(
        table_row.split_whitespace().collect::<Vec<_>>(),
        [
            "pin",
            PythonRecipe::PACKAGE_PIN,
            &format!("({})", python_image::FIXTURE_PACKAGE),
            MOVED,
            python_image::FIXTURE_VERSION,
            "FAIL"
        ]
    );
}

#[test]
fn contents_read_back_the_nccl_torch_loads_and_name_a_swapped_library() {
    if !docker_available() {
        return;
    }
    let recipe = PythonRecipe::new("verify-nccl");
    recipe.build();
    let pinned = python_image::nccl_version_text(python_image::NCCL_VERSION);
    let json = verify_in(&recipe.context, &["--contents"], &[])
        .expect_code(0)
        .json();
    assert_eq!(
        row(&json, "pin", PythonRecipe::NCCL_PIN),
        &pin_row(PythonRecipe::NCCL_PIN, &pinned, &pinned, true)
    );

    // The image's NCCL replaced by another release: pins.toml and the inputs are unchanged,
    // so only the NCCL row fails, naming what was pinned and what the library reports.
    let (major, minor, patch) = python_image::NCCL_VERSION;
    let other = (major, minor, patch - 2);
    recipe.swap_nccl(other);
    let found = python_image::nccl_version_text(other);
    let run = verify_in(&recipe.context, &["--contents"], &[]).expect_code(1);
    let json = run.json();
    assert_eq!(failing(&json), [format!("pin {}", PythonRecipe::NCCL_PIN)]);
    assert_eq!(
        row(&json, "pin", PythonRecipe::NCCL_PIN),
        &pin_row(PythonRecipe::NCCL_PIN, &pinned, &found, false)
    );
    let host = daemon_host();
    let hosts = [
        (host.as_str(), "<daemon>"),
        (recipe.base.name.as_str(), "<python-image>"),
    ];
    forge_snapshot!(
        "verify_nccl_swapped",
        table_of(&run, &hosts),
        recipe.context.path()
    );
    // The Python pin of the same image still holds.
    assert_eq!(
        row(&json, "pin", &PythonRecipe::package_subject())["ok"],
        true
    );
}

/// The offline example under a repository of `registry`, built and pushed (with `env`).
fn pushed(registry: &RegistryServer, name: &str, env: &[(&str, &str)]) -> Option<Example> {
    if !docker_available() || registry_tools_missing() {
        return None;
    }
    ensure_base_image();
    let path = format!("forge-test/{name}-{}", std::process::id());
    let example = Example::with_repository(&format!("{}/{path}", registry.address()));
    example.build_with(&["--push"], env).expect_code(0);
    Some(example)
}

/// The configuration digest of the manifest `repository:tag` on `registry`, as `skopeo inspect
/// --raw` shows it: the image the tag holds.
fn config_digest(registry: &RegistryServer, repository: &str, tag: &str) -> String {
    let raw = stdout_of(
        Command::new("skopeo")
            .args(["inspect", "--raw", "--tls-verify=false"])
            .arg(format!(
                "docker://{}/{repository}:{tag}",
                registry.address()
            )),
    );
    let manifest: Value = serde_json::from_slice(&raw).expect("a JSON manifest");
    manifest["config"]["digest"]
        .as_str()
        .expect("a single-platform manifest")
        .to_owned()
}

/// The OCI image index (multi-platform) media type.
const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";

/// Both tags' rows agree with the registry: it serves `served`, which holds the image `id`.
#[track_caller]
fn assert_both_tags_served(json: &Value, example: &Example, served: &str, id: &str) {
    for tag in ["latest", DATED_TAG] {
        let reference = format!("{}:{tag}", example.repository);
        let registry_row = row(json, "registry", &reference);
        assert_eq!(registry_row["expected"], served);
        assert_eq!(registry_row["actual"], served);
        let bytes = row(json, "served digest", &reference);
        assert_eq!(bytes["expected"], served, "Docker-Content-Digest");
        assert_eq!(bytes["actual"], served, "sha256 of the bytes");
        let image = row(json, "registry image", &reference);
        assert_eq!(
            (image["expected"].as_str(), image["actual"].as_str()),
            (Some(id), Some(id)),
            "the image the manifest holds is the one built"
        );
    }
}

/// A recorded tag the registry does not hold is a failing row, not an unreachable registry.
fn assert_a_tag_never_pushed_fails(registry: &RegistryServer, env: &[(&str, &str)]) {
    let unpushed = Example::with_repository(&format!(
        "{}/forge-test/verify-unpushed-{}",
        registry.address(),
        std::process::id()
    ));
    unpushed.build(&[]).expect_code(0);
    let json = verify(&unpushed, &["--remote"], env).expect_code(1).json();
    let latest = row(
        &json,
        "registry",
        &format!("{}:latest", unpushed.repository),
    );
    assert_eq!(
        (latest["expected"].as_str(), latest["actual"].as_str()),
        (Some("a pushed digest (never pushed)"), Some("missing"))
    );
}

#[test]
fn remote_checks_ask_the_registry_and_name_a_re_pushed_dated_tag() {
    let registry = RegistryServer::start();
    let Some(example) = pushed(&registry, "verify-remote", &[]) else {
        return;
    };
    let path = path_of(&example, &registry);
    let served = registry.digest(&path, "latest");
    assert_eq!(registry.digest(&path, DATED_TAG), served);
    let lock = example.context.read("forge.lock");
    assert!(lock.contains(&format!("pushed = \"{served}\"")), "{lock}");
    // A build without --push of the same image keeps what the registry holds of it.
    example.build_with(&[], &[]).expect_code(0);
    assert_eq!(example.context.read("forge.lock"), lock);

    let config = no_credentials();
    let env = [("DOCKER_CONFIG", config.path().to_str().unwrap())];
    let json = verify(&example, &["--remote"], &env).expect_code(0).json();
    insta::assert_snapshot!(
        "json_verify_digest_remote",
        crate::support::json_shape(&json, example.context.path())
    );
    let id = image_id(&format!("{}:latest", example.repository)).unwrap();
    assert_eq!(config_digest(&registry, &path, "latest"), id);
    assert_both_tags_served(&json, &example, &served, &id);

    // Another image pushed to the dated tag behind forge's back.
    let other = registry.push(&path, DATED_TAG);
    assert_ne!(other, served);
    let run = verify(&example, &["--remote"], &env).expect_code(1);
    // The hint leads somewhere forge allows: a plain rebuild would be refused on the dated tag.
    let report = table_of(&run, &[(&daemon_host(), "<daemon>")]);
    forge_snapshot!("verify_remote_re_pushed", report, example.context.path());
    let json = run.json();
    let dated = format!("{}:{DATED_TAG}", example.repository);
    assert_eq!(
        failing(&json),
        [
            format!("registry {dated}"),
            format!("registry image {dated}"),
            format!(
                "registry tags agree {}: latest, {DATED_TAG}",
                example.repository
            )
        ]
    );
    let registry_row = row(&json, "registry", &dated);
    assert_eq!(
        (
            registry_row["expected"].as_str(),
            registry_row["actual"].as_str()
        ),
        (Some(served.as_str()), Some(other.as_str()))
    );
    let other_image = config_digest(&registry, &path, DATED_TAG);
    assert_ne!(other_image, id);
    let image = row(&json, "registry image", &dated);
    assert_eq!(
        (image["expected"].as_str(), image["actual"].as_str()),
        (Some(id.as_str()), Some(other_image.as_str()))
    );
    // The registry still agrees with itself about the bytes it serves.
    assert_eq!(row(&json, "served digest", &dated)["ok"], true);

    assert_a_tag_never_pushed_fails(&registry, &env);
}

/// Every manifest type a tag may hold here.
const ACCEPT: &[&str] = &[MANIFEST, MANIFEST_LIST, OCI_INDEX];

#[test]
fn a_multi_platform_index_is_judged_by_its_entry_for_the_recipes_platform() {
    if !docker_available() || registry_tools_missing() {
        return;
    }
    ensure_base_image();
    let registry = RegistryServer::start();
    let name = format!("forge-test/verify-index-{}", std::process::id());
    let example = Example::with_repository(&format!("{}/{name}", registry.address()));
    let id = reported_id(&example.build(&["--push"]).expect_code(0).json());
    let (pushed, pushed_body) = registry.held(&name, "latest", ACCEPT);
    assert_eq!(registry.held(&name, DATED_TAG, ACCEPT).0, pushed);
    // A second image in the same repository, for the index's other platform: the base image, as
    // another machine would push it.
    skopeo_copy(
        &[],
        &format!("docker-daemon:{}", base_image()),
        &format!("{}:s390x", example.repository),
    );
    let (other, other_body) = registry.held(&name, "s390x", ACCEPT);
    let s390x = (other.as_str(), other_body.len(), "s390x");
    let amd64 = (pushed.as_str(), pushed_body.len(), "amd64");
    let references = ["latest", DATED_TAG].map(|tag| format!("{}:{tag}", example.repository));
    let tags = IndexedTags {
        registry: &registry,
        name: &name,
        example: &example,
    };

    // The other platform listed first: the entry is chosen by platform, not by position.
    let index = tags.point_at(&pushed, MANIFEST_LIST, &[s390x, amd64]);
    let json = verify(&example, &["--remote"], &[]).expect_code(0).json();
    for reference in &references {
        assert_eq!(row(&json, "registry", reference)["actual"], index.as_str());
        let platform = row(&json, "platform", &format!("{reference}@linux/amd64"));
        assert_eq!(
            (platform["actual"].as_str(), platform["ok"].as_bool()),
            (Some(pushed.as_str()), Some(true))
        );
        let image = row(&json, "registry image", reference);
        assert_eq!(
            (image["expected"].as_str(), image["actual"].as_str()),
            (Some(id.as_str()), Some(id.as_str()))
        );
    }

    assert_a_record_for_another_platform_judges_its_entry(&example, &references);

    // An OCI index with no entry for linux/amd64.
    tags.point_at(&index, OCI_INDEX, &[s390x]);
    assert_an_index_without_the_platform_fails(&example, &references, &id);
    drop(example);
    let _ = Command::new("docker").args(["image", "rm", &id]).output();
}

/// Both tags of a pushed example, to be moved to a multi-platform index.
struct IndexedTags<'a> {
    registry: &'a RegistryServer,
    /// The repository path on the registry.
    name: &'a str,
    example: &'a Example,
}

impl IndexedTags<'_> {
    /// Both tags moved to an index of `media_type` listing `entries`, and the record holding its
    /// digest for both in place of `recorded`, as a multi-platform push would leave them;
    /// returns the index's digest.
    fn point_at(
        &self,
        recorded: &str,
        media_type: &str,
        entries: &[(&str, usize, &str)],
    ) -> String {
        let index = registry::index_of(media_type, entries);
        for tag in ["latest", DATED_TAG] {
            self.registry
                .put_manifest(self.name, tag, media_type, index.as_bytes());
        }
        let (digest, body) = self.registry.held(self.name, DATED_TAG, ACCEPT);
        assert_eq!(body, index.as_bytes());
        assert_eq!(self.registry.held(self.name, "latest", ACCEPT).0, digest);
        let lock = self.example.context.read("forge.lock");
        let from = format!("pushed = \"{recorded}\"");
        assert_eq!(lock.matches(&from).count(), 2, "{lock}");
        self.example.context.write(
            "forge.lock",
            &lock.replace(&from, &format!("pushed = \"{digest}\"")),
        );
        digest
    }
}

/// A record of a build for linux/s390x (`forge build --platform linux/s390x`): that entry is
/// the one judged, and it holds another image. The record is put back after.
#[track_caller]
fn assert_a_record_for_another_platform_judges_its_entry(example: &Example, references: &[String]) {
    let lock = example.context.read("forge.lock");
    let built_for = "platform = \"linux/amd64\"";
    assert_eq!(lock.matches(built_for).count(), 1, "{lock}");
    example.context.write(
        "forge.lock",
        &lock.replace(built_for, "platform = \"linux/s390x\""),
    );
    let json = verify(example, &["--remote"], &[]).expect_code(1).json();
    let expected: Vec<String> = references
        .iter()
        .map(|reference| format!("registry image {reference}"))
        .collect();
    assert_eq!(failing(&json), expected);
    let base_id = image_id(base_image()).unwrap();
    for reference in references {
        let image = row(&json, "registry image", reference);
        assert_eq!(image["actual"].as_str(), Some(base_id.as_str()));
        assert_eq!(
            row(&json, "platform", &format!("{reference}@linux/s390x"))["ok"],
            true
        );
    }
    example.context.write("forge.lock", &lock);
}

/// With no entry for linux/amd64 in the index both rows fail for each tag, and the tags no
/// longer hold one image between them; nothing else fails.
#[track_caller]
fn assert_an_index_without_the_platform_fails(example: &Example, references: &[String], id: &str) {
    let json = verify(example, &["--remote"], &[]).expect_code(1).json();
    let mut expected: Vec<String> = references
        .iter()
        .flat_map(|reference| {
            [
                format!("platform {reference}@linux/amd64"),
                format!("registry image {reference}"),
            ]
        })
        .collect();
    let (place, _) = references[0].rsplit_once(':').unwrap();
    expected.push(format!("registry tags agree {place}: latest, {DATED_TAG}"));
    assert_eq!(failing(&json), expected);
    for reference in references {
        let image = row(&json, "registry image", reference);
        assert_eq!(
            (image["expected"].as_str(), image["actual"].as_str()),
            (Some(id), Some("missing"))
        );
    }
}

#[test]
fn a_base_id_that_differs_from_the_record_fails_only_its_row() {
    let Some((example, id)) = built("verify-base") else {
        return;
    };
    let host = daemon_host();
    let base_id = image_id(base_image()).unwrap();
    let subject = format!("{host}: {}", base_image());
    let json = verify(&example, &[], &[]).expect_code(0).json();
    assert_eq!(row(&json, "base id", &subject)["actual"], base_id.as_str());

    // The record names another base; the base tag itself is shared with other tests and stays.
    let edited = format!("sha256:{}", "0123456789abcdef".repeat(4));
    assert_ne!(edited, base_id);
    let lock = example.context.read("forge.lock");
    let recorded = format!("id = \"{base_id}\"");
    assert_eq!(lock.matches(&recorded).count(), 1, "{lock}");
    example.context.write(
        "forge.lock",
        &lock.replace(&recorded, &format!("id = \"{edited}\"")),
    );
    let run = verify(&example, &[], &[]).expect_code(1);
    let json = run.json();
    assert_eq!(failing(&json), [format!("base id {subject}")]);
    let base = row(&json, "base id", &subject);
    assert_eq!(
        (base["expected"].as_str(), base["actual"].as_str()),
        (Some(edited.as_str()), Some(base_id.as_str()))
    );
    assert_contains(
        &run.stderr,
        &format!("the first: base id {subject}: expected {edited}, found {base_id}"),
    );
    forge_snapshot!(
        "verify_base_id_differs",
        table_of(&run, &[(&host, "<daemon>")]),
        example.context.path()
    );
    drop(example);
    let _ = Command::new("docker").args(["image", "rm", &id]).output();
}

#[test]
fn a_registry_that_wants_a_password_exits_2_without_one_and_0_with_it() {
    let registry = RegistryServer::start_with_basic_auth();
    let Some(example) = pushed(&registry, "verify-auth", &registry.credentials_env()) else {
        return;
    };
    let config = no_credentials();
    let config = config.path().to_str().unwrap();
    let run = verify(&example, &["--remote"], &[("DOCKER_CONFIG", config)]).expect_code(2);
    let hosts = [
        (registry.address(), "<registry>"),
        (&daemon_host(), "<daemon>"),
    ];
    let report = table_of(&run, &hosts);
    forge_snapshot!("verify_password_wanted", report, example.context.path());
    let json = run.json();
    assert_eq!(json["ok"], false);
    assert_eq!(json["unreached"].as_array().unwrap().len(), 1, "{json:#}");

    let mut env = registry.credentials_env().to_vec();
    env.push(("DOCKER_CONFIG", config));
    let json = verify(&example, &["--remote"], &env).expect_code(0).json();
    assert_eq!(json["ok"], true, "{json:#}");
    let reference = format!("{}:latest", example.repository);
    assert_eq!(row(&json, "registry", &reference)["ok"], true);
}

/// `verify --remote` with `helper` first on PATH and a Docker configuration `config`.
fn verify_with_helper(example: &Example, helper: &CredentialHelper, config: &Value) -> Run {
    let folder = helper.docker_config(config);
    let path = helper.path();
    verify(
        example,
        &["--remote"],
        &[
            ("DOCKER_CONFIG", folder.to_str().unwrap()),
            ("PATH", path.as_str()),
        ],
    )
}

/// A helper that holds nothing for the registry at `address`, one whose credentials the registry
/// refuses, and one that fails: each exits 2 naming the helper.
#[track_caller]
fn assert_helpers_that_fail_exit_2(example: &Example, address: &str, login: (&str, &str)) {
    let (user, password) = login;
    let run_with = |helper: &CredentialHelper, config: serde_json::Value| {
        verify_with_helper(example, helper, &config)
    };
    // A helper that holds nothing for this registry: exit 2, naming the helper and the registry.
    let stranger = CredentialHelper::knowing(&[("127.0.0.1:1", user, password)]);
    let run = run_with(
        &stranger,
        serde_json::json!({ "credHelpers": { address: HELPER } }),
    )
    .expect_code(2);
    let host = daemon_host();
    let hosts = [(address, "<registry>"), (host.as_str(), "<daemon>")];
    let mut refusals = table_of(&run, &hosts);
    assert_eq!(stranger.asked(), [address]);

    // The helper's credentials, refused by the registry.
    let wrong = CredentialHelper::knowing(&[(address, user, "wrong")]);
    let run = run_with(
        &wrong,
        serde_json::json!({ "credHelpers": { address: HELPER } }),
    )
    .expect_code(2);
    refusals += &table_of(&run, &hosts);

    // A helper that fails says so, by name.
    let broken = CredentialHelper::failing("the keychain is locked");
    let run = run_with(&broken, serde_json::json!({ "credsStore": HELPER })).expect_code(2);
    refusals += &table_of(&run, &hosts);
    forge_snapshot!("verify_helpers_that_fail", refusals, example.context.path());
}

#[test]
fn a_credential_helper_named_by_cred_helpers_or_creds_store_is_asked_for_the_registry() {
    let registry = RegistryServer::start_with_basic_auth();
    let Some(example) = pushed(&registry, "verify-helper", &registry.credentials_env()) else {
        return;
    };
    let (user, password) = registry.credentials().unwrap();
    let address = registry.address();
    let reference = format!("{}:latest", example.repository);
    let run_with = |helper: &CredentialHelper, config: serde_json::Value| {
        verify_with_helper(&example, helper, &config)
    };

    // `credHelpers` names the helper for this registry; it is asked for it, once.
    let helper = CredentialHelper::knowing(&[(address, user, password)]);
    let json = run_with(
        &helper,
        serde_json::json!({ "credHelpers": { address: HELPER } }),
    )
    .expect_code(0)
    .json();
    assert_eq!(row(&json, "registry", &reference)["ok"], true, "{json:#}");
    assert_eq!(helper.asked(), [address]);

    // `credsStore` serves every registry without a helper of its own, before `auths`.
    let store = CredentialHelper::knowing(&[(address, user, password)]);
    let json = run_with(
        &store,
        serde_json::json!({
            "credsStore": HELPER,
            "auths": { address: { "username": user, "password": "not this one" } },
        }),
    )
    .expect_code(0)
    .json();
    assert_eq!(row(&json, "registry", &reference)["ok"], true, "{json:#}");
    assert_eq!(store.asked(), [address]);

    assert_helpers_that_fail_exit_2(&example, address, (user, password));
}

#[test]
fn every_node_must_hold_the_tags_and_the_report_names_the_one_that_does_not() {
    let Some((example, id)) = built("verify-nodes") else {
        return;
    };
    let main = daemon_host();
    let latest = format!("{}:latest", example.repository);

    // The same daemon under a second address agrees with itself.
    let alias_folder = tempfile::tempdir().unwrap();
    let alias = alias_folder.path().join("alias.sock");
    let socket = main
        .strip_prefix("unix://")
        .expect("the tests' daemon listens on a socket");
    std::os::unix::fs::symlink(socket, &alias).unwrap();
    let alias = format!("unix://{}", alias.display());
    let json = verify(&example, &["--host", &main, "--host", &alias], &[])
        .expect_code(0)
        .json();
    assert_eq!(
        row(&json, "tag", &format!("{alias}: {latest}"))["actual"],
        id.as_str()
    );

    // A node that cannot be reached: exit 2 naming it, the reachable node still reported.
    let run = verify(
        &example,
        &[
            "--host",
            &main,
            "--host",
            "unix:///nonexistent/forge-node.sock",
        ],
        &[],
    )
    .expect_code(2);
    forge_snapshot!(
        "verify_nodes_unreachable",
        table_of(&run, &[(&main, "<daemon>")]),
        example.context.path()
    );
    assert_eq!(
        row(&run.json(), "tag", &format!("{main}: {latest}"))["ok"],
        true
    );
    // An address that is none of the docker CLI's forms: refused on the command line (exit 2),
    // saying which they are, before any daemon is asked.
    let run = verify(&example, &["--host", "node-2:2375"], &[]).expect_code(2);
    forge_snapshot!(run.stderr, example.context.path(), @"
    error: invalid value 'node-2:2375' for '--host <URL>': expected unix://PATH, tcp://HOST:PORT or ssh://[USER@]HOST[:PORT]

    For more information, try '--help'.
    ");

    // A second daemon that lacks the image: its rows fail, and only its rows.
    let Some(node) = SecondDaemon::start_or_skip() else {
        return;
    };
    let run = verify(&example, &["--host", &main, "--host", &node.host], &[]).expect_code(1);
    let json = run.json();
    assert_eq!(
        failing(&json),
        [
            format!("tag {}: {latest}", node.host),
            format!("tag {}: {}:{DATED_TAG}", node.host, example.repository),
            format!("tags agree {}: latest, {DATED_TAG}", node.host),
        ]
    );
    assert_eq!(
        row(&json, "tag", &format!("{}: {latest}", node.host))["actual"],
        "missing"
    );
    assert_eq!(row(&json, "tag", &format!("{main}: {latest}"))["ok"], true);
    forge_snapshot!(
        "verify_nodes_one_lacks_the_image",
        table_of(&run, &[(&node.host, "<node>"), (&main, "<daemon>")]),
        example.context.path()
    );
}

#[test]
fn a_bearer_challenge_is_answered_with_a_token_from_its_realm() {
    let registry = RegistryServer::start_with_token_auth();
    if !docker_available() || registry_tools_missing() {
        return;
    }
    ensure_base_image();
    // The token server signs for this one repository path.
    let example = Example::with_repository(&format!("{}/aeon-7/base", registry.address()));
    example.build(&["--push"]).expect_code(0);
    let served = registry.digest("aeon-7/base", "latest");
    let before = registry.token_requests().len();
    let config = no_credentials();
    let env = [("DOCKER_CONFIG", config.path().to_str().unwrap())];
    let json = verify(&example, &["--remote"], &env).expect_code(0).json();
    let latest = row(&json, "registry", &format!("{}:latest", example.repository));
    assert_eq!(latest["actual"], served.as_str());
    let asked = registry.token_requests()[before..].to_vec();
    assert!(
        asked.iter().any(
            |request| request.contains("scope=repository%3Aaeon-7%2Fbase%3Apull")
                || request.contains("scope=repository:aeon-7/base:pull")
        ),
        "{asked:?}"
    );
}

/// A tester who checks an image by reference before pulling it (on a daemon that holds none of
/// it: here trixie's engine, which never pulled it) gets the registry side checked in full, one
/// line saying the image is not pulled there and how to pull it, no failing daemon rows, and
/// exit 0.
#[test]
fn a_tester_verifies_an_image_by_reference_before_pulling_it() {
    let Some(engines) = crate::support::engines::engines() else {
        return;
    };
    let registry = crate::support::registry::RegistryServer::start();
    let keys = crate::support::keys::Keys::new();
    let Some(example) = crate::support::signed::signed(&registry, "before-pull", &keys) else {
        return;
    };
    let engine = &engines[1];
    let folder = crate::support::TestContext::empty();
    folder.write("signing.pub", &keys.public_text());
    let reference = format!("{}:latest", example.repository);
    let run = folder
        .forge_with(
            &[
                "--json",
                "verify-digest",
                &reference,
                "--key",
                "signing.pub",
            ],
            &[("DOCKER_HOST", engine.host.as_str())],
        )
        .expect_code(0);
    let hosts = [
        (registry.address(), "<registry>"),
        (&engine.host, "<engine>"),
    ];
    let report = table_of(&run, &hosts);
    forge_snapshot!("verify_before_pull", report, folder.path());
    let json = run.json();
    let checks = json["checks"].as_array().unwrap();
    assert!(
        checks.iter().all(|check| check["name"] != "tag"),
        "no daemon rows: {json:#}"
    );
    assert!(
        checks
            .iter()
            .any(|check| check["name"] == "signature" && check["ok"] == true)
    );
}
