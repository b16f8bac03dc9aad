//! `.dockerignore` against its oracle: a real `docker build`. A seeded generator makes folders
//! of files and `.dockerignore` texts (negations, classes, `**`, leading `/`, `.` and `..`,
//! escapes, comments, trailing spaces); the docker CLI sends each folder to the daemon, which
//! copies it into a busybox image whose files are listed; forge's context must hold exactly the
//! same paths under the overlay folder.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use crate::support::image_guard::{ImageGuard, LABEL};
use crate::support::images::{base_image, docker_available, ensure_base_image};
use crate::support::{Rng, TestContext};

/// The overlay folder every generated recipe copies.
const OVERLAY: &str = "overlays/app";

/// Names files and folders are made of: near misses of one another, so that patterns hit some
/// and miss others. None looks like a secret.
const NAMES: &[&str] = &[
    "a", "b", "ab", "a.md", "keep.md", "x1", "x!", "xa", "docs", "sub", ".hidden", "target",
    ".git", "foo", "barfoo", "n-1", "a b",
];

/// One path component of a pattern.
fn component(generator: &mut Rng) -> String {
    let name = *generator.pick(NAMES);
    match generator.below(20) {
        0..=7 => name.to_owned(),
        8 => format!("{}*", &name[..name.len().min(1)]),
        9 => "*.md".to_owned(),
        10 => {
            let mut chars: Vec<char> = name.chars().collect();
            let at = generator.below(chars.len());
            chars[at] = '?';
            chars.into_iter().collect()
        }
        11 => generator
            .pick(&["x[!0-9]", "x[0-9]", "x[^0-9]", "[ab]", "[a-c]*", "x[!a]"])
            .to_string(),
        12 | 13 => "**".to_owned(),
        14 | 15 => "*".to_owned(),
        16 => generator
            .pick(&["a\\.md", "x\\!", "a\\ b", "n\\-1"])
            .to_string(),
        17 => format!("**{}", *generator.pick(&["foo", ".md", "a"])),
        _ => format!("{name}**"),
    }
}

/// One `.dockerignore` line.
fn pattern(generator: &mut Rng) -> String {
    let depth = 1 + generator.below(3);
    let rest: Vec<String> = (0..depth).map(|_| component(generator)).collect();
    let rest = rest.join("/");
    let body = match generator.below(20) {
        0..=8 => format!("{OVERLAY}/{rest}"),
        9..=11 => format!("**/{rest}"),
        12 => format!("/{OVERLAY}/{rest}"),
        13 => format!("./{OVERLAY}/{rest}"),
        14 => format!("{OVERLAY}/sub/../{rest}"),
        15 => format!("overlays/*/{rest}"),
        16 => format!("{OVERLAY}//{rest}/."),
        17 => "overlays".to_owned(),
        18 => OVERLAY.to_owned(),
        _ => rest,
    };
    let body = match generator.below(10) {
        0 => format!("{body}/"),
        1 => format!("{body}   "),
        2 => format!("  {body}"),
        _ => body,
    };
    if generator.chance(35) {
        format!("!{body}")
    } else {
        body
    }
}

/// A `.dockerignore` text: patterns with comments and blank lines among them.
fn ignore_file(generator: &mut Rng) -> String {
    let mut lines = Vec::new();
    for _ in 0..4 + generator.below(6) {
        match generator.below(12) {
            0 => lines.push("# a comment".to_owned()),
            1 => lines.push(String::new()),
            _ => lines.push(pattern(generator)),
        }
    }
    lines.join("\n") + "\n"
}

/// Files (and a few empty folders) under the overlay folder; the files' context paths.
fn tree(generator: &mut Rng, root: &Path) -> BTreeSet<String> {
    let mut files: BTreeSet<String> = BTreeSet::new();
    let mut folders: BTreeSet<String> = BTreeSet::new();
    let mut made = 0;
    while made < 40 {
        let depth = 1 + generator.below(4);
        let parts: Vec<&str> = (0..depth).map(|_| *generator.pick(NAMES)).collect();
        let path = parts.join("/");
        let parents: Vec<String> = (1..depth).map(|end| parts[..end].join("/")).collect();
        if files.contains(&path)
            || folders.contains(&path)
            || parents.iter().any(|parent| files.contains(parent))
        {
            continue;
        }
        folders.extend(parents);
        let full = root.join(OVERLAY).join(&path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        if generator.chance(8) {
            std::fs::create_dir_all(&full).unwrap();
            folders.insert(path);
        } else {
            std::fs::write(&full, format!("{path}\n")).unwrap();
            files.insert(path);
        }
        made += 1;
    }
    files
        .into_iter()
        .map(|path| format!("{OVERLAY}/{path}"))
        .collect()
}

/// A recipe that copies the overlay folder, with `ignore` as its `.dockerignore`.
fn recipe(generator: &mut Rng, ignore: &str) -> (TestContext, BTreeSet<String>) {
    let context = TestContext::empty();
    context.write(
        "pins.toml",
        &format!(
            "[image]\nrepository = \"forge-test/dockerignore\"\nplatform = \"linux/amd64\"\n\
             [image.tags]\nmoving = [\"latest\"]\n\
             [base]\nimage = \"{}\"\n\
             [[overlays]]\nfrom = \"{OVERLAY}\"\nto = \"/opt/app/\"\n",
            base_image()
        ),
    );
    context.write(
        "templates/Dockerfile.j2",
        "FROM {{ base.reference }}\n{% for overlay in overlays %}COPY {{ overlay.from }}/ {{ overlay.to }}\n{% endfor %}",
    );
    let files = tree(generator, context.path());
    context.write(".dockerignore", ignore);
    (context, files)
}

/// The paths at or under the overlay folder in forge's context.
fn forge_paths(context: &TestContext) -> BTreeSet<String> {
    let mut reader = crate::support::dry_run_context(context);
    reader
        .entries()
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            let path = entry.path().unwrap().to_string_lossy().into_owned();
            path.trim_end_matches('/').to_owned()
        })
        .filter(|path| under_overlay(path))
        .collect()
}

fn under_overlay(path: &str) -> bool {
    path == OVERLAY || path.starts_with(&format!("{OVERLAY}/"))
}

/// The paths at or under the overlay folder that `docker build` of the recipe folder copies.
fn docker_paths(context: &TestContext, guard: &str) -> BTreeSet<String> {
    let folder = tempfile::tempdir().unwrap();
    let dockerfile = folder.path().join("Dockerfile");
    std::fs::write(&dockerfile, format!("FROM {}\nCOPY . /ctx\n", base_image())).unwrap();
    // The classic builder: the docker CLI itself reads .dockerignore and sends what is left.
    // No cache: a cached step is an image another test's clean-up may remove under the build.
    let built = Command::new("docker")
        .env("DOCKER_BUILDKIT", "0")
        .args(["build", "--quiet", "--no-cache", "--force-rm", "--label"])
        .arg(format!("{LABEL}={guard}"))
        .arg("--file")
        .arg(&dockerfile)
        .arg(context.path())
        .output()
        .expect("docker runs");
    assert!(
        built.status.success(),
        "docker build failed:\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let image = String::from_utf8(built.stdout).unwrap().trim().to_owned();
    let listed = Command::new("docker")
        .args(["run", "--rm", "--network", "none", &image, "find", "/ctx"])
        .output()
        .expect("docker runs");
    assert!(
        listed.status.success(),
        "find failed:\n{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    String::from_utf8(listed.stdout)
        .unwrap()
        .lines()
        .filter_map(|line| line.strip_prefix("/ctx/"))
        .filter(|path| under_overlay(path))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_context_holds_what_docker_build_sends() {
    if !docker_available() {
        return;
    }
    ensure_base_image();
    let guard = format!("dockerignore-{}", std::process::id());
    let _images = ImageGuard::new(&guard);
    let mut generator = Rng(0x00c0_ffee_d0c4_e215);
    let (mut kept, mut dropped) = (0, 0);
    for batch in 0..10 {
        let ignore = ignore_file(&mut generator);
        let (context, files) = recipe(&mut generator, &ignore);
        let forge = forge_paths(&context);
        let docker = docker_paths(&context, &guard);
        let only_forge: Vec<&String> = forge.difference(&docker).collect();
        let only_docker: Vec<&String> = docker.difference(&forge).collect();
        assert!(
            only_forge.is_empty() && only_docker.is_empty(),
            "batch {batch}: forge and docker differ\n.dockerignore:\n{ignore}\nonly in forge's context: {only_forge:?}\nonly in docker's: {only_docker:?}"
        );
        let sent = files.intersection(&docker).count();
        kept += sent;
        dropped += files.len() - sent;
    }
    // A few hundred files decided, both ways.
    assert!(
        kept + dropped >= 300,
        "{kept} files kept, {dropped} dropped"
    );
    assert!(
        kept >= 50 && dropped >= 50,
        "{kept} files kept, {dropped} dropped"
    );
}
