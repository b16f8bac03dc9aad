//! cosign is the judge of what forge signs: the tester's cosign commands of the README, as they
//! are written there, pass against a forge-signed push with both cosign versions users run, 2
//! (Debian trixie's) and 3 (forky's), which `ci/test` unpacks under `FORGE_TEST_ENGINES`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::keys::Keys;
use crate::support::registry::RegistryServer;
use crate::support::signed::signed;
use crate::support::{TestContext, repository_root};

/// The image reference the README's tester commands name.
const DOCUMENTED: &str = "ghcr.io/aeon-7/vllm-ultimate-deepseek-v4-gb10:experimental-pr4";

/// Each cosign `ci/test` unpacked, with its suite; none (said on the test's output) where the
/// engines folder is not there.
fn cosigns() -> Vec<(&'static str, PathBuf)> {
    let Some(folder) = std::env::var_os("FORGE_TEST_ENGINES").map(PathBuf::from) else {
        crate::support::note(
            "skipped cosign: FORGE_TEST_ENGINES is not set (ci/test unpacks cosign)",
        );
        return Vec::new();
    };
    ["trixie", "forky"]
        .into_iter()
        .map(|suite| (suite, folder.join(suite).join("cosign/usr/bin/cosign")))
        .collect()
}

/// The README's cosign commands for testers, each as its words.
fn documented_commands() -> Vec<Vec<String>> {
    let readme = std::fs::read_to_string(repository_root().join("README.md")).unwrap();
    let commands: Vec<Vec<String>> = readme
        .lines()
        .filter(|line| line.starts_with("cosign verify"))
        .map(|line| line.split_whitespace().map(str::to_owned).collect())
        .collect();
    assert_eq!(
        commands.len(),
        2,
        "the README's two cosign commands for testers"
    );
    commands
}

/// `cosign ARGS` run in `folder` with a home of its own there; its exit code and stderr.
fn cosign(program: &Path, args: &[String], folder: &Path) -> (i32, String) {
    let output = Command::new(program)
        .args(args)
        .current_dir(folder)
        .env("HOME", folder.join(".home"))
        .env_remove("COSIGN_PASSWORD")
        .output()
        .expect("cosign runs");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn the_readmes_cosign_commands_accept_a_forge_signed_image_with_cosign_2_and_3() {
    let registry = RegistryServer::start();
    let keys = Keys::new();
    let Some(example) = signed(&registry, "cosign-readme", &keys) else {
        return;
    };
    let tester = TestContext::empty();
    tester.write("signing.pub", &keys.public_text());
    let reference = format!("{}:latest", example.repository);
    for (suite, program) in cosigns() {
        for words in documented_commands() {
            let args: Vec<String> = words[1..]
                .iter()
                .map(|word| {
                    if word == DOCUMENTED {
                        reference.clone()
                    } else {
                        word.clone()
                    }
                })
                .collect();
            let (code, stderr) = cosign(&program, &args, tester.path());
            assert_eq!(
                code,
                0,
                "{suite}'s cosign refused `cosign {}`:\n{stderr}",
                args.join(" ")
            );
        }
    }
}
