//! What goes into the build context: only the recipe. Every recipe path forge reads resolves
//! inside the recipe folder, special files are refused before anything reads them, a
//! secret-looking file refuses the build unless `.dockerignore` excludes it or pins.toml allows
//! it, and nothing else is dropped that `docker build` would send.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::time::Duration;

use crate::support::fifo;
use crate::support::images::copy_example;
use crate::support::snapshot::forge_snapshot;
use crate::support::{Run, TestContext, assert_contains};

/// What one entry of the context archive is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    File(Vec<u8>),
    Folder,
    Link(String),
}

/// A copy of the offline example, whose overlay `overlays/app` a patch series patches.
fn example() -> TestContext {
    let context = TestContext::empty();
    copy_example(context.path());
    context
}

/// A folder outside the recipe holding `host.txt`, which must never reach a context or an
/// output.
fn outside() -> tempfile::TempDir {
    let folder = tempfile::tempdir().unwrap();
    std::fs::write(folder.path().join("host.txt"), "HOST-ONLY\n").unwrap();
    folder
}

/// The context `build --dry-run` assembles, entry by entry.
fn context_entries(context: &TestContext) -> BTreeMap<String, Entry> {
    let mut entries = BTreeMap::new();
    let mut reader = crate::support::dry_run_context(context);
    for entry in reader.entries().unwrap() {
        let mut entry = entry.unwrap();
        let path = entry.path().unwrap().to_string_lossy().into_owned();
        let path = path.trim_end_matches('/').to_owned();
        let kind = match entry.header().entry_type() {
            tar::EntryType::Directory => Entry::Folder,
            tar::EntryType::Symlink => Entry::Link(
                entry
                    .link_name()
                    .unwrap()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
            ),
            _ => {
                let mut bytes = Vec::new();
                entry.read_to_end(&mut bytes).unwrap();
                Entry::File(bytes)
            }
        };
        entries.insert(path, kind);
    }
    entries
}

/// Replaces the file or folder at `relative` with a symbolic link to `target`.
fn link(context: &TestContext, relative: &str, target: &Path) {
    let path = context.path().join(relative);
    if path.is_dir() {
        std::fs::remove_dir_all(&path).unwrap();
    } else if path.symlink_metadata().is_ok() {
        std::fs::remove_file(&path).unwrap();
    }
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    symlink(target, &path).unwrap();
}

/// The first patch of the example's series.
const FIRST_PATCH: &str = "patches/app/0001-app-ship-in-release-mode.patch";

/// Adds `{% include name %}` to the end of the example's template.
fn include(context: &TestContext, name: &str) {
    let template = context.read("templates/Dockerfile.j2");
    context.write(
        "templates/Dockerfile.j2",
        &format!("{template}{{% include \"{name}\" %}}\n"),
    );
}

/// Links a recipe path of `context` to a copy in the folder outside it.
type Setup = fn(&TestContext, &Path);

/// A case: what it links out of the recipe, and the command.
type LinkOut = (&'static str, Setup, &'static [&'static str]);

/// Each case, in two halves.
fn links_out_of_the_recipe() -> Vec<LinkOut> {
    [folders_linked_out(), files_linked_out()].concat()
}

/// The overlay's folders and an included template, linked out of the recipe.
fn folders_linked_out() -> Vec<LinkOut> {
    vec![
        (
            "a folder on the overlay's path",
            |context, outside| {
                let moved = outside.join("overlays");
                std::fs::rename(context.path().join("overlays"), &moved).unwrap();
                std::fs::write(moved.join("app/host.txt"), "HOST-ONLY\n").unwrap();
                link(context, "overlays", &moved);
            },
            &["build", "--dry-run"],
        ),
        (
            "the overlay folder itself",
            |context, outside| {
                let moved = outside.join("app");
                std::fs::rename(context.path().join("overlays/app"), &moved).unwrap();
                std::fs::write(moved.join("host.txt"), "HOST-ONLY\n").unwrap();
                link(context, "overlays/app", &moved);
            },
            &["build", "--dry-run"],
        ),
        (
            "a template the Dockerfile template includes",
            |context, outside| {
                link(context, "templates/host.j2", &outside.join("host.txt"));
                include(context, "host.j2");
            },
            &["render"],
        ),
    ]
}

/// The Dockerfile template, `.dockerignore`, a patch, the series folder and pins.toml, linked
/// out of the recipe.
fn files_linked_out() -> Vec<LinkOut> {
    vec![
        (
            "the Dockerfile template",
            |context, outside| {
                let moved = outside.join("Dockerfile.j2");
                std::fs::copy(context.path().join("templates/Dockerfile.j2"), &moved).unwrap();
                link(context, "templates/Dockerfile.j2", &moved);
            },
            &["render"],
        ),
        (
            ".dockerignore",
            |context, outside| {
                std::fs::write(outside.join("ignore"), "*.md\n").unwrap();
                link(context, ".dockerignore", &outside.join("ignore"));
            },
            &["build", "--dry-run"],
        ),
        (
            "a patch of the series",
            |context, outside| {
                let moved = outside.join("0001.patch");
                std::fs::copy(context.path().join(FIRST_PATCH), &moved).unwrap();
                link(context, FIRST_PATCH, &moved);
            },
            &["build", "--dry-run"],
        ),
        (
            "the series folder",
            |context, outside| {
                let moved = outside.join("series");
                std::fs::rename(context.path().join("patches/app"), &moved).unwrap();
                link(context, "patches/app", &moved);
            },
            &["patch", "check"],
        ),
        (
            "pins.toml",
            |context, outside| {
                let moved = outside.join("pins.toml");
                std::fs::copy(context.path().join("pins.toml"), &moved).unwrap();
                link(context, "pins.toml", &moved);
            },
            &["render"],
        ),
    ]
}

#[test]
fn every_recipe_path_forge_reads_resolves_inside_the_recipe() {
    let mut refusals = String::new();
    for (what, setup, args) in links_out_of_the_recipe() {
        let context = example();
        let outside = outside();
        setup(&context, outside.path());
        let run = context.forge(args);
        assert_eq!(
            run.code, 2,
            "{what}: forge exited {} (wanted 2)\n{}{}",
            run.code, run.stdout, run.stderr
        );
        // The message says where the path leads.
        let said = run
            .stderr
            .replace(outside.path().to_str().unwrap(), "<outside>");
        refusals.push_str(&format!("{what}:\n{said}"));
        assert!(
            !run.stdout.contains("HOST-ONLY") && !run.stderr.contains("HOST-ONLY"),
            "{what}: a host file's content was printed\n{}{}",
            run.stdout,
            run.stderr
        );
    }
    forge_snapshot!("links_out_of_the_recipe", refusals, "");
}

#[test]
fn links_inside_the_recipe_are_kept_as_links_or_followed_as_docker_would() {
    let context = example();
    // Inside the (patched) overlay: links to a file and a folder beside them, and an absolute
    // link that means something only in the image. docker sends each as a link.
    symlink("greet.sh", context.path().join("overlays/app/hello.sh")).unwrap();
    symlink("conf", context.path().join("overlays/app/settings")).unwrap();
    symlink(
        "/usr/bin/python3",
        context.path().join("overlays/app/python"),
    )
    .unwrap();
    // A second overlay that is itself a link to a folder inside the recipe: COPY follows it,
    // so its files go in at the overlay's path.
    context.write("shared/tools/tool.sh", "echo tool\n");
    symlink("../shared/tools", context.path().join("overlays/tools")).unwrap();
    let pins = context.read("pins.toml");
    context.write(
        "pins.toml",
        &format!("{pins}\n[[overlays]]\nfrom = \"overlays/tools\"\nto = \"/opt/tools/\"\n"),
    );
    // A template included through a link that stays inside the recipe.
    context.write("shared/part.j2", "# a shared part\n");
    symlink(
        "../shared/part.j2",
        context.path().join("templates/part.j2"),
    )
    .unwrap();
    include(&context, "part.j2");

    let entries = context_entries(&context);
    let link = |target: &str| Some(Entry::Link(target.to_owned()));
    assert_eq!(
        entries.get("overlays/app/hello.sh").cloned(),
        link("greet.sh")
    );
    assert_eq!(entries.get("overlays/app/settings").cloned(), link("conf"));
    assert_eq!(
        entries.get("overlays/app/python").cloned(),
        link("/usr/bin/python3")
    );
    assert_eq!(entries.get("overlays/tools").cloned(), Some(Entry::Folder));
    assert_eq!(
        entries.get("overlays/tools/tool.sh").cloned(),
        Some(Entry::File(b"echo tool\n".to_vec()))
    );
    let dockerfile = match entries.get("Dockerfile") {
        Some(Entry::File(bytes)) => String::from_utf8(bytes.clone()).unwrap(),
        other => panic!("no Dockerfile: {other:?}"),
    };
    assert_contains(&dockerfile, "# a shared part");
}

/// The secret-looking files the build refuses, by their path in the context.
const SECRETS: &[&str] = &[
    "overlays/app/id_ed25519",
    "overlays/app/id_ecdsa",
    "overlays/app/id_rsa",
    "overlays/app/.ssh/config",
    "overlays/app/.env",
    "overlays/app/.env.local",
    "overlays/app/.netrc",
    "overlays/app/.git-credentials",
    "overlays/app/tls/client.p12",
    "overlays/app/tls/server.pem",
    "overlays/app/tls/server.key",
];

#[test]
fn a_secret_looking_file_refuses_the_build_until_ignored_or_allowed_by_name() {
    let context = example();
    for secret in SECRETS {
        context.write(secret, "not for the daemon\n");
    }
    let run = context.forge(&["build", "--dry-run"]).expect_code(1);
    // Nothing was assembled: the refusal comes before the archive.
    forge_snapshot!("secrets_refused", run.stderr, context.path());

    // Ignored ones stay out; allowed ones go in; then the build goes ahead.
    context.write(".dockerignore", "overlays/app/.ssh\n**/*.pem\n**/.env*\n");
    let allowed = [
        "overlays/app/id_ed25519",
        "overlays/app/id_ecdsa",
        "overlays/app/id_rsa",
        "overlays/app/.netrc",
        "overlays/app/.git-credentials",
        "overlays/app/tls/client.p12",
    ];
    let listed: Vec<String> = allowed.iter().map(|path| format!("\"{path}\"")).collect();
    let pins = context.read("pins.toml");
    context.write(
        "pins.toml",
        &format!(
            "{pins}\n[context]\nallow_secrets = [{}]\n",
            listed.join(", ")
        ),
    );
    // One secret left: still refused, and only it is listed.
    let run = context.forge(&["build", "--dry-run"]).expect_code(1);
    forge_snapshot!(run.stderr, context.path(), @r#"
        Rendered Dockerfile sha256:<digest>
         Patched patches/app onto overlays/app (scratch repository) (2 applied, 0 already there)
    error: the build context would hold a file that looks like a secret: overlays/app/tls/server.key
    hint: exclude it in .dockerignore, or allow it by name in pins.toml: [context] allow_secrets = ["overlays/app/tls/server.key"]
    "#);
    context.write(
        ".dockerignore",
        "overlays/app/.ssh\n**/*.pem\n**/.env*\n*/*/tls/*.key\n",
    );
    let entries = context_entries(&context);
    for path in allowed {
        assert!(entries.contains_key(path), "{path} is missing");
    }
    for path in [
        "overlays/app/.ssh",
        "overlays/app/.env",
        "overlays/app/.env.local",
        "overlays/app/tls/server.pem",
        "overlays/app/tls/server.key",
    ] {
        assert!(!entries.contains_key(path), "{path} went in");
    }
}

#[test]
fn allow_secrets_is_checked_when_pins_toml_is_loaded() {
    let mut refusals = String::new();
    for entry in ["../id_rsa", "/etc/ssl/key.pem", "overlays/app/notes.txt"] {
        let context = example();
        let pins = context.read("pins.toml");
        context.write(
            "pins.toml",
            &format!("{pins}\n[context]\nallow_secrets = [\"{entry}\"]\n"),
        );
        let run = context.forge(&["render"]).expect_code(2);
        refusals.push_str(&run.stderr);
    }
    forge_snapshot!(refusals, "", @r#"
    error: pins.toml:43:17: invalid context path "../id_rsa": expected the path of a file in the build context, relative to the recipe folder ('/'-separated; no '.', '..' or empty components)
    hint: values that reach the Dockerfile must match their grammar exactly; nothing was rendered
    error: pins.toml:43:17: invalid context path "/etc/ssl/key.pem": expected the path of a file in the build context, relative to the recipe folder ('/'-separated; no '.', '..' or empty components)
    hint: values that reach the Dockerfile must match their grammar exactly; nothing was rendered
    error: pins.toml:43:18: `overlays/app/notes.txt` does not look like a secret
    hint: allow_secrets names only secret-looking files the build would otherwise refuse; remove it (docs/template-and-context.md lists what looks like a secret)
    "#);
}

#[test]
fn nothing_is_dropped_that_docker_would_send() {
    let context = example();
    // In the patched overlay and in one that is not patched.
    for folder in ["overlays/app", "overlays/plain"] {
        context.write(&format!("{folder}/target/debug/build.txt"), "output\n");
        context.write(&format!("{folder}/.git/HEAD"), "ref: refs/heads/main\n");
        context.write(&format!("{folder}/keys.py"), "KEYS = []\n");
        context.write(&format!("{folder}/deploy.keystore.txt"), "a note\n");
        std::fs::create_dir_all(context.path().join(folder).join("empty")).unwrap();
    }
    let pins = context.read("pins.toml");
    context.write(
        "pins.toml",
        &format!("{pins}\n[[overlays]]\nfrom = \"overlays/plain\"\nto = \"/opt/plain/\"\n"),
    );
    let entries = context_entries(&context);
    for folder in ["overlays/app", "overlays/plain"] {
        for path in [
            "target/debug/build.txt",
            ".git/HEAD",
            "keys.py",
            "deploy.keystore.txt",
        ] {
            let path = format!("{folder}/{path}");
            assert!(
                matches!(entries.get(&path), Some(Entry::File(_))),
                "{path} was dropped"
            );
        }
        let empty = format!("{folder}/empty");
        assert_eq!(entries.get(&empty), Some(&Entry::Folder), "{empty}");
    }
}

/// `args` in `context`, which must end within a minute with exit 2: what it said.
#[track_caller]
fn refused_in_time(what: &str, context: &TestContext, args: &[&str]) -> String {
    let Some(run): Option<Run> = context.forge_bounded(args, Duration::from_secs(60)) else {
        panic!("{what}: forge {args:?} was still running after a minute");
    };
    assert_eq!(
        run.code, 2,
        "{what}: forge exited {} (wanted 2)\n{}{}",
        run.code, run.stdout, run.stderr
    );
    run.stderr
}

#[test]
fn special_files_in_the_recipe_are_refused_before_anything_reads_them() {
    let plain_overlay = |context: &TestContext| {
        std::fs::create_dir_all(context.path().join("overlays/plain")).unwrap();
        let pins = context.read("pins.toml");
        context.write(
            "pins.toml",
            &format!("{pins}\n[[overlays]]\nfrom = \"overlays/plain\"\nto = \"/opt/plain/\"\n"),
        );
    };
    type Setup = fn(&TestContext);
    let cases: [(&str, Setup, &[&str]); 8] = [
        (
            "a FIFO in the patched overlay",
            |context| fifo(&context.path().join("overlays/app/conf/pipe")),
            &["build", "--dry-run"],
        ),
        (
            "a FIFO in an overlay no series patches",
            |context| fifo(&context.path().join("overlays/plain/pipe")),
            &["build", "--dry-run"],
        ),
        (
            "a socket in an overlay",
            |context| {
                let path = context.path().join("overlays/plain/control.sock");
                drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
            },
            &["build", "--dry-run"],
        ),
        (
            "a FIFO in the patch series",
            |context| fifo(&context.path().join("patches/app/0003-pipe.patch")),
            &["build", "--dry-run"],
        ),
        (
            "a FIFO as the Dockerfile template",
            |context| fifo(&context.path().join("templates/Dockerfile.j2")),
            &["render"],
        ),
        (
            "a FIFO as .dockerignore",
            |context| fifo(&context.path().join(".dockerignore")),
            &["build", "--dry-run"],
        ),
        (
            "a FIFO as pins.toml",
            |context| fifo(&context.path().join("pins.toml")),
            &["render"],
        ),
        (
            "a character device reached through a template link",
            |context| {
                link(context, "templates/zero.j2", Path::new("/dev/zero"));
                include(context, "zero.j2");
            },
            &["render"],
        ),
    ];
    let mut refusals = String::new();
    for (what, setup, args) in cases {
        let context = example();
        plain_overlay(&context);
        setup(&context);
        let said = refused_in_time(what, &context, args);
        refusals.push_str(&format!("{what}:\n{said}"));
    }
    forge_snapshot!("special_files_refused", refusals, "");
}
