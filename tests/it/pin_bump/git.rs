//! Git pins: moved to the branch head as a full id, short revisions resolved, the series that
//! patches a pin checked before it moves; over file://, git's smart HTTP and HTTPS.

use super::*;
use crate::support::snapshot::forge_snapshot;

/// The one commit of the series that conflicts with the remote's later commits.
const TUNE_THE_KERNEL: (&str, &[(&str, &str)]) =
    ("tune the kernel", &[("kernel.txt", "first, tuned\n")]);

#[test]
fn a_git_bump_checks_the_series_that_patches_it_and_moves_its_target() {
    let (context, remote) = with_a_deepgemm_series(&[
        ("add extra", &[("extra.txt", "extra\n")]),
        ("add docs", &[("docs.txt", "docs\n")]),
    ]);
    let before = context.read("pins.toml");

    let run = forge(&context, &["pin", "bump", "deepgemm"], &[]).expect_code(0);
    forge_snapshot!(format!("{}{}", run.stdout, run.stderr), context.path(), @r#"
       Checking patches/deepgemm (2 patches) onto file://<tmp>/remote.git at <short>
        Applies 0001-add-extra.patch
       Upstream 0002-add-docs.patch (already in the new revision)
        Bumping deepgemm <short> -> <short> (nv_dev, recorded as <commit>)
        Updated ci/Dockerfile.rendered (the committed render, sha256:<digest>)
        Updated pins.toml: [pins.deepgemm] rev = "<commit>", [patches[1].onto] rev = "<commit>"
       Rendered Dockerfile sha256:<digest> (was sha256:<digest>)
    Invalidated 8 of 17 steps, from step 10 (Dockerfile line 35) on:
           step 10/17  RUN git clone --quiet --filter=blob:none --branch nv_dev --single-branch file://<tmp>…
           step 11/17  RUN printf '%s\n' 'apache-tvm-ffi==0.1.11 --hash=sha256:da2c8d07fdc737d1ba75f4de25c29f1…
           step 12/17  RUN printf '%s\n' 'flashinfer-python==0.6.14' 'flashinfer-cubin==0.6.14' | python3 -m p…
           step 13/17  COPY overlays/vllm/ /usr/local/lib/python3.12/site-packages/vllm/
           step 14/17  RUN python3 -c "import vllm" && (python3 -P -c "import sys; import importlib.util; sour…
           step 15/17  ARG FORGE_REVISION=unknown
           step 16/17  LABEL org.opencontainers.image.source="https://github.com/aeon-7/vllm-ultimate-deepseek…
           step 17/17  ENTRYPOINT ["/bin/bash"]
    "#);
    forge_snapshot!(run.stderr, context.path(), @r#"
       Checking patches/deepgemm (2 patches) onto file://<tmp>/remote.git at <short>
        Applies 0001-add-extra.patch
       Upstream 0002-add-docs.patch (already in the new revision)
        Bumping deepgemm <short> -> <short> (nv_dev, recorded as <commit>)
        Updated ci/Dockerfile.rendered (the committed render, sha256:<digest>)
        Updated pins.toml: [pins.deepgemm] rev = "<commit>", [patches[1].onto] rev = "<commit>"
       Rendered Dockerfile sha256:<digest> (was sha256:<digest>)
    Invalidated 8 of 17 steps, from step 10 (Dockerfile line 35) on:
           step 10/17  RUN git clone --quiet --filter=blob:none --branch nv_dev --single-branch file://<tmp>…
           step 11/17  RUN printf '%s\n' 'apache-tvm-ffi==0.1.11 --hash=sha256:da2c8d07fdc737d1ba75f4de25c29f1…
           step 12/17  RUN printf '%s\n' 'flashinfer-python==0.6.14' 'flashinfer-cubin==0.6.14' | python3 -m p…
           step 13/17  COPY overlays/vllm/ /usr/local/lib/python3.12/site-packages/vllm/
           step 14/17  RUN python3 -c "import vllm" && (python3 -P -c "import sys; import importlib.util; sour…
           step 15/17  ARG FORGE_REVISION=unknown
           step 16/17  LABEL org.opencontainers.image.source="https://github.com/aeon-7/vllm-ultimate-deepseek…
           step 17/17  ENTRYPOINT ["/bin/bash"]
    "#);
    // The pin and the series' target move together; nothing else changes.
    assert_eq!(
        context.read("pins.toml"),
        before
            .replacen(
                &format!("rev = \"{}\"\n", remote.first),
                &format!("rev = \"{}\"\n", remote.head),
                1
            )
            .replacen(
                &format!("rev = \"{}\" }}", remote.first),
                &format!("rev = \"{}\" }}", remote.head),
                1
            )
    );
}

#[test]
fn a_git_bump_where_the_series_conflicts_is_refused_unless_forced() {
    let (context, remote) = with_a_deepgemm_series(&[TUNE_THE_KERNEL]);
    let before = context.read("pins.toml");

    let run = forge(&context, &["pin", "bump", "deepgemm"], &[]).expect_code(1);
    forge_snapshot!(format!("{}{}", run.stdout, run.stderr), context.path(), @r"
            Checking patches/deepgemm (1 patches) onto file://<tmp>/remote.git at <short>
           Conflicts 0001-tune-the-kernel.patch (kernel.txt: hunk #1 (@@ -1 +1 @@) does not apply)
        error: refusing to move deepgemm to <short>: its patch series would not apply there: patches/deepgemm/0001-tune-the-kernel.patch (kernel.txt: hunk #1 (@@ -1 +1 @@) does not apply)
        hint: rebase the series onto the new revision (`forge patch check` shows each hunk), or pass --force to move anyway
        ");
    assert_unchanged_saying(
        &run,
        &context,
        &before,
        &[
            "Conflicts 0001-tune-the-kernel.patch (kernel.txt",
            "error: refusing to move deepgemm to",
            "hint: rebase the series",
        ],
    );

    let run = forge(&context, &["pin", "bump", "deepgemm", "--force"], &[]).expect_code(0);
    forge_snapshot!(run.stderr, context.path(), @r#"
        Checking patches/deepgemm (1 patches) onto file://<tmp>/remote.git at <short>
       Conflicts 0001-tune-the-kernel.patch (kernel.txt: hunk #1 (@@ -1 +1 @@) does not apply)
    warning: --force: moving deepgemm to <short> although these patches conflict there: patches/deepgemm/0001-tune-the-kernel.patch (kernel.txt: hunk #1 (@@ -1 +1 @@) does not apply)
         Bumping deepgemm <short> -> <short> (nv_dev, recorded as <commit>)
         Updated ci/Dockerfile.rendered (the committed render, sha256:<digest>)
         Updated pins.toml: [pins.deepgemm] rev = "<commit>", [patches[1].onto] rev = "<commit>"
        Rendered Dockerfile sha256:<digest> (was sha256:<digest>)
     Invalidated 8 of 17 steps, from step 10 (Dockerfile line 35) on:
            step 10/17  RUN git clone --quiet --filter=blob:none --branch nv_dev --single-branch file://<tmp>…
            step 11/17  RUN printf '%s\n' 'apache-tvm-ffi==0.1.11 --hash=sha256:da2c8d07fdc737d1ba75f4de25c29f1…
            step 12/17  RUN printf '%s\n' 'flashinfer-python==0.6.14' 'flashinfer-cubin==0.6.14' | python3 -m p…
            step 13/17  COPY overlays/vllm/ /usr/local/lib/python3.12/site-packages/vllm/
            step 14/17  RUN python3 -c "import vllm" && (python3 -P -c "import sys; import importlib.util; sour…
            step 15/17  ARG FORGE_REVISION=unknown
            step 16/17  LABEL org.opencontainers.image.source="https://github.com/aeon-7/vllm-ultimate-deepseek…
            step 17/17  ENTRYPOINT ["/bin/bash"]
    "#);
    assert_contains(
        &context.read("pins.toml"),
        &format!("rev = \"{}\"\nmodule", remote.head),
    );
}

#[test]
fn a_git_pin_moves_to_the_branch_head_as_a_full_id() {
    let context = TestContext::default_recipe_on_indexes();
    let remote = GitRemote::new();
    let before = with_git_remote(&context, &remote);

    let run = forge(&context, &["pin", "bump", "deepgemm"], &[]).expect_code(0);
    // DeepGEMM is step 8: it and every step after it run again.
    forge_snapshot!(format!("{}{}", run.stdout, run.stderr), context.path(), @r#"
        Bumping deepgemm <short> -> <short> (nv_dev, recorded as <commit>)
        Updated ci/Dockerfile.rendered (the committed render, sha256:<digest>)
        Updated pins.toml: [pins.deepgemm] rev = "<commit>"
       Rendered Dockerfile sha256:<digest> (was sha256:<digest>)
    Invalidated 8 of 16 steps, from step 9 (Dockerfile line 32) on:
           step  9/16  RUN git clone --quiet --filter=blob:none --branch nv_dev --single-branch file://<tmp>…
           step 10/16  RUN printf '%s\n' 'apache-tvm-ffi==0.1.11 --hash=sha256:da2c8d07fdc737d1ba75f4de25c29f1…
           step 11/16  RUN printf '%s\n' 'flashinfer-python==0.6.14' 'flashinfer-cubin==0.6.14' | python3 -m p…
           step 12/16  COPY overlays/vllm/ /usr/local/lib/python3.12/site-packages/vllm/
           step 13/16  RUN python3 -c "import vllm" && (python3 -P -c "import sys; import importlib.util; sour…
           step 14/16  ARG FORGE_REVISION=unknown
           step 15/16  LABEL org.opencontainers.image.source="https://github.com/aeon-7/vllm-ultimate-deepseek…
           step 16/16  ENTRYPOINT ["/bin/bash"]
    "#);
    assert_deepgemm_at(&context, &before, &remote.head);
    assert_contains(
        &run.stderr,
        &format!("deepgemm a6b593d -> {}", &remote.head[..7]),
    );

    // At the head already: nothing to do, nothing written.
    let now = context.read("pins.toml");
    forge(&context, &["pin", "bump", "deepgemm"], &[]).expect_code(0);
    assert_eq!(context.read("pins.toml"), now);
}

#[test]
fn a_short_revision_given_with_to_is_resolved_on_the_branch() {
    let context = TestContext::default_recipe_on_indexes();
    let remote = GitRemote::new();
    let before = with_git_remote(&context, &remote);

    assert_a_short_revision_resolves(&context, &before, &remote, &[]);

    // A commit of another branch is not on nv_dev: refused, nothing changed.
    let now = context.read("pins.toml");
    let run = forge(
        &context,
        &["pin", "bump", "deepgemm", "--to", &remote.side[..10]],
        &[],
    )
    .expect_code(2);
    forge_snapshot!(format!("{}{}", run.stdout, run.stderr), context.path(), @r"
        error: cannot look up deepgemm on file://<tmp>/remote.git; pins.toml was not changed
        caused by: revision <short> is not on branch nv_dev of file://<tmp>/remote.git
        hint: pass --to with a commit that is on the branch, or leave --to out for the branch head
        ");
    let not_on = format!("revision {} is not on branch nv_dev", &remote.side[..10]);
    assert_unchanged_saying(&run, &context, &now, &[&not_on]);
}

#[test]
fn an_unreachable_git_remote_is_an_error() {
    let context = TestContext::default_recipe_on_indexes();
    let missing = context.path().join("no-such-remote.git");
    let before = deepgemm_from(&context, &format!("file://{}", missing.display()));
    let run = forge(&context, &["pin", "bump", "deepgemm"], &[]).expect_code(2);
    forge_snapshot!(format!("{}{}", run.stdout, run.stderr), context.path(), @r"
        error: cannot look up deepgemm on file://<recipe>/no-such-remote.git; pins.toml was not changed
        caused by: cannot reach the git remote file://<recipe>/no-such-remote.git: failed to resolve path '<recipe>/no-such-remote.git': No such file or directory
        hint: check the pin's `url` and the network (`git ls-remote URL` shows what forge sees)
        ");
    assert_unchanged_saying(
        &run,
        &context,
        &before,
        &[
            "pins.toml was not changed",
            "cannot reach the git remote file://",
            "hint: check the pin's `url`",
        ],
    );
}

/// The remote's repository served over HTTP by `git http-backend`, and its URL there.
fn over_http(remote: &GitRemote) -> (GitHttpServer, String) {
    let server = GitHttpServer::start(remote.folder.path());
    let url = server.url("remote.git");
    (server, url)
}

/// The default recipe, a remote, and its repository served over HTTP with the URL there.
fn recipe_and_remote_over_http() -> (TestContext, GitRemote, GitHttpServer, String) {
    let remote = GitRemote::new();
    let (server, url) = over_http(&remote);
    (
        TestContext::default_recipe_on_indexes(),
        remote,
        server,
        url,
    )
}

/// Panics, saying `what`, unless `server` was sent `request` (method and path) by forge's own
/// HTTP client.
#[track_caller]
fn assert_forge_sent(server: &GitHttpServer, request: &str, what: &str) {
    let sent = format!("{request} (forge/{})", env!("CARGO_PKG_VERSION"));
    let requests = server.requests();
    assert!(requests.contains(&sent), "{what}: {requests:?}");
}

#[test]
fn a_git_pin_over_smart_http_moves_to_the_head_and_resolves_a_short_revision() {
    let (context, remote, server, url) = recipe_and_remote_over_http();
    let before = deepgemm_from(&context, &url);

    // A short revision is not a branch tip: resolving it fetches the branch.
    assert_a_short_revision_resolves(&context, &before, &remote, &[]);
    // Listed and fetched by forge's own HTTP client, not libgit2's.
    assert_forge_sent(
        &server,
        "GET /remote.git/info/refs?service=git-upload-pack",
        "the refs are listed over HTTP",
    );
    assert_forge_sent(
        &server,
        "POST /remote.git/git-upload-pack",
        "the branch is fetched over HTTP",
    );

    // The branch head is read from the listing alone.
    forge(&context, &["pin", "bump", "deepgemm"], &[]).expect_code(0);
    assert_deepgemm_at(&context, &before, &remote.head);
}

#[test]
fn a_series_onto_a_git_remote_over_http_is_fetched_and_checked() {
    let (context, remote) = with_a_deepgemm_series(&[TUNE_THE_KERNEL]);
    let (server, url) = over_http(&remote);
    let served = context.read("pins.toml").replace(&remote.url(), &url);
    context.write("pins.toml", &served);

    // The series conflicts with the new head: seen only if both revisions were fetched.
    let run = forge(&context, &["pin", "bump", "deepgemm"], &[]).expect_code(1);
    assert_unchanged_saying(
        &run,
        &context,
        &served,
        &["Conflicts 0001-tune-the-kernel.patch (kernel.txt"],
    );
    assert_forge_sent(
        &server,
        "POST /remote.git/git-upload-pack",
        "the patch target is fetched over HTTP by forge",
    );
}

#[test]
fn a_git_pin_over_https_is_verified_against_the_trust_store_and_a_stranger_is_refused() {
    let (context, remote, server, url) = recipe_and_remote_over_http();
    let certificates = Certificates::make();
    let address = url
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
        .expect("an http URL");
    let terminator = TlsTerminator::start(&certificates, address, false);
    let served = format!("https://127.0.0.1:{}/remote.git", terminator.port());
    let before = deepgemm_from(&context, &served);

    // A CA the machine does not trust: the server is refused before any git is spoken.
    let stranger = certificates.file("other-ca.pem");
    let run = forge(
        &context,
        &["pin", "bump", "deepgemm"],
        &[("SSL_CERT_FILE", stranger.to_str().unwrap())],
    )
    .expect_code(2);
    let unreachable = format!("cannot reach the git remote {served}");
    assert_unchanged_saying(&run, &context, &before, &[&unreachable, "certificate"]);
    assert!(server.requests().is_empty(), "{:?}", server.requests());

    // Trusted: listed and fetched through TLS.
    let ca = certificates.file("ca.pem");
    let env = [("SSL_CERT_FILE", ca.to_str().unwrap())];
    assert_a_short_revision_resolves(&context, &before, &remote, &env);
    assert_forge_sent(
        &server,
        "POST /remote.git/git-upload-pack",
        "fetched through TLS",
    );
}

#[test]
fn an_http_git_remote_that_is_missing_or_not_git_names_the_url_and_what_it_answered() {
    let (context, remote, server, _) = recipe_and_remote_over_http();
    let missing = server.url("no-such.git");
    let before = deepgemm_from(&context, &missing);
    let run = forge(&context, &["pin", "bump", "deepgemm"], &[]).expect_code(2);
    forge_snapshot!(format!("{}{}", run.stdout, run.stderr), context.path(), @r"
        error: cannot look up deepgemm on http://127.0.0.1:<port>/no-such.git; pins.toml was not changed
        caused by: cannot reach the git remote http://127.0.0.1:<port>/no-such.git: http://127.0.0.1:<port>/no-such.git/info/refs?service=git-upload-pack answered HTTP 404 Not Found
        hint: check the pin's `url` and the network (`git ls-remote URL` shows what forge sees)
        ");
    let answered = format!(
        "cannot reach the git remote {missing}: {missing}/info/refs?service=git-upload-pack answered HTTP 404"
    );
    assert_unchanged_saying(&run, &context, &before, &[&answered]);

    // A plain web server holding the repository (git's "dumb" protocol, which forge does not
    // speak): its files are not taken for a smart server's ref listing.
    git(
        &remote.folder.path().join("remote.git"),
        &["update-server-info"],
    );
    let web = StaticWebServer::start(remote.folder.path());
    let dumb = format!("http://{}/remote.git", web.address);
    context.write("pins.toml", &before.replace(&missing, &dumb));
    let run = forge(&context, &["pin", "bump", "deepgemm"], &[]).expect_code(2);
    forge_snapshot!(format!("{}{}", run.stdout, run.stderr), context.path(), @r"
        error: cannot look up deepgemm on http://127.0.0.1:<port>/remote.git; pins.toml was not changed
        caused by: cannot reach the git remote http://127.0.0.1:<port>/remote.git: http://127.0.0.1:<port>/remote.git/info/refs?service=git-upload-pack is not a git smart HTTP server (content type `application/octet-stream`, expected `application/x-git-upload-pack-advertisement`)
        hint: check the pin's `url` and the network (`git ls-remote URL` shows what forge sees)
        ");
    let unreachable = format!("cannot reach the git remote {dumb}");
    assert_unchanged_saying(
        &run,
        &context,
        &before.replace(&missing, &dumb),
        &[&unreachable, "is not a git smart HTTP server"],
    );
}

/// Python's `http.server` serving a folder's files as they are, on a free loopback port;
/// stopped when dropped.
struct StaticWebServer {
    address: String,
    process: std::process::Child,
    _log: tempfile::NamedTempFile,
}

impl StaticWebServer {
    fn start(folder: &Path) -> Self {
        let port = free_port();
        let log = tempfile::NamedTempFile::new().expect("a log file");
        let mut process = Command::new("python3")
            .args([
                "-m",
                "http.server",
                "--bind",
                "127.0.0.1",
                &port.to_string(),
            ])
            .current_dir(folder)
            .stdout(std::process::Stdio::null())
            .stderr(log.reopen().expect("the log file"))
            .spawn()
            .expect("python3 -m http.server starts");
        wait_for_port(port, &mut process, log.path(), "python3 -m http.server");
        Self {
            address: format!("127.0.0.1:{port}"),
            process,
            _log: log,
        }
    }
}

impl Drop for StaticWebServer {
    fn drop(&mut self) {
        stop(&mut self.process);
    }
}
