//! Signing keys for the tests: a key pair written by the real `forge keygen`.

use std::path::PathBuf;

use crate::support::TestContext;

/// A key pair written by `forge keygen` in a folder of its own, as `signing.key` and
/// `signing.pub`.
pub(crate) struct Keys {
    folder: tempfile::TempDir,
}

impl Keys {
    pub(crate) fn new() -> Self {
        let keys = Self {
            folder: tempfile::tempdir().unwrap(),
        };
        TestContext::empty()
            .forge(&["keygen", "--out", &keys.prefix()])
            .expect_code(0);
        keys
    }

    /// The `--out` prefix the pair was written under.
    pub(crate) fn prefix(&self) -> String {
        self.folder.path().join("signing").display().to_string()
    }

    pub(crate) fn private(&self) -> PathBuf {
        self.folder.path().join("signing.key")
    }

    /// The private key's path, as an argument.
    pub(crate) fn private_arg(&self) -> String {
        self.private().display().to_string()
    }

    pub(crate) fn public(&self) -> PathBuf {
        self.folder.path().join("signing.pub")
    }

    /// The public key's path, as an argument.
    pub(crate) fn public_arg(&self) -> String {
        self.public().display().to_string()
    }

    /// The public key's text.
    pub(crate) fn public_text(&self) -> String {
        std::fs::read_to_string(self.public()).unwrap()
    }

    /// The signature of `message` by the private key as another signer makes it: `openssl dgst
    /// -sha256 -sign` (ECDSA over SHA-256, DER), base64.
    pub(crate) fn sign(&self, message: &[u8]) -> String {
        use base64::Engine as _;
        let work = tempfile::tempdir().unwrap();
        let input = work.path().join("message");
        std::fs::write(&input, message).unwrap();
        let output = std::process::Command::new("openssl")
            .args(["dgst", "-sha256", "-sign"])
            .arg(self.private())
            .arg(&input)
            .output()
            .expect("openssl runs");
        assert!(
            output.status.success(),
            "openssl dgst -sign: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        base64::engine::general_purpose::STANDARD.encode(output.stdout)
    }
}
