//! Hostile and broken servers on loopback, written here as small servers: forge must end with
//! an error that names the server and what it did, within bounded time and memory, and change
//! nothing.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::snapshot::forge_snapshot;
use crate::support::{LoopbackServer, Run, TestContext, assert_contains};

/// `text` with each of `names` (a server's address, an image id) as its placeholder.
fn named(text: &str, names: &[(&str, &str)]) -> String {
    names
        .iter()
        .fold(text.to_owned(), |text, (name, to)| text.replace(name, to))
}

/// Reads one HTTP request's head from `stream`; returns its request line.
fn request_line(stream: &TcpStream) -> String {
    let mut reader = BufReader::new(stream.try_clone().expect("clone the stream"));
    let mut line = String::new();
    let _ = reader.read_line(&mut line);
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
            break;
        }
    }
    line.trim().to_owned()
}

/// The headers of a git ref listing, chunked so that the body can go on as long as it likes.
const LISTING_HEAD: &str = "HTTP/1.1 200 OK\r\nContent-Type: application/x-git-upload-pack-advertisement\r\nTransfer-Encoding: chunked\r\n\r\n";

fn chunk(stream: &mut TcpStream, bytes: &[u8]) -> std::io::Result<()> {
    write!(stream, "{:x}\r\n", bytes.len())?;
    stream.write_all(bytes)?;
    stream.write_all(b"\r\n")
}

/// `forge pin bump deepgemm` on the default recipe with DeepGEMM's remote at `url`, the git
/// cache in the recipe's temporary folder; with how long it took.
fn bump_from(url: &str, env: &[(&str, &str)]) -> (Run, Duration, String, TestContext) {
    let context = TestContext::default_recipe();
    context.edit(
        "pins.toml",
        "url = \"https://github.com/deepseek-ai/DeepGEMM.git\"",
        &format!("url = \"{url}\""),
    );
    let before = context.read("pins.toml");
    let home = context.path().join(".home");
    std::fs::create_dir_all(&home).unwrap();
    let started = Instant::now();
    let mut command = Command::new(env!("CARGO_BIN_EXE_forge"));
    command
        .args([
            "-C",
            context.path().to_str().unwrap(),
            "pin",
            "bump",
            "deepgemm",
        ])
        .env("HOME", &home)
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100");
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.output().expect("forge runs");
    let run = Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    (run, started.elapsed(), before, context)
}

/// A git server that sends a ref listing's headers and then nothing: forge gives up after the
/// idle time, naming the URL.
#[test]
fn a_git_server_that_stalls_after_its_headers_ends_at_the_idle_time() {
    let server = LoopbackServer::start(|mut stream, _| {
        request_line(&stream);
        let _ = stream.write_all(LISTING_HEAD.as_bytes());
        std::thread::sleep(Duration::from_secs(4));
    });
    let url = format!("http://{}/stall.git", server.address());
    let (run, took, before, context) = bump_from(&url, &[("FORGE_IDLE_TIMEOUT", "1")]);
    let run = run.expect_code(2);
    let report = named(&run.stderr, &[(server.address(), "<server>")]);
    forge_snapshot!(report, context.path(), @"
    error: cannot look up deepgemm on http://<server>/stall.git; pins.toml was not changed
    caused by: cannot reach the git remote http://<server>/stall.git: http://<server>/stall.git/info/refs?service=git-upload-pack sent nothing for 1 s
    hint: check the pin's `url` and the network (`git ls-remote URL` shows what forge sees)
    ");
    assert!(took < Duration::from_secs(15), "took {took:?}");
    assert_eq!(context.read("pins.toml"), before);
}

/// A git server whose ref listing never ends: forge stops at its size cap instead of growing.
#[test]
fn an_endless_ref_listing_ends_at_the_size_cap() {
    let server = LoopbackServer::start(|mut stream, _| {
        request_line(&stream);
        if stream.write_all(LISTING_HEAD.as_bytes()).is_err() {
            return;
        }
        let line = format!("{:04x}{} refs/tags/t\n", 4 + 40 + 13, "a".repeat(40));
        let block = line.repeat(1000);
        while chunk(&mut stream, block.as_bytes()).is_ok() {}
    });
    let url = format!("http://{}/endless.git", server.address());
    let (run, took, before, context) = bump_from(&url, &[]);
    let run = run.expect_code(2);
    assert_contains(
        &run.stderr,
        &format!("{url}/info/refs?service=git-upload-pack sent more than 67108864 bytes"),
    );
    let report = named(&run.stderr, &[(server.address(), "<server>")]);
    forge_snapshot!(report, context.path(), @"
    error: cannot look up deepgemm on http://<server>/endless.git; pins.toml was not changed
    caused by: cannot reach the git remote http://<server>/endless.git: http://<server>/endless.git/info/refs?service=git-upload-pack sent more than <short> bytes
    hint: check the pin's `url` and the network (`git ls-remote URL` shows what forge sees)
    ");
    assert!(took < Duration::from_secs(60), "took {took:?}");
    assert_eq!(context.read("pins.toml"), before);
}

/// A malformed pkt-line is named as such, not as whatever libgit2 would make of it.
#[test]
fn a_malformed_pkt_line_is_named() {
    let server = LoopbackServer::start(|mut stream, _| {
        request_line(&stream);
        let _ = stream.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/x-git-upload-pack-advertisement\r\nContent-Length: 4\r\n\r\n0003",
        );
    });
    let url = format!("http://{}/broken.git", server.address());
    let (run, _, before, context) = bump_from(&url, &[]);
    let run = run.expect_code(2);
    let report = named(&run.stderr, &[(server.address(), "<server>")]);
    forge_snapshot!(report, context.path(), @"
    error: cannot look up deepgemm on http://<server>/broken.git; pins.toml was not changed
    caused by: cannot reach the git remote http://<server>/broken.git: http://<server>/broken.git/info/refs?service=git-upload-pack is not a git smart HTTP reply: pkt-line length 0003 at byte 0 is shorter than its own length field
    hint: check the pin's `url` and the network (`git ls-remote URL` shows what forge sees)
    ");
    assert_eq!(context.read("pins.toml"), before);
}

/// A registry whose answers never end: forge stops at its size cap and says so, rather than
/// calling the registry unreachable.
#[test]
fn an_endless_registry_answer_is_named_as_too_large() {
    let server = LoopbackServer::start(|mut stream, _| {
        let line = request_line(&stream);
        if line.starts_with("GET /v2/ ") {
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
            );
            return;
        }
        let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
        if stream.write_all(head.as_bytes()).is_err() {
            return;
        }
        let _ = chunk(&mut stream, b"{\"schemaVersion\":2,\"layers\":[");
        let block = "\"t\",".repeat(16 * 1024);
        while chunk(&mut stream, block.as_bytes()).is_ok() {}
    });
    let context = TestContext::default_recipe();
    context.edit(
        "pins.toml",
        "image = \"ghcr.io/aeon-7/aeon-vllm-ultimate:2026-07-01-v0.24.0\"",
        &format!("image = \"{}/base:2026-07-01-v0.24.0\"", server.address()),
    );
    let before = context.read("pins.toml");
    let started = Instant::now();
    let run = crate::support::forge(&context, &["pin", "bump", "base"], &[]).expect_code(2);
    assert_contains(
        &run.stderr,
        &format!(
            "caused by: http://{}/v2/base/manifests/2026-07-01-v0.24.0 sent more than 67108864 bytes",
            server.address()
        ),
    );
    let report = named(&run.stderr, &[(server.address(), "<server>")]);
    forge_snapshot!(report, context.path(), @"
    error: cannot look up the base image <server>/base:2026-07-01-v0.24.0; pins.toml was not changed
    caused by: http://<server>/v2/base/manifests/2026-07-01-v0.24.0 sent more than <short> bytes
    hint: the server sends far more than such an answer holds; check the URL
    ");
    assert!(started.elapsed() < Duration::from_secs(60));
    assert_eq!(context.read("pins.toml"), before);
}

/// A daemon that answers, but an image inspect in a shape forge does not know (a containerd
/// image store's answer for an image pulled by digest: no architecture, a `RootFS` without its
/// `Type`): forge names the answer as unreadable, with the endpoint and the daemon's version,
/// not as a daemon it cannot reach (exit 2).
#[test]
fn a_daemon_answer_forge_cannot_read_is_named_as_that() {
    let daemon = LoopbackServer::start(|stream, _| {
        let mut reader = BufReader::new(stream.try_clone().expect("clone the stream"));
        let mut stream = stream;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
                    break;
                }
            }
            let path = line
                .split_whitespace()
                .nth(1)
                .unwrap_or_default()
                .to_owned();
            let body = if path.ends_with("/_ping") {
                "OK".to_owned()
            } else if path.ends_with("/version") {
                r#"{"Version":"28.5.2","ApiVersion":"1.51","MinAPIVersion":"1.24","Os":"linux","Arch":"amd64"}"#.to_owned()
            } else if path.contains("/images/") && path.ends_with("/json") {
                r#"{"Id":"sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","Architecture":"","RootFS":{}}"#.to_owned()
            } else {
                let _ = write!(
                    stream,
                    "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 21\r\n\r\n{{\"message\":\"no such\"}}"
                );
                continue;
            };
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nApi-Version: 1.51\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let context = TestContext::default_recipe();
    context.write(
        "forge.lock",
        &crate::support::default_recipe_lock("digest = \"sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\"\n"),
    );
    let host = format!("tcp://{}", daemon.address());
    let run = context
        .forge_with(&["verify-digest"], &[("DOCKER_HOST", &host)])
        .expect_code(2);
    let report = named(&run.stderr, &[(&host, "<daemon>")]);
    forge_snapshot!(report, context.path(), @"
        Rendered Dockerfile sha256:<digest>
    warning: pin `flashinfer`: no sha256 recorded for flashinfer-python, flashinfer-cubin, flashinfer-jit-cache, so the Dockerfile installs them unchecked (`forge pin bump flashinfer --to 0.6.14` downloads and records them)
         Patched patches/pr4 onto overlays/vllm (scratch repository) (2 applied, 0 already there)
       Assembled context sha256:<digest> (11 entries, 20.5 KiB)
            Lane ghcr.io/aeon-7/vllm-ultimate-deepseek-v4-gb10 is baseline
        Checking tags on <daemon>
    error: could not verify node <daemon>
    caused by: the Docker daemon at <daemon> (Docker 28.5.2) answered the inspect of ghcr.io/aeon-7/vllm-ultimate-deepseek-v4-gb10:experimental-pr4 (GET /images/ghcr.io/aeon-7/vllm-ultimate-deepseek-v4-gb10:experimental-pr4/json) with what forge cannot read: missing field `Type` at line 1 column 109
    hint: the daemon is reachable; its answer has a shape forge does not know, which an engine version or image store forge was not tested with may give: report it with the daemon's version (`docker version`)
    ");
}

/// A registry whose tag list fills every page (8 MiB here, each under the body cap) and always
/// links a next one: forge stops once the pages together pass one body's cap and says so, its
/// memory bounded, pins.toml unchanged.
#[test]
fn an_endless_tag_list_ends_at_the_size_cap_over_all_pages() {
    let server = LoopbackServer::start(|mut stream, _| {
        let line = request_line(&stream);
        if line.starts_with("GET /v2/ ") {
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
            );
            return;
        }
        let tags = vec!["\"2026-01-01-v0.1.0\""; 8 * 1024 * 1024 / 21].join(",");
        let body = format!("{{\"name\":\"base\",\"tags\":[{tags}]}}");
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nLink: </v2/base/tags/list?n=1000&last=x>; rel=\"next\"\r\n\r\n",
            body.len()
        );
        let _ = stream.write_all(head.as_bytes());
        let _ = stream.write_all(body.as_bytes());
    });
    let context = TestContext::default_recipe();
    context.edit(
        "pins.toml",
        "image = \"ghcr.io/aeon-7/aeon-vllm-ultimate:2026-07-01-v0.24.0\"\n",
        &format!(
            "image = \"{}/base:2026-07-01-v0.24.0\"\ntags = \"????-??-??-v*\"\n",
            server.address()
        ),
    );
    let before = context.read("pins.toml");
    let run = context
        .forge_bounded(&["pin", "bump", "base"], Duration::from_secs(120))
        .expect("pin bump ends");
    assert_eq!(run.code, 2, "{}", run.stderr);
    let report = named(&run.stderr, &[(server.address(), "<server>")]);
    forge_snapshot!(report, context.path(), @"
    error: cannot look up the base image <server>/base:2026-07-01-v0.24.0; pins.toml was not changed
    caused by: the registry sent an answer forge cannot read for http://<server>/v2/base/tags/list?n=1000&last=x: its tag list runs past 64 MiB; forge reads no more of it
    hint: try again later; `skopeo inspect docker://IMAGE` shows what the registry serves
    ");
    assert_eq!(context.read("pins.toml"), before);
}

/// A wheel host that sends its status line and then trickles its headers, a byte every half
/// second: the idle time bounds the response's head too, so `pin bump` ends soon after
/// `FORGE_IDLE_TIMEOUT`, naming the URL, pins.toml unchanged.
#[test]
fn a_wheel_host_that_trickles_its_headers_ends_at_the_idle_time() {
    let server = LoopbackServer::start(|mut stream, _| {
        request_line(&stream);
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\n");
        for _ in 0..120 {
            if stream.write_all(b"X").is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    });
    let context = TestContext::default_recipe();
    context.edit(
        "pins.toml",
        "https://github.com/flashinfer-ai/flashinfer/releases/download/v{version}/{file}",
        &format!("http://{}/v{{version}}/{{file}}", server.address()),
    );
    let before = context.read("pins.toml");
    let started = Instant::now();
    let run = crate::support::forge(
        &context,
        &["pin", "bump", "flashinfer", "--to", "0.6.14"],
        &[("FORGE_IDLE_TIMEOUT", "2")],
    )
    .expect_code(2);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(20), "took {took:?}");
    let report = named(&run.stderr, &[(server.address(), "<server>")]);
    forge_snapshot!(report, context.path(), @"
         Hashing http://<server>/v0.6.14/flashinfer_python-0.6.14-py3-none-any.whl
    error: cannot download http://<server>/v0.6.14/flashinfer_python-0.6.14-py3-none-any.whl: it sent no whole answer head within 2 s (FORGE_IDLE_TIMEOUT)
    hint: check the network and the pin's `url`; pins.toml was not changed
    ");
    assert_eq!(context.read("pins.toml"), before);
}

/// A registry that answers, but slowly: every read of one command shares one deadline
/// (`FORGE_REGISTRY_DEADLINE`), so `verify-digest REF` ends soon after it, naming it, instead of
/// waiting out each request's own limit in turn.
#[test]
fn a_slow_registry_is_bounded_by_the_commands_deadline() {
    let server = LoopbackServer::start(|stream, _| {
        request_line(&stream);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(20));
            drop(stream);
        });
    });
    let folder = TestContext::empty();
    let reference = format!("{}/someone/slow:latest", server.address());
    let started = Instant::now();
    let run = folder
        .forge_with(
            &["verify-digest", &reference],
            &[("FORGE_REGISTRY_DEADLINE", "2")],
        )
        .expect_code(2);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(10), "took {took:?}");
    let report = named(&run.stderr, &[(server.address(), "<server>")]);
    forge_snapshot!(report, folder.path(), @"
          Asking <server>/someone/slow:latest of its registry
    error: cannot ask for <server>/someone/slow:latest
    caused by: cannot reach the registry at http://<server>/v2/someone/slow/manifests/latest: the registry's answers took more than 2 s in all (FORGE_REGISTRY_DEADLINE)
    hint: check the registry host and the network; a registry without TLS on another host needs --insecure-registry HOST
    ");
}

/// A daemon on loopback that answers as Docker 28.5 would: `_ping`, `version`, every image
/// inspect with the image the default recipe's forge.lock (`default_recipe_lock`) records, a
/// container's creation, start and removal. Every other request, and those `answer` takes
/// (it returns whether it did), go to `answer`; a request nobody takes gets a 404.
fn docker_like(answer: fn(&str, &mut TcpStream) -> bool) -> LoopbackServer {
    LoopbackServer::start(move |stream, requests| {
        let mut stream = stream;
        let line = request_line(&stream);
        requests.lock().unwrap().push(line.clone());
        let path = line
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_owned();
        if answer(&line, &mut stream) {
            return;
        }
        let image = format!(
            r#"{{"Id":"sha256:{}","Architecture":"amd64","Os":"linux","RepoTags":[],"RepoDigests":[],"RootFS":{{"Type":"layers","Layers":[]}}}}"#,
            "7".repeat(64)
        );
        let (status, body) = if path.ends_with("/_ping") {
            ("200 OK", "OK".to_owned())
        } else if path.ends_with("/version") {
            ("200 OK", r#"{"Version":"28.5.2","ApiVersion":"1.51","MinAPIVersion":"1.24","Os":"linux","Arch":"amd64"}"#.to_owned())
        } else if path.contains("/images/") && path.ends_with("/json") {
            ("200 OK", image)
        } else if path.contains("/containers/create") {
            ("201 Created", r#"{"Id":"c0ffee","Warnings":[]}"#.to_owned())
        } else if path.ends_with("/start") || line.starts_with("DELETE") {
            ("204 No Content", String::new())
        } else {
            ("404 Not Found", r#"{"message":"no such"}"#.to_owned())
        };
        let _ = write!(
            stream,
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nApi-Version: 1.51\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
    })
}

/// Answers nothing until the client closes the connection (or 60 s pass).
fn until_closed(stream: &mut TcpStream) {
    use std::io::Read as _;
    let _ = stream.set_read_timeout(Some(Duration::from_secs(60)));
    let mut buffer = [0; 1024];
    while matches!(stream.read(&mut buffer), Ok(read) if read > 0) {}
}

/// `forge verify-digest ARGS` on the default recipe, its forge.lock the test one, against the
/// daemon at `daemon` with `env`; with how long it took.
fn verify_against(
    daemon: &LoopbackServer,
    args: &[&str],
    env: &[(&str, &str)],
) -> (Run, Duration, String) {
    let context = TestContext::default_recipe();
    context.write(
        "forge.lock",
        &crate::support::default_recipe_lock("digest = \"sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\"\n"),
    );
    let host = format!("tcp://{}", daemon.address());
    let mut all = vec!["verify-digest"];
    all.extend_from_slice(args);
    let mut env = env.to_vec();
    env.push(("DOCKER_HOST", &host));
    let started = Instant::now();
    let run = context.forge_with(&all, &env);
    (run, started.elapsed(), host)
}

/// An image inspect whose body never ends: forge stops reading at the answer cap (16 MiB) and
/// names the daemon, the request and the cap; its memory stays bounded (exit 2, within seconds).
#[test]
fn an_endless_inspect_ends_at_the_answer_cap() {
    let daemon = docker_like(|line, stream| {
        if !(line.contains("/images/") && line.contains("/json")) {
            return false;
        }
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        );
        let _ = chunk(stream, br#"{"Id":"sha256:"#);
        let filler = vec![b'7'; 1 << 20];
        while chunk(stream, &filler).is_ok() {}
        true
    });
    let (run, took, host) = verify_against(&daemon, &[], &[]);
    let run = run.expect_code(2);
    forge_snapshot!(named(&run.stderr, &[(&host, "<daemon>")]), "", @"
        Rendered Dockerfile sha256:<digest>
    warning: pin `flashinfer`: no sha256 recorded for flashinfer-python, flashinfer-cubin, flashinfer-jit-cache, so the Dockerfile installs them unchecked (`forge pin bump flashinfer --to 0.6.14` downloads and records them)
         Patched patches/pr4 onto overlays/vllm (scratch repository) (2 applied, 0 already there)
       Assembled context sha256:<digest> (11 entries, 20.5 KiB)
            Lane ghcr.io/aeon-7/vllm-ultimate-deepseek-v4-gb10 is baseline
        Checking tags on <daemon>
    error: could not verify node <daemon>
    caused by: the Docker daemon at <daemon> answered the inspect of ghcr.io/aeon-7/vllm-ultimate-deepseek-v4-gb10:experimental-pr4 (GET /images/ghcr.io/aeon-7/vllm-ultimate-deepseek-v4-gb10:experimental-pr4/json) with more than 16 MiB; forge stopped reading
    hint: no Docker daemon answers that with so much: check that DOCKER_HOST (or --host) names a Docker daemon, and not another service or a proxy that adds to its answers
    ");
    assert!(took < Duration::from_secs(30), "took {took:?}");
}

/// An image inspect never answered: forge gives up after the idle limit and says so, naming
/// the request and the limit's variable, not a daemon out of reach (exit 2).
#[test]
fn an_inspect_never_answered_ends_at_the_idle_limit() {
    let daemon = docker_like(|line, stream| {
        if !(line.contains("/images/") && line.contains("/json")) {
            return false;
        }
        until_closed(stream);
        true
    });
    let (run, took, host) = verify_against(&daemon, &[], &[("FORGE_IDLE_TIMEOUT", "2")]);
    let run = run.expect_code(2);
    forge_snapshot!(named(&run.stderr, &[(&host, "<daemon>")]), "", @"
        Rendered Dockerfile sha256:<digest>
    warning: pin `flashinfer`: no sha256 recorded for flashinfer-python, flashinfer-cubin, flashinfer-jit-cache, so the Dockerfile installs them unchecked (`forge pin bump flashinfer --to 0.6.14` downloads and records them)
         Patched patches/pr4 onto overlays/vllm (scratch repository) (2 applied, 0 already there)
       Assembled context sha256:<digest> (11 entries, 20.5 KiB)
            Lane ghcr.io/aeon-7/vllm-ultimate-deepseek-v4-gb10 is baseline
        Checking tags on <daemon>
    error: could not verify node <daemon>
    caused by: the Docker daemon at <daemon> sent nothing for 2 s in answer to the inspect of ghcr.io/aeon-7/vllm-ultimate-deepseek-v4-gb10:experimental-pr4 (GET /images/ghcr.io/aeon-7/vllm-ultimate-deepseek-v4-gb10:experimental-pr4/json)
    hint: check the daemon (`docker version` against the same host) and the link to it; FORGE_IDLE_TIMEOUT (seconds) raises the limit for a daemon that is only slow
    ");
    assert!(took < Duration::from_secs(15), "took {took:?}");
}

/// `--contents` runs the image: a container whose wait never ends is stopped at the run
/// deadline (`FORGE_RUN_TIMEOUT`) and removed; one whose output never ends is cut at its cap.
#[test]
fn a_container_that_never_ends_or_never_stops_printing_is_bounded() {
    let daemon = docker_like(|line, stream| {
        if !line.contains("/wait") {
            return false;
        }
        until_closed(stream);
        true
    });
    let (run, took, host) = verify_against(&daemon, &["--contents"], &[("FORGE_RUN_TIMEOUT", "2")]);
    let run = run.expect_code(2);
    let image = format!("sha256:{}", "7".repeat(64));
    let mut reports = named(&run.stderr, &[(&image, "<image>"), (&host, "<daemon>")]);
    assert!(took < Duration::from_secs(15), "took {took:?}");
    assert!(
        daemon
            .requests()
            .iter()
            .any(|request| request.starts_with("DELETE /containers/c0ffee")),
        "the container is removed: {:?}",
        daemon.requests()
    );

    let daemon = docker_like(|line, stream| {
        if line.contains("/wait") {
            let body = r#"{"StatusCode":0}"#;
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            return true;
        }
        if !line.contains("/logs") {
            return false;
        }
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.docker.multiplexed-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        );
        let mut frame = vec![1u8, 0, 0, 0];
        frame.extend_from_slice(&(1u32 << 16).to_be_bytes());
        frame.extend(std::iter::repeat_n(b'x', 1 << 16));
        while chunk(stream, &frame).is_ok() {}
        true
    });
    let (run, took, host) = verify_against(&daemon, &["--contents"], &[]);
    let run = run.expect_code(2);
    reports += &named(&run.stderr, &[(&image, "<image>"), (&host, "<daemon>")]);
    forge_snapshot!(reports, "", @"
        Rendered Dockerfile sha256:<digest>
    warning: pin `flashinfer`: no sha256 recorded for flashinfer-python, flashinfer-cubin, flashinfer-jit-cache, so the Dockerfile installs them unchecked (`forge pin bump flashinfer --to 0.6.14` downloads and records them)
         Patched patches/pr4 onto overlays/vllm (scratch repository) (2 applied, 0 already there)
       Assembled context sha256:<digest> (11 entries, 20.5 KiB)
            Lane ghcr.io/aeon-7/vllm-ultimate-deepseek-v4-gb10 is baseline
        Checking tags on <daemon>
         Running <short> to read back its contents
    error: could not verify node <daemon>
    caused by: the Docker daemon at <daemon> still ran a container of <image> after 2 s; forge stopped it and removed the container
    hint: the image's probe reads versions and files and ends in seconds; check that the image's shell and python start, and the daemon's load; FORGE_RUN_TIMEOUT (seconds) raises the limit
        Rendered Dockerfile sha256:<digest>
    warning: pin `flashinfer`: no sha256 recorded for flashinfer-python, flashinfer-cubin, flashinfer-jit-cache, so the Dockerfile installs them unchecked (`forge pin bump flashinfer --to 0.6.14` downloads and records them)
         Patched patches/pr4 onto overlays/vllm (scratch repository) (2 applied, 0 already there)
       Assembled context sha256:<digest> (11 entries, 20.5 KiB)
            Lane ghcr.io/aeon-7/vllm-ultimate-deepseek-v4-gb10 is baseline
        Checking tags on <daemon>
         Running <short> to read back its contents
    error: could not verify node <daemon>
    caused by: the Docker daemon at <daemon> answered the output of a container of <image> with more than 16 MiB; forge stopped reading
    hint: no Docker daemon answers that with so much: check that DOCKER_HOST (or --host) names a Docker daemon, and not another service or a proxy that adds to its answers
    ");
    assert!(took < Duration::from_secs(30), "took {took:?}");
}
