//! The real cosign, the judge of what forge signs: cosign 2 (Debian trixie's 2.5) and cosign 3
//! (forky's 3.1), which `ci/test` unpacks under `FORGE_TEST_ENGINES`, each run with a home of
//! its own and never a transparency log.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Each cosign `ci/test` unpacked, with its suite (`trixie`: cosign 2, `forky`: cosign 3);
/// none (said on the test's output) where the engines folder is not there.
pub(crate) fn cosigns() -> Vec<(&'static str, PathBuf)> {
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

/// `cosign ARGS` run in `folder` with a home of its own there and with `password` (if any) in
/// COSIGN_PASSWORD; its exit code and stderr.
pub(crate) fn cosign_with(
    program: &Path,
    args: &[String],
    folder: &Path,
    password: Option<&str>,
) -> (i32, String) {
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(folder)
        .env("HOME", folder.join(".home"))
        .env_remove("COSIGN_PASSWORD");
    if let Some(password) = password {
        command.env("COSIGN_PASSWORD", password);
    }
    let output = command.output().expect("cosign runs");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Words, as owned arguments.
pub(crate) fn words(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_owned).collect()
}

/// What one cosign says of an image with a key: whether `cosign verify` and `cosign
/// verify-attestation --type slsaprovenance1` accept it (the README's two tester commands).
pub(crate) fn verdict(program: &Path, public: &Path, reference: &str) -> (bool, bool) {
    let folder = tempfile::tempdir().unwrap();
    let public = public.display();
    let accepts = |command: &str| {
        let args = words(&format!(
            "{command} --key {public} --insecure-ignore-tlog {reference}"
        ));
        cosign_with(program, &args, folder.path(), None).0 == 0
    };
    (
        accepts("verify"),
        accepts("verify-attestation --type slsaprovenance1"),
    )
}

/// Each cosign's verdict (see `verdict`), with its suite.
pub(crate) type Verdicts = Vec<(&'static str, (bool, bool))>;

/// Each cosign's verdict on `reference` with the key `public`.
pub(crate) fn verdicts(public: &Path, reference: &str) -> Verdicts {
    cosigns()
        .into_iter()
        .map(|(suite, program)| (suite, verdict(&program, public, reference)))
        .collect()
}
