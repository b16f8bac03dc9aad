//! Reproducible images: the same inputs give the same image id on any daemon, and anyone can
//! prove it by rebuilding.
//!
//! The offline example is built on the tests' daemon (overlay2), again with `--no-cache`, and
//! on a second daemon of its own (vfs, another storage driver, another clock) that holds
//! nothing but the base: the three image ids are one, with either builder. What the daemon then
//! holds is what forge wrote: `docker save` gives back each layer with the bytes its diff id
//! names, every entry's time at or before the recipe's date and no user names.
//! `verify-digest --rebuild` proves a reproducible recipe in one row and, for a step that writes
//! the clock and random bytes, names that step's layer and both files with their sizes and
//! sha256 on each side; a tester does the same from the image reference on a cold daemon.

use std::io::Read as _;
use std::process::Command;

use serde_json::Value;

use crate::support::images::{DATED_TAG, Example, base_image, build_in, docker_ready, reported_id};
use crate::support::node::SecondDaemon;
use crate::support::registry::{RegistryServer, registry_tools_missing};
use crate::support::verify::{failing, row, verify, verify_in};
use crate::support::{TestContext, copy_tree};

/// 2026-07-08T00:00:00Z, the offline example's date.
const EPOCH: u64 = 1_783_468_800;

/// The step the tests add to make a layer that cannot reproduce.
const CLOCK_STEP: &str =
    "RUN date +%s > /opt/app/built-at && head -c 8 /dev/urandom > /opt/app/random.bin";

/// The example with a step that writes the clock and random bytes, last.
fn with_clock_step(example: &Example) {
    let template = example.context.read("templates/Dockerfile.j2");
    example.context.write(
        "templates/Dockerfile.j2",
        &format!("{template}\n{CLOCK_STEP}\n"),
    );
}

/// A layer as `docker save` gives it back: the sha256 of its bytes, and each entry's path, mtime
/// and user name.
struct SavedLayer {
    sha256: String,
    entries: Vec<(String, u64, String)>,
}

/// Every layer of `reference` as `docker save` gives it back, above the base's one layer.
fn saved_layers(reference: &str) -> Vec<SavedLayer> {
    let output = Command::new("docker")
        .args(["save", reference])
        .output()
        .unwrap();
    assert!(output.status.success(), "docker save {reference}");
    let mut archive = tar::Archive::new(output.stdout.as_slice());
    let mut files = std::collections::HashMap::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let path = entry.path().unwrap().to_string_lossy().into_owned();
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).unwrap();
        files.insert(path, bytes);
    }
    let manifest: Value = serde_json::from_slice(&files["manifest.json"]).unwrap();
    let layers: Vec<String> = manifest[0]["Layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|layer| layer.as_str().unwrap().to_owned())
        .collect();
    layers[1..]
        .iter()
        .map(|path| {
            let bytes = &files[path];
            let sha256 = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(bytes));
            let mut entries = Vec::new();
            let mut layer = tar::Archive::new(bytes.as_slice());
            for entry in layer.entries().unwrap() {
                let entry = entry.unwrap();
                let header = entry.header();
                entries.push((
                    entry.path().unwrap().to_string_lossy().into_owned(),
                    header.mtime().unwrap(),
                    header.username().unwrap().unwrap_or_default().to_owned(),
                ));
            }
            SavedLayer {
                sha256: format!("sha256:{sha256}"),
                entries,
            }
        })
        .collect()
}

/// The diff ids the image `reference` names, above the base's one layer.
fn diff_ids(reference: &str) -> Vec<String> {
    let output = Command::new("docker")
        .args([
            "image",
            "inspect",
            "--format",
            "{{range .RootFS.Layers}}{{println .}}{{end}}",
            reference,
        ])
        .output()
        .unwrap();
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .filter(|line| !line.is_empty())
        .skip(1)
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_no_cache_rebuild_and_a_fresh_daemon_end_on_the_image_the_dated_tag_holds() {
    if !docker_ready() {
        return;
    }
    let example = Example::new("reproducible");
    let first = reported_id(&example.build(&[]).expect_code(0).json());
    // From the cache the engine ends on the image it built before, which forge.lock records
    // the normalized image of: nothing is exported or rewritten.
    let cached = example.build(&[]).expect_code(0);
    assert_eq!(reported_id(&cached.json()), first);
    assert!(
        cached.stderr.contains(&format!(
            "Normalized {first} (forge.lock records it as made of the image just built; nothing to rewrite)"
        )),
        "{}",
        cached.stderr
    );
    let again = example.build(&["--no-cache"]).expect_code(0);
    assert_eq!(reported_id(&again.json()), first, "{}", again.stderr);
    assert!(again.stderr.contains("KiB rewritten)"), "{}", again.stderr);
    assert!(
        again
            .stderr
            .contains(&format!("Fresh {}:{DATED_TAG}", example.repository)),
        "the dated tag keeps the image: {}",
        again.stderr
    );

    // The daemon holds what forge wrote: each layer's bytes are the ones its diff id names,
    // every time is at or before the recipe's date, and no entry carries a user name.
    let reference = format!("{}:{DATED_TAG}", example.repository);
    let layers = saved_layers(&reference);
    assert_eq!(
        layers
            .iter()
            .map(|layer| layer.sha256.clone())
            .collect::<Vec<_>>(),
        diff_ids(&reference)
    );
    for layer in &layers {
        for (path, mtime, user) in &layer.entries {
            assert!(*mtime <= EPOCH, "{path} has mtime {mtime}");
            assert_eq!(user, "", "{path} names a user");
        }
    }

    let Some(node) = SecondDaemon::start_or_skip() else {
        return;
    };
    node.load(base_image());
    let (port, _conduit) = node.conduit();
    let on_node = [
        ("DOCKER_HOST", node.host.as_str()),
        ("FORGE_CONDUIT_PORT", port.as_str()),
    ];
    let there = build_in(&example.context, &[], &on_node).expect_code(0);
    assert_eq!(reported_id(&there.json()), first, "{}", there.stderr);

    // The classic builder writes other history, so its image is another; but the same one on
    // both daemons.
    let classic = Example::new("reproducible-classic");
    let here = build_in(&classic.context, &["--builder", "classic"], &[]).expect_code(0);
    let there = build_in(&classic.context, &["--builder", "classic"], &on_node).expect_code(0);
    assert_eq!(
        reported_id(&here.json()),
        reported_id(&there.json()),
        "{}",
        there.stderr
    );
}

#[test]
fn a_rebuild_proves_a_reproducible_image_and_names_each_file_a_clock_step_changes() {
    if !docker_ready() {
        return;
    }
    let example = Example::new("rebuild");
    let id = reported_id(&example.build(&[]).expect_code(0).json());
    let proved = verify(&example, &["--rebuild"], &[]).expect_code(0).json();
    let image = row(&proved, "rebuild", "image");
    assert_eq!(image["expected"], id.as_str());
    assert_eq!(image["ok"], true);

    let clock = Example::new("rebuild-clock");
    with_clock_step(&clock);
    let recorded = reported_id(&clock.build(&[]).expect_code(0).json());
    let run = verify(&clock, &["--rebuild"], &[]).expect_code(1);
    let found = run.json();
    assert_clock_step_named(&found, &recorded);
    assert!(
        failing(&found)
            .iter()
            .all(|row| row.starts_with("rebuild ")),
        "only the rebuild fails: {found:#}"
    );
    assert!(
        run.stderr
            .contains("hint: the rebuild made another image: the rows above name each layer"),
        "{}",
        run.stderr
    );
    // The rebuilt image is gone; the recorded one stays.
    assert_eq!(clock.images(), std::slice::from_ref(&recorded));

    // A build with no cache makes another image, which the dated tag refuses, naming the step
    // and the files that made it differ.
    let refused = clock.build(&["--no-cache"]).expect_code(1);
    assert!(
        refused.stderr.contains(&format!(
            "error: tag {DATED_TAG} already points at {recorded}, not at the image just built (sha256:"
        )) && refused.stderr.contains(
            "; they differ in layer 6 (RUN date +%s > /opt/app/built-at && head -c 8 /dev/urandom …): /opt/app/built-at, /opt/app/random.bin\n"
        ),
        "{}",
        refused.stderr
    );
    assert!(
        refused
            .stderr
            .contains("does not reproduce (docs/reproducible.md)"),
        "{}",
        refused.stderr
    );
}

/// Panics unless the rebuild rows of `found` (a `verify-digest --rebuild --json` of the example
/// with the clock step, recorded as `recorded`) fail on the image, on the clock step's layer and
/// on its two files, with sizes and sha256 on each side, and on nothing else.
#[track_caller]
fn assert_clock_step_named(found: &Value, recorded: &str) {
    let image = row(found, "rebuild", "image");
    assert_eq!(image["expected"], recorded);
    assert_eq!(image["ok"], false);
    // The step as the Dockerfile wrote it, cut to 60 characters.
    let step = "layer 6 (RUN date +%s > /opt/app/built-at && head -c 8 /dev/urandom …)";
    assert_eq!(row(found, "rebuild", step)["ok"], false, "{found:#}");
    for (path, size) in [("/opt/app/built-at", 11), ("/opt/app/random.bin", 8)] {
        let file = row(found, "rebuild", &format!("layer 6 {path}"));
        for side in ["expected", "actual"] {
            let text = file[side].as_str().unwrap();
            assert!(
                text.starts_with(&format!("file {size} B sha256:")),
                "{side} of {path}: {text}"
            );
        }
        assert_ne!(file["expected"], file["actual"]);
    }
    let rebuild: Vec<String> = failing(found)
        .into_iter()
        .filter(|row| row.starts_with("rebuild "))
        .collect();
    assert_eq!(
        rebuild,
        [
            "rebuild image".to_owned(),
            format!("rebuild {step}"),
            "rebuild layer 6 /opt/app/built-at".to_owned(),
            "rebuild layer 6 /opt/app/random.bin".to_owned(),
        ]
    );
}

#[test]
fn a_tester_rebuilds_from_the_image_reference_on_a_cold_daemon() {
    let registry = RegistryServer::start();
    if !docker_ready() || registry_tools_missing() {
        return;
    }
    let example = Example::with_repository(&format!(
        "{}/forge-rebuild/clock-{}",
        registry.address(),
        std::process::id()
    ));
    with_clock_step(&example);
    let recorded = reported_id(&example.build(&["--push"]).expect_code(0).json());
    let reference = format!("{}:{DATED_TAG}", example.repository);

    // The tester: a clone of the recipe without its forge.lock, a daemon holding only the
    // base, and the image reference.
    let clone = TestContext::empty();
    for entry in ["pins.toml", "templates", "patches", "overlays"] {
        copy_tree(
            &example.context.path().join(entry),
            &clone.path().join(entry),
        );
    }
    let Some(node) = SecondDaemon::start_or_skip() else {
        return;
    };
    let _bridge = node.reach(registry.port());
    let (port, _conduit) = node.conduit();
    node.load(base_image());
    let run = verify_in(
        &clone,
        &[&reference, "--rebuild", "--host", &node.host],
        &[("FORGE_CONDUIT_PORT", &port)],
    )
    .expect_code(1);
    assert_clock_step_named(&run.json(), &recorded);
    assert!(
        run.stderr
            .contains(&format!("Pulling {}@sha256:", example.repository)),
        "the recorded image is pulled to compare with: {}",
        run.stderr
    );
    assert!(
        !clone.path().join("forge.lock").exists(),
        "nothing is written"
    );
}
