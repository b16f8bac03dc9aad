//! `[image] platforms`: one tag for two platforms, each built on its own daemon. The tests'
//! daemon builds linux/amd64, its own platform; a second daemon is named as the linux/arm64
//! node. The recipe only copies files, so no arm64 code runs on this amd64 machine: each
//! daemon holds a base image of its platform under the same name, loaded from an archive
//! whose configuration names that platform. skopeo reads back the index forge writes.

use std::process::{Command, Stdio};

use serde_json::Value;

use crate::support::image_guard::ImageGuard;
use crate::support::images::{daemon_host, daemon_platform, docker_available, id_on};
use crate::support::node::SecondDaemon;
use crate::support::registry::RegistryServer;
use crate::support::registry::registry_tools_missing;
use crate::support::verify::{row, verify_in};
use crate::support::{TestContext, assert_contains, stdout_of};

/// The guard label of the bases `load_base` makes.
const BASE_GUARD: &str = "forge-test-multi-base";

/// Loads a base of one file, `/etc/platform` saying `platform`, as `name` on the daemon at
/// `host`: an image archive as `docker save` writes it, whose configuration names the platform
/// (`docker import --platform` on these engines keeps the daemon's own architecture).
fn load_base(host: &str, name: &str, platform: &str) {
    use sha2::Digest as _;
    let tar = |entries: &[(&str, &[u8])]| {
        let mut archive = tar::Builder::new(Vec::new());
        for (path, bytes) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_size(bytes.len() as u64);
            header.set_mode(0o644);
            header.set_mtime(0);
            header.set_cksum();
            archive.append_data(&mut header, path, *bytes).unwrap();
        }
        archive.into_inner().unwrap()
    };
    let text = format!("{platform}\n");
    let layer = tar(&[("etc/platform", text.as_bytes())]);
    let diff_id = hex::encode(sha2::Sha256::digest(&layer));
    let (os, architecture) = platform.split_once('/').unwrap();
    let config = serde_json::to_vec(&serde_json::json!({
        "architecture": architecture,
        "os": os,
        // Labelled for the test's guard, which removes it when the test ends.
        "config": { "Labels": { crate::support::image_guard::LABEL: BASE_GUARD } },
        "rootfs": { "type": "layers", "diff_ids": [format!("sha256:{diff_id}")] },
    }))
    .unwrap();
    let config_name = format!("{}.json", hex::encode(sha2::Sha256::digest(&config)));
    let layer_name = format!("{diff_id}/layer.tar");
    let manifest = serde_json::to_vec(&serde_json::json!([{
        "Config": config_name,
        "RepoTags": [name],
        "Layers": [layer_name],
    }]))
    .unwrap();
    let archive = tar(&[
        ("manifest.json", &manifest),
        (&config_name, &config),
        (&layer_name, &layer),
    ]);
    let mut load = Command::new("docker")
        .args(["-H", host, "load", "--quiet"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::io::Write::write_all(load.stdin.as_mut().unwrap(), &archive).unwrap();
    drop(load.stdin.take());
    assert!(load.wait().unwrap().success(), "docker load on {host}");
}

fn recipe(repository: &str, base: &str, images: &ImageGuard) -> TestContext {
    let context = TestContext::empty();
    context.write("overlays/app/hello.txt", "hello from every platform\n");
    context.write(
        "pins.toml",
        &format!(
            "[image]\nrepository = \"{repository}\"\ndate = \"2026-07-08\"\n\
             platforms = [\"{}\", \"linux/arm64\"]\n\n\
             [image.tags]\nmoving = [\"latest\"]\nimmutable = [\"{{{{ date }}}}-multi\"]\n\n\
             [image.labels]\n{}\n\n\
             [base]\nimage = \"{base}\"\n\n\
             [[overlays]]\nfrom = \"overlays/app\"\nto = \"/opt/app/\"\n",
            daemon_platform(),
            images.label_entry(),
        ),
    );
    context.write(
        "templates/Dockerfile.j2",
        "FROM {{ base.reference }}\n\
         {% for overlay in overlays %}\n\
         COPY {{ overlay.from }}/ {{ overlay.to }}\n\
         {% endfor %}\n\
         LABEL{% for label in image.labels %} {{ label.name }}=\"{{ label.value }}\"{% endfor %}\n",
    );
    context
}

fn skopeo_raw(reference: &str) -> Value {
    let raw = stdout_of(Command::new("skopeo").args([
        "inspect",
        "--raw",
        "--tls-verify=false",
        &format!("docker://{reference}"),
    ]));
    serde_json::from_slice(&raw).expect("skopeo prints the manifest")
}

/// Every platform needs a node before anything is built, and an index needs a registry: `arm`
/// (`--node`'s value for linux/arm64) alone is refused without `--push`.
#[track_caller]
fn assert_a_node_per_platform_and_a_registry_are_needed(context: &TestContext, arm: &str) {
    let run = context.forge(&["build", "--push"]).expect_code(2);
    assert_contains(
        &run.stderr,
        "error: no node builds linux/arm64: the default daemon runs on linux/amd64",
    );
    assert_contains(
        &run.stderr,
        "hint: name a daemon that runs on linux/arm64: --node linux/arm64=",
    );
    let run = context.forge(&["build", "--node", arm]).expect_code(2);
    assert_contains(&run.stderr, "are built together only with --push");
}

/// `forge pull --host HOST...` puts `repository:latest` at the image `id` on every host.
#[track_caller]
fn assert_pulled_onto(context: &TestContext, hosts: &[&str], repository: &str, id: &str) {
    let mut args = vec!["pull", "--progress", "plain"];
    for host in hosts {
        args.extend(["--host", host]);
    }
    context.forge(&args).expect_code(0);
    for host in hosts {
        assert_eq!(
            id_on(host, &format!("{repository}:latest")).as_deref(),
            Some(id),
            "{host}"
        );
    }
}

#[test]
fn two_platforms_built_on_their_nodes_share_one_index_that_skopeo_reads() {
    let registry = RegistryServer::start();
    if !docker_available() || registry_tools_missing() {
        return;
    }
    assert_eq!(
        daemon_platform(),
        "linux/amd64",
        "the test machine's own platform"
    );
    let Some(node) = SecondDaemon::start_or_skip() else {
        return;
    };
    let _bridge = node.reach(registry.port());
    let (port, _conduit) = node.conduit();
    let conduit = [("FORGE_CONDUIT_PORT", port.as_str())];
    let base = format!("forge-test-multi-base:{}", std::process::id());
    let main = daemon_host();
    load_base(&main, &base, "linux/amd64");
    load_base(&node.host, &base, "linux/arm64");
    let _base_guard = ImageGuard::new(BASE_GUARD);
    let repository = format!("{}/forge-test/multi", registry.address());
    let images = ImageGuard::new(&repository);
    let context = recipe(&repository, &base, &images);

    let arm = format!("linux/arm64={}", node.host);
    assert_a_node_per_platform_and_a_registry_are_needed(&context, &arm);

    let run = context
        .forge_with(
            &[
                "--json",
                "build",
                "--push",
                "--progress",
                "plain",
                "--node",
                &arm,
            ],
            &conduit,
        )
        .expect_code(0);
    let lock: toml::Table = context.read("forge.lock").parse().unwrap();
    let platforms = lock["platforms"]
        .as_array()
        .expect("forge.lock records each platform");
    assert_eq!(platforms.len(), 2, "{lock}");
    let pushed = lock["tags"][0]["pushed"].as_str().unwrap().to_owned();
    assert_eq!(run.json()["image"]["pushed"][0]["digest"], pushed.as_str());

    // skopeo sees one OCI index under both tags, each entry's config the recorded image id.
    assert_index_matches(&repository, platforms);

    // verify-digest --remote checks every entry against the record.
    let json = verify_in(&context, &["--remote"], &[])
        .expect_code(0)
        .json();
    let arm_row = row(
        &json,
        "registry image",
        &format!("{repository}:latest (linux/arm64)"),
    );
    assert_eq!(arm_row["actual"], platforms[1]["id"].as_str().unwrap());

    // forge pull puts on each node the image of its own platform (both run on linux/amd64 here).
    let amd = platforms[0]["id"].as_str().unwrap();
    assert_pulled_onto(&context, &[&main, &node.host], &repository, amd);

    // A second push of the same images keeps the dated tag: the index is the same.
    context
        .forge_with(
            &["build", "--push", "--progress", "plain", "--node", &arm],
            &conduit,
        )
        .expect_code(0);

    // Other images under the same date: the dated tag is not re-pointed, and no tag moves.
    context.write("overlays/app/hello.txt", "hello again\n");
    let run = context
        .forge_with(
            &["build", "--push", "--progress", "plain", "--node", &arm],
            &conduit,
        )
        .expect_code(1);
    assert_contains(
        &run.stderr,
        &format!(
            "error: tag 2026-07-08-multi in {repository} already names {pushed}, not the index of this build"
        ),
    );
    assert_tags_name(&repository, &pushed);
}

/// Both tags name one OCI index whose entries are the recorded platforms' manifests, each with
/// the recorded image id as its configuration.
fn assert_index_matches(repository: &str, platforms: &[toml::Value]) {
    for tag in ["latest", "2026-07-08-multi"] {
        let index = skopeo_raw(&format!("{repository}:{tag}"));
        assert_eq!(
            index["mediaType"], "application/vnd.oci.image.index.v1+json",
            "{index:#}"
        );
        let entries = index["manifests"].as_array().unwrap();
        assert_eq!(entries.len(), 2, "{index:#}");
        for (entry, recorded) in entries.iter().zip(platforms) {
            let platform = format!(
                "{}/{}",
                entry["platform"]["os"].as_str().unwrap(),
                entry["platform"]["architecture"].as_str().unwrap()
            );
            assert_eq!(platform, recorded["platform"].as_str().unwrap());
            assert_eq!(entry["digest"], recorded["manifest"].as_str().unwrap());
            let manifest = skopeo_raw(&format!(
                "{repository}@{}",
                entry["digest"].as_str().unwrap()
            ));
            assert_eq!(
                manifest["config"]["digest"],
                recorded["id"].as_str().unwrap()
            );
        }
    }
}

/// Both tags still name `digest` in the registry.
fn assert_tags_name(repository: &str, digest: &str) {
    for tag in ["latest", "2026-07-08-multi"] {
        let held = stdout_of(Command::new("skopeo").args([
            "inspect",
            "--tls-verify=false",
            "--format",
            "{{.Digest}}",
            &format!("docker://{repository}:{tag}"),
        ]));
        assert_eq!(String::from_utf8_lossy(&held).trim(), digest, "{tag}");
    }
}
