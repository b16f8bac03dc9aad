//! The `WWW-Authenticate` challenges registries answer with when they want credentials.

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
}
