//! The pipeline job, `.github/workflows/forge.yml`, where GitHub reads it: it validates against
//! GitHub's workflow schema, pins every action to a commit, bounds every job, hands secrets only
//! to the steps that run forge, signs and verifies what it publishes; and CI's journey runs the
//! `run:` scripts of its jobs, read from the YAML, in a fresh clone on an empty daemon.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use yaml_rust2::{Yaml, YamlLoader};

use crate::support::git::{GitRemote, git};
use crate::support::image_guard::ImageGuard;
use crate::support::images::{Tagged, docker};
use crate::support::images::{base_image, copy_example, docker_ready};
use crate::support::keys::Keys;
use crate::support::node::SecondDaemon;
use crate::support::registry::RegistryServer;
use crate::support::registry::registry_tools_missing;
use crate::support::snapshot::forge_snapshot;
use crate::support::{
    TestContext, assert_check_catches_a_stale_render, assert_contains, repository_root,
};

const WORKFLOW: &str = ".github/workflows/forge.yml";
const RELEASE: &str = ".github/workflows/release.yml";
/// Every workflow GitHub reads from this repository.
const WORKFLOWS: [&str; 2] = [WORKFLOW, RELEASE];
const RENDERED: &str = "ci/Dockerfile.rendered";
const PUBLIC_KEY: &str = "ci/signing.pub";

fn workflow() -> Yaml {
    workflow_at(WORKFLOW)
}

fn workflow_at(path: &str) -> Yaml {
    let text = std::fs::read_to_string(repository_root().join(path)).expect("the workflow");
    YamlLoader::load_from_str(&text)
        .expect("the workflow is YAML")
        .remove(0)
}

/// Each job by name, in file order.
fn jobs(workflow: &Yaml) -> Vec<(String, &Yaml)> {
    workflow["jobs"]
        .as_hash()
        .expect("jobs")
        .iter()
        .map(|(name, job)| (name.as_str().unwrap().to_owned(), job))
        .collect()
}

fn steps(job: &Yaml) -> &[Yaml] {
    job["steps"].as_vec().expect("steps")
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
fn the_workflow_is_where_github_reads_it_and_validates_against_its_schema() {
    assert!(
        !repository_root().join("ci/workflows").exists(),
        "GitHub reads workflows from .github/workflows only"
    );
    for path in WORKFLOWS {
        let output = check_jsonschema(&repository_root().join(path));
        assert!(
            output.status.success(),
            "{path} does not validate:\n{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }

    // The validator does refuse a broken workflow: a misspelt key.
    let folder = TestContext::empty();
    let broken = folder.path().join("forge.yml");
    let text = std::fs::read_to_string(repository_root().join(WORKFLOW)).unwrap();
    std::fs::write(&broken, text.replacen("runs-on:", "runs_on:", 1)).unwrap();
    assert!(!check_jsonschema(&broken).status.success());
}

/// Every action pinned to a full commit with its release beside it, every job bounded in
/// time, every checkout without stored credentials, and cargo's cache in every job that
/// builds forge.
#[test]
fn every_action_is_pinned_to_a_commit_and_every_job_has_a_timeout() {
    for path in WORKFLOWS {
        pinned_and_bounded(path);
    }
}

fn pinned_and_bounded(path: &str) {
    let text = std::fs::read_to_string(repository_root().join(path)).unwrap();
    let pinned =
        regex::Regex::new(r"^[a-z0-9-]+/[a-z0-9-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+$").unwrap();
    let uses: Vec<&str> = text
        .lines()
        .filter_map(|line| line.trim().trim_start_matches("- ").strip_prefix("uses: "))
        .collect();
    assert!(uses.len() >= 4, "{path}: {uses:?}");
    for action in uses {
        assert!(
            pinned.is_match(action),
            "{path}: not pinned to a commit: {action}"
        );
    }
    let workflow = workflow_at(path);
    for (name, job) in jobs(&workflow) {
        let minutes = job["timeout-minutes"].as_i64();
        assert!(
            minutes.is_some_and(|minutes| (1..=240).contains(&minutes)),
            "job {name} has no timeout-minutes (GitHub's default is six hours)"
        );
        let steps = steps(job);
        for step in steps {
            if step["uses"]
                .as_str()
                .is_some_and(|uses| uses.starts_with("actions/checkout@"))
            {
                assert_eq!(
                    step["with"]["persist-credentials"].as_bool(),
                    Some(false),
                    "job {name}: checkout keeps no token in .git/config"
                );
            }
        }
        let builds_forge = steps.iter().any(|step| {
            step["run"]
                .as_str()
                .is_some_and(|run| run.contains("cargo build"))
        });
        let cached = steps.iter().any(|step| {
            step["uses"]
                .as_str()
                .is_some_and(|uses| uses.starts_with("actions/cache@"))
        });
        assert!(
            !builds_forge || cached,
            "job {name} builds forge without cargo's cache"
        );
    }
}

/// Secrets reach only the steps that run forge (never `cargo build`, whose build scripts run
/// crates' code), only the publishing job writes packages, and it signs with the secret key and
/// verifies with the committed public key; a weekly job says which pins can move.
#[test]
fn secrets_reach_only_forge_and_publish_signs_and_verifies_with_the_committed_key() {
    for path in WORKFLOWS {
        secrets_reach_only_forge(path);
    }
    let text = std::fs::read_to_string(repository_root().join(WORKFLOW)).unwrap();
    let workflow = workflow();
    assert_eq!(text.matches("packages: write").count(), 1, "{text}");
    let publish = &workflow["jobs"]["publish"];
    assert_eq!(publish["permissions"]["packages"].as_str(), Some("write"));
    let runs: Vec<&str> = steps(publish)
        .iter()
        .filter_map(|step| step["run"].as_str())
        .collect();
    assert!(
        runs.contains(&"forge build --locked --push --sign --progress plain"),
        "{runs:?}"
    );
    let signing = steps(publish)
        .iter()
        .find(|step| {
            step["run"]
                .as_str()
                .is_some_and(|run| run.contains("--sign"))
        })
        .unwrap();
    assert_eq!(
        signing["env"]["FORGE_SIGNING_KEY"].as_str(),
        Some("${{ secrets.FORGE_SIGNING_KEY }}")
    );
    assert!(
        runs.iter().any(|run| run.starts_with(&format!("forge verify-digest --remote --key {PUBLIC_KEY}"))),
        "{runs:?}"
    );
    let key = std::fs::read_to_string(repository_root().join(PUBLIC_KEY)).unwrap();
    assert!(key.starts_with("-----BEGIN PUBLIC KEY-----\n"), "{key}");
    let outdated = jobs(&workflow)
        .into_iter()
        .find(|(_, job)| {
            steps(job)
                .iter()
                .any(|step| step["run"].as_str() == Some("forge pin outdated --exit-code"))
        })
        .expect("a job runs `forge pin outdated --exit-code`");
    assert_contains(outdated.1["if"].as_str().unwrap(), "schedule");
    assert!(
        workflow["on"]["schedule"]
            .as_vec()
            .is_some_and(|cron| !cron.is_empty())
    );
}

/// In the workflow at `path`, no job sets environment for all its steps, and a step that
/// reads a secret runs forge and nothing else.
fn secrets_reach_only_forge(path: &str) {
    let text = std::fs::read_to_string(repository_root().join(path)).unwrap();
    let workflow = workflow_at(path);
    for (name, job) in jobs(&workflow) {
        assert!(
            job["env"].as_hash().is_none_or(|env| env.is_empty()),
            "job {name}: environment goes on the steps that need it"
        );
        for step in steps(job) {
            let env = step["env"].as_hash().map(|env| {
                env.values()
                    .filter_map(Yaml::as_str)
                    .any(|value| value.contains("secrets."))
            });
            if env == Some(true) {
                let run = step["run"].as_str().unwrap_or_default();
                assert!(
                    run.lines().all(|line| line.trim().starts_with("forge ")),
                    "{path}: job {name}: a step with secrets runs something other than forge: {run}"
                );
            }
        }
    }
    assert!(
        !text.contains("echo $FORGE_") && !text.contains("echo \"$FORGE_"),
        "{path}: no secret is echoed"
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
        .env("COLUMNS", "100")
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

/// A fresh clone of this repository builds `--locked`: the committed forge.lock of each member
/// of the family (the layer and its DSpark lane) records that member's inputs as they are.
#[test]
fn a_fresh_clone_builds_locked_from_the_committed_inputs() {
    let clone = tempfile::tempdir().unwrap();
    let root = repository_root();
    for entry in [
        "pins.toml",
        "templates",
        "patches",
        "overlays",
        "ci",
        "forge.lock",
        "forge-workspace.toml",
        "lanes",
    ] {
        crate::support::copy_tree(&root.join(entry), &clone.path().join(entry));
    }
    let run = |args: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_forge"))
            .args(args)
            .current_dir(clone.path())
            .env_remove("SOURCE_DATE_EPOCH")
            .env("NO_COLOR", "1")
            .env("COLUMNS", "100")
            .output()
            .unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (code, stderr) = run(&["build", "--locked", "--dry-run"]);
    assert_eq!(
        code,
        Some(0),
        "a forge.lock does not record its member's inputs: run `cargo run -- lock` at the root and commit them\n{stderr}"
    );
    forge_snapshot!(stderr, clone.path(), @"
        Planning member deepseek
        Rendered Dockerfile sha256:<digest>
    warning: pin `flashinfer`: no sha256 recorded for flashinfer-python, flashinfer-cubin, flashinfer-jit-cache, so the Dockerfile installs them unchecked (`forge pin bump flashinfer --to 0.6.14` downloads and records them)
         Patched patches/pr4 onto overlays/vllm (scratch repository) (2 applied, 0 already there)
       Assembled context sha256:<digest> (11 entries, 20.5 KiB)
          Locked inputs match forge.lock
        Planning member dspark
        Rendered Dockerfile sha256:<digest>
    warning: pin `flashinfer`: no sha256 recorded for flashinfer-python, flashinfer-cubin, flashinfer-jit-cache, so the Dockerfile installs them unchecked (`forge pin bump flashinfer --to 0.6.14` downloads and records them)
         Patched patches/pr4 onto overlays/vllm (scratch repository) (2 applied, 0 already there)
       Assembled context sha256:<digest> (11 entries, 20.5 KiB)
          Locked inputs match forge.lock
    ");
}

/// How the workflow's `${{ }}` expressions read on the journey's runner.
struct Expressions {
    signing_key: String,
}

impl Expressions {
    /// The value of an `env:` entry, its expression filled in.
    fn value(&self, value: &str) -> String {
        match value {
            "${{ secrets.GITHUB_TOKEN }}" => "token-of-the-run".to_owned(),
            "${{ github.actor }}" => "ci".to_owned(),
            "${{ secrets.FORGE_SIGNING_KEY }}" => self.signing_key.clone(),
            other => {
                assert!(!other.contains("${{"), "the journey cannot fill in {other}");
                other.to_owned()
            }
        }
    }
}

/// A job's `run:` scripts as a runner runs them: the step's environment, `bash -e`, in the
/// checkout. The step that builds forge is the one left out: the binary under test stands in.
struct Runner<'a> {
    workflow: &'a Yaml,
    expressions: &'a Expressions,
    daemon: &'a str,
    /// The port of forge's conduit the daemon reaches.
    conduit: &'a str,
    path: String,
}

impl Runner<'_> {
    fn run_job(&self, job: &str, checkout: &Path) -> Result<(), String> {
        self.run_job_with(job, checkout, &BTreeMap::new())
    }

    /// Runs `job`'s scripts with `matrix` filling in `${{ matrix.NAME }}`. A step that builds
    /// forge is left out (the binary under test stands in), and so is the one that publishes to
    /// GitHub (`gh release create`), which the journey cannot reach; a folder a step appends to
    /// `$GITHUB_PATH` is on `PATH` for the steps after it.
    fn run_job_with(
        &self,
        job: &str,
        checkout: &Path,
        matrix: &BTreeMap<&str, &str>,
    ) -> Result<(), String> {
        let summary = checkout.join("step-summary.md");
        let github_path = checkout.join("github-path");
        let temporary = tempfile::tempdir().unwrap();
        for step in steps(&self.workflow["jobs"][job]) {
            let Some(script) = step["run"].as_str() else {
                continue;
            };
            if script.contains("cargo build") || script.contains("gh release create") {
                continue;
            }
            let script = (matrix.iter()).fold(script.to_owned(), |script, (name, value)| {
                script.replace(&format!("${{{{ matrix.{name} }}}}"), value)
            });
            assert!(
                !script.contains("${{"),
                "the journey cannot fill in {script}"
            );
            let env: BTreeMap<String, String> = step["env"]
                .as_hash()
                .into_iter()
                .flatten()
                .map(|(key, value)| {
                    (
                        key.as_str().unwrap().to_owned(),
                        self.expressions.value(value.as_str().unwrap()),
                    )
                })
                .collect();
            let added = std::fs::read_to_string(&github_path).unwrap_or_default();
            let path = (added.lines().rev())
                .chain([self.path.as_str()])
                .collect::<Vec<_>>()
                .join(":");
            let folder = match step["working-directory"].as_str() {
                Some(folder) => checkout.join(folder),
                None => checkout.to_owned(),
            };
            let output = Command::new("bash")
                .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", &script])
                .current_dir(folder)
                .env_clear()
                .env("PATH", path)
                .env("HOME", checkout)
                .env("CI", "true")
                .env("NO_COLOR", "1")
                .env("COLUMNS", "100")
                .env("CARGO_TERM_COLOR", "never")
                .env("DOCKER_HOST", self.daemon)
                .env("FORGE_CONDUIT_PORT", self.conduit)
                .env("GITHUB_STEP_SUMMARY", &summary)
                .env("GITHUB_PATH", &github_path)
                .env("GITHUB_REF_NAME", "v0.1.0")
                .env("GITHUB_REPOSITORY", "aeon-7/forge")
                .env("RUNNER_TEMP", temporary.path())
                .envs(env)
                .output()
                .unwrap();
            if !output.status.success() {
                return Err(format!(
                    "job {job}: `{script}` failed ({})\n--- stdout\n{}\n--- stderr\n{}",
                    output.status,
                    String::from_utf8_lossy(&output.stdout),
                    String::from_utf8_lossy(&output.stderr)
                ));
            }
        }
        Ok(())
    }
}

/// The recipe repository of CI's journey: the offline example publishing to `repository`, its
/// base in the registry (a runner pulls it), its git pin on `remote`, with the workflow, the
/// committed render, the public key and forge.lock's inputs, all committed.
fn recipe_repository(repository: &str, base: &str, remote: &GitRemote, keys: &Keys) -> TestContext {
    let source = TestContext::empty();
    copy_example(source.path());
    let guard = ImageGuard::new(repository);
    let pins = source
        .read("pins.toml")
        .replace(
            "repository = \"forge-example/offline\"",
            &format!("repository = \"{repository}\""),
        )
        .replace(
            &crate::support::images::base_line(),
            &format!("image = \"{base}\""),
        )
        .replace("https://example.org/forge/offline-app.git", &remote.url())
        .replace("branch = \"main\"", "branch = \"nv_dev\"")
        .replace("3f1c0de5a9b2e47c8d6f0a1b2c3d4e5f60718293", &remote.first)
        .replace(
            "\"dev.forge.example\" = \"offline\"",
            &format!(
                "\"dev.forge.example\" = \"offline\"\n{}",
                guard.label_entry()
            ),
        )
        .replace(
            "[env]",
            &format!("[render]\ncommitted = \"{RENDERED}\"\n\n[env]"),
        );
    source.write("pins.toml", &pins);
    std::fs::create_dir_all(source.path().join(".github/workflows")).unwrap();
    std::fs::copy(
        repository_root().join(WORKFLOW),
        source.path().join(WORKFLOW),
    )
    .unwrap();
    source.write(PUBLIC_KEY, &keys.public_text());
    source
        .forge(&["-q", "render", "--out", RENDERED])
        .expect_code(0);
    source.forge(&["-q", "lock"]).expect_code(0);
    git(source.path(), &["init", "--quiet"]);
    git(source.path(), &["add", "--all"]);
    git(source.path(), &["commit", "--quiet", "-m", "the recipe"]);
    source
}

/// A fresh clone of `source` in a folder of its own, as `actions/checkout` makes one.
fn fresh_clone(source: &TestContext) -> tempfile::TempDir {
    let folder = tempfile::tempdir().unwrap();
    git(
        folder.path(),
        &[
            "clone",
            "--quiet",
            source.path().to_str().unwrap(),
            "checkout",
        ],
    );
    folder
}

/// `PATH` with the binary under test first, as the job's "Build forge" step leaves it.
fn path_with_forge() -> String {
    let binary = PathBuf::from(env!("CARGO_BIN_EXE_forge"));
    format!(
        "{}:{}",
        binary.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// What a publish job leaves in `checkout`: a verification that held, signature included,
/// and the tester report, in the job summary too.
fn assert_published_and_verified(checkout: &Path) {
    let verified: serde_json::Value =
        serde_json::from_slice(&std::fs::read(checkout.join("verify-digest.json")).unwrap())
            .unwrap();
    assert_eq!(verified["ok"], true, "{verified:#}");
    let rows = verified["checks"].as_array().unwrap();
    assert!(
        rows.iter()
            .any(|row| row["name"] == "signature" && row["ok"] == true),
        "{verified:#}"
    );
    let report = std::fs::read_to_string(checkout.join("tester-report.md")).unwrap();
    assert_contains(&report, "Ada Lovelace <ada@example.org>");
    let summary = std::fs::read_to_string(checkout.join("step-summary.md")).unwrap();
    assert!(
        summary.starts_with("# Tester report: 127.0.0.1:"),
        "{summary}"
    );
}

/// The manifest digest the publish job in `checkout` recorded.
fn pushed(checkout: &Path) -> String {
    let lock = std::fs::read_to_string(checkout.join("forge.lock")).unwrap();
    lock.lines()
        .find_map(|line| line.strip_prefix("pushed = \""))
        .map(|digest| digest.trim_end_matches('"').to_owned())
        .expect("the publish job recorded the pushed digest")
}

/// A pull request that moves an input of `source` without `forge lock` fails the check, naming
/// it.
fn a_stale_input_fails_the_check(source: &TestContext, runner: &Runner<'_>) {
    source.write("overlays/app/conf/extra.conf", "colour = blue\n");
    git(source.path(), &["add", "--all"]);
    git(
        source.path(),
        &["commit", "--quiet", "-m", "an overlay gains a file"],
    );
    let stale = fresh_clone(source);
    let failed = runner
        .run_job("check", &stale.path().join("checkout"))
        .expect_err("the check fails while forge.lock is stale");
    assert_contains(&failed, "--locked: the inputs no longer match");
    assert_contains(&failed, "run `forge lock`");
}

/// CI has a fresh clone and an empty daemon: the `check` job, then `publish`, then `publish`
/// again on another empty daemon (a re-run of the same commit on a cold runner), then a commit
/// that bumps a pin and `publish` once more;
/// each run of `publish` signs with the key from its secret and verifies with the committed
/// public key. A commit that moves an input without `forge lock` fails `check`, naming the
/// command.
#[test]
fn ci_runs_the_workflow_jobs_from_a_fresh_clone_on_an_empty_daemon() {
    let registry = RegistryServer::start();
    if !docker_ready() || registry_tools_missing() {
        return;
    }
    let id = std::process::id();
    let repository = format!("{}/forge-ci/journey-{id}", registry.address());
    let base = format!("{}/forge-ci/base-{id}:busybox", registry.address());
    let tagged = Tagged(vec![base.clone()]);
    docker(&["tag", base_image(), &base]);
    docker(&["push", "--quiet", &base]);
    drop(tagged);
    let Some(node) = SecondDaemon::start_or_skip() else {
        return;
    };
    let _bridge = node.reach(registry.port());
    let (conduit, _conduit) = node.conduit();
    let remote = GitRemote::new();
    let keys = Keys::new();
    let source = recipe_repository(&repository, &base, &remote, &keys);
    let workflow = workflow();
    let expressions = Expressions {
        signing_key: std::fs::read_to_string(keys.private()).unwrap(),
    };
    let runner = Runner {
        workflow: &workflow,
        expressions: &expressions,
        daemon: &node.host,
        conduit: &conduit,
        path: path_with_forge(),
    };

    // The first push to main.
    let first = fresh_clone(&source);
    let checkout = first.path().join("checkout");
    runner.run_job("check", &checkout).unwrap();
    runner.run_job("publish", &checkout).unwrap();
    assert_published_and_verified(&checkout);
    let published = pushed(&checkout);

    // A re-run of the same commit on another runner, whose daemon is empty: through the build
    // cache it ends on the same image, which the dated tag keeps.
    let Some(cold) = SecondDaemon::start_or_skip() else {
        return;
    };
    let _cold_bridge = cold.reach(registry.port());
    let (cold_conduit, _cold_conduit) = cold.conduit();
    let cold_runner = Runner {
        workflow: &workflow,
        expressions: &expressions,
        daemon: &cold.host,
        conduit: &cold_conduit,
        path: runner.path.clone(),
    };
    let rerun = fresh_clone(&source);
    let checkout = rerun.path().join("checkout");
    cold_runner.run_job("publish", &checkout).unwrap();
    assert_eq!(
        pushed(&checkout),
        published,
        "a re-run on a cold runner publishes the same image"
    );

    a_stale_input_fails_the_check(&source, &runner);

    // The maintainer locks it, bumps the git pin under a new date, and pushes: CI publishes it.
    source.forge(&["-q", "lock"]).expect_code(0);
    source.edit(
        "pins.toml",
        "date = \"2026-07-08\"",
        "date = \"2026-07-09\"",
    );
    source
        .forge(&["pin", "bump", "app", "--to", &remote.second])
        .expect_code(0);
    git(
        source.path(),
        &["commit", "--quiet", "--all", "-m", "app moves"],
    );
    let bumped = fresh_clone(&source);
    let checkout = bumped.path().join("checkout");
    runner.run_job("check", &checkout).unwrap();
    runner.run_job("publish", &checkout).unwrap();
    assert_ne!(
        pushed(&checkout),
        published,
        "the bump publishes a new image"
    );
}

/// The release builds forge for linux amd64 and arm64, each on a runner of its architecture,
/// from the lock file; only its last job writes to the repository (the release), and it signs
/// the checksums with the signing key's secret.
#[test]
fn the_release_builds_both_linux_architectures_and_signs_its_checksums() {
    let release = workflow_at(RELEASE);
    assert_eq!(release["on"]["push"]["tags"][0].as_str(), Some("v*"));
    let binary = &release["jobs"]["binary"];
    let targets: Vec<(&str, &str)> = binary["strategy"]["matrix"]["include"]
        .as_vec()
        .unwrap()
        .iter()
        .map(|entry| {
            (
                entry["runner"].as_str().unwrap(),
                entry["target"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        targets,
        [
            ("ubuntu-22.04", "x86_64-unknown-linux-gnu"),
            ("ubuntu-22.04-arm", "aarch64-unknown-linux-gnu")
        ]
    );
    assert!(steps(binary).iter().any(|step| {
        (step["run"].as_str()).is_some_and(|run| run.contains("cargo build --release --locked"))
    }));
    assert!(binary["permissions"].is_badvalue());
    let publishing = &release["jobs"]["release"];
    assert_eq!(
        publishing["permissions"]["contents"].as_str(),
        Some("write")
    );
    let signing = steps(publishing)
        .iter()
        .find(|step| {
            step["run"].as_str() == Some("forge sign-blob SHA256SUMS --bundle SHA256SUMS.bundle")
        })
        .expect("the release signs its checksums with forge");
    assert_eq!(
        signing["env"]["FORGE_SIGNING_KEY"].as_str(),
        Some("${{ secrets.FORGE_SIGNING_KEY }}")
    );
    let published = steps(publishing).last().unwrap()["run"].as_str().unwrap();
    let command = (published.lines())
        .find(|line| line.trim_start().starts_with("gh release create"))
        .expect("the last step publishes the release");
    for file in [
        "forge-*.tar.gz",
        "SHA256SUMS",
        "SHA256SUMS.sig",
        "SHA256SUMS.bundle",
    ] {
        assert!(command.split(' ').any(|word| word == file), "{command}");
    }
}

/// What a tester with cosign checks of a release in `dist` signed by `keys`, as the README
/// writes it: cosign 2 with the signature, cosign 3 with the bundle.
fn cosign_accepts_the_release(dist: &Path, keys: &Keys) {
    std::fs::write(dist.join("signing.pub"), keys.public_text()).unwrap();
    for (suite, program) in crate::support::cosign::cosigns() {
        let check = match suite {
            "trixie" => {
                "verify-blob --key signing.pub --signature SHA256SUMS.sig --insecure-ignore-tlog SHA256SUMS"
            }
            _ => {
                "verify-blob --key signing.pub --bundle SHA256SUMS.bundle --insecure-ignore-tlog SHA256SUMS"
            }
        };
        let words = crate::support::cosign::words(check);
        let (code, stderr) = crate::support::cosign::cosign_with(&program, &words, dist, None);
        assert_eq!(code, 0, "{suite}'s cosign {check}:\n{stderr}");
    }
}

/// The release's jobs from a fresh clone, the binary under test standing in for both builds:
/// each architecture's archive holds forge and runs; the checksums are signed with the key from
/// the secret and the workflow's own check accepts the signature with the committed public key
/// (openssl) and the archives with the checksums. With another committed key that check fails.
#[test]
fn the_release_jobs_pack_sign_and_check_the_binaries_from_a_fresh_clone() {
    let keys = Keys::new();
    let source = TestContext::empty();
    std::fs::create_dir_all(source.path().join(".github/workflows")).unwrap();
    std::fs::copy(repository_root().join(RELEASE), source.path().join(RELEASE)).unwrap();
    std::fs::copy(
        repository_root().join("README.md"),
        source.path().join("README.md"),
    )
    .unwrap();
    source.write(PUBLIC_KEY, &keys.public_text());
    git(source.path(), &["init", "--quiet"]);
    git(source.path(), &["add", "--all"]);
    git(source.path(), &["commit", "--quiet", "-m", "forge"]);

    let release = workflow_at(RELEASE);
    let expressions = Expressions {
        signing_key: std::fs::read_to_string(keys.private()).unwrap(),
    };
    let runner = Runner {
        workflow: &release,
        expressions: &expressions,
        daemon: "unix:///nonexistent/docker.sock",
        conduit: "",
        path: std::env::var("PATH").unwrap_or_default(),
    };
    let clone = fresh_clone(&source);
    let checkout = clone.path().join("checkout");
    let dist = checkout.join("dist");
    std::fs::create_dir_all(&dist).unwrap();
    for target in ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"] {
        let built = fresh_clone(&source);
        let built = built.path().join("checkout");
        std::fs::create_dir_all(built.join("target/release")).unwrap();
        std::fs::copy(
            env!("CARGO_BIN_EXE_forge"),
            built.join("target/release/forge"),
        )
        .unwrap();
        runner
            .run_job_with("binary", &built, &BTreeMap::from([("target", target)]))
            .unwrap();
        let archive = format!("forge-0.1.0-{target}.tar.gz");
        let listing = Command::new("tar")
            .arg("-tzf")
            .arg(built.join(&archive))
            .output();
        let listing = String::from_utf8(listing.unwrap().stdout).unwrap();
        assert_contains(&listing, &format!("forge-0.1.0-{target}/forge"));
        std::fs::copy(built.join(&archive), dist.join(&archive)).unwrap();
    }
    runner.run_job("release", &checkout).unwrap();
    let sums = std::fs::read_to_string(dist.join("SHA256SUMS")).unwrap();
    assert_eq!(sums.lines().count(), 2, "{sums}");
    let signature = std::fs::read_to_string(dist.join("SHA256SUMS.sig")).unwrap();
    assert!(!signature.trim().is_empty());
    cosign_accepts_the_release(&dist, &keys);

    // The same job with another key committed fails at the signature check.
    let other = Keys::new();
    std::fs::write(checkout.join(PUBLIC_KEY), other.public_text()).unwrap();
    for made in [
        "SHA256SUMS",
        "SHA256SUMS.sig",
        "SHA256SUMS.bundle",
        "signing.pub",
    ] {
        std::fs::remove_file(dist.join(made)).unwrap();
    }
    let failed = runner.run_job("release", &checkout).unwrap_err();
    assert_contains(&failed, "openssl dgst");
    assert_contains(&failed, "Verification failure");
}
