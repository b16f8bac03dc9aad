//! `forge pin bump` and `forge pin outdated` against real servers: a package index on
//! 127.0.0.1 (`index_server`), bare git repositories over file:// and over git's smart HTTP
//! protocol (`git_http_server`), and a `docker-registry` on
//! loopback for the base image. Every run is hermetic: no pip configuration, cache or
//! credentials of the machine leak in.

use std::path::Path;
use std::process::Command;

use crate::support::credential_helper::{CredentialHelper, HELPER};
use crate::support::forge;
use crate::support::git::deepgemm_from;
use crate::support::git::{GitRemote, git, with_a_deepgemm_series, with_git_remote};
use crate::support::git_http::GitHttpServer;
use crate::support::index::IndexServer;
use crate::support::index::{default_index, recorded_index};
use crate::support::outdated_row;
use crate::support::registry::{self, RegistryServer};
use crate::support::tls::{Certificates, TlsTerminator};
use crate::support::{Run, TestContext, assert_contains, free_port, stop, wait_for_port};

/// `forge`, with `index` as the package index.
fn forge_on(context: &TestContext, index: &IndexServer, args: &[&str]) -> Run {
    forge(context, args, &[("FORGE_INDEX_URL", &index.url())])
}

/// The default recipe, its pins.toml as it stands, and an index offering everything it pins
/// at its current versions.
fn recipe_and_index() -> (TestContext, String, IndexServer) {
    let context = TestContext::default_recipe_on_indexes();
    let before = context.read("pins.toml");
    (context, before, default_index())
}

/// `recipe_and_index`, with the first `from` in pins.toml made `to` first.
fn edited_recipe_and_index(from: &str, to: &str) -> (TestContext, String, IndexServer) {
    let context = TestContext::default_recipe_on_indexes();
    context.edit("pins.toml", from, to);
    let before = context.read("pins.toml");
    (context, before, default_index())
}

/// `recipe_and_index` with the tvm group declared lockstep: one version for both members.
fn lockstep_recipe_and_index() -> (TestContext, String, IndexServer) {
    let context = TestContext::default_recipe_on_indexes();
    let text = context.read("pins.toml");
    context.write(
        "pins.toml",
        &format!("{text}\n[groups.tvm]\nlockstep = true\n"),
    );
    let before = context.read("pins.toml");
    (context, before, default_index())
}

/// FlashInfer's version line in the default recipe, and after the move to 0.6.15.
const FLASHINFER_0_6_14: &str = "version = \"0.6.14\"";
const FLASHINFER_0_6_15: &str = "version = \"0.6.15\"";

/// Offers FlashInfer 0.6.15: all three wheels, the jit-cache one with its `+cu130` label.
fn offer_flashinfer_0_6_15(index: &IndexServer) {
    index
        .wheel("flashinfer-python", "0.6.15")
        .publish("flashinfer-python", &["flashinfer_python-0.6.15.tar.gz"])
        .wheel("flashinfer-cubin", "0.6.15")
        .wheel("flashinfer-jit-cache", "0.6.15+cu130");
}

#[track_caller]
fn assert_unchanged(context: &TestContext, before: &str) {
    assert_eq!(
        context.read("pins.toml"),
        before,
        "pins.toml must be left untouched"
    );
}

/// Panics unless `run` says each of `messages` and pins.toml is still `before`.
#[track_caller]
fn assert_unchanged_saying(run: &Run, context: &TestContext, before: &str, messages: &[&str]) {
    for message in messages {
        assert_contains(&run.stderr, message);
    }
    assert_unchanged(context, before);
}

/// Panics unless pins.toml is `before` with its first `from` made `to`, and nothing else.
#[track_caller]
fn assert_moved(context: &TestContext, before: &str, from: &str, to: &str) {
    assert_eq!(context.read("pins.toml"), before.replacen(from, to, 1));
}

/// `forge pin bump deepgemm --to` the remote's second commit by a short id, with `env`: the pin
/// in `before` moves to its full id.
#[track_caller]
fn assert_a_short_revision_resolves(
    context: &TestContext,
    before: &str,
    remote: &GitRemote,
    env: &[(&str, &str)],
) {
    let to = ["pin", "bump", "deepgemm", "--to", &remote.second[..9]];
    forge(context, &to, env).expect_code(0);
    assert_deepgemm_at(context, before, &remote.second);
}

/// Panics unless pins.toml is `before` with DeepGEMM's revision moved to `rev`.
#[track_caller]
fn assert_deepgemm_at(context: &TestContext, before: &str, rev: &str) {
    assert_moved(
        context,
        before,
        "rev = \"a6b593d2826719dcf4892609af7b84ee23aaf32a\"",
        &format!("rev = \"{rev}\""),
    );
}

#[test]
fn flashinfer_moves_all_three_wheels_and_changes_nothing_else() {
    let (context, before, index) = recipe_and_index();
    offer_flashinfer_0_6_15(&index);
    // A wheel for another CUDA build must not count as the cu130 one.
    index.wheel("flashinfer-jit-cache", "0.6.16+cu128");

    let run = forge_on(&context, &index, &["pin", "bump", "flashinfer"]).expect_code(0);

    // Every byte but the one value stays: comments, spacing, key order, the other pins.
    let expected = before.replacen(
        "[pins.flashinfer]              # three wheels, one version\nkind = \"wheels\"\nversion = \"0.6.14\"",
        "[pins.flashinfer]              # three wheels, one version\nkind = \"wheels\"\nversion = \"0.6.15\"",
        1,
    );
    assert_ne!(
        expected, before,
        "the test must find the flashinfer version"
    );
    assert_eq!(context.read("pins.toml"), expected);

    assert_contains(&run.stderr, "flashinfer 0.6.14 -> 0.6.15");
    assert_contains(&run.stderr, "flashinfer-jit-cache 0.6.15+cu130");
    // FlashInfer is step 10 of 15: it and everything after it run again, DeepGEMM does not.
    assert_contains(&run.stderr, "Invalidated 6 of 15 steps, from step 10");
    let listed: Vec<&str> = run
        .stderr
        .lines()
        .filter(|line| line.trim_start().starts_with("step "))
        .collect();
    assert_eq!(listed.len(), 6, "{}", run.stderr);
    assert_contains(listed[0], "flashinfer-python==0.6.15");
    assert!(listed.iter().all(|line| !line.contains("deepgemm")));

    let render = forge(&context, &["render"], &[]).expect_code(0);
    assert_contains(
        &render.stdout,
        "flashinfer-python==0.6.15 flashinfer-cubin==0.6.15",
    );
    assert_contains(&render.stdout, "flashinfer-jit-cache==0.6.15+cu130");
}

#[test]
fn the_value_keeps_its_quote_style_and_trailing_comment() {
    let (context, before, index) = edited_recipe_and_index(
        "version = \"0.6.14\"\n",
        "version = '0.6.14'     # follows upstream releases\n",
    );
    offer_flashinfer_0_6_15(&index);
    forge_on(&context, &index, &["pin", "bump", "flashinfer"]).expect_code(0);
    assert_moved(
        &context,
        &before,
        "version = '0.6.14'     # follows upstream releases\n",
        "version = '0.6.15'     # follows upstream releases\n",
    );
}

#[test]
fn a_bump_rewrites_the_committed_render_with_pins_toml() {
    let (context, before, index) = recipe_and_index();
    offer_flashinfer_0_6_15(&index);
    let rendered = "ci/Dockerfile.rendered";
    let check = ["render", "--out", rendered, "--check"];
    forge(&context, &check, &[]).expect_code(0);
    let old_render = context.read(rendered);

    // A dry run writes neither.
    forge_on(
        &context,
        &index,
        &["pin", "bump", "flashinfer", "--dry-run"],
    )
    .expect_code(0);
    assert_unchanged(&context, &before);
    assert_eq!(context.read(rendered), old_render);

    let run = forge_on(&context, &index, &["pin", "bump", "flashinfer"]).expect_code(0);
    assert_moved(&context, &before, FLASHINFER_0_6_14, FLASHINFER_0_6_15);
    assert_contains(
        &run.stderr,
        "ci/Dockerfile.rendered (the committed render, sha256:",
    );
    forge(&context, &check, &[]).expect_code(0);
    assert_contains(&context.read(rendered), "flashinfer-python==0.6.15");
}

#[test]
fn a_committed_render_that_cannot_be_written_leaves_pins_toml_as_it_was() {
    let (context, before, index) = recipe_and_index();
    offer_flashinfer_0_6_15(&index);
    // A folder where the render should be: pins.toml is written first, then put back.
    let rendered = context.path().join("ci/Dockerfile.rendered");
    std::fs::remove_file(&rendered).unwrap();
    std::fs::create_dir(&rendered).unwrap();
    std::fs::write(rendered.join("keep"), "x\n").unwrap();

    let run = forge_on(&context, &index, &["pin", "bump", "flashinfer"]).expect_code(2);
    assert_unchanged_saying(
        &run,
        &context,
        &before,
        &["neither was changed", "must be a writable file"],
    );
}

#[test]
fn pins_the_base_supplies_are_in_base_and_never_move_alone() {
    let (context, _, index) = recipe_and_index();
    index.wheel("nvidia-cutlass-dsl", "4.7.0");
    let remote = GitRemote::new();
    let before = with_git_remote(&context, &remote);

    let run = forge_on(&context, &index, &["pin", "outdated", "--exit-code"]);
    let row = |name: &str| outdated_row(&run.stdout, name).last().unwrap().to_string();
    assert_eq!(row("cutlass-dsl"), "in-base");
    assert_eq!(row("nccl"), "in-base");
    assert_contains(
        &run.stdout,
        "cutlass-dsl: in the base image (install = false): moves with `forge pin bump base`, never alone",
    );

    for args in [
        &["pin", "bump", "cutlass-dsl"][..],
        &["pin", "bump", "cutlass-dsl", "--to", "4.7.0"][..],
        &["pin", "bump", "nccl"][..],
    ] {
        let run = forge_on(&context, &index, args).expect_code(2);
        assert_unchanged_saying(
            &run,
            &context,
            &before,
            &[
                "is supplied by the base image; forge does not move it alone",
                "`forge pin bump base` moves the base image",
            ],
        );
    }
}

#[test]
fn a_version_whose_wheels_do_not_fit_the_image_is_not_offered() {
    let (context, _remote) = recipe_at_the_git_head();
    let before = context.read("pins.toml");
    let index = default_index();
    // 0.6.15: every wheel fits but flashinfer-cubin's, which is for x86_64 and Python 3.13.
    index
        .wheel("flashinfer-python", "0.6.15")
        .wheel("flashinfer-jit-cache", "0.6.15+cu130")
        .publish(
            "flashinfer-cubin",
            &[
                "flashinfer_cubin-0.6.15-cp312-cp312-manylinux_2_28_x86_64.whl",
                "flashinfer_cubin-0.6.15-cp313-cp313-manylinux_2_28_aarch64.whl",
                "flashinfer_cubin-0.6.15.tar.gz",
            ],
        )
        // 0.6.16: a wheel for any platform, but only for Python 3.13 and later.
        .wheel("flashinfer-python", "0.6.16")
        .wheel("flashinfer-jit-cache", "0.6.16+cu130")
        .publish_requiring(
            "flashinfer-cubin",
            "flashinfer_cubin-0.6.16-py3-none-any.whl",
            ">=3.13",
        );

    let run = forge_on(&context, &index, &["pin", "outdated"]).expect_code(0);
    let row = outdated_row(&run.stdout, "flashinfer");
    assert_eq!(row, ["flashinfer", "0.6.14", "0.6.14", "0.6.16", "held"]);
    assert_contains(
        &run.stdout,
        "flashinfer 0.6.16, 0.6.15: no wheel of flashinfer-cubin fits linux/aarch64, Python 3.12 (wheel-fit)",
    );

    let run = forge_on(&context, &index, &["pin", "bump", "flashinfer"]).expect_code(0);
    assert_unchanged_saying(
        &run,
        &context,
        &before,
        &[
            "no wheel of flashinfer-cubin 0.6.16 fits linux/aarch64, Python 3.12 (wheels: py3-none-any (requires-python >=3.13))",
            "flashinfer is at 0.6.14, the newest allowed version",
        ],
    );
    let run = forge_on(
        &context,
        &index,
        &["pin", "bump", "flashinfer", "--to", "0.6.15"],
    )
    .expect_code(1);
    assert_unchanged_saying(
        &run,
        &context,
        &before,
        &[
            "no wheel of flashinfer-cubin 0.6.15 fits linux/aarch64, Python 3.12 (wheels: cp312-cp312-manylinux_2_28_x86_64, cp313-cp313-manylinux_2_28_aarch64)",
        ],
    );

    // The same versions on an x86_64 image with Python 3.13: both fit.
    context.edit(
        "pins.toml",
        "platform = \"linux/arm64\"",
        "platform = \"linux/amd64\"",
    );
    context.edit("pins.toml", "python = \"3.12\"", "python = \"3.13\"");
    for package in ["flashinfer-python", "flashinfer-jit-cache"] {
        let version = if package == "flashinfer-jit-cache" {
            "+cu130"
        } else {
            ""
        };
        for at in ["0.6.14", "0.6.15", "0.6.16"] {
            let name = package.replace('-', "_");
            index.publish(
                package,
                &[&format!(
                    "{name}-{at}{version}-py3-none-manylinux_2_28_x86_64.whl"
                )],
            );
        }
    }
    let run = forge_on(&context, &index, &["pin", "outdated"]).expect_code(0);
    let row = outdated_row(&run.stdout, "flashinfer");
    assert_eq!(
        row,
        ["flashinfer", "0.6.14", "0.6.16", "0.6.16", "outdated"]
    );
}

#[test]
fn a_yanked_current_pin_is_flagged_and_an_exact_yanked_version_may_be_pinned() {
    let (context, _remote) = recipe_at_the_git_head();
    let before = context.read("pins.toml");
    let index = default_index();
    index.yank(
        "flashinfer-python",
        "flashinfer_python-0.6.14-py3-none-manylinux_2_28_aarch64.whl",
    );
    let run = forge_on(&context, &index, &["pin", "outdated", "--exit-code"]).expect_code(1);
    assert_contains(
        &run.stderr,
        "the index yanked the current version of flashinfer (--exit-code)",
    );
    let row = outdated_row(&run.stdout, "flashinfer");
    assert_eq!(row, ["flashinfer", "0.6.14", "0.6.14", "0.6.14", "yanked"]);
    assert_contains(
        &run.stdout,
        "flashinfer: 0.6.14 is yanked on the index (yanked for the test): move with `forge pin bump flashinfer` once a newer version is allowed",
    );

    // 0.6.15 yanked: not offered, but an exact --to may pin it, with a warning.
    offer_flashinfer_0_6_15(&index);
    for file in [
        "flashinfer_python-0.6.15-py3-none-manylinux_2_28_aarch64.whl",
        "flashinfer_python-0.6.15.tar.gz",
    ] {
        index.yank("flashinfer-python", file);
    }
    let run = forge_on(&context, &index, &["pin", "bump", "flashinfer"]).expect_code(0);
    assert_unchanged_saying(&run, &context, &before, &["flashinfer is at 0.6.14"]);
    let run = forge_on(
        &context,
        &index,
        &["pin", "bump", "flashinfer", "--to", "0.6.15"],
    )
    .expect_code(0);
    assert_contains(
        &run.stderr,
        &format!(
            "warning: flashinfer-python 0.6.15 is yanked on {} (yanked for the test); pinned anyway, as PEP 592 allows for an exact version",
            index.url()
        ),
    );
    assert_moved(&context, &before, FLASHINFER_0_6_14, FLASHINFER_0_6_15);
}

#[test]
fn a_move_whose_wheels_require_what_the_pins_do_not_meet_is_refused_naming_the_requirement() {
    let (context, _remote) = recipe_at_the_git_head();
    let before = context.read("pins.toml");
    let index = recorded_index();

    let to = ["pin", "bump", "flashinfer", "--to", "0.7.4"];
    let run = forge_on(&context, &index, &to).expect_code(1);
    assert_unchanged_saying(
        &run,
        &context,
        &before,
        &[
            "refusing to move flashinfer to 0.7.4: flashinfer-python 0.7.4 requires nvidia-cutlass-dsl>=4.8.0, not 4.6.0",
            "hint: the Dockerfile installs with --no-deps",
        ],
    );
    // What it declares came from its PEP 658 metadata file.
    assert!(
        index
            .requests()
            .iter()
            .any(|path| path.ends_with("/flashinfer_python-0.7.4-py3-none-any.whl.metadata")),
        "{:?}",
        index.requests()
    );

    let run = forge_on(&context, &index, &["pin", "outdated"]).expect_code(0);
    assert_contains(
        &run.stdout,
        "flashinfer 0.7.4: flashinfer-python requires nvidia-cutlass-dsl>=4.8.0 (requires)",
    );
    let run = forge_on(&context, &index, &["pin", "bump", "flashinfer"]).expect_code(0);
    assert_unchanged_saying(
        &run,
        &context,
        &before,
        &["flashinfer is at 0.6.14, the newest allowed version"],
    );

    // With the base's CUTLASS DSL at 4.8.0 the same move holds.
    context.edit("pins.toml", "version = \"4.6.0\"", "version = \"4.8.0\"");
    forge_on(&context, &index, &to).expect_code(0);
    assert_contains(&context.read("pins.toml"), FLASHINFER_0_7_4);
}

const FLASHINFER_0_7_4: &str = "version = \"0.7.4\"";

/// A forge.lock as a build writes it, with `packages` (TOML lines) as what the image holds; none
/// for a record written before forge recorded them.
fn lock_with_packages(packages: &str) -> String {
    let digest = |c: char| format!("\"sha256:{}\"", c.to_string().repeat(64));
    let packages = if packages.is_empty() {
        String::new()
    } else {
        format!("\n[base.packages]\n{packages}\n")
    };
    format!(
        "version = 1\n\n[inputs]\npins = {}\ntemplates = {}\npatches = {}\noverlays = {}\ndockerfile = {}\ncontext = {}\n\n[base]\nimage = \"ghcr.io/aeon-7/aeon-vllm-ultimate:2026-07-01-v0.24.0\"\n{packages}\n[image]\nrepository = \"ghcr.io/aeon-7/vllm-ultimate-deepseek-v4-gb10\"\nid = {}\n\n[[tags]]\nname = \"experimental-pr4\"\nmutability = \"moving\"\n",
        digest('1'),
        digest('2'),
        digest('3'),
        digest('4'),
        digest('5'),
        digest('6'),
        digest('7'),
    )
}

/// What a move requires of packages the recipe does not pin is listed as coming from the base,
/// and checked against what the last build's image holds where forge.lock records it.
#[test]
fn requirements_on_unpinned_packages_come_from_the_base_and_are_checked_against_the_record() {
    let (context, _remote) = recipe_at_the_git_head();
    // The base's CUTLASS DSL at 4.8.0, so that only the unpinned requirements decide.
    context.edit("pins.toml", "version = \"4.6.0\"", "version = \"4.8.0\"");
    let before = context.read("pins.toml");
    let index = recorded_index();
    let to = ["pin", "bump", "flashinfer", "--to", "0.7.4", "--dry-run"];

    // An older record, without the image's packages: listed, unchecked.
    context.write("forge.lock", &lock_with_packages(""));
    let run = forge_on(&context, &index, &to).expect_code(0);
    assert_contains(
        &run.stderr,
        "Base flashinfer-python 0.7.4 needs from the base (not pinned): click, cuda-python>=12.0, cuda-tile>=1.4.0,",
    );
    assert_contains(&run.stderr, "nccl4py>=0.4.1");
    assert_contains(
        &run.stderr,
        "unchecked: no build recorded what the base holds",
    );

    // The last build's image has a cuda-python older than 0.7.4 needs: refused, naming it.
    context.write(
        "forge.lock",
        &lock_with_packages("cuda-python = \"11.8.0\"\nnccl4py = \"0.5.0\"\ntorch = \"2.9.0\""),
    );
    let run = forge_on(&context, &index, &to).expect_code(1);
    assert_unchanged_saying(
        &run,
        &context,
        &before,
        &[
            "refusing to move flashinfer to 0.7.4: flashinfer-python 0.7.4 requires cuda-python>=12.0 from the base, whose last build has 11.8.0",
            "hint: the base must supply cuda-python>=12.0",
        ],
    );
    let run = forge_on(&context, &index, &["pin", "outdated"]).expect_code(0);
    assert_contains(
        &run.stdout,
        "flashinfer 0.7.4: flashinfer-python requires cuda-python>=12.0 of the base, which has 11.8.0 (base)",
    );

    // With a cuda-python that fits it moves, and says what it found in the base.
    context.write(
        "forge.lock",
        &lock_with_packages("cuda-python = \"12.8.0\"\nnccl4py = \"0.5.0\"\ntorch = \"2.9.0\""),
    );
    let run = forge_on(&context, &index, &to).expect_code(0);
    assert_contains(&run.stderr, "cuda-python>=12.0 (has 12.8.0)");
    assert_contains(
        &run.stderr,
        "nccl-extensions>=0.1.0 (not in the last build's image)",
    );
    assert_contains(&run.stderr, "torch (has 2.9.0)");
}

/// On the recorded index the tvm group moves as one but not in lockstep: tilelang goes to
/// 0.1.15 and apache-tvm-ffi stays at 0.1.11, held there by the recipe's deny list (0.1.12) and
/// by what tilelang 0.1.15 declares (`apache-tvm-ffi<0.1.13,>=0.1.11`).
#[test]
fn the_tvm_group_moves_tilelang_alone_and_says_what_holds_apache_tvm_ffi() {
    let (context, _remote) = recipe_at_the_git_head();
    let before = context.read("pins.toml");
    let index = recorded_index();

    let run = forge_on(&context, &index, &["pin", "outdated"]).expect_code(0);
    assert_eq!(
        outdated_row(&run.stdout, "tilelang"),
        ["tilelang", "0.1.11", "0.1.15", "0.1.15", "outdated"]
    );
    assert_eq!(
        outdated_row(&run.stdout, "apache-tvm-ffi"),
        ["apache-tvm-ffi", "0.1.11", "0.1.11", "0.1.15.post2", "held"]
    );
    assert_contains(
        &run.stdout,
        "tilelang: group tvm moves as one: tilelang 0.1.11 -> 0.1.15, apache-tvm-ffi stays at 0.1.11",
    );
    assert_contains(
        &run.stdout,
        "apache-tvm-ffi 0.1.12: denied for apache-tvm-ffi: aborts tilelang: duplicate type-attr registration (denied)",
    );
    assert_contains(
        &run.stdout,
        "apache-tvm-ffi 0.1.15.post2, 0.1.14.post1, 0.1.13.post3: tilelang 0.1.15 requires apache-tvm-ffi<0.1.13,>=0.1.11 (requires)",
    );
    let metadata_requests = || {
        index
            .requests()
            .iter()
            .filter(|path| path.ends_with(".metadata"))
            .count()
    };
    let first = metadata_requests();
    assert!(first > 0);
    // The METADATA read is cached by each wheel's sha256: the second run reads none.
    let json = forge_on(&context, &index, &["--json", "pin", "outdated"])
        .expect_code(0)
        .json();
    assert_eq!(metadata_requests(), first);
    let tilelang = json["pins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|pin| pin["name"] == "tilelang")
        .unwrap();
    assert_eq!(
        tilelang["group_move"],
        serde_json::json!([
            { "name": "tilelang", "current": "0.1.11", "to": "0.1.15", "forced_by": [] },
            { "name": "apache-tvm-ffi", "current": "0.1.11", "to": "0.1.11", "forced_by": [] },
        ])
    );
    assert_unchanged(&context, &before);

    // `pin bump` of either member makes the same move, and says what held apache-tvm-ffi.
    let run = forge_on(&context, &index, &["pin", "bump", "apache-tvm-ffi"]).expect_code(0);
    assert_contains(
        &run.stderr,
        "Bumping tilelang 0.1.11 -> 0.1.15 (group tvm: apache-tvm-ffi stays at 0.1.11)",
    );
    assert_contains(
        &run.stderr,
        "Keeping apache-tvm-ffi at 0.1.11 in group tvm: 0.1.15.post2, 0.1.14.post1, 0.1.13.post3: tilelang 0.1.15 requires apache-tvm-ffi<0.1.13,>=0.1.11; 0.1.12: denied for apache-tvm-ffi: aborts tilelang",
    );
    assert_eq!(
        context.read("pins.toml"),
        before.replacen(
            "version = \"0.1.11\"\ngroup = \"tvm\"\n",
            "version = \"0.1.15\"\ngroup = \"tvm\"\n",
            1
        )
    );
    // The committed render follows.
    assert_contains(&context.read("ci/Dockerfile.rendered"), "tilelang==0.1.15");
    let run = forge_on(&context, &index, &["pin", "bump", "tilelang"]).expect_code(0);
    assert_contains(
        &run.stderr,
        "tilelang is at 0.1.15, the newest allowed version",
    );
}

/// `--to` on a group member keeps the others where they can be, and moves one only when what
/// the new version declares forces it, naming the requirement.
#[test]
fn a_group_move_with_to_moves_a_partner_only_when_a_requirement_forces_it() {
    let (context, _remote) = recipe_at_the_git_head();
    let index = recorded_index();
    // A tilelang that needs a newer apache-tvm-ffi than the pinned one.
    index.publish(
        "tilelang",
        &["tilelang-0.1.16-cp39-abi3-manylinux_2_34_aarch64.whl"],
    );
    let metadata =
        "Name: tilelang\nVersion: 0.1.16\nRequires-Dist: apache-tvm-ffi<0.1.15,>=0.1.13\n";
    index.publish_bytes(
        "tilelang",
        "tilelang-0.1.16-cp39-abi3-manylinux_2_34_aarch64.whl.metadata",
        metadata.as_bytes(),
    );
    let before = context.read("pins.toml");

    let run = forge_on(
        &context,
        &index,
        &["pin", "bump", "tilelang", "--to", "0.1.15"],
    )
    .expect_code(0);
    assert_contains(
        &run.stderr,
        "Bumping tilelang 0.1.11 -> 0.1.15 (group tvm: apache-tvm-ffi stays at 0.1.11)",
    );
    context.write("pins.toml", &before);

    let run = forge_on(
        &context,
        &index,
        &["pin", "bump", "tilelang", "--to", "0.1.16"],
    )
    .expect_code(0);
    assert_contains(
        &run.stderr,
        "Moving apache-tvm-ffi 0.1.11 -> 0.1.14.post1 with group tvm: tilelang 0.1.16 requires apache-tvm-ffi<0.1.15,>=0.1.13, not 0.1.11",
    );
    let after = context.read("pins.toml");
    assert_contains(&after, "version = \"0.1.14.post1\"");
    assert_contains(&after, "version = \"0.1.16\"");
}

/// Against the real index (`FORGE_LIVE_INDEX=1`; skipped otherwise): `pin outdated` proposes
/// the tvm group's move, tilelang to 0.1.15 with apache-tvm-ffi kept at 0.1.11, from what the
/// real wheels declare; and, the group undone, tilelang 0.1.15 then holds apache-tvm-ffi below
/// 0.1.13.
#[test]
fn live_index_requirements_come_from_the_real_wheels() {
    if std::env::var_os("FORGE_LIVE_INDEX").is_none() {
        return;
    }
    let (context, _remote) = recipe_at_the_git_head();
    let pypi = [("FORGE_INDEX_URL", "https://pypi.org/simple")];
    let run = forge(&context, &["pin", "outdated"], &pypi).expect_code(0);
    assert_eq!(
        &outdated_row(&run.stdout, "tilelang")[..3],
        ["tilelang", "0.1.11", "0.1.15"]
    );
    assert_eq!(
        &outdated_row(&run.stdout, "apache-tvm-ffi")[..3],
        ["apache-tvm-ffi", "0.1.11", "0.1.11"]
    );
    assert_contains(
        &run.stdout,
        "tilelang: group tvm moves as one: tilelang 0.1.11 -> 0.1.15, apache-tvm-ffi stays at 0.1.11",
    );
    assert_contains(
        &run.stdout,
        "tilelang 0.1.15 requires apache-tvm-ffi<0.1.13,>=0.1.11 (requires)",
    );

    context.edit(
        "pins.toml",
        "group = \"tvm\"                  # moves with tilelang, each at its own version\n",
        "",
    );
    context.edit(
        "pins.toml",
        "version = \"0.1.11\"\ngroup = \"tvm\"\n",
        "version = \"0.1.11\"\n",
    );
    let run = forge(
        &context,
        &["pin", "bump", "tilelang", "--to", "0.1.15"],
        &pypi,
    );
    let run = run.expect_code(0);
    assert_contains(&run.stderr, "Bumping tilelang 0.1.11 -> 0.1.15");
    let run = forge(
        &context,
        &["pin", "bump", "apache-tvm-ffi", "--to", "0.1.13.post3"],
        &pypi,
    )
    .expect_code(1);
    assert_contains(
        &run.stderr,
        "tilelang 0.1.15 requires apache-tvm-ffi<0.1.13,>=0.1.11, not 0.1.13.post3",
    );
}

/// A wheel (a zip archive) of `files`, each `(name, content, deflated)`.
fn wheel_zip(files: &[(&str, &[u8], bool)]) -> Vec<u8> {
    use std::io::Write as _;
    let mut zip = Vec::new();
    let mut directory = Vec::new();
    for (name, content, deflated) in files {
        let data = if *deflated {
            let mut encoder =
                flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
            encoder.write_all(content).unwrap();
            encoder.finish().unwrap()
        } else {
            content.to_vec()
        };
        let mut crc = flate2::Crc::new();
        crc.update(content);
        let offset = u32::try_from(zip.len()).unwrap();
        let method: u16 = if *deflated { 8 } else { 0 };
        let sizes = [
            crc.sum(),
            u32::try_from(data.len()).unwrap(),
            u32::try_from(content.len()).unwrap(),
        ];
        let name_length = u16::try_from(name.len()).unwrap();
        // Local header: signature, version, flags, method, time, date, crc, sizes, name, extra.
        zip.extend_from_slice(b"PK\x03\x04");
        for field in [20u16, 0, method, 0, 0x21] {
            zip.extend_from_slice(&field.to_le_bytes());
        }
        for field in sizes {
            zip.extend_from_slice(&field.to_le_bytes());
        }
        zip.extend_from_slice(&name_length.to_le_bytes());
        zip.extend_from_slice(&0u16.to_le_bytes());
        zip.extend_from_slice(name.as_bytes());
        zip.extend_from_slice(&data);
        // Central directory entry.
        directory.extend_from_slice(b"PK\x01\x02");
        for field in [20u16, 20, 0, method, 0, 0x21] {
            directory.extend_from_slice(&field.to_le_bytes());
        }
        for field in sizes {
            directory.extend_from_slice(&field.to_le_bytes());
        }
        for field in [name_length, 0, 0, 0, 0] {
            directory.extend_from_slice(&field.to_le_bytes());
        }
        directory.extend_from_slice(&0u32.to_le_bytes());
        directory.extend_from_slice(&offset.to_le_bytes());
        directory.extend_from_slice(name.as_bytes());
    }
    let offset = u32::try_from(zip.len()).unwrap();
    let count = u16::try_from(files.len()).unwrap();
    zip.extend_from_slice(&directory);
    zip.extend_from_slice(b"PK\x05\x06");
    for field in [0u16, 0, count, count] {
        zip.extend_from_slice(&field.to_le_bytes());
    }
    zip.extend_from_slice(&u32::try_from(directory.len()).unwrap().to_le_bytes());
    zip.extend_from_slice(&offset.to_le_bytes());
    zip.extend_from_slice(&0u16.to_le_bytes());
    zip
}

/// flashinfer-python 0.7.4 as a real wheel, METADATA as the real index has it, after 4 MB of
/// kernels that need not move for forge to read it and enough modules that the central
/// directory does not fit in the last 64 KB; the other FlashInfer wheels as stand-ins.
fn publish_flashinfer_0_7_4_wheel(index: &IndexServer) -> (&'static str, Vec<u8>) {
    index
        .wheel("flashinfer-cubin", "0.7.4")
        .wheel("flashinfer-jit-cache", "0.7.4+cu130");
    let recorded: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            crate::support::repository_root().join("tests/fixtures/index/flashinfer-python.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let metadata = recorded["metadata"]["0.7.4"].as_str().unwrap();
    let kernels: Vec<u8> = (0..4_000_000u32)
        .map(|at| (at.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let file = "flashinfer_python-0.7.4-py3-none-any.whl";
    let modules: Vec<String> = (0..1500)
        .map(|at| format!("flashinfer/jit/module_{at:04}.py"))
        .collect();
    let mut files: Vec<(&str, &[u8], bool)> =
        vec![("flashinfer/data/kernels.bin", &kernels, false)];
    files.extend(
        modules
            .iter()
            .map(|name| (name.as_str(), &b"pass\n"[..], false)),
    );
    files.extend([
        (
            "flashinfer_python-0.7.4.dist-info/METADATA",
            metadata.as_bytes(),
            true,
        ),
        (
            "flashinfer_python-0.7.4.dist-info/RECORD",
            b"flashinfer/__init__.py,,\n",
            true,
        ),
    ]);
    let wheel = wheel_zip(&files);
    index.publish_bytes("flashinfer-python", file, &wheel);
    (file, wheel)
}

const CUTLASS_REFUSAL: &str =
    "flashinfer-python 0.7.4 requires nvidia-cutlass-dsl>=4.8.0, not 4.6.0";

#[test]
fn without_metadata_files_the_requirements_are_read_from_the_wheel_by_range_requests() {
    let (context, _remote) = recipe_at_the_git_head();
    let before = context.read("pins.toml");
    let index = default_index();
    let (file, wheel) = publish_flashinfer_0_7_4_wheel(&index);
    let cache = context.path().join("metadata-cache");
    let cache_text = cache.to_str().unwrap();
    let to = ["pin", "bump", "flashinfer", "--to", "0.7.4"];
    let env = [
        ("FORGE_INDEX_URL", index.url()),
        ("FORGE_CACHE_DIR", cache_text.to_owned()),
    ];
    let env: Vec<(&str, &str)> = env
        .iter()
        .map(|(name, value)| (*name, value.as_str()))
        .collect();

    let run = forge(&context, &to, &env).expect_code(1);
    assert_unchanged_saying(&run, &context, &before, &[CUTLASS_REFUSAL]);
    // The end record, the central directory and the METADATA entry: three ranges.
    let (bytes, answers) = index.sent(file);
    assert!(
        bytes * 10 < wheel.len() && answers == 3,
        "{bytes} bytes in {answers} answers of a {} byte wheel",
        wheel.len()
    );
    // Kept by the wheel's sha256: a second run asks the wheel for nothing.
    use sha2::Digest as _;
    let sha256 = hex::encode(sha2::Sha256::digest(&wheel));
    assert!(cache.join("metadata").join(&sha256).is_file());
    let run = forge(&context, &to, &env).expect_code(1);
    assert_unchanged_saying(&run, &context, &before, &[CUTLASS_REFUSAL]);
    assert_eq!(
        index.sent(file),
        (bytes, answers),
        "a cached METADATA is not fetched again"
    );
}

#[test]
fn a_server_without_range_requests_gives_the_whole_wheel_once() {
    let (context, _remote) = recipe_at_the_git_head();
    let before = context.read("pins.toml");
    let index = default_index();
    let (file, wheel) = publish_flashinfer_0_7_4_wheel(&index);
    index.refuse_ranges();

    let run = forge_on(
        &context,
        &index,
        &["pin", "bump", "flashinfer", "--to", "0.7.4"],
    )
    .expect_code(1);
    assert_unchanged_saying(&run, &context, &before, &[CUTLASS_REFUSAL]);
    assert_eq!(
        index.sent(file),
        (wheel.len(), 1),
        "one answer: the whole wheel"
    );
}

#[test]
fn a_zip64_wheel_is_read_by_range_requests() {
    let (context, _remote) = recipe_at_the_git_head();
    let before = context.read("pins.toml");
    let index = default_index();
    let (file, wheel) = publish_flashinfer_0_7_4_wheel(&index);
    let wheel = zip64(&wheel);
    index.publish_bytes("flashinfer-python", file, &wheel);
    // Python's zipfile, the judge: the archive is a valid zip64 one with the same METADATA.
    let path = context.path().join(file);
    std::fs::write(&path, &wheel).unwrap();
    let check = Command::new("python3")
        .args(["-c", "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); print(z.read('flashinfer_python-0.7.4.dist-info/METADATA').decode().count('Requires-Dist'))"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );

    let run = forge_on(
        &context,
        &index,
        &["pin", "bump", "flashinfer", "--to", "0.7.4"],
    )
    .expect_code(1);
    assert_unchanged_saying(&run, &context, &before, &[CUTLASS_REFUSAL]);
    let (bytes, _) = index.sent(file);
    assert!(
        bytes * 10 < wheel.len(),
        "{bytes} bytes of a {} byte wheel",
        wheel.len()
    );
}

/// `zip` (as `wheel_zip` writes it) made a zip64 archive: each central directory entry's offset
/// moved into a zip64 extra field, and the end records saturated, pointing at a zip64 end of
/// central directory record through its locator.
fn zip64(zip: &[u8]) -> Vec<u8> {
    let u16_at = |bytes: &[u8], at: usize| u16::from_le_bytes([bytes[at], bytes[at + 1]]);
    let u32_at =
        |bytes: &[u8], at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    let end = zip.len() - 22;
    assert_eq!(&zip[end..end + 4], b"PK\x05\x06");
    let count = u16_at(zip, end + 10);
    let (size, offset) = (
        u32_at(zip, end + 12) as usize,
        u32_at(zip, end + 16) as usize,
    );
    let mut directory = Vec::new();
    let mut at = offset;
    while at < offset + size {
        let names = u16_at(zip, at + 28) as usize;
        let mut header = zip[at..at + 46].to_vec();
        let local = u64::from(u32_at(zip, at + 42));
        header[30..32].copy_from_slice(&12u16.to_le_bytes());
        header[42..46].copy_from_slice(&0xFFFF_FFFFu32.to_le_bytes());
        directory.extend_from_slice(&header);
        directory.extend_from_slice(&zip[at + 46..at + 46 + names]);
        directory.extend_from_slice(&1u16.to_le_bytes());
        directory.extend_from_slice(&8u16.to_le_bytes());
        directory.extend_from_slice(&local.to_le_bytes());
        at += 46 + names;
    }
    let mut out = zip[..offset].to_vec();
    out.extend_from_slice(&directory);
    let record = out.len() as u64;
    out.extend_from_slice(b"PK\x06\x06");
    out.extend_from_slice(&44u64.to_le_bytes());
    for field in [45u16, 45] {
        out.extend_from_slice(&field.to_le_bytes());
    }
    out.extend_from_slice(&[0u8; 8]);
    for field in [
        u64::from(count),
        u64::from(count),
        directory.len() as u64,
        offset as u64,
    ] {
        out.extend_from_slice(&field.to_le_bytes());
    }
    out.extend_from_slice(b"PK\x06\x07");
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&record.to_le_bytes());
    out.extend_from_slice(&1u32.to_le_bytes());
    out.extend_from_slice(b"PK\x05\x06");
    for field in [0u16, 0, 0xFFFF, 0xFFFF] {
        out.extend_from_slice(&field.to_le_bytes());
    }
    out.extend_from_slice(&0xFFFF_FFFFu32.to_le_bytes());
    out.extend_from_slice(&0xFFFF_FFFFu32.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

#[test]
fn a_pin_outside_the_move_holds_it_to_what_it_declares() {
    let (context, _remote) = recipe_at_the_git_head();
    // Without the lockstep group each moves on its own.
    context.edit(
        "pins.toml",
        "group = \"tvm\"                  # moves with tilelang, each at its own version\n",
        "",
    );
    context.edit(
        "pins.toml",
        "version = \"0.1.11\"\ngroup = \"tvm\"\n",
        "version = \"0.1.11\"\n",
    );
    let index = recorded_index();

    // tilelang 0.1.15 requires apache-tvm-ffi<0.1.13,>=0.1.11: 0.1.11 meets it.
    let run = forge_on(&context, &index, &["pin", "bump", "tilelang"]).expect_code(0);
    assert_contains(&run.stderr, "Bumping tilelang 0.1.11 -> 0.1.15");
    let before = context.read("pins.toml");
    // Now apache-tvm-ffi 0.1.13 would break tilelang 0.1.15, and 0.1.12 is denied.
    let run = forge_on(
        &context,
        &index,
        &["pin", "bump", "apache-tvm-ffi", "--to", "0.1.13"],
    )
    .expect_code(1);
    assert_unchanged_saying(
        &run,
        &context,
        &before,
        &["tilelang 0.1.15 requires apache-tvm-ffi<0.1.13,>=0.1.11, not 0.1.13"],
    );
    let run = forge_on(&context, &index, &["pin", "bump", "apache-tvm-ffi"]).expect_code(0);
    assert_unchanged_saying(
        &run,
        &context,
        &before,
        &["apache-tvm-ffi is at 0.1.11, the newest allowed version"],
    );
}

/// Pins in no shared group that a requirement ties together: `--to` a version whose
/// requirement the other pin does not meet moves that pin too, naming the requirement; a
/// requirement on a pin the base supplies still refuses.
#[test]
fn a_requirement_between_pins_of_no_group_makes_a_coordinated_move() {
    let (context, _remote) = recipe_at_the_git_head();
    context.edit(
        "pins.toml",
        "group = \"tvm\"                  # moves with tilelang, each at its own version\n",
        "",
    );
    context.edit(
        "pins.toml",
        "version = \"0.1.11\"\ngroup = \"tvm\"\n",
        "version = \"0.1.11\"\n",
    );
    let index = recorded_index();
    index.publish(
        "tilelang",
        &["tilelang-0.1.16-cp39-abi3-manylinux_2_34_aarch64.whl"],
    );
    index.publish_bytes(
        "tilelang",
        "tilelang-0.1.16-cp39-abi3-manylinux_2_34_aarch64.whl.metadata",
        b"Name: tilelang\nVersion: 0.1.16\nRequires-Dist: apache-tvm-ffi<0.1.15,>=0.1.13\n",
    );
    let before = context.read("pins.toml");

    let run = forge_on(
        &context,
        &index,
        &["pin", "bump", "tilelang", "--to", "0.1.16"],
    )
    .expect_code(0);
    assert_contains(
        &run.stderr,
        "Moving apache-tvm-ffi 0.1.11 -> 0.1.14.post1 with the move of tilelang: tilelang 0.1.16 requires apache-tvm-ffi<0.1.15,>=0.1.13, not 0.1.11",
    );
    assert_contains(
        &run.stderr,
        "Bumping tilelang 0.1.11 -> 0.1.16 (the move of tilelang: apache-tvm-ffi 0.1.11 -> 0.1.14.post1)",
    );
    assert_eq!(
        context.read("pins.toml"),
        before
            .replacen(
                "version = \"0.1.11\"\ndeny",
                "version = \"0.1.14.post1\"\ndeny",
                1
            )
            .replacen(
                "module = \"tilelang\"\nversion = \"0.1.11\"",
                "module = \"tilelang\"\nversion = \"0.1.16\"",
                1
            )
    );
}

#[test]
fn a_python_pin_keeps_its_local_label() {
    // Installed by the layer: a pin the base supplies does not move alone.
    let (context, before, index) = edited_recipe_and_index(
        "version = \"4.6.0\"\ninstall = false",
        "version = \"4.6.0+cu130\"\ninstall = true",
    );
    index
        .wheel("nvidia-cutlass-dsl", "4.6.0+cu130")
        .wheel("nvidia-cutlass-dsl", "4.7.0+cu130")
        // Newer, but a build for another CUDA: not this pin's.
        .wheel("nvidia-cutlass-dsl", "4.8.0+cu128")
        .wheel("nvidia-cutlass-dsl", "4.8.0");

    let outdated = forge_on(&context, &index, &["--json", "pin", "outdated"]);
    let document = outdated.json();
    // A lookup that fails (DeepGEMM's remote is not reachable here) says why in words the
    // machine's resolver chooses: the shape keeps only that there is a note.
    let mut shape = document.clone();
    for pin in shape["pins"].as_array_mut().unwrap() {
        if pin["state"] == "error" {
            pin["note"] = serde_json::json!("<why the lookup failed>");
        }
    }
    insta::assert_snapshot!(
        "json_pin_outdated",
        crate::support::json_shape(&shape, context.path())
    );
    let cutlass = document["pins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|pin| pin["name"] == "cutlass-dsl")
        .unwrap()
        .clone();
    assert_eq!(cutlass["newest"], "4.7.0+cu130", "{cutlass}");

    let run = forge_on(&context, &index, &["pin", "bump", "cutlass-dsl"]).expect_code(0);
    assert_contains(&run.stderr, "cutlass-dsl 4.6.0+cu130 -> 4.7.0+cu130");
    let moved = ["version = \"4.6.0+cu130\"", "version = \"4.7.0+cu130\""];
    assert_moved(&context, &before, moved[0], moved[1]);
    // --to may name the label or leave it to the pin; another label is refused.
    context.write("pins.toml", &before);
    let to = |version| ["pin", "bump", "cutlass-dsl", "--to", version];
    forge_on(&context, &index, &to("4.7.0+cu130")).expect_code(0);
    assert_moved(&context, &before, moved[0], moved[1]);
    let run = forge_on(&context, &index, &to("4.8.0+cu128")).expect_code(2);
    assert_contains(
        &run.stderr,
        "cutlass-dsl carries the label +cu130, not +cu128",
    );
}

#[test]
fn a_denied_version_is_refused_with_its_reason_even_with_to_and_force() {
    let (context, before, index) = lockstep_recipe_and_index();
    index
        .wheel("apache-tvm-ffi", "0.1.12")
        .wheel("tilelang", "0.1.12");

    for args in [
        &["pin", "bump", "apache-tvm-ffi", "--to", "0.1.12"][..],
        &["pin", "bump", "apache-tvm-ffi", "--to", "0.1.12", "--force"][..],
    ] {
        let run = forge_on(&context, &index, args).expect_code(1);
        assert_unchanged_saying(
            &run,
            &context,
            &before,
            &[
                "aborts tilelang: duplicate type-attr registration",
                "hint: the deny list",
            ],
        );
    }
    // Without --to the newest allowed version is the current one: said, with the reason.
    for pin in [
        "apache-tvm-ffi",
        // The partner's deny list holds for tilelang too: they move together.
        "tilelang",
    ] {
        let run = forge_on(&context, &index, &["pin", "bump", pin]).expect_code(0);
        assert_unchanged_saying(
            &run,
            &context,
            &before,
            &[
                &format!(
                    "skipping {pin} 0.1.12: denied for apache-tvm-ffi: aborts tilelang: duplicate type-attr registration"
                ),
                &format!(
                    "{pin} is at 0.1.11, the newest allowed version (1 newer held back; the deny list"
                ),
            ],
        );
    }
}

#[test]
fn a_lockstep_group_moves_together() {
    let (context, before, index) = lockstep_recipe_and_index();
    index
        .wheel("apache-tvm-ffi", "0.1.12")
        .wheel("tilelang", "0.1.12")
        .wheel("apache-tvm-ffi", "0.1.13")
        .wheel("tilelang", "0.1.13")
        .wheel("tilelang", "0.1.14");

    let run = forge_on(&context, &index, &["pin", "bump", "tilelang"]).expect_code(0);
    // 0.1.14 lacks its partner and is skipped with that reason; both pins land on 0.1.13.
    assert_contains(
        &run.stderr,
        "warning: skipping tilelang 0.1.14: group partner apache-tvm-ffi",
    );
    let expected = before
        .replacen(
            "version = \"0.1.11\"\ngroup = \"tvm\"                  # moves",
            "version = \"0.1.13\"\ngroup = \"tvm\"                  # moves",
            1,
        )
        .replacen(
            "version = \"0.1.11\"\ngroup = \"tvm\"\n",
            "version = \"0.1.13\"\ngroup = \"tvm\"\n",
            1,
        );
    assert_eq!(context.read("pins.toml"), expected);
    assert!(!expected.contains("0.1.11\""), "both members must move");
}

#[test]
fn a_group_partner_missing_the_version_refuses_the_bump() {
    let (context, before, index) = lockstep_recipe_and_index();
    index.wheel("tilelang", "0.1.13");

    let run = forge_on(&context, &index, &["pin", "bump", "tilelang"]).expect_code(0);
    assert_unchanged_saying(
        &run,
        &context,
        &before,
        &[
            "skipping tilelang 0.1.13: group partner apache-tvm-ffi (apache-tvm-ffi 0.1.13) is not on",
            "tilelang is at 0.1.11, the newest allowed version",
        ],
    );
    let run = forge_on(
        &context,
        &index,
        &["pin", "bump", "tilelang", "--to", "0.1.13"],
    )
    .expect_code(1);
    assert_unchanged_saying(
        &run,
        &context,
        &before,
        &["hint: a lockstep group moves together"],
    );
}

#[test]
fn a_wheel_set_is_refused_when_one_wheel_lacks_the_version() {
    let (context, before, index) = recipe_and_index();
    index
        .wheel("flashinfer-python", "0.6.15")
        .wheel("flashinfer-cubin", "0.6.15")
        // Published for another CUDA build only.
        .wheel("flashinfer-jit-cache", "0.6.15+cu128");

    let run = forge_on(&context, &index, &["pin", "bump", "flashinfer"]).expect_code(0);
    let missing = format!(
        "wheel flashinfer-jit-cache 0.6.15+cu130 is not on {}",
        index.url()
    );
    assert_unchanged_saying(
        &run,
        &context,
        &before,
        &[&missing, "flashinfer is at 0.6.14"],
    );
}

#[test]
fn a_wheel_the_index_does_not_know_refuses_the_set_and_a_missing_pin_package_is_an_error() {
    let context = TestContext::default_recipe_on_indexes();
    let before = context.read("pins.toml");
    let index = IndexServer::start();
    index
        .wheel("flashinfer-python", "0.6.15")
        .wheel("flashinfer-cubin", "0.6.15");
    let url = index.url();

    let run = forge_on(&context, &index, &["pin", "bump", "flashinfer"]).expect_code(0);
    let missing = format!("wheel flashinfer-jit-cache 0.6.15+cu130 is not on {url}");
    assert_unchanged_saying(&run, &context, &before, &[&missing]);

    // The pin's own package missing is not a refusal but a lookup that failed.
    let run = forge_on(&context, &index, &["pin", "bump", "tilelang"]).expect_code(2);
    let missing = format!("{url}/tilelang/ has no package `tilelang` (HTTP 404)");
    assert_unchanged_saying(&run, &context, &before, &[&missing]);
}

#[test]
fn an_allowed_range_holds_unless_forced() {
    let (context, before, index) = edited_recipe_and_index(
        "version = \"0.6.14\"\n",
        "version = \"0.6.14\"\nallow = \">=0.6.14,<0.6.15\"\n",
    );
    offer_flashinfer_0_6_15(&index);

    let run = forge_on(&context, &index, &["pin", "bump", "flashinfer"]).expect_code(0);
    assert_unchanged_saying(
        &run,
        &context,
        &before,
        &[
            "outside the allowed range >=0.6.14,<0.6.15 of flashinfer",
            "pass --force",
        ],
    );

    let run = forge_on(&context, &index, &["pin", "bump", "flashinfer", "--force"]).expect_code(0);
    assert_contains(&run.stderr, "--force: moving flashinfer to 0.6.15");
    assert_moved(&context, &before, FLASHINFER_0_6_14, FLASHINFER_0_6_15);
    // The recipe still loads, with a warning about the range.
    let list = forge(&context, &["pin", "list"], &[]).expect_code(0);
    assert_contains(&list.stderr, "outside its allowed range");
}

#[test]
fn prereleases_are_offered_only_with_pre_and_yanked_files_never() {
    let (context, before, index) = recipe_and_index();
    for package in ["flashinfer-python", "flashinfer-cubin"] {
        index.wheel(package, "0.6.15rc1").wheel(package, "0.6.16");
    }
    index
        .wheel("flashinfer-jit-cache", "0.6.15rc1+cu130")
        .wheel("flashinfer-jit-cache", "0.6.16+cu130");
    index.yank(
        "flashinfer-python",
        "flashinfer_python-0.6.16-py3-none-manylinux_2_28_aarch64.whl",
    );

    let run = forge_on(&context, &index, &["pin", "bump", "flashinfer"]).expect_code(0);
    assert_unchanged_saying(
        &run,
        &context,
        &before,
        &["flashinfer is at 0.6.14, the newest version on offer"],
    );

    forge_on(&context, &index, &["pin", "bump", "flashinfer", "--pre"]).expect_code(0);
    assert_moved(
        &context,
        &before,
        FLASHINFER_0_6_14,
        "version = \"0.6.15rc1\"",
    );
}

#[test]
fn dry_run_prints_both_diffs_and_writes_nothing() {
    let context = TestContext::default_recipe_on_indexes();
    let before = context.read("pins.toml");
    let modified = std::fs::metadata(context.path().join("pins.toml"))
        .unwrap()
        .modified()
        .unwrap();
    let index = default_index();
    offer_flashinfer_0_6_15(&index);

    let run = forge_on(
        &context,
        &index,
        &["pin", "bump", "flashinfer", "--dry-run"],
    )
    .expect_code(0);
    assert_contains(&run.stdout, "--- a/pins.toml\n+++ b/pins.toml\n");
    assert_contains(
        &run.stdout,
        "\n-version = \"0.6.14\"\n+version = \"0.6.15\"\n",
    );
    assert_contains(&run.stdout, "--- a/Dockerfile\n+++ b/Dockerfile\n");
    assert_contains(
        &run.stdout,
        "\n+RUN python3 -m pip install --no-cache-dir --no-deps flashinfer-python==0.6.15 flashinfer-cubin==0.6.15 \\\n",
    );
    assert_unchanged_saying(
        &run,
        &context,
        &before,
        &["Invalidated 6 of 15 steps", "a dry run writes nothing"],
    );
    let after = std::fs::metadata(context.path().join("pins.toml"))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(modified, after, "a dry run must not touch the file");
}

#[test]
fn json_reports_the_assignments_and_the_invalidated_steps() {
    let context = TestContext::default_recipe_on_indexes();
    let index = default_index();
    offer_flashinfer_0_6_15(&index);
    let run = forge_on(&context, &index, &["--json", "pin", "bump", "flashinfer"]).expect_code(0);
    let document = run.json();
    insta::assert_snapshot!(
        "json_pin_bump",
        crate::support::json_shape(&document, context.path())
    );
    assert_eq!(document["to"], "0.6.15");
    assert_eq!(document["written"], true);
    assert_eq!(document["assignments"][0]["table"], "pins.flashinfer");
    assert_eq!(document["assignments"][0]["value"], "0.6.15");
    assert_eq!(document["invalidated"]["total"], 15);
    assert_eq!(document["invalidated"]["steps"][0]["number"], 10);
}

#[test]
fn each_wheel_is_looked_up_on_its_own_index_and_pip_settings_choose_the_default() {
    let context = TestContext::default_recipe_on_indexes();
    let main = default_index();
    main.wheel("flashinfer-python", "0.6.15")
        .wheel("flashinfer-cubin", "0.6.15");
    let wheels = IndexServer::start();
    wheels.wheel("flashinfer-jit-cache", "0.6.14+cu130");
    context.edit(
        "pins.toml",
        "index = \"https://flashinfer.ai/whl/cu130\"",
        &format!("index = \"{}\"", wheels.url()),
    );
    let before = context.read("pins.toml");

    // The jit-cache wheel is missing on its own index: refused, naming that index.
    let run = forge(
        &context,
        &["pin", "bump", "flashinfer"],
        &[("PIP_INDEX_URL", &main.url())],
    )
    .expect_code(0);
    let missing = format!(
        "wheel flashinfer-jit-cache 0.6.15+cu130 is not on {}",
        wheels.url()
    );
    assert_unchanged_saying(&run, &context, &before, &[&missing]);
    assert!(
        main.requests()
            .iter()
            .all(|path| !path.contains("jit-cache")),
        "the jit-cache wheel must be asked on its own index: {:?}",
        main.requests()
    );

    // Published there: the bump goes through, with the default index from a pip config file.
    wheels.wheel("flashinfer-jit-cache", "0.6.15+cu130");
    let config = context.path().join("pip.conf");
    std::fs::write(&config, format!("[global]\nindex-url = {}\n", main.url())).unwrap();
    forge(
        &context,
        &["pin", "bump", "flashinfer"],
        &[("PIP_CONFIG_FILE", config.to_str().unwrap())],
    )
    .expect_code(0);
    assert_moved(&context, &before, FLASHINFER_0_6_14, FLASHINFER_0_6_15);
}

const INDEX_PASSWORD: &str = "n3trc-s3cret-pw";

/// pip, the judge of which index set a configuration names: the versions of `package` it finds
/// for the image's platform with `env`, as `pip index versions` prints them.
fn pip_index_versions(context: &TestContext, package: &str, env: &[(&str, &str)]) -> String {
    let home = context.path().join(".home");
    let output = Command::new("python3")
        .args(["-m", "pip", "index", "versions", package])
        .args([
            "--platform",
            "manylinux_2_28_aarch64",
            "--python-version",
            "3.12",
        ])
        .args([
            "--only-binary",
            ":all:",
            "--disable-pip-version-check",
            "--no-cache-dir",
        ])
        .env_remove("PIP_INDEX_URL")
        .env_remove("PIP_EXTRA_INDEX_URL")
        .env_remove("PIP_CONFIG_FILE")
        .env_remove("NETRC")
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_CONFIG_DIRS", home.join("xdg"))
        .envs(env.iter().copied())
        .output()
        .expect("python3 -m pip");
    assert!(
        output.status.success(),
        "pip: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// pip's configuration as pip reads it: the index from `PIP_INDEX_URL` or pip.conf, the extra
/// indexes from `PIP_EXTRA_INDEX_URL` (space separated) or pip.conf's `extra-index-url`, a
/// `PIP_CONFIG_FILE` that exists shutting the user's pip.conf out, and netrc credentials for a
/// password-protected index; pip finds the same versions with the same settings, and the
/// password is never printed.
#[test]
fn pip_settings_and_netrc_reach_a_password_protected_index_as_pip_does() {
    let (context, _remote) = recipe_at_the_git_head();
    let protected = default_index();
    protected.require_login("forge", INDEX_PASSWORD);
    let extra = IndexServer::start();
    extra.wheel("tilelang", "0.1.12");
    context.edit(
        "pins.toml",
        "index = \"https://flashinfer.ai/whl/cu130\"",
        &format!("index = \"{}\"", protected.url()),
    );
    let netrc = context.path().join("netrc");
    std::fs::write(
        &netrc,
        format!("machine 127.0.0.1\n  login forge\n  password {INDEX_PASSWORD}\n"),
    )
    .unwrap();
    let pip_conf = context.path().join("pip.conf");
    std::fs::write(
        &pip_conf,
        format!(
            "[global]\nindex-url = {}\nextra-index-url =\n    {}\n",
            protected.url(),
            extra.url()
        ),
    )
    .unwrap();
    // The user's pip.conf names an index nobody serves: pip skips it when PIP_CONFIG_FILE exists.
    let user_conf = context.path().join(".home/.config/pip");
    std::fs::create_dir_all(&user_conf).unwrap();
    std::fs::write(
        user_conf.join("pip.conf"),
        format!(
            "[global]\nindex-url = http://127.0.0.1:{}/simple\n",
            free_port()
        ),
    )
    .unwrap();
    let (netrc, pip_conf) = (netrc.to_str().unwrap(), pip_conf.to_str().unwrap());
    // Two extra indexes, space separated; the second one has no tilelang at all.
    let empty = IndexServer::start();
    let both = format!("{} {}", extra.url(), empty.url());
    let protected_url = protected.url();
    let settings: [Vec<(&str, &str)>; 2] = [
        vec![("PIP_CONFIG_FILE", pip_conf), ("NETRC", netrc)],
        vec![
            ("PIP_INDEX_URL", &protected_url),
            ("PIP_EXTRA_INDEX_URL", &both),
            ("NETRC", netrc),
        ],
    ];
    for env in &settings {
        let run = forge(&context, &["pin", "outdated"], env).expect_code(0);
        assert_eq!(
            outdated_row(&run.stdout, "tilelang"),
            ["tilelang", "0.1.11", "0.1.12", "0.1.12", "outdated"],
            "{env:?}"
        );
        assert_eq!(
            outdated_row(&run.stdout, "flashinfer"),
            ["flashinfer", "0.6.14", "0.6.14", "0.6.14", "up-to-date"]
        );
        assert!(!run.stdout.contains(INDEX_PASSWORD) && !run.stderr.contains(INDEX_PASSWORD));
        assert!(
            !protected
                .requests()
                .iter()
                .any(|line| line.starts_with("refused ")),
            "{:?}",
            protected.requests()
        );
        assert_contains(
            &pip_index_versions(&context, "tilelang", env),
            "Available versions: 0.1.12, 0.1.11",
        );
    }

    // Without the netrc entry the index refuses, and forge says so, naming the index.
    let run = forge(
        &context,
        &["pin", "outdated"],
        &[("PIP_CONFIG_FILE", pip_conf)],
    )
    .expect_code(2);
    assert_contains(
        &run.stdout,
        &format!("the package index at {}/", protected.url()),
    );
    assert_contains(&run.stdout, "answered HTTP 401");
}

#[test]
fn the_pypi_json_api_is_read_for_an_index_url_ending_in_pypi() {
    let context = TestContext::default_recipe_on_indexes();
    let index = default_index();
    offer_flashinfer_0_6_15(&index);
    index.wheel("flashinfer-python", "0.6.16").yank(
        "flashinfer-python",
        "flashinfer_python-0.6.16-py3-none-manylinux_2_28_aarch64.whl",
    );
    forge(
        &context,
        &[
            "pin",
            "bump",
            "flashinfer",
            "--index-url",
            &index.json_api_url(),
        ],
        &[],
    )
    .expect_code(0);
    assert_contains(
        &context.read("pins.toml"),
        "version = \"0.6.15\"\nmodule = \"flashinfer\"",
    );
    assert!(
        index
            .requests()
            .iter()
            .any(|path| path == "/pypi/flashinfer-jit-cache/json"),
        "{:?}",
        index.requests()
    );
}

#[test]
fn the_index_of_pins_toml_is_used_when_pip_names_none() {
    let context = TestContext::default_recipe_on_indexes();
    let index = default_index();
    index
        .wheel("tilelang", "0.1.13")
        .wheel("apache-tvm-ffi", "0.1.13");
    context.edit(
        "pins.toml",
        "[env]\n",
        &format!("[index]\nurl = \"{}\"\n\n[env]\n", index.url()),
    );
    forge(&context, &["pin", "bump", "tilelang"], &[]).expect_code(0);
    assert_contains(
        &context.read("pins.toml"),
        "version = \"0.1.13\"\ngroup = \"tvm\"\n",
    );
    assert!(
        index
            .requests()
            .iter()
            .any(|path| path == "/simple/tilelang/")
    );
}

#[test]
fn an_unknown_pin_suggests_the_closest_name() {
    let context = TestContext::default_recipe_on_indexes();
    let before = context.read("pins.toml");
    let run = forge(&context, &["pin", "bump", "flashinfr"], &[]).expect_code(2);
    assert_unchanged_saying(
        &run,
        &context,
        &before,
        &[
            "error: pins.toml has no pin `flashinfr`",
            "hint: did you mean `flashinfer`?",
        ],
    );
}

#[test]
fn an_unreachable_index_names_the_url_and_changes_nothing() {
    let context = TestContext::default_recipe_on_indexes();
    let before = context.read("pins.toml");
    // A port nobody listens on: bind one, note it, close it.
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/simple");
    let run = forge(
        &context,
        &["pin", "bump", "flashinfer", "--index-url", &url],
        &[],
    )
    .expect_code(2);
    let unreachable = format!("cannot reach the package index at {url}/flashinfer-python/");
    assert_unchanged_saying(
        &run,
        &context,
        &before,
        &["pins.toml was not changed", &unreachable, "hint: "],
    );
}

#[test]
fn a_version_missing_from_the_index_is_an_error() {
    let (context, before, index) = recipe_and_index();
    let run = forge_on(
        &context,
        &index,
        &["pin", "bump", "flashinfer", "--to", "0.6.99"],
    )
    .expect_code(2);
    let missing = format!("error: flashinfer-python 0.6.99 is not on {}", index.url());
    assert_unchanged_saying(
        &run,
        &context,
        &before,
        &[&missing, "hint: `forge pin outdated` lists"],
    );
}

#[test]
fn outdated_lists_current_allowed_newest_and_what_holds_each_back() {
    let context = TestContext::default_recipe_on_indexes();
    let before = context.read("pins.toml");
    let remote = GitRemote::new();
    with_git_remote(&context, &remote);
    context.edit(
        "pins.toml",
        "rev = \"a6b593d2826719dcf4892609af7b84ee23aaf32a\"",
        &format!("rev = \"{}\"", remote.first),
    );
    let before_outdated = context.read("pins.toml");
    let index = default_index();
    offer_flashinfer_0_6_15(&index);
    index
        .wheel("apache-tvm-ffi", "0.1.12")
        .wheel("tilelang", "0.1.12");

    let run = forge_on(&context, &index, &["pin", "outdated"]).expect_code(0);
    let row = |name: &str| outdated_row(&run.stdout, name);
    assert_eq!(
        row("flashinfer"),
        ["flashinfer", "0.6.14", "0.6.15", "0.6.15", "outdated"]
    );
    // The group moves as one, not in lockstep: tilelang 0.1.12 goes, apache-tvm-ffi stays.
    assert_eq!(
        row("tilelang"),
        ["tilelang", "0.1.11", "0.1.12", "0.1.12", "outdated"]
    );
    assert_eq!(
        row("apache-tvm-ffi"),
        ["apache-tvm-ffi", "0.1.11", "0.1.11", "0.1.12", "held"]
    );
    assert_eq!(
        row("deepgemm"),
        [
            "deepgemm",
            &remote.first[..7],
            &remote.head[..7],
            &remote.head[..7],
            "outdated"
        ]
    );
    assert_eq!(row("cutlass-dsl")[4], "in-base");
    assert_eq!(row("nccl")[4], "in-base");
    assert_contains(
        &run.stdout,
        "apache-tvm-ffi 0.1.12: denied for apache-tvm-ffi: aborts tilelang: duplicate type-attr registration (denied)",
    );

    let json = forge_on(&context, &index, &["--json", "pin", "outdated"])
        .expect_code(0)
        .json();
    let pins = json["pins"].as_array().unwrap();
    let ffi = pins
        .iter()
        .find(|pin| pin["name"] == "apache-tvm-ffi")
        .unwrap();
    assert_eq!(ffi["newest_allowed"], "0.1.11");
    assert_eq!(ffi["newest"], "0.1.12");
    assert_eq!(ffi["held"][0]["reasons"][0]["kind"], "denied");
    assert_eq!(context.read("pins.toml"), before_outdated);
    assert_ne!(before, before_outdated);
}

/// The default recipe with DeepGEMM at the head of a local remote, so that only the index
/// decides what can move; the remote is returned to live as long as the recipe.
fn recipe_at_the_git_head() -> (TestContext, GitRemote) {
    let context = TestContext::default_recipe_on_indexes();
    let remote = GitRemote::new();
    with_git_remote(&context, &remote);
    context.edit(
        "pins.toml",
        "rev = \"a6b593d2826719dcf4892609af7b84ee23aaf32a\"",
        &format!("rev = \"{}\"", remote.head),
    );
    (context, remote)
}

#[test]
fn outdated_exit_code_is_1_only_when_a_pin_can_move() {
    let (context, _remote) = recipe_at_the_git_head();
    let index = default_index();
    // Held back only (denied): nothing can move.
    index.wheel("apache-tvm-ffi", "0.1.12");
    forge_on(&context, &index, &["pin", "outdated"]).expect_code(0);
    forge_on(&context, &index, &["pin", "outdated", "--exit-code"]).expect_code(0);

    offer_flashinfer_0_6_15(&index);
    forge_on(&context, &index, &["pin", "outdated"]).expect_code(0);
    let run = forge_on(&context, &index, &["pin", "outdated", "--exit-code"]).expect_code(1);
    assert_contains(&run.stderr, "flashinfer can move (--exit-code)");
    forge_on(
        &context,
        &index,
        &["--json", "pin", "outdated", "--exit-code"],
    )
    .expect_code(1);
}

#[test]
fn outdated_notes_say_each_kind_of_reason_once_with_the_versions_it_holds_back() {
    let (context, _remote) = recipe_at_the_git_head();
    let index = default_index();
    // Two versions whose cubin and jit-cache wheels are missing: one wheel-set line.
    index
        .wheel("flashinfer-python", "0.6.15")
        .wheel("flashinfer-python", "0.6.16");
    let run = forge_on(&context, &index, &["pin", "outdated"]).expect_code(0);
    let lines: Vec<&str> = run
        .stdout
        .lines()
        .filter(|line| line.starts_with("flashinfer "))
        .collect();
    assert_eq!(lines.len(), 2, "{}", run.stdout);
    let url = index.url();
    assert_eq!(
        lines[1],
        format!(
            "flashinfer 0.6.16, 0.6.15: wheel flashinfer-cubin is not on {url}; wheel flashinfer-jit-cache is not on {url} (wheel-set)"
        )
    );
}

#[test]
fn outdated_with_an_unreachable_index_shows_what_it_could_and_fails() {
    let context = TestContext::default_recipe_on_indexes();
    let remote = GitRemote::new();
    with_git_remote(&context, &remote);
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/simple");
    let run = forge(&context, &["pin", "outdated", "--index-url", &url], &[]).expect_code(2);
    // The git pin was still looked up; the index pins say why they could not be.
    let deepgemm = run
        .stdout
        .lines()
        .find(|line| line.starts_with("deepgemm "))
        .unwrap_or_default();
    assert_contains(deepgemm, "outdated");
    assert_contains(
        &run.stdout,
        &format!("flashinfer: cannot reach the package index at {url}/flashinfer-python/"),
    );
    assert_contains(&run.stderr, "error: forge pin outdated is incomplete");
    assert_contains(
        &run.stderr,
        "could not look up apache-tvm-ffi, flashinfer, tilelang",
    );
}

/// The one commit of the series that conflicts with the remote's later commits.
const TUNE_THE_KERNEL: (&str, &[(&str, &str)]) =
    ("tune the kernel", &[("kernel.txt", "first, tuned\n")]);

#[test]
fn a_git_bump_checks_the_series_that_patches_it_and_moves_its_target() {
    let (context, remote) = with_a_deepgemm_series(&[
        ("add extra", &[("extra.txt", "extra\n")]),
        ("add docs", &[("docs.txt", "docs\n")]),
    ]);
    let before = context.read("pins.toml");

    let run = forge(&context, &["pin", "bump", "deepgemm"], &[]).expect_code(0);
    assert_contains(&run.stderr, "Applies 0001-add-extra.patch");
    assert_contains(
        &run.stderr,
        "Upstream 0002-add-docs.patch (already in the new revision)",
    );
    // The pin and the series' target move together; nothing else changes.
    assert_eq!(
        context.read("pins.toml"),
        before
            .replacen(
                &format!("rev = \"{}\"\n", remote.first),
                &format!("rev = \"{}\"\n", remote.head),
                1
            )
            .replacen(
                &format!("rev = \"{}\" }}", remote.first),
                &format!("rev = \"{}\" }}", remote.head),
                1
            )
    );
}

#[test]
fn a_git_bump_where_the_series_conflicts_is_refused_unless_forced() {
    let (context, remote) = with_a_deepgemm_series(&[TUNE_THE_KERNEL]);
    let before = context.read("pins.toml");

    let run = forge(&context, &["pin", "bump", "deepgemm"], &[]).expect_code(1);
    assert_unchanged_saying(
        &run,
        &context,
        &before,
        &[
            "Conflicts 0001-tune-the-kernel.patch (kernel.txt",
            "error: refusing to move deepgemm to",
            "hint: rebase the series",
        ],
    );

    let run = forge(&context, &["pin", "bump", "deepgemm", "--force"], &[]).expect_code(0);
    assert_contains(&run.stderr, "warning: --force: moving deepgemm");
    assert_contains(
        &context.read("pins.toml"),
        &format!("rev = \"{}\"\nmodule", remote.head),
    );
}

#[test]
fn a_git_pin_moves_to_the_branch_head_as_a_full_id() {
    let context = TestContext::default_recipe_on_indexes();
    let remote = GitRemote::new();
    let before = with_git_remote(&context, &remote);

    let run = forge(&context, &["pin", "bump", "deepgemm"], &[]).expect_code(0);
    assert_deepgemm_at(&context, &before, &remote.head);
    assert_contains(
        &run.stderr,
        &format!("deepgemm a6b593d -> {}", &remote.head[..7]),
    );
    // DeepGEMM is step 8: it and every step after it run again.
    assert_contains(&run.stderr, "Invalidated 8 of 15 steps, from step 8");

    // At the head already: nothing to do, nothing written.
    let now = context.read("pins.toml");
    forge(&context, &["pin", "bump", "deepgemm"], &[]).expect_code(0);
    assert_eq!(context.read("pins.toml"), now);
}

#[test]
fn a_short_revision_given_with_to_is_resolved_on_the_branch() {
    let context = TestContext::default_recipe_on_indexes();
    let remote = GitRemote::new();
    let before = with_git_remote(&context, &remote);

    assert_a_short_revision_resolves(&context, &before, &remote, &[]);

    // A commit of another branch is not on nv_dev: refused, nothing changed.
    let now = context.read("pins.toml");
    let run = forge(
        &context,
        &["pin", "bump", "deepgemm", "--to", &remote.side[..10]],
        &[],
    )
    .expect_code(2);
    let not_on = format!("revision {} is not on branch nv_dev", &remote.side[..10]);
    assert_unchanged_saying(&run, &context, &now, &[&not_on]);
}

#[test]
fn an_unreachable_git_remote_is_an_error() {
    let context = TestContext::default_recipe_on_indexes();
    let missing = context.path().join("no-such-remote.git");
    let before = deepgemm_from(&context, &format!("file://{}", missing.display()));
    let run = forge(&context, &["pin", "bump", "deepgemm"], &[]).expect_code(2);
    assert_unchanged_saying(
        &run,
        &context,
        &before,
        &[
            "pins.toml was not changed",
            "cannot reach the git remote file://",
            "hint: check the pin's `url`",
        ],
    );
}

/// The remote's repository served over HTTP by `git http-backend`, and its URL there.
fn over_http(remote: &GitRemote) -> (GitHttpServer, String) {
    let server = GitHttpServer::start(remote.folder.path());
    let url = server.url("remote.git");
    (server, url)
}

/// The default recipe, a remote, and its repository served over HTTP with the URL there.
fn recipe_and_remote_over_http() -> (TestContext, GitRemote, GitHttpServer, String) {
    let remote = GitRemote::new();
    let (server, url) = over_http(&remote);
    (
        TestContext::default_recipe_on_indexes(),
        remote,
        server,
        url,
    )
}

/// Panics, saying `what`, unless `server` was sent `request` (method and path) by forge's own
/// HTTP client.
#[track_caller]
fn assert_forge_sent(server: &GitHttpServer, request: &str, what: &str) {
    let sent = format!("{request} (forge/{})", env!("CARGO_PKG_VERSION"));
    let requests = server.requests();
    assert!(requests.contains(&sent), "{what}: {requests:?}");
}

#[test]
fn a_git_pin_over_smart_http_moves_to_the_head_and_resolves_a_short_revision() {
    let (context, remote, server, url) = recipe_and_remote_over_http();
    let before = deepgemm_from(&context, &url);

    // A short revision is not a branch tip: resolving it fetches the branch.
    assert_a_short_revision_resolves(&context, &before, &remote, &[]);
    // Listed and fetched by forge's own HTTP client, not libgit2's.
    assert_forge_sent(
        &server,
        "GET /remote.git/info/refs?service=git-upload-pack",
        "the refs are listed over HTTP",
    );
    assert_forge_sent(
        &server,
        "POST /remote.git/git-upload-pack",
        "the branch is fetched over HTTP",
    );

    // The branch head is read from the listing alone.
    forge(&context, &["pin", "bump", "deepgemm"], &[]).expect_code(0);
    assert_deepgemm_at(&context, &before, &remote.head);
}

#[test]
fn a_series_onto_a_git_remote_over_http_is_fetched_and_checked() {
    let (context, remote) = with_a_deepgemm_series(&[TUNE_THE_KERNEL]);
    let (server, url) = over_http(&remote);
    let served = context.read("pins.toml").replace(&remote.url(), &url);
    context.write("pins.toml", &served);

    // The series conflicts with the new head: seen only if both revisions were fetched.
    let run = forge(&context, &["pin", "bump", "deepgemm"], &[]).expect_code(1);
    assert_unchanged_saying(
        &run,
        &context,
        &served,
        &["Conflicts 0001-tune-the-kernel.patch (kernel.txt"],
    );
    assert_forge_sent(
        &server,
        "POST /remote.git/git-upload-pack",
        "the patch target is fetched over HTTP by forge",
    );
}

#[test]
fn a_git_pin_over_https_is_verified_against_the_trust_store_and_a_stranger_is_refused() {
    let (context, remote, server, url) = recipe_and_remote_over_http();
    let certificates = Certificates::make();
    let address = url
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
        .expect("an http URL");
    let terminator = TlsTerminator::start(&certificates, address, false);
    let served = format!("https://127.0.0.1:{}/remote.git", terminator.port());
    let before = deepgemm_from(&context, &served);

    // A CA the machine does not trust: the server is refused before any git is spoken.
    let stranger = certificates.file("other-ca.pem");
    let run = forge(
        &context,
        &["pin", "bump", "deepgemm"],
        &[("SSL_CERT_FILE", stranger.to_str().unwrap())],
    )
    .expect_code(2);
    let unreachable = format!("cannot reach the git remote {served}");
    assert_unchanged_saying(&run, &context, &before, &[&unreachable, "certificate"]);
    assert!(server.requests().is_empty(), "{:?}", server.requests());

    // Trusted: listed and fetched through TLS.
    let ca = certificates.file("ca.pem");
    let env = [("SSL_CERT_FILE", ca.to_str().unwrap())];
    assert_a_short_revision_resolves(&context, &before, &remote, &env);
    assert_forge_sent(
        &server,
        "POST /remote.git/git-upload-pack",
        "fetched through TLS",
    );
}

#[test]
fn an_http_git_remote_that_is_missing_or_not_git_names_the_url_and_what_it_answered() {
    let (context, remote, server, _) = recipe_and_remote_over_http();
    let missing = server.url("no-such.git");
    let before = deepgemm_from(&context, &missing);
    let run = forge(&context, &["pin", "bump", "deepgemm"], &[]).expect_code(2);
    let answered = format!(
        "cannot reach the git remote {missing}: {missing}/info/refs?service=git-upload-pack answered HTTP 404"
    );
    assert_unchanged_saying(&run, &context, &before, &[&answered]);

    // A plain web server holding the repository (git's "dumb" protocol, which forge does not
    // speak): its files are not taken for a smart server's ref listing.
    git(
        &remote.folder.path().join("remote.git"),
        &["update-server-info"],
    );
    let web = StaticWebServer::start(remote.folder.path());
    let dumb = format!("http://{}/remote.git", web.address);
    context.write("pins.toml", &before.replace(&missing, &dumb));
    let run = forge(&context, &["pin", "bump", "deepgemm"], &[]).expect_code(2);
    let unreachable = format!("cannot reach the git remote {dumb}");
    assert_unchanged_saying(
        &run,
        &context,
        &before.replace(&missing, &dumb),
        &[&unreachable, "is not a git smart HTTP server"],
    );
}

/// Python's `http.server` serving a folder's files as they are, on a free loopback port;
/// stopped when dropped.
struct StaticWebServer {
    address: String,
    process: std::process::Child,
    _log: tempfile::NamedTempFile,
}

impl StaticWebServer {
    fn start(folder: &Path) -> Self {
        let port = free_port();
        let log = tempfile::NamedTempFile::new().expect("a log file");
        let mut process = Command::new("python3")
            .args([
                "-m",
                "http.server",
                "--bind",
                "127.0.0.1",
                &port.to_string(),
            ])
            .current_dir(folder)
            .stdout(std::process::Stdio::null())
            .stderr(log.reopen().expect("the log file"))
            .spawn()
            .expect("python3 -m http.server starts");
        wait_for_port(port, &mut process, log.path(), "python3 -m http.server");
        Self {
            address: format!("127.0.0.1:{port}"),
            process,
            _log: log,
        }
    }
}

impl Drop for StaticWebServer {
    fn drop(&mut self) {
        stop(&mut self.process);
    }
}

#[test]
// A skipped test says why on its own output.
#[allow(clippy::print_stderr)]
fn pypi_answers_for_flashinfer_python() {
    if std::env::var("FORGE_TEST_PYPI").as_deref() != Ok("1") {
        eprintln!("skipped: set FORGE_TEST_PYPI=1 to ask the real PyPI for flashinfer-python");
        return;
    }
    let context = TestContext::default_recipe_on_indexes();
    // Only the wheel PyPI serves: the cu130 jit-cache wheel lives on FlashInfer's own index.
    context.edit(
        "pins.toml",
        "  { package = \"flashinfer-cubin\" },\n  { package = \"flashinfer-jit-cache\", local = \"cu130\", index = \"https://flashinfer.ai/whl/cu130\" },\n",
        "",
    );
    let run = forge(
        &context,
        &[
            "--json",
            "pin",
            "bump",
            "flashinfer",
            "--dry-run",
            "--index-url",
            "https://pypi.org/simple",
        ],
        &[],
    )
    .expect_code(0);
    // Whatever PyPI offers today, the answer parsed: a move to a PEP 440 version, or none.
    let document = run.json();
    if document["changed"] == true {
        let to = document["to"].as_str().expect("a version");
        assert!(
            to.parse::<pep440_rs::Version>().is_ok(),
            "not a version: {to}"
        );
    } else {
        assert_eq!(document["changed"], false, "{document}");
    }
}

/// A registry for the base-image tests started by `start`, or `None` (with the reason printed)
/// where the tools are missing outside CI; in CI a missing tool fails the test.
fn registry(start: fn() -> RegistryServer) -> Option<RegistryServer> {
    tools_or_skip().then(start)
}

// A skipped test says why on its own output.
#[allow(clippy::print_stderr)]
fn tools_or_skip() -> bool {
    match registry::missing_tools() {
        None => true,
        Some(reason) if std::env::var_os("CI").is_some() => {
            panic!("{reason}: ci/test installs docker-registry, skopeo and openssl")
        }
        Some(reason) => {
            eprintln!("skipped: {reason} (apt-get install docker-registry skopeo openssl)");
            false
        }
    }
}

/// The tag the base starts at in the registry tests.
const BASE_TAG: &str = "2026-07-01-v0.24.0";

/// The default recipe with its base at `BASE_TAG` on `registry`, following dated tags, and
/// its pins.toml then.
fn recipe_on_local_base(registry: &RegistryServer) -> (TestContext, String) {
    let context = TestContext::default_recipe_on_indexes();
    context.edit(
        "pins.toml",
        "image = \"ghcr.io/aeon-7/aeon-vllm-ultimate:2026-07-01-v0.24.0\"\n",
        &format!(
            "image = \"{}/aeon-7/base:{BASE_TAG}\"\ntags = \"????-??-??-v*\"      # dated releases only\n",
            registry.address()
        ),
    );
    let before = context.read("pins.toml");
    (context, before)
}

/// Only the base is looked at when the other pins' upstreams answer: DeepGEMM pointed at a
/// local remote, and an index of the current versions, both to keep while forge runs.
fn answering_upstreams(context: &TestContext) -> (GitRemote, IndexServer) {
    let remote = GitRemote::new();
    with_git_remote(context, &remote);
    (remote, default_index())
}

/// Panics unless the first pin `pin outdated --json` lists is the base, whose newest tag is
/// 2026-07-15-v0.25.0.
#[track_caller]
fn assert_base_outdated(json: &serde_json::Value) {
    let base = &json["pins"][0];
    assert_eq!(base["name"], "base");
    assert_eq!(base["newest"], "2026-07-15-v0.25.0");
}

/// Panics unless pins.toml names the base at `tag` on `registry` and records `digest`.
#[track_caller]
fn assert_base_at(context: &TestContext, registry: &RegistryServer, tag: &str, digest: &str) {
    let pins = context.read("pins.toml");
    assert_contains(
        &pins,
        &format!("{}/aeon-7/base:{tag}\"\n", registry.address()),
    );
    assert_contains(&pins, &format!("digest = \"{digest}\"\n"));
}

#[test]
fn the_base_moves_to_the_newest_matching_tag_and_records_its_digest() {
    let Some(registry) = registry(RegistryServer::start) else {
        return;
    };
    for tag in [
        "2026-06-01-v0.23.0",
        "2026-07-01-v0.24.0",
        "2026-07-15-v0.25.9",
        "latest",
        "2026-07-15-rc",
    ] {
        registry.push("aeon-7/base", tag);
    }
    let newest = registry.push("aeon-7/base", "2026-07-15-v0.25.10");
    let (context, before) = recipe_on_local_base(&registry);

    let run = forge(&context, &["pin", "bump", "base"], &[]).expect_code(0);
    let image = format!("{}/aeon-7/base", registry.address());
    // The tag moves, the digest skopeo sees is recorded right after the image, nothing else moves.
    let expected = before.replacen(
        &format!("image = \"{image}:2026-07-01-v0.24.0\"\n"),
        &format!("image = \"{image}:2026-07-15-v0.25.10\"\n"),
        1,
    );
    let expected = expected.replacen(
        "tags = \"????-??-??-v*\"      # dated releases only\n",
        &format!("tags = \"????-??-??-v*\"      # dated releases only\ndigest = \"{newest}\"\n"),
        1,
    );
    assert_eq!(context.read("pins.toml"), expected);
    // FROM changed: every step runs again.
    assert_contains(&run.stderr, "Invalidated 15 of 15 steps, from step 1");
    let render = forge(&context, &["render"], &[]).expect_code(0);
    assert_contains(
        &render.stdout,
        &format!("FROM {image}:2026-07-15-v0.25.10@{newest}\n"),
    );

    // At the newest tag with its digest: nothing to do.
    let now = context.read("pins.toml");
    let run = forge(&context, &["pin", "bump", "base"], &[]).expect_code(0);
    let fresh = format!("Fresh base is at {image}:2026-07-15-v0.25.10@{newest}");
    assert_unchanged_saying(&run, &context, &now, &[&fresh]);

    // --to names a tag, older ones too; its digest replaces the recorded one in place.
    let older = registry.digest("aeon-7/base", "2026-06-01-v0.23.0");
    forge(
        &context,
        &["pin", "bump", "base", "--to", "2026-06-01-v0.23.0"],
        &[],
    )
    .expect_code(0);
    assert_eq!(
        context.read("pins.toml"),
        now.replacen("2026-07-15-v0.25.10", "2026-06-01-v0.23.0", 1)
            .replacen(&newest, &older, 1)
    );
}

#[test]
fn a_base_without_a_tag_pattern_only_records_the_digest_of_its_tag() {
    let Some(registry) = registry(RegistryServer::start) else {
        return;
    };
    let digest = registry.push("aeon-7/base", BASE_TAG);
    registry.push("aeon-7/base", "2026-07-15-v0.25.0");
    let context = TestContext::default_recipe_on_indexes();
    context.edit(
        "pins.toml",
        "image = \"ghcr.io/aeon-7/aeon-vllm-ultimate:2026-07-01-v0.24.0\"\n",
        &format!(
            "image = \"{}/aeon-7/base:2026-07-01-v0.24.0\"\n",
            registry.address()
        ),
    );
    let before = context.read("pins.toml");
    forge(&context, &["pin", "bump", "base"], &[]).expect_code(0);
    assert_eq!(
        context.read("pins.toml"),
        before.replacen(
            "/aeon-7/base:2026-07-01-v0.24.0\"\n",
            &format!("/aeon-7/base:2026-07-01-v0.24.0\"\ndigest = \"{digest}\"\n"),
            1
        )
    );
}

#[test]
fn an_unreachable_registry_or_a_missing_tag_changes_nothing() {
    let Some(registry) = registry(RegistryServer::start) else {
        return;
    };
    registry.push("aeon-7/base", BASE_TAG);
    let (context, before) = recipe_on_local_base(&registry);

    let run = forge(
        &context,
        &["pin", "bump", "base", "--to", "2027-01-01-v1.0.0"],
        &[],
    )
    .expect_code(2);
    assert_unchanged_saying(
        &run,
        &context,
        &before,
        &["pins.toml was not changed", "not found on the registry"],
    );

    let address = registry.address().to_owned();
    drop(registry);
    let run = forge(&context, &["pin", "bump", "base"], &[]).expect_code(2);
    let unreachable =
        format!("cannot reach the registry at http://{address}/v2/aeon-7/base/tags/list");
    assert_unchanged_saying(&run, &context, &before, &[&unreachable]);
}

#[test]
fn outdated_follows_the_base_tags() {
    let Some(registry) = registry(RegistryServer::start) else {
        return;
    };
    registry.push("aeon-7/base", BASE_TAG);
    registry.push("aeon-7/base", "2026-07-15-v0.25.0");
    let (context, _) = recipe_on_local_base(&registry);
    let (_remote, index) = answering_upstreams(&context);
    let json = forge_on(&context, &index, &["--json", "pin", "outdated"])
        .expect_code(0)
        .json();
    assert_base_outdated(&json);
    assert_eq!(json["pins"][0]["state"], "outdated");
}

#[test]
fn a_registry_that_wants_credentials_gets_them_from_the_environment_or_docker_config() {
    let Some(registry) = registry(RegistryServer::start_with_basic_auth) else {
        return;
    };
    let (user, password) = registry.credentials().expect("credentials");
    let digest = registry.push("aeon-7/base", BASE_TAG);
    let (context, before) = recipe_on_local_base(&registry);
    let recorded = before.replacen(
        "# dated releases only\n",
        &format!("# dated releases only\ndigest = \"{digest}\"\n"),
        1,
    );

    let run = forge(&context, &["pin", "bump", "base"], &[]).expect_code(2);
    let log_in = format!("hint: log in with `docker login {}`", registry.address());
    assert_unchanged_saying(
        &run,
        &context,
        &before,
        &["the registry refused access to", "(HTTP 401)", &log_in],
    );

    // The recipe publishes to ghcr.io: the environment's credentials go to the base's registry
    // only when FORGE_REGISTRY_HOST names it.
    forge(
        &context,
        &["pin", "bump", "base"],
        &[
            registry.credentials_env().as_slice(),
            &[("FORGE_REGISTRY_HOST", registry.address())],
        ]
        .concat(),
    )
    .expect_code(0);
    assert_eq!(context.read("pins.toml"), recorded);

    // The same through the Docker client's config.json, and a wrong password refused.
    context.write("pins.toml", &before);
    let docker = context.path().join(".docker-config");
    let auth = |password: &str| {
        use base64::Engine as _;
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        format!(
            "{{\"auths\": {{\"{}\": {{\"auth\": \"{token}\"}}}}}}",
            registry.address()
        )
    };
    std::fs::create_dir_all(&docker).unwrap();
    std::fs::write(docker.join("config.json"), auth("wrong")).unwrap();
    let run = forge(
        &context,
        &["pin", "bump", "base"],
        &[("DOCKER_CONFIG", docker.to_str().unwrap())],
    )
    .expect_code(2);
    assert_unchanged_saying(
        &run,
        &context,
        &before,
        &["hint: the credentials were refused"],
    );
    std::fs::write(docker.join("config.json"), auth(password)).unwrap();
    forge(
        &context,
        &["pin", "bump", "base"],
        &[("DOCKER_CONFIG", docker.to_str().unwrap())],
    )
    .expect_code(0);
    assert_eq!(context.read("pins.toml"), recorded);
}

#[test]
fn a_registry_that_wants_credentials_gets_them_from_a_credential_helper() {
    let Some(registry) = registry(RegistryServer::start_with_basic_auth) else {
        return;
    };
    let (user, password) = registry.credentials().expect("credentials");
    let address = registry.address();
    registry.push("aeon-7/base", BASE_TAG);
    let newest = registry.push("aeon-7/base", "2026-07-15-v0.25.0");
    let (context, before) = recipe_on_local_base(&registry);
    let run_with = |helper: &CredentialHelper, config: serde_json::Value, args: &[&str]| {
        let folder = helper.docker_config(&config);
        forge(
            &context,
            args,
            &[
                ("DOCKER_CONFIG", folder.to_str().unwrap()),
                ("PATH", &helper.path()),
            ],
        )
    };

    // `credHelpers`: the bump reads the tags and the digest with the helper's credentials.
    let helper = CredentialHelper::knowing(&[(address, user, password)]);
    let by_registry = serde_json::json!({ "credHelpers": { address: HELPER } });
    run_with(&helper, by_registry.clone(), &["pin", "bump", "base"]).expect_code(0);
    assert_base_at(&context, &registry, "2026-07-15-v0.25.0", &newest);
    assert_eq!(helper.asked(), [address]);

    // `credsStore`: `pin outdated` follows the base tags with the store's credentials.
    context.write("pins.toml", &before);
    let (_remote, index) = answering_upstreams(&context);
    let store = CredentialHelper::knowing(&[(address, user, password)]);
    let folder = store.docker_config(&serde_json::json!({ "credsStore": HELPER }));
    let json = forge(
        &context,
        &["--json", "pin", "outdated"],
        &[
            ("DOCKER_CONFIG", folder.to_str().unwrap()),
            ("PATH", &store.path()),
            ("FORGE_INDEX_URL", &index.url()),
        ],
    )
    .expect_code(0)
    .json();
    assert_base_outdated(&json);
    assert_eq!(store.asked(), [address]);

    // A helper that holds nothing for the registry: exit 2 naming both, nothing written.
    let with_remote = context.read("pins.toml");
    let stranger = CredentialHelper::knowing(&[("127.0.0.1:1", user, password)]);
    let run = run_with(&stranger, by_registry, &["pin", "bump", "base"]).expect_code(2);
    let holds_none = format!("docker-credential-{HELPER} holds none for {address}");
    assert_unchanged_saying(&run, &context, &with_remote, &[&holds_none]);
}

#[test]
fn a_bearer_challenge_is_answered_with_a_token_from_its_realm() {
    let Some(registry) = registry(RegistryServer::start_with_token_auth) else {
        return;
    };
    let digest = registry.push("aeon-7/base", BASE_TAG);
    registry.push("aeon-7/base", "2026-07-15-v0.25.0");
    let newest = registry.digest("aeon-7/base", "2026-07-15-v0.25.0");
    assert_ne!(digest, newest);
    let (context, _) = recipe_on_local_base(&registry);
    let before_requests = registry.token_requests().len();

    forge(&context, &["pin", "bump", "base"], &[]).expect_code(0);
    assert_base_at(&context, &registry, "2026-07-15-v0.25.0", &newest);
    // forge asked the realm for the scope and service of the challenge, once, anonymously.
    let requests = registry.token_requests();
    let asked: Vec<&String> = requests[before_requests..].iter().collect();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_contains(asked[0], "scope=repository%3Aaeon-7%2Fbase%3Apull");
    assert_contains(asked[0], "service=forge-test-registry");
    assert!(!asked[0].contains("Authorization"), "{asked:?}");

    // With credentials for the registry, a realm on another port (another origin) is still
    // asked anonymously: the credentials stay with the registry (tests/it/credentials.rs has a
    // realm on the registry's own origin, which gets them).
    forge(
        &context,
        &["pin", "bump", "base", "--to", "2026-07-01-v0.24.0"],
        &[
            ("FORGE_REGISTRY_USER", "robot"),
            ("FORGE_REGISTRY_PASSWORD", "secret"),
            ("FORGE_REGISTRY_HOST", registry.address()),
        ],
    )
    .expect_code(0);
    assert_contains(
        &context.read("pins.toml"),
        &format!("digest = \"{digest}\"\n"),
    );
    let requests = registry.token_requests();
    assert!(
        requests
            .last()
            .is_some_and(|request| !request.contains("Authorization")),
        "{requests:?}"
    );
}
