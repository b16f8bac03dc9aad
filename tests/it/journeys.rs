//! Each user's journey, from what that user has, through the real binary, with real daemons and
//! a real registry on loopback:
//!
//! - the tester has an image reference and the lab's public key, in an otherwise empty folder;
//! - the maintainer has the recipe, with its committed forge.lock (CI's journey, a fresh clone
//!   and an empty daemon, is in `workflow.rs`, where the workflow's own lines are read).
//!
//! Every step's exit code is asserted, so a journey fails at the step that broke.

use std::path::Path;
use std::process::Command;

use crate::support::images::daemon_host;
use crate::support::images::id_on;
use crate::support::images::{
    DATED_TAG, Example, base_image, build_in, docker_available, ensure_base_image,
};
use crate::support::images::{Tagged, docker};
use crate::support::keys::Keys;
use crate::support::node::SecondDaemon;
use crate::support::registry::RegistryServer;
use crate::support::registry::registry_tools_missing;
use crate::support::release::{ReleaseServer, sha256_hex, wheel};
use crate::support::snapshot::forge_snapshot;
use crate::support::{Run, TestContext, assert_contains, assert_fits_100_columns};

/// `forge ARGS` run in `folder` without `-C`, as a user in that folder types it.
fn forge_in(folder: &Path, args: &[&str]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_forge"));
    command
        .args(args)
        .current_dir(folder)
        .env_remove("SOURCE_DATE_EPOCH")
        .env_remove("FORGE_SIGNING_KEY")
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100");
    Run::of(&mut command)
}

/// The names in `folder`, sorted.
fn names_in(folder: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(folder)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// What a run printed, stderr then stdout, as two parts.
fn streams(run: &Run) -> String {
    format!("{}--- stdout\n{}", run.stderr, run.stdout)
}

/// `forge pull REFERENCE HOSTS...` in `folder` pulls, and, without `--key`, says once how far
/// the record is trusted.
#[track_caller]
fn assert_pulled_saying_once_how_far_it_is_trusted(folder: &Path, reference: &str, hosts: &[&str]) {
    let pulled = forge_in(folder, &[&["pull", reference][..], hosts].concat()).expect_code(0);
    forge_snapshot!("tester_pull", streams(&pulled), folder);
    assert_fits_100_columns(&pulled.stdout, &pulled.stderr);
    assert_eq!(
        pulled.stderr.matches("is trusted only as far as").count(),
        1,
        "without --key forge says once how far the record is trusted:\n{}",
        pulled.stderr
    );
}

/// The tester has `REPOSITORY:latest` and `lab.pub`: pulls on both nodes of a two-node rig,
/// verifies the record's signature, the registry, both nodes and the image's contents, and
/// prints the report, writing nothing. Then the tag is re-pointed, first at an image forge
/// pushed unsigned, then at one pushed by hand: every command refuses it (exit 1).
#[test]
fn a_tester_with_only_the_reference_and_the_key_pulls_verifies_and_reports() {
    let registry = RegistryServer::start();
    if !docker_available() || registry_tools_missing() {
        return;
    }
    ensure_base_image();
    let example = Example::with_repository(&format!(
        "{}/forge-journey/tester-{:07}",
        registry.address(),
        std::process::id()
    ));
    let keys = Keys::new();
    build_in(
        &example.context,
        &["--push", "--sign", "--sign-key", &keys.private_arg()],
        &[],
    )
    .expect_code(0);
    let Some(node) = SecondDaemon::start_or_skip() else {
        return;
    };
    let _bridge = node.reach(registry.port());

    let tester = TestContext::empty();
    tester.write("lab.pub", &keys.public_text());
    let folder = tester.path();
    let reference = format!("{}:latest", example.repository);
    let (first, second) = (daemon_host(), node.host.clone());
    let hosts = ["--host", first.as_str(), "--host", second.as_str()];

    assert_pulled_saying_once_how_far_it_is_trusted(folder, &reference, &hosts);
    let id = example.tag_id("latest").expect("the build tagged latest");
    let dated = format!("{}:{DATED_TAG}", example.repository);
    assert_eq!(id_on(&second, &dated).as_deref(), Some(id.as_str()));

    let verified = forge_in(
        folder,
        &[
            &[
                "verify-digest",
                &reference,
                "--key",
                "lab.pub",
                "--contents",
            ][..],
            &hosts,
        ]
        .concat(),
    )
    .expect_code(0);
    forge_snapshot!("tester_verify_digest", streams(&verified), folder);
    assert_fits_100_columns(&verified.stdout, &verified.stderr);
    // The table is the answer, on stdout (`> checks.txt` keeps it); status stays on stderr.
    assert!(verified.stdout.starts_with("CHECK "), "{}", verified.stdout);
    assert_contains(&verified.stdout, &second);
    assert_contains(
        &verified.stderr,
        &format!("checks against the record attached to {reference}"),
    );

    assert_reported(&example, folder, &reference);
    assert_eq!(
        names_in(folder),
        ["lab.pub"],
        "a tester's folder gets nothing written"
    );

    refused_once_re_pointed(&example, folder, &reference, &hosts);
}

/// `forge report REF` names the image, its patch author and its build record, and asks for
/// what the write-up asks a tester to record.
fn assert_reported(example: &Example, folder: &Path, reference: &str) {
    let report = forge_in(folder, &["report", reference]).expect_code(0);
    assert_contains(
        &report.stdout,
        &format!("# Tester report: {}", example.repository),
    );
    forge_snapshot!("tester_report", report.stdout, folder);
}

/// The tag re-pointed at an image forge pushed without --sign (its record is not signed), then
/// at one pushed by hand (no record at all): the tester's commands refuse it, writing nothing.
fn refused_once_re_pointed(example: &Example, folder: &Path, reference: &str, hosts: &[&str]) {
    example
        .context
        .edit("pins.toml", "GREETING = \"hello\"", "GREETING = \"hi\"");
    example.context.edit(
        "pins.toml",
        "date = \"2026-07-08\"",
        "date = \"2026-07-09\"",
    );
    build_in(&example.context, &["--push"], &[]).expect_code(0);
    let unsigned =
        forge_in(folder, &["verify-digest", reference, "--key", "lab.pub"]).expect_code(1);
    forge_snapshot!("tester_verify_digest_unsigned", unsigned.stderr, folder);
    forge_in(
        folder,
        &[&["pull", reference, "--key", "lab.pub"][..], hosts].concat(),
    )
    .expect_code(1);

    // The tag re-pointed at an image pushed by hand: no record at all.
    let by_hand = Tagged(vec![reference.to_owned()]);
    docker(&["tag", base_image(), reference]);
    docker(&["push", "--quiet", reference]);
    let foreign =
        forge_in(folder, &["verify-digest", reference, "--key", "lab.pub"]).expect_code(1);
    forge_snapshot!(foreign.stderr, folder, @"
          Asking 127.0.0.1:<port>/forge-journey/tester-<pid>:latest of its registry
    error: 127.0.0.1:<port>/forge-journey/tester-<pid>:latest names sha256:<digest>, which has no build record attached (127.0.0.1:<port>/forge-journey/tester-<pid>:sha256-<digest>.record does not exist)
    hint: the tag names an image `forge build --push` did not publish (re-pointed by hand, or pushed by another tool): pull and verify the image the lab published, or ask for its reference
    ");
    forge_in(folder, &["report", reference, "--key", "lab.pub"]).expect_code(1);
    assert_eq!(names_in(folder), ["lab.pub"]);
    drop(by_hand);
}

/// FlashInfer's python wheel as a set downloaded by URL from `server` (the project's releases
/// on loopback), added to the offline example: what the maintainer moves with `pin bump`. The
/// example's template does not install it (the busybox base has no Python); its move reaches
/// the build through pins.toml, the inputs and forge.lock. Returns the sha256 of each
/// published file, 0.6.14's first.
fn with_flashinfer_pin(example: &Example, server: &ReleaseServer) -> [String; 2] {
    let file = "flashinfer_python-{version}-py3-none-any.whl";
    let published = ["0.6.14", "0.6.15"].map(|version| {
        let name = file.replace("{version}", version);
        let bytes = wheel(&name, version);
        server.publish(version, &name, &bytes);
        sha256_hex(&bytes)
    });
    let pins = example.context.read("pins.toml");
    example.context.write(
        "pins.toml",
        &pins.replace(
            "[[patches]]",
            &format!(
                "[pins.flashinfer]\nkind = \"wheels\"\nversion = \"0.6.14\"\nmodule = \"flashinfer\"\nurl = \"{}\"\nreleases = \"{}\"\nwheels = [\n  {{ package = \"flashinfer-python\", file = \"{file}\", sha256 = \"{}\" }},\n]\n\n[[patches]]",
                server.url_template(),
                server.releases_url(),
                published[0]
            ),
        ),
    );
    published
}

/// The maintainer has the recipe and its committed forge.lock: moves FlashInfer with `pin
/// bump` against the project's releases on loopback (which keeps forge.lock's inputs current),
/// builds `--locked --push --sign`, and verifies the registry with the public key.
#[test]
fn the_maintainer_bumps_a_pin_builds_locked_pushes_signed_and_verifies() {
    let registry = RegistryServer::start();
    if !docker_available() || registry_tools_missing() {
        return;
    }
    ensure_base_image();
    let server = ReleaseServer::start();
    let example = Example::with_repository(&format!(
        "{}/forge-journey/maintainer-{:07}",
        registry.address(),
        std::process::id()
    ));
    let [_, expected] = with_flashinfer_pin(&example, &server);
    let context = &example.context;
    context.forge(&["lock"]).expect_code(0);
    let keys = Keys::new();

    let bumped = context.forge(&["pin", "bump", "flashinfer"]).expect_code(0);
    forge_snapshot!("maintainer_pin_bump", bumped.stderr, context.path());
    assert_contains(&context.read("pins.toml"), "version = \"0.6.15\"");
    assert_contains(&context.read("pins.toml"), &expected);

    let built = build_in(
        context,
        &[
            "--locked",
            "--push",
            "--sign",
            "--sign-key",
            &keys.private_arg(),
        ],
        &[],
    )
    .expect_code(0);
    assert_contains(&built.stderr, "Locked inputs match forge.lock");
    assert_contains(&built.stderr, "Attached build record");
    let public = context.path().join("lab.pub");
    std::fs::write(&public, keys.public_text()).unwrap();
    let verified = context
        .forge(&["verify-digest", "--key", public.to_str().unwrap()])
        .expect_code(0);
    forge_snapshot!("maintainer_verify_digest", verified.stdout, context.path());
}
