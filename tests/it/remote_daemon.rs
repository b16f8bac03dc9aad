//! Daemons reached as the docker CLI reaches remote ones, `forge build` through `DOCKER_HOST`
//! and `forge verify-digest --host`: `tcp://` behind a real TLS terminator (stunnel) that
//! demands a client certificate, in front of the tests' daemon socket, with a CA and
//! certificates made by `openssl` on the spot; and `ssh://` through a real `sshd` on loopback
//! that runs `docker system dial-stdio` against the same daemon.
//!
//! The tools come from ci/test; a missing one fails the test, saying so.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::images::{Example, built, daemon_host, docker_ready, reported_id};
use crate::support::snapshot::forge_snapshot;
use crate::support::ssh::{SshServer, current_user};
use crate::support::tls::{Certificates, TlsTerminator};
use crate::support::{Run, assert_contains, env_refs, free_port};

/// `text` with the system's words for why the connection to `<daemon>` broke as `<reason>`.
fn reason_cut(text: &str) -> String {
    let reason = regex::Regex::new(r"(?m)(the Docker daemon at <daemon>): .*$").unwrap();
    reason.replace_all(text, "$1: <reason>").into_owned()
}

/// `text` with each of `names` (a daemon's address, a folder) as its placeholder.
fn named(text: &str, names: &[(&str, &str)]) -> String {
    names
        .iter()
        .fold(text.to_owned(), |text, (name, to)| text.replace(name, to))
}

/// The unix socket of the daemon the tests build on.
fn daemon_socket() -> PathBuf {
    let host = daemon_host();
    let socket = host
        .strip_prefix("unix://")
        .expect("the tests' daemon listens on a unix socket");
    PathBuf::from(socket)
}

/// `forge --json verify-digest args...` in the example.
fn verify(example: &Example, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut all = vec!["--json", "verify-digest"];
    all.extend_from_slice(args);
    example.context.forge_with(&all, env)
}

/// `verify --host HOST` with `env` passes and finds the example's image `id` under its moving
/// tag there.
#[track_caller]
fn assert_node_holds(example: &Example, host: &str, env: &[(&str, &str)], id: &str) {
    let json = verify(example, &["--host", host], env)
        .expect_code(0)
        .json();
    assert_eq!(json["ok"], true, "{json:#}");
    assert_eq!(latest_row(&json, host, &example.repository)["actual"], id);
}

/// The `tag` row of `node` for `repository:latest`.
#[track_caller]
fn latest_row<'a>(json: &'a Value, node: &str, repository: &str) -> &'a Value {
    let subject = format!("{node}: {repository}:latest");
    json["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|check| {
            check["name"] == "tag" && crate::support::verify::full_subject(check) == subject
        })
        .unwrap_or_else(|| panic!("no tag row for {subject} in {json:#}"))
}

/// A TLS terminator in front of the tests' daemon socket that lets only clients whose
/// certificate the CA signed through, as `dockerd --tlsverify` does.
fn in_front_of_the_daemon(certificates: &Certificates) -> TlsTerminator {
    TlsTerminator::start(certificates, &daemon_socket().display().to_string(), true)
}

/// The environment that turns TLS on with the certificates in `folder`.
fn tls_env(folder: &Path) -> [(&'static str, String); 2] {
    [
        ("DOCKER_TLS_VERIFY", "1".to_owned()),
        ("DOCKER_CERT_PATH", folder.display().to_string()),
    ]
}

/// `verify --host HOST` over TLS with the certificates in `folder`, refused with exit 2.
fn refused_over_tls(example: &Example, host: &str, folder: &Path) -> Run {
    verify(example, &["--host", host], &env_refs(&tls_env(folder))).expect_code(2)
}

/// `refused_over_tls`, the TLS handshake having failed for `reason`.
#[track_caller]
fn assert_handshake_fails(example: &Example, host: &str, folder: &Path, reason: &str) -> Run {
    let run = refused_over_tls(example, host, folder);
    assert_contains(
        &run.stderr,
        &format!("the TLS handshake with the Docker daemon at {host} failed"),
    );
    assert_contains(&run.stderr, reason);
    run
}

#[test]
fn a_tls_daemon_is_verified_with_the_client_certificate_and_refused_without_it() {
    let Some((example, id)) = built("remote-tls") else {
        return;
    };
    let certificates = Certificates::make();
    let terminator = in_front_of_the_daemon(&certificates);
    let host = format!("tcp://127.0.0.1:{}", terminator.port());

    let good = certificates.client_folder("good", "ca.pem", Some("client.pem"), "client.key");
    assert_node_holds(&example, &host, &env_refs(&tls_env(&good)), &id);

    // No client certificate: refused before any connection, naming the file.
    let without = certificates.client_folder("without", "ca.pem", None, "client.key");
    let run = refused_over_tls(&example, &host, &without);
    let names = [
        (host.as_str(), "<daemon>"),
        (without.to_str().unwrap(), "<folder>"),
    ];
    forge_snapshot!(named(&run.stderr, &names), example.context.path(), @"
        Rendered Dockerfile sha256:<digest>
         Patched patches/app onto overlays/app (scratch repository) (2 applied, 0 already there)
       Assembled context sha256:<digest> (6 entries, 6.5 KiB)
            Lane forge-test/remote-tls-<pid> is baseline
    CHECK  SUBJECT  EXPECTED  ACTUAL  OK
    input  pins.toml  sha256:<short>  =  ok
    input  templates  sha256:<short>  =  ok
    input  patches  sha256:<short>  =  ok
    input  overlays  sha256:<short>  =  ok
    input  Dockerfile  sha256:<short>  =  ok
    input  context  sha256:<short>  =  ok
    error: could not verify node <daemon>
    caused by: cannot connect to the Docker daemon at <daemon> over TLS: <folder>/cert.pem does not exist
    hint: DOCKER_TLS_VERIFY is set, so forge reads ca.pem (the CA that signed the daemon's certificate), cert.pem and key.pem (your client certificate and its key) from <folder>; put them there or point DOCKER_CERT_PATH at the folder that holds them, or unset DOCKER_TLS_VERIFY for a daemon without TLS
    ");

    // A CA that did not sign the daemon's certificate: forge refuses the daemon.
    let wrong_ca =
        certificates.client_folder("wrong-ca", "other-ca.pem", Some("client.pem"), "client.key");
    let run = refused_over_tls(&example, &host, &wrong_ca);
    let names = [
        (host.as_str(), "<daemon>"),
        (wrong_ca.to_str().unwrap(), "<folder>"),
    ];
    forge_snapshot!(named(&run.stderr, &names), example.context.path(), @"
        Rendered Dockerfile sha256:<digest>
         Patched patches/app onto overlays/app (scratch repository) (2 applied, 0 already there)
       Assembled context sha256:<digest> (6 entries, 6.5 KiB)
            Lane forge-test/remote-tls-<pid> is baseline
    CHECK  SUBJECT  EXPECTED  ACTUAL  OK
    input  pins.toml  sha256:<short>  =  ok
    input  templates  sha256:<short>  =  ok
    input  patches  sha256:<short>  =  ok
    input  overlays  sha256:<short>  =  ok
    input  Dockerfile  sha256:<short>  =  ok
    input  context  sha256:<short>  =  ok
    error: could not verify node <daemon>
    caused by: the TLS handshake with the Docker daemon at <daemon> failed: invalid peer certificate: UnknownIssuer
    hint: check the files in <folder>: ca.pem must be the CA that signed the daemon's certificate (whose names must include the host forge connects to), and cert.pem a client certificate signed by a CA the daemon trusts (its --tlscacert)
    ");

    // A client certificate from a CA the terminator does not trust: the daemon refuses forge.
    let stranger =
        certificates.client_folder("stranger", "ca.pem", Some("stranger.pem"), "stranger.key");
    assert_handshake_fails(&example, &host, &stranger, "alert");

    // The same port without TLS is no daemon at all.
    let run = verify(&example, &["--host", &host], &[]).expect_code(2);
    let names = [(host.as_str(), "<daemon>")];
    let report = reason_cut(&named(&run.stderr, &names));
    forge_snapshot!(report, example.context.path(), @"
        Rendered Dockerfile sha256:<digest>
         Patched patches/app onto overlays/app (scratch repository) (2 applied, 0 already there)
       Assembled context sha256:<digest> (6 entries, 6.5 KiB)
            Lane forge-test/remote-tls-<pid> is baseline
    CHECK  SUBJECT  EXPECTED  ACTUAL  OK
    input  pins.toml  sha256:<short>  =  ok
    input  templates  sha256:<short>  =  ok
    input  patches  sha256:<short>  =  ok
    input  overlays  sha256:<short>  =  ok
    input  Dockerfile  sha256:<short>  =  ok
    input  context  sha256:<short>  =  ok
    error: could not verify node <daemon>
    caused by: cannot reach the Docker daemon at <daemon>: <reason>
    hint: start the Docker daemon or point DOCKER_HOST at a running one (tried <daemon>); `forge build --dry-run` needs no daemon
    ");
}

#[test]
fn forge_build_reaches_a_tls_daemon_named_by_docker_host() {
    if !docker_ready() {
        return;
    }
    let certificates = Certificates::make();
    let terminator = in_front_of_the_daemon(&certificates);
    let host = format!("tcp://127.0.0.1:{}", terminator.port());
    let good = certificates.client_folder("good", "ca.pem", Some("client.pem"), "client.key");
    let example = Example::new("remote-tls-build");

    let tls = tls_env(&good);
    let mut env = env_refs(&tls);
    env.push(("DOCKER_HOST", &host));
    let run = example.build_with(&[], &env).expect_code(0);
    example.assert_tags_on(&reported_id(&run.json()));

    // Without the TLS settings the same DOCKER_HOST is not a daemon forge can talk to.
    let plain = example
        .build_with(&[], &[("DOCKER_HOST", &host)])
        .expect_code(2);
    let names = [(host.as_str(), "<daemon>")];
    let report = reason_cut(&named(&plain.stderr, &names));
    forge_snapshot!(report, example.context.path(), @"
    error: cannot reach the Docker daemon at <daemon>: <reason>
    hint: start the Docker daemon or point DOCKER_HOST at a running one (tried <daemon>); `forge build --dry-run` needs no daemon
    ");
}

#[test]
fn an_ssh_daemon_is_verified_through_the_system_ssh_and_a_dead_one_is_named() {
    let Some((example, id)) = built("remote-ssh") else {
        return;
    };
    let mut server = SshServer::start();
    let host = server.host();
    let path = server.path();
    let env = [("PATH", path.as_str())];

    assert_node_holds(&example, &host, &env, &id);

    // A port nothing listens on: ssh's own words, and the node named.
    let closed = free_port();
    let wrong = format!("ssh://{}@127.0.0.1:{closed}", current_user());
    let run = verify(&example, &["--host", &wrong], &env).expect_code(2);
    let closed = format!("port {closed}");
    let names = [
        (wrong.as_str(), "<node>"),
        (closed.as_str(), "port <closed>"),
    ];
    forge_snapshot!(named(&run.stderr, &names), example.context.path(), @"
        Rendered Dockerfile sha256:<digest>
         Patched patches/app onto overlays/app (scratch repository) (2 applied, 0 already there)
       Assembled context sha256:<digest> (6 entries, 6.5 KiB)
            Lane forge-test/remote-ssh-<pid> is baseline
    CHECK  SUBJECT  EXPECTED  ACTUAL  OK
    input  pins.toml  sha256:<short>  =  ok
    input  templates  sha256:<short>  =  ok
    input  patches  sha256:<short>  =  ok
    input  overlays  sha256:<short>  =  ok
    input  Dockerfile  sha256:<short>  =  ok
    input  context  sha256:<short>  =  ok
    error: could not verify node <node>
    caused by: cannot reach the Docker daemon at <node> over ssh: ssh: connect to host 127.0.0.1 port <closed>: Connection refused
    hint: forge runs `ssh -o BatchMode=yes [-l USER] [-p PORT] HOST docker system dial-stdio`: check that this works from this shell without a prompt (a key or an ssh agent, the host key already known) and that the remote user can run docker
    ");

    // The server gone: the same node is named as unreachable.
    server.stop();
    let run = verify(&example, &["--host", &host], &env).expect_code(2);
    let port = format!("port {}", server.port);
    let names = [(host.as_str(), "<node>"), (port.as_str(), "port <server>")];
    forge_snapshot!(named(&run.stderr, &names), example.context.path(), @"
        Rendered Dockerfile sha256:<digest>
         Patched patches/app onto overlays/app (scratch repository) (2 applied, 0 already there)
       Assembled context sha256:<digest> (6 entries, 6.5 KiB)
            Lane forge-test/remote-ssh-<pid> is baseline
    CHECK  SUBJECT  EXPECTED  ACTUAL  OK
    input  pins.toml  sha256:<short>  =  ok
    input  templates  sha256:<short>  =  ok
    input  patches  sha256:<short>  =  ok
    input  overlays  sha256:<short>  =  ok
    input  Dockerfile  sha256:<short>  =  ok
    input  context  sha256:<short>  =  ok
    error: could not verify node <node>
    caused by: cannot reach the Docker daemon at <node> over ssh: ssh: connect to host 127.0.0.1 port <server>: Connection refused
    hint: forge runs `ssh -o BatchMode=yes [-l USER] [-p PORT] HOST docker system dial-stdio`: check that this works from this shell without a prompt (a key or an ssh agent, the host key already known) and that the remote user can run docker
    ");
}

#[test]
fn forge_build_reaches_an_ssh_daemon_named_by_docker_host() {
    if !docker_ready() {
        return;
    }
    let server = SshServer::start();
    let host = server.host();
    let path = server.path();
    let example = Example::new("remote-ssh-build");

    let run = example
        .build_with(&[], &[("DOCKER_HOST", &host), ("PATH", &path)])
        .expect_code(0);
    example.assert_tags_on(&reported_id(&run.json()));
}

/// A docker configuration folder whose context `name` points at `host`, and that context in use
/// when `current`.
fn docker_config_with_context(name: &str, host: &str, current: bool) -> tempfile::TempDir {
    use sha2::Digest as _;
    let config = tempfile::tempdir().unwrap();
    let id = hex::encode(sha2::Sha256::digest(name.as_bytes()));
    let meta = config.path().join("contexts/meta").join(id);
    std::fs::create_dir_all(&meta).unwrap();
    std::fs::write(
        meta.join("meta.json"),
        serde_json::json!({
            "Name": name,
            "Metadata": {},
            "Endpoints": {"docker": {"Host": host, "SkipTLSVerify": false}},
        })
        .to_string(),
    )
    .unwrap();
    if current {
        std::fs::write(
            config.path().join("config.json"),
            serde_json::json!({"currentContext": name}).to_string(),
        )
        .unwrap();
    }
    config
}

/// The daemon is chosen as the docker CLI chooses it: DOCKER_HOST, else DOCKER_CONTEXT, else
/// config.json's currentContext, else the default socket; `default` is the default socket.
#[test]
fn the_daemon_is_the_one_the_docker_context_in_use_names() {
    if !crate::support::images::docker_ready() {
        return;
    }
    let example = crate::support::images::Example::new("docker-context");
    // A context that leads nowhere: forge must try it, not the default socket.
    let nowhere = example.context.path().join("nowhere.sock");
    let nowhere_host = format!("unix://{}", nowhere.display());
    let broken = docker_config_with_context("elsewhere", &nowhere_host, true);
    let config = broken.path().to_str().unwrap();
    let run = example.build_with(&[], &[("DOCKER_CONFIG", config), ("DOCKER_HOST", "")]);
    let run = run.expect_code(2);
    forge_snapshot!(run.stderr, example.context.path(), @"
    error: cannot reach the Docker daemon at unix://<recipe>/nowhere.sock: No such file or directory (os error 2)
    hint: start the Docker daemon or point DOCKER_HOST at a running one (tried unix://<recipe>/nowhere.sock); `forge build --dry-run` needs no daemon
    ");
    // DOCKER_CONTEXT wins over config.json, and `default` is the default socket.
    example
        .build_with(
            &[],
            &[
                ("DOCKER_CONFIG", config),
                ("DOCKER_HOST", ""),
                ("DOCKER_CONTEXT", "default"),
            ],
        )
        .expect_code(0);
    // DOCKER_HOST wins over both.
    example
        .build_with(
            &[],
            &[
                ("DOCKER_CONFIG", config),
                ("DOCKER_HOST", "unix:///var/run/docker.sock"),
                ("DOCKER_CONTEXT", "elsewhere"),
            ],
        )
        .expect_code(0);
    // A context whose endpoint is the daemon (through a link to its socket) is used.
    let link = example.context.path().join("linked.sock");
    std::os::unix::fs::symlink("/var/run/docker.sock", &link).unwrap();
    let working =
        docker_config_with_context("linked", &format!("unix://{}", link.display()), false);
    example
        .build_with(
            &[],
            &[
                ("DOCKER_CONFIG", working.path().to_str().unwrap()),
                ("DOCKER_HOST", ""),
                ("DOCKER_CONTEXT", "linked"),
            ],
        )
        .expect_code(0);
    // A context that is not in the store is named, with where its name came from.
    let run = example
        .build_with(
            &[],
            &[
                ("DOCKER_CONFIG", working.path().to_str().unwrap()),
                ("DOCKER_HOST", ""),
                ("DOCKER_CONTEXT", "gone"),
            ],
        )
        .expect_code(2);
    let names = [(working.path().to_str().unwrap(), "<config>")];
    forge_snapshot!(named(&run.stderr, &names), example.context.path(), @r#"
    error: docker context "gone" (from DOCKER_CONTEXT) does not exist in <config>/contexts
    hint: `docker context ls` lists the contexts; `docker context use default` (or unsetting DOCKER_CONTEXT) selects the default socket
    "#);
}
