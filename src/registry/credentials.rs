//! Registry credentials, found as the docker CLI finds them, for every command that talks to a
//! registry (`build --push` through the daemon, `verify-digest --remote` and `pin bump base` /
//! `pin outdated` through forge's own client).
//!
//! A registry host in, a `Lookup` out: `FORGE_REGISTRY_USER` and `FORGE_REGISTRY_PASSWORD`
//! first, but only for the one registry they belong to (the host `FORGE_REGISTRY_HOST` names,
//! else the registry the recipe publishes to; with no recipe, as for an image named by
//! reference, none but `FORGE_REGISTRY_HOST`'s); then `$DOCKER_CONFIG/config.json` (default
//! `~/.docker/config.json`): the credential helper its `credHelpers` names for the registry,
//! else its `credsStore`, else its `auths` entry. As with the docker CLI, a helper that applies
//! has the last word: when it holds nothing for the registry, `auths` is not read.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::diagnostics::{Advice, Advise};
use crate::types::registry::{Registry, server_host};
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
    /// The HTTP Basic `Authorization` value.
    pub fn basic(&self) -> String {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD
                .encode(format!("{}:{}", self.username, self.password))
        )
    }
}

/// Where credentials for a registry were looked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// `FORGE_REGISTRY_USER` and `FORGE_REGISTRY_PASSWORD`.
    Environment,
    /// The credential helper `docker-credential-NAME`.
    Helper(String),
    /// The `auths` of a docker configuration file.
    Auths(PathBuf),
    /// Nothing names the registry.
    Nowhere,
}

impl Origin {
    /// Where credentials for `registry` came from (`found`), or why there are none.
    pub fn describe(&self, registry: &str, found: bool) -> String {
        match (self, found) {
            (Origin::Environment, _) => {
                "FORGE_REGISTRY_USER and FORGE_REGISTRY_PASSWORD".to_owned()
            }
            (Origin::Helper(helper), true) => format!("docker-credential-{helper}"),
            (Origin::Helper(helper), false) => {
                format!("docker-credential-{helper} holds none for {registry}")
            }
            (Origin::Auths(path), true) => format!("the `auths` of {}", path.display()),
            (Origin::Auths(path), false) => {
                format!("{} holds none for {registry}", path.display())
            }
            (Origin::Nowhere, _) => format!("none are configured for {registry}"),
        }
    }
}

/// What a lookup found for one registry, and where it looked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lookup {
    /// The registry host asked about.
    pub registry: String,
    /// Where the answer came from.
    pub origin: Origin,
    /// The credentials, if any.
    pub credentials: Option<Credentials>,
    /// The registry `FORGE_REGISTRY_USER` and `FORGE_REGISTRY_PASSWORD` were kept for, when they
    /// are set for another one than this.
    pub environment_for: Option<String>,
}

impl Lookup {
    /// A lookup that found nothing because nothing was asked (an anonymous client).
    pub fn anonymous(registry: &str) -> Self {
        Self {
            registry: registry.to_owned(),
            origin: Origin::Nowhere,
            credentials: None,
            environment_for: None,
        }
    }

    /// Where the credentials came from, or where none were found.
    pub fn describe(&self) -> String {
        let found = self
            .origin
            .describe(&self.registry, self.credentials.is_some());
        match &self.environment_for {
            Some(host) => format!(
                "{found}; FORGE_REGISTRY_USER and FORGE_REGISTRY_PASSWORD are kept for {host}"
            ),
            None => found,
        }
    }
}

/// Why credentials could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    /// The docker configuration file cannot be read, is not valid JSON or holds a bad `auth`.
    #[error("cannot read credentials from {}: {message}", path.display())]
    Config {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A credential store could not list the registries it holds.
    #[error("credential helper docker-credential-{helper} cannot list its registries: {message}")]
    HelperList {
        /// The helper's name.
        helper: String,
        /// What it said.
        message: String,
    },
    /// A credential helper could not be run or failed.
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

impl Advise for CredentialsError {
    fn advice(&self) -> Advice {
        Advice::Hint(match self {
            CredentialsError::Config { .. } => {
                "fix the file, or set FORGE_REGISTRY_USER and FORGE_REGISTRY_PASSWORD".to_owned()
            }
            CredentialsError::HelperList { helper, .. } => format!(
                "check that docker-credential-{helper} is on PATH, or remove `credsStore` from the docker configuration"
            ),
            CredentialsError::Helper {
                helper, registry, ..
            } => format!(
                "check that docker-credential-{helper} is on PATH and logged in (`docker login {registry}`), or set FORGE_REGISTRY_USER and FORGE_REGISTRY_PASSWORD"
            ),
        })
    }
}

crate::advised!(CredentialsError);

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

/// Looks up the credentials for `registry` (a host such as `ghcr.io`, `docker.io` or
/// `127.0.0.1:5000`), running a credential helper if the configuration names one.
/// `recipe_registry` is the registry the recipe publishes to: `FORGE_REGISTRY_USER` and
/// `FORGE_REGISTRY_PASSWORD` are for it, unless `FORGE_REGISTRY_HOST` names another host; with
/// no recipe (`None`), they are for `FORGE_REGISTRY_HOST` alone.
pub fn lookup(registry: &str, recipe_registry: Option<&str>) -> Result<Lookup, CredentialsError> {
    lookup_in(registry, &Environment::read(recipe_registry))
}

/// What every configured registry's credentials came to, as the docker CLI gathers them to
/// send with a build: the registry `FORGE_REGISTRY_USER` and `FORGE_REGISTRY_PASSWORD` are
/// kept for, each registry of config.json's `auths`, each host of its `credHelpers`, and each
/// server its `credsStore` helper lists. A registry whose lookup fails is left out and its
/// error returned beside the others' credentials, so that one broken helper does not keep the
/// rest from the build.
pub fn all(recipe_registry: &str) -> (Vec<Credentials>, Vec<CredentialsError>) {
    all_in(&Environment::read(Some(recipe_registry)))
}

fn all_in(environment: &Environment) -> (Vec<Credentials>, Vec<CredentialsError>) {
    let mut hosts: Vec<String> = Vec::new();
    let mut errors = Vec::new();
    if let (Some(_), Some(_), Some(host)) = (
        &environment.username,
        &environment.password,
        &environment.host,
    ) {
        hosts.push(host.clone());
    }
    match configured_hosts(environment) {
        Ok(configured) => hosts.extend(configured),
        Err(error) => errors.push(error),
    }
    let mut distinct: Vec<String> = Vec::new();
    for host in hosts {
        if !distinct.iter().any(|seen| same_registry(seen, &host)) {
            distinct.push(host);
        }
    }
    let mut found = Vec::new();
    for host in distinct {
        match lookup_in(&host, environment) {
            Ok(lookup) => found.extend(lookup.credentials),
            Err(error) => errors.push(error),
        }
    }
    (found, errors)
}

/// The registry hosts config.json names: the keys of `auths` and `credHelpers`, and what its
/// `credsStore` helper lists.
fn configured_hosts(environment: &Environment) -> Result<Vec<String>, CredentialsError> {
    let Some(path) = &environment.config else {
        return Ok(Vec::new());
    };
    let Some(config) = read_config(path)? else {
        return Ok(Vec::new());
    };
    let mut servers: Vec<String> = config.auths.keys().cloned().collect();
    servers.extend(config.credential_helpers.keys().cloned());
    if let Some(store) = config
        .credentials_store
        .as_ref()
        .filter(|store| !store.is_empty())
    {
        servers.extend(list_helper(store)?);
    }
    Ok(servers
        .iter()
        .map(|server| host_of(server))
        .filter(|host| !host.is_empty())
        .map(|host| {
            if is_docker_hub(&host) {
                crate::types::oci::DEFAULT_REGISTRY.to_owned()
            } else {
                host
            }
        })
        .collect())
}

/// The host (and port) of a server key as config.json and helpers write them: a bare host, or
/// a URL with a scheme and a path (`https://index.docker.io/v1/`).
fn host_of(server: &str) -> String {
    server_host(server).to_ascii_lowercase()
}

impl Environment {
    /// forge's variables and the docker configuration's place, from the process environment.
    fn read(recipe_registry: Option<&str>) -> Self {
        let variable = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
        Self {
            username: variable("FORGE_REGISTRY_USER"),
            password: variable("FORGE_REGISTRY_PASSWORD"),
            host: variable("FORGE_REGISTRY_HOST").or_else(|| recipe_registry.map(str::to_owned)),
            config: variable("DOCKER_CONFIG")
                .map(PathBuf::from)
                .or_else(|| variable("HOME").map(|home| PathBuf::from(home).join(".docker")))
                .map(|folder| folder.join("config.json")),
        }
    }
}

/// Where credentials may come from.
struct Environment {
    username: Option<String>,
    password: Option<String>,
    /// The one registry `username` and `password` are for: none without a recipe or
    /// `FORGE_REGISTRY_HOST`.
    host: Option<String>,
    config: Option<PathBuf>,
}

fn lookup_in(registry: &str, environment: &Environment) -> Result<Lookup, CredentialsError> {
    let environment_set = environment.username.is_some() && environment.password.is_some();
    let for_this = (environment.host.as_deref()).is_some_and(|host| same_registry(registry, host));
    let environment_for = (environment_set && !for_this).then(|| {
        environment.host.clone().unwrap_or_else(|| {
            "the host FORGE_REGISTRY_HOST names, and it is unset (no recipe here)".to_owned()
        })
    });
    let found = |origin: Origin, credentials: Option<(String, String)>| Lookup {
        registry: registry.to_owned(),
        origin,
        credentials: credentials.map(|(username, password)| Credentials {
            registry: registry.to_owned(),
            username,
            password,
        }),
        environment_for: environment_for.clone(),
    };
    if let (Some(username), Some(password), None) = (
        &environment.username,
        &environment.password,
        &environment_for,
    ) {
        return Ok(found(
            Origin::Environment,
            Some((username.clone(), password.clone())),
        ));
    }
    let Some(path) = &environment.config else {
        return Ok(found(Origin::Nowhere, None));
    };
    let Some(config) = read_config(path)? else {
        return Ok(found(Origin::Nowhere, None));
    };
    let helper = entry_for(&config.credential_helpers, registry)
        .or(config.credentials_store.as_ref())
        .filter(|helper| !helper.is_empty());
    if let Some(helper) = helper {
        let answer = ask_helper(helper, registry)?;
        return Ok(found(Origin::Helper(helper.clone()), answer));
    }
    let Some(entry) = entry_for(&config.auths, registry) else {
        return Ok(found(Origin::Auths(path.clone()), None));
    };
    let bad = |message: &str| CredentialsError::Config {
        path: path.clone(),
        message: format!("auths[{registry:?}]: {message}"),
    };
    let pair = match (&entry.auth, &entry.username, &entry.password) {
        (Some(auth), _, _) if !auth.is_empty() => {
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(auth.trim())
                .map_err(|_| bad("`auth` is not base64"))?;
            let decoded = String::from_utf8(decoded).map_err(|_| bad("`auth` is not UTF-8"))?;
            let (username, password) = decoded
                .split_once(':')
                .ok_or_else(|| bad("`auth` is not user:password"))?;
            Some((username.to_owned(), password.to_owned()))
        }
        (_, Some(username), Some(password)) => Some((username.clone(), password.clone())),
        // `docker login` with a credential store leaves an empty entry behind.
        _ => None,
    };
    Ok(found(Origin::Auths(path.clone()), pair))
}

/// The docker configuration at `path`; none when there is no such file.
fn read_config(path: &Path) -> Result<Option<DockerConfig>, CredentialsError> {
    let read = crate::fs::read_optional(path).map_err(|error| CredentialsError::Config {
        path: path.to_path_buf(),
        message: error.to_string(),
    })?;
    let Some(text) = read else {
        return Ok(None);
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|error| CredentialsError::Config {
            path: path.to_path_buf(),
            message: error.to_string(),
        })
}

/// The server URL the docker CLI files `registry` under and asks helpers about: Docker Hub's
/// is `https://index.docker.io/v1/`, every other registry's is its host.
pub fn server_address(registry: &str) -> String {
    Registry::named(registry).map_or_else(
        || registry.to_owned(),
        |named| named.server_address().to_owned(),
    )
}

/// Whether two registry names are the same registry (`Registry`): the same host and port however
/// they are spelled, and Docker Hub under any of its names.
pub fn same_registry(a: &str, b: &str) -> bool {
    Registry::named(a).is_some_and(|a| a.is_named(b))
}

/// Whether `name` is one of Docker Hub's names.
fn is_docker_hub(name: &str) -> bool {
    Registry::named(name).is_some_and(|registry| registry.is_docker_hub())
}

/// The entry of `map` for `registry`: under its server address, else under a key whose host
/// is the registry's (keys may carry a scheme and a path, as older clients wrote them).
fn entry_for<'a, T>(map: &'a BTreeMap<String, T>, registry: &str) -> Option<&'a T> {
    if let Some(entry) = map.get(&server_address(registry)) {
        return Some(entry);
    }
    let same = |host: &str| host == registry || (is_docker_hub(host) && is_docker_hub(registry));
    map.iter()
        .find_map(|(key, entry)| same(server_host(key)).then_some(entry))
}

/// Runs `docker-credential-HELPER list`: the servers the helper holds credentials for.
fn list_helper(helper: &str) -> Result<Vec<String>, CredentialsError> {
    let failed = |message: String| CredentialsError::HelperList {
        helper: helper.to_owned(),
        message,
    };
    let output = Command::new(format!("docker-credential-{helper}"))
        .arg("list")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .map_err(|error| failed(error.to_string()))?;
    if !output.status.success() {
        let said = String::from_utf8_lossy(&output.stderr).trim().to_owned();
        return Err(failed(if said.is_empty() {
            format!("it exited with {}", output.status)
        } else {
            said
        }));
    }
    let servers: BTreeMap<String, String> = serde_json::from_slice(&output.stdout)
        .map_err(|error| failed(format!("its list is not a JSON object: {error}")))?;
    Ok(servers.into_keys().collect())
}

/// Runs `docker-credential-HELPER get` with the registry's server address on stdin.
fn ask_helper(helper: &str, registry: &str) -> Result<Option<(String, String)>, CredentialsError> {
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
    // A helper that exits without reading its input answers all the same: what it prints
    // and how it exits decide, not the write.
    let _ = child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(server_address(registry).as_bytes());
    let output = child
        .wait_with_output()
        .map_err(|error| failed(error.to_string()))?;
    if !output.status.success() {
        let said = [&output.stdout, &output.stderr]
            .iter()
            .map(|bytes| String::from_utf8_lossy(bytes).trim().to_owned())
            .filter(|text| !text.is_empty())
            .collect::<Vec<_>>()
            .join("; ");
        // Helpers say this when they hold nothing for the registry: not an error.
        if said.contains("credentials not found") {
            return Ok(None);
        }
        let said = if said.is_empty() {
            format!("it exited with {}", output.status)
        } else {
            said
        };
        return Err(failed(said));
    }
    let answer: HelperAnswer = serde_json::from_slice(&output.stdout)
        .map_err(|error| failed(format!("its answer is not credentials JSON: {error}")))?;
    Ok(Some((answer.username, answer.secret)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn environment(config: Option<&std::path::Path>) -> Environment {
        Environment {
            username: None,
            password: None,
            host: Some("ghcr.io".to_owned()),
            config: config.map(ToOwned::to_owned),
        }
    }

    fn config(text: &str) -> tempfile::TempDir {
        let folder = tempfile::tempdir().unwrap();
        std::fs::write(folder.path().join("config.json"), text).unwrap();
        folder
    }

    fn pair(lookup: &Lookup) -> Option<(&str, &str)> {
        lookup
            .credentials
            .as_ref()
            .map(|found| (found.username.as_str(), found.password.as_str()))
    }

    #[test]
    fn forge_variables_win_over_the_docker_configuration() {
        let folder = config(r#"{"auths": {"ghcr.io": {"auth": "ZG9ja2VyOmNvbmZpZw=="}}}"#);
        let mut environment = environment(Some(&folder.path().join("config.json")));
        environment.username = Some("robot".to_owned());
        environment.password = Some("s3cret".to_owned());
        let found = lookup_in("ghcr.io", &environment).unwrap();
        assert_eq!(pair(&found), Some(("robot", "s3cret")));
        assert_eq!(found.origin, Origin::Environment);
    }

    #[test]
    fn forge_variables_go_only_to_their_one_registry() {
        let folder = config(r#"{"auths": {"quay.io": {"auth": "ZG9ja2VyOmNvbmZpZw=="}}}"#);
        let mut environment = environment(Some(&folder.path().join("config.json")));
        environment.username = Some("robot".to_owned());
        environment.password = Some("s3cret".to_owned());
        for registry in ["ghcr.io", "GHCR.io", "ghcr.io:443"] {
            let found = lookup_in(registry, &environment).unwrap();
            assert_eq!(pair(&found), Some(("robot", "s3cret")), "{registry}");
            assert_eq!(found.environment_for, None);
        }
        for registry in [
            "127.0.0.1:5000",
            "docker.io",
            "ghcr.io:5000",
            "ghcr.io.evil",
        ] {
            let found = lookup_in(registry, &environment).unwrap();
            assert_eq!(pair(&found), None, "{registry}");
            assert_eq!(found.environment_for.as_deref(), Some("ghcr.io"));
            assert!(
                found.describe().contains("kept for ghcr.io"),
                "{}",
                found.describe()
            );
        }
        // Another registry still finds its own credentials in the docker configuration.
        let quay = lookup_in("quay.io", &environment).unwrap();
        assert_eq!(pair(&quay), Some(("docker", "config")));
        environment.host = Some("index.docker.io".to_owned());
        let hub = lookup_in("docker.io", &environment).unwrap();
        assert_eq!(pair(&hub), Some(("robot", "s3cret")));
        assert_eq!(pair(&lookup_in("ghcr.io", &environment).unwrap()), None);
    }

    #[test]
    fn auths_entries_are_decoded_per_registry() {
        // base64("docker:config") and base64("user:pa:ss")
        let folder = config(
            r#"{"auths": {"ghcr.io": {"auth": "ZG9ja2VyOmNvbmZpZw=="},
                          "https://127.0.0.1:5000": {"auth": "dXNlcjpwYTpzcw=="},
                          "quay.io": {}}}"#,
        );
        let path = folder.path().join("config.json");
        let environment = environment(Some(&path));
        let ghcr = lookup_in("ghcr.io", &environment).unwrap();
        assert_eq!(pair(&ghcr), Some(("docker", "config")));
        let local = lookup_in("127.0.0.1:5000", &environment).unwrap();
        assert_eq!(pair(&local), Some(("user", "pa:ss")));
        let quay = lookup_in("quay.io", &environment).unwrap();
        assert_eq!((pair(&quay), &quay.origin), (None, &Origin::Auths(path)));
        assert!(
            !format!("{ghcr:?}").contains("config\""),
            "the password is not shown"
        );
    }

    #[test]
    fn docker_hub_is_found_under_the_key_the_docker_cli_writes() {
        // base64("user:pass")
        let folder =
            config(r#"{"auths": {"https://index.docker.io/v1/": {"auth": "dXNlcjpwYXNz"}}}"#);
        let environment = environment(Some(&folder.path().join("config.json")));
        for registry in ["docker.io", "index.docker.io", "registry-1.docker.io"] {
            let found = lookup_in(registry, &environment).unwrap();
            assert_eq!(pair(&found), Some(("user", "pass")), "{registry}");
        }
        assert_eq!(
            server_address("docker.io"),
            crate::types::oci::DOCKER_HUB_SERVER
        );
        assert_eq!(server_address("ghcr.io"), "ghcr.io");
    }

    #[test]
    fn a_helper_for_the_registry_comes_before_the_store_and_the_store_before_auths() {
        let helpers = r#"{"credHelpers": {"ghcr.io": "one"}, "credsStore": "two"}"#;
        let config: DockerConfig = serde_json::from_str(helpers).unwrap();
        let chosen = |registry: &str| {
            entry_for(&config.credential_helpers, registry)
                .or(config.credentials_store.as_ref())
                .cloned()
        };
        assert_eq!(chosen("ghcr.io").as_deref(), Some("one"));
        assert_eq!(chosen("quay.io").as_deref(), Some("two"));
        let hub: DockerConfig =
            serde_json::from_str(r#"{"credHelpers": {"https://index.docker.io/v1/": "hub"}}"#)
                .unwrap();
        assert_eq!(
            entry_for(&hub.credential_helpers, "docker.io").map(String::as_str),
            Some("hub")
        );
    }

    #[test]
    fn a_build_gathers_every_configured_registry() {
        // base64("one:pw1"), base64("two:pw2")
        let folder = config(
            r#"{"auths": {"https://127.0.0.1:5001/v2/": {"auth": "b25lOnB3MQ=="},
                          "https://index.docker.io/v1/": {"auth": "dHdvOnB3Mg=="},
                          "quay.io": {}},
                "credHelpers": {"registry.example": "forge-test-missing"}}"#,
        );
        let mut environment = environment(Some(&folder.path().join("config.json")));
        environment.username = Some("robot".to_owned());
        environment.password = Some("s3cret".to_owned());
        let (found, errors) = all_in(&environment);
        let mut pairs: Vec<(&str, &str, &str)> = found
            .iter()
            .map(|found| {
                (
                    found.registry.as_str(),
                    found.username.as_str(),
                    found.password.as_str(),
                )
            })
            .collect();
        pairs.sort_unstable();
        assert_eq!(
            pairs,
            [
                ("127.0.0.1:5001", "one", "pw1"),
                ("docker.io", "two", "pw2"),
                ("ghcr.io", "robot", "s3cret"),
            ]
        );
        // The helper that cannot run is named, and keeps nothing else from the build.
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0]
                .to_string()
                .contains("docker-credential-forge-test-missing"),
            "{}",
            errors[0]
        );
    }

    #[test]
    fn a_damaged_configuration_names_the_file() {
        let folder = config(r#"{"auths": {"ghcr.io": {"auth": "not base64!"}}}"#);
        let path = folder.path().join("config.json");
        let error = lookup_in("ghcr.io", &environment(Some(&path))).unwrap_err();
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
        let error = lookup_in(
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
