//! `forge pull`: the offline example pushed to a real `docker-registry` on loopback, then pulled
//! by digest onto the tests' daemon and a second, empty daemon that reaches the registry
//! through its own loopback. A node that cannot pull, or that would end on another image,
//! fails the pull naming it, and no tag moves on any node.

use std::process::Command;

use crate::support::images::{
    BASE_IMAGE, DATED_TAG, Example, daemon_host, docker_available, ensure_base_image, image_id,
};
use crate::support::images::{Tagged, id_on};
use crate::support::node::SecondDaemon;
use crate::support::registry::RegistryServer;
use crate::support::registry::registry_tools_missing;
use crate::support::snapshot::forge_snapshot;
use crate::support::verify::{rows_where, verify};
use crate::support::{Run, assert_contains};

fn pull(example: &Example, hosts: &[&str]) -> Run {
    let mut args = vec!["--json", "pull", "--progress", "plain"];
    for host in hosts {
        args.extend(["--host", host]);
    }
    example.context.forge(&args)
}

fn retag(host: &str, from: &str, to: &str) {
    let status = Command::new("docker")
        .args(["-H", host, "tag", from, to])
        .status()
        .unwrap();
    assert!(status.success(), "docker tag {from} {to} on {host}");
}

#[test]
fn every_node_ends_on_the_recorded_digest_or_none_moves() {
    let registry = RegistryServer::start();
    if !docker_available() || registry_tools_missing() {
        return;
    }
    ensure_base_image();
    let example = Example::with_repository(&format!("{}/forge-pull/example", registry.address()));
    example.build(&["--push"]).expect_code(0);
    let id = example
        .tag_id("latest")
        .expect("the build tagged the image");
    let Some(node) = SecondDaemon::start_or_skip() else {
        return;
    };
    let main = daemon_host();
    let latest = format!("{}:latest", example.repository);
    let dated = format!("{}:{DATED_TAG}", example.repository);
    // The test re-points both tags at the base by hand: they go when it ends.
    let _tagged = Tagged(vec![latest.clone(), dated.clone()]);
    let base = image_id(BASE_IMAGE).unwrap();
    // The main daemon's tags name another image, so that a tag that moves shows.
    retag(&main, BASE_IMAGE, &latest);
    retag(&main, BASE_IMAGE, &dated);

    // A node that cannot be reached: exit 2 naming it, before anything is pulled or tagged.
    let run = pull(&example, &[&main, "unix:///nonexistent/forge-node.sock"]).expect_code(2);
    assert_contains(
        &run.stderr,
        "cannot reach node unix:///nonexistent/forge-node.sock; nothing was pulled",
    );
    assert_eq!(id_on(&main, &latest).as_deref(), Some(base.as_str()));

    // A node that cannot reach the registry: exit 2 naming it; the node that could pull is
    // not tagged either.
    let run = pull(&example, &[&main, &node.host]).expect_code(2);
    assert_contains(
        &run.stderr,
        &format!(
            "error: node {} cannot pull {}@sha256:",
            node.host, example.repository
        ),
    );
    assert_contains(&run.stderr, "no tag moved on any node");
    assert_eq!(id_on(&main, &latest).as_deref(), Some(base.as_str()));
    assert_eq!(id_on(&main, &dated).as_deref(), Some(base.as_str()));
    assert_eq!(id_on(&node.host, &latest), None);

    // Reaching it, both nodes end on the recorded image under both tags, and say so.
    let _bridge = node.reach(registry.port());
    let run = pull(&example, &[&main, &node.host]).expect_code(0);
    for host in [&main, &node.host] {
        assert_eq!(id_on(host, &latest).as_deref(), Some(id.as_str()), "{host}");
        assert_eq!(id_on(host, &dated).as_deref(), Some(id.as_str()), "{host}");
    }
    let json = run.json();
    assert_eq!(json["ok"], true, "{json:#}");
    assert_eq!(
        rows_where(&json, true),
        [
            format!("tag {main}: {latest}"),
            format!("tag {main}: {dated}"),
            format!("tags agree {main}: latest, {DATED_TAG}"),
            format!("tag {}: {latest}", node.host),
            format!("tag {}: {dated}", node.host),
            format!("tags agree {}: latest, {DATED_TAG}", node.host),
        ]
    );
    assert_contains(
        &run.stderr,
        &format!("Pulling {}@sha256:", example.repository),
    );
    verify(&example, &["--host", &main, "--host", &node.host], &[]).expect_code(0);

    // A record whose image the digest does not hold: exit 1 naming the node, no tag moved.
    retag(&main, BASE_IMAGE, &latest);
    let lock = example.context.read("forge.lock");
    example.context.edit(
        "forge.lock",
        &format!("id = \"{id}\""),
        &format!("id = \"{base}\""),
    );
    let run = pull(&example, &[&main]).expect_code(1);
    assert_contains(&run.stderr, &format!("error: node {main} holds {id} under"));
    assert_contains(
        &run.stderr,
        &format!("not the recorded image {base}; no tag moved on any node"),
    );
    assert_eq!(id_on(&main, &latest).as_deref(), Some(base.as_str()));
    example.context.write("forge.lock", &lock);
}

#[test]
fn a_record_that_was_never_pushed_has_nothing_to_pull() {
    let Some((example, _)) = crate::support::images::built("pull-unpushed") else {
        return;
    };
    let run = example.context.forge(&["pull"]).expect_code(2);
    forge_snapshot!(run.stderr, example.context.path(), @r"
        error: <recipe>/forge.lock records no pushed tag: there is no manifest digest to pull
        hint: `forge build --push` records the digest the registry stored; pull after it
        ");
    assert_contains(
        &run.stderr,
        "forge.lock records no pushed tag: there is no manifest digest to pull",
    );
    assert_contains(&run.stderr, "hint: `forge build --push` records the digest");
}
