//! `forge pin outdated`: current, allowed and newest per pin, what holds each back, and its exit
//! code.

use super::*;
use crate::support::snapshot::forge_snapshot;

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
    assert_fits_100_columns(&run.stdout, &run.stderr);
    forge_snapshot!(format!("{}{}", run.stdout, run.stderr), context.path(), @r#"
    NAME  CURRENT  ALLOWED  NEWEST  STATE
    base  ghcr.io/aeon-7/aeon-vllm-ultimate:2026-07-01-v0.24.0  -  -  not-followed
    apache-tvm-ffi  0.1.11  0.1.11  0.1.12  held
    cutlass-dsl  4.6.0  -  -  in-base
    deepgemm  <short>  <short>  <short>  outdated
    flashinfer  0.6.14  0.6.15  0.6.15  outdated
    nccl  2.28.9  -  -  in-base
    tilelang  0.1.11  0.1.12  0.1.12  outdated

    base: not followed: declare [base] tags = "PATTERN" to follow newer tags
    apache-tvm-ffi 0.1.12: denied for apache-tvm-ffi: aborts tilelang: duplicate type-attr registration
      (denied)
    cutlass-dsl: in the base image (install = false): moves with `forge pin bump base`, never alone
    nccl: asserted in the base image: moves with `forge pin bump base`
    tilelang: group tvm moves as one: apache-tvm-ffi stays at 0.1.11, tilelang 0.1.11 -> 0.1.12 (`forge
      pin bump tilelang`)
    "#);
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
    assert_contains_flowed(
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
    forge_snapshot!(format!("{}{}", run.stdout, run.stderr), context.path(), @r#"
    NAME  CURRENT  ALLOWED  NEWEST  STATE
    base  ghcr.io/aeon-7/aeon-vllm-ultimate:2026-07-01-v0.24.0  -  -  not-followed
    apache-tvm-ffi  0.1.11  0.1.11  0.1.12  held
    cutlass-dsl  4.6.0  -  -  in-base
    deepgemm  <short>  <short>  <short>  up-to-date
    flashinfer  0.6.14  0.6.15  0.6.15  outdated
    nccl  2.28.9  -  -  in-base
    tilelang  0.1.11  0.1.11  0.1.11  up-to-date

    base: not followed: declare [base] tags = "PATTERN" to follow newer tags
    apache-tvm-ffi 0.1.12: denied for apache-tvm-ffi: aborts tilelang: duplicate type-attr registration
      (denied)
    cutlass-dsl: in the base image (install = false): moves with `forge pin bump base`, never alone
    nccl: asserted in the base image: moves with `forge pin bump base`
        Outdated flashinfer can move (--exit-code)
    "#);
    forge_snapshot!(run.stderr, context.path(), @"    Outdated flashinfer can move (--exit-code)");
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
    forge_snapshot!(format!("{}{}", run.stdout, run.stderr), context.path(), @r#"
    NAME  CURRENT  ALLOWED  NEWEST  STATE
    base  ghcr.io/aeon-7/aeon-vllm-ultimate:2026-07-01-v0.24.0  -  -  not-followed
    apache-tvm-ffi  0.1.11  0.1.11  0.1.11  up-to-date
    cutlass-dsl  4.6.0  -  -  in-base
    deepgemm  <short>  <short>  <short>  up-to-date
    flashinfer  0.6.14  0.6.14  0.6.16  held
    nccl  2.28.9  -  -  in-base
    tilelang  0.1.11  0.1.11  0.1.11  up-to-date

    base: not followed: declare [base] tags = "PATTERN" to follow newer tags
    cutlass-dsl: in the base image (install = false): moves with `forge pin bump base`, never alone
    flashinfer 0.6.16, 0.6.15: wheel flashinfer-cubin is not on http://127.0.0.1:<port>/simple; wheel
      flashinfer-jit-cache is not on http://127.0.0.1:<port>/simple (wheel-set)
    nccl: asserted in the base image: moves with `forge pin bump base`
    "#);
    // Each note on one line, as before it is wrapped to the terminal.
    let notes = run.stdout.replace("\n  ", " ");
    let lines: Vec<&str> = notes
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
    forge_snapshot!(format!("{}{}", run.stdout, run.stderr), context.path(), @r#"
    NAME  CURRENT  ALLOWED  NEWEST  STATE
    base  ghcr.io/aeon-7/aeon-vllm-ultimate:2026-07-01-v0.24.0  -  -  not-followed
    apache-tvm-ffi  0.1.11  -  -  error
    cutlass-dsl  4.6.0  -  -  in-base
    deepgemm  <short>  <short>  <short>  outdated
    flashinfer  0.6.14  -  -  error
    nccl  2.28.9  -  -  in-base
    tilelang  0.1.11  -  -  error

    base: not followed: declare [base] tags = "PATTERN" to follow newer tags
    apache-tvm-ffi: cannot reach the package index at http://127.0.0.1:<port>/simple/apache-tvm-ffi/: io:
      Connection refused (os error 111)
    cutlass-dsl: in the base image (install = false): moves with `forge pin bump base`, never alone
    flashinfer: cannot reach the package index at http://127.0.0.1:<port>/simple/flashinfer-python/: io:
      Connection refused (os error 111)
    nccl: asserted in the base image: moves with `forge pin bump base`
    tilelang: cannot reach the package index at http://127.0.0.1:<port>/simple/tilelang/: io: Connection
      refused (os error 111)
    error: forge pin outdated is incomplete
    caused by: could not look up apache-tvm-ffi, flashinfer, tilelang (see the notes above)
    "#);
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
