//! Lanes: a recipe that varies another (`[lane] of`), holding only what it changes. It plans and
//! renders as the other recipe with its values laid over, keeps tags and a record of its own,
//! and each refusal (no tags of its own, a baseline's moving tag, a change to a pin the other
//! recipe lacks, a lane of a lane) is located in the lane's pins.toml.

use crate::support::snapshot::forge_snapshot;
use crate::support::{TestContext, copy_tree, repository_root};

/// The offline example as `base`, and `canary`: an experimental lane of it.
const LANE: &str = r#"# An experimental lane of the offline example.
[lane]
of = "../base"
experimental = true

[image.tags]
moving = ["canary"]
immutable = ["{{ date }}-canary"]

[env]
GREETING = "hi"
"#;

const WORKSPACE: &str = r#"[members.base]
path = "base"

[members.canary]
path = "canary"
"#;

fn lane_beside_its_recipe() -> TestContext {
    let context = TestContext::empty();
    copy_tree(
        &repository_root().join("examples/offline"),
        &context.path().join("base"),
    );
    context.write("canary/pins.toml", LANE);
    context.write("forge-workspace.toml", WORKSPACE);
    context
}

#[test]
fn a_lane_renders_as_the_recipe_it_varies_with_only_its_values_changed() {
    let context = lane_beside_its_recipe();
    let base = context.forge_in("base", &["render"]).expect_code(0);
    let lane = context.forge_in("canary", &["render"]).expect_code(0);
    let only = |these: &str, those: &str, sign: &str| -> Vec<String> {
        let others: Vec<&str> = those.lines().collect();
        these
            .lines()
            .filter(|line| !others.contains(line))
            .map(|line| format!("{sign} {line}"))
            .collect()
    };
    let mut changed = only(&base.stdout, &lane.stdout, "-");
    changed.extend(only(&lane.stdout, &base.stdout, "+"));
    forge_snapshot!(changed.join("\n"), context.path(), @r#"
    - # tag:  latest
    - # tag:  2026-07-08-offline (immutable)
    - ENV GREETING=hello
    -  org.opencontainers.image.version="2026-07-08-offline" \
    + # tag:  canary
    + # tag:  2026-07-08-canary (immutable)
    + ENV GREETING=hi
    +  org.opencontainers.image.version="2026-07-08-canary" \
    "#);
    // The plan at the root names the lane and what it varies; its tags are its own.
    let plan = context.forge(&["build", "--dry-run"]).expect_code(0);
    let headings: Vec<&str> = plan
        .stdout
        .lines()
        .filter(|line| line.starts_with("member ") || line.starts_with("tag "))
        .collect();
    forge_snapshot!(headings.join("\n"), context.path(), @"
    member base (base)
    tag  forge-example/offline:latest (moving)
    tag  forge-example/offline:2026-07-08-offline (immutable)
    member canary (canary), experimental lane of base
    tag  forge-example/offline:canary (moving)
    tag  forge-example/offline:2026-07-08-canary (immutable)
    ");
    let document = context
        .forge(&["--json", "build", "--dry-run"])
        .expect_code(0)
        .json();
    assert_eq!(
        document["members"][1]["lane"],
        serde_json::json!({"kind": "experimental", "varies": "base"}),
        "{document:#}"
    );
}

/// The lane's pins.toml with `from` replaced by `to`, then the refusal of `-C canary build
/// --dry-run` (exit 2, nothing on stdout).
fn refused(context: &TestContext, from: &str, to: &str) -> String {
    context.write("canary/pins.toml", &LANE.replace(from, to));
    let run = context
        .forge_in("canary", &["build", "--dry-run"])
        .expect_code(2);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    run.stderr
}

#[test]
fn a_lane_needs_tags_of_its_own_and_an_experimental_one_never_takes_a_moving_tag() {
    let context = lane_beside_its_recipe();
    let stderr = refused(
        &context,
        "[image.tags]\nmoving = [\"canary\"]\nimmutable = [\"{{ date }}-canary\"]\n",
        "",
    );
    forge_snapshot!(stderr, context.path(), @r#"
    error: pins.toml:2:1: a lane without [image.tags]
    hint: give the lane tags of its own, such as moving = ["experimental-NAME"] and immutable = ["{{ date }}-NAME"]: it would otherwise re-point the tags of the recipe it varies
    "#);
    let stderr = refused(
        &context,
        "moving = [\"canary\"]",
        "moving = [\"canary\", \"latest\"]",
    );
    forge_snapshot!(stderr, context.path(), @"
    error: pins.toml:7:21: the experimental lane's tag `latest` is a moving tag of ../base/pins.toml
    hint: an experimental lane never takes the moving tags of the recipe it varies (testers follow them to the baseline): name one of the lane's own, such as experimental-NAME
    ");
    let stderr = refused(
        &context,
        "immutable = [\"{{ date }}-canary\"]",
        "immutable = [\"latest\"]",
    );
    forge_snapshot!(stderr, context.path(), @"
    error: pins.toml:8:14: the experimental lane's tag `latest` is a moving tag of ../base/pins.toml
    hint: an experimental lane never takes the moving tags of the recipe it varies (testers follow them to the baseline): name one of the lane's own, such as experimental-NAME
    ");
    let stderr = refused(
        &context,
        "immutable = [\"{{ date }}-canary\"]",
        "immutable = [\"{{ date }}-offline\"]",
    );
    forge_snapshot!(stderr, context.path(), @"
    error: pins.toml:8:14: the lane's tag `{{ date }}-offline` is an immutable tag of ../base/pins.toml
    hint: an immutable tag names one image forever, the one the recipe it varies builds: give the lane a dated tag of its own, such as {{ date }}-NAME
    ");
    // A variant that is not experimental may take a moving tag over (it is promoted), but not
    // while the recipe it varies applies it too in one workspace.
    context.write(
        "canary/pins.toml",
        &LANE
            .replace("experimental = true", "experimental = false")
            .replace("moving = [\"canary\"]", "moving = [\"latest\"]"),
    );
    context
        .forge_in("canary", &["build", "--dry-run"])
        .expect_code(0);
    let run = context.forge(&["build", "--dry-run"]).expect_code(2);
    forge_snapshot!(run.stderr, context.path(), @"
    error: forge-workspace.toml:4:10: members `base` and `canary` both tag forge-example/offline:latest
    hint: a tag names one image: give one of them its own repository or its own tags
    ");
}

#[test]
fn a_lane_changes_only_pins_its_recipe_has_and_its_own_values_are_located_in_its_file() {
    let context = lane_beside_its_recipe();
    let stderr = refused(&context, "[env]", "[pins.tools]\nrev = \"main\"\n\n[env]");
    forge_snapshot!(stderr, context.path(), @"
    error: pins.toml:10:7: the lane changes pin `tools`, which ../base/pins.toml does not have
    hint: a lane changes the keys of a pin the recipe it varies has; to add a pin of the lane's own, give it a `kind` and every key its kind needs
    ");
    // A value the lane writes is refused where the lane wrote it.
    let stderr = refused(&context, "GREETING = \"hi\"", "GREETING = \"hi $USER\"");
    forge_snapshot!(stderr, context.path(), @r#"
    error: pins.toml:11:12: invalid value "hi $USER": expected letters, digits and . _ - + : / , = @ % only (no spaces, quotes or shell metacharacters)
    hint: values that reach the Dockerfile must match their grammar exactly; nothing was rendered
    "#);
    let stderr = refused(
        &context,
        "[env]",
        "[pins.app]\nbranch = \"no such\"\n\n[env]",
    );
    forge_snapshot!(stderr, context.path(), @r#"
    error: pins.toml:11:10: invalid branch "no such": expected a git branch name of letters, digits, '.', '_', '-' and '/'
    hint: values that reach the Dockerfile must match their grammar exactly; nothing was rendered
    "#);
    // A pin of the lane's own carries its kind, and every key that kind needs.
    let stderr = refused(&context, "[env]", "[pins.tools]\nkind = \"git\"\n\n[env]");
    forge_snapshot!(stderr, context.path(), @"
    error: pins.toml:10:1: pin `tools` of kind git needs `url`
    hint: a git pin requires: url, rev
    ");
    let stderr = refused(
        &context,
        "[env]",
        "[render]\ncommitted = \"Dockerfile\"\n\n[env]",
    );
    forge_snapshot!(stderr, context.path(), @"
    error: pins.toml:10:2: [render] in a lane
    hint: the committed render belongs to the recipe that commits it; remove [render] from the lane
    ");
}

#[test]
fn a_lane_of_a_lane_or_of_no_recipe_is_refused_at_its_of() {
    let context = lane_beside_its_recipe();
    let stderr = refused(&context, "of = \"../base\"", "of = \"../nowhere\"");
    forge_snapshot!(stderr, context.path(), @r#"
    error: pins.toml:3:6: [lane] of: there is no recipe at ../nowhere/pins.toml
    hint: `of` names the folder of the recipe this lane varies, relative to the lane's own folder (such as of = "..")
    "#);
    context.write("canary/pins.toml", LANE);
    context.write(
        "again/pins.toml",
        &LANE
            .replace("canary\"", "again\"")
            .replace("../base", "../canary"),
    );
    let run = context
        .forge_in("again", &["build", "--dry-run"])
        .expect_code(2);
    forge_snapshot!(run.stderr, context.path(), @"
    error: pins.toml:3:6: [lane] of: ../canary/pins.toml is itself a lane
    hint: name the recipe that lane varies: a lane varies a recipe, not another lane
    ");
}

#[test]
fn a_lanes_pins_move_in_the_recipe_it_varies_which_lists_the_lane_invalidated() {
    let remote = crate::support::git::GitRemote::new();
    let context = lane_beside_its_recipe();
    let pins = "base/pins.toml";
    context.edit(
        pins,
        "url = \"https://example.org/forge/offline-app.git\"",
        &format!(
            "url = \"file://{}/remote.git\"",
            remote.folder.path().display()
        ),
    );
    context.edit(pins, "branch = \"main\"", "branch = \"nv_dev\"");
    context.edit(
        pins,
        "rev = \"3f1c0de5a9b2e47c8d6f0a1b2c3d4e5f60718293\"",
        &format!("rev = \"{}\"", remote.first),
    );
    let lane = context.read("canary/pins.toml");
    let run = context
        .forge_in("canary", &["pin", "bump", "app"])
        .expect_code(2);
    forge_snapshot!(run.stderr, context.path(), @"
    error: pins.toml is a lane of ../base: a lane's pins move in the recipe it varies
    hint: bump it there (`forge -C ../base pin bump NAME`), or with `forge pin bump NAME` at the workspace root, which lists the lane among the members it invalidates; nothing was changed
    ");
    let run = context.forge(&["pin", "bump", "app"]).expect_code(0);
    assert_eq!(
        context.read("canary/pins.toml"),
        lane,
        "the lane is not written"
    );
    assert!(
        context
            .read(pins)
            .contains(&format!("rev = \"{}\"", remote.head))
    );
    let invalidated: Vec<&str> = run
        .stderr
        .lines()
        .filter(|line| line.trim_start().starts_with("Invalidated member"))
        .collect();
    forge_snapshot!(invalidated.join("\n"), context.path(), @"
    Invalidated member base (base)
    Invalidated member canary (canary)
    ");
    // The lane now plans with the moved pin.
    let plan = context.forge_in("canary", &["render"]).expect_code(0);
    assert!(plan.stdout.contains(&remote.head), "{}", plan.stdout);
}
