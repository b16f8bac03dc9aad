//! The pipeline job, `ci/workflows/forge.yml`: it validates against GitHub's workflow schema,
//! the render it checks is current, and every `forge` line it runs works as written.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::build::{Example, docker_ready};
use crate::registry_server::RegistryServer;
use crate::support::{TestContext, assert_check_catches_a_stale_render, repository_root};

const WORKFLOW: &str = "ci/workflows/forge.yml";
const RENDERED: &str = "ci/Dockerfile.rendered";

/// The `forge` command lines of the workflow's `run:` steps, in file order.
fn forge_lines() -> Vec<String> {
    let text = std::fs::read_to_string(repository_root().join(WORKFLOW)).expect("the workflow");
    text.lines()
        .map(|line| line.trim())
        .map(|line| line.strip_prefix("run: ").unwrap_or(line))
        .filter(|line| line.starts_with("forge "))
        .map(str::to_owned)
        .collect()
}

fn check_jsonschema(file: &Path) -> std::process::Output {
    Command::new("check-jsonschema")
        .args(["--builtin-schema", "vendor.github-workflows"])
        .arg(file)
        .output()
        .unwrap_or_else(|error| {
            panic!("check-jsonschema cannot run ({error}); ci/test installs it in target/ci-venv")
        })
}

#[test]
fn the_workflow_validates_against_the_github_workflow_schema() {
    let output = check_jsonschema(&repository_root().join(WORKFLOW));
    assert!(
        output.status.success(),
        "{WORKFLOW} does not validate:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );

    // The validator does refuse a broken workflow: a misspelt key.
    let folder = TestContext::empty();
    let broken = folder.path().join("forge.yml");
    let text = std::fs::read_to_string(repository_root().join(WORKFLOW)).unwrap();
    std::fs::write(&broken, text.replacen("runs-on:", "runs_on:", 1)).unwrap();
    assert!(!check_jsonschema(&broken).status.success());
}

#[test]
fn the_workflow_logs_in_with_its_own_token_and_writes_packages_only_when_publishing() {
    let text = std::fs::read_to_string(repository_root().join(WORKFLOW)).unwrap();
    assert!(text.starts_with("# forge's pipeline job, installed as .github/workflows/forge.yml"));
    assert_eq!(text.matches("packages: write").count(), 1, "{text}");
    let publish = &text[text.find("  publish:").expect("a publish job")..];
    assert!(publish.contains("packages: write"));
    assert!(publish.contains("runs-on: [self-hosted, linux, arm64]"));
    for line in text.lines().filter(|line| line.contains("secrets.")) {
        assert_eq!(
            line.trim(),
            "FORGE_REGISTRY_PASSWORD: ${{ secrets.GITHUB_TOKEN }}",
            "the only secret is the workflow's token, passed in the environment"
        );
    }
    assert!(
        !text.contains("echo $FORGE_REGISTRY") && !text.contains("echo \"$FORGE_REGISTRY"),
        "the token is never echoed"
    );
}

#[test]
fn the_committed_render_is_current_and_a_stale_one_fails_the_check() {
    let root = repository_root();
    let output = Command::new(env!("CARGO_BIN_EXE_forge"))
        .arg("-C")
        .arg(&root)
        .args(["-q", "render", "--out", RENDERED, "--check"])
        .current_dir(&root)
        .env("NO_COLOR", "1")
        .output()
        .expect("forge runs");
    assert_eq!(
        output.status.code(),
        Some(0),
        "{RENDERED} is not the current render; run `cargo run -- render --out {RENDERED}` and commit it\n{}",
        String::from_utf8_lossy(&output.stderr)
    );

    let context = TestContext::default_recipe();
    context.write(
        RENDERED,
        &std::fs::read_to_string(root.join(RENDERED)).unwrap(),
    );
    assert_check_catches_a_stale_render(&context, RENDERED);
}

/// Each `forge` line of the workflow, run as written by `sh` in the order the jobs run them,
/// against the offline example pushed to a registry on 127.0.0.1: the check job, the pull
/// request's build, then main's locked build, push, verification and report.
#[test]
fn every_forge_line_of_the_workflow_runs_as_written() {
    let lines = forge_lines();
    let expected = [
        "forge render --out ci/Dockerfile.rendered --check",
        "forge patch check",
        "forge build --dry-run",
        "forge build --progress plain",
        "forge report >> \"$GITHUB_STEP_SUMMARY\"",
        "forge build --locked --push --progress plain",
        "forge verify-digest --remote --json > verify-digest.json",
        "forge report > tester-report.md",
    ];
    assert_eq!(
        lines, expected,
        "the workflow's forge lines changed: update this test"
    );
    if !docker_ready() {
        return;
    }
    let registry = RegistryServer::start();
    let example = Example::with_repository(&format!(
        "{}/forge-test/workflow-{}",
        registry.address(),
        std::process::id()
    ));
    let folder = example.context.path();
    std::fs::create_dir_all(folder.join("ci")).unwrap();
    example
        .context
        .forge(&["-q", "render", "--out", RENDERED])
        .expect_code(0);
    let summary = folder.join("summary.md");
    let binary = PathBuf::from(env!("CARGO_BIN_EXE_forge"));
    let path = format!(
        "{}:{}",
        binary.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for line in &lines {
        let output = Command::new("sh")
            .args(["-c", line])
            .current_dir(folder)
            .env("PATH", &path)
            .env("GITHUB_STEP_SUMMARY", &summary)
            .env("SOURCE_DATE_EPOCH", "1783500000")
            .env("NO_COLOR", "1")
            .output()
            .expect("sh runs");
        assert!(
            output.status.success(),
            "`{line}` failed ({})\n--- stdout\n{}\n--- stderr\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }

    // What the job keeps: the record names the pushed digests, the verification passed, and
    // the report and the summary name the image and its patch author.
    let lock = std::fs::read_to_string(folder.join("forge.lock")).unwrap();
    let pushed: Vec<&str> = lock
        .lines()
        .filter_map(|line| line.strip_prefix("pushed = \""))
        .map(|line| line.trim_end_matches('"'))
        .collect();
    assert_eq!(pushed.len(), 2, "{lock}");
    let verified: serde_json::Value =
        serde_json::from_slice(&std::fs::read(folder.join("verify-digest.json")).unwrap())
            .expect("verify-digest.json is one JSON document");
    assert!(verified.is_object(), "{verified}");
    let report = std::fs::read_to_string(folder.join("tester-report.md")).unwrap();
    assert!(report.contains(&format!("`{}`", pushed[0])), "{report}");
    assert!(
        report.contains("Ada Lovelace <ada@example.org>"),
        "{report}"
    );
    let summary = std::fs::read_to_string(&summary).unwrap();
    assert!(
        summary.starts_with("# Tester report: 127.0.0.1:"),
        "{summary}"
    );
}
