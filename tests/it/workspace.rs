//! A workspace of recipes (forge-workspace.toml): every member planned in build order from the
//! root, `--recipe` with what it builds from, and each refusal of a family that cannot be built
//! located in the file that says it, nothing planned.

use crate::support::image_guard::ImageGuard;
use crate::support::snapshot::forge_snapshot;
use crate::support::{Run, TestContext, copy_tree, repository_root};

const WORKSPACE: &str = r#"# The overlay is listed first: forge builds it after the image it builds from.
[members.overlay]
path = "overlay"
from = "universal"

[members.universal]
path = "universal"
"#;

/// A workspace of two members made from the offline example: `universal`, and `overlay`
/// built from it, each with its own repository.
fn family() -> TestContext {
    let context = TestContext::empty();
    let example = repository_root().join("examples/offline");
    for member in ["universal", "overlay"] {
        copy_tree(&example, &context.path().join(member));
        context.edit(
            &format!("{member}/pins.toml"),
            "repository = \"forge-example/offline\"",
            &format!("repository = \"forge-example/{member}\""),
        );
    }
    context.edit(
        "overlay/pins.toml",
        "image = \"forge-example-base:busybox\"",
        "image = \"forge-example/universal:latest\"",
    );
    context.write("forge-workspace.toml", WORKSPACE);
    context
}

#[test]
fn a_dry_run_at_the_root_plans_every_member_in_build_order() {
    let context = family();
    let run = context.forge(&["build", "--dry-run"]).expect_code(0);
    forge_snapshot!("workspace_dry_run", run.stdout, context.path());
    let universal = run
        .stdout
        .find("member universal")
        .expect("universal planned");
    let overlay = run.stdout.find("member overlay").expect("overlay planned");
    assert!(universal < overlay, "{}", run.stdout);
    // Each member's plan is the plan `-C member` prints.
    let alone = context
        .forge_in("universal", &["build", "--dry-run"])
        .expect_code(0);
    let planned = run.stdout[universal..overlay]
        .split_once('\n')
        .expect("a heading line")
        .1;
    assert_eq!(planned.trim_end(), alone.stdout.trim_end());
}

#[test]
fn recipe_plans_a_member_with_what_it_builds_from_and_no_more() {
    let context = family();
    let run = context
        .forge(&["build", "--dry-run", "--recipe", "overlay"])
        .expect_code(0);
    let headings: Vec<&str> = run
        .stdout
        .lines()
        .filter(|line| line.starts_with("member "))
        .collect();
    assert_eq!(
        headings,
        [
            "member universal (universal)",
            "member overlay (overlay), from member universal (not pushed yet)"
        ]
    );
    let run = context
        .forge(&["build", "--dry-run", "--recipe", "universal"])
        .expect_code(0);
    assert!(!run.stdout.contains("member overlay"), "{}", run.stdout);
    let run = context
        .forge(&["build", "--dry-run", "--recipe", "lane"])
        .expect_code(2);
    forge_snapshot!(run.stderr, context.path(), @r"
    error: no member is called `lane`
    hint: --recipe takes a member's name: `overlay`, `universal`
    ");
}

#[test]
fn the_json_plan_lists_each_member_with_its_plan() {
    let context = family();
    let document = context
        .forge(&["--json", "build", "--dry-run"])
        .expect_code(0)
        .json();
    let members = document["members"].as_array().expect("members");
    let names: Vec<&str> = members
        .iter()
        .map(|member| member["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["universal", "overlay"]);
    assert_eq!(members[1]["from"]["member"], "universal");
    assert!(members[1]["from"]["image"].is_null());
    insta::assert_snapshot!(
        "workspace_dry_run_json",
        crate::support::json_shape(&document, context.path())
    );
}

/// `forge build --dry-run` at the root of `context` after `forge-workspace.toml` says `text`:
/// its stderr, the run having failed with exit code 2 and printed no plan.
fn refused(context: &TestContext, text: &str) -> String {
    context.write("forge-workspace.toml", text);
    let run = context.forge(&["build", "--dry-run"]).expect_code(2);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    run.stderr
}

#[test]
fn a_member_that_names_an_unknown_member_is_refused_where_it_names_it() {
    let context = family();
    let stderr = refused(
        &context,
        &WORKSPACE.replace("from = \"universal\"", "from = \"universe\""),
    );
    forge_snapshot!(stderr, context.path(), @"
    error: forge-workspace.toml:4:8: member `overlay` builds from `universe`, which is not a member
    hint: name one of the members (`overlay`, `universal`), or build from an image in [base] and leave `from` out
    ");
}

#[test]
fn members_that_build_from_each_other_are_refused_naming_the_circle() {
    let context = family();
    let stderr = refused(&context, &format!("{WORKSPACE}from = \"overlay\"\n"));
    forge_snapshot!(stderr, context.path(), @"
    error: forge-workspace.toml:4:8: members build from each other in a circle: overlay → universal → overlay
    hint: one member of the circle must build from an image in its [base], not from another member
    ");
}

#[test]
fn two_members_claiming_one_tag_are_refused_at_the_second() {
    let context = family();
    context.edit(
        "overlay/pins.toml",
        "repository = \"forge-example/overlay\"",
        "repository = \"forge-example/universal\"",
    );
    let stderr = refused(&context, WORKSPACE);
    forge_snapshot!(stderr, context.path(), @"
    error: forge-workspace.toml:6:10: members `overlay` and `universal` both tag forge-example/universal:latest
    hint: a tag names one image: give one of them its own repository or its own tags
    ");
}

#[test]
fn a_member_built_from_another_must_name_its_repository_as_the_base() {
    let context = family();
    context.edit(
        "overlay/pins.toml",
        "image = \"forge-example/universal:latest\"",
        "image = \"forge-example-base:busybox\"",
    );
    let stderr = refused(&context, WORKSPACE);
    forge_snapshot!(stderr, context.path(), @"
    error: forge-workspace.toml:4:8: member `overlay` builds from `universal`, but its [base] image is forge-example-base:busybox, not an image of forge-example/universal
    hint: set [base] image in overlay/pins.toml to a tag of forge-example/universal, or leave `from` out
    ");
}

#[test]
fn a_member_folder_outside_the_root_or_without_a_recipe_is_refused_at_its_path() {
    let context = family();
    let stderr = refused(
        &context,
        &WORKSPACE.replace("path = \"universal\"", "path = \"../universal\""),
    );
    forge_snapshot!(stderr, context.path(), @"
    error: forge-workspace.toml:7:8: member folder `../universal` is not inside the workspace
    hint: name the member's folder relative to the workspace root, without `..`
    ");
    let stderr = refused(
        &context,
        &WORKSPACE.replace("path = \"universal\"", "path = \"templates\""),
    );
    forge_snapshot!(stderr, context.path(), @"
    error: forge-workspace.toml:7:8: member folder `templates` holds no pins.toml
    hint: a member is a recipe folder: point `path` at the folder that holds its pins.toml
    ");
    let outside = tempfile::tempdir().expect("a folder outside");
    copy_tree(&context.path().join("universal"), outside.path());
    std::os::unix::fs::symlink(outside.path(), context.path().join("linked")).unwrap();
    let stderr = refused(
        &context,
        &WORKSPACE.replace("path = \"universal\"", "path = \"linked\""),
    );
    forge_snapshot!(stderr, context.path(), @"
    error: forge-workspace.toml:7:8: member folder `linked` leads out of the workspace through a link
    hint: keep each member's recipe folder inside the workspace root
    ");
    let stderr = refused(
        &context,
        "[members.x]\npath = \"universal\"\nimage = \"y\"\n",
    );
    forge_snapshot!(stderr, context.path(), @"
    error: forge-workspace.toml:3:1: unknown field `image`, expected `path` or `from`
    hint: docs/workspace.md lists the keys forge-workspace.toml takes
    ");
}

#[test]
fn a_flag_of_one_recipe_is_refused_at_the_root_and_recipe_needs_a_workspace() {
    let context = family();
    let run = context
        .forge(&["build", "--repository", "127.0.0.1:5000/fork"])
        .expect_code(2);
    forge_snapshot!(run.stderr, context.path(), @"
    error: --repository applies to one recipe, and this is a workspace root of several
    hint: build the one member with `forge -C MEMBER build --repository`; nothing was built
    ");
    let run = context
        .forge_in(
            "universal",
            &["build", "--dry-run", "--recipe", "universal"],
        )
        .expect_code(2);
    forge_snapshot!(run.stderr, context.path(), @"
    error: --recipe names a member of a workspace, and there is no forge-workspace.toml here
    hint: run forge at the workspace root (or -C ROOT), or leave --recipe out to build the recipe here
    ");
}

/// The family of `family` on the daemon: each member in a repository of this test's own, named
/// after `guard` and behind `prefix` (a registry's address and `/`, or nothing), `universal` on
/// the tests' base image; its tags removed when the process ends, and every image its builds made
/// (those a rebuild left untagged too) when the returned guard drops.
fn family_on_the_daemon(prefix: &str, guard: &str) -> (TestContext, ImageGuard) {
    use crate::support::images::{DATED_TAG, base_image, removed_at_exit};
    let context = family();
    let name = |member: &str| format!("{prefix}forge-test-{guard}-{member}-{}", std::process::id());
    let guard = ImageGuard::new(&name("images"));
    for member in ["universal", "overlay"] {
        context.edit(
            &format!("{member}/pins.toml"),
            "\"dev.forge.example\" = \"offline\"",
            &format!(
                "\"dev.forge.example\" = \"offline\"\n{}",
                guard.label_entry()
            ),
        );
        let repository = name(member);
        context.edit(
            &format!("{member}/pins.toml"),
            &format!("repository = \"forge-example/{member}\""),
            &format!("repository = \"{repository}\""),
        );
        for tag in ["latest", DATED_TAG, "buildcache"] {
            removed_at_exit(&format!("{repository}:{tag}"));
        }
    }
    context.edit(
        "universal/pins.toml",
        "image = \"forge-example-base:busybox\"",
        &format!("image = \"{}\"", base_image()),
    );
    context.edit(
        "overlay/pins.toml",
        "image = \"forge-example/universal:latest\"",
        &format!(
            // A digest of some earlier image: the build re-points FROM at universal's new one.
            "image = \"{}:latest\"\ndigest = \"sha256:{}\"",
            name("universal"),
            "0".repeat(64)
        ),
    );
    (context, guard)
}

#[test]
fn a_build_at_the_root_builds_each_member_on_the_image_of_the_one_it_builds_from() {
    if !crate::support::images::docker_ready() {
        return;
    }
    let (context, _images) = family_on_the_daemon("", "workspace-build");
    let run = context.forge(&["--json", "build"]).expect_code(0);
    let document = run.json();
    let members = document["members"].as_array().expect("members");
    let names: Vec<&str> = members
        .iter()
        .map(|member| member["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["universal", "overlay"]);
    let universal = &members[0]["build"];
    let overlay = &members[1]["build"];
    // The overlay was built on the image universal's build made, and says so in its record.
    assert_eq!(
        overlay["base"]["id"], universal["image"]["id"],
        "{document:#}"
    );
    let recorded = context.read("overlay/forge.lock");
    let id = universal["image"]["id"].as_str().expect("an image id");
    assert!(recorded.contains(id), "{recorded}");
    assert!(context.path().join("universal/forge.lock").is_file());
    assert_eq!(members[1]["from"]["member"], "universal");
    assert!(members[1]["from"]["image"].is_null(), "no push, no digest");
}

#[test]
fn a_pushed_family_builds_each_member_from_the_manifest_the_other_pushed() {
    if !crate::support::images::docker_ready() {
        return;
    }
    if let Some(missing) = crate::support::registry::missing_tools() {
        crate::support::note(&format!("skipped: {missing}"));
        return;
    }
    let registry = crate::support::registry::RegistryServer::start();
    let (context, _images) =
        family_on_the_daemon(&format!("{}/", registry.address()), "workspace-push");
    let document = context
        .forge(&["--json", "build", "--push"])
        .expect_code(0)
        .json();
    let members = document["members"].as_array().expect("members");
    let pushed = &members[0]["build"]["image"]["pushed"][0]["digest"];
    assert!(
        pushed
            .as_str()
            .is_some_and(|digest| digest.starts_with("sha256:"))
    );
    // The overlay's FROM named universal's pushed manifest, not the digest its pins.toml holds.
    assert_eq!(&members[1]["from"]["image"], pushed, "{document:#}");
    assert_eq!(
        &members[1]["build"]["base"]["digest"], pushed,
        "{document:#}"
    );
    assert_eq!(
        members[1]["build"]["base"]["id"],
        members[0]["build"]["image"]["id"]
    );
}

#[test]
fn a_member_whose_inputs_did_not_change_is_not_built_again_unless_what_it_builds_from_was() {
    if !crate::support::images::docker_ready() {
        return;
    }
    let (context, _images) = family_on_the_daemon("", "workspace-fresh");
    context.forge(&["build"]).expect_code(0);
    let fresh = |document: &serde_json::Value| -> Vec<bool> {
        let members = document["members"].as_array().expect("members");
        members
            .iter()
            .map(|member| member["fresh"] == true)
            .collect()
    };
    let again = context.forge(&["--json", "build"]).expect_code(0);
    assert_eq!(fresh(&again.json()), [true, true], "{}", again.stderr);
    forge_snapshot!(again.stderr, context.path(), @"
    Fresh member universal (universal): built from these inputs already, as forge.lock records
    Fresh member overlay (overlay): built from these inputs already, as forge.lock records
    ");
    // An edit to the overlay alone builds the overlay alone (re-pointing its dated tag).
    context.edit(
        "overlay/pins.toml",
        "GREETING = \"hello\"",
        "GREETING = \"hi\"",
    );
    let edited = context
        .forge(&["--json", "build", "--force"])
        .expect_code(0);
    assert_eq!(fresh(&edited.json()), [true, false], "{}", edited.stderr);
    // An edit to universal builds universal, then the overlay on its new image.
    context.edit(
        "universal/pins.toml",
        "GREETING = \"hello\"",
        "GREETING = \"hey\"",
    );
    let document = context
        .forge(&["--json", "build", "--force"])
        .expect_code(0)
        .json();
    assert_eq!(fresh(&document), [false, false], "{document:#}");
    let members = document["members"].as_array().expect("members");
    assert_eq!(
        members[1]["build"]["base"]["id"],
        members[0]["build"]["image"]["id"]
    );
    // --no-cache asks for every step again: every member is built.
    let forced = context
        .forge(&["--json", "build", "--no-cache", "--force"])
        .expect_code(0);
    assert_eq!(fresh(&forced.json()), [false, false]);
}

#[test]
fn pin_list_at_the_root_lists_every_members_pins_in_build_order() {
    let context = family();
    context.edit(
        "overlay/pins.toml",
        "rev = \"3f1c0de5a9b2e47c8d6f0a1b2c3d4e5f60718293\"",
        "rev = \"0123456789abcdef0123456789abcdef01234567\"",
    );
    let run = context.forge(&["pin", "list"]).expect_code(0);
    forge_snapshot!(run.stdout, context.path(), @"
    MEMBER  NAME  KIND  VERSION  GROUP  SOURCE
    universal  app  git  <short>  -  https://example.org/forge/offline-app.git main
    overlay  app  git  <short>  -  https://example.org/forge/offline-app.git main
    ");
    let document = context
        .forge(&["--json", "pin", "list"])
        .expect_code(0)
        .json();
    let members = document["members"].as_array().expect("members");
    assert_eq!(members[0]["name"], "universal");
    assert_eq!(members[1]["name"], "overlay");
    assert_eq!(
        members[1]["pins"][0]["rev"], "0123456789abcdef0123456789abcdef01234567",
        "{document:#}"
    );
}

#[test]
fn lock_at_the_root_records_every_member_and_locked_holds_each_to_its_record() {
    let context = family();
    let run = context.forge(&["--json", "lock"]).expect_code(0);
    let document = run.json();
    let members = document["members"].as_array().expect("members");
    assert_eq!(members[0]["name"], "universal");
    assert_eq!(members[1]["lock"]["changed"], true, "{document:#}");
    for member in ["universal", "overlay"] {
        assert!(context.path().join(member).join("forge.lock").is_file());
    }
    context
        .forge(&["build", "--dry-run", "--locked"])
        .expect_code(0);
    context.edit(
        "overlay/pins.toml",
        "GREETING = \"hello\"",
        "GREETING = \"hi\"",
    );
    let run = context
        .forge(&["build", "--dry-run", "--locked"])
        .expect_code(1);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    let forge_lines: Vec<&str> = run
        .stderr
        .lines()
        .filter(|line| !line.starts_with(' '))
        .collect();
    forge_snapshot!(forge_lines.join("\n"), context.path(), @"
    error: member `overlay` (overlay)
    caused by: --locked: the inputs no longer match overlay/forge.lock (pins.toml: recorded sha256:<digest>, now sha256:<digest>; Dockerfile: recorded sha256:<digest>, now sha256:<digest>; context: recorded sha256:<digest>, now sha256:<digest>)
    hint: run `forge lock` to record the new inputs (`forge pin bump` does it as it moves a pin), and commit forge.lock
    ");
}

#[test]
fn pin_outdated_at_the_root_checks_every_member_and_its_exit_code_names_each() {
    let remote = crate::support::git::GitRemote::new();
    let context = family_on_a_remote(&remote, &remote.head);
    let document = context
        .forge(&["--json", "pin", "outdated"])
        .expect_code(0)
        .json();
    let members = document["members"].as_array().expect("members");
    assert_eq!(members[0]["name"], "universal");
    assert_eq!(members[1]["name"], "overlay");
    let app = &members[0]["outdated"]["pins"][1];
    assert_eq!(app["current"], remote.first.as_str(), "{document:#}");
    assert_eq!(app["newest"], remote.head.as_str(), "{document:#}");
    insta::assert_snapshot!(
        "workspace_pin_outdated_json",
        crate::support::json_shape(&document, context.path())
    );
    let run = context
        .forge(&["pin", "outdated", "--exit-code"])
        .expect_code(1);
    assert!(
        run.stderr.contains("universal/app can move (--exit-code)"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("overlay/app"), "{}", run.stderr);
}

/// The family of `family` with its git pin `app` on a local remote's `nv_dev`, at the remote's
/// first commit in universal and `overlay_rev` in the overlay.
fn family_on_a_remote(remote: &crate::support::git::GitRemote, overlay_rev: &str) -> TestContext {
    let url = format!("file://{}/remote.git", remote.folder.path().display());
    let context = family();
    for (member, rev) in [
        ("universal", remote.first.as_str()),
        ("overlay", overlay_rev),
    ] {
        let pins = format!("{member}/pins.toml");
        context.edit(
            &pins,
            "url = \"https://example.org/forge/offline-app.git\"",
            &format!("url = \"{url}\""),
        );
        context.edit(&pins, "branch = \"main\"", "branch = \"nv_dev\"");
        context.edit(
            &pins,
            "rev = \"3f1c0de5a9b2e47c8d6f0a1b2c3d4e5f60718293\"",
            &format!("rev = \"{rev}\""),
        );
    }
    context
}

#[test]
fn pin_bump_at_the_root_moves_the_pin_in_every_member_and_names_what_it_invalidates() {
    let remote = crate::support::git::GitRemote::new();
    let context = family_on_a_remote(&remote, &remote.first);
    let run = context.forge(&["pin", "bump", "app"]).expect_code(0);
    for member in ["universal", "overlay"] {
        let pins = context.read(&format!("{member}/pins.toml"));
        assert!(
            pins.contains(&format!("rev = \"{}\"", remote.head)),
            "{pins}"
        );
    }
    let invalidated: Vec<&str> = run
        .stderr
        .lines()
        .filter(|line| line.trim_start().starts_with("Invalidated"))
        .collect();
    forge_snapshot!(invalidated.join("\n"), context.path(), @"
    Invalidated 4 of 10 steps, from step 7 (Dockerfile line 20) on:
    Invalidated 4 of 10 steps, from step 7 (Dockerfile line 20) on:
    Invalidated member universal (universal)
    Invalidated member overlay (overlay)
    ");
    // Only the overlay behind: it moves, and it alone is invalidated.
    let context = family_on_a_remote(&remote, &remote.first);
    context.edit(
        "universal/pins.toml",
        &format!("rev = \"{}\"", remote.first),
        &format!("rev = \"{}\"", remote.head),
    );
    let run = context.forge(&["pin", "bump", "app"]).expect_code(0);
    assert!(
        !run.stderr.contains("Invalidated member universal"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("Invalidated member overlay"),
        "{}",
        run.stderr
    );
    let run = context.forge(&["pin", "bump", "nccl"]).expect_code(2);
    forge_snapshot!(run.stderr, context.path(), @"
    error: no member of the workspace pins `nccl`
    hint: `forge pin list` at the root lists every member's pins; nothing was changed
    ");
}

#[test]
fn a_move_one_member_refuses_moves_no_member() {
    let remote = crate::support::git::GitRemote::new();
    let context = family_on_a_remote(&remote, &remote.first);
    // The overlay follows `side`, where the head of nv_dev is not.
    context.edit(
        "overlay/pins.toml",
        "branch = \"nv_dev\"",
        "branch = \"side\"",
    );
    let before = context.read("universal/pins.toml");
    let run = context
        .forge(&["pin", "bump", "app", "--to", &remote.head])
        .expect_code(2);
    assert!(
        run.stderr.contains("error: member `overlay` (overlay)"),
        "{}",
        run.stderr
    );
    assert_eq!(context.read("universal/pins.toml"), before);
    assert!(!run.stderr.contains("Bumping"), "{}", run.stderr);
}

#[test]
fn a_members_own_recipe_error_is_located_in_its_pins_toml_and_one_folder_is_one_member() {
    let context = family();
    context.edit("overlay/pins.toml", "GREETING = \"hello\"", "GREETING = 7");
    let stderr = refused(&context, WORKSPACE);
    forge_snapshot!(stderr, context.path(), @"
    error: member `overlay` (overlay) is not a recipe forge can open
    caused by: overlay/pins.toml:22:12: invalid type: integer `7`, expected a string
    hint: values that reach the Dockerfile must match their grammar exactly; nothing was rendered
    ");
    context.edit("overlay/pins.toml", "GREETING = 7", "GREETING = \"hello\"");
    let stderr = refused(
        &context,
        &format!("{WORKSPACE}\n[members.again]\npath = \"./universal\"\n"),
    );
    forge_snapshot!(stderr, context.path(), @"
    error: forge-workspace.toml:10:8: members `universal` and `again` are the same folder
    hint: give each member a recipe folder of its own
    ");
}

/// The examples workspace as shipped (`examples/forge-workspace.toml`), copied with each
/// repository of this test's own (named after `test`) behind `prefix` (a registry's address and `/`, or nothing),
/// `offline` on the tests' base image, and every image it makes under a label guard. The lane
/// `greeter-experimental` takes the greeter's repository and label, as a lane does.
fn shipped_examples(prefix: &str, test: &str) -> (TestContext, ImageGuard) {
    use crate::support::images::{DATED_TAG, base_image, removed_at_exit};
    let context = TestContext::empty();
    copy_tree(&repository_root().join("examples"), context.path());
    let guard = ImageGuard::new(&format!("forge-test-{test}-{}", std::process::id()));
    let repository =
        |member: &str| format!("{prefix}forge-test-{test}-{member}-{}", std::process::id());
    let members = [
        ("offline", vec!["latest", DATED_TAG]),
        (
            "greeter",
            vec![
                "latest",
                "2026-07-08-greeter",
                "experimental",
                "2026-07-08-greeter-experimental",
            ],
        ),
    ];
    for (member, tags) in members {
        let pins = format!("{member}/pins.toml");
        context.edit(
            &pins,
            &format!("repository = \"forge-example/{member}\""),
            &format!("repository = \"{}\"", repository(member)),
        );
        context.edit(
            &pins,
            "[image.labels]",
            &format!("[image.labels]\n{}", guard.label_entry()),
        );
        for tag in tags {
            removed_at_exit(&format!("{}:{tag}", repository(member)));
        }
    }
    context.edit(
        "offline/pins.toml",
        "image = \"forge-example-base:busybox\"",
        &format!("image = \"{}\"", base_image()),
    );
    context.edit(
        "greeter/pins.toml",
        "image = \"forge-example/offline:2026-07-08-offline\"",
        &format!("image = \"{}:2026-07-08-offline\"", repository("offline")),
    );
    (context, guard)
}

#[test]
fn the_shipped_examples_workspace_builds_the_greeter_on_the_offline_image() {
    let root = repository_root().join("examples");
    let plan = Run::of(
        std::process::Command::new(env!("CARGO_BIN_EXE_forge"))
            .args(["-C", root.to_str().unwrap(), "build", "--dry-run"])
            .env("NO_COLOR", "1"),
    )
    .expect_code(0);
    assert!(
        plan.stdout
            .contains("member greeter (greeter), from member offline (not pushed yet)"),
        "{}",
        plan.stdout
    );
    let rendered = Run::of(
        std::process::Command::new(env!("CARGO_BIN_EXE_forge")).args([
            "-C",
            root.join("greeter").to_str().unwrap(),
            "render",
        ]),
    )
    .expect_code(0);
    crate::support::assert_hadolint_passes(&rendered.stdout);
    if !crate::support::images::docker_ready() {
        return;
    }
    let (context, _images) = shipped_examples("", "examples");
    context.forge(&["build"]).expect_code(0);
    let greeting = |tag: &str| {
        let image = format!("forge-test-examples-greeter-{}:{tag}", std::process::id());
        let output = std::process::Command::new("docker")
            .args(["run", "--rm", &image, "cat", "/opt/greeter/greeting.txt"])
            .output()
            .expect("docker runs");
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    forge_snapshot!(greeting("latest"), context.path(), @"
    hello, from the offline example
    channel: none
    and hello from greeter-layer
    ");
    // The lane: the greeter's layer on the same image, with its own greeting and tags.
    forge_snapshot!(greeting("experimental"), context.path(), @"
    hello, from the offline example
    channel: none
    and hello from greeter-experimental-lane
    ");
}

/// The shipped family pushed and signed from the root; then, for each member, a tester with
/// only its reference and the lab's key pulls it, verifies it and reads its report, each
/// saying which lane the image is.
#[test]
fn the_shipped_family_pushes_signed_and_each_members_tester_pulls_verifies_and_reports_it() {
    if !crate::support::images::docker_ready() {
        return;
    }
    if let Some(missing) = crate::support::registry::missing_tools() {
        crate::support::note(&format!("skipped: {missing}"));
        return;
    }
    let registry = crate::support::registry::RegistryServer::start();
    let (context, _images) = shipped_examples(&format!("{}/", registry.address()), "family");
    let keys = crate::support::keys::Keys::new();
    context
        .forge(&[
            "build",
            "--push",
            "--sign",
            "--sign-key",
            &keys.private_arg(),
        ])
        .expect_code(0);
    let tester = TestContext::empty();
    tester.write("lab.pub", &keys.public_text());
    let mut said = Vec::new();
    for (member, tag) in [
        ("offline", "latest"),
        ("greeter", "latest"),
        ("greeter", "experimental"),
    ] {
        let reference = format!(
            "{}/forge-test-family-{member}-{}:{tag}",
            registry.address(),
            std::process::id()
        );
        let key = tester.path().join("lab.pub");
        let key = key.to_str().expect("a UTF-8 path");
        let pulled = tester
            .forge(&["--json", "pull", &reference, "--key", key])
            .expect_code(0);
        let verified = tester
            .forge(&["--json", "verify-digest", &reference, "--key", key])
            .expect_code(0);
        let reported = tester
            .forge(&["report", &reference, "--key", key])
            .expect_code(0);
        said.push(format!(":{tag} of {member}"));
        said.extend(
            verified
                .stderr
                .lines()
                .chain(reported.stdout.lines())
                .filter(|line| line.trim_start().starts_with("Lane") || line.starts_with("| lane"))
                .map(str::to_owned),
        );
        said.push(format!(
            "verdict lane: {} (pull: {})",
            verified.json()["lane"],
            pulled.json()["lane"]
        ));
    }
    forge_snapshot!(said.join("\n"), tester.path(), @r#"
    :latest of offline
            Lane 127.0.0.1:<port>/forge-test-family-offline-<pid> is baseline
    | lane | baseline |
    verdict lane: null (pull: null)
    :latest of greeter
            Lane 127.0.0.1:<port>/forge-test-family-greeter-<pid> is baseline
    | lane | baseline |
    verdict lane: null (pull: null)
    :experimental of greeter
            Lane 127.0.0.1:<port>/forge-test-family-greeter-<pid> is experimental, a lane of the recipe in `../greeter`
    | lane | experimental, a lane of the recipe in `../greeter` |
    verdict lane: {"experimental":true,"of":"../greeter"} (pull: {"experimental":true,"of":"../greeter"})
    "#);
}
