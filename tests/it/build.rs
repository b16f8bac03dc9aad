//! `forge build`: the context digest, the real Docker daemon at the default socket, and a real
//! registry (Debian's `docker-registry`) on 127.0.0.1.
//!
//! Docker tests fail when no daemon answers, unless `FORGE_SKIP_DOCKER=1`. Each test builds
//! the offline example under a repository name of its own and removes the images it made
//! afterwards, so tests run in parallel.

use std::io::Read as _;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use sha2::Digest as _;

use crate::support::git::with_a_deepgemm_series;
use crate::support::images::{
    DATED_TAG, Example, base_image, built, built_report, copy_example, docker_available,
    docker_ready, ensure_base_image, image_id, lock_text, reported_id,
};
use crate::support::registry::{MANIFEST, MANIFEST_LIST, RegistryServer, index_of, skopeo_copy};
use crate::support::snapshot::forge_snapshot;
use crate::support::{TestContext, assert_contains, assert_fits_100_columns, free_port};

#[test]
fn context_digest_ignores_mtimes_creation_order_and_modes() {
    let first = TestContext::empty();
    copy_example(first.path());
    // The second checkout is made file by file in reverse order, a minute apart in mtime, with
    // a looser umask.
    let second = TestContext::empty();
    let mut files = Vec::new();
    collect_files(first.path(), first.path(), &mut files);
    files.reverse();
    for (index, relative) in files.iter().enumerate() {
        let from = first.path().join(relative);
        let to = second.path().join(relative);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&from, &to).unwrap();
        let mode = std::fs::metadata(&from).unwrap().permissions();
        let loose = std::os::unix::fs::PermissionsExt::mode(&mode) | 0o020;
        std::fs::set_permissions(&to, std::os::unix::fs::PermissionsExt::from_mode(loose)).unwrap();
        let time = std::time::UNIX_EPOCH + Duration::from_secs(1_600_000_000 + 60 * index as u64);
        std::fs::File::options()
            .write(true)
            .open(&to)
            .unwrap()
            .set_modified(time)
            .unwrap();
    }
    let digest = |context: &TestContext| {
        let run = context
            .forge(&["--json", "build", "--dry-run"])
            .expect_code(0);
        let plan = run.json();
        (
            plan["context_digest"].as_str().unwrap().to_owned(),
            plan["dockerfile_digest"].as_str().unwrap().to_owned(),
        )
    };
    let (context_one, dockerfile_one) = digest(&first);
    let (context_two, dockerfile_two) = digest(&second);
    assert_eq!(context_one, context_two);
    assert_eq!(dockerfile_one, dockerfile_two);
    assert!(context_one.starts_with("sha256:") && context_one.len() == 71);

    // The digest is the sha256 of the very archive the daemon receives.
    let archive = second.path().join("context.tar");
    let archive_arg = archive.to_str().unwrap();
    second
        .forge(&["build", "--dry-run", "--context-out", archive_arg])
        .expect_code(0);
    let bytes = std::fs::read(&archive).unwrap();
    std::fs::remove_file(&archive).unwrap();
    assert_eq!(
        format!("sha256:{}", hex::encode(sha2::Sha256::digest(&bytes))),
        context_one
    );

    // Secrets that .dockerignore excludes stay out of the context; a new file of it goes in.
    second.write(
        "overlays/app/id_rsa",
        "-----BEGIN OPENSSH PRIVATE KEY-----\n",
    );
    second.write("overlays/app/.env", "TOKEN=secret\n");
    second.write(".dockerignore", "**/id_rsa\n**/.env\n");
    assert_eq!(digest(&second).0, context_one);
    second.write("overlays/app/notes.txt", "a new file\n");
    assert_ne!(digest(&second).0, context_one);
}

fn collect_files(root: &Path, folder: &Path, files: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(folder).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect_files(root, &path, files);
        } else {
            files.push(path.strip_prefix(root).unwrap().to_owned());
        }
    }
}

#[test]
fn dry_run_of_the_default_recipe_prints_the_plan_without_a_daemon() {
    let context = TestContext::default_recipe();
    let run = context
        .forge_with(
            &["build", "--dry-run"],
            &[("DOCKER_HOST", "unix:///nonexistent/docker.sock")],
        )
        .expect_code(0);
    forge_snapshot!(run.stdout, context.path(), @"
    dockerfile  sha256:<digest>
    context  sha256:<digest>
                (11 entries, 20992 bytes)
    patch  patches/pr4/0001-sm12x-feature-detect-the-DeepGEMM-fmax-binding.patch
                by Mira Castellanos <mira.castellanos@example.org>, from <short>
    patch  patches/pr4/0002-sm12x-read-the-DeepGEMM-warm-up-policy-in-one-place.patch
                by Mira Castellanos <mira.castellanos@example.org>, from <short>
    tag  ghcr.io/aeon-7/vllm-ultimate-deepseek-v4-gb10:experimental-pr4 (moving)
    tag  ghcr.io/aeon-7/vllm-ultimate-deepseek-v4-gb10:2026-07-08-pr4-experimental (immutable)
    ");
    assert_fits_100_columns(&run.stdout, &run.stderr);
    // Each value starts in the column past the widest label (the snapshot's padding is loose).
    assert!(
        run.stdout.lines().all(|line| line
            .get(11..13)
            .is_some_and(|gap| gap.starts_with(' ') && !gap.ends_with(' '))),
        "{}",
        run.stdout
    );
    assert!(!context.path().join("forge.lock").exists());

    let json = context
        .forge(&["--json", "build", "--dry-run"])
        .expect_code(0)
        .json();
    let patches = json["patches"].as_array().unwrap();
    assert_eq!(patches.len(), 2);
    assert!(
        patches
            .iter()
            .all(|patch| patch["author"].as_str().unwrap().contains('@'))
    );
}

#[test]
fn unreachable_daemon_exits_2_naming_the_socket() {
    let example = Example::new("unreachable");
    let run = example
        .context
        .forge_with(&["build"], &[("DOCKER_HOST", "unix:///nonexistent")])
        .expect_code(2);
    forge_snapshot!(run.stderr, example.context.path(), @"
    error: cannot reach the Docker daemon at unix:///nonexistent: No such file or directory (os error 2)
    hint: start the Docker daemon or point DOCKER_HOST at a running one (tried unix:///nonexistent); `forge build --dry-run` needs no daemon
    ");
    assert!(lock_text(&example).is_none());
}

#[test]
fn a_build_tags_both_tags_on_one_image_records_it_and_reuses_the_cache() {
    let Some((example, first)) = built_report("full") else {
        return;
    };
    let id = reported_id(&first);
    example.assert_tags_on(&id);
    assert_eq!(
        first["image"]["tags"],
        serde_json::json!([
            format!("{}:latest", example.repository),
            format!("{}:{DATED_TAG}", example.repository)
        ])
    );
    assert_eq!(first["image"]["pushed"], serde_json::json!([]));
    assert_image_holds_the_recipe(&id, &first);
    let lock = assert_recorded(&example, &id, &first);
    assert_unchanged_inputs_reuse_the_image(&example, &id, &lock);
    assert_locked_names_what_changed(&example, &lock);
}

/// The value of the label `name` on the image `id`.
fn image_label(id: &str, name: &str) -> String {
    let output = Command::new("docker")
        .args([
            "image",
            "inspect",
            "--format",
            &format!("{{{{ index .Config.Labels \"{name}\" }}}}"),
            id,
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The image holds the patched overlay, the build argument from pins.toml, and labels naming
/// its context and the patches applied (original and new commit, author and subject).
#[track_caller]
fn assert_image_holds_the_recipe(id: &str, report: &serde_json::Value) {
    let output = Command::new("docker")
        .args([
            "run",
            "--rm",
            id,
            "cat",
            "/opt/app/greeting.txt",
            "/opt/app/conf/app.conf",
        ])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        shown,
        "hello, from the offline example\nchannel: stable\nmode = release\nlevel = 1\n"
    );
    assert_eq!(
        image_label(id, "dev.forge.context.digest").trim(),
        report["context_digest"].as_str().unwrap()
    );

    let label = image_label(id, "dev.forge.patches");
    assert!(label.starts_with("670b47f4f55d -> "), "{label}");
    assert_eq!(
        label.matches(" Ada Lovelace <ada@example.org>: ").count(),
        2,
        "{label}"
    );
    assert!(label.contains(": app: ship in release mode; "), "{label}");
    // Both patches are Ada's: she is named once, as her From: header names her.
    assert_eq!(
        image_label(id, "dev.forge.patches.authors").trim(),
        "Ada Lovelace <ada@example.org>"
    );
}

/// The record names the image, both tags, and the patches with their author; returns it.
#[track_caller]
fn assert_recorded(example: &Example, id: &str, report: &serde_json::Value) -> String {
    let lock = lock_text(example).expect("forge.lock is written");
    assert!(lock.contains(&format!("id = \"{id}\"")), "{lock}");
    assert!(
        lock.contains(&format!(
            "name = \"{DATED_TAG}\"\nmutability = \"immutable\""
        )),
        "{lock}"
    );
    assert!(
        lock.contains("original = \"670b47f4f55d842d94edd529710099987c16eb6e\""),
        "{lock}"
    );
    assert_eq!(
        lock.matches("author = \"Ada Lovelace <ada@example.org>\"")
            .count(),
        2
    );
    assert!(
        lock.contains(&format!("context = {}", report["context_digest"])),
        "{lock}"
    );
    lock
}

/// Unchanged inputs: the cache gives the same image, and the record is left as it was.
#[track_caller]
fn assert_unchanged_inputs_reuse_the_image(example: &Example, id: &str, lock: &str) {
    let second = example.build(&[]).expect_code(0);
    assert_contains(&second.stderr, " cached");
    let second = second.json();
    assert_eq!(second["image"]["id"].as_str(), Some(id));
    assert_eq!(second["lock"]["changed"], false);
    assert_eq!(lock_text(example).as_deref(), Some(lock));
}

/// --locked holds while the inputs match, and names what changed once they do not.
#[track_caller]
fn assert_locked_names_what_changed(example: &Example, lock: &str) {
    example.build(&["--locked"]).expect_code(0);
    example
        .context
        .write("overlays/app/notes.txt", "a new file\n");
    let refused = example.build(&["--locked"]).expect_code(1);
    assert!(
        refused
            .stderr
            .contains("--locked: the inputs no longer match"),
        "{}",
        refused.stderr
    );
    assert_contains(&refused.stderr, "overlays: recorded sha256:");
    assert_eq!(lock_text(example).as_deref(), Some(lock));
}

#[test]
fn a_failing_run_moves_no_tag_and_leaves_the_record_untouched() {
    let Some((example, id)) = built("failing") else {
        return;
    };
    let lock = lock_text(&example).unwrap();

    example.context.edit(
        "templates/Dockerfile.j2",
        "# The smoke gate:",
        "RUN echo about to fail && echo the last words && exit 3\n\n# The smoke gate:",
    );
    for builder in ["buildkit", "classic"] {
        let run = example.build(&["--builder", builder]).expect_code(1);
        assert!(
            run.stderr
                .contains("RUN echo about to fail && echo the last words && exit 3 failed:"),
            "{builder}: {}",
            run.stderr
        );
        assert!(
            run.stderr.contains("exit code: 3") || run.stderr.contains("non-zero code: 3"),
            "{builder}: {}",
            run.stderr
        );
        assert!(
            run.stderr.contains("  | the last words"),
            "{builder}: {}",
            run.stderr
        );
        // stdout is the error document and nothing else.
        let error = &run.json()["error"];
        assert_eq!(error["exit"], 1, "{builder}: {error:#}");
        assert!(
            error["message"]
                .as_str()
                .is_some_and(|message| message.contains("exit 3 failed:")),
            "{builder}: {error:#}"
        );
        example.assert_tags_on(&id);
        assert_eq!(lock_text(&example).as_deref(), Some(lock.as_str()));
    }
}

#[test]
fn a_dated_tag_naming_another_image_is_refused_unless_forced() {
    let Some((example, first_id)) = built("dated") else {
        return;
    };
    let lock = lock_text(&example).unwrap();

    example.context.edit(
        "pins.toml",
        "GREETING = \"hello\"",
        "GREETING = \"good-morning\"",
    );
    let refused = example.build(&[]).expect_code(1);
    assert!(
        refused.stderr.contains(&format!(
            "error: tag {DATED_TAG} already points at {first_id}"
        )),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("pass --force"),
        "{}",
        refused.stderr
    );
    // Refused before any tag moved: the moving tag too stays where it was.
    example.assert_tags_on(&first_id);
    assert_eq!(lock_text(&example).as_deref(), Some(lock.as_str()));

    let second_id = reported_id(&example.build(&["--force"]).expect_code(0).json());
    assert_ne!(second_id, first_id);
    example.assert_tags_on(&second_id);
    let _ = Command::new("docker")
        .args(["image", "rm", &first_id])
        .output();
}

#[test]
fn push_records_the_digest_the_registry_serves() {
    if !docker_ready() {
        return;
    }
    let registry = RegistryServer::start();
    let name = format!("forge-test/push-{}", std::process::id());
    let example = Example::with_repository(&format!("{}/{name}", registry.address()));
    let run = example.build(&["--push"]).expect_code(0);
    let json = run.json();
    let pushed = json["image"]["pushed"].as_array().unwrap();
    assert_eq!(pushed.len(), 2, "{json}");
    let lock = lock_text(&example).unwrap();
    for entry in pushed {
        let reference = entry["tag"].as_str().unwrap();
        let tag = reference.rsplit(':').next().unwrap();
        let recorded = entry["digest"].as_str().unwrap();
        let (code, served, body) = registry
            .get(&format!("/v2/{name}/manifests/{tag}"), MANIFEST)
            .expect("the registry answers");
        assert_eq!(code, 200, "{reference}");
        assert_eq!(served.as_deref(), Some(recorded), "{reference}");
        let computed = format!("sha256:{}", hex::encode(sha2::Sha256::digest(&body)));
        assert_eq!(computed, recorded, "{reference}");
        assert!(
            lock.contains(&format!("name = \"{tag}\""))
                && lock.contains(&format!("pushed = \"{recorded}\"")),
            "{lock}"
        );
    }
    // Both tags were pushed from one image: one manifest.
    assert_eq!(pushed[0]["digest"], pushed[1]["digest"]);

    // A dated tag the registry already holds for another image is refused before any push.
    example.context.edit(
        "pins.toml",
        "GREETING = \"hello\"",
        "GREETING = \"good-evening\"",
    );
    let first_id = json["image"]["id"].as_str().unwrap().to_owned();
    let _ = Command::new("docker")
        .args([
            "image",
            "rm",
            &format!("{}:{DATED_TAG}", example.repository),
        ])
        .output();
    let refused = example.build(&["--push"]).expect_code(1);
    assert!(
        refused
            .stderr
            .contains(&format!("tag {DATED_TAG} already names sha256:")),
        "{}",
        refused.stderr
    );
    let (_, served, _) = registry
        .get(&format!("/v2/{name}/manifests/latest"), MANIFEST)
        .unwrap();
    assert_eq!(served.as_deref(), pushed[0]["digest"].as_str());
    assert_eq!(example.tag_id("latest").as_deref(), Some(first_id.as_str()));
    let _ = Command::new("docker")
        .args(["image", "rm", &first_id])
        .output();
}

/// Both manifest types: asked for one only, the registry would convert the other.
const ACCEPT: &[&str] = &[MANIFEST, MANIFEST_LIST];

#[test]
fn a_dated_tag_in_the_registry_is_judged_by_the_image_it_holds_not_by_its_manifest() {
    if !docker_available() || crate::support::registry::registry_tools_missing() {
        return;
    }
    ensure_base_image();
    let registry = RegistryServer::start();
    let name = format!("forge-test/pushed-elsewhere-{}", std::process::id());
    let example = Example::with_repository(&format!("{}/{name}", registry.address()));
    let id = reported_id(&example.build(&[]).expect_code(0).json());
    let (elsewhere, body) = a_push_from_elsewhere_is_kept(&registry, &name, &example, &id);

    // A manifest list whose entry for the recipe's platform is that manifest holds the same
    // image.
    let list = index_of(MANIFEST_LIST, &[(&elsewhere, body.len(), "amd64")]);
    registry.put_manifest(&name, DATED_TAG, MANIFEST_LIST, list.as_bytes());
    let (list, _) = registry.held(&name, DATED_TAG, ACCEPT);
    example.build(&["--push"]).expect_code(0);
    // Pushing would have replaced the list with this one image: it stays.
    assert_eq!(registry.held(&name, DATED_TAG, ACCEPT).0, list);

    // A list without an entry for the platform, and another image, are refused; nothing moves.
    let list = index_of(MANIFEST_LIST, &[(&elsewhere, body.len(), "s390x")]);
    registry.put_manifest(&name, DATED_TAG, MANIFEST_LIST, list.as_bytes());
    assert_push_refused(&registry, &name, &example, &id, "no image for linux/amd64");
    let dated = format!("{}:{DATED_TAG}", example.repository);
    skopeo_copy(&[], &format!("docker-daemon:{}", base_image()), &dated);
    let base_id = image_id(base_image()).unwrap();
    assert_ne!(base_id, id);
    assert_push_refused(&registry, &name, &example, &id, &format!("image {base_id}"));
    drop(example);
    let _ = Command::new("docker").args(["image", "rm", &id]).output();
}

/// The example's image `id` pushed to its dated tag from another machine: the same image with
/// its layers compressed by skopeo, not by this daemon, so a manifest this daemon never pushed
/// and has no digest of. `forge build --push` keeps it, records it, and verifies; returns its
/// digest and bytes.
fn a_push_from_elsewhere_is_kept(
    registry: &RegistryServer,
    name: &str,
    example: &Example,
    id: &str,
) -> (String, Vec<u8>) {
    let dated = format!("{}:{DATED_TAG}", example.repository);
    skopeo_copy(&[], &format!("docker-daemon:{dated}"), &dated);
    let (elsewhere, body) = registry.held(name, DATED_TAG, ACCEPT);
    let manifest: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(manifest["config"]["digest"], id);
    let repo_digests = Command::new("docker")
        .args(["image", "inspect", "--format", "{{json .RepoDigests}}", id])
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&repo_digests.stdout).contains(&elsewhere),
        "the daemon knows {elsewhere}"
    );
    let run = example.build(&["--push"]).expect_code(0);
    let pushed = run.json();
    insta::assert_snapshot!(
        "json_build_push",
        crate::support::json_shape(&pushed, example.context.path())
    );
    assert_eq!(pushed["image"]["id"], id);
    assert_eq!(pushed["image"]["pushed"].as_array().unwrap().len(), 2);
    // The dated tag is kept as the registry holds it, not pushed again, and recorded so.
    assert_contains(
        &run.stderr,
        &format!("Kept {dated} {elsewhere} (the registry already holds this image)"),
    );
    assert_eq!(registry.held(name, DATED_TAG, ACCEPT).0, elsewhere);
    // Two manifests of one image: the registry checks hold, the tags agree on the image.
    crate::support::verify::verify(example, &["--remote"], &[]).expect_code(0);
    assert!(
        pushed["image"]["pushed"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!({ "tag": dated, "digest": elsewhere })),
        "{pushed}"
    );
    (elsewhere, body)
}

/// `forge build --push` refuses the dated tag the registry holds as `holds`, not the image
/// just built (`id`), and moves neither tag in the registry.
#[track_caller]
fn assert_push_refused(
    registry: &RegistryServer,
    name: &str,
    example: &Example,
    id: &str,
    holds: &str,
) {
    let (before, _) = registry.held(name, DATED_TAG, ACCEPT);
    let (latest, _) = registry.held(name, "latest", ACCEPT);
    let run = example.build(&["--push"]).expect_code(1);
    assert!(
        run.stderr.contains(&format!(
            "error: tag {DATED_TAG} already names {before} in the registry ({holds}), which is not the image just built ({id})"
        )),
        "{}",
        run.stderr
    );
    assert_contains(
        &run.stderr,
        "hint: dated tags are immutable; bump the date in pins.toml, or pass --force to re-point it",
    );
    assert_eq!(registry.held(name, DATED_TAG, ACCEPT).0, before);
    assert_eq!(registry.held(name, "latest", ACCEPT).0, latest);
}

/// The lines of `stderr` that say how a run ended (`error:`, `caused by:`, `hint:`,
/// `warning:`), without the builder's log around them, which the engine and its cache decide.
fn outcome(stderr: &str) -> String {
    stderr
        .lines()
        .filter(|line| {
            ["error:", "caused by:", "hint:", "warning:"]
                .iter()
                .any(|start| line.starts_with(start))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_registry_that_cannot_be_reached_before_pushing_exits_2_and_moves_nothing() {
    if !docker_ready() {
        return;
    }
    // A port that was free a moment ago: nothing listens there.
    let port = free_port();
    let name = format!("forge-test/no-registry-{}", std::process::id());
    let example = Example::with_repository(&format!("127.0.0.1:{port}/{name}"));
    let run = example.build(&["--push"]).expect_code(2);
    let stderr = run
        .stderr
        .replace(&format!("127.0.0.1:{port}"), "<registry>");
    forge_snapshot!(outcome(&stderr), example.context.path(), @"
    warning: the build cache <registry>/forge-test/no-registry-<pid>:buildcache cannot be read (cannot reach the registry at http://<registry>/v2/forge-test/no-registry-<pid>/manifests/buildcache: io: Connection refused (os error 111)); building without it
    error: could not check <registry>/forge-test/no-registry-<pid>:2026-07-08-offline in its registry
    caused by: cannot reach the registry at http://<registry>/v2/forge-test/no-registry-<pid>/manifests/2026-07-08-offline: io: Connection refused (os error 111)
    hint: check the registry host and the network; a registry without TLS on another host needs --insecure-registry HOST
    ");
    example.assert_untagged();
    assert_eq!(lock_text(&example), None);
    let id = run
        .stderr
        .lines()
        .find_map(|line| line.split("Built ").nth(1));
    if let Some(id) = id {
        let _ = Command::new("docker")
            .args(["image", "rm", id.trim()])
            .output();
    }
}

/// A series onto the remote a git pin builds goes into the context as the patches forge applied
/// (as `git format-patch` mails of its commits), and the Dockerfile copies them to the pin's
/// build step: applied there with `git apply` onto a checkout of the same commit, they give the
/// tree `git am` gives.
#[test]
fn a_series_onto_a_git_pin_reaches_the_context_as_the_patches_applied() {
    use crate::support::git::git;

    let (context, remote) = with_a_deepgemm_series(&[
        ("Tune the kernel", &[("kernel.txt", "first, tuned\n")]),
        ("Add notes", &[("notes.txt", "notes\n")]),
    ]);
    // The recipe keeps patch files out of the context; the mails the build step applies are
    // forge's own and stay in.
    context.write(".dockerignore", "**/*.patch\n");
    let home = context.path().join(".home");
    let cache = home.join(".cache");
    let archive = context.path().join("context.tar");
    let run = context.forge_with(
        &[
            "build",
            "--dry-run",
            "--context-out",
            archive.to_str().unwrap(),
        ],
        &[("XDG_CACHE_HOME", cache.to_str().unwrap())],
    );
    let run = run.expect_code(0);
    assert_contains(&run.stderr, "Patched patches/deepgemm onto file://");

    // The context holds the two mails, in order, and nothing else under the series folder.
    let mut tar = tar::Archive::new(std::fs::File::open(&archive).unwrap());
    let mut mails = Vec::new();
    for entry in tar.entries().unwrap() {
        let mut entry = entry.unwrap();
        let path = entry.path().unwrap().display().to_string();
        if let Some(name) = path.strip_prefix(".forge/series/deepgemm/")
            && !name.is_empty()
        {
            let mut text = String::new();
            entry.read_to_string(&mut text).unwrap();
            mails.push((name.to_owned(), text));
        }
    }
    let names: Vec<&str> = mails.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        ["0001-Tune-the-kernel.patch", "0002-Add-notes.patch"]
    );
    assert_contains(&mails[0].1, "Subject: [PATCH] Tune the kernel");

    // git applies them onto a checkout of the pin's commit, as the build step does.
    let checkout = tempfile::tempdir().unwrap();
    git(
        checkout.path(),
        &["clone", "--quiet", &remote.url(), "deepgemm"],
    );
    let work = checkout.path().join("deepgemm");
    git(&work, &["checkout", "--quiet", "--detach", &remote.first]);
    for (name, text) in &mails {
        let path = checkout.path().join(name);
        std::fs::write(&path, text).unwrap();
        git(&work, &["apply", "--index", path.to_str().unwrap()]);
    }
    let applied = git(&work, &["write-tree"]);
    // The oracle: git am of the series onto the same commit.
    git(&work, &["reset", "--quiet", "--hard", &remote.first]);
    let series: Vec<String> = std::fs::read_dir(context.path().join("patches/deepgemm"))
        .unwrap()
        .map(|entry| entry.unwrap().path().display().to_string())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut am = vec!["am", "--quiet"];
    am.extend(series.iter().map(String::as_str));
    git(&work, &am);
    assert_eq!(applied, git(&work, &["rev-parse", "HEAD^{tree}"]));

    // The rendered Dockerfile copies the folder and applies it after the checkout.
    let rendered = context.forge(&["render"]).expect_code(0).stdout;
    assert!(
        rendered.contains("COPY .forge/series/deepgemm/ /opt/forge/series/deepgemm/\n"),
        "{rendered}"
    );
    assert!(
        rendered.contains(" && find /opt/forge/series/deepgemm/ -name '*.patch' -print0 | sort -z | xargs -0 -r git -C /tmp/deepgemm apply \\\n"),
        "{rendered}"
    );
}

/// A template that leaves a git pin's series out would build an image without it: refused.
#[test]
fn a_template_that_never_copies_a_git_pins_series_is_refused() {
    let (context, _remote) =
        with_a_deepgemm_series(&[("Tune the kernel", &[("kernel.txt", "first, tuned\n")])]);
    context.edit(
        "templates/Dockerfile.j2",
        "{% if pins.deepgemm.series %}",
        "{% if false %}",
    );
    let run = context.forge(&["render"]).expect_code(2);
    forge_snapshot!(run.stderr, context.path(), @"
    error: templates/Dockerfile.j2: pin `deepgemm` has a patch series, but the Dockerfile never copies .forge/series/deepgemm/, so the image would be built without it
    hint: in the pin's build step, `COPY {{ pins['deepgemm'].series.from }}/ {{ pins['deepgemm'].series.to }}` and apply its `*.patch` files in name order after the checkout (the default template's DeepGEMM step shows how)
    ");
}

/// The series check reads instructions as Docker does: any letter case, continuation lines.
#[test]
fn a_series_copied_by_a_lowercase_continued_copy_is_found() {
    let (context, _remote) =
        with_a_deepgemm_series(&[("Tune the kernel", &[("kernel.txt", "first, tuned\n")])]);
    context.edit(
        "templates/Dockerfile.j2",
        "COPY {{ pins.deepgemm.series.from }}/ {{ pins.deepgemm.series.to }}",
        "copy \\\n    {{ pins.deepgemm.series.from }}/ {{ pins.deepgemm.series.to }}",
    );
    let run = context.forge(&["render"]).expect_code(0);
    assert_contains(&run.stdout, "copy \\\n    .forge/series/deepgemm/");
}

/// `--repository` tags the build into another repository; forge.lock records it, and
/// verify-digest follows the record without the flag.
#[test]
fn repository_sends_the_tags_elsewhere_and_the_record_follows() {
    if !docker_ready() {
        return;
    }
    let example = Example::new("repository-flag");
    let elsewhere = format!("{}-elsewhere", example.repository);
    let report = example
        .build_with(&["--repository", &elsewhere], &[])
        .expect_code(0)
        .json();
    let id = reported_id(&report);
    assert_eq!(
        image_id(&format!("{elsewhere}:latest")).as_deref(),
        Some(id.as_str())
    );
    assert_eq!(
        image_id(&format!("{elsewhere}:{DATED_TAG}")).as_deref(),
        Some(id.as_str())
    );
    let lock = example.context.read("forge.lock");
    assert!(
        lock.contains(&format!("repository = \"{elsewhere}\"")),
        "{lock}"
    );
    crate::support::verify::verify(&example, &[], &[]).expect_code(0);
}

/// A base image in a registry that wants a password is pulled with the credentials the docker
/// CLI would send (here forge's variables, kept for that registry by FORGE_REGISTRY_HOST), with
/// either builder; without them the build stops and names the registry.
#[test]
fn a_private_base_is_pulled_with_the_registry_credentials() {
    if !docker_ready() || crate::support::registry::registry_tools_missing() {
        return;
    }
    let registry = RegistryServer::start_with_basic_auth();
    let (user, password) = registry.credentials().unwrap();
    let base = format!(
        "{}/forge-test/private-base-{}:1",
        registry.address(),
        std::process::id()
    );
    crate::support::registry::skopeo_copy(
        &["--dest-creds", &format!("{user}:{password}")],
        &format!("docker-daemon:{}", crate::support::images::base_image()),
        &base,
    );
    let example = Example::new("private-base");
    example.context.edit(
        "pins.toml",
        &crate::support::images::base_line(),
        &format!("image = \"{base}\""),
    );
    let config = tempfile::tempdir().unwrap();
    let config = config.path().to_str().unwrap();
    for builder in ["classic", "buildkit"] {
        let refused = example
            .build_with(&["--builder", builder], &[("DOCKER_CONFIG", config)])
            .expect_code(2);
        assert_contains(
            &refused.stderr,
            &format!(
                "error: cannot pull the base {base}: the registry refused the credentials for {}",
                registry.address()
            ),
        );
        assert_contains(
            &refused.stderr,
            &format!("hint: log in with `docker login {}`", registry.address()),
        );
    }
    let _ = Command::new("docker")
        .args(["image", "rm", "-f", &base])
        .output();
    let mut env = registry.credentials_env().to_vec();
    env.push(("FORGE_REGISTRY_HOST", registry.address()));
    env.push(("DOCKER_CONFIG", config));
    for builder in ["classic", "buildkit"] {
        example
            .build_with(&["--builder", builder, "--no-cache", "--force"], &env)
            .expect_code(0);
        let _ = Command::new("docker")
            .args(["image", "rm", "-f", &base])
            .output();
    }
}

/// An image a second stage pulls, from a registry that wants a password on another host:port
/// than the base's, is pulled with the credentials the docker CLI sends with a build: those of
/// every configured registry (config.json's `auths`, each `credHelpers` host, what the
/// `credsStore` helper lists), not only the base's. None of them is printed.
#[test]
fn every_configured_registry_gets_its_credentials_with_the_build() {
    if !docker_ready() || crate::support::registry::registry_tools_missing() {
        return;
    }
    let registry = RegistryServer::start_with_basic_auth();
    let (user, password) = registry.credentials().unwrap();
    let stage = format!(
        "{}/forge-test/private-stage-{}:1",
        registry.address(),
        std::process::id()
    );
    skopeo_copy(
        &["--dest-creds", &format!("{user}:{password}")],
        &format!("docker-daemon:{}", base_image()),
        &stage,
    );
    let example = Example::new("private-stage");
    example.context.edit(
        "templates/Dockerfile.j2",
        "FROM {{ base.reference }}",
        &format!(
            "FROM {stage} AS tool\n\nFROM {{{{ base.reference }}}}\nCOPY --from=tool /bin/busybox /opt/tool/busybox"
        ),
    );
    let forget = || {
        let _ = Command::new("docker")
            .args(["image", "rm", "-f", &stage])
            .output();
    };
    let helper = crate::support::credential_helper::CredentialHelper::knowing(&[(
        registry.address(),
        user,
        password,
    )]);
    let path = helper.path();
    let nothing = helper.docker_config(&serde_json::json!({}));
    for builder in ["classic", "buildkit"] {
        let refused = example
            .build_with(
                &["--builder", builder],
                &[("DOCKER_CONFIG", nothing.to_str().unwrap())],
            )
            .expect_code(2);
        assert_contains(
            &refused.stderr,
            &format!(
                "error: cannot pull {stage}, which the Dockerfile names: the registry refused the credentials for {}",
                registry.address()
            ),
        );
    }
    let auth = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        format!("{user}:{password}"),
    );
    let configs = [
        serde_json::json!({"auths": {registry.address(): {"auth": auth}}}),
        serde_json::json!({"credHelpers": {registry.address(): crate::support::credential_helper::HELPER}}),
        serde_json::json!({"credsStore": crate::support::credential_helper::HELPER}),
    ];
    for config in configs {
        let folder = helper.docker_config(&config);
        for builder in ["classic", "buildkit"] {
            forget();
            let run = example.build_with(
                &["--builder", builder, "--no-cache", "--force"],
                &[
                    ("DOCKER_CONFIG", folder.to_str().unwrap()),
                    ("PATH", path.as_str()),
                ],
            );
            let run = run.expect_code(0);
            assert!(
                !run.stdout.contains(password) && !run.stderr.contains(password),
                "the password was printed:\n{}\n{}",
                run.stdout,
                run.stderr
            );
        }
    }
    forget();
}

/// The first real build names what is wrong: a build for another platform than the daemon
/// runs on says so before it starts, and a base whose registry the daemon cannot reach (here a
/// port nothing listens on) is the network's failure (exit 2), named with the registry and what
/// to check, not a step to fix. Nothing is tagged or recorded.
#[test]
fn another_platform_is_named_before_building_and_an_unreachable_base_as_the_network() {
    if !crate::support::images::docker_ready() {
        return;
    }
    let example = Example::new("unreachable-base");
    example.context.edit(
        "pins.toml",
        &crate::support::images::base_line(),
        "image = \"127.0.0.1:9/forge-absent/base:busybox\"",
    );
    // Whichever platform the daemon does not run on.
    let native = crate::support::images::daemon_platform();
    let foreign = if native == "linux/arm64" {
        "linux/amd64"
    } else {
        "linux/arm64"
    };
    for builder in ["buildkit", "classic"] {
        let run = example
            .build(&["--builder", builder, "--platform", foreign])
            .expect_code(2);
        let warned = run
            .stderr
            .find("warning: the daemon at ")
            .unwrap_or_else(|| panic!("{builder}: {}", run.stderr));
        let building = run.stderr.find("Building ").unwrap();
        assert!(warned < building, "{builder}: {}", run.stderr);
        assert_contains(
            &run.stderr,
            &format!(
                "runs on {native} and this build is for {foreign}: every RUN step runs under emulation"
            ),
        );
        assert_contains(
            &run.stderr,
            "error: the daemon could not reach 127.0.0.1:9 to pull 127.0.0.1:9/forge-absent/base:busybox, the base image:",
        );
        assert_contains(
            &run.stderr,
            "this is the network between the daemon and 127.0.0.1:9",
        );
        assert!(
            !run.stderr.contains("fix the step"),
            "{builder}: {}",
            run.stderr
        );
        example.assert_untagged();
        assert!(!example.context.path().join("forge.lock").exists());
    }
}
