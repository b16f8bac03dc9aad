//! Where a registry's credentials may go, decided on URLs the `url` crate parsed (user
//! information, brackets, ports, default ports and case as a browser reads them), never on text.
//!
//! The registry is one origin: scheme, host and port. Its credentials, and the tokens fetched
//! with them, are sent only to that origin, and to a token realm only when the realm is on it
//! too (or is Docker Hub's own `auth.docker.io`). A next link of a tag list must stay on it. A
//! redirect may lead elsewhere, but goes on without the credentials. Nothing moves from https to
//! http, plain HTTP is spoken only to loopback hosts and hosts named with `--insecure-registry`,
//! and no URL forge follows may carry a user name or password.

use std::fmt;
use std::net::IpAddr;

use crate::types::oci::RegistryHost;
pub use crate::types::url::is_origin_only;
use crate::types::url::{Scheme, has_user_information, is_localhost};
use url::{Host, Url};

/// Token realms on another host that are the registry's own, by the registry's API host.
const KNOWN_REALMS: &[(&str, &str)] = &[("registry-1.docker.io", "auth.docker.io")];

/// Why forge will not follow a URL a registry sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlRefusal {
    /// It is on another scheme, host or port than the registry (`registry` is the registry's
    /// origin).
    OtherHost {
        /// The registry's origin, such as `https://ghcr.io`.
        registry: String,
    },
    /// It goes from https to http.
    Downgrade,
    /// It is plain HTTP to a host that is neither loopback nor named with `--insecure-registry`,
    /// or the registry itself is spoken to over https.
    PlainHttp,
    /// It carries a user name or a password.
    UserInformation,
    /// It is not an http or https URL (what it is instead).
    NotHttp(String),
}

impl fmt::Display for UrlRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UrlRefusal::OtherHost { registry } => write!(
                f,
                "it leads to another host than the registry at {registry}, and the registry's credentials stay with the registry"
            ),
            UrlRefusal::Downgrade => f.write_str("it moves from https to http"),
            UrlRefusal::PlainHttp => f.write_str(
                "it is plain HTTP to a host that is neither loopback nor named with --insecure-registry",
            ),
            UrlRefusal::UserInformation => {
                f.write_str("it carries user information (a user name or password)")
            }
            UrlRefusal::NotHttp(what) => write!(f, "it is not an https:// URL ({what})"),
        }
    }
}

/// The registry's origin and the hosts that may be spoken to over plain HTTP.
#[derive(Debug, Clone)]
pub struct Trust<'a> {
    registry: &'a Url,
    insecure: &'a [RegistryHost],
}

impl<'a> Trust<'a> {
    /// The rules for the registry served at `registry` (its API base URL); `insecure` lists the
    /// hosts (with a port, if any) named with `--insecure-registry`.
    pub fn new(registry: &'a Url, insecure: &'a [RegistryHost]) -> Self {
        Self { registry, insecure }
    }

    /// Whether the registry's credentials, or a token fetched with them, may be sent to `url`:
    /// only when it is on the registry's own scheme, host and port.
    pub fn sends_credentials_to(&self, url: &Url) -> bool {
        same_origin(self.registry, url)
    }

    /// The next page of a tag list: `link` (relative links are read against `current`, the
    /// page that named it), which must stay on the registry's origin.
    pub fn next_link(&self, current: &Url, link: &str) -> Result<Url, UrlRefusal> {
        let next = current
            .join(link)
            .map_err(|error| UrlRefusal::NotHttp(error.to_string()))?;
        if has_user_information(&next) {
            return Err(UrlRefusal::UserInformation);
        }
        if !same_origin(self.registry, &next) {
            return Err(UrlRefusal::OtherHost {
                registry: self.registry.origin().ascii_serialization(),
            });
        }
        Ok(next)
    }

    /// Where a redirect from `from` to `location` leads: anywhere over https, over plain HTTP
    /// only from plain HTTP and to a host that may be spoken to so; never with user information.
    pub fn redirect(&self, from: &Url, location: &str) -> Result<Url, UrlRefusal> {
        let to = from
            .join(location)
            .map_err(|error| UrlRefusal::NotHttp(error.to_string()))?;
        self.check_scheme(&to, is_https(from))?;
        Ok(to)
    }

    /// The token realm of a challenge, and whether it gets the registry's credentials: it must
    /// be https (or plain HTTP where the registry itself is, to a host that may be spoken to
    /// so) and carry no user information; it gets the credentials only on the registry's origin
    /// or as Docker Hub's own token service.
    pub fn realm(&self, realm: &str) -> Result<(Url, bool), UrlRefusal> {
        let url = Url::parse(realm).map_err(|error| UrlRefusal::NotHttp(error.to_string()))?;
        self.check_scheme(&url, is_https(self.registry))?;
        let known = KNOWN_REALMS.iter().any(|(registry, realm)| {
            is_https(&url)
                && is_https(self.registry)
                && self.registry.host() == Some(Host::Domain(*registry))
                && url.host() == Some(Host::Domain(*realm))
                && url.port().is_none()
        });
        let credentials = known || same_origin(self.registry, &url);
        Ok((url, credentials))
    }

    /// Whether `url` may be spoken to over plain HTTP: its host is loopback or is named with
    /// `--insecure-registry` (with the same port, when the name has one).
    pub fn may_be_plain(&self, url: &Url) -> bool {
        is_loopback(url) || self.insecure.iter().any(|name| names(name, url))
    }

    fn check_scheme(&self, url: &Url, from_https: bool) -> Result<(), UrlRefusal> {
        if has_user_information(url) {
            return Err(UrlRefusal::UserInformation);
        }
        match url.scheme() {
            "https" => Ok(()),
            "http" if from_https => Err(UrlRefusal::Downgrade),
            "http" if !self.may_be_plain(url) => Err(UrlRefusal::PlainHttp),
            "http" => Ok(()),
            other => Err(UrlRefusal::NotHttp(format!("{other}:"))),
        }
    }
}

/// Whether `a` and `b` are http(s) URLs on the same scheme, host and port (a port left out is
/// the scheme's default).
pub fn same_origin(a: &Url, b: &Url) -> bool {
    matches!(a.scheme(), "http" | "https") && a.origin() == b.origin()
}

/// Whether `url` is https.
fn is_https(url: &Url) -> bool {
    Scheme::of(url) == Scheme::Https
}

/// Whether `url`'s host is this machine: `localhost` or a loopback address.
pub fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Domain(name)) => is_localhost(name),
        Some(Host::Ipv4(address)) => address.is_loopback(),
        Some(Host::Ipv6(address)) => IpAddr::V6(address).is_loopback(),
        None => false,
    }
}

/// Whether `--insecure-registry NAME` (`host` or `host:port`) names `url`'s host.
fn names(name: &RegistryHost, url: &Url) -> bool {
    let Ok(named) = Url::parse(&format!("http://{name}/")) else {
        return false;
    };
    named.host() == url.host()
        && named
            .port()
            .is_none_or(|port| url.port_or_known_default() == Some(port))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    #[test]
    fn the_realm_of_the_loopback_test_is_read_as_a_parser_reads_it() {
        let registry = url("http://127.0.0.1:5000/");
        let trust = Trust::new(&registry, &[]);
        assert_eq!(
            trust.realm("http://[::1]@0.0.0.0:5000/token"),
            Err(UrlRefusal::UserInformation)
        );
        assert_eq!(
            trust.realm("http://0.0.0.0:5000/token"),
            Err(UrlRefusal::PlainHttp)
        );
        assert_eq!(
            trust.realm("http://[::1]@127.0.0.1:5000/token"),
            Err(UrlRefusal::UserInformation)
        );
        assert_eq!(
            trust.realm("http://user:pw@127.0.0.1:5000/token"),
            Err(UrlRefusal::UserInformation)
        );
        assert_eq!(
            trust
                .realm("http://127.0.0.1:5000/token")
                .map(|(_, sent)| sent),
            Ok(true)
        );
        assert_eq!(
            trust
                .realm("http://LOCALHOST:5000/token")
                .map(|(_, sent)| sent),
            Ok(false)
        );
        assert_eq!(
            trust
                .realm("http://127.0.0.1:5001/token")
                .map(|(_, sent)| sent),
            Ok(false)
        );
        assert!(matches!(
            trust.realm("ftp://127.0.0.1/token"),
            Err(UrlRefusal::NotHttp(_))
        ));
        assert!(matches!(trust.realm("/token"), Err(UrlRefusal::NotHttp(_))));
    }

    #[test]
    fn an_https_registry_takes_no_plain_realm_and_docker_hub_keeps_its_auth_host() {
        let registry = url("https://registry-1.docker.io/");
        let trust = Trust::new(&registry, &[]);
        assert_eq!(
            trust.realm("http://127.0.0.1/token"),
            Err(UrlRefusal::Downgrade)
        );
        assert_eq!(
            trust
                .realm("https://auth.docker.io/token")
                .map(|(_, sent)| sent),
            Ok(true)
        );
        assert_eq!(
            trust
                .realm("https://auth.docker.io:8443/token")
                .map(|(_, sent)| sent),
            Ok(false)
        );
        let ghcr = url("https://ghcr.io/");
        let trust = Trust::new(&ghcr, &[]);
        assert_eq!(
            trust
                .realm("https://auth.docker.io/token")
                .map(|(_, sent)| sent),
            Ok(false)
        );
        assert_eq!(
            trust
                .realm("https://GHCR.io:443/token")
                .map(|(_, sent)| sent),
            Ok(true)
        );
    }

    #[test]
    fn insecure_names_match_host_and_port() {
        let registry = url("http://reg.internal:5000/");
        let insecure: Vec<RegistryHost> = ["reg.internal:5000", "other.internal"]
            .map(|name| name.parse().unwrap())
            .into();
        let trust = Trust::new(&registry, &insecure);
        assert!(trust.may_be_plain(&url("http://reg.internal:5000/token")));
        assert!(!trust.may_be_plain(&url("http://reg.internal:5001/token")));
        assert!(trust.may_be_plain(&url("http://other.internal:8080/token")));
        assert!(!trust.may_be_plain(&url("http://reg.internal.evil:5000/token")));
        assert!(!trust.may_be_plain(&url("http://reg.internal:5000@evil:5000/token")));
        // A name with user information is not a registry host: refused where it is read.
        assert!("evil@reg.internal:5000".parse::<RegistryHost>().is_err());
    }

    #[test]
    fn next_links_resolve_against_the_page_and_stay_home() {
        let registry = url("http://127.0.0.1:5000/");
        let trust = Trust::new(&registry, &[]);
        let page = url("http://127.0.0.1:5000/v2/a/tags/list?n=2");
        assert_eq!(
            trust
                .next_link(&page, "/v2/a/tags/list?n=2&last=b")
                .unwrap()
                .as_str(),
            "http://127.0.0.1:5000/v2/a/tags/list?n=2&last=b"
        );
        assert_eq!(
            trust.next_link(&page, "list?last=b").unwrap().as_str(),
            "http://127.0.0.1:5000/v2/a/tags/list?last=b"
        );
        assert!(
            trust
                .next_link(&page, "http://127.0.0.1:5000/v2/a/tags/list?last=b")
                .is_ok()
        );
        assert!(matches!(
            trust.next_link(&page, "http://127.0.0.2:5000/v2/a/tags/list"),
            Err(UrlRefusal::OtherHost { .. })
        ));
        assert!(matches!(
            trust.next_link(&page, "//127.0.0.1:5001/v2/a/tags/list"),
            Err(UrlRefusal::OtherHost { .. })
        ));
        assert_eq!(
            trust.next_link(&page, "http://u:p@127.0.0.1:5000/v2/a/tags/list"),
            Err(UrlRefusal::UserInformation)
        );
    }

    #[test]
    fn redirects_never_go_from_https_to_http() {
        let registry = url("https://ghcr.io/");
        let trust = Trust::new(&registry, &[]);
        let from = url("https://ghcr.io/v2/a/manifests/b");
        assert_eq!(
            trust.redirect(&from, "http://ghcr.io/x"),
            Err(UrlRefusal::Downgrade)
        );
        assert_eq!(
            trust.redirect(&from, "http://127.0.0.1/x"),
            Err(UrlRefusal::Downgrade)
        );
        let to = trust.redirect(&from, "https://cdn.example/x").unwrap();
        assert!(!trust.sends_credentials_to(&to));
        let to = trust.redirect(&from, "/v2/a/manifests/sha256:00").unwrap();
        assert!(trust.sends_credentials_to(&to));
        let plain = url("http://127.0.0.1:5000/");
        let trust = Trust::new(&plain, &[]);
        let from = url("http://127.0.0.1:5000/v2/a/manifests/b");
        assert_eq!(
            trust.redirect(&from, "http://cdn.example/x"),
            Err(UrlRefusal::PlainHttp)
        );
        assert!(trust.redirect(&from, "https://cdn.example/x").is_ok());
    }

    #[test]
    fn loopback_hosts_as_the_parser_reads_them() {
        for text in [
            "http://127.0.0.1/",
            "http://127.0.0.1:5000/",
            "http://localhost:5000/",
            "http://LOCALHOST/",
            "http://[::1]:5000/",
            "http://127.1/",
            "http://0x7f000001/",
            "http://evil@127.0.0.1/",
        ] {
            assert!(is_loopback(&url(text)), "{text}");
        }
        for text in [
            "http://ghcr.io/",
            "http://10.0.0.1:5000/",
            "http://example.org:443/",
            "http://127.0.0.1.example.org/",
            "http://[::1]@0.0.0.0/",
            "http://0.0.0.0/",
            "http://localhost.evil/",
        ] {
            assert!(!is_loopback(&url(text)), "{text}");
        }
    }

    /// A host, spelled one of several ways; `identity` says which machine it names.
    #[derive(Debug, Clone)]
    struct Spelling {
        text: &'static str,
        identity: u8,
        loopback: bool,
    }

    fn spellings() -> Vec<Spelling> {
        let spell = |text, identity, loopback| Spelling {
            text,
            identity,
            loopback,
        };
        vec![
            spell("127.0.0.1", 0, true),
            spell("2130706433", 0, true),
            spell("0x7f.0.0.1", 0, true),
            spell("127.1", 0, true),
            spell("127.0.0.2", 1, true),
            spell("[::1]", 2, true),
            spell("[0:0:0:0:0:0:0:1]", 2, true),
            spell("localhost", 3, true),
            spell("LocalHost", 3, true),
            spell("0.0.0.0", 4, false),
            spell("ghcr.io", 5, false),
            spell("GHCR.IO", 5, false),
            spell("ghcr.io.", 6, false),
            spell("evil.example", 7, false),
            spell("[::ffff:127.0.0.1]", 8, false),
        ]
    }

    /// A generated URL and what it is, by construction.
    #[derive(Debug, Clone)]
    struct Generated {
        text: String,
        scheme: Scheme,
        host: Spelling,
        port: u16,
        userinfo: bool,
    }

    fn generated() -> impl Strategy<Value = Generated> {
        let hosts = spellings();
        (
            prop::sample::select(vec!["http", "https", "HTTP", "Https"]),
            prop::sample::select(vec![
                "",
                "user@",
                "user:pw@",
                ":pw@",
                "[::1]@",
                "127.0.0.1@",
                "127.0.0.1:5000@",
                "ghcr.io@",
                "a%40b@",
            ]),
            prop::sample::select(hosts),
            prop::sample::select(vec![None, Some(80u16), Some(443), Some(5000), Some(5001)]),
            prop::sample::select(vec!["/token", "/v2/a/tags/list?n=1", "/", "/x@y/z"]),
        )
            .prop_map(|(written, userinfo, host, port, path)| {
                let written_port = port.map_or(String::new(), |port| format!(":{port}"));
                let (scheme, default) = if written.eq_ignore_ascii_case("https") {
                    (Scheme::Https, 443)
                } else {
                    (Scheme::Http, 80)
                };
                Generated {
                    text: format!("{written}://{userinfo}{}{written_port}{path}", host.text),
                    scheme,
                    port: port.unwrap_or(default),
                    userinfo: !userinfo.is_empty(),
                    host,
                }
            })
    }

    fn registries() -> impl Strategy<Value = Generated> {
        generated().prop_filter("a registry's base has no user information", |registry| {
            !registry.userinfo
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        /// A realm or link gets the registry's credentials only when it names the same scheme,
        /// machine and port, however either is spelled, and never with user information.
        #[test]
        fn credentials_go_only_to_the_same_scheme_host_and_port(
            registry in registries(),
            target in generated(),
        ) {
            let base = Url::parse(&registry.text).unwrap();
            let trust = Trust::new(&base, &[]);
            let same = registry.scheme == target.scheme
                && registry.host.identity == target.host.identity
                && registry.port == target.port;
            let parsed = Url::parse(&target.text).unwrap();
            prop_assert_eq!(trust.sends_credentials_to(&parsed), same, "{} -> {}", registry.text, target.text);
            let page = base.join("/v2/a/tags/list").unwrap();

            match trust.realm(&target.text) {
                Ok((_, credentials)) => {
                    prop_assert!(!target.userinfo, "{}", target.text);
                    prop_assert_eq!(credentials, same, "{} -> {}", registry.text, target.text);
                    if target.scheme == Scheme::Http {
                        prop_assert!(registry.scheme == Scheme::Http && target.host.loopback, "{} -> {}", registry.text, target.text);
                    }
                }
                Err(UrlRefusal::UserInformation) => prop_assert!(target.userinfo),
                Err(UrlRefusal::Downgrade) => prop_assert!(registry.scheme == Scheme::Https && target.scheme == Scheme::Http),
                Err(UrlRefusal::PlainHttp) => prop_assert!(target.scheme == Scheme::Http && !target.host.loopback),
                Err(other) => prop_assert!(false, "{:?} for {}", other, target.text),
            }

            match trust.next_link(&page, &target.text) {
                Ok(next) => {
                    prop_assert!(same && !target.userinfo, "{} -> {}", registry.text, target.text);
                    prop_assert!(trust.sends_credentials_to(&next));
                }
                Err(UrlRefusal::OtherHost { .. }) => prop_assert!(!same),
                Err(UrlRefusal::UserInformation) => prop_assert!(target.userinfo),
                Err(other) => prop_assert!(false, "{:?} for {}", other, target.text),
            }

            match trust.redirect(&page, &target.text) {
                Ok(to) => {
                    prop_assert!(!target.userinfo);
                    prop_assert!(registry.scheme == Scheme::Http || target.scheme == Scheme::Https);
                    prop_assert_eq!(trust.sends_credentials_to(&to), same);
                }
                Err(UrlRefusal::UserInformation) => prop_assert!(target.userinfo),
                Err(UrlRefusal::Downgrade) => prop_assert!(registry.scheme == Scheme::Https && target.scheme == Scheme::Http),
                Err(UrlRefusal::PlainHttp) => prop_assert!(target.scheme == Scheme::Http && !target.host.loopback),
                Err(other) => prop_assert!(false, "{:?} for {}", other, target.text),
            }
        }

        /// Whatever text a registry sends as a realm or a link, a URL that gets the credentials
        /// is on the registry's origin and carries no user information.
        #[test]
        fn arbitrary_text_never_earns_the_credentials_elsewhere(
            text in "(https?://)?[a-z0-9@:\\[\\]./%\\\\?#-]{0,40}",
        ) {
            let base = Url::parse("http://127.0.0.1:5000/").unwrap();
            let trust = Trust::new(&base, &[]);
            let page = base.join("/v2/a/tags/list").unwrap();
            if let Ok((url, true)) = trust.realm(&text) {
                prop_assert!(same_origin(&base, &url) && !has_user_information(&url), "{}", text);
            }
            if let Ok(url) = trust.next_link(&page, &text) {
                prop_assert!(same_origin(&base, &url) && !has_user_information(&url), "{}", text);
            }
        }
    }
}
