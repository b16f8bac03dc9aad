//! Registry credentials and the `WWW-Authenticate` challenges that ask for them.

use std::path::PathBuf;

use base64::Engine as _;

/// A user name and password (or token) for one registry.
#[derive(Clone)]
pub struct Credentials {
    user: String,
    password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Credentials {{ user: {:?}, password: <hidden> }}",
            self.user
        )
    }
}

impl Credentials {
    /// `FORGE_REGISTRY_USER` / `FORGE_REGISTRY_PASSWORD`, else the entry for `registry` in the
    /// `auths` of `$DOCKER_CONFIG/config.json` (default `~/.docker/config.json`).
    pub fn discover(registry: &str) -> Option<Self> {
        let from_env = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
        if let (Some(user), Some(password)) = (
            from_env("FORGE_REGISTRY_USER"),
            from_env("FORGE_REGISTRY_PASSWORD"),
        ) {
            return Some(Self { user, password });
        }
        let folder = from_env("DOCKER_CONFIG")
            .map(PathBuf::from)
            .or_else(|| from_env("HOME").map(|home| PathBuf::from(home).join(".docker")))?;
        let text = std::fs::read_to_string(folder.join("config.json")).ok()?;
        Self::from_docker_config(&text, registry)
    }

    /// The entry for `registry` in a Docker client configuration: `auth` (base64 of
    /// `user:password`) or `username` + `password`. Keys may carry a scheme and a path
    /// (`https://index.docker.io/v1/`).
    pub fn from_docker_config(text: &str, registry: &str) -> Option<Self> {
        #[derive(serde::Deserialize)]
        struct Config {
            #[serde(default)]
            auths: std::collections::BTreeMap<String, Entry>,
        }
        #[derive(serde::Deserialize)]
        struct Entry {
            auth: Option<String>,
            username: Option<String>,
            password: Option<String>,
        }
        let config: Config = serde_json::from_str(text).ok()?;
        let wanted = match registry {
            "docker.io" | "registry-1.docker.io" => "index.docker.io",
            other => other,
        };
        let entry = config.auths.iter().find_map(|(key, entry)| {
            let host = key
                .trim_start_matches("https://")
                .trim_start_matches("http://")
                .split('/')
                .next()
                .unwrap_or_default();
            (host == wanted).then_some(entry)
        })?;
        if let Some(auth) = &entry.auth {
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(auth.trim())
                .ok()?;
            let decoded = String::from_utf8(decoded).ok()?;
            let (user, password) = decoded.split_once(':')?;
            return Some(Self {
                user: user.to_owned(),
                password: password.to_owned(),
            });
        }
        Some(Self {
            user: entry.username.clone()?,
            password: entry.password.clone()?,
        })
    }

    /// The HTTP Basic `Authorization` value.
    pub fn basic(&self) -> String {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD
                .encode(format!("{}:{}", self.user, self.password))
        )
    }
}

/// What a registry's `WWW-Authenticate` header asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Challenge {
    /// Send the credentials with every request.
    Basic,
    /// Fetch a token from `realm` and send it as `Bearer`.
    Bearer {
        /// The token endpoint.
        realm: String,
        /// The `service` parameter to pass on.
        service: Option<String>,
        /// The `scope` parameter to pass on.
        scope: Option<String>,
    },
}

impl Challenge {
    /// Parses `Bearer realm="...",service="...",scope="..."` or `Basic realm="..."`.
    pub fn parse(header: &str) -> Option<Self> {
        let (scheme, rest) = header.trim().split_once(' ').unwrap_or((header.trim(), ""));
        if scheme.eq_ignore_ascii_case("basic") {
            return Some(Challenge::Basic);
        }
        if !scheme.eq_ignore_ascii_case("bearer") {
            return None;
        }
        let parameters = parameters(rest);
        let get = |name: &str| {
            parameters
                .iter()
                .find(|(key, _)| key.eq_ignore_ascii_case(name))
                .map(|(_, value)| value.clone())
        };
        Some(Challenge::Bearer {
            realm: get("realm")?,
            service: get("service"),
            scope: get("scope"),
        })
    }
}

/// `key="value", key=value` pairs; quoted values may hold commas (`scope="repo:x:pull,push"`).
fn parameters(text: &str) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let Some((key, after)) = rest.split_once('=') else {
            break;
        };
        let key = key.trim().trim_start_matches(',').trim().to_owned();
        let after = after.trim_start();
        let (value, remainder) = if let Some(quoted) = after.strip_prefix('"') {
            match quoted.find('"') {
                Some(end) => (quoted[..end].to_owned(), &quoted[end + 1..]),
                None => (quoted.to_owned(), ""),
            }
        } else {
            match after.find(',') {
                Some(end) => (after[..end].trim().to_owned(), &after[end..]),
                None => (after.trim().to_owned(), ""),
            }
        };
        pairs.push((key, value));
        rest = remainder.trim_start().trim_start_matches(',').trim_start();
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_bearer_challenge_with_commas_in_the_scope() {
        let challenge = Challenge::parse(
            r#"Bearer realm="https://ghcr.io/token",service="ghcr.io",scope="repository:aeon-7/base:pull,push""#,
        );
        assert_eq!(
            challenge,
            Some(Challenge::Bearer {
                realm: "https://ghcr.io/token".to_owned(),
                service: Some("ghcr.io".to_owned()),
                scope: Some("repository:aeon-7/base:pull,push".to_owned()),
            })
        );
        assert_eq!(
            Challenge::parse(r#"Basic realm="Registry""#),
            Some(Challenge::Basic)
        );
    }

    #[test]
    fn reads_docker_config_auths() {
        let config = r#"{"auths": {"https://index.docker.io/v1/": {"auth": "dXNlcjpwYXNz"}, "ghcr.io": {"username": "u", "password": "p"}}}"#;
        let hub = Credentials::from_docker_config(config, "docker.io").unwrap();
        assert_eq!(hub.basic(), "Basic dXNlcjpwYXNz");
        assert!(Credentials::from_docker_config(config, "ghcr.io").is_some());
        assert!(Credentials::from_docker_config(config, "quay.io").is_none());
    }
}
