//! Credentials go only where they belong. A registry's next links, redirects and token realms on
//! another host, port or scheme never receive its credentials nor a token fetched for it; forge
//! never moves from https to http; `FORGE_REGISTRY_USER` / `FORGE_REGISTRY_PASSWORD` go to one
//! registry; no message prints the user information or the token of a URL.
//!
//! The registries here are small servers written for the purpose, each logging what it was sent.
//! 127.0.0.1 and 127.0.0.2 (both loopback) stand for two hosts.

use std::net::TcpStream;

use base64::Engine as _;

use crate::support::forge;
use crate::support::http::{Request, respond, respond_to_head};
use crate::support::index::IndexServer;
use crate::support::snapshot::forge_snapshot;
use crate::support::tls::{Certificates, TlsTerminator};
use crate::support::{LoopbackServer, TestContext, assert_contains, env_refs, free_port};

/// The digest every fake registry serves for every manifest.
const DIGEST: &str = "sha256:abababababababababababababababababababababababababababababababab";

/// One request as a fake server read it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    target: String,
    host: String,
    authorization: Option<String>,
}

/// What a fake server answers.
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn status(status: u16) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: String::new(),
        }
    }

    fn json(body: impl Into<String>) -> Self {
        Self {
            body: body.into(),
            ..Self::status(200)
        }
        .header("Content-Type", "application/json")
    }

    fn header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.push((name.to_owned(), value.into()));
        self
    }
}

/// A fake HTTP server on a loopback address: each request is logged as
/// `METHOD TARGET | AUTHORIZATION` and answered by `answer`.
struct Fake {
    server: LoopbackServer,
}

impl Fake {
    fn start(ip: &str, answer: impl Fn(&Seen) -> Answer + Send + 'static) -> Self {
        let server = LoopbackServer::start_on(ip, move |mut stream: TcpStream, log| {
            let Some(seen) = read_request(&stream) else {
                return;
            };
            log.lock().expect("the request log").push(format!(
                "{} {} | {}",
                seen.method,
                seen.target,
                seen.authorization.as_deref().unwrap_or("")
            ));
            let answer = answer(&seen);
            let status = format!("{} Fake", answer.status);
            let headers: Vec<(&str, &str)> = answer
                .headers
                .iter()
                .map(|(name, value)| (name.as_str(), value.as_str()))
                .collect();
            let body = answer.body.as_bytes();
            if seen.method == "HEAD" {
                respond_to_head(&mut stream, &status, &headers, body);
            } else {
                respond(&mut stream, &status, &headers, body);
            }
        });
        Self { server }
    }

    fn address(&self) -> &str {
        self.server.address()
    }

    /// Every request so far, as logged.
    fn seen(&self) -> Vec<String> {
        self.server.requests()
    }
}

fn read_request(stream: &TcpStream) -> Option<Seen> {
    let request = Request::read(stream)?;
    Some(Seen {
        host: request.header("host").unwrap_or_default().to_owned(),
        authorization: request.header("authorization").map(str::to_owned),
        method: request.method,
        target: request.target,
    })
}

/// The `Authorization` value of HTTP Basic for `user` and `password`.
fn basic(user: &str, password: &str) -> String {
    let pair = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    format!("Basic {pair}")
}

/// The user and password the fake registries accept, as the environment hands them to forge.
const USER: &str = "robot";
const PASSWORD: &str = "s3cret-registry-password";

fn challenge_basic() -> Answer {
    Answer::status(401).header("WWW-Authenticate", "Basic realm=\"fake\"")
}

fn tag_list(tags: &[&str]) -> Answer {
    Answer::json(serde_json::json!({ "name": "aeon-7/base", "tags": tags }).to_string())
}

fn manifest() -> Answer {
    Answer {
        body: "{}".to_owned(),
        ..Answer::status(200)
    }
    .header(
        "Content-Type",
        "application/vnd.docker.distribution.manifest.v2+json",
    )
    .header("Docker-Content-Digest", DIGEST)
}

/// The default recipe with its base at `address`, following dated tags; and pins.toml's text.
fn recipe_with_base(address: &str) -> (TestContext, String) {
    let context = TestContext::default_recipe();
    context.edit(
        "pins.toml",
        "image = \"ghcr.io/aeon-7/aeon-vllm-ultimate:2026-07-01-v0.24.0\"\n",
        &format!(
            "image = \"{address}/aeon-7/base:2026-07-01-v0.24.0\"\ntags = \"????-??-??-v*\"\n"
        ),
    );
    let before = context.read("pins.toml");
    (context, before)
}

/// The environment that hands the registry at `host` its credentials.
fn credentials_for(host: &str) -> [(&'static str, String); 3] {
    [
        ("FORGE_REGISTRY_USER", USER.to_owned()),
        ("FORGE_REGISTRY_PASSWORD", PASSWORD.to_owned()),
        ("FORGE_REGISTRY_HOST", host.to_owned()),
    ]
}

/// `text` with each address (`IP:PORT`) of `servers` written as the name beside it, so that a
/// snapshot holds each URL to the server it names.
fn naming(text: &str, servers: &[(&str, &str)]) -> String {
    servers
        .iter()
        .fold(text.to_owned(), |text, (address, name)| {
            text.replace(address, name)
        })
}

/// Panics unless no logged request carries the registry's password, in Basic or as a token.
#[track_caller]
fn assert_no_secret(seen: &[String], secrets: &[&str]) {
    for line in seen {
        for secret in secrets {
            assert!(!line.contains(secret), "{secret:?} was sent: {seen:?}");
        }
    }
}

/// Item 1: a tag list whose `next` link leaves the registry's host is refused (the distribution
/// API sends relative links, so a link elsewhere is a registry or a proxy gone wrong), and the
/// other host receives nothing, least of all the registry's credentials.
#[test]
fn a_next_link_to_another_host_is_refused_and_gets_no_credentials() {
    let other = Fake::start("127.0.0.2", |_| tag_list(&["2026-09-09-v9.9.9"]));
    let link = format!(
        "http://{}/v2/aeon-7/base/tags/list?n=1&last=2026-07-01-v0.24.0",
        other.address()
    );
    let wanted = basic(USER, PASSWORD);
    let registry = Fake::start("127.0.0.1", move |seen| {
        if seen.authorization.as_deref() != Some(wanted.as_str()) {
            return challenge_basic();
        }
        if seen.target.contains("/tags/list") {
            return tag_list(&["2026-07-01-v0.24.0"])
                .header("Link", format!("<{link}>; rel=\"next\""));
        }
        manifest()
    });
    let (context, before) = recipe_with_base(registry.address());
    let env = credentials_for(registry.address());
    let run = forge(&context, &["pin", "bump", "base"], &env_refs(&env)).expect_code(2);

    assert_no_secret(&other.seen(), &[&basic(USER, PASSWORD)]);
    assert!(other.seen().is_empty(), "{:?}", other.seen());
    let servers = [
        (registry.address(), "<registry>"),
        (other.address(), "<other>"),
    ];
    forge_snapshot!(naming(&run.stderr, &servers), context.path(), @"
    error: cannot look up the base image <registry>/aeon-7/base:2026-07-01-v0.24.0; pins.toml was not changed
    caused by: forge does not follow the next link of the tag list http://<other>/v2/aeon-7/base/tags/list?n=1&last=2026-07-01-v0.24.0: it leads to another host than the registry at http://<registry>, and the registry's credentials stay with the registry
    hint: the distribution API continues a tag list on the registry's own host (its next links are relative); check the registry, or a proxy in front of it that rewrites its URLs
    ");
    assert_eq!(context.read("pins.toml"), before);
}

/// Item 1: the Bearer token fetched for the registry (from a realm on the registry's own host,
/// which does get the credentials) is not sent to a next link on another host either.
#[test]
fn a_token_for_the_registry_never_leaves_its_host() {
    let other = Fake::start("127.0.0.2", |_| tag_list(&["2026-09-09-v9.9.9"]));
    let link = format!(
        "http://{}/v2/aeon-7/base/tags/list?n=1&last=2026-07-01-v0.24.0",
        other.address()
    );
    let wanted = basic(USER, PASSWORD);
    let registry = Fake::start("127.0.0.1", move |seen| {
        if seen.target.starts_with("/token") {
            return if seen.authorization.as_deref() == Some(wanted.as_str()) {
                Answer::json(r#"{"token": "t0ken-of-the-registry"}"#)
            } else {
                Answer::status(401)
            };
        }
        if seen.authorization.as_deref() != Some("Bearer t0ken-of-the-registry") {
            let realm = format!(
                "Bearer realm=\"http://{}/token\",service=\"fake\",scope=\"repository:aeon-7/base:pull\"",
                seen.host
            );
            return Answer::status(401).header("WWW-Authenticate", realm);
        }
        if seen.target.contains("/tags/list") {
            return tag_list(&["2026-07-01-v0.24.0"])
                .header("Link", format!("<{link}>; rel=\"next\""));
        }
        manifest()
    });
    let (context, before) = recipe_with_base(registry.address());
    let env = credentials_for(registry.address());
    let run = forge(&context, &["pin", "bump", "base"], &env_refs(&env)).expect_code(2);

    // The realm on the registry's own host got the credentials and handed out the token.
    let asked = registry.seen();
    assert!(
        asked
            .iter()
            .any(|line| line.starts_with("GET /token?") && line.ends_with(&basic(USER, PASSWORD))),
        "{asked:?}"
    );
    assert_no_secret(
        &other.seen(),
        &["t0ken-of-the-registry", &basic(USER, PASSWORD)],
    );
    assert!(other.seen().is_empty(), "{:?}", other.seen());
    let servers = [
        (registry.address(), "<registry>"),
        (other.address(), "<other>"),
    ];
    forge_snapshot!(naming(&run.stderr, &servers), context.path(), @"
    error: cannot look up the base image <registry>/aeon-7/base:2026-07-01-v0.24.0; pins.toml was not changed
    caused by: forge does not follow the next link of the tag list http://<other>/v2/aeon-7/base/tags/list?n=1&last=2026-07-01-v0.24.0: it leads to another host than the registry at http://<registry>, and the registry's credentials stay with the registry
    hint: the distribution API continues a tag list on the registry's own host (its next links are relative); check the registry, or a proxy in front of it that rewrites its URLs
    ");
    assert_eq!(context.read("pins.toml"), before);
}

/// Relative next links (as the distribution spec writes them) and absolute ones on the
/// registry's own host keep working, each page asked with the credentials.
#[test]
fn next_links_on_the_registry_host_are_followed_with_the_credentials() {
    let wanted = basic(USER, PASSWORD);
    let registry = Fake::start("127.0.0.1", move |seen| {
        if seen.authorization.as_deref() != Some(wanted.as_str()) {
            return challenge_basic();
        }
        if seen.target.contains("last=2026-07-15-v0.25.0") {
            return tag_list(&["2026-08-02-v0.25.1"]);
        }
        if seen.target.contains("last=2026-07-01-v0.24.0") {
            let link = format!(
                "http://{}/v2/aeon-7/base/tags/list?n=1&last=2026-07-15-v0.25.0",
                seen.host
            );
            return tag_list(&["2026-07-15-v0.25.0"])
                .header("Link", format!("<{link}>; rel=\"next\""));
        }
        if seen.target.contains("/tags/list") {
            return tag_list(&["2026-07-01-v0.24.0"]).header(
                "Link",
                "</v2/aeon-7/base/tags/list?n=1&last=2026-07-01-v0.24.0>; rel=\"next\"",
            );
        }
        manifest()
    });
    let (context, before) = recipe_with_base(registry.address());
    let env = credentials_for(registry.address());
    forge(&context, &["pin", "bump", "base"], &env_refs(&env)).expect_code(0);
    assert_eq!(
        context.read("pins.toml"),
        before
            .replacen("2026-07-01-v0.24.0", "2026-08-02-v0.25.1", 1)
            .replacen(
                "tags = \"????-??-??-v*\"\n",
                &format!("tags = \"????-??-??-v*\"\ndigest = \"{DIGEST}\"\n"),
                1
            )
    );
    let pages: Vec<String> = registry
        .seen()
        .into_iter()
        .filter(|line| line.contains("/tags/list") && line.ends_with(&basic(USER, PASSWORD)))
        .collect();
    assert_eq!(pages.len(), 3, "{:?}", registry.seen());
}

/// A redirect to another host is followed without the credentials (registries send manifests
/// and blobs from CDNs); one on the registry's own host keeps them.
#[test]
fn a_redirect_keeps_the_credentials_only_on_the_registry_host() {
    let other = Fake::start("127.0.0.2", |_| manifest());
    let elsewhere = other.address().to_owned();
    let wanted = basic(USER, PASSWORD);
    let registry = Fake::start("127.0.0.1", move |seen| {
        if seen.authorization.as_deref() != Some(wanted.as_str()) {
            return challenge_basic();
        }
        if seen.target.contains("/tags/list") {
            return tag_list(&["2026-07-01-v0.24.0", "2026-07-15-v0.25.0"]);
        }
        if seen.target.ends_with("/manifests/2026-07-15-v0.25.0") {
            let location = format!("/v2/aeon-7/base/manifests/{DIGEST}");
            return Answer::status(307).header("Location", location);
        }
        let location = format!("http://{elsewhere}/cdn/manifest");
        Answer::status(307).header("Location", location)
    });
    let (context, before) = recipe_with_base(registry.address());
    let env = credentials_for(registry.address());
    forge(&context, &["pin", "bump", "base"], &env_refs(&env)).expect_code(0);
    assert_contains(
        &context.read("pins.toml"),
        &format!("digest = \"{DIGEST}\""),
    );
    assert_ne!(context.read("pins.toml"), before);
    // The redirect on the registry's host came with the credentials, the one elsewhere without.
    assert!(
        registry
            .seen()
            .iter()
            .any(|line| line
                .starts_with(&format!("HEAD /v2/aeon-7/base/manifests/{DIGEST} | Basic"))),
        "{:?}",
        registry.seen()
    );
    assert_eq!(
        other.seen(),
        ["HEAD /cdn/manifest | ".to_owned()],
        "{:?}",
        other.seen()
    );
}

/// A token realm on another host or port is asked without the credentials: when the registry
/// then refuses, the error says why none were sent.
#[test]
fn a_realm_on_another_host_is_asked_without_the_credentials() {
    let realm = Fake::start("127.0.0.2", |_| Answer::json(r#"{"token": "anonymous"}"#));
    let realm_url = format!("http://{}/token", realm.address());
    let registry = Fake::start("127.0.0.1", move |_| {
        let challenge = format!("Bearer realm=\"{realm_url}\",service=\"fake\"");
        Answer::status(401).header("WWW-Authenticate", challenge)
    });
    let (context, before) = recipe_with_base(registry.address());
    let env = credentials_for(registry.address());
    let run = forge(&context, &["pin", "bump", "base"], &env_refs(&env)).expect_code(2);
    assert_eq!(realm.seen().len(), 1, "{:?}", realm.seen());
    assert_no_secret(&realm.seen(), &[&basic(USER, PASSWORD), "Basic"]);
    let servers = [
        (registry.address(), "<registry>"),
        (realm.address(), "<realm>"),
    ];
    forge_snapshot!(naming(&run.stderr, &servers), context.path(), @"
    error: cannot look up the base image <registry>/aeon-7/base:2026-07-01-v0.24.0; pins.toml was not changed
    caused by: the registry refused access to http://<registry>/v2/aeon-7/base/tags/list?n=1000 (HTTP 401): its token realm http://<realm>/token is on another host, which gets no credentials (forge has them from FORGE_REGISTRY_USER and FORGE_REGISTRY_PASSWORD)
    hint: the registry hands out tokens from another host, and forge sends the credentials for <registry> to <registry> alone; pull anonymously, or use a registry whose token service is on its own host
    ");
    assert_eq!(context.read("pins.toml"), before);
}

/// Item 1: forge never moves from https to http: a realm served over TLS that redirects to
/// plain HTTP is not followed.
#[test]
fn a_redirect_from_https_to_http_is_refused() {
    let plain = Fake::start("127.0.0.1", |_| Answer::json(r#"{"token": "t"}"#));
    let downgrade = format!("http://{}/token", plain.address());
    let secure = Fake::start("127.0.0.1", move |seen| {
        let query = seen.target.split_once('?').map_or("", |(_, query)| query);
        Answer::status(302).header("Location", format!("{downgrade}?{query}"))
    });
    let certificates = Certificates::make();
    let terminator = TlsTerminator::start(&certificates, secure.address(), false);
    let realm_url = format!("https://127.0.0.1:{}/token", terminator.port());
    let registry = Fake::start("127.0.0.1", move |_| {
        let challenge = format!("Bearer realm=\"{realm_url}\",service=\"fake\"");
        Answer::status(401).header("WWW-Authenticate", challenge)
    });
    let (context, before) = recipe_with_base(registry.address());
    let mut env = credentials_for(registry.address()).to_vec();
    let ca = certificates.file("ca.pem");
    env.push(("SSL_CERT_FILE", ca.display().to_string()));
    let run = forge(&context, &["pin", "bump", "base"], &env_refs(&env)).expect_code(2);
    assert_eq!(secure.seen().len(), 1, "{:?}", secure.seen());
    assert!(plain.seen().is_empty(), "{:?}", plain.seen());
    let tls = format!("127.0.0.1:{}", terminator.port());
    let servers = [
        (registry.address(), "<registry>"),
        (tls.as_str(), "<tls>"),
        (plain.address(), "<plain>"),
    ];
    forge_snapshot!(naming(&run.stderr, &servers), context.path(), @"
    error: cannot look up the base image <registry>/aeon-7/base:2026-07-01-v0.24.0; pins.toml was not changed
    caused by: forge does not follow the redirect to http://<plain>/token?scope=repository%3Aaeon-7%2Fbase%3Apull&service=fake: it moves from https to http
    hint: a registry's redirects and token realms must be https (plain HTTP only for loopback hosts and --insecure-registry HOST) and carry no user name or password; check the registry's configuration
    ");
    assert_eq!(context.read("pins.toml"), before);
}

/// Item 2: a realm is read with a real URL parser. `http://[::1]@0.0.0.0:PORT/token` is host
/// 0.0.0.0 with user `[::1]`, not loopback `[::1]`: a realm that carries user information is
/// refused, and one over plain HTTP on a host the registry may not be spoken to over HTTP too.
#[test]
fn a_realm_with_user_information_or_plain_http_elsewhere_gets_nothing() {
    let listener = Fake::start("127.0.0.1", |_| Answer::json(r#"{"token": "t"}"#));
    let port = listener.address().rsplit_once(':').unwrap().1.to_owned();
    let mut refusals = String::new();
    for realm in [
        format!("http://[::1]@0.0.0.0:{port}/token"),
        format!("http://127.0.0.1:{port}@0.0.0.0:{port}/token"),
        format!("http://0.0.0.0:{port}/token"),
        format!("ftp://127.0.0.1:{port}/token"),
    ] {
        let challenge = format!("Bearer realm=\"{realm}\",service=\"fake\"");
        let registry = Fake::start("127.0.0.1", move |_| {
            Answer::status(401).header("WWW-Authenticate", challenge.clone())
        });
        let (context, before) = recipe_with_base(registry.address());
        let env = credentials_for(registry.address());
        let run = forge(&context, &["pin", "bump", "base"], &env_refs(&env)).expect_code(2);
        assert!(listener.seen().is_empty(), "{realm}: {:?}", listener.seen());
        assert!(!run.stderr.contains(PASSWORD), "{}", run.stderr);
        assert_eq!(context.read("pins.toml"), before);
        let listening = format!(":{port}");
        refusals += &naming(
            &run.stderr,
            &[
                (registry.address(), "<registry>"),
                (&listening, ":<listener>"),
            ],
        );
    }
    forge_snapshot!("realm_refused", refusals, "");
}

/// Item 3: `FORGE_REGISTRY_USER` / `FORGE_REGISTRY_PASSWORD` go to the registry the recipe
/// publishes to, or to the one host `FORGE_REGISTRY_HOST` names, and to no other.
#[test]
fn environment_credentials_go_to_one_registry() {
    let wanted = basic(USER, PASSWORD);
    let registry = Fake::start("127.0.0.1", move |seen| {
        if seen.authorization.as_deref() != Some(wanted.as_str()) {
            return challenge_basic();
        }
        if seen.target.contains("/tags/list") {
            return tag_list(&["2026-07-01-v0.24.0"]);
        }
        manifest()
    });
    let address = registry.address().to_owned();
    let password = [
        ("FORGE_REGISTRY_USER", USER),
        ("FORGE_REGISTRY_PASSWORD", PASSWORD),
    ];
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut env = password.to_vec();
        env.extend_from_slice(extra);
        env
    };

    // The recipe publishes to ghcr.io and names no other host: the base's registry gets nothing.
    let (context, before) = recipe_with_base(&address);
    let run = forge(&context, &["pin", "bump", "base"], &with(&[])).expect_code(2);
    assert_no_secret(&registry.seen(), &[&basic(USER, PASSWORD)]);
    let servers = [(address.as_str(), "<registry>")];
    forge_snapshot!(naming(&run.stderr, &servers), context.path(), @"
    error: cannot look up the base image <registry>/aeon-7/base:2026-07-01-v0.24.0; pins.toml was not changed
    caused by: the registry refused access to http://<registry>/v2/aeon-7/base/tags/list?n=1000 (HTTP 401): it wants credentials, and none are configured for <registry>; FORGE_REGISTRY_USER and FORGE_REGISTRY_PASSWORD are kept for ghcr.io
    hint: set FORGE_REGISTRY_HOST=<registry> to send FORGE_REGISTRY_USER and FORGE_REGISTRY_PASSWORD to this registry instead, or log in with `docker login <registry>`
    ");
    assert_eq!(context.read("pins.toml"), before);

    // FORGE_REGISTRY_HOST names another host: still nothing.
    let run = forge(
        &context,
        &["pin", "bump", "base"],
        &with(&[("FORGE_REGISTRY_HOST", "ghcr.io")]),
    )
    .expect_code(2);
    assert_no_secret(&registry.seen(), &[&basic(USER, PASSWORD)]);
    forge_snapshot!(naming(&run.stderr, &servers), context.path(), @"
    error: cannot look up the base image <registry>/aeon-7/base:2026-07-01-v0.24.0; pins.toml was not changed
    caused by: the registry refused access to http://<registry>/v2/aeon-7/base/tags/list?n=1000 (HTTP 401): it wants credentials, and none are configured for <registry>; FORGE_REGISTRY_USER and FORGE_REGISTRY_PASSWORD are kept for ghcr.io
    hint: set FORGE_REGISTRY_HOST=<registry> to send FORGE_REGISTRY_USER and FORGE_REGISTRY_PASSWORD to this registry instead, or log in with `docker login <registry>`
    ");

    // FORGE_REGISTRY_HOST names the base's registry: it gets them.
    let mut env = password.to_vec();
    env.push(("FORGE_REGISTRY_HOST", address.as_str()));
    forge(&context, &["pin", "bump", "base"], &env).expect_code(0);
    assert_contains(
        &context.read("pins.toml"),
        &format!("digest = \"{DIGEST}\""),
    );

    // The recipe publishes to the base's registry: it gets them without being named.
    let (context, _) = recipe_with_base(&address);
    context.edit(
        "pins.toml",
        "repository = \"ghcr.io/aeon-7/vllm-ultimate-deepseek-v4-gb10\"",
        &format!("repository = \"{address}/aeon-7/vllm-ultimate-deepseek-v4-gb10\""),
    );
    forge(&context, &["pin", "bump", "base"], &with(&[])).expect_code(0);
    assert_contains(
        &context.read("pins.toml"),
        &format!("digest = \"{DIGEST}\""),
    );
}

/// Item 4: credentials in a git or index URL never reach the terminal or a JSON document; the
/// URL is shown as `http://***@host/...`, the host still visible.
#[test]
fn credentials_in_git_and_index_urls_are_never_printed() {
    const GIT_SECRET: &str = "s3cret-in-the-git-url";
    const INDEX_SECRET: &str = "s3cret-in-the-index-url";
    let port = free_port();
    let git_url = format!("http://robot:{GIT_SECRET}@127.0.0.1:{port}/deepgemm.git");
    let context = TestContext::default_recipe_on_indexes();
    context.edit(
        "pins.toml",
        "url = \"https://github.com/deepseek-ai/DeepGEMM.git\"",
        &format!("url = \"{git_url}\""),
    );
    let down = format!("127.0.0.1:{port}");
    let mut printed = String::new();
    for args in [
        &["pin", "bump", "deepgemm"][..],
        &["--json", "pin", "bump", "deepgemm"],
        &["-v", "pin", "bump", "deepgemm"],
    ] {
        let run = forge(&context, args, &[]).expect_code(2);
        let output = format!("{}{}", run.stdout, run.stderr);
        assert!(!output.contains(GIT_SECRET), "{args:?}:\n{output}");
        printed += &naming(&output, &[(&down, "<down>")]);
    }

    // An index URL with a user and password, to an index that is down and to one that is up.
    let index_url = format!("http://robot:{INDEX_SECRET}@{down}/simple");
    for args in [
        &["pin", "bump", "flashinfer", "--index-url", &index_url][..],
        &[
            "--json",
            "pin",
            "bump",
            "flashinfer",
            "--index-url",
            &index_url,
        ],
    ] {
        let run = forge(&context, args, &[]).expect_code(2);
        let output = format!("{}{}", run.stdout, run.stderr);
        assert!(!output.contains(INDEX_SECRET), "{args:?}:\n{output}");
        printed += &naming(&output, &[(&down, "<down>")]);
    }
    forge_snapshot!("credentials_not_printed", printed, context.path());
    let index = IndexServer::start();
    let up = index
        .url()
        .replacen("http://", &format!("http://robot:{INDEX_SECRET}@"), 1);
    for args in [
        &["-v", "pin", "outdated"][..],
        &["--json", "-v", "pin", "outdated"],
    ] {
        let run = forge(&context, args, &[("FORGE_INDEX_URL", &up)]);
        let output = format!("{}{}", run.stdout, run.stderr);
        assert!(!output.contains(INDEX_SECRET), "{args:?}:\n{output}");
        assert!(!output.contains(GIT_SECRET), "{args:?}:\n{output}");
    }
}

/// A tester's commands on an image named by reference (`verify-digest REF`, `pull REF`,
/// `report REF`), run in a recipe folder with `FORGE_REGISTRY_USER` and
/// `FORGE_REGISTRY_PASSWORD` set, never send them to the reference's registry because it is
/// named: only to the recipe's registry or `FORGE_REGISTRY_HOST`'s.
#[test]
fn a_reference_to_another_registry_gets_no_environment_credentials() {
    let wanted = basic(USER, PASSWORD);
    let elsewhere = Fake::start("127.0.0.1", move |seen| {
        if seen.authorization.as_deref() == Some(wanted.as_str()) {
            return Answer::status(404);
        }
        challenge_basic()
    });
    let address = elsewhere.address().to_owned();
    let reference = format!("{address}/someone/else:latest");
    let context = TestContext::default_recipe();
    let password = [
        ("FORGE_REGISTRY_USER", USER),
        ("FORGE_REGISTRY_PASSWORD", PASSWORD),
    ];
    let mut refusals = String::new();
    for command in [
        vec!["verify-digest", reference.as_str()],
        vec!["pull", reference.as_str()],
        vec!["report", reference.as_str()],
    ] {
        let run = forge(&context, &command, &password);
        assert_ne!(run.code, 0, "{command:?}");
        assert_no_secret(&elsewhere.seen(), &[&basic(USER, PASSWORD)]);
        refusals += &naming(&run.stderr, &[(address.as_str(), "<elsewhere>")]);
    }
    forge_snapshot!("reference_elsewhere_refused", refusals, context.path());
    // Named by FORGE_REGISTRY_HOST, that registry gets them.
    let mut env = password.to_vec();
    env.push(("FORGE_REGISTRY_HOST", address.as_str()));
    forge(&context, &["verify-digest", &reference], &env);
    assert!(
        elsewhere
            .seen()
            .iter()
            .any(|line| line.ends_with(&basic(USER, PASSWORD))),
        "{:?}",
        elsewhere.seen()
    );
}
