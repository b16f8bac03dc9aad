//! The blocking HTTP client the package index, registry and git clients share: one `ureq` agent with
//! timeouts, rustls for TLS, and status codes returned as responses rather than errors (the
//! callers tell a 404 from a 401 from a 500 in their own terms).

use std::time::Duration;

/// How long one request may take, connection and body included.
const TIMEOUT: Duration = Duration::from_secs(60);

/// The largest body forge reads: an index page of a package with thousands of files.
pub const BODY_LIMIT: u64 = 64 * 1024 * 1024;

/// A fresh agent for requests with a bounded body: each takes at most `TIMEOUT` in all.
pub fn agent() -> ureq::Agent {
    config().timeout_global(Some(TIMEOUT)).build().into()
}

/// What every forge agent shares. Redirects are followed (PyPI and registries redirect to
/// CDNs); the proxy settings of the environment (`HTTPS_PROXY`, `NO_PROXY`) apply. Certificates
/// are checked against the machine's trust store, as pip, git and docker do, so a site that adds
/// its own CA (a TLS-inspecting proxy, an internal mirror) works here as it does for them.
pub fn config() -> ureq::config::ConfigBuilder<ureq::typestate::AgentScope> {
    ureq::Agent::config_builder()
        .tls_config(
            ureq::tls::TlsConfig::builder()
                .root_certs(ureq::tls::RootCerts::PlatformVerifier)
                .build(),
        )
        .http_status_as_error(false)
        .user_agent(concat!("forge/", env!("CARGO_PKG_VERSION")))
}

/// Reads a response body as text, within `BODY_LIMIT`.
pub fn body_text(response: &mut ureq::http::Response<ureq::Body>) -> Result<String, ureq::Error> {
    response
        .body_mut()
        .with_config()
        .limit(BODY_LIMIT)
        .read_to_string()
}

/// A header's value as text, if present and printable.
pub fn header<'a>(response: &'a ureq::http::Response<ureq::Body>, name: &str) -> Option<&'a str> {
    response
        .headers()
        .get(name)
        .and_then(|value| value.to_str().ok())
}

/// Whether `host` (with or without a port) names this machine: plain HTTP is only ever used
/// for those without being asked.
pub fn is_loopback(host: &str) -> bool {
    let is_loopback_name = |name: &str| {
        name == "localhost"
            || name
                .parse::<std::net::IpAddr>()
                .is_ok_and(|address| address.is_loopback())
    };
    // A bare IPv6 address is all colons: try the whole host before splitting off a port.
    if is_loopback_name(host) {
        return true;
    }
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(rest),
        None => host
            .rsplit_once(':')
            .filter(|(_, port)| port.chars().all(|c| c.is_ascii_digit()))
            .map_or(host, |(name, _)| name),
    };
    is_loopback_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_with_and_without_ports() {
        for host in [
            "127.0.0.1",
            "127.0.0.1:5000",
            "localhost:5000",
            "[::1]:5000",
            "::1",
        ] {
            assert!(is_loopback(host), "{host}");
        }
        for host in [
            "ghcr.io",
            "10.0.0.1:5000",
            "example.org:443",
            "127.0.0.1.example.org",
        ] {
            assert!(!is_loopback(host), "{host}");
        }
    }
}
