//! A wheel set downloaded from a URL template (a project's release assets) instead of an index:
//! each wheel's file is installed as `URL --hash=sha256:HEX`, and pip itself is the judge that this
//! refuses a changed file. A wheel without a recorded hash is named in the render and in a
//! warning, never installed silently.

use crate::support::release::{ReleaseServer, sha256_hex, wheel, wheel_with_metadata};
use crate::support::snapshot::forge_snapshot;
use crate::support::tls::{Certificates, TlsTerminator};
use crate::support::{TestContext, assert_contains, assert_contains_flowed};
use crate::support::{assert_hadolint_passes, pip};
use crate::support::{forge, outdated_row};

/// The three files of the default recipe's FlashInfer set at `version`.
fn flashinfer_files(version: &str) -> [String; 3] {
    [
        format!("flashinfer_python-{version}-py3-none-any.whl"),
        format!("flashinfer_cubin-{version}-py3-none-any.whl"),
        format!("flashinfer_jit_cache-{version}+cu130-cp39-abi3-manylinux_2_28_aarch64.whl"),
    ]
}

const DEFAULT_URL: &str =
    "https://github.com/flashinfer-ai/flashinfer/releases/download/v{version}/{file}";

/// The default recipe with FlashInfer downloaded from `server`, each wheel's sha256 that of the
/// file published there for 0.6.14 (published with `marker`); with the sha256 of each file.
fn recipe_on(server: &ReleaseServer, marker: &str) -> (TestContext, Vec<String>) {
    let context = TestContext::default_recipe();
    context.edit("pins.toml", DEFAULT_URL, &server.url_template());
    let mut hashes = Vec::new();
    for file in flashinfer_files("0.6.14") {
        let bytes = wheel(&file, marker);
        hashes.push(sha256_hex(&bytes));
        server.publish("0.6.14", &file, &bytes);
        let template = file.replacen("0.6.14", "{version}", 1);
        context.edit(
            "pins.toml",
            &format!("file = \"{template}\" }}"),
            &format!(
                "file = \"{template}\", sha256 = \"{}\" }}",
                sha256_hex(&bytes)
            ),
        );
    }
    (context, hashes)
}

/// `text` with `server`'s address (`IP:PORT`) written `<server>`, so that a snapshot of it holds
/// each URL on that server to its port (`<server>…` where a column limit cut one: where the cut
/// falls, the port's length decides), and each size in bytes written `<size>`: what Python's
/// zipfile makes of a wheel's files need not be of one size everywhere.
fn at_server(text: &str, server: &ReleaseServer) -> String {
    static CUT: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"<server>\S*…").unwrap());
    static SIZE: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\b\d+ bytes\b").unwrap());
    let named = text.replace(server.address(), "<server>");
    let named = CUT.replace_all(&named, "<server>…");
    SIZE.replace_all(&named, "<size> bytes").into_owned()
}

/// The requirement lines of the rendered FlashInfer step: each file's URL, with its `--hash`.
fn downloads(dockerfile: &str) -> Vec<String> {
    pip::requirement_lines(dockerfile, "flashinfer")
}

/// The rendered FlashInfer step's pip command, run by pip on this machine.
fn pip_install(dockerfile: &str) -> std::process::Output {
    pip::run_step(dockerfile, "flashinfer", None)
}

#[test]
fn each_wheel_installs_by_url_and_sha256_and_pip_refuses_a_changed_file() {
    let server = ReleaseServer::start();
    let (context, hashes) = recipe_on(&server, "released");
    let run = context.forge(&["render"]).expect_code(0);
    let rendered = downloads(&run.stdout);
    let installed = pip_install(&run.stdout);
    assert!(
        installed.status.success(),
        "pip installs the files whose hashes were recorded:\n{}",
        String::from_utf8_lossy(&installed.stderr)
    );
    // The release is replaced by another build: same names, other bytes.
    let [python, ..] = flashinfer_files("0.6.14");
    server.publish("0.6.14", &python, &wheel(&python, "replaced"));
    let refused = pip_install(&run.stdout);
    assert!(
        !refused.status.success(),
        "pip must refuse the changed file"
    );
    assert_contains(
        &String::from_utf8_lossy(&refused.stderr),
        "THESE PACKAGES DO NOT MATCH THE HASHES",
    );

    // Every hash is recorded: nothing to warn about.
    forge_snapshot!(run.stderr, context.path(), @"");
    assert!(
        !run.stdout.contains("NOT CHECKED BY HASH"),
        "{}",
        run.stdout
    );
    let wanted: Vec<String> = flashinfer_files("0.6.14")
        .iter()
        .zip(&hashes)
        .map(|(file, hash)| format!("{} --hash=sha256:{hash}", server.url("0.6.14", file)))
        .collect();
    assert_eq!(rendered, wanted);
    assert_hadolint_passes(&run.stdout);
}

#[test]
fn a_wheel_without_a_hash_is_named_in_the_render_and_a_warning() {
    let server = ReleaseServer::start();
    let (context, hashes) = recipe_on(&server, "released");
    let [_, cubin, _] = flashinfer_files("0.6.14");
    context.edit("pins.toml", &format!(", sha256 = \"{}\"", hashes[1]), "");
    let run = context.forge(&["render"]).expect_code(0);
    forge_snapshot!(run.stderr, context.path(), @"warning: pin `flashinfer`: no sha256 recorded for flashinfer-cubin, so the Dockerfile installs it unchecked (`forge pin bump flashinfer --to 0.6.14` downloads and records them)");
    assert_contains(
        &run.stdout,
        "# NOT CHECKED BY HASH: no sha256 is recorded for flashinfer-cubin, so pip installs",
    );
    let urls = downloads(&run.stdout);
    assert_eq!(urls[1], server.url("0.6.14", &cubin));
    assert!(urls[0].contains(" --hash=sha256:") && urls[2].contains(" --hash=sha256:"));
    assert_hadolint_passes(&run.stdout);
}

#[test]
fn the_default_recipe_downloads_the_release_assets_and_says_which_hashes_are_missing() {
    let run = TestContext::default_recipe()
        .forge(&["render"])
        .expect_code(0);
    forge_snapshot!(run.stderr, "", @"warning: pin `flashinfer`: no sha256 recorded for flashinfer-python, flashinfer-cubin, flashinfer-jit-cache, so the Dockerfile installs them unchecked (`forge pin bump flashinfer --to 0.6.14` downloads and records them)");
    let base = "https://github.com/flashinfer-ai/flashinfer/releases/download/v0.6.14";
    let wanted: Vec<String> = flashinfer_files("0.6.14")
        .iter()
        .map(|file| format!("{base}/{file}"))
        .collect();
    assert_eq!(downloads(&run.stdout), wanted);
}

/// A login in a wheel set's url would land in the Dockerfile and the image's history: refused
/// where it stands, and the token is not repeated.
#[test]
fn a_wheel_url_with_a_login_is_refused_at_load() {
    let context = TestContext::default_recipe();
    let before = context.read("pins.toml");
    context.write(
        "pins.toml",
        &before.replacen(
            "https://github.com/flashinfer-ai",
            "https://lab:s3cr3t-token@github.com/flashinfer-ai",
            1,
        ),
    );
    let run = context.forge(&["render"]).expect_code(2);
    assert!(!run.stderr.contains("s3cr3t"), "{}", run.stderr);
    forge_snapshot!(run.stderr, context.path(), @"
    error: pins.toml:79:1: wheel set `flashinfer`: its url must not hold a user name or token (it is written into the Dockerfile and the image's history)
    hint: serve the files without a login, or install them from an index whose login is in a netrc file (NETRC, else ~/.netrc)
    ");
}

/// What forge reads or downloads over HTTP (a wheel set's files, a package index, a release
/// listing, `--index-url`) is refused at load when it is a `file://` URL, by a message that
/// offers only http and https.
#[test]
fn file_urls_are_refused_where_forge_reads_over_http() {
    let context = TestContext::default_recipe();
    let before = context.read("pins.toml");
    context.write(
        "pins.toml",
        &before.replacen(DEFAULT_URL, "file:///srv/wheels/{file}", 1),
    );
    let mut refusals = context.forge(&["render"]).expect_code(2).stderr;
    for (from, to) in [
        (
            "package = \"tilelang\"\n",
            "package = \"tilelang\"\nindex = \"file:///srv/simple\"\n",
        ),
        (
            "[pins.flashinfer]",
            "[index]\nurl = \"file:///srv/simple\"\n\n[pins.flashinfer]",
        ),
        (
            DEFAULT_URL,
            &format!("{DEFAULT_URL}\"\nreleases = \"file:///srv/releases.json"),
        ),
    ] {
        context.write("pins.toml", &before.replacen(from, to, 1));
        refusals += &context.forge(&["render"]).expect_code(2).stderr;
    }

    context.write("pins.toml", &before);
    refusals += &context
        .forge(&["pin", "outdated", "--index-url", "file:///srv/simple"])
        .expect_code(2)
        .stderr;
    forge_snapshot!("file_urls_refused", refusals, context.path());
}

#[test]
fn url_and_file_templates_keep_to_their_grammar() {
    let context = TestContext::default_recipe();
    let before = context.read("pins.toml");
    let refusals = [
        (DEFAULT_URL, "https://example.org/{name}/{file}"),
        (DEFAULT_URL, "https://example.org/v{version}/{file};id"),
        (
            "flashinfer_python-{version}-py3-none-any.whl",
            "flashinfer_python-{version}-py3-none-any.whl$(id)",
        ),
        (
            "flashinfer_python-{version}-py3-none-any.whl",
            "flashinfer_python-0.6.14-py3-none-any.whl",
        ),
        (
            "flashinfer_python-{version}-py3-none-any.whl",
            "flashinfer_cubin-{version}-py3-none-any.whl",
        ),
        (
            "file = \"flashinfer_cubin-{version}-py3-none-any.whl\"",
            "index = \"https://example.org/simple\"",
        ),
        (
            "\", file = \"flashinfer_cubin-{version}-py3-none-any.whl\"",
            "\", file = \"flashinfer_cubin-{version}-py3-none-any.whl\", sha256 = \"ABC\"",
        ),
        (
            "{ package = \"flashinfer-jit-cache\", file",
            "{ package = \"flashinfer-jit-cache\", local = \"cu128\", file",
        ),
        (
            "+cu130-cp39-abi3-manylinux_2_28_aarch64.whl",
            "+cu130-cp39-abi3-manylinux_2_28_x86_64.whl",
        ),
        (
            "flashinfer_cubin-{version}-py3-none-any.whl",
            "flashinfer_cubin-{version}-cp313-cp313-manylinux_2_28_aarch64.whl",
        ),
        (
            "package = \"apache-tvm-ffi\"\n",
            "package = \"apache-tvm-ffi\"\nreleases = \"https://api.github.com/repos/a/b/releases\"\n",
        ),
        (
            "url = \"https://github.com/deepseek-ai/DeepGEMM.git\"",
            "url = \"https://github.com/deepseek-ai/{file}.git\"",
        ),
    ];
    let mut stderr = String::new();
    for (from, to) in refusals {
        context.write("pins.toml", &before.replacen(from, to, 1));
        stderr += &context.forge(&["render"]).expect_code(2).stderr;
    }
    // Without the set's url, a file (and its hash) has nowhere to come from.
    context.write(
        "pins.toml",
        &before.replacen(&format!("url = \"{DEFAULT_URL}\"\n"), "", 1),
    );
    stderr += &context.forge(&["render"]).expect_code(2).stderr;
    forge_snapshot!("template_grammar_refused", stderr, context.path());
}

/// The default recipe with FlashInfer downloaded from `server`, no hash recorded.
fn unhashed_recipe_on(server: &ReleaseServer) -> TestContext {
    let context = TestContext::default_recipe();
    context.edit("pins.toml", DEFAULT_URL, &server.url_template());
    context
}

/// Publishes the three files of `version` on `server`; their sha256, in order.
fn release(server: &ReleaseServer, version: &str, files: &[String]) -> Vec<String> {
    files
        .iter()
        .map(|file| {
            let bytes = wheel(file, version);
            server.publish(version, file, &bytes);
            sha256_hex(&bytes)
        })
        .collect()
}

/// pins.toml's FlashInfer wheels as `before` has them, at `version` with `hashes` recorded.
fn with_hashes(before: &str, version: &str, hashes: &[String]) -> String {
    let mut text = before.replacen(
        "kind = \"wheels\"\nversion = \"0.6.14\"",
        &format!("kind = \"wheels\"\nversion = \"{version}\""),
        1,
    );
    for (file, hash) in flashinfer_files("{version}").iter().zip(hashes) {
        text = text.replacen(
            &format!("file = \"{file}\" }}"),
            &format!("file = \"{file}\", sha256 = \"{hash}\" }}"),
            1,
        );
    }
    text
}

#[test]
fn pin_bump_to_downloads_every_file_and_records_its_sha256() {
    let server = ReleaseServer::start();
    let context = unhashed_recipe_on(&server);
    let before = context.read("pins.toml");
    let hashes = release(&server, "0.6.15", &flashinfer_files("0.6.15"));

    let run = forge(
        &context,
        &["pin", "bump", "flashinfer", "--to", "0.6.15"],
        &[],
    )
    .expect_code(0);
    forge_snapshot!(
        "bump_to_records_every_sha256",
        at_server(&run.stderr, &server),
        context.path()
    );
    assert_contains(
        &run.stderr,
        &format!(
            "flashinfer 0.6.14 -> 0.6.15 (flashinfer-python 0.6.15 sha256:{}",
            &hashes[0][..12]
        ),
    );
    assert_eq!(
        context.read("pins.toml"),
        with_hashes(&before, "0.6.15", &hashes)
    );

    // The committed render installs each file by its hash, and pip holds the release to it.
    let committed = context.read("ci/Dockerfile.rendered");
    let rendered = downloads(&committed);
    let wanted: Vec<String> = flashinfer_files("0.6.15")
        .iter()
        .zip(&hashes)
        .map(|(file, hash)| format!("{} --hash=sha256:{hash}", server.url("0.6.15", file)))
        .collect();
    assert_eq!(rendered, wanted);
    assert!(pip_install(&committed).status.success());
    let render = context.forge(&["render"]).expect_code(0);
    forge_snapshot!(render.stderr, context.path(), @"");
}

#[test]
fn pin_bump_to_the_current_version_fills_in_the_missing_hashes() {
    let server = ReleaseServer::start();
    let context = unhashed_recipe_on(&server);
    let before = context.read("pins.toml");
    let hashes = release(&server, "0.6.14", &flashinfer_files("0.6.14"));
    forge(
        &context,
        &["pin", "bump", "flashinfer", "--to", "0.6.14"],
        &[],
    )
    .expect_code(0);
    assert_eq!(
        context.read("pins.toml"),
        with_hashes(&before, "0.6.14", &hashes)
    );
    let again = forge(
        &context,
        &["pin", "bump", "flashinfer", "--to", "0.6.14"],
        &[],
    )
    .expect_code(0);
    forge_snapshot!(again.stderr, context.path(), @"       Fresh flashinfer is already at 0.6.14");
}

#[test]
fn pin_bump_refuses_a_release_missing_a_file_or_too_large_and_changes_nothing() {
    let server = ReleaseServer::start();
    let context = unhashed_recipe_on(&server);
    let before = context.read("pins.toml");
    let rendered = context.read("ci/Dockerfile.rendered");
    let files = flashinfer_files("0.6.15");
    release(&server, "0.6.15", &files[..2]);

    let run = forge(
        &context,
        &["pin", "bump", "flashinfer", "--to", "0.6.15"],
        &[],
    )
    .expect_code(1);
    forge_snapshot!(at_server(&run.stderr, &server), context.path(), @"
         Hashing http://<server>/download/v0.6.15/flashinfer_python-0.6.15-py3-none-any.whl
         Hashing http://<server>/download/v0.6.15/flashinfer_cubin-0.6.15-py3-none-any.whl
         Hashing http://<server>/download/v0.6.15/flashinfer_jit_cache-0.6.15+cu130-cp39-abi3-manylinux_2_28_aarch64.whl
    error: refusing to move flashinfer to 0.6.15: the release has no file for flashinfer-jit-cache (HTTP 404 from http://<server>/download/v0.6.15/flashinfer_jit_cache-0.6.15+cu130-cp39-abi3-manylinux_2_28_aarch64.whl)
    hint: every wheel of a set moves together: wait until the release has every file, or check the pin's `url` and each wheel's `file` in pins.toml; pins.toml was not changed
    ");
    assert_eq!(context.read("pins.toml"), before);
    assert_eq!(context.read("ci/Dockerfile.rendered"), rendered);

    release(&server, "0.6.15", &files[2..]);
    let run = forge(
        &context,
        &["pin", "bump", "flashinfer", "--to", "0.6.15"],
        &[("FORGE_DOWNLOAD_LIMIT", "100")],
    )
    .expect_code(2);
    // Refused by the length the server announces, before the body is read.
    forge_snapshot!(at_server(&run.stderr, &server), context.path(), @"
         Hashing http://<server>/download/v0.6.15/flashinfer_python-0.6.15-py3-none-any.whl
    error: cannot hash http://<server>/download/v0.6.15/flashinfer_python-0.6.15-py3-none-any.whl: it is <size> bytes (its Content-Length), more than the download limit of 100
    hint: try again; a file larger than the limit needs FORGE_DOWNLOAD_LIMIT (bytes) raised, and a slow link FORGE_IDLE_TIMEOUT (seconds); pins.toml was not changed
    ");
    assert_eq!(context.read("pins.toml"), before);

    let run = forge(&context, &["pin", "bump", "flashinfer"], &[]).expect_code(2);
    forge_snapshot!(at_server(&run.stderr, &server), context.path(), @"
    error: pin `flashinfer` downloads its wheels from http://<server>/download/v{version}/{file}, where forge lists no versions: name the version with --to
    hint: `forge pin bump flashinfer --to VERSION` downloads every file of the set at VERSION and records their sha256
    ");
    let run = forge(
        &context,
        &["pin", "bump", "flashinfer", "--to", "0.6.15+cu130"],
        &[],
    )
    .expect_code(2);
    forge_snapshot!(run.stderr, context.path(), @r#"
    error: --to "0.6.15+cu130": expected the set's version without a local label (each wheel's file carries its own)
    hint: give --to an exact version (0.6.15), a git commit (7 to 40 hex digits) or an image tag, as the pin's kind needs
    "#);
    assert_eq!(context.read("pins.toml"), before);
}

#[test]
fn pin_bump_moves_to_the_newest_release_that_has_every_file_of_the_set() {
    let server = ReleaseServer::start();
    let context = unhashed_recipe_on(&server);
    context.edit(
        "pins.toml",
        &format!("url = \"{}\"", server.url_template()),
        &format!(
            "url = \"{}\"\nreleases = \"{}\"",
            server.url_template(),
            server.releases_url()
        ),
    );
    release(&server, "0.6.14", &flashinfer_files("0.6.14"));
    let hashes = release(&server, "0.6.15", &flashinfer_files("0.6.15"));
    release(&server, "0.6.16", &flashinfer_files("0.6.16")[..2]);
    release(&server, "0.6.17rc1", &flashinfer_files("0.6.17rc1"));
    server.prerelease("0.6.17rc1");
    release(&server, "0.7.0", &flashinfer_files("0.7.0"));
    server.draft("0.7.0");

    // Every pin is looked up: the others on loopback addresses nothing answers, so that
    // nothing leaves the machine; only this row counts.
    context.edit(
        "pins.toml",
        "url = \"https://github.com/deepseek-ai/DeepGEMM.git\"",
        "url = \"http://127.0.0.1:1/DeepGEMM.git\"",
    );
    let before = context.read("pins.toml");
    let outdated = forge(
        &context,
        &["pin", "outdated"],
        &[("FORGE_INDEX_URL", "http://127.0.0.1:1/simple")],
    );
    assert_eq!(
        outdated_row(&outdated.stdout, "flashinfer"),
        ["flashinfer", "0.6.14", "0.6.15", "0.6.16", "outdated"]
    );
    assert_contains_flowed(
        &outdated.stdout,
        "flashinfer 0.6.16: the release has no flashinfer_jit_cache-0.6.16+cu130-cp39-abi3-manylinux_2_28_aarch64.whl (wheel-set)",
    );

    let run = forge(&context, &["pin", "bump", "flashinfer", "--dry-run"], &[]).expect_code(0);
    forge_snapshot!(
        "bump_dry_run_skips_a_release_missing_a_file",
        at_server(&run.stderr, &server),
        context.path()
    );
    assert!(
        server
            .requests()
            .iter()
            .any(|path| path.contains("releases?page=2")),
        "the listing follows the next page: {:?}",
        server.requests()
    );
    assert_eq!(context.read("pins.toml"), before);

    forge(&context, &["pin", "bump", "flashinfer"], &[]).expect_code(0);
    assert_eq!(
        context.read("pins.toml"),
        with_hashes(&before, "0.6.15", &hashes)
    );

    // Nothing newer with every file: the pin stays, saying so.
    let run = forge(&context, &["pin", "bump", "flashinfer"], &[]).expect_code(0);
    forge_snapshot!(at_server(&run.stderr, &server), context.path(), @"
    warning: skipping flashinfer 0.6.16: the release has no flashinfer_jit_cache-0.6.16+cu130-cp39-abi3-manylinux_2_28_aarch64.whl
           Fresh flashinfer is at 0.6.15, the newest release with every file of the set that pins.toml allows (1 newer held back)
    ");
    let with_pre = forge(
        &context,
        &["pin", "bump", "flashinfer", "--pre", "--dry-run"],
        &[],
    )
    .expect_code(0);
    forge_snapshot!(
        "bump_pre_dry_run",
        at_server(&with_pre.stderr, &server),
        context.path()
    );
}

/// The METADATA headers of `package` at `version` as the real index has them
/// (`tests/fixtures/index`).
fn recorded_metadata(package: &str, version: &str) -> String {
    let path = crate::support::repository_root()
        .join("tests/fixtures/index")
        .join(format!("{package}.json"));
    let document: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("a fixture")).expect("JSON");
    document["metadata"][version]
        .as_str()
        .expect("recorded METADATA")
        .to_owned()
}

/// Publishes the set's three files at `version`, flashinfer-python's with the METADATA the
/// real release declares.
fn release_with_real_metadata(server: &ReleaseServer, version: &str) {
    let [python, cubin, jit] = flashinfer_files(version);
    let metadata = recorded_metadata("flashinfer-python", version);
    server.publish(
        version,
        &python,
        &wheel_with_metadata(&python, version, &metadata),
    );
    for file in [cubin, jit] {
        server.publish(version, &file, &wheel(&file, version));
    }
}

/// A downloaded set is judged as an index pin is: the real flashinfer-python 0.7.4 requires
/// nvidia-cutlass-dsl>=4.8.0, and the base's cutlass-dsl is pinned at 4.6.0, so the move is
/// refused naming the requirement and pins.toml stays byte-identical; 0.6.14's requirements
/// hold, and the move records the three hashes.
#[test]
fn pin_bump_reads_each_downloaded_wheels_metadata_and_refuses_an_unmet_requirement() {
    let server = ReleaseServer::start();
    let context = unhashed_recipe_on(&server);
    let before = context.read("pins.toml");
    release_with_real_metadata(&server, "0.7.4");
    release_with_real_metadata(&server, "0.6.14");

    let run = forge(
        &context,
        &["pin", "bump", "flashinfer", "--to", "0.7.4"],
        &[],
    )
    .expect_code(1);
    forge_snapshot!(at_server(&run.stderr, &server), context.path(), @"
         Hashing http://<server>/download/v0.7.4/flashinfer_python-0.7.4-py3-none-any.whl
         Hashing http://<server>/download/v0.7.4/flashinfer_cubin-0.7.4-py3-none-any.whl
         Hashing http://<server>/download/v0.7.4/flashinfer_jit_cache-0.7.4+cu130-cp39-abi3-manylinux_2_28_aarch64.whl
    error: refusing to move flashinfer to 0.7.4: flashinfer-python 0.7.4 requires nvidia-cutlass-dsl>=4.8.0, not 4.6.0
    hint: the Dockerfile installs with --no-deps, so forge checks what each wheel declares: move the pin that provides nvidia-cutlass-dsl>=4.8.0 first (for a pin in the base, move the base), or pick a version whose requirements the pinned set meets
    ");
    assert_eq!(
        context.read("pins.toml"),
        before,
        "pins.toml must be byte-identical"
    );

    let run = forge(
        &context,
        &["pin", "bump", "flashinfer", "--to", "0.6.14"],
        &[],
    )
    .expect_code(0);
    forge_snapshot!(
        "bump_records_the_current_version",
        at_server(&run.stderr, &server),
        context.path()
    );
    let pins = context.read("pins.toml");
    for file in flashinfer_files("{version}") {
        assert_contains(&pins, &format!("file = \"{file}\", sha256 = \""));
    }
}

/// A downloaded wheel whose `Requires-Python` the image's Python does not meet is refused as an
/// index wheel is.
#[test]
fn pin_bump_refuses_a_downloaded_wheel_for_another_python() {
    let server = ReleaseServer::start();
    let context = unhashed_recipe_on(&server);
    let before = context.read("pins.toml");
    let [python, cubin, jit] = flashinfer_files("0.7.5");
    let metadata = "Name: flashinfer-python\nVersion: 0.7.5\nRequires-Python: >=3.13\n";
    server.publish(
        "0.7.5",
        &python,
        &wheel_with_metadata(&python, "0.7.5", metadata),
    );
    for file in [cubin, jit] {
        server.publish("0.7.5", &file, &wheel(&file, "0.7.5"));
    }
    let run = forge(
        &context,
        &["pin", "bump", "flashinfer", "--to", "0.7.5"],
        &[],
    )
    .expect_code(1);
    forge_snapshot!(at_server(&run.stderr, &server), context.path(), @"
         Hashing http://<server>/download/v0.7.5/flashinfer_python-0.7.5-py3-none-any.whl
         Hashing http://<server>/download/v0.7.5/flashinfer_cubin-0.7.5-py3-none-any.whl
         Hashing http://<server>/download/v0.7.5/flashinfer_jit_cache-0.7.5+cu130-cp39-abi3-manylinux_2_28_aarch64.whl
    error: refusing to move flashinfer to 0.7.5: no wheel of flashinfer-python 0.7.5 fits linux/aarch64, Python 3.12 (wheels: py3-none-any (requires-python >=3.13))
    hint: the image needs a wheel of flashinfer-python for its platform and Python (`[image] platform`, `[base] python` in pins.toml); wait until one is published, or pick a version that has one
    ");
    assert_eq!(context.read("pins.toml"), before);
}

/// The GitHub token goes with the listing to the API's own origin over https, and nowhere else:
/// not to the host the files are downloaded from, not over plain http; the run names the
/// variable and never prints the token.
#[test]
fn a_github_token_goes_only_to_the_releases_api_over_https() {
    const TOKEN: &str = "ghp_forge-test-token";
    let api = ReleaseServer::start_on("127.0.0.1");
    let assets = ReleaseServer::start_on("127.0.0.2");
    for server in [&api, &assets] {
        release(server, "0.6.15", &flashinfer_files("0.6.15"));
    }
    let certificates = Certificates::make();
    let terminator = TlsTerminator::start(&certificates, api.address(), false);
    let listing = format!("https://127.0.0.1:{}/repos/o/r/releases", terminator.port());
    let context = unhashed_recipe_on(&assets);
    context.edit(
        "pins.toml",
        "wheels = [",
        &format!("releases = \"{listing}\"\nwheels = ["),
    );
    let ca = certificates.file("ca.pem");
    let ca = ca.to_str().unwrap();

    let run = forge(
        &context,
        &["pin", "bump", "flashinfer"],
        &[
            ("GH_TOKEN", TOKEN),
            ("GITHUB_TOKEN", "not-this-one"),
            ("SSL_CERT_FILE", ca),
        ],
    )
    .expect_code(0);
    let stderr = at_server(&run.stderr.replace(&listing, "<listing>"), &assets);
    forge_snapshot!("token_sent_only_to_the_api", stderr, context.path());
    assert!(
        !run.stderr.contains(TOKEN) && !run.stdout.contains(TOKEN),
        "{}",
        run.stderr
    );
    let sent: Vec<String> = api
        .requests()
        .into_iter()
        .filter(|line| line.starts_with("authorization "))
        .collect();
    assert_eq!(
        sent,
        [format!(
            "authorization /repos/o/r/releases?per_page=100 Bearer {TOKEN}"
        )]
    );
    let elsewhere: Vec<String> = assets
        .requests()
        .into_iter()
        .filter(|line| line.starts_with("authorization "))
        .collect();
    assert!(elsewhere.is_empty(), "the asset host got {elsewhere:?}");

    // Over plain http the token stays home, and the run says why.
    let plain = unhashed_recipe_on(&assets);
    plain.edit(
        "pins.toml",
        "wheels = [",
        &format!("releases = \"{}\"\nwheels = [", assets.releases_url()),
    );
    let run = forge(
        &plain,
        &["pin", "bump", "flashinfer"],
        &[("GITHUB_TOKEN", TOKEN)],
    )
    .expect_code(0);
    forge_snapshot!(
        "token_not_sent_over_plain_http",
        at_server(&run.stderr, &assets),
        plain.path()
    );
    assert!(
        assets
            .requests()
            .iter()
            .all(|line| !line.starts_with("authorization ")),
        "{:?}",
        assets.requests()
    );
}

/// A listing is read from one origin: a next page elsewhere refuses the move (it is not dropped
/// without a word), and a listing longer than forge reads says so.
#[test]
fn a_next_page_elsewhere_is_refused_and_a_cut_listing_says_so() {
    // Behind TLS, the server's next links name its own plain-http port: another origin.
    let api = ReleaseServer::start();
    for version in ["0.6.15", "0.6.16", "0.6.17"] {
        release(&api, version, &flashinfer_files(version));
    }
    let certificates = Certificates::make();
    let terminator = TlsTerminator::start(&certificates, api.address(), false);
    let context = unhashed_recipe_on(&api);
    let before = context.read("pins.toml");
    let listing = format!("https://127.0.0.1:{}/repos/o/r/releases", terminator.port());
    context.edit(
        "pins.toml",
        "wheels = [",
        &format!("releases = \"{listing}\"\nwheels = ["),
    );
    let ca = certificates.file("ca.pem");
    let run = forge(
        &context,
        &["pin", "bump", "flashinfer"],
        &[("SSL_CERT_FILE", ca.to_str().unwrap())],
    );
    assert_ne!(run.code, 0, "{}", run.stderr);
    let stderr = at_server(&run.stderr.replace(&listing, "<listing>"), &api);
    forge_snapshot!(stderr, context.path(), @"
    error: cannot look up the versions of flashinfer; pins.toml was not changed
    caused by: the releases at <listing>?per_page=100 name a next page on another host or port: http://<server>/repos/o/r/releases?page=2
    hint: forge reads a listing from one origin only (a token for it goes nowhere else): point the pin's `releases` at the API that serves every page, or move with `--to VERSION`
    ");
    assert_eq!(
        context
            .read("pins.toml")
            .replacen(&format!("releases = \"{listing}\"\n"), "", 1),
        before
    );

    // Two releases a page: 22 releases are 11 pages, one more than forge reads.
    let long = ReleaseServer::start();
    for minor in 0..21 {
        long.publish(&format!("0.7.{minor}"), "notes.txt", b"");
    }
    release(&long, "0.7.21", &flashinfer_files("0.7.21"));
    let context = unhashed_recipe_on(&long);
    context.edit(
        "pins.toml",
        "wheels = [",
        &format!("releases = \"{}\"\nwheels = [", long.releases_url()),
    );
    let run = forge(&context, &["pin", "bump", "flashinfer"], &[]).expect_code(0);
    forge_snapshot!("cut_listing", at_server(&run.stderr, &long), context.path());
}

/// A download that starts on https and is redirected to plain http is refused before anything
/// it served is hashed, naming both URLs; pins.toml is left as it was.
#[test]
fn a_redirect_from_https_to_plain_http_is_refused() {
    let assets = ReleaseServer::start();
    release(&assets, "0.6.15", &flashinfer_files("0.6.15"));
    // The https front answers every download with a redirect to the plain-http server.
    let front = ReleaseServer::start();
    front.redirect_downloads_to(&format!("http://{}", assets.address()));
    let certificates = Certificates::make();
    let terminator = TlsTerminator::start(&certificates, front.address(), false);
    let context = TestContext::default_recipe();
    let secure = format!(
        "https://127.0.0.1:{}/download/v{{version}}/{{file}}",
        terminator.port()
    );
    context.edit("pins.toml", DEFAULT_URL, &secure);
    let before = context.read("pins.toml");
    let ca = certificates.file("ca.pem");
    let run = forge(
        &context,
        &["pin", "bump", "flashinfer", "--to", "0.6.15"],
        &[("SSL_CERT_FILE", ca.to_str().unwrap())],
    )
    .expect_code(2);
    let front = format!("127.0.0.1:{}", terminator.port());
    let stderr = at_server(&run.stderr, &assets).replace(&front, "<front>");
    forge_snapshot!(stderr, context.path(), @"
         Hashing https://<front>/download/v0.6.15/flashinfer_python-0.6.15-py3-none-any.whl
    error: cannot download https://<front>/download/v0.6.15/flashinfer_python-0.6.15-py3-none-any.whl: it redirects from https to plain http (http://<server>/download/v0.6.15/flashinfer_python-0.6.15-py3-none-any.whl)
    hint: forge hashes only what came over https when the url is https: ask the host to serve the file over https, or name its https location in the pin's `url`; pins.toml was not changed
    ");
    assert_eq!(context.read("pins.toml"), before);
    assert!(
        assets
            .requests()
            .iter()
            .all(|path| !path.starts_with("/download/")),
        "the plain-http server was asked: {:?}",
        assets.requests()
    );
}

/// A redirect out of HTTP (to a `file:` URL) or one that never ends is refused by what it is,
/// naming where it led, and nothing is recorded.
#[test]
fn a_redirect_out_of_http_or_without_end_is_refused_by_what_it_is() {
    let server = ReleaseServer::start();
    release(&server, "0.6.15", &flashinfer_files("0.6.15"));
    let context = unhashed_recipe_on(&server);
    let before = context.read("pins.toml");
    let bump = || {
        forge(
            &context,
            &["pin", "bump", "flashinfer", "--to", "0.6.15"],
            &[],
        )
        .expect_code(2)
    };

    server.redirect_downloads_to("file://");
    let run = bump();
    forge_snapshot!(at_server(&run.stderr, &server), context.path(), @"
         Hashing http://<server>/download/v0.6.15/flashinfer_python-0.6.15-py3-none-any.whl
    error: cannot download http://<server>/download/v0.6.15/flashinfer_python-0.6.15-py3-none-any.whl: it redirects to file:///download/v0.6.15/flashinfer_python-0.6.15-py3-none-any.whl, which is not an http:// or https:// URL
    hint: forge downloads over http and https only, and sends no login it was not given: name the file's https location in the pin's `url`; pins.toml was not changed
    ");
    assert_eq!(context.read("pins.toml"), before);

    server.redirect_downloads_to(&format!("http://{}", server.address()));
    let run = bump();
    forge_snapshot!(at_server(&run.stderr, &server), context.path(), @"
         Hashing http://<server>/download/v0.6.15/flashinfer_python-0.6.15-py3-none-any.whl
    error: cannot download http://<server>/download/v0.6.15/flashinfer_python-0.6.15-py3-none-any.whl: it redirects more than 10 times (the last to http://<server>/download/v0.6.15/flashinfer_python-0.6.15-py3-none-any.whl)
    hint: the server's redirects lead nowhere: check the pin's `url` in a browser, or name where the file really is; pins.toml was not changed
    ");
    assert_eq!(context.read("pins.toml"), before);
}

/// A file that is not the wheel its name says (a rate-limit page answered with 200, or the wheel
/// of another package or version) is refused by name, and nothing is recorded.
#[test]
fn pin_bump_refuses_a_download_that_is_not_the_wheel_its_name_says() {
    let server = ReleaseServer::start();
    let context = unhashed_recipe_on(&server);
    let before = context.read("pins.toml");
    let files = flashinfer_files("0.6.15");
    release(&server, "0.6.15", &files);
    let bump = || {
        forge(
            &context,
            &["pin", "bump", "flashinfer", "--to", "0.6.15"],
            &[],
        )
        .expect_code(2)
    };
    let cases = [
        b"<html><body>rate limited; try again later</body></html>".to_vec(),
        wheel(&files[0], "0.6.15"),
        wheel(&flashinfer_files("0.6.14")[1], "0.6.14"),
        wheel_with_metadata(
            &files[1],
            "0.6.15",
            "Name: flashinfer-cubin\nVersion: 0.6.16\n",
        ),
    ];
    let mut refusals = String::new();
    for bytes in cases {
        server.publish("0.6.15", &files[1], &bytes);
        refusals += &bump().stderr;
        assert_eq!(context.read("pins.toml"), before);
    }
    forge_snapshot!(
        "not_the_wheel_refused",
        at_server(&refusals, &server),
        context.path()
    );
    // The wheel itself moves the set.
    server.publish("0.6.15", &files[1], &wheel(&files[1], "0.6.15"));
    forge(
        &context,
        &["pin", "bump", "flashinfer", "--to", "0.6.15"],
        &[],
    )
    .expect_code(0);
    assert_ne!(context.read("pins.toml"), before);
}
