//! `forge pull`: the offline example pushed to a real `docker-registry` on loopback, then pulled
//! by digest onto the tests' daemon and a second, empty daemon that reaches the registry
//! through its own loopback. A node that cannot pull, goes quiet mid-pull, or would end on
//! another image, fails the pull naming it, and no tag moves on any node.

use std::process::Command;

use crate::support::images::{
    DATED_TAG, Example, base_image, daemon_host, daemon_platform, docker_available,
    ensure_base_image, image_id,
};
use crate::support::images::{Tagged, id_on};
use crate::support::node::SecondDaemon;
use crate::support::registry::RegistryServer;
use crate::support::registry::registry_tools_missing;
use crate::support::snapshot::forge_snapshot;
use crate::support::verify::{rows_where, verify};
use crate::support::{Run, assert_contains};

fn pull(example: &Example, hosts: &[&str]) -> Run {
    let mut args = vec!["--json", "pull", "--progress", "plain"];
    for host in hosts {
        args.extend(["--host", host]);
    }
    example.context.forge(&args)
}

/// `text` with each of `names` (a node's address, an image id) as its placeholder, and the
/// example's registry and the daemon's platform as `<registry>` and `<platform>`.
fn named(text: &str, example: &Example, names: &[(&str, &str)]) -> String {
    let registry = example
        .repository
        .split('/')
        .next()
        .expect("a registry host");
    names
        .iter()
        .fold(text.to_owned(), |text, (name, to)| text.replace(name, to))
        .replace(registry, "<registry>")
        .replace(&format!("({})", daemon_platform()), "(<platform>)")
}

/// The lines of forge's own report in `text` (`error:`, `hint:`), without what a daemon said.
fn report_lines(text: &str) -> String {
    text.lines()
        .filter(|line| line.starts_with("error: ") || line.starts_with("hint: "))
        .collect::<Vec<_>>()
        .join("\n")
}

fn retag(host: &str, from: &str, to: &str) {
    let status = Command::new("docker")
        .args(["-H", host, "tag", from, to])
        .status()
        .unwrap();
    assert!(status.success(), "docker tag {from} {to} on {host}");
}

#[test]
fn every_node_ends_on_the_recorded_digest_or_none_moves() {
    let registry = RegistryServer::start();
    if !docker_available() || registry_tools_missing() {
        return;
    }
    ensure_base_image();
    let example = Example::with_repository(&format!("{}/forge-pull/example", registry.address()));
    example.build(&["--push"]).expect_code(0);
    let id = example
        .tag_id("latest")
        .expect("the build tagged the image");
    let Some(node) = SecondDaemon::start_or_skip() else {
        return;
    };
    let main = daemon_host();
    let latest = format!("{}:latest", example.repository);
    let dated = format!("{}:{DATED_TAG}", example.repository);
    // The test re-points both tags at the base by hand: they go when it ends.
    let _tagged = Tagged(vec![latest.clone(), dated.clone()]);
    let base = image_id(base_image()).unwrap();
    // The main daemon's tags name another image, so that a tag that moves shows.
    retag(&main, base_image(), &latest);
    retag(&main, base_image(), &dated);

    // A node that cannot be reached: exit 2 naming it, before anything is pulled or tagged.
    let run = pull(&example, &[&main, "unix:///nonexistent/forge-node.sock"]).expect_code(2);
    forge_snapshot!(run.stderr, example.context.path(), @"
    error: cannot reach node unix:///nonexistent/forge-node.sock; nothing was pulled
    caused by: cannot reach the Docker daemon at unix:///nonexistent/forge-node.sock: No such file or directory (os error 2)
    hint: start the Docker daemon or point DOCKER_HOST at a running one (tried unix:///nonexistent/forge-node.sock); `forge build --dry-run` needs no daemon
    ");
    assert_eq!(id_on(&main, &latest).as_deref(), Some(base.as_str()));

    // A node that cannot reach the registry: exit 2 naming it; the node that could pull is
    // not tagged either.
    let run = pull(&example, &[&main, &node.host]).expect_code(2);
    let nodes = [(main.as_str(), "<main>"), (node.host.as_str(), "<node>")];
    let report = named(&report_lines(&run.stderr), &example, &nodes);
    forge_snapshot!(report, example.context.path(), @"
    error: node <node> cannot pull <registry>/forge-pull/example@sha256:<digest>; no tag moved on any node
    hint: check the registry's address and credentials (~/.docker/config.json, or FORGE_REGISTRY_USER and FORGE_REGISTRY_PASSWORD, which go to the recipe's registry or the host FORGE_REGISTRY_HOST names)
    ");
    assert_eq!(id_on(&main, &latest).as_deref(), Some(base.as_str()));
    assert_eq!(id_on(&main, &dated).as_deref(), Some(base.as_str()));
    assert_eq!(id_on(&node.host, &latest), None);

    // Reaching it, both nodes end on the recorded image under both tags, and say so.
    let _bridge = node.reach(registry.port());
    let run = pull(&example, &[&main, &node.host]).expect_code(0);
    for host in [&main, &node.host] {
        assert_eq!(id_on(host, &latest).as_deref(), Some(id.as_str()), "{host}");
        assert_eq!(id_on(host, &dated).as_deref(), Some(id.as_str()), "{host}");
    }
    let json = run.json();
    assert_eq!(json["ok"], true, "{json:#}");
    assert_eq!(
        rows_where(&json, true),
        [
            format!("tag {main}: {latest}"),
            format!("tag {main}: {dated}"),
            format!("tags agree {main}: latest, {DATED_TAG}"),
            format!("tag {}: {latest}", node.host),
            format!("tag {}: {dated}", node.host),
            format!("tags agree {}: latest, {DATED_TAG}", node.host),
        ]
    );
    let report = named(&run.stderr, &example, &nodes);
    forge_snapshot!("pull_every_node", report, example.context.path());
    verify(&example, &["--host", &main, "--host", &node.host], &[]).expect_code(0);

    // A record whose image the digest does not hold: exit 1 naming the node, no tag moved.
    retag(&main, base_image(), &latest);
    let lock = example.context.read("forge.lock");
    example.context.edit(
        "forge.lock",
        &format!("id = \"{id}\""),
        &format!("id = \"{base}\""),
    );
    let run = pull(&example, &[&main]).expect_code(1);
    let names = [
        (main.as_str(), "<main>"),
        (&id, "<built>"),
        (&base, "<base>"),
    ];
    forge_snapshot!(named(&run.stderr, &example, &names), example.context.path(), @"
         Pulling <registry>/forge-pull/example@sha256:<digest> on <main> (<platform>)
    <progress>
    error: node <main> holds <built> under <registry>/forge-pull/example@sha256:<digest>, not the recorded image <base>; no tag moved on any node
    hint: the registry serves another image for the platform than the build recorded: build and push again, or check [image] platform
    ");
    assert_eq!(id_on(&main, &latest).as_deref(), Some(base.as_str()));
    example.context.write("forge.lock", &lock);
}

#[test]
fn a_record_that_was_never_pushed_has_nothing_to_pull() {
    let Some((example, _)) = crate::support::images::built("pull-unpushed") else {
        return;
    };
    let run = example.context.forge(&["pull"]).expect_code(2);
    forge_snapshot!(run.stderr, example.context.path(), @"
    error: forge.lock records no pushed tag: there is no manifest digest to pull
    hint: `forge build --push` records the digest the registry stored; pull after it
    ");
}

/// A node in front of the tests' daemon: each request chunk for which `stall` holds is
/// answered with the headers of a progress stream and then nothing, as a daemon stuck on a
/// registry does, or with `chatter` over and over when there is some, as a daemon that keeps
/// repeating one line of progress; every answer of the daemon passes through `rewrite` on its
/// way.
struct DaemonFront {
    path: std::path::PathBuf,
    _folder: tempfile::TempDir,
}

impl DaemonFront {
    fn start(
        stall: impl Fn(&[u8]) -> bool + Send + Sync + 'static,
        rewrite: impl Fn(&mut [u8]) + Send + Sync + 'static,
    ) -> Self {
        Self::chattering(stall, rewrite, None)
    }

    fn chattering(
        stall: impl Fn(&[u8]) -> bool + Send + Sync + 'static,
        rewrite: impl Fn(&mut [u8]) + Send + Sync + 'static,
        chatter: Option<&'static str>,
    ) -> Self {
        use std::io::{Read as _, Write as _};
        use std::os::unix::net::{UnixListener, UnixStream};
        use std::sync::Arc;
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("docker.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let socket = daemon_host().trim_start_matches("unix://").to_owned();
        let (stall, rewrite) = (Arc::new(stall), Arc::new(rewrite));
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(mut client) = client else { break };
                let Ok(mut upstream) = UnixStream::connect(&socket) else {
                    continue;
                };
                let (mut answers, mut to_client) =
                    (upstream.try_clone().unwrap(), client.try_clone().unwrap());
                let rewrite = Arc::clone(&rewrite);
                std::thread::spawn(move || {
                    let mut buffer = vec![0; 64 * 1024];
                    while let Ok(count @ 1..) = answers.read(&mut buffer) {
                        rewrite(&mut buffer[..count]);
                        if to_client.write_all(&buffer[..count]).is_err() {
                            break;
                        }
                    }
                });
                let stall = Arc::clone(&stall);
                std::thread::spawn(move || {
                    let mut buffer = vec![0; 64 * 1024];
                    while let Ok(count @ 1..) = client.read(&mut buffer) {
                        if stall(&buffer[..count]) {
                            let _ = client.write_all(
                                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
                            );
                            match chatter {
                                // The same line again and again, until forge lets go.
                                Some(line) => {
                                    let chunk = format!("{:x}\r\n{line}\r\n", line.len());
                                    while client.write_all(chunk.as_bytes()).is_ok() {
                                        std::thread::sleep(std::time::Duration::from_millis(100));
                                    }
                                }
                                // Then nothing, until forge lets go.
                                None => {
                                    let _ = client.read(&mut buffer);
                                }
                            }
                            break;
                        }
                        if upstream.write_all(&buffer[..count]).is_err() {
                            break;
                        }
                    }
                });
            }
        });
        Self {
            path,
            _folder: folder,
        }
    }

    fn host(&self) -> String {
        format!("unix://{}", self.path.display())
    }
}

/// A pull request: `POST .../images/create?...`.
fn is_pull(chunk: &[u8]) -> bool {
    chunk.starts_with(b"POST ") && chunk.windows(15).any(|window| window == b"/images/create?")
}

/// A node that starts answering a pull and then goes quiet ends the pull once the idle limit
/// passes, naming the node, and no tag moves.
#[test]
fn a_node_that_goes_quiet_mid_pull_is_named_once_the_idle_limit_passes() {
    let registry = RegistryServer::start();
    if !docker_available() || registry_tools_missing() {
        return;
    }
    ensure_base_image();
    let example = Example::with_repository(&format!("{}/forge-pull/quiet", registry.address()));
    example.build(&["--push"]).expect_code(0);
    let id = example.tag_id("latest").unwrap();
    let node = DaemonFront::start(is_pull, |_| {});
    let host = node.host();
    let started = std::time::Instant::now();
    let run = example
        .context
        .forge_with(
            &["pull", "--progress", "plain", "--host", &host],
            &[("FORGE_IDLE_TIMEOUT", "2")],
        )
        .expect_code(2);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
    let report = named(&run.stderr, &example, &[(&host, "<node>")]);
    forge_snapshot!(report, example.context.path(), @"
         Pulling <registry>/forge-pull/quiet@sha256:<digest> on <node> (<platform>)
    error: node <node> cannot pull <registry>/forge-pull/quiet@sha256:<digest>; no tag moved on any node
    caused by: the Docker daemon at <node> reported no progress on <registry>/forge-pull/quiet@sha256:<digest> for 2 s
    hint: check the daemon and its network (a daemon that answers and then sends nothing or the same progress again and again, or a registry it waits on); FORGE_IDLE_TIMEOUT (seconds) raises the limit for a link that is only slow
    ");
    assert_eq!(example.tag_id("latest").as_deref(), Some(id.as_str()));
}

/// A node that repeats the same line of progress for ever makes no headway: the pull ends once
/// the idle limit passes without any, naming the node, and no tag moves.
#[test]
fn a_node_that_repeats_one_line_of_progress_is_named_once_the_idle_limit_passes() {
    let registry = RegistryServer::start();
    if !docker_available() || registry_tools_missing() {
        return;
    }
    ensure_base_image();
    let example = Example::with_repository(&format!("{}/forge-pull/chatty", registry.address()));
    example.build(&["--push"]).expect_code(0);
    let id = example.tag_id("latest").unwrap();
    let node = DaemonFront::chattering(
        is_pull,
        |_| {},
        Some("{\"status\":\"Waiting\",\"progressDetail\":{},\"id\":\"0123456789ab\"}\r\n"),
    );
    let host = node.host();
    let run = example
        .context
        .forge_bounded_with(
            &["pull", "--progress", "plain", "--host", &host],
            &[("FORGE_IDLE_TIMEOUT", "2")],
            std::time::Duration::from_secs(60),
        )
        .expect("the pull ends once the idle limit passes without headway")
        .expect_code(2);
    let report = named(&run.stderr, &example, &[(&host, "<node>")]);
    forge_snapshot!(report, example.context.path(), @"
         Pulling <registry>/forge-pull/chatty@sha256:<digest> on <node> (<platform>)
    error: node <node> cannot pull <registry>/forge-pull/chatty@sha256:<digest>; no tag moved on any node
    caused by: the Docker daemon at <node> reported no progress on <registry>/forge-pull/chatty@sha256:<digest> for 2 s
    hint: check the daemon and its network (a daemon that answers and then sends nothing or the same progress again and again, or a registry it waits on); FORGE_IDLE_TIMEOUT (seconds) raises the limit for a link that is only slow
    ");
    assert_eq!(example.tag_id("latest").as_deref(), Some(id.as_str()));
}

/// When one node holds another image under the digest every node pulled while another holds
/// the recorded one, the failure names that node's daemon, not the registry.
#[test]
fn a_node_that_reports_another_image_is_named_as_the_fault() {
    let registry = RegistryServer::start();
    if !docker_available() || registry_tools_missing() {
        return;
    }
    ensure_base_image();
    let example =
        Example::with_repository(&format!("{}/forge-pull/misreported", registry.address()));
    example.build(&["--push"]).expect_code(0);
    let id = example.tag_id("latest").unwrap();
    let hex = id.trim_start_matches("sha256:");
    let instead: String = hex
        .chars()
        .map(|c| if c == 'f' { 'e' } else { 'f' })
        .collect();
    // A node that reports the image under another id, as a daemon that is not what it claims.
    let (from, to) = (hex.as_bytes().to_vec(), instead.clone().into_bytes());
    let node = DaemonFront::start(
        |_| false,
        move |chunk| {
            let mut at = 0;
            while let Some(found) =
                (chunk[at..].windows(from.len())).position(|window| window == from)
            {
                chunk[at + found..at + found + from.len()].copy_from_slice(&to);
                at += found + from.len();
            }
        },
    );
    let (main, host) = (daemon_host(), node.host());
    let run = pull(&example, &[&main, &host]).expect_code(1);
    let instead = format!("sha256:{instead}");
    let names = [
        (main.as_str(), "<main>"),
        (&host, "<node>"),
        (&instead, "<instead>"),
    ];
    let report = named(&run.stderr, &example, &names);
    forge_snapshot!(report, example.context.path(), @"
         Pulling <registry>/forge-pull/misreported@sha256:<digest> on <main> (<platform>)
         Pulling <registry>/forge-pull/misreported@sha256:<digest> on <node> (<platform>)
    <progress>
          Pulled <short> on <main>
    error: node <node> holds <instead> under <registry>/forge-pull/misreported@sha256:<digest>, not the recorded image sha256:<digest>; no tag moved on any node; <main> pulled the same digest and holds the recorded image
    hint: the registry served every node the same digest, so the fault is the daemon at <node>: check its image store (one that names images by their manifest digest reports other ids) and its version, then pull again
    ");
    // Alone, it cannot be told from a registry serving another image.
    let run = pull(&example, &[&host]).expect_code(1);
    let report = named(&run.stderr, &example, &names);
    forge_snapshot!(report, example.context.path(), @"
         Pulling <registry>/forge-pull/misreported@sha256:<digest> on <node> (<platform>)
    <progress>
    error: node <node> holds <instead> under <registry>/forge-pull/misreported@sha256:<digest>, not the recorded image sha256:<digest>; no tag moved on any node
    hint: the registry serves another image for the platform than the build recorded: build and push again, or check [image] platform
    ");
}

/// `forge ARGS` in the example's folder with stderr on a terminal (a pseudo-terminal `script`
/// opens, 100 columns): what it drew, escapes and all.
fn on_a_terminal(example: &Example, args: &[&str]) -> Run {
    let forge = example.context.forge_command(args);
    let words: Vec<String> = std::iter::once(forge.get_program())
        .chain(forge.get_args())
        .map(|word| format!("'{}'", word.to_string_lossy().replace('\'', r"'\''")))
        .collect();
    let mut command = Command::new("script");
    command
        .args(["--quiet", "--return", "--command"])
        .arg(format!("stty cols 100; exec {}", words.join(" ")))
        .arg("/dev/null")
        .current_dir(example.context.path())
        .env("TERM", "xterm")
        .env("COLUMNS", "100");
    for (name, value) in forge.get_envs() {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    Run::of(&mut command)
}

/// On a terminal a pull shows each layer's bytes and rate, as docker's and buildx's displays do,
/// and says what each layer moved once it is complete; a log (`--progress plain`) keeps to one
/// line per state, without byte counts.
#[test]
fn a_pull_on_a_terminal_shows_each_layers_bytes_and_rate() {
    let registry = RegistryServer::start();
    if !docker_available() || registry_tools_missing() {
        return;
    }
    ensure_base_image();
    let example = Example::with_repository(&format!("{}/forge-pull/bytes", registry.address()));
    // Eight MiB that do not compress: a layer whose download takes more than one step.
    let mut noise = vec![0u8; 8 << 20];
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    for byte in &mut noise {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        *byte = state as u8;
    }
    std::fs::write(
        example.context.path().join("overlays/app/noise.bin"),
        &noise,
    )
    .unwrap();
    example.build(&["--push"]).expect_code(0);
    let forget = || {
        for id in example.images() {
            let _ = Command::new("docker")
                .args(["rmi", "--force", &id])
                .output();
        }
        assert!(example.tag_id("latest").is_none());
    };

    forget();
    let run = on_a_terminal(&example, &["pull", "--progress", "auto"]).expect_code(0);
    let drawn = run.stdout.replace('\r', "\n");
    let complete =
        regex::Regex::new(r"[0-9a-f]{12} Pull complete: 8\.0 MiB in \d+\.\d s, \d+\.\d [KMG]iB/s")
            .unwrap();
    assert!(
        complete.is_match(&drawn),
        "no layer's bytes and rate in:\n{drawn}"
    );

    forget();
    let run = example
        .context
        .forge(&["pull", "--progress", "plain"])
        .expect_code(0);
    assert_contains(&run.stderr, "Pull complete");
    assert!(!run.stderr.contains("MiB/s"), "{}", run.stderr);
    assert!(example.tag_id("latest").is_some());
}
