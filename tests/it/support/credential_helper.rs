//! A real docker credential helper for the tests: `docker-credential-forgetest`, a shell script
//! in a folder of its own that a test puts first on PATH. It speaks the helper protocol: `get`
//! reads a server URL on stdin and prints `{"ServerURL":..,"Username":..,"Secret":..}` for the
//! servers it was given, and for any other says "credentials not found in native keychain" and
//! exits 1, as the helpers of the docker CLI do; `list` prints `{"SERVER": "USER", ...}` for the
//! servers it holds. It notes every server it is asked about.

use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;

/// The name a Docker configuration gives the helper (`credHelpers` value or `credsStore`).
pub(crate) const HELPER: &str = "forgetest";

/// A helper script and a Docker configuration folder; removed when dropped.
pub(crate) struct CredentialHelper {
    folder: tempfile::TempDir,
}

impl CredentialHelper {
    /// A helper that holds `(server, user, secret)` for each entry and nothing else.
    pub(crate) fn knowing(entries: &[(&str, &str, &str)]) -> Self {
        let mut cases = String::new();
        let list: serde_json::Map<String, serde_json::Value> = entries
            .iter()
            .map(|(server, user, _)| ((*server).to_owned(), (*user).into()))
            .collect();
        cases.push_str(&format!(
            "  --list) printf '%s\\n' {}; exit 0 ;;\n",
            quoted(&serde_json::Value::Object(list).to_string())
        ));
        for (server, user, secret) in entries {
            let answer = serde_json::json!({
                "ServerURL": server,
                "Username": user,
                "Secret": secret,
            });
            cases.push_str(&format!(
                "  {}) printf '%s\\n' {}; exit 0 ;;\n",
                quoted(server),
                quoted(&answer.to_string())
            ));
        }
        Self::with_body(&format!(
            "case \"$server\" in\n{cases}esac\necho 'credentials not found in native keychain'\nexit 1\n"
        ))
    }

    /// A helper that fails for every server: prints `message` and exits 1.
    pub(crate) fn failing(message: &str) -> Self {
        Self::with_body(&format!("echo {} >&2\nexit 1\n", quoted(message)))
    }

    fn with_body(body: &str) -> Self {
        let folder = tempfile::tempdir().expect("a temporary folder");
        let bin = folder.path().join("bin");
        std::fs::create_dir_all(&bin).expect("a bin folder");
        let asked = folder.path().join("asked");
        let script = format!(
            "#!/bin/sh\ncase \"$1\" in\n  get) IFS= read -r server; printf '%s\\n' \"$server\" >> {} ;;\n  list) server=--list ;;\n  *) echo \"unsupported: $1\" >&2; exit 1 ;;\nesac\n{body}",
            quoted(&asked.display().to_string())
        );
        let path = bin.join(format!("docker-credential-{HELPER}"));
        std::fs::write(&path, script).expect("write the helper");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .expect("make the helper executable");
        Self { folder }
    }

    /// PATH with the helper's folder first.
    pub(crate) fn path(&self) -> String {
        format!(
            "{}:{}",
            self.folder.path().join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        )
    }

    /// A `DOCKER_CONFIG` folder whose `config.json` is `config` (replacing any earlier one).
    pub(crate) fn docker_config(&self, config: &serde_json::Value) -> PathBuf {
        let folder = self.folder.path().join("docker");
        std::fs::create_dir_all(&folder).expect("a docker config folder");
        std::fs::write(folder.join("config.json"), config.to_string()).expect("config.json");
        folder
    }

    /// Every server URL the helper was asked about, in order.
    pub(crate) fn asked(&self) -> Vec<String> {
        std::fs::read_to_string(self.folder.path().join("asked"))
            .unwrap_or_default()
            .lines()
            .map(ToOwned::to_owned)
            .collect()
    }
}

/// `text` as one single-quoted shell word.
fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}
