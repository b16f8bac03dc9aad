//! Signed pushes of the offline example for the tests that judge what forge attaches, and the
//! Python with the independent libraries that judge it.

use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine as _;

use crate::support::images::{Example, docker_available, ensure_base_image};
use crate::support::keys::Keys;
use crate::support::registry::{RegistryServer, registry_tools_missing};

/// The OCI image manifest media type.
pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

/// The offline example pushed to `registry` and signed with `keys`.
pub fn signed(registry: &RegistryServer, name: &str, keys: &Keys) -> Option<Example> {
    signed_at(registry.address(), name, keys)
}

/// `signed`, to the registry at `address` (`127.0.0.1:PORT`).
pub fn signed_at(address: &str, name: &str, keys: &Keys) -> Option<Example> {
    if !docker_available() || registry_tools_missing() {
        return None;
    }
    ensure_base_image();
    let path = format!("forge-test/{name}-{}", std::process::id());
    let example = Example::with_repository(&format!("{address}/{path}"));
    let key = keys.private();
    let run = example
        .build_with(
            &["--push", "--sign", "--sign-key", key.to_str().unwrap()],
            &[],
        )
        .expect_code(0);
    let attachments = run.json()["attachments"].clone();
    // The build record, the SBOM, the provenance and the signature under cosign's tags; the
    // provenance and the signature as bundles referring to the image.
    assert_eq!(
        attachments.as_array().map(Vec::len),
        Some(6),
        "{attachments:#}"
    );
    Some(example)
}

/// `example` with its overlay changed, built, pushed over its tags and signed with `keys`.
pub fn pushed_again_signed(example: &Example, keys: &Keys) {
    example
        .context
        .write("overlays/app/VERSION", "second signed build\n");
    let key = keys.private_arg();
    example
        .build_with(&["--push", "--force", "--sign", "--sign-key", &key], &[])
        .expect_code(0);
}

/// The Python with cyclonedx-python-lib and securesystemslib that `ci/test` installs (in its
/// virtual environment, named by `FORGE_TEST_PYTHON`), or `None` outside CI without it.
pub fn verifier_python() -> Option<PathBuf> {
    match std::env::var_os("FORGE_TEST_PYTHON") {
        Some(python) => Some(PathBuf::from(python)),
        None if std::env::var_os("CI").is_some() => panic!(
            "FORGE_TEST_PYTHON names no Python with cyclonedx-python-lib and securesystemslib: run the suite through ci/test, which installs them"
        ),
        None => {
            crate::support::note(
                "skipped: FORGE_TEST_PYTHON is not set (ci/test sets it to a virtual environment with cyclonedx-python-lib and securesystemslib)",
            );
            None
        }
    }
}

/// `openssl dgst -sha256 -verify PUBLIC -signature SIG PAYLOAD`: whether it says `Verified OK`.
pub fn openssl_verifies(public: &Path, payload: &[u8], signature_base64: &str) -> bool {
    let work = tempfile::tempdir().unwrap();
    let signature = base64::engine::general_purpose::STANDARD
        .decode(signature_base64)
        .unwrap();
    std::fs::write(work.path().join("payload"), payload).unwrap();
    std::fs::write(work.path().join("signature"), signature).unwrap();
    let output = Command::new("openssl")
        .args(["dgst", "-sha256", "-verify"])
        .arg(public)
        .arg("-signature")
        .arg(work.path().join("signature"))
        .arg(work.path().join("payload"))
        .output()
        .expect("openssl runs");
    output.status.success() && String::from_utf8_lossy(&output.stdout).contains("Verified OK")
}

/// `tests/python/attest_check.py ARGS...` run by `python`: its exit code and stdout.
pub fn attest_check(python: &Path, args: &[&str]) -> (i32, String) {
    let script = crate::support::repository_root().join("tests/python/attest_check.py");
    let output = Command::new(python)
        .arg(script)
        .args(args)
        .output()
        .unwrap_or_else(|error| panic!("{} cannot run: {error}", python.display()));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("ModuleNotFoundError"),
        "{} lacks a library the check needs: {stderr}",
        python.display()
    );
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

/// The in-toto statement a DSSE envelope carries.
pub(crate) fn statement_of(envelope: &[u8]) -> serde_json::Value {
    use base64::Engine as _;
    let envelope: serde_json::Value = serde_json::from_slice(envelope).unwrap();
    let payload = base64::engine::general_purpose::STANDARD
        .decode(envelope["payload"].as_str().unwrap())
        .unwrap();
    serde_json::from_slice(&payload).unwrap()
}
