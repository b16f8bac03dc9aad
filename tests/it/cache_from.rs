//! The build cache beside the image (`[image] cache`): a CI runner starts with an empty daemon.
//! The offline example, pushed by the tests' daemon to a real `docker-registry` on loopback,
//! writes its build cache there; a second daemon that holds nothing but the base pushes the same
//! recipe: it runs no RUN step, ends on the image id the first push published, and the registry
//! keeps the dated tag where it was. After a `pin bump` it runs exactly the RUN steps the bump
//! said it invalidated. Steps are counted from the build's own report of what its builder ran
//! and what it took from the cache; what the registry holds is read with skopeo.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::support::forge;
use crate::support::git::GitRemote;
use crate::support::images::{
    DATED_TAG, Example, base_image, build_in, docker_available, ensure_base_image, reported_id,
};
use crate::support::node::SecondDaemon;
use crate::support::registry::RegistryServer;
use crate::support::registry::registry_tools_missing;

/// A step as both the builder and `pin bump` name it: the instruction, whitespace folded,
/// without the builder's `[n/m] ` prefix.
fn folded(name: &str) -> String {
    let name = match name.strip_prefix('[') {
        Some(rest) => rest.split_once("] ").map_or(name, |(_, step)| step),
        None => name,
    };
    name.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The RUN steps of a build's report with the state `state`.
fn run_steps(report: &Value, state: &str) -> BTreeSet<String> {
    report["steps"]
        .as_array()
        .expect("the build reports its steps")
        .iter()
        .filter(|step| step["state"] == state)
        .map(|step| folded(step["name"].as_str().unwrap()))
        .filter(|step| step.starts_with("RUN "))
        .collect()
}

/// Bumps the example's git pin and returns the RUN steps the bump says it invalidates, as the
/// builder names them.
fn bumped(example: &Example) -> BTreeSet<String> {
    let bump = forge(&example.context, &["--json", "pin", "bump", "app"], &[]).expect_code(0);
    let invalidated: BTreeSet<String> = bump.json()["invalidated"]["steps"]
        .as_array()
        .expect("the bump names the steps it invalidates")
        .iter()
        // The builder names a step with its build arguments filled in.
        .map(|step| {
            folded(
                &step["text"]
                    .as_str()
                    .unwrap()
                    .replace("${APP_CHANNEL}", "stable"),
            )
        })
        .filter(|step| step.starts_with("RUN "))
        .collect();
    assert!(!invalidated.is_empty());
    invalidated
}

#[test]
fn a_cold_daemon_reuses_the_pushed_cache_ends_on_the_published_image_and_reruns_only_what_a_bump_invalidated()
 {
    let registry = RegistryServer::start();
    if !docker_available() || registry_tools_missing() {
        return;
    }
    ensure_base_image();
    let path = "forge-cache/example";
    let example = Example::with_repository(&format!("{}/{path}", registry.address()));
    let remote = GitRemote::new();
    let pins = example.context.read("pins.toml");
    let pins = pins
        .replace("https://example.org/forge/offline-app.git", &remote.url())
        .replace("branch = \"main\"", "branch = \"nv_dev\"")
        .replace("3f1c0de5a9b2e47c8d6f0a1b2c3d4e5f60718293", &remote.first);
    example.context.write("pins.toml", &pins);
    let cache = format!("{}:buildcache", example.repository);

    // The first push finds no cache to read, and writes its own beside the image.
    let first = build_in(&example.context, &["--push"], &[]).expect_code(0);
    assert!(
        first.stderr.contains(&format!(
            "Caching nothing yet: {cache} does not exist, this push writes it"
        )),
        "{}",
        first.stderr
    );
    assert!(
        first.stderr.contains(&format!("Pushed {cache} sha256:")),
        "{}",
        first.stderr
    );
    let published = reported_id(&first.json());
    let dated = registry.digest(path, DATED_TAG);
    // The published image carries no cache metadata; the cache image does.
    let config = registry.config(path, DATED_TAG);
    assert!(config.get("moby.buildkit.cache.v0").is_none(), "{config:#}");
    assert!(
        registry
            .config(path, "buildcache")
            .get("moby.buildkit.cache.v0")
            .is_some(),
        "the cache image carries BuildKit's inline cache"
    );

    let Some(node) = SecondDaemon::start_or_skip() else {
        return;
    };
    let _bridge = node.reach(registry.port());
    node.load(base_image());
    let (port, _conduit) = node.conduit();
    let on_node = [
        ("DOCKER_HOST", node.host.as_str()),
        ("FORGE_CONDUIT_PORT", port.as_str()),
    ];

    // The same recipe on the cold daemon: every RUN step comes from the registry's cache, and
    // the image is the published one, which the dated tag keeps.
    let again = build_in(&example.context, &["--push"], &on_node).expect_code(0);
    assert!(
        again.stderr.contains(&format!("Caching from {cache}")),
        "{}",
        again.stderr
    );
    let report = again.json();
    let cached = run_steps(&report, "cached");
    assert_eq!(run_steps(&report, "done"), BTreeSet::new(), "{report:#}");
    // The example's three: the overlay's check, the revision file and the smoke gate.
    assert_eq!(cached.len(), 3, "{report:#}");
    assert_eq!(reported_id(&report), published, "{report:#}");
    assert_eq!(registry.digest(path, DATED_TAG), dated);

    // After a bump, exactly the RUN steps it names run again.
    let invalidated = bumped(&example);
    // A new image goes out under a new dated tag.
    example.context.edit(
        "pins.toml",
        "date = \"2026-07-08\"",
        "date = \"2026-07-09\"",
    );
    let report = build_in(&example.context, &["--push"], &on_node)
        .expect_code(0)
        .json();
    assert_eq!(run_steps(&report, "done"), invalidated, "{report:#}");
    assert_eq!(
        run_steps(&report, "cached").len() + invalidated.len(),
        cached.len(),
        "{report:#}"
    );
}
