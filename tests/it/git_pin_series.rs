//! A patch series onto a git pin, through the real `forge build` and a real `docker build`.
//!
//! forge applies the series to the pin's commit and puts the patches it applied in the context;
//! the recipe's build step copies them into the image and applies them with `git apply`, in name
//! order, onto the pin's upstream files at that commit. The build cannot clone (no network, and
//! the file:// remote is not visible inside it), so the upstream files come from the recipe: an
//! overlay holding `git archive` of the commit. The base image is busybox and the host's git.
//! What the image holds is compared with `git am` of the same series on the host.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::Path;
use std::process::Command;

use crate::support::git::{GitRemote, git};
use crate::support::image_guard::ImageGuard;
use crate::support::images::{build_in, daemon_platform, docker_available};
use crate::support::{Run, TestContext, stdout_of};

/// The git pin's name.
const PIN: &str = "kernel";
/// The series folder of the recipe.
const SERIES: &str = "patches/kernel";
/// The recipe folder holding the pin's upstream files.
const UPSTREAM: &str = "upstream/kernel";
/// Where the image holds the upstream files, as the overlay copies them.
const UPSTREAM_IN_IMAGE: &str = "/opt/forge/upstream/kernel/";
/// Where the build step leaves the patched tree.
const PATCHED_IN_IMAGE: &str = "/opt/kernel";
/// Who wrote the series: someone other than the committer the tests' `git` uses.
const AUTHOR: &str = "Grace Hopper <grace@example.org>";

/// A series entry: the commit's subject and the files it writes (path, content).
type Commit<'a> = (&'a str, &'a [(&'a str, &'a str)]);

/// A recipe on the git image whose pin is a commit of a bare file:// remote of its own, patched
/// by a series in `patches/kernel`. Its images are removed when it is dropped.
struct SeriesRecipe {
    context: TestContext,
    remote: GitRemote,
    rev: String,
    cache: tempfile::TempDir,
    repository: String,
    _images: ImageGuard,
}

impl SeriesRecipe {
    /// The recipe for the remote's branch head, with the series `commits` by `AUTHOR` made from
    /// the remote's commit `base` (the head itself, or an older commit).
    fn new(name: &str, base: impl Fn(&GitRemote) -> String, commits: &[Commit]) -> Self {
        let remote = GitRemote::new();
        let rev = remote.head.clone();
        let repository = format!("forge-test/{name}-{}", std::process::id());
        let images = ImageGuard::new(&repository);
        let context = TestContext::empty();
        remote.series_by(
            Some(AUTHOR),
            &base(&remote),
            commits,
            &context.path().join(SERIES),
        );
        unpack(&archive_of(&remote, &rev), &context.path().join(UPSTREAM));
        let url = remote.url();
        context.write(
            "pins.toml",
            &format!(
                "[image]\nrepository = \"{repository}\"\ndate = \"2026-07-08\"\nplatform = \"{platform}\"\n\n\
                 [image.tags]\nmoving = [\"latest\"]\n\n\
                 [image.labels]\n{label}\n\n\
                 [base]\nimage = \"{base}\"\n\n\
                 [pins.{PIN}]\nkind = \"git\"\nurl = \"{url}\"\nbranch = \"nv_dev\"\nrev = \"{rev}\"\n\
                 module = \"{PIN}\"             # required; the image has no Python to run its gate\n\n\
                 [[patches]]\nseries = \"{SERIES}\"\nonto = {{ git = \"{url}\", rev = \"{rev}\" }}\n\n\
                 [[overlays]]\nfrom = \"{UPSTREAM}\"\nto = \"{UPSTREAM_IN_IMAGE}\"\n",
                platform = daemon_platform(),
                label = images.label_entry(),
                base = crate::support::git_image::ensure(),
            ),
        );
        context.write("templates/Dockerfile.j2", &template());
        Self {
            context,
            remote,
            rev,
            cache: tempfile::tempdir().unwrap(),
            repository,
            _images: images,
        }
    }

    /// `forge --json build`, with forge's git cache in a folder of this test's.
    fn build(&self) -> Run {
        build_in(
            &self.context,
            &[],
            &[("XDG_CACHE_HOME", self.cache.path().to_str().unwrap())],
        )
    }

    /// The series files of the recipe, in name order.
    fn series_files(&self) -> Vec<String> {
        let mut files: Vec<String> = std::fs::read_dir(self.context.path().join(SERIES))
            .unwrap()
            .map(|entry| entry.unwrap().path().display().to_string())
            .collect();
        files.sort();
        files
    }

    /// The oracle: the files of the pin's commit after `git am` of the series, skipping the
    /// patches git finds already there, as someone doing it by hand would.
    fn git_am(&self) -> BTreeMap<String, Vec<u8>> {
        let folder = tempfile::tempdir().unwrap();
        git(
            folder.path(),
            &["clone", "--quiet", &self.remote.url(), "work"],
        );
        let work = folder.path().join("work");
        git(&work, &["checkout", "--quiet", "--detach", &self.rev]);
        let mut am = vec!["am", "--quiet"];
        let files = self.series_files();
        am.extend(files.iter().map(String::as_str));
        let mut applied = am_step(&work, &am);
        let mut skipped = 0;
        while !applied && skipped < files.len() {
            applied = am_step(&work, &["am", "--quiet", "--skip"]);
            skipped += 1;
        }
        assert!(applied, "git am could not apply the series");
        let mut tree = BTreeMap::new();
        read_tree(&work, &work, &mut tree);
        tree
    }
}

/// The recipe's template: the upstream files from the overlay, then the series copied in and
/// applied onto them with the line the default template's DeepGEMM step uses.
fn template() -> String {
    format!(
        "FROM {{{{ base.reference }}}}\n\n\
         # The pin's upstream files at its commit: the build has no network to clone with.\n\
         {{% for overlay in overlays %}}\n\
         COPY {{{{ overlay.from }}}}/ {{{{ overlay.to }}}}\n\
         RUN {{{{ overlay.gate }}}}\n\
         {{% endfor %}}\n\n\
         # The patches forge applied at the pin's commit, applied again in name order.\n\
         COPY {{{{ pins.{PIN}.series.from }}}}/ {{{{ pins.{PIN}.series.to }}}}\n\
         RUN cp -R {UPSTREAM_IN_IMAGE} {PATCHED_IN_IMAGE} \\\n \
         && find {{{{ pins.{PIN}.series.to }}}} -name '*.patch' -print0 | sort -z | xargs -0 -r git -C {PATCHED_IN_IMAGE} apply\n\n\
         # The recipe's labels, by which the test's images are found and removed.\n\
         LABEL{{% for label in image.labels %}} {{{{ label.name }}}}=\"{{{{ label.value }}}}\"{{% endfor %}}\n"
    )
}

/// One `git am` step in `work`; whether it succeeded.
fn am_step(work: &Path, args: &[&str]) -> bool {
    Command::new("git")
        .env_remove("GIT_DIR")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_WORK_TREE")
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.org"])
        .args(args)
        .current_dir(work)
        .output()
        .expect("git runs")
        .status
        .success()
}

/// `git archive` of `rev` in the remote: its files at that commit, without `.git`.
fn archive_of(remote: &GitRemote, rev: &str) -> Vec<u8> {
    stdout_of(
        Command::new("git")
            .args(["archive", "--format=tar", rev])
            .current_dir(remote.folder.path().join("remote.git")),
    )
}

/// Unpacks the tar `archive` into `into`.
fn unpack(archive: &[u8], into: &Path) {
    std::fs::create_dir_all(into).unwrap();
    tar::Archive::new(archive).unpack(into).unwrap();
}

/// Every file under `folder` but `.git`, by its path relative to `root`, with its bytes.
fn read_tree(root: &Path, folder: &Path, tree: &mut BTreeMap<String, Vec<u8>>) {
    for entry in std::fs::read_dir(folder).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().is_some_and(|name| name == ".git") {
            continue;
        }
        if path.is_dir() {
            read_tree(root, &path, tree);
        } else {
            let relative = path.strip_prefix(root).unwrap().display().to_string();
            tree.insert(relative, std::fs::read(&path).unwrap());
        }
    }
}

/// The regular files under `folder` in `image`, by their path relative to it, with their bytes:
/// the image's busybox `tar` writes the folder to stdout.
fn files_in_image(image: &str, folder: &str) -> BTreeMap<String, Vec<u8>> {
    let tar = stdout_of(
        Command::new("docker")
            .args(["run", "--rm", "--network", "none", image])
            .args(["tar", "-c", "-f", "-", "-C", folder, "."]),
    );
    let mut files = BTreeMap::new();
    let mut archive = tar::Archive::new(tar.as_slice());
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        if entry.header().entry_type() != tar::EntryType::Regular {
            continue;
        }
        let path = entry.path().unwrap().display().to_string();
        let path = path.trim_start_matches("./").to_owned();
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).unwrap();
        files.insert(path, bytes);
    }
    files
}

/// Builds `recipe`; the image's id, checked against the tag it moved, and the build's JSON.
fn built(recipe: &SeriesRecipe) -> (String, serde_json::Value) {
    let json = recipe.build().expect_code(0).json();
    let id = json["image"]["id"].as_str().unwrap().to_owned();
    let tagged = crate::support::images::image_id(&format!("{}:latest", recipe.repository));
    assert_eq!(tagged.as_deref(), Some(id.as_str()));
    (id, json)
}

/// Shows the files as text, for a readable failure.
fn shown(files: &BTreeMap<String, Vec<u8>>) -> BTreeMap<&str, String> {
    files
        .iter()
        .map(|(path, bytes)| (path.as_str(), String::from_utf8_lossy(bytes).into_owned()))
        .collect()
}

#[test]
fn a_series_onto_a_git_pin_is_applied_in_the_image_as_git_am_applies_it() {
    if !docker_available() {
        return;
    }
    // The third patch edits what the first wrote: applied out of order, it would not apply.
    let recipe = SeriesRecipe::new(
        "git-series",
        |remote| remote.head.clone(),
        &[
            (
                "Tune the kernel",
                &[
                    ("kernel.txt", "third, tuned\n"),
                    ("src/tune.cfg", "level = 2\n"),
                ],
            ),
            (
                "Document the tuning",
                &[("docs.txt", "docs\ntuning: level 2\n")],
            ),
            (
                "Retune the kernel",
                &[
                    ("kernel.txt", "third, retuned\n"),
                    ("src/tune.cfg", "level = 3\n"),
                ],
            ),
        ],
    );
    let (id, json) = built(&recipe);
    let patches = json["patches"].as_array().unwrap();
    assert_eq!(patches.len(), 3, "{json:#}");
    for patch in patches {
        assert_eq!(patch["author"], AUTHOR, "{patch}");
        assert!(patch["applied"].is_string(), "{patch}");
    }

    // The mails in the image are those the template applied, named in order, by the author.
    let mails = files_in_image(&id, &format!("/opt/forge/series/{PIN}"));
    let names: Vec<&str> = mails.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "0001-Tune-the-kernel.patch",
            "0002-Document-the-tuning.patch",
            "0003-Retune-the-kernel.patch"
        ]
    );
    for (name, mail) in &mails {
        let mail = String::from_utf8_lossy(mail);
        assert!(
            mail.contains(&format!("\nFrom: {AUTHOR}\n")),
            "{name}:\n{mail}"
        );
    }

    let upstream = files_in_image(&id, UPSTREAM_IN_IMAGE);
    let patched = files_in_image(&id, PATCHED_IN_IMAGE);
    let expected = recipe.git_am();
    assert_ne!(
        shown(&expected),
        shown(&upstream),
        "the series changes nothing"
    );
    assert_eq!(shown(&patched), shown(&expected));
    assert_eq!(patched, expected);
}

#[test]
fn a_patch_already_in_the_pins_commit_stays_out_of_the_context_and_the_rest_is_applied() {
    if !docker_available() {
        return;
    }
    // Made from the remote's first commit; its first patch writes docs.txt as the pin's commit
    // (the branch head) already has it.
    let recipe = SeriesRecipe::new(
        "git-series-upstream",
        |remote| remote.first.clone(),
        &[
            ("Add docs", &[("docs.txt", "docs\n")]),
            ("Revise the docs", &[("docs.txt", "docs, revised\n")]),
            ("Add notes", &[("notes/readme.txt", "notes\n")]),
        ],
    );
    let upstream_docs =
        std::fs::read_to_string(recipe.context.path().join(UPSTREAM).join("docs.txt"));
    assert_eq!(upstream_docs.unwrap(), "docs\n");
    let (id, json) = built(&recipe);
    let applied: Vec<(&str, bool)> = json["patches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|patch| {
            (
                patch["subject"].as_str().unwrap(),
                patch["applied"].is_string(),
            )
        })
        .collect();
    assert_eq!(
        applied,
        [
            ("Add docs", false),
            ("Revise the docs", true),
            ("Add notes", true)
        ]
    );

    // Only the two patches applied reached the image, numbered as applied.
    let mails = files_in_image(&id, &format!("/opt/forge/series/{PIN}"));
    let names: Vec<&str> = mails.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        ["0001-Revise-the-docs.patch", "0002-Add-notes.patch"]
    );

    let patched = files_in_image(&id, PATCHED_IN_IMAGE);
    assert_eq!(shown(&patched), shown(&recipe.git_am()));
}
