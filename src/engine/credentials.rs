//! Registry credentials, found as the docker CLI finds them: `FORGE_REGISTRY_USER` and
//! `FORGE_REGISTRY_PASSWORD` first, then `~/.docker/config.json` (or `$DOCKER_CONFIG`): a
//! credential helper named for the registry in `credHelpers`, the `credsStore`, or `auths`.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use base64::Engine as _;

/// A user name and password (or token) for one registry.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The registry host they are for.
    pub registry: String,
    /// The user name.
    pub username: String,
    /// The password or token.
    pub password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("registry", &self.registry)
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// What bollard sends to the daemon.
    pub fn to_docker(&self) -> bollard::auth::DockerCredentials {
        bollard::auth::DockerCredentials {
            username: Some(self.username.clone()),
            password: Some(self.password.clone()),
            serveraddress: Some(self.registry.clone()),
            ..Default::default()
        }
    }
}

/// Why credentials could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    /// The docker configuration file is not valid JSON or holds a bad `auth` value.
    #[error("cannot read credentials from {}: {message}", path.display())]
    Config {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A credential helper failed.
    #[error("credential helper docker-credential-{helper} failed for {registry}: {message}")]
    Helper {
        /// The helper's name.
        helper: String,
        /// The registry asked about.
        registry: String,
        /// What it said.
        message: String,
    },
}

impl CredentialsError {
    /// What to do about it.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            CredentialsError::Config { .. } => {
                "fix the file, or set FORGE_REGISTRY_USER and FORGE_REGISTRY_PASSWORD".to_owned()
            }
            CredentialsError::Helper { helper, .. } => format!(
                "check that docker-credential-{helper} is on PATH and logged in (`docker login`), or set FORGE_REGISTRY_USER and FORGE_REGISTRY_PASSWORD"
            ),
        })
    }
}

#[derive(Debug, Default, serde::Deserialize)]
struct DockerConfig {
    #[serde(default)]
    auths: BTreeMap<String, AuthEntry>,
    #[serde(default, rename = "credsStore")]
    credentials_store: Option<String>,
    #[serde(default, rename = "credHelpers")]
    credential_helpers: BTreeMap<String, String>,
}

#[derive(Debug, Default, serde::Deserialize)]
struct AuthEntry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
}

#[derive(Debug, serde::Deserialize)]
struct HelperAnswer {
    #[serde(rename = "Username")]
    username: String,
    #[serde(rename = "Secret")]
    secret: String,
}

/// The credentials for `registry` (a host such as `ghcr.io` or `127.0.0.1:5000`), if any are
/// configured.
pub fn for_registry(registry: &str) -> Result<Option<Credentials>, CredentialsError> {
    let environment = Environment {
        username: std::env::var("FORGE_REGISTRY_USER").ok(),
        password: std::env::var("FORGE_REGISTRY_PASSWORD").ok(),
        config: config_path(),
    };
    lookup(registry, &environment)
}

/// Where credentials may come from.
struct Environment {
    username: Option<String>,
    password: Option<String>,
    config: Option<PathBuf>,
}

fn lookup(
    registry: &str,
    environment: &Environment,
) -> Result<Option<Credentials>, CredentialsError> {
    if let (Some(username), Some(password)) = (&environment.username, &environment.password) {
        return Ok(Some(Credentials {
            registry: registry.to_owned(),
            username: username.clone(),
            password: password.clone(),
        }));
    }
    let Some(path) = &environment.config else {
        return Ok(None);
    };
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(_) => return Ok(None),
    };
    let config: DockerConfig =
        serde_json::from_str(&text).map_err(|error| CredentialsError::Config {
            path: path.clone(),
            message: error.to_string(),
        })?;
    let keys = config_keys(registry);
    let helper = keys
        .iter()
        .find_map(|key| config.credential_helpers.get(key))
        .or(config.credentials_store.as_ref());
    if let Some(helper) = helper
        && let Some(credentials) = ask_helper(helper, registry)?
    {
        return Ok(Some(credentials));
    }
    let Some(entry) = keys.iter().find_map(|key| config.auths.get(key)) else {
        return Ok(None);
    };
    let bad = |message: &str| CredentialsError::Config {
        path: path.clone(),
        message: format!("auths[{registry:?}]: {message}"),
    };
    let (username, password) = match (&entry.auth, &entry.username, &entry.password) {
        (Some(auth), _, _) if !auth.is_empty() => {
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(auth.trim())
                .map_err(|_| bad("`auth` is not base64"))?;
            let decoded = String::from_utf8(decoded).map_err(|_| bad("`auth` is not UTF-8"))?;
            let (username, password) = decoded
                .split_once(':')
                .ok_or_else(|| bad("`auth` is not user:password"))?;
            (username.to_owned(), password.to_owned())
        }
        (_, Some(username), Some(password)) => (username.clone(), password.clone()),
        _ => return Ok(None),
    };
    Ok(Some(Credentials {
        registry: registry.to_owned(),
        username,
        password,
    }))
}

fn config_path() -> Option<PathBuf> {
    match std::env::var_os("DOCKER_CONFIG") {
        Some(folder) => Some(PathBuf::from(folder).join("config.json")),
        None => std::env::var_os("HOME")
            .map(|home| PathBuf::from(home).join(".docker").join("config.json")),
    }
}

/// The keys the docker CLI files a registry's entry under.
fn config_keys(registry: &str) -> Vec<String> {
    if registry == "docker.io" || registry == "index.docker.io" {
        vec![
            "https://index.docker.io/v1/".to_owned(),
            "index.docker.io".to_owned(),
            "docker.io".to_owned(),
        ]
    } else {
        vec![
            registry.to_owned(),
            format!("https://{registry}"),
            format!("http://{registry}"),
        ]
    }
}

fn ask_helper(helper: &str, registry: &str) -> Result<Option<Credentials>, CredentialsError> {
    let failed = |message: String| CredentialsError::Helper {
        helper: helper.to_owned(),
        registry: registry.to_owned(),
        message,
    };
    let mut child = Command::new(format!("docker-credential-{helper}"))
        .arg("get")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| failed(error.to_string()))?;
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(registry.as_bytes())
        .map_err(|error| failed(error.to_string()))?;
    let output = child
        .wait_with_output()
        .map_err(|error| failed(error.to_string()))?;
    if !output.status.success() {
        let said = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        // Helpers say this when they hold nothing for the registry: not an error.
        if said.contains("credentials not found") {
            return Ok(None);
        }
        return Err(failed(said));
    }
    let answer: HelperAnswer =
        serde_json::from_slice(&output.stdout).map_err(|error| failed(error.to_string()))?;
    Ok(Some(Credentials {
        registry: registry.to_owned(),
        username: answer.username,
        password: answer.secret,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn environment(config: Option<&std::path::Path>) -> Environment {
        Environment {
            username: None,
            password: None,
            config: config.map(ToOwned::to_owned),
        }
    }

    fn config(text: &str) -> tempfile::TempDir {
        let folder = tempfile::tempdir().unwrap();
        std::fs::write(folder.path().join("config.json"), text).unwrap();
        folder
    }

    #[test]
    fn forge_variables_win_over_the_docker_configuration() {
        let folder = config(r#"{"auths": {"ghcr.io": {"auth": "ZG9ja2VyOmNvbmZpZw=="}}}"#);
        let mut environment = environment(Some(&folder.path().join("config.json")));
        environment.username = Some("robot".to_owned());
        environment.password = Some("s3cret".to_owned());
        let found = lookup("ghcr.io", &environment).unwrap().unwrap();
        assert_eq!(
            (found.username.as_str(), found.password.as_str()),
            ("robot", "s3cret")
        );
    }

    #[test]
    fn auths_entries_are_decoded_per_registry() {
        // base64("docker:config") and base64("user:pa:ss")
        let folder = config(
            r#"{"auths": {"ghcr.io": {"auth": "ZG9ja2VyOmNvbmZpZw=="},
                          "https://127.0.0.1:5000": {"auth": "dXNlcjpwYTpzcw=="}}}"#,
        );
        let environment = environment(Some(&folder.path().join("config.json")));
        let ghcr = lookup("ghcr.io", &environment).unwrap().unwrap();
        assert_eq!(
            (ghcr.username.as_str(), ghcr.password.as_str()),
            ("docker", "config")
        );
        let local = lookup("127.0.0.1:5000", &environment).unwrap().unwrap();
        assert_eq!(
            (local.username.as_str(), local.password.as_str()),
            ("user", "pa:ss")
        );
        assert_eq!(lookup("quay.io", &environment).unwrap(), None);
        assert!(
            !format!("{ghcr:?}").contains("config\""),
            "the password is not shown"
        );
    }

    #[test]
    fn a_damaged_configuration_names_the_file() {
        let folder = config(r#"{"auths": {"ghcr.io": {"auth": "not base64!"}}}"#);
        let path = folder.path().join("config.json");
        let error = lookup("ghcr.io", &environment(Some(&path))).unwrap_err();
        assert!(
            error.to_string().contains(&path.display().to_string()),
            "{error}"
        );
        assert!(
            error.to_string().contains("`auth` is not base64"),
            "{error}"
        );
    }

    #[test]
    fn a_missing_helper_is_an_error_naming_it() {
        let folder = config(r#"{"credHelpers": {"ghcr.io": "forge-test-missing"}}"#);
        let error = lookup(
            "ghcr.io",
            &environment(Some(&folder.path().join("config.json"))),
        )
        .unwrap_err();
        assert!(
            error
                .to_string()
                .contains("docker-credential-forge-test-missing"),
            "{error}"
        );
    }
}
