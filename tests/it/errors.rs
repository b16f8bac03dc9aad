//! How errors read: one snapshot per kind of refusal (message, causes, hint, exit code), a check
//! that no message repeats the cause printed under it, and a check that every error type in
//! the source says what to do about itself (`advised!`).

use crate::support::snapshot::forge_snapshot;
use crate::support::{Run, TestContext, free_port, repository_root};

/// Panics when a `caused by:` line only repeats what the line above it already said.
#[track_caller]
fn assert_no_repeated_cause(stderr: &str) {
    let lines: Vec<&str> = stderr.lines().collect();
    for pair in lines.windows(2) {
        if let Some(cause) = pair[1].strip_prefix("caused by: ") {
            assert!(
                !pair[0].contains(cause),
                "the cause is repeated by the line above it:\n{stderr}"
            );
        }
    }
}

/// Runs forge in `context` and snapshots what it printed as `name`.
#[track_caller]
fn snapshot(name: &str, context: &TestContext, args: &[&str], env: &[(&str, &str)]) -> Run {
    let run = context.forge_with(args, env);
    assert_no_repeated_cause(&run.stderr);
    assert!(run.stderr.contains("error: "), "{}", run.stderr);
    let text = format!("exit {}\n{}", run.code, run.stderr);
    insta::assert_snapshot!(name, crate::support::snapshot::human(&text, context.path()));
    run
}

#[test]
fn a_recipe_folder_without_pins_toml() {
    let context = TestContext::empty();
    snapshot("error_no_pins_toml", &context, &["render"], &[]);
    // Under --json the same error is one document on stdout.
    let run = context.forge(&["--json", "render"]).expect_code(2);
    let document = run.json();
    assert_eq!(document["schema"], 1);
    insta::assert_snapshot!(
        "error_no_pins_toml_json",
        crate::support::json_shape(&document, context.path())
    );
}

#[test]
fn a_value_outside_its_grammar() {
    let context = TestContext::default_recipe();
    context.edit(
        "pins.toml",
        "version = \"0.6.14\"",
        "version = \"0.6.14 && rm -rf /\"",
    );
    snapshot("error_grammar", &context, &["render"], &[]);
}

#[test]
fn an_unknown_key() {
    let context = TestContext::default_recipe();
    context.edit(
        "pins.toml",
        "rev = \"a6b593d2826719dcf4892609af7b84ee23aaf32a\"",
        "rev = \"a6b593d2826719dcf4892609af7b84ee23aaf32a\"\nrevision = \"x\"",
    );
    snapshot("error_unknown_key", &context, &["render"], &[]);
}

#[test]
fn a_template_that_names_nothing() {
    let context = TestContext::default_recipe();
    context.edit(
        "templates/Dockerfile.j2",
        "{{ pins.deepgemm.rev }}",
        "{{ pins.deepgemm.revision }}",
    );
    snapshot("error_template", &context, &["render"], &[]);
}

#[test]
fn a_stale_render() {
    let context = TestContext::default_recipe();
    context.write("Dockerfile", "FROM scratch\n");
    let run = snapshot(
        "error_stale_render",
        &context,
        &["render", "--out", "Dockerfile", "--check"],
        &[],
    );
    assert_eq!(run.code, 1);
}

#[test]
fn a_conflicting_and_an_unreadable_patch() {
    let context = TestContext::default_recipe();
    // A line the first patch changes, changed by hand in the overlay: the series conflicts.
    let overlay = context.path().join("patches/pr4");
    let first = std::fs::read_dir(&overlay)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .min()
        .unwrap();
    let text = std::fs::read_to_string(&first).unwrap();
    let removed = text
        .lines()
        .find(|line| line.starts_with('-') && !line.starts_with("---") && line.len() > 3)
        .expect("a removed line")[1..]
        .to_owned();
    let file = text
        .lines()
        .find_map(|line| line.strip_prefix("--- a/"))
        .expect("a file")
        .to_owned();
    let target = context.path().join("overlays/vllm").join(&file);
    let content = std::fs::read_to_string(&target).unwrap();
    std::fs::write(&target, content.replacen(&removed, "changed by hand", 1)).unwrap();
    let run = snapshot("error_patch_conflict", &context, &["patch", "check"], &[]);
    assert_eq!(run.code, 1);

    let context = TestContext::default_recipe();
    context.write(
        "junk.patch",
        "From: A <a@example.org>\nSubject: x\nDate: Mon, 6 Jul 2026 14:12:09 +0200\n\nno diff\n",
    );
    snapshot(
        "error_not_a_patch",
        &context,
        &["patch", "check", "--onto", "overlays/vllm", "junk.patch"],
        &[],
    );
}

#[test]
fn a_missing_record() {
    let context = TestContext::default_recipe();
    let run = snapshot(
        "error_locked_without_record",
        &context,
        &["build", "--dry-run", "--locked"],
        &[],
    );
    assert_eq!(run.code, 1);
    snapshot("error_report_without_record", &context, &["report"], &[]);
}

#[test]
fn an_unknown_pin() {
    let context = TestContext::default_recipe();
    snapshot(
        "error_unknown_pin",
        &context,
        &["pin", "bump", "flashinfr"],
        &[],
    );
}

#[test]
fn a_git_remote_that_cannot_be_reached() {
    let context = TestContext::default_recipe();
    // A loopback port nothing listens on.
    let url = format!("http://127.0.0.1:{}/DeepGEMM.git", free_port());
    context.edit(
        "pins.toml",
        "url = \"https://github.com/deepseek-ai/DeepGEMM.git\"",
        &format!("url = \"{url}\""),
    );
    let home = context.path().join(".home");
    let cache = home.join("cache");
    let run = snapshot(
        "error_git_remote",
        &context,
        &["pin", "bump", "deepgemm", "--to", "0000000"],
        &[
            ("HOME", home.to_str().unwrap()),
            ("XDG_CACHE_HOME", cache.to_str().unwrap()),
        ],
    );
    assert!(run.stderr.contains("hint: "), "{}", run.stderr);
}

#[test]
fn a_daemon_that_is_not_there() {
    let context = TestContext::default_recipe();
    snapshot(
        "error_no_daemon",
        &context,
        &["build"],
        &[("DOCKER_HOST", "tcp://127.0.0.1:1")],
    );
}

#[test]
fn a_recipe_path_that_leads_outside_the_recipe() {
    let context = TestContext::default_recipe();
    std::os::unix::fs::symlink("/dev/null", context.path().join(".dockerignore")).unwrap();
    snapshot("error_path_outside", &context, &["build", "--dry-run"], &[]);
}

#[test]
fn a_special_file_in_an_overlay() {
    let context = TestContext::default_recipe();
    crate::support::fifo(&context.path().join("overlays/vllm/pipe"));
    snapshot("error_special_file", &context, &["build", "--dry-run"], &[]);
}

#[test]
fn secret_looking_files_in_the_context() {
    let context = TestContext::default_recipe();
    context.write("overlays/vllm/.env.local", "TOKEN=x\n");
    context.write("overlays/vllm/deploy/id_ed25519", "key\n");
    // Not in the context: only the shim file of that folder is copied.
    context.write("overlays/cutlass-dsl/id_rsa", "key\n");
    let run = snapshot("error_secrets", &context, &["build", "--dry-run"], &[]);
    assert_eq!(run.code, 1);
}

/// Every error type in the source registers what it advises, so that no error reaches the user
/// without a hint or a reason for having none.
#[test]
fn every_error_type_is_advised() {
    let mut missing = Vec::new();
    let sources: Vec<String> = crate::support::rust_files(&repository_root().join("src"))
        .iter()
        .map(|path| std::fs::read_to_string(path).unwrap())
        .collect();
    let all = sources.join("\n");
    let mut types = Vec::new();
    for source in &sources {
        let mut rest = source.as_str();
        while let Some(at) = rest.find("thiserror::Error") {
            rest = &rest[at..];
            let declaration = rest
                .find("pub enum ")
                .map(|at| (at, "pub enum "))
                .into_iter()
                .chain(rest.find("pub struct ").map(|at| (at, "pub struct ")))
                .min();
            if let Some((at, keyword)) = declaration {
                let name: String = rest[at + keyword.len()..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                types.push(name);
            }
            rest = &rest["thiserror::Error".len()..];
        }
    }
    assert!(types.len() > 20, "found only {types:?}");
    for name in types {
        if !all.contains(&format!("advised!({name})")) {
            missing.push(name);
        }
    }
    assert!(
        missing.is_empty(),
        "error types without `advised!`: {missing:?}"
    );
}

#[test]
fn daemons_nodes_and_registry_hosts_are_checked_on_the_command_line() {
    let context = TestContext::default_recipe();
    let run = context
        .forge(&["verify-digest", "--host", "node-2:2375"])
        .expect_code(2);
    forge_snapshot!(run.stderr, "", @r"
    error: invalid value 'node-2:2375' for '--host <URL>': expected unix://PATH, tcp://HOST:PORT or ssh://[USER@]HOST[:PORT]

    For more information, try '--help'.
    ");
    let run = context
        .forge(&["build", "--push", "--node", "linux/arm64"])
        .expect_code(2);
    forge_snapshot!(run.stderr, "", @r"
    error: invalid value 'linux/arm64' for '--node <PLATFORM=URL>': expected PLATFORM=URL, such as linux/arm64=ssh://USER@HOST

    For more information, try '--help'.
    ");
    let run = context
        .forge(&["build", "--push", "--node", "linux/arm64=spark-2"])
        .expect_code(2);
    forge_snapshot!(run.stderr, context.path(), @"
    error: invalid value 'linux/arm64=spark-2' for '--node <PLATFORM=URL>': expected unix://PATH, tcp://HOST:PORT or ssh://[USER@]HOST[:PORT]

    For more information, try '--help'.
    ");
    // A scheme or a path never matched a registry: it is refused, not silently ignored.
    let run = context
        .forge(&[
            "build",
            "--dry-run",
            "--insecure-registry",
            "http://127.0.0.1:5000",
        ])
        .expect_code(2);
    forge_snapshot!(run.stderr, "", @r#"
    error: invalid value 'http://127.0.0.1:<port>' for '--insecure-registry <HOST>': invalid registry host "http://127.0.0.1:<port>": expected HOST or HOST:PORT without a scheme or a path, such as registry.internal:5000

    For more information, try '--help'.
    "#);
}
