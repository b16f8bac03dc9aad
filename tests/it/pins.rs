//! pins.toml: every bad input is refused at load with exit 2, its file:line:col and a hint, and
//! nothing reaches stdout.

use crate::support::snapshot::forge_snapshot;
use crate::support::{
    Run, TestContext, assert_contains, assert_contains_flowed, assert_fits_100_columns,
    with_deepgemm_series,
};

/// Runs `forge render` on the default recipe after `edit`, expecting a refusal at `location`.
#[track_caller]
fn refused(from: &str, to: &str, location: &str, message: &str) -> Run {
    let context = TestContext::default_recipe();
    context.edit("pins.toml", from, to);
    let run = context.forge(&["render"]).expect_code(2);
    assert!(
        run.stdout.is_empty(),
        "nothing may be rendered, got:\n{}",
        run.stdout
    );
    let first = run
        .stderr
        .lines()
        .find(|line| line.starts_with("error:"))
        .unwrap_or_default();
    assert!(
        first.contains(&format!("pins.toml:{location}")),
        "error does not name pins.toml:{location}\n{}",
        run.stderr
    );
    assert!(
        first.contains(message),
        "error does not say {message:?}:\n{}",
        run.stderr
    );
    assert!(
        run.stderr.lines().any(|line| line.starts_with("hint: ")),
        "no hint:\n{}",
        run.stderr
    );
    run
}

/// The line of pins.toml (1-based) holding `needle` in the default recipe.
fn line_of(needle: &str) -> usize {
    let text =
        std::fs::read_to_string(crate::support::repository_root().join("pins.toml")).unwrap();
    text.lines()
        .position(|line| line.contains(needle))
        .expect("needle in pins.toml")
        + 1
}

#[test]
fn malformed_toml_names_the_position() {
    let line = line_of("version = \"0.6.14\"");
    let run = refused(
        "version = \"0.6.14\"",
        "version = \"0.6.14",
        &format!("{line}:"),
        "invalid basic string",
    );
    forge_snapshot!(run.stderr, "", @r#"
    error: pins.toml:81:18: invalid basic string, expected `"`
    hint: values that reach the Dockerfile must match their grammar exactly; nothing was rendered
    "#);
}

#[test]
fn unknown_key_is_refused_at_its_line() {
    let line = line_of("[pins.tilelang]") + 1;
    let run = refused(
        "[pins.tilelang]\n",
        "[pins.tilelang]\nvresion = \"0.1.11\"\n",
        &format!("{line}:1:"),
        "unknown field `vresion`",
    );
    forge_snapshot!(run.stderr, "", @"
    error: pins.toml:70:1: unknown field `vresion`, expected one of `kind`, `package`, `module`, `version`, `install`, `index`, `group`, `deny`, `allow`, `shim`, `wheels`, `url`, `releases`, `files`, `branch`, `rev`, `probe`
    hint: remove or rename the key; docs/pins.md lists every key forge reads
    ");
}

/// A key of more dotted parts than the TOML reader takes (80) is located where it starts, as a
/// table header and as the key of a value; a dot in a quoted part is not a part of its own.
#[test]
fn a_key_of_too_many_dotted_parts_is_located_where_it_starts() {
    let line = line_of("[pins.tilelang]");
    let parts = vec!["a"; 100_000].join(".");
    refused(
        "[pins.tilelang]",
        &format!("[{parts}]\nx = 1\n\n[pins.tilelang]"),
        &format!("{line}:2: a key of 100000 dotted parts: recursion limit"),
        "",
    );
    let quoted = format!("\"{}\".b = 1", vec!["q"; 200].join("."));
    let long = format!("{quoted}\n  {} = 2", vec!["k"; 81].join(" . "));
    refused(
        "[pins.tilelang]\n",
        &format!("[pins.tilelang]\n{long}\n"),
        &format!("{}:3: a key of 81 dotted parts", line + 2),
        "",
    );
}

/// A fix's check that Python would not compile is refused when pins.toml is read, with the
/// column of the check where Python's error starts, instead of failing at the end of a build.
#[test]
fn a_check_that_is_not_python_is_refused_at_load() {
    let check = "'_sm12x' in source('vllm.models.deepseek_v4.nvidia.ops.o_proj')";
    let line = line_of(check);
    let run = refused(
        check,
        "'_sm12x' in source('vllm.models.deepseek_v4.nvidia.ops.o_proj'",
        &format!("{line}:9: invalid check"),
        "it is not a Python expression: unexpected EOF while parsing (column 63)",
    );
    forge_snapshot!(run.stderr, "", @r#"
    error: pins.toml:133:9: invalid check "'_sm12x' in source('vllm.models.deepseek_v4.nvidia.ops.o_proj'": it is not a Python expression: unexpected EOF while parsing (column 63)
    hint: values that reach the Dockerfile must match their grammar exactly; nothing was rendered
    "#);
    refused(
        check,
        "all(hasattr(m, n) for *n in ('a', 'b'))",
        &format!("{line}:9: invalid check"),
        "it is not a Python expression: ",
    );
    refused(
        check,
        "(yield source('vllm'))",
        &format!("{line}:9: invalid check"),
        "it is not a Python expression: ",
    );
}

#[test]
fn version_with_a_newline_and_a_command_is_refused() {
    let line = line_of("version = \"0.6.14\"");
    let run = refused(
        "version = \"0.6.14\"",
        "version = \"0.6.14\\nRUN curl x | sh\"",
        &format!("{line}:11:"),
        "invalid version \"0.6.14\\nRUN curl x | sh\"",
    );
    forge_snapshot!(run.stderr, "", @r#"
    error: pins.toml:81:11: invalid version "0.6.14\nRUN curl x | sh": expected an exact PEP 440 version such as 0.6.14 (digits, dots, and a/b/rc/post/dev/+local parts only)
    hint: values that reach the Dockerfile must match their grammar exactly; nothing was rendered
    "#);
}

#[test]
fn version_with_a_shell_list_is_refused() {
    let line = line_of("version = \"0.6.14\"");
    let run = refused(
        "version = \"0.6.14\"",
        "version = \"0.6.14 && rm -rf /\"",
        &format!("{line}:11:"),
        "invalid version \"0.6.14 && rm -rf /\"",
    );
    forge_snapshot!(run.stderr, "", @r#"
    error: pins.toml:81:11: invalid version "0.6.14 && rm -rf /": expected an exact PEP 440 version such as 0.6.14 (digits, dots, and a/b/rc/post/dev/+local parts only)
    hint: values that reach the Dockerfile must match their grammar exactly; nothing was rendered
    "#);
}

#[test]
fn tag_with_a_space_is_refused() {
    let line = line_of("moving = [");
    let run = refused(
        "\"experimental-pr4\"",
        "\"experimental pr4\"",
        &format!("{line}:11:"),
        "invalid tag \"experimental pr4\"",
    );
    forge_snapshot!(run.stderr, "", @r#"
    error: pins.toml:13:11: invalid tag "experimental pr4": expected at most 128 of letters, digits, '_', '.' and '-', not starting with '.' or '-'
    hint: tags follow the registry grammar [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}; nothing was rendered
    "#);
}

#[test]
fn tag_with_a_quote_is_refused() {
    let line = line_of("moving = [");
    let run = refused(
        "\"experimental-pr4\"",
        "'experimental\"pr4'",
        &format!("{line}:11:"),
        "invalid tag \"experimental\\\"pr4\"",
    );
    forge_snapshot!(run.stderr, "", @r#"
    error: pins.toml:13:11: invalid tag "experimental\"pr4": expected at most 128 of letters, digits, '_', '.' and '-', not starting with '.' or '-'
    hint: tags follow the registry grammar [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}; nothing was rendered
    "#);
}

#[test]
fn tag_of_129_characters_is_refused() {
    let line = line_of("moving = [");
    let long = format!("\"{}\"", "a".repeat(129));
    let run = refused(
        "\"experimental-pr4\"",
        &long,
        &format!("{line}:11:"),
        "invalid tag",
    );
    forge_snapshot!(run.stderr, "", @r#"
    error: pins.toml:13:11: invalid tag "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa": expected at most 128 of letters, digits, '_', '.' and '-', not starting with '.' or '-'
    hint: tags follow the registry grammar [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}; nothing was rendered
    "#);
}

#[test]
fn image_reference_with_a_newline_is_refused() {
    let line = line_of("image = \"ghcr.io/aeon-7/aeon-vllm-ultimate");
    let run = refused(
        "image = \"ghcr.io/aeon-7/aeon-vllm-ultimate:2026-07-01-v0.24.0\"",
        "image = \"ghcr.io/aeon-7/aeon-vllm-ultimate:2026-07-01-v0.24.0\\nRUN id\"",
        &format!("{line}:9:"),
        "invalid image reference",
    );
    forge_snapshot!(run.stderr, "", @r#"
    error: pins.toml:21:9: invalid image reference "ghcr.io/aeon-7/aeon-vllm-ultimate:2026-07-01-v0.24.0\nRUN id": invalid tag "2026-07-01-v0.24.0\nRUN id": expected at most 128 of letters, digits, '_', '.' and '-', not starting with '.' or '-'; expected [registry/]repository[:tag][@sha256:digest]
    hint: values that reach the Dockerfile must match their grammar exactly; nothing was rendered
    "#);
}

#[test]
fn shell_metacharacters_in_any_value_are_refused() {
    for (from, to) in [
        (
            "rev = \"a6b593d2826719dcf4892609af7b84ee23aaf32a\"",
            "rev = \"a6b593d2826719dcf4892609af7b84ee23aaf32a`id`\"",
        ),
        ("branch = \"nv_dev\"", "branch = \"nv_dev$(id)\""),
        (
            "TORCH_CUDA_ARCH_LIST = \"12.1a\"",
            "TORCH_CUDA_ARCH_LIST = \"12.1a; id\"",
        ),
        ("package = \"tilelang\"", "package = \"tilelang\\u0000\""),
        (
            "url = \"https://github.com/deepseek-ai/DeepGEMM.git\"",
            "url = \"https://github.com/deepseek-ai/DeepGEMM.git'x\"",
        ),
        (
            "\"ai.aeon-7.layer.pr\" = \"https",
            "\"ai.aeon-7.layer.pr\" = \"$(id) https",
        ),
    ] {
        let line = line_of(from);
        refused(from, to, &format!("{line}:"), "invalid");
    }
}

#[test]
fn a_denied_version_is_refused_with_its_reason() {
    let context = TestContext::default_recipe();
    context.edit(
        "pins.toml",
        "version = \"0.1.11\"\ngroup = \"tvm\"                  # moves",
        "version = \"0.1.12\"\ngroup = \"tvm\"                  # moves",
    );
    let run = context.forge(&["render"]).expect_code(2);
    forge_snapshot!(run.stderr, context.path(), @"
    error: pins.toml:59:11: pin `apache-tvm-ffi` is at 0.1.12, which is denied: aborts tilelang: duplicate type-attr registration
    hint: move the pin to another version; the deny list records what broke
    ");
}

#[test]
fn a_lockstep_group_must_share_one_version() {
    let context = TestContext::default_recipe();
    context.write(
        "pins.toml",
        &crate::support::without_recorded_files(&context.read("pins.toml")),
    );
    context.edit(
        "pins.toml",
        "module = \"tilelang\"\nversion = \"0.1.11\"",
        "module = \"tilelang\"\nversion = \"0.1.13\"",
    );
    // A group that is not lockstep lets each member carry its own version.
    context.forge(&["render"]).expect_code(0);
    let text = context.read("pins.toml");
    context.write(
        "pins.toml",
        &format!("{text}\n[groups.tvm]\nlockstep = true\n"),
    );
    let run = context.forge(&["render"]).expect_code(2);
    forge_snapshot!(run.stderr, context.path(), @"
    error: pins.toml:65:1: group `tvm` moves in lockstep, but `apache-tvm-ffi` is at 0.1.11 and `tilelang` at 0.1.13
    hint: give every pin of group `tvm` the same version (`forge pin bump` moves them together), or drop `lockstep` from [groups.tvm]
    ");
    let line = context
        .read("pins.toml")
        .lines()
        .position(|line| line == "[pins.tilelang]")
        .expect("the tilelang pin")
        + 1;
    assert_eq!(line, 65);
    // A [groups] entry no pin is in is refused.
    context.write(
        "pins.toml",
        &format!("{text}\n[groups.tvn]\nlockstep = true\n"),
    );
    let run = context.forge(&["render"]).expect_code(2);
    forge_snapshot!(run.stderr, context.path(), @r#"
    error: pins.toml:146:1: [groups.tvn] names a group no pin is in
    hint: add `group = "tvn"` to the pins that move together, or remove [groups.tvn]
    "#);
}

#[test]
fn a_key_of_another_kind_is_refused() {
    let context = TestContext::default_recipe();
    context.edit(
        "pins.toml",
        "module = \"tilelang\"\n",
        "module = \"tilelang\"\nrev = \"a6b593d\"\n",
    );
    let run = context.forge(&["render"]).expect_code(2);
    forge_snapshot!(run.stderr, context.path(), @"
    error: pins.toml:69:1: pin `tilelang` of kind python cannot have `rev`
    hint: a python pin takes: package, module, version, install, index, group, deny, allow, shim, files
    ");
}

#[test]
fn a_missing_series_folder_is_refused() {
    let context = TestContext::default_recipe();
    context.edit(
        "pins.toml",
        "series = \"patches/pr4\"",
        "series = \"patches/pr5\"",
    );
    let run = context.forge(&["render"]).expect_code(2);
    forge_snapshot!(run.stderr, context.path(), @"
    error: pins.toml:94:10: patch series folder `patches/pr5` does not exist in .
    hint: paths in pins.toml are relative to the folder that holds it
    ");
}

#[test]
fn a_short_git_revision_is_flagged() {
    let context = TestContext::default_recipe();
    context.edit(
        "pins.toml",
        "rev = \"a6b593d2826719dcf4892609af7b84ee23aaf32a\"",
        "rev = \"a6b593d\"",
    );
    let run = context.forge(&["pin", "list"]).expect_code(0);
    assert_fits_100_columns(&run.stdout, &run.stderr);
    forge_snapshot!(run.stdout, context.path(), @"
    NAME  KIND  VERSION  GROUP  SOURCE
    apache-tvm-ffi  python  0.1.11  tvm  apache-tvm-ffi; never 0.1.12 (aborts tilelang: duplicate
                                            type-attr registration)
    cutlass-dsl  python  4.6.0  -  nvidia-cutlass-dsl (in base, not installed)
    deepgemm  git  <short>  -  https://github.com/deepseek-ai/DeepGEMM.git nv_dev (short
                                            rev: mutable-looking)
    flashinfer  wheels  0.6.14  -  flashinfer-python + flashinfer-cubin + flashinfer-jit-cache
                                            by URL (3 without sha256)
    nccl  assert  2.28.9  -  in base, asserted by the nccl probe
    tilelang  python  0.1.11  tvm  tilelang
    ");
    let line = line_of("[pins.deepgemm]");
    let warning = run
        .stderr
        .lines()
        .find(|line| line.starts_with("warning: "))
        .unwrap_or_default();
    assert!(
        warning.contains(&format!(
            "pins.toml:{line}:1: pin `deepgemm`: revision a6b593d is a short prefix"
        )),
        "{}",
        run.stderr
    );
    assert_contains_flowed(&run.stdout, "(short rev: mutable-looking)");
}

#[test]
fn pin_list_json_lists_every_pin_with_kind_version_and_group() {
    let run = TestContext::default_recipe()
        .forge(&["--json", "pin", "list"])
        .expect_code(0);
    let pins = run.json()["pins"].as_array().expect("a pins array").clone();
    let summary: Vec<(String, String, String, String)> = pins
        .iter()
        .map(|pin| {
            let text = |key: &str| pin[key].as_str().unwrap_or("-").to_owned();
            let current = if pin["kind"] == "git" {
                text("rev")
            } else {
                text("version")
            };
            (text("name"), text("kind"), current, text("group"))
        })
        .collect();
    let expected = [
        ("apache-tvm-ffi", "python", "0.1.11", "tvm"),
        ("cutlass-dsl", "python", "4.6.0", "-"),
        (
            "deepgemm",
            "git",
            "a6b593d2826719dcf4892609af7b84ee23aaf32a",
            "-",
        ),
        ("flashinfer", "wheels", "0.6.14", "-"),
        ("nccl", "assert", "2.28.9", "-"),
        ("tilelang", "python", "0.1.11", "tvm"),
    ];
    let expected: Vec<(String, String, String, String)> = expected
        .iter()
        .map(|(a, b, c, d)| (a.to_string(), b.to_string(), c.to_string(), d.to_string()))
        .collect();
    assert_eq!(summary, expected);
    let jit_cache = &pins[3]["wheels"][2];
    assert_eq!(jit_cache["version"], "0.6.14+cu130");
    assert_eq!(jit_cache["index"], serde_json::Value::Null);
    assert_eq!(
        jit_cache["url"],
        "https://github.com/flashinfer-ai/flashinfer/releases/download/v0.6.14/flashinfer_jit_cache-0.6.14+cu130-cp39-abi3-manylinux_2_28_aarch64.whl"
    );
    assert_eq!(jit_cache["sha256"], serde_json::Value::Null);
    assert_eq!(
        pins[0]["deny"][0]["reason"],
        "aborts tilelang: duplicate type-attr registration"
    );
}

#[test]
fn missing_recipe_is_an_environment_error() {
    let run = TestContext::empty().forge(&["render"]).expect_code(2);
    forge_snapshot!(run.stderr, "", @"
    error: cannot read pins.toml
    caused by: No such file or directory (os error 2)
    hint: forge reads pins.toml in the folder -C names, else in the working folder or the nearest folder above it that has one (up to the repository root); pass -C DIR to point at the recipe (looked at pins.toml)
    ");
}

/// The line and column where `onto = ...` starts its value in the edited pins.toml.
fn onto_position(context: &TestContext) -> String {
    let text = context.read("pins.toml");
    let (number, line) = text
        .lines()
        .enumerate()
        .find(|(_, line)| line.starts_with("onto = "))
        .expect("an onto line");
    format!("pins.toml:{}:{}", number + 1, line.find('=').unwrap() + 3)
}

#[test]
fn a_series_onto_a_remote_no_git_pin_builds_is_refused_where_it_is_named() {
    let context = TestContext::default_recipe();
    context.edit(
        "pins.toml",
        "onto = \"overlays/vllm\"",
        "onto = { git = \"https://example.org/other.git\", rev = \"a6b593d\" }",
    );
    let run = context.forge(&["render"]).expect_code(2);
    forge_snapshot!(run.stderr, context.path(), @"
    error: pins.toml:95:8: the series is onto https://example.org/other.git, which no git pin builds
    hint: point `onto` at the `url` and `rev` of the git pin it patches, or at a recipe folder
    ");
    assert_eq!(onto_position(&context), "pins.toml:95:8");
}

#[test]
fn a_series_onto_another_commit_than_its_pin_builds_is_refused() {
    let context = TestContext::default_recipe();
    context.edit(
        "pins.toml",
        "onto = \"overlays/vllm\"",
        "onto = { git = \"https://github.com/deepseek-ai/DeepGEMM.git\", rev = \"b6b593d\" }",
    );
    let run = context.forge(&["render"]).expect_code(2);
    forge_snapshot!(run.stderr, context.path(), @"
    error: pins.toml:95:8: the series is onto https://github.com/deepseek-ai/DeepGEMM.git at <short>, but pin `deepgemm` builds <commit>
    hint: make `onto`'s rev the pin's (`forge pin bump deepgemm` moves both together)
    ");
    assert_contains(
        &run.stderr,
        &format!(
            "{}: the series is onto https://github.com/deepseek-ai/DeepGEMM.git at b6b593d, but pin `deepgemm` builds a6b593d2826719dcf4892609af7b84ee23aaf32a",
            onto_position(&context)
        ),
    );

    // A short id that prefixes the pin's full one is the same commit.
    context.edit("pins.toml", "rev = \"b6b593d\" }", "rev = \"a6b593d\" }");
    context.forge(&["render"]).expect_code(0);
}

#[test]
fn a_series_finds_its_pin_by_remote_and_commit_whatever_the_url_spelling() {
    let context = TestContext::default_recipe();
    // Another pin on the same remote at another commit, listed first.
    context.edit(
        "pins.toml",
        "[pins.deepgemm]",
        "[pins.aaa-deepgemm]\nkind = \"git\"\nurl = \"https://github.com/deepseek-ai/DeepGEMM.git\"\nbranch = \"nv_dev\"\nrev = \"b6b593d\"\nmodule = \"deep_gemm\"\n\n[pins.deepgemm]",
    );
    with_deepgemm_series(
        &context,
        "{ git = \"https://github.com/deepseek-ai/DeepGEMM/\", rev = \"a6b593d\" }",
    );
    let run = context.forge(&["render"]).expect_code(0);
    forge_snapshot!(
        "pins_series_by_remote_and_commit",
        run.stdout,
        context.path()
    );
}

#[test]
fn a_second_series_onto_the_same_pin_is_refused_where_it_is_named() {
    let context = TestContext::default_recipe();
    let onto = "{ git = \"https://github.com/deepseek-ai/DeepGEMM.git\", rev = \"a6b593d\" }";
    with_deepgemm_series(&context, onto);
    context.edit(
        "pins.toml",
        "[[overlays]]",
        &format!("[[patches]]\nseries = \"patches/pr4\"\nonto = {onto}\n\n[[overlays]]"),
    );
    let text = context.read("pins.toml");
    let line = text
        .lines()
        .enumerate()
        .filter(|(_, line)| line.starts_with("onto = { git"))
        .nth(1)
        .map(|(number, _)| number + 1)
        .expect("a second series onto DeepGEMM");
    let run = context.forge(&["render"]).expect_code(2);
    forge_snapshot!(run.stderr, context.path(), @"
    error: pins.toml:103:8: a second series onto pin `deepgemm`
    hint: put all of a pin's patches in one series folder, in the order they apply
    ");
    assert_eq!(line, 103);
}

/// A tag template that loops is stopped by the same fuel as the Dockerfile template, at once,
/// instead of costing every command seconds.
#[test]
fn a_tag_template_that_loops_is_refused_quickly() {
    let context = TestContext::default_recipe();
    context.edit(
        "pins.toml",
        "immutable = [\"{{ date }}-pr4-experimental\"]",
        "immutable = [\"{% for a in range(10000) %}{% for b in range(10000) %}{% endfor %}{% endfor %}{{ date }}\"]",
    );
    let started = std::time::Instant::now();
    let run = context.forge(&["render"]).expect_code(2);
    forge_snapshot!(run.stderr, context.path(), @r#"
    error: pins.toml:14:14: tag template "{% for a in range(10000) %}{% for b in range(10000) %}{% endfor %}{% endfor %}{{ date }}": invalid template
    hint: tags follow the registry grammar [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}; nothing was rendered
    "#);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(3),
        "took {:?}",
        started.elapsed()
    );
}

#[test]
fn a_committed_render_must_be_a_file_in_an_existing_recipe_folder() {
    let line = line_of("committed = ");
    let from = "committed = \"ci/Dockerfile.rendered\"";
    refused(
        from,
        "committed = \"nowhere/Dockerfile.rendered\"",
        &format!("{line}:13:"),
        "[render] committed `nowhere/Dockerfile.rendered`: the folder `nowhere` does not exist",
    );
    refused(
        from,
        "committed = \"pins.toml\"",
        &format!("{line}:13:"),
        "[render] committed names pins.toml itself",
    );
    refused(
        from,
        "committed = \"../Dockerfile\"",
        &format!("{line}:13:"),
        "invalid recipe path",
    );
}

#[test]
fn the_base_python_is_major_dot_minor() {
    let line = line_of("python = \"3.12\"");
    for bad in ["3", "3.12.1", "py3.12", "03.12"] {
        refused(
            "python = \"3.12\"",
            &format!("python = \"{bad}\""),
            &format!("{line}:10:"),
            "expected MAJOR.MINOR, such as 3.12",
        );
    }
}
