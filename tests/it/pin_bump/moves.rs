//! Index-driven moves of wheel pins: what moves (a wheel set, a lockstep group, the committed
//! render with pins.toml), what is not offered (wheels that do not fit the image, yanked files,
//! prereleases without `--pre`), what refuses the bump, and `--dry-run` and `--json`.

use super::*;
use crate::support::snapshot::forge_snapshot;

#[test]
fn flashinfer_moves_all_three_wheels_and_changes_nothing_else() {
    let (context, before, index) = recipe_and_index();
    offer_flashinfer_0_6_15(&index);
    // A wheel for another CUDA build must not count as the cu130 one.
    index.wheel("flashinfer-jit-cache", "0.6.16+cu128");

    let run = forge_on(&context, &index, &["pin", "bump", "flashinfer"]).expect_code(0);
    forge_snapshot!(format!("{}{}", run.stdout, run.stderr), context.path(), @r#"
        Bumping flashinfer 0.6.14 -> 0.6.15 (flashinfer-python 0.6.15, flashinfer-cubin 0.6.15, flashinfer-jit-cache 0.6.15+cu130; the sha256 of 3 files recorded)
        Updated ci/Dockerfile.rendered (the committed render, sha256:<digest>)
        Updated pins.toml: [pins.flashinfer] version = "0.6.15", [pins.flashinfer.wheels[0]] files = [1 entry], [pins.flashinfer.wheels[1]] files = [1 entry], [pins.flashinfer.wheels[2]] files = [1 entry]
       Rendered Dockerfile sha256:<digest> (was sha256:<digest>)
    Invalidated 6 of 16 steps, from step 11 (Dockerfile line 52) on:
           step 11/16  RUN printf '%s\n' 'flashinfer-python==0.6.15 --hash=sha256:97ce8dc052bef3321a21aa9b2053…
           step 12/16  COPY overlays/vllm/ /usr/local/lib/python3.12/site-packages/vllm/
           step 13/16  RUN python3 -c "import vllm" && (python3 -P -c "import sys; import importlib.util; sour…
           step 14/16  ARG FORGE_REVISION=unknown
           step 15/16  LABEL org.opencontainers.image.source="https://github.com/aeon-7/vllm-ultimate-deepseek…
           step 16/16  ENTRYPOINT ["/bin/bash"]
    "#);

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
    assert_flashinfer_moved(&context, &expected, "", "", "0.6.15");

    forge_snapshot!(run.stderr, context.path(), @r#"
        Bumping flashinfer 0.6.14 -> 0.6.15 (flashinfer-python 0.6.15, flashinfer-cubin 0.6.15, flashinfer-jit-cache 0.6.15+cu130; the sha256 of 3 files recorded)
        Updated ci/Dockerfile.rendered (the committed render, sha256:<digest>)
        Updated pins.toml: [pins.flashinfer] version = "0.6.15", [pins.flashinfer.wheels[0]] files = [1 entry], [pins.flashinfer.wheels[1]] files = [1 entry], [pins.flashinfer.wheels[2]] files = [1 entry]
       Rendered Dockerfile sha256:<digest> (was sha256:<digest>)
    Invalidated 6 of 16 steps, from step 11 (Dockerfile line 52) on:
           step 11/16  RUN printf '%s\n' 'flashinfer-python==0.6.15 --hash=sha256:97ce8dc052bef3321a21aa9b2053…
           step 12/16  COPY overlays/vllm/ /usr/local/lib/python3.12/site-packages/vllm/
           step 13/16  RUN python3 -c "import vllm" && (python3 -P -c "import sys; import importlib.util; sour…
           step 14/16  ARG FORGE_REVISION=unknown
           step 15/16  LABEL org.opencontainers.image.source="https://github.com/aeon-7/vllm-ultimate-deepseek…
           step 16/16  ENTRYPOINT ["/bin/bash"]
    "#);
    // FlashInfer is step 10 of 15: it and everything after it run again, DeepGEMM does not.
    let listed: Vec<&str> = run
        .stderr
        .lines()
        .filter(|line| line.trim_start().starts_with("step "))
        .collect();
    assert_eq!(listed.len(), 6, "{}", run.stderr);
    assert_contains(listed[0], "flashinfer-python==0.6.15");
    assert!(listed.iter().all(|line| !line.contains("deepgemm")));

    let render = forge(&context, &["render"], &[]).expect_code(0);
    let lines = |marker| crate::support::pip::requirement_lines(&render.stdout, marker);
    assert_eq!(
        lines("flashinfer-python"),
        [
            format!(
                "flashinfer-python==0.6.15 --hash=sha256:{}",
                stand_in_sha256("flashinfer_python-0.6.15-py3-none-manylinux_2_28_aarch64.whl")
            ),
            format!(
                "flashinfer-cubin==0.6.15 --hash=sha256:{}",
                stand_in_sha256("flashinfer_cubin-0.6.15-py3-none-manylinux_2_28_aarch64.whl")
            ),
        ]
    );
    assert_contains(
        &render.stdout,
        "'flashinfer-jit-cache==0.6.15+cu130 --hash=sha256:",
    );
}

#[test]
fn the_value_keeps_its_quote_style_and_trailing_comment() {
    let (context, before, index) = edited_recipe_and_index(
        "version = \"0.6.14\"\n",
        "version = '0.6.14'     # follows upstream releases\n",
    );
    offer_flashinfer_0_6_15(&index);
    forge_on(&context, &index, &["pin", "bump", "flashinfer"]).expect_code(0);
    assert_flashinfer_moved(
        &context,
        &before,
        "version = '0.6.14'     # follows upstream releases\n",
        "version = '0.6.15'     # follows upstream releases\n",
        "0.6.15",
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
    forge_snapshot!(format!("{}{}", run.stdout, run.stderr), context.path(), @r#"
        Bumping flashinfer 0.6.14 -> 0.6.15 (flashinfer-python 0.6.15, flashinfer-cubin 0.6.15, flashinfer-jit-cache 0.6.15+cu130; the sha256 of 3 files recorded)
        Updated ci/Dockerfile.rendered (the committed render, sha256:<digest>)
        Updated pins.toml: [pins.flashinfer] version = "0.6.15", [pins.flashinfer.wheels[0]] files = [1 entry], [pins.flashinfer.wheels[1]] files = [1 entry], [pins.flashinfer.wheels[2]] files = [1 entry]
       Rendered Dockerfile sha256:<digest> (was sha256:<digest>)
    Invalidated 6 of 16 steps, from step 11 (Dockerfile line 52) on:
           step 11/16  RUN printf '%s\n' 'flashinfer-python==0.6.15 --hash=sha256:97ce8dc052bef3321a21aa9b2053…
           step 12/16  COPY overlays/vllm/ /usr/local/lib/python3.12/site-packages/vllm/
           step 13/16  RUN python3 -c "import vllm" && (python3 -P -c "import sys; import importlib.util; sour…
           step 14/16  ARG FORGE_REVISION=unknown
           step 15/16  LABEL org.opencontainers.image.source="https://github.com/aeon-7/vllm-ultimate-deepseek…
           step 16/16  ENTRYPOINT ["/bin/bash"]
    "#);
    assert_flashinfer_moved(
        &context,
        &before,
        FLASHINFER_0_6_14,
        FLASHINFER_0_6_15,
        "0.6.15",
    );
    forge_snapshot!(run.stderr, context.path(), @r#"
        Bumping flashinfer 0.6.14 -> 0.6.15 (flashinfer-python 0.6.15, flashinfer-cubin 0.6.15, flashinfer-jit-cache 0.6.15+cu130; the sha256 of 3 files recorded)
        Updated ci/Dockerfile.rendered (the committed render, sha256:<digest>)
        Updated pins.toml: [pins.flashinfer] version = "0.6.15", [pins.flashinfer.wheels[0]] files = [1 entry], [pins.flashinfer.wheels[1]] files = [1 entry], [pins.flashinfer.wheels[2]] files = [1 entry]
       Rendered Dockerfile sha256:<digest> (was sha256:<digest>)
    Invalidated 6 of 16 steps, from step 11 (Dockerfile line 52) on:
           step 11/16  RUN printf '%s\n' 'flashinfer-python==0.6.15 --hash=sha256:97ce8dc052bef3321a21aa9b2053…
           step 12/16  COPY overlays/vllm/ /usr/local/lib/python3.12/site-packages/vllm/
           step 13/16  RUN python3 -c "import vllm" && (python3 -P -c "import sys; import importlib.util; sour…
           step 14/16  ARG FORGE_REVISION=unknown
           step 15/16  LABEL org.opencontainers.image.source="https://github.com/aeon-7/vllm-ultimate-deepseek…
           step 16/16  ENTRYPOINT ["/bin/bash"]
    "#);
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
    forge_snapshot!(format!("{}{}", run.stdout, run.stderr), context.path(), @"
         Bumping flashinfer 0.6.14 -> 0.6.15 (flashinfer-python 0.6.15, flashinfer-cubin 0.6.15, flashinfer-jit-cache 0.6.15+cu130; the sha256 of 3 files recorded)
    error: cannot write pins.toml together with ci/Dockerfile.rendered; neither was changed
    caused by: Is a directory (os error 21)
    hint: ci/Dockerfile.rendered must be a writable file (`[render] committed` in pins.toml names the render); fix it and run the bump again
    ");
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
    forge_snapshot!(run.stdout, context.path(), @r#"
    NAME  CURRENT  ALLOWED  NEWEST  STATE
    base  ghcr.io/aeon-7/aeon-vllm-ultimate:2026-07-01-v0.24.0  -  -  not-followed
    apache-tvm-ffi  0.1.11  0.1.11  0.1.11  up-to-date
    cutlass-dsl  4.6.0  -  -  in-base
    deepgemm  <short>  <short>  <short>  outdated
    flashinfer  0.6.14  0.6.14  0.6.14  up-to-date
    nccl  2.28.9  -  -  in-base
    tilelang  0.1.11  0.1.11  0.1.11  up-to-date

    base: not followed: declare [base] tags = "PATTERN" to follow newer tags
    cutlass-dsl: in the base image (install = false): moves with `forge pin bump base`, never alone
    nccl: asserted in the base image: moves with `forge pin bump base`
    "#);

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

/// An index where FlashInfer 0.6.15 has every wheel fit but flashinfer-cubin's, which is for
/// x86_64 and Python 3.13, and 0.6.16 has a wheel for any platform, but only for Python 3.13
/// and later.
fn index_of_wheels_that_fit_only_elsewhere() -> IndexServer {
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
    index
}

/// Publishes x86_64 wheels of flashinfer-python and flashinfer-jit-cache at 0.6.14 to 0.6.16.
fn publish_x86_64_wheels(index: &IndexServer) {
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
}

#[test]
fn a_version_whose_wheels_do_not_fit_the_image_is_not_offered() {
    let (context, _remote) = recipe_at_the_git_head();
    let before = context.read("pins.toml");
    let index = index_of_wheels_that_fit_only_elsewhere();

    let run = forge_on(&context, &index, &["pin", "outdated"]).expect_code(0);
    forge_snapshot!(run.stdout, context.path(), @r#"
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
    flashinfer 0.6.16, 0.6.15: no wheel of flashinfer-cubin fits linux/aarch64, Python 3.12 (wheel-fit)
    nccl: asserted in the base image: moves with `forge pin bump base`
    "#);
    assert_eq!(run.stderr.trim(), "", "pin outdated says it all on stdout");
    let row = outdated_row(&run.stdout, "flashinfer");
    assert_eq!(row, ["flashinfer", "0.6.14", "0.6.14", "0.6.16", "held"]);

    let run = forge_on(&context, &index, &["pin", "bump", "flashinfer"]).expect_code(0);
    forge_snapshot!(format!("{}{}", run.stdout, run.stderr), context.path(), @r"
        warning: skipping flashinfer 0.6.16: no wheel of flashinfer-cubin 0.6.16 fits linux/aarch64, Python 3.12 (wheels: py3-none-any (requires-python >=3.13))
        warning: skipping flashinfer 0.6.15: no wheel of flashinfer-cubin 0.6.15 fits linux/aarch64, Python 3.12 (wheels: cp312-cp312-manylinux_2_28_x86_64, cp313-cp313-manylinux_2_28_aarch64)
               Fresh flashinfer is at 0.6.14, the newest allowed version (2 newer held back; `forge pin outdated` says why)
        ");
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
    publish_x86_64_wheels(&index);
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
    forge_snapshot!(format!("{}{}", run.stdout, run.stderr), context.path(), @r#"
    NAME  CURRENT  ALLOWED  NEWEST  STATE
    base  ghcr.io/aeon-7/aeon-vllm-ultimate:2026-07-01-v0.24.0  -  -  not-followed
    apache-tvm-ffi  0.1.11  0.1.11  0.1.11  up-to-date
    cutlass-dsl  4.6.0  -  -  in-base
    deepgemm  <short>  <short>  <short>  up-to-date
    flashinfer  0.6.14  0.6.14  0.6.14  yanked
    nccl  2.28.9  -  -  in-base
    tilelang  0.1.11  0.1.11  0.1.11  up-to-date

    base: not followed: declare [base] tags = "PATTERN" to follow newer tags
    cutlass-dsl: in the base image (install = false): moves with `forge pin bump base`, never alone
    flashinfer: 0.6.14 is yanked on the index (yanked for the test): move with `forge pin bump
      flashinfer` once a newer version is allowed
    nccl: asserted in the base image: moves with `forge pin bump base`
          Yanked the index yanked the current version of flashinfer (--exit-code)
    "#);
    forge_snapshot!(run.stderr, context.path(), @"      Yanked the index yanked the current version of flashinfer (--exit-code)");
    let row = outdated_row(&run.stdout, "flashinfer");
    assert_eq!(row, ["flashinfer", "0.6.14", "0.6.14", "0.6.14", "yanked"]);
    assert_contains_flowed(
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
    assert_flashinfer_moved(
        &context,
        &before,
        FLASHINFER_0_6_14,
        FLASHINFER_0_6_15,
        "0.6.15",
    );
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
    forge_snapshot!(format!("{}{}", run.stdout, run.stderr), context.path(), @r#"
    warning: skipping tilelang 0.1.14: group partner apache-tvm-ffi (apache-tvm-ffi 0.1.14) is not on http://127.0.0.1:<port>/simple
         Bumping tilelang 0.1.11 -> 0.1.13 (tilelang 0.1.13, apache-tvm-ffi 0.1.13; the sha256 of 2 files recorded)
         Updated ci/Dockerfile.rendered (the committed render, sha256:<digest>)
         Updated pins.toml: [pins.tilelang] version = "0.1.13", [pins.tilelang] files = [1 entry], [pins.apache-tvm-ffi] version = "0.1.13", [pins.apache-tvm-ffi] files = [1 entry]
        Rendered Dockerfile sha256:<digest> (was sha256:<digest>)
     Invalidated 7 of 16 steps, from step 10 (Dockerfile line 45) on:
            step 10/16  RUN printf '%s\n' 'apache-tvm-ffi==0.1.13 --hash=sha256:7e8fa339b679cc3f29cb290e75d598d…
            step 11/16  RUN printf '%s\n' 'flashinfer-python==0.6.14' 'flashinfer-cubin==0.6.14' | python3 -m p…
            step 12/16  COPY overlays/vllm/ /usr/local/lib/python3.12/site-packages/vllm/
            step 13/16  RUN python3 -c "import vllm" && (python3 -P -c "import sys; import importlib.util; sour…
            step 14/16  ARG FORGE_REVISION=unknown
            step 15/16  LABEL org.opencontainers.image.source="https://github.com/aeon-7/vllm-ultimate-deepseek…
            step 16/16  ENTRYPOINT ["/bin/bash"]
    "#);
    // 0.1.14 lacks its partner and is skipped with that reason; both pins land on 0.1.13.
    forge_snapshot!(run.stderr, context.path(), @r#"
    warning: skipping tilelang 0.1.14: group partner apache-tvm-ffi (apache-tvm-ffi 0.1.14) is not on http://127.0.0.1:<port>/simple
         Bumping tilelang 0.1.11 -> 0.1.13 (tilelang 0.1.13, apache-tvm-ffi 0.1.13; the sha256 of 2 files recorded)
         Updated ci/Dockerfile.rendered (the committed render, sha256:<digest>)
         Updated pins.toml: [pins.tilelang] version = "0.1.13", [pins.tilelang] files = [1 entry], [pins.apache-tvm-ffi] version = "0.1.13", [pins.apache-tvm-ffi] files = [1 entry]
        Rendered Dockerfile sha256:<digest> (was sha256:<digest>)
     Invalidated 7 of 16 steps, from step 10 (Dockerfile line 45) on:
            step 10/16  RUN printf '%s\n' 'apache-tvm-ffi==0.1.13 --hash=sha256:7e8fa339b679cc3f29cb290e75d598d…
            step 11/16  RUN printf '%s\n' 'flashinfer-python==0.6.14' 'flashinfer-cubin==0.6.14' | python3 -m p…
            step 12/16  COPY overlays/vllm/ /usr/local/lib/python3.12/site-packages/vllm/
            step 13/16  RUN python3 -c "import vllm" && (python3 -P -c "import sys; import importlib.util; sour…
            step 14/16  ARG FORGE_REVISION=unknown
            step 15/16  LABEL org.opencontainers.image.source="https://github.com/aeon-7/vllm-ultimate-deepseek…
            step 16/16  ENTRYPOINT ["/bin/bash"]
    "#);
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
    let expected = with_files(
        &with_files(
            &expected,
            "apache-tvm-ffi",
            &[stand_in_entry("apache-tvm-ffi", "0.1.13")],
        ),
        "tilelang",
        &[stand_in_entry("tilelang", "0.1.13")],
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
    forge_snapshot!(format!("{}{}", run.stdout, run.stderr), context.path(), @r"
        error: refusing to move tilelang to 0.1.13: group partner apache-tvm-ffi (apache-tvm-ffi 0.1.13) is not on http://127.0.0.1:<port>/simple
        hint: a lockstep group moves together: wait for apache-tvm-ffi 0.1.13, or pick a version every member has with --to
        ");
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
    forge_snapshot!(format!("{}{}", run.stdout, run.stderr), context.path(), @r"
        warning: skipping flashinfer 0.6.15: wheel flashinfer-jit-cache 0.6.15+cu130 is not on http://127.0.0.1:<port>/simple
               Fresh flashinfer is at 0.6.14, the newest allowed version (1 newer held back; `forge pin outdated` says why)
        ");
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
    forge_snapshot!(format!("{}{}", run.stdout, run.stderr), context.path(), @r"
        error: cannot look up the versions of tilelang; pins.toml was not changed
        caused by: http://127.0.0.1:<port>/simple/tilelang/ has no package `tilelang` (HTTP 404)
        hint: check the package name in pins.toml, and that this index (or the pin's own `index`) serves it
        ");
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
    forge_snapshot!(format!("{}{}", run.stdout, run.stderr), context.path(), @r"
        warning: skipping flashinfer 0.6.15: outside the allowed range >=0.6.14,<0.6.15 of flashinfer
               Fresh flashinfer is at 0.6.14, the newest allowed version (1 newer held back; pass --force to cross the allowed range, or widen `allow` in pins.toml)
        ");
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
    forge_snapshot!(run.stderr, context.path(), @r#"
    warning: --force: moving flashinfer to 0.6.15 although it is outside the allowed range >=0.6.14,<0.6.15 of flashinfer
         Bumping flashinfer 0.6.14 -> 0.6.15 (flashinfer-python 0.6.15, flashinfer-cubin 0.6.15, flashinfer-jit-cache 0.6.15+cu130; the sha256 of 3 files recorded)
         Updated ci/Dockerfile.rendered (the committed render, sha256:<digest>)
         Updated pins.toml: [pins.flashinfer] version = "0.6.15", [pins.flashinfer.wheels[0]] files = [1 entry], [pins.flashinfer.wheels[1]] files = [1 entry], [pins.flashinfer.wheels[2]] files = [1 entry]
        Rendered Dockerfile sha256:<digest> (was sha256:<digest>)
     Invalidated 6 of 16 steps, from step 11 (Dockerfile line 52) on:
            step 11/16  RUN printf '%s\n' 'flashinfer-python==0.6.15 --hash=sha256:97ce8dc052bef3321a21aa9b2053…
            step 12/16  COPY overlays/vllm/ /usr/local/lib/python3.12/site-packages/vllm/
            step 13/16  RUN python3 -c "import vllm" && (python3 -P -c "import sys; import importlib.util; sour…
            step 14/16  ARG FORGE_REVISION=unknown
            step 15/16  LABEL org.opencontainers.image.source="https://github.com/aeon-7/vllm-ultimate-deepseek…
            step 16/16  ENTRYPOINT ["/bin/bash"]
    "#);
    assert_flashinfer_moved(
        &context,
        &before,
        FLASHINFER_0_6_14,
        FLASHINFER_0_6_15,
        "0.6.15",
    );
    // The recipe still loads, with a warning about the range.
    let list = forge(&context, &["pin", "list"], &[]).expect_code(0);
    forge_snapshot!(list.stderr, context.path(), @"warning: pins.toml:81:11: pin `flashinfer` is at 0.6.15, outside its allowed range >=0.6.14,<0.6.15: widen `allow`, or move the pin back inside it");
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
    forge_snapshot!(format!("{}{}", run.stdout, run.stderr), context.path(), @"       Fresh flashinfer is at 0.6.14, the newest version on offer");
    assert_unchanged_saying(
        &run,
        &context,
        &before,
        &["flashinfer is at 0.6.14, the newest version on offer"],
    );

    forge_on(&context, &index, &["pin", "bump", "flashinfer", "--pre"]).expect_code(0);
    assert_flashinfer_moved(
        &context,
        &before,
        FLASHINFER_0_6_14,
        "version = \"0.6.15rc1\"",
        "0.6.15rc1",
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
    forge_snapshot!(
        "pin_bump_dry_run",
        format!("{}{}", run.stdout, run.stderr),
        context.path()
    );
    forge_snapshot!("pin_bump_diff", run.stdout, context.path());
    assert_contains(
        &run.stdout,
        &format!(
            "\n+RUN printf '%s\\n' 'flashinfer-python==0.6.15 --hash=sha256:{}' 'flashinfer-cubin==0.6.15 --hash=sha256:{}' \\\n",
            stand_in_sha256("flashinfer_python-0.6.15-py3-none-manylinux_2_28_aarch64.whl"),
            stand_in_sha256("flashinfer_cubin-0.6.15-py3-none-manylinux_2_28_aarch64.whl")
        ),
    );
    assert_unchanged_saying(
        &run,
        &context,
        &before,
        &["Invalidated 6 of 16 steps", "a dry run writes nothing"],
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
    assert_eq!(document["invalidated"]["total"], 16);
    assert_eq!(document["invalidated"]["steps"][0]["number"], 11);
}
