//! `forge patch apply|check`, with git itself as the oracle: throwaway repositories whose history
//! holds each case, `git format-patch --binary` for the series, and every commit forge makes
//! compared with the one `git am --keep-cr` makes from the same files on a clone of the same
//! base (tree, author name, email, date and offset, message). The generated cases and real
//! histories are in `patch_differential`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::snapshot::forge_snapshot;
use crate::support::{Run, TestContext, env_refs, format_patch_args, git_in, patch_args};

/// Environment that makes git independent of the machine's configuration.
fn git_environment(home: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("GIT_CONFIG_GLOBAL", "/dev/null".to_owned()),
        ("GIT_CONFIG_NOSYSTEM", "1".to_owned()),
        ("HOME", home.display().to_string()),
        ("XDG_CONFIG_HOME", home.join("config").display().to_string()),
        ("XDG_CACHE_HOME", home.join("cache").display().to_string()),
        ("GIT_AUTHOR_NAME", "Test Author".to_owned()),
        ("GIT_AUTHOR_EMAIL", "author@example.org".to_owned()),
        ("GIT_COMMITTER_NAME", "Test Committer".to_owned()),
        ("GIT_COMMITTER_EMAIL", "committer@example.org".to_owned()),
        ("GIT_AUTHOR_DATE", "2026-01-01T00:00:00+0000".to_owned()),
        ("GIT_COMMITTER_DATE", "2026-01-01T00:00:00+0000".to_owned()),
        ("FORGE_COMMITTER_NAME", "Forge Committer".to_owned()),
        ("FORGE_COMMITTER_EMAIL", "forge@example.org".to_owned()),
    ]
}

/// A folder of throwaway repositories with git and forge run in a fixed environment.
struct Workbench {
    context: TestContext,
}

impl Workbench {
    fn new() -> Self {
        Self {
            context: TestContext::empty(),
        }
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.context.path().join(relative)
    }

    /// Runs git in `folder` (relative to the workbench), with `extra` environment; panics on
    /// failure and returns stdout.
    #[track_caller]
    fn git(&self, folder: &str, args: &[&str], extra: &[(&str, &str)]) -> String {
        let directory = self.path(folder);
        std::fs::create_dir_all(&directory).expect("create folder");
        let environment = git_environment(self.context.path());
        let mut env = env_refs(&environment);
        env.extend_from_slice(extra);
        git_in(&directory, args, &env)
    }

    /// `git`, for a run that may fail: its whole output.
    fn git_output(
        &self,
        folder: &str,
        args: &[&str],
        extra: &[(&str, &str)],
    ) -> std::process::Output {
        let directory = self.path(folder);
        std::fs::create_dir_all(&directory).expect("create folder");
        let mut command = Command::new("git");
        command.args(args).current_dir(&directory);
        for (name, value) in git_environment(self.context.path()) {
            command.env(name, value);
        }
        for (name, value) in extra {
            command.env(name, value);
        }
        command.output().expect("git runs")
    }

    /// Runs `forge args...` in the fixed environment.
    fn forge(&self, args: &[&str]) -> Run {
        self.forge_in(&self.context, args)
    }

    /// Runs `forge args...` on the recipe in `context`, in the fixed environment.
    fn forge_in(&self, context: &TestContext, args: &[&str]) -> Run {
        let environment = git_environment(self.context.path());
        context.forge_with(args, &env_refs(&environment))
    }

    /// Runs `forge patch COMMAND --onto target SERIES...` onto the workbench's `target`, in the
    /// fixed environment.
    fn patch(&self, command: &str, series: &[impl AsRef<Path>]) -> Run {
        let target = self.path("target");
        self.forge(&patch_args(command, &target, series))
    }

    /// `patch`, with `--json`.
    fn patch_json(&self, command: &str, series: &[impl AsRef<Path>]) -> Run {
        let target = self.path("target");
        let mut args = vec!["--json"];
        args.extend(patch_args(command, &target, series));
        self.forge(&args)
    }

    /// The state of the `target` repository, to compare with `assert_unchanged`.
    fn target_snapshot(&self) -> BTreeMap<String, Vec<u8>> {
        snapshot(&self.path("target"))
    }

    /// `git rev-parse HEAD` in the `target` repository.
    fn target_head(&self) -> String {
        self.git("target", &["rev-parse", "HEAD"], &[])
    }

    fn write(&self, relative: &str, bytes: &[u8]) {
        let path = self.path(relative);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("create parents");
        std::fs::write(path, bytes).expect("write");
    }
}

/// A workbench whose origin holds the history (`build_history`) and whose target is a clone
/// at its base; returns the base.
fn bench_with_target() -> (Workbench, String) {
    let bench = Workbench::new();
    let base = build_history(&bench);
    target_at(&bench, &base);
    (bench, base)
}

/// `bench_with_target`, with the history's series in `series`; returns the base and the
/// series' files.
fn bench_with_series() -> (Workbench, String, Vec<PathBuf>) {
    let (bench, base) = bench_with_target();
    let files = format_patch(&bench, &base, "series");
    (bench, base, files)
}

/// A workbench whose target is a repository of one commit holding `a.txt`.
fn bench_with_a_bare_target() -> Workbench {
    let bench = Workbench::new();
    bench.git("target", &["init", "-q", "-b", "main"], &[]);
    bench.write("target/a.txt", b"a\n");
    commit(
        &bench,
        "target",
        ("Base", "base@example.org"),
        "2026-01-01T00:00:00+0000",
        "base\n",
    );
    bench
}

/// Commits with an explicit author and message (stdin-free: the message goes through a file).
fn commit(
    bench: &Workbench,
    repository: &str,
    author: (&str, &str),
    date: &str,
    message: &str,
) -> String {
    let message_file = bench.path("message.txt");
    std::fs::write(&message_file, message).expect("write message");
    bench.git(repository, &["add", "-A"], &[]);
    bench.git(
        repository,
        &[
            "commit",
            "-q",
            "-F",
            message_file.to_str().expect("UTF-8 path"),
        ],
        &[
            ("GIT_AUTHOR_NAME", author.0),
            ("GIT_AUTHOR_EMAIL", author.1),
            ("GIT_AUTHOR_DATE", date),
        ],
    );
    bench
        .git(repository, &["rev-parse", "HEAD"], &[])
        .trim()
        .to_owned()
}

/// What must survive a round trip: tree, author name, email, raw date with offset, message.
fn commit_facts(bench: &Workbench, repository: &str, commit: &str) -> String {
    bench.git(
        repository,
        &[
            "log",
            "-1",
            "--format=tree %T%nauthor %an%nemail %ae%ndate %ad%n%B",
            "--date=raw",
            commit,
        ],
        &[],
    )
}

fn commits_after(bench: &Workbench, repository: &str, base: &str) -> Vec<String> {
    bench
        .git(
            repository,
            &["rev-list", "--reverse", &format!("{base}..HEAD")],
            &[],
        )
        .lines()
        .map(str::to_owned)
        .collect()
}

/// A history holding every case the mbox reader and the replay must carry, on top of `base`.
/// Returns the base commit.
fn build_history(bench: &Workbench) -> String {
    bench.git("origin", &["init", "-q", "-b", "main"], &[]);
    let base_files = write_base_files(bench);
    let base = commit(
        bench,
        "origin",
        ("Base Author", "base@example.org"),
        "2025-12-31T12:00:00+0000",
        "base\n",
    );
    commit_header_and_text_cases(bench);
    commit_file_cases(bench, base_files);
    base
}

/// The contents of the base's files that later commits change by a little.
struct BaseFiles {
    /// `data.bin`.
    binary: Vec<u8>,
    /// `old name.txt`, renamed with an edit.
    renamed: String,
    /// `copy-source.txt`, copied with an edit.
    copied: String,
}

/// Writes the base's files into origin's worktree.
fn write_base_files(bench: &Workbench) -> BaseFiles {
    bench.write(
        "origin/plain.txt",
        b"one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n",
    );
    bench.write("origin/crlf.txt", b"alpha\r\nbeta\r\ngamma\r\n");
    bench.write("origin/no-newline.txt", b"first\nlast without newline");
    let binary: Vec<u8> = (0..40_000u32)
        .map(|index| (index * 7919 % 251) as u8)
        .collect();
    bench.write("origin/data.bin", &binary);
    bench.write("origin/script.sh", b"#!/bin/sh\necho hi\n");
    bench.write("origin/to-delete.txt", b"doomed\n");
    bench.write("origin/lonely/only.txt", b"the only file of its folder\n");
    let renamed: String = (1..=40)
        .map(|line| format!("line {line} of a file that moves\n"))
        .collect();
    bench.write("origin/old name.txt", renamed.as_bytes());
    let copied: String = (1..=40)
        .map(|line| format!("line {line} of a file that is copied\n"))
        .collect();
    bench.write("origin/copy-source.txt", copied.as_bytes());
    std::os::unix::fs::symlink("plain.txt", bench.path("origin/link")).expect("symlink");
    BaseFiles {
        binary,
        renamed,
        copied,
    }
}

/// Commits 1 to 3: what the mail headers and text content must carry.
fn commit_header_and_text_cases(bench: &Workbench) {
    let origin = "origin";
    // 1. RFC 2047 author, a folded subject, a body line that looks like a separator, trailers.
    bench.write(
        "origin/plain.txt",
        b"one\ntwo\nTHREE\nfour\nfive\nsix\nseven\neight\nnine\nten\n",
    );
    commit(
        bench,
        origin,
        ("Jörg Müller", "joerg@example.org"),
        "2026-01-02T03:04:05+0530",
        "a very long subject line that goes on and on and on and on until git folds it onto a second header line\n\n\
         The body explains why.\n--- not a separator\nStill the body.\n\n\
         Signed-off-by: Jörg Müller <joerg@example.org>\nCo-Authored-By: Ada <ada@example.org>\n",
    );
    // 2. A quoted display name with a comma and an accent; a negative offset; CRLF content.
    bench.write("origin/crlf.txt", b"alpha\r\nBETA\r\ngamma\r\n");
    commit(
        bench,
        origin,
        ("O'Brien, Séan", "sean@example.org"),
        "2026-01-03T10:00:00-0800",
        "crlf: keep carriage returns\n",
    );
    // 3. An ASCII name that needs quotes; a file without a trailing newline; [docs] kept.
    bench.write(
        "origin/no-newline.txt",
        b"first\nsecond\nlast without newline still",
    );
    commit(
        bench,
        origin,
        ("O'Brien, Sean", "sean.ascii@example.org"),
        "2026-01-04T00:00:00+1345",
        "[docs] no trailing newline\n",
    );
}

/// Commits 4 to 6: binary changes, and files renamed, copied, re-moded, deleted and linked.
fn commit_file_cases(bench: &Workbench, base: BaseFiles) {
    let origin = "origin";
    // 4. Binary: a new file (literal) and a small change to a large one (delta).
    bench.write("origin/new.bin", &[0u8, 1, 2, 3, 255, 254, 0, 0, 7]);
    let mut binary = base.binary;
    binary[20_000] ^= 0xff;
    bench.write("origin/data.bin", &binary);
    commit(
        bench,
        origin,
        ("Bin Ary", "binary@example.org"),
        "2026-01-05T00:00:00+0000",
        "binary: literal and delta\n",
    );
    // 5. A rename with an edit, a copy with an edit, a mode change, a deletion.
    std::fs::remove_file(bench.path("origin/old name.txt")).expect("remove");
    bench.write(
        "origin/new name.txt",
        base.renamed.replace("line 20 of", "LINE 20 of").as_bytes(),
    );
    bench.write(
        "origin/copy target.txt",
        base.copied.replace("line 5 of", "LINE 5 of").as_bytes(),
    );
    std::fs::set_permissions(
        bench.path("origin/script.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    std::fs::remove_file(bench.path("origin/to-delete.txt")).expect("remove");
    std::fs::remove_dir_all(bench.path("origin/lonely")).expect("remove");
    commit(
        bench,
        origin,
        ("Re Namer", "rename@example.org"),
        "2026-01-06T00:00:00+0100",
        "rename, copy, mode, delete\n",
    );
    // 6. Symlinks (a new one, a changed target), an empty file, a name with spaces.
    std::fs::remove_file(bench.path("origin/link")).expect("remove");
    std::os::unix::fs::symlink("crlf.txt", bench.path("origin/link")).expect("symlink");
    std::os::unix::fs::symlink("sub dir/inner file.txt", bench.path("origin/new link"))
        .expect("symlink");
    bench.write("origin/empty", b"");
    bench.write("origin/sub dir/inner file.txt", b"spaces everywhere\n");
    commit(
        bench,
        origin,
        ("Sym Link", "symlink@example.org"),
        "2026-01-07T00:00:00-0330",
        "symlinks, an empty file, spaces\n\nWith a body.\n",
    );
}

/// A clone of origin with `main` at `base`, as the target forge applies onto.
fn target_at(bench: &Workbench, base: &str) {
    bench.git(".", &["clone", "-q", "origin", "target"], &[]);
    bench.git("target", &["checkout", "-q", "-B", "main", base], &[]);
}

fn format_patch(bench: &Workbench, base: &str, out: &str) -> Vec<PathBuf> {
    let out_path = bench.path(out);
    bench.git(
        "origin",
        &format_patch_args(&[
            "-q",
            "-o",
            out_path.to_str().unwrap(),
            &format!("{base}..main"),
        ]),
        &[],
    );
    let mut files: Vec<PathBuf> = std::fs::read_dir(&out_path)
        .expect("series folder")
        .map(|entry| entry.expect("entry").path())
        .collect();
    files.sort();
    files
}

/// Every commit forge made in `target` matches the one `git am --keep-cr` makes from `series`
/// (files, or folders of them in name order) on a clone of `origin` at `base`, in order.
#[track_caller]
fn assert_same_as_git_am(bench: &Workbench, base: &str, series: &[PathBuf]) {
    let am = format!("am-{}", commits_after(bench, "target", base).len());
    bench.git(".", &["clone", "-q", "origin", &am], &[]);
    bench.git(&am, &["checkout", "-q", "-B", "main", base], &[]);
    let mut files = Vec::new();
    for path in series {
        if path.is_dir() {
            let mut inside: Vec<PathBuf> = std::fs::read_dir(path)
                .expect("series folder")
                .map(|entry| entry.expect("entry").path())
                .collect();
            inside.sort();
            files.extend(inside);
        } else {
            files.push(path.clone());
        }
    }
    let mut args = vec!["am".to_owned(), "-q".to_owned(), "--keep-cr".to_owned()];
    args.extend(files.iter().map(|file| file.display().to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    bench.git(&am, &args, &[]);
    let expected = commits_after(bench, &am, base);
    let copies = commits_after(bench, "target", base);
    assert_eq!(
        copies.len(),
        expected.len(),
        "one commit per patch, as git am makes"
    );
    for (reference, copy) in expected.iter().zip(&copies) {
        assert_eq!(
            commit_facts(bench, "target", copy),
            commit_facts(bench, &am, reference),
            "commit {copy} differs from git am's {reference}"
        );
        let committer = bench.git("target", &["log", "-1", "--format=%cn <%ce>", copy], &[]);
        assert_eq!(committer.trim(), "Forge Committer <forge@example.org>");
    }
}

/// The bytes of everything that says what a repository is: HEAD, refs, index, worktree files,
/// and the names of its objects.
fn snapshot(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    fn walk(root: &Path, folder: &Path, files: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(folder).expect("read folder") {
            let path = entry.expect("entry").path();
            let relative = path.strip_prefix(root).unwrap().display().to_string();
            let metadata = std::fs::symlink_metadata(&path).expect("metadata");
            if relative == ".git/logs" {
                continue;
            }
            if metadata.file_type().is_symlink() {
                files.insert(
                    relative,
                    std::fs::read_link(&path)
                        .unwrap()
                        .display()
                        .to_string()
                        .into_bytes(),
                );
            } else if metadata.is_dir() {
                walk(root, &path, files);
            } else {
                let mode = std::os::unix::fs::PermissionsExt::mode(&metadata.permissions());
                let mut bytes = std::fs::read(&path).expect("read");
                bytes.extend_from_slice(format!("\nmode {mode:o}").as_bytes());
                files.insert(relative, bytes);
            }
        }
    }
    walk(root, root, &mut files);
    files
}

/// Panics naming every file that differs between two snapshots.
#[track_caller]
fn assert_unchanged(before: &BTreeMap<String, Vec<u8>>, after: &BTreeMap<String, Vec<u8>>) {
    let changed: Vec<&String> = before
        .keys()
        .chain(after.keys())
        .filter(|path| before.get(*path) != after.get(*path))
        .collect();
    assert!(changed.is_empty(), "the repository changed: {changed:?}");
}

#[test]
fn every_case_makes_the_commit_git_am_makes() {
    let (bench, base, _) = bench_with_series();

    let run = bench.patch("apply", &[bench.path("series")]).expect_code(0);
    forge_snapshot!(run.stderr, bench.context.path(), @r"
        Applying 6 patches onto <recipe>/target
         Applied 0001-a-very-long-subject-line-that-goes-on-and-on-and-on-.patch (Jörg Müller <joerg@example.org>) as <short>
         Applied 0002-crlf-keep-carriage-returns.patch (O'Brien, Séan <sean@example.org>) as <short>
         Applied 0003-docs-no-trailing-newline.patch (O'Brien, Sean <sean.ascii@example.org>) as <short>
         Applied 0004-binary-literal-and-delta.patch (Bin Ary <binary@example.org>) as <short>
         Applied 0005-rename-copy-mode-delete.patch (Re Namer <rename@example.org>) as <short>
         Applied 0006-symlinks-an-empty-file-spaces.patch (Sym Link <symlink@example.org>) as <short>
         Patched <recipe>/target: 6 applied, 0 already applied; head <short>, tree <short>
        ");
    assert_same_as_git_am(&bench, &base, &[bench.path("series")]);
    // git am cuts the message at the `--- not a separator` line, as forge does.
    let first = commits_after(&bench, "target", &base)[0].clone();
    let message = bench.git("target", &["log", "-1", "--format=%B", &first], &[]);
    assert!(!message.contains("Still the body"), "{message}");
    // The worktree and index hold the result: nothing to commit, and the files are there.
    assert_eq!(bench.git("target", &["status", "--porcelain"], &[]), "");
    assert_eq!(
        std::fs::read(bench.path("target/crlf.txt")).unwrap(),
        b"alpha\r\nBETA\r\ngamma\r\n"
    );
    assert_eq!(
        std::fs::read_link(bench.path("target/new link")).unwrap(),
        Path::new("sub dir/inner file.txt")
    );
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(bench.path("target/script.sh"))
                .unwrap()
                .permissions()
        ) & 0o111,
        0o111
    );
}

#[test]
fn git_am_cannot_apply_crlf_content_that_forge_applies() {
    let (bench, base, files) = bench_with_series();
    let crlf_patch = files[1].to_str().unwrap().to_owned();
    let output = bench.git_output("target", &["am", "-q", &crlf_patch], &[]);
    assert!(
        !output.status.success(),
        "git am without --keep-cr applied the CRLF patch"
    );
    bench.git("target", &["am", "--abort"], &[]);
    bench.patch("apply", &files[..2]).expect_code(0);
    assert_same_as_git_am(&bench, &base, &files[..2]);
    assert_eq!(
        std::fs::read(bench.path("target/crlf.txt")).unwrap(),
        b"alpha\r\nBETA\r\ngamma\r\n"
    );
}

#[test]
fn one_mbox_with_the_whole_series_makes_the_commits_git_am_makes() {
    let (bench, base) = bench_with_target();
    let mbox = bench.git(
        "origin",
        &format_patch_args(&["--stdout", &format!("{base}..main")]),
        &[],
    );
    bench.write("all.mbox", mbox.as_bytes());
    let run = bench
        .patch_json("apply", &[bench.path("all.mbox")])
        .expect_code(0);
    assert_same_as_git_am(&bench, &base, &[bench.path("all.mbox")]);
    let document = run.json();
    let patches = document["targets"][0]["patches"]
        .as_array()
        .expect("patches");
    assert_eq!(patches.len(), 6);
    let originals = commits_after(&bench, "origin", &base);
    let copies = commits_after(&bench, "target", &base);
    for ((patch, original), copy) in patches.iter().zip(&originals).zip(&copies) {
        assert_eq!(patch["status"], "applied");
        assert_eq!(patch["original_id"], original.as_str());
        assert_eq!(patch["new_id"], copy.as_str());
    }
    assert_eq!(patches[1]["patch"], "all.mbox#2");
    assert_eq!(patches[1]["author"]["name"], "O'Brien, Séan");
    assert_eq!(patches[1]["author"]["date"], "1767463200 -0800");
    // git am drops every bracketed prefix of a subject, `[docs]` included.
    assert_eq!(patches[2]["subject"], "no trailing newline");
}

/// Base64 and quoted-printable bodies and a `?b?` encoded author, as mail clients send them.
#[test]
fn transfer_encoded_mail_makes_the_commits_git_am_makes() {
    let (bench, base, files) = bench_with_series();
    let original = std::fs::read(&files[0]).unwrap();
    let text = String::from_utf8(original.clone()).unwrap();
    let header_end = text.find("\n\n").unwrap() + 2;
    let (headers, body) = text.split_at(header_end);
    assert!(
        headers.contains("From: =?UTF-8?q?J=C3=B6rg=20M=C3=BCller?="),
        "{headers}"
    );
    let b_author = format!("From: =?UTF-8?b?{}?=", base64(b"J\xc3\xb6rg M\xc3\xbcller"));
    let headers = headers.replace("From: =?UTF-8?q?J=C3=B6rg=20M=C3=BCller?=", &b_author);
    let headers = with_transfer_encoding(&headers, "base64");
    let base64_body: String = base64(body.as_bytes())
        .as_bytes()
        .chunks(76)
        .map(|chunk| format!("{}\n", std::str::from_utf8(chunk).unwrap()))
        .collect();
    bench.write(
        "encoded/0001-base64.patch",
        format!("{headers}{base64_body}").as_bytes(),
    );

    let second = String::from_utf8(std::fs::read(&files[1]).unwrap()).unwrap();
    let header_end = second.find("\n\n").unwrap() + 2;
    let (headers, body) = second.split_at(header_end);
    let headers = with_transfer_encoding(headers, "quoted-printable");
    bench.write(
        "encoded/0002-qp.patch",
        format!("{headers}{}", quoted_printable(body.as_bytes())).as_bytes(),
    );
    assert!(
        String::from_utf8(std::fs::read(bench.path("encoded/0002-qp.patch")).unwrap())
            .unwrap()
            .contains("=0D"),
        "the carriage returns travel encoded"
    );

    bench
        .patch("apply", &[bench.path("encoded")])
        .expect_code(0);
    assert_same_as_git_am(&bench, &base, &[bench.path("encoded")]);
    assert_eq!(commits_after(&bench, "target", &base).len(), 2);
}

#[test]
fn a_second_application_adds_nothing() {
    let (bench, _, _) = bench_with_series();
    let series = [bench.path("series")];
    bench.patch("apply", &series).expect_code(0);
    let head = bench.target_head();
    let before = bench.target_snapshot();

    let run = bench.patch("apply", &series).expect_code(0);
    forge_snapshot!(run.stderr, bench.context.path(), @r"
        Applying 6 patches onto <recipe>/target
         Skipped 0001-a-very-long-subject-line-that-goes-on-and-on-and-on-.patch: already applied as <short>
         Skipped 0002-crlf-keep-carriage-returns.patch: already applied as <short>
         Skipped 0003-docs-no-trailing-newline.patch: already applied as <short>
         Skipped 0004-binary-literal-and-delta.patch: already applied as <short>
         Skipped 0005-rename-copy-mode-delete.patch: already applied as <short>
         Skipped 0006-symlinks-an-empty-file-spaces.patch: already applied as <short>
         Patched <recipe>/target: 0 applied, 6 already applied; head <short>, tree <short>
        ");
    assert_eq!(
        run.stderr.matches(": already applied as ").count(),
        6,
        "{}",
        run.stderr
    );
    assert_eq!(bench.target_head(), head);
    assert_unchanged(&before, &bench.target_snapshot());

    let run = bench.patch_json("check", &series).expect_code(0);
    assert_eq!(statuses(&run), vec!["already applied"; 6]);
}

/// The status of each patch of the one target in a `--json` report.
fn statuses(run: &Run) -> Vec<String> {
    run.json()["targets"][0]["patches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|patch| patch["status"].as_str().unwrap().to_owned())
        .collect()
}

/// A change that reached the target through another commit (other author, other date) is
/// recognised because the patch reverse-applies.
#[test]
fn a_change_committed_differently_is_already_applied() {
    // Text (1), binary literal and delta (4), symlinks, an empty file and spaces (6).
    for index in [0, 3, 5] {
        let (bench, _, files) = bench_with_series();
        bench.git("target", &["apply", files[index].to_str().unwrap()], &[]);
        commit(
            &bench,
            "target",
            ("Someone Else", "else@example.org"),
            "2026-02-01T00:00:00+0000",
            "same change, other commit\n",
        );
        let head = bench.target_head();

        let run = bench.patch_json("apply", &files[index..=index]);
        assert_eq!(run.code, 0, "patch {}: {}", index + 1, run.stderr);
        let patch = &run.json()["targets"][0]["patches"][0];
        assert_eq!(patch["status"], "already applied", "patch {}", index + 1);
        assert_eq!(
            patch["applied_as"],
            serde_json::Value::Null,
            "found by reverse apply"
        );
        assert_eq!(bench.target_head(), head);
    }
}

/// Three patches onto a target whose own change makes the second hunk of the second patch
/// fail; the series' files.
fn series_with_a_conflict_in_the_middle(bench: &Workbench) -> Vec<PathBuf> {
    bench.git("origin", &["init", "-q", "-b", "main"], &[]);
    let lines: String = (1..=30).map(|line| format!("line {line}\n")).collect();
    bench.write("origin/a.txt", b"a\n");
    bench.write("origin/story.txt", lines.as_bytes());
    let base = commit(
        bench,
        "origin",
        ("Base", "base@example.org"),
        "2026-01-01T00:00:00+0000",
        "base\n",
    );
    bench.write("origin/a.txt", b"a\nb\n");
    commit(
        bench,
        "origin",
        ("First", "first@example.org"),
        "2026-01-02T00:00:00+0000",
        "first\n",
    );
    bench.write(
        "origin/story.txt",
        lines
            .replace("line 2\n", "line two\n")
            .replace("line 25\n", "line twenty-five\n")
            .as_bytes(),
    );
    commit(
        bench,
        "origin",
        ("Second", "second@example.org"),
        "2026-01-03T00:00:00+0000",
        "second\n",
    );
    bench.write("origin/a.txt", b"a\nb\nc\n");
    commit(
        bench,
        "origin",
        ("Third", "third@example.org"),
        "2026-01-04T00:00:00+0000",
        "third\n",
    );
    target_at(bench, &base);
    // The target's own change makes the second hunk of the second patch fail.
    bench.write(
        "target/story.txt",
        lines.replace("line 25\n", "line 25 (changed)\n").as_bytes(),
    );
    commit(
        bench,
        "target",
        ("Target", "target@example.org"),
        "2026-01-05T00:00:00+0000",
        "target change\n",
    );
    format_patch(bench, &base, "series")
}

/// A conflict in the middle of the series: nothing changes, and the error names the patch, the
/// file and the hunk.
#[test]
fn a_conflict_in_the_middle_leaves_the_repository_as_it_was() {
    let bench = Workbench::new();
    let files = series_with_a_conflict_in_the_middle(&bench);
    let before = bench.target_snapshot();

    let run = bench.patch("apply", &[bench.path("series")]).expect_code(1);
    forge_snapshot!(run.stderr, bench.context.path(), @r"
            Applying 3 patches onto <recipe>/target
        error: cannot apply <recipe>/series onto <recipe>/target; nothing was changed
        caused by: 0002-second.patch does not apply: story.txt: hunk #2 (@@ -22,7 +22,7 @@) does not apply
        hint: nothing was applied; rebase the series onto the target (`git rebase`, then `git format-patch --binary`) or fix the target, then run again
        ");
    let second = files[1].file_name().unwrap().to_str().unwrap();
    assert_eq!(second, "0002-second.patch");
    assert_unchanged(&before, &bench.target_snapshot());

    let run = bench
        .patch_json("check", &[bench.path("series")])
        .expect_code(1);
    assert_eq!(statuses(&run), ["applies", "conflicts", "applies"]);
    assert_eq!(
        run.json()["targets"][0]["patches"][1]["conflict"]["file"],
        "story.txt"
    );
    forge_snapshot!(run.stderr, bench.context.path(), @"
        Checking 3 patches onto <recipe>/target
         Applies 0001-first.patch (First <first@example.org>)
    error: 0002-second.patch conflicts: story.txt: hunk #2 (@@ -22,7 +22,7 @@) does not apply
         Applies 0003-third.patch (Third <third@example.org>)
         Checked <recipe>/target: 2 apply, 0 already applied, 1 conflict
    error: 1 of 3 patches conflict with their target
    hint: rebase the series onto the target (`git rebase`, then `git format-patch --binary`), or fix the target
    ");
    assert_unchanged(&before, &bench.target_snapshot());

    // The conflict is an error, not a warning.
    let run = bench.patch("check", &[bench.path("series")]).expect_code(1);
    forge_snapshot!(run.stderr, bench.context.path(), @r"
            Checking 3 patches onto <recipe>/target
             Applies 0001-first.patch (First <first@example.org>)
        error: 0002-second.patch conflicts: story.txt: hunk #2 (@@ -22,7 +22,7 @@) does not apply
             Applies 0003-third.patch (Third <third@example.org>)
             Checked <recipe>/target: 2 apply, 0 already applied, 1 conflict
        error: 1 of 3 patches conflict with their target
        hint: rebase the series onto the target (`git rebase`, then `git format-patch --binary`), or fix the target
        ");
}

#[test]
fn a_file_that_is_not_a_patch_is_refused_by_name() {
    let bench = bench_with_a_bare_target();
    bench.write("junk/notes.txt", b"Just some notes.\nNothing to see.\n");
    bench.write("junk/mail.eml", b"From: A <a@example.org>\nSubject: hello\nDate: Mon, 6 Jul 2026 14:12:09 +0200\n\nno diff here\n");
    let mut refusals = String::new();
    for file in ["notes.txt", "mail.eml"] {
        let path = bench.path(&format!("junk/{file}"));
        refusals += &bench.patch("apply", &[&path]).expect_code(2).stderr;
    }
    forge_snapshot!(refusals, bench.context.path(), @r#"
    error: <recipe>/junk/notes.txt is not a patch: it holds no mail message (no `From <commit> Mon Sep 17 00:00:00 2001` line and no headers)
    hint: pass files made by `git format-patch` (mbox: a `From <commit> ...` line, `From:`, `Date:`, `Subject:` headers, then the message and a `diff --git`)
    error: <recipe>/junk/mail.eml is not a patch: it carries no diff: the message has no `---` line or `diff --git` after it (git am: "Patch is empty")
    hint: pass files made by `git format-patch` (mbox: a `From <commit> ...` line, `From:`, `Date:`, `Subject:` headers, then the message and a `diff --git`)
    "#);
}

#[test]
fn paths_outside_the_repository_or_into_git_are_refused() {
    let bench = bench_with_a_bare_target();
    let before = bench.target_snapshot();
    let mut refusals = String::new();
    for path in [
        "../../etc/passwd",
        ".git/config",
        "/etc/passwd",
        "sub/.GIT/hooks/pre-commit",
    ] {
        let mail = format!(
            "From 1111111111111111111111111111111111111111 Mon Sep 17 00:00:00 2001\n\
             From: Mallory <mallory@example.org>\nDate: Mon, 6 Jul 2026 14:12:09 +0200\n\
             Subject: [PATCH] innocent\n\n---\n\
             diff --git a/{path} b/{path}\nnew file mode 100644\nindex 0000000..4903981\n\
             --- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+owned\n-- \n2.47.3\n"
        );
        bench.write("evil.patch", mail.as_bytes());
        let run = bench
            .patch("apply", &[bench.path("evil.patch")])
            .expect_code(2);
        refusals += &run.stderr;
        assert_unchanged(&before, &bench.target_snapshot());
    }
    forge_snapshot!(refusals, bench.context.path(), @"
        Applying 1 patch onto <recipe>/target
    error: cannot apply <recipe>/evil.patch onto <recipe>/target; nothing was changed
    caused by: evil.patch: refusing to write `../../etc/passwd`: invalid path
    hint: a patch may only touch files inside the repository; nothing was applied
        Applying 1 patch onto <recipe>/target
    error: cannot apply <recipe>/evil.patch onto <recipe>/target; nothing was changed
    caused by: evil.patch: refusing to write `.git/config`: invalid path
    hint: a patch may only touch files inside the repository; nothing was applied
        Applying 1 patch onto <recipe>/target
    error: cannot apply <recipe>/evil.patch onto <recipe>/target; nothing was changed
    caused by: evil.patch: refusing to write `/etc/passwd`: invalid path
    hint: a patch may only touch files inside the repository; nothing was applied
        Applying 1 patch onto <recipe>/target
    error: cannot apply <recipe>/evil.patch onto <recipe>/target; nothing was changed
    caused by: evil.patch: refusing to write `sub/.GIT/hooks/pre-commit`: invalid path
    hint: a patch may only touch files inside the repository; nothing was applied
    ");
    assert!(!bench.path("etc/passwd").exists());
}

#[test]
fn a_dirty_worktree_is_refused() {
    let (bench, _, _) = bench_with_series();
    bench.write("target/plain.txt", b"local edit\n");
    let before = bench.target_snapshot();
    let run = bench.patch("apply", &[bench.path("series")]).expect_code(2);
    forge_snapshot!(run.stderr, bench.context.path(), @r"
            Applying 6 patches onto <recipe>/target
        error: cannot apply <recipe>/series onto <recipe>/target; nothing was changed
        caused by: <recipe>/target/ has uncommitted changes: plain.txt
        hint: commit or stash those changes first; nothing was applied
        ");
    assert_unchanged(&before, &bench.target_snapshot());
}

/// The default recipe's series applies onto its overlay folder and gives the tree `git am`
/// gives, with Mira Castellanos as author of both commits.
#[test]
fn the_default_recipe_series_applies_like_git_am() {
    let context = TestContext::default_recipe();
    let home = tempfile::tempdir().unwrap();
    let environment = git_environment(home.path());
    let pairs = env_refs(&environment);

    let run = context
        .forge_with(&["patch", "check"], &pairs)
        .expect_code(0);
    assert_eq!(
        run.stderr.matches("     Applies ").count(),
        2,
        "{}",
        run.stderr
    );
    forge_snapshot!(run.stderr, context.path(), @r"
        Checking 2 patches onto overlays/vllm (a scratch repository of the folder)
         Applies 0001-sm12x-feature-detect-the-DeepGEMM-fmax-binding.patch (Mira Castellanos <mira.castellanos@example.org>)
         Applies 0002-sm12x-read-the-DeepGEMM-warm-up-policy-in-one-place.patch (Mira Castellanos <mira.castellanos@example.org>)
         Checked overlays/vllm: 2 apply, 0 already applied, 0 conflicts
        ");
    let run = context
        .forge_with(&["--json", "patch", "apply"], &pairs)
        .expect_code(0);
    forge_snapshot!(run.stderr, context.path(), @r"
        Applying 2 patches onto overlays/vllm (a scratch repository of the folder)
         Applied 0001-sm12x-feature-detect-the-DeepGEMM-fmax-binding.patch (Mira Castellanos <mira.castellanos@example.org>) as <short>
         Applied 0002-sm12x-read-the-DeepGEMM-warm-up-policy-in-one-place.patch (Mira Castellanos <mira.castellanos@example.org>) as <short>
         Checked overlays/vllm: 2 apply, 0 already applied, in a scratch copy (tree <short>); the source is unchanged, `forge build` applies the series in its own copy
        ");
    let document = run.json();
    let target = &document["targets"][0];
    for patch in target["patches"].as_array().unwrap() {
        assert_eq!(patch["author"]["name"], "Mira Castellanos");
        assert_eq!(patch["status"], "applied");
    }
    assert_eq!(
        target["patches"][0]["original_id"],
        "c80a58513408daf05aede04a237651d859e4bdf3"
    );
    assert_eq!(target["patches"][1]["author"]["date"], "1783410331 +0200");

    // The oracle: the same folder in a git repository, `git am` of the same files.
    let oracle = home.path().join("oracle");
    crate::support::copy_tree(&context.path().join("overlays/vllm"), &oracle);
    let git = |args: &[&str]| git_in(&oracle, args, &pairs);
    git(&["init", "-q", "-b", "main"]);
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "overlay"]);
    let mut am = vec!["am".to_owned(), "-q".to_owned()];
    let mut patch_files: Vec<PathBuf> = std::fs::read_dir(context.path().join("patches/pr4"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    patch_files.sort();
    am.extend(patch_files.iter().map(|path| path.display().to_string()));
    git(&am.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(target["tree"], git(&["rev-parse", "HEAD^{tree}"]).trim());
    assert_eq!(
        git(&["log", "--format=%an <%ae> %ad", "--date=raw"])
            .lines()
            .take(2)
            .collect::<Vec<_>>(),
        [
            "Mira Castellanos <mira.castellanos@example.org> 1783410331 +0200",
            "Mira Castellanos <mira.castellanos@example.org> 1783339929 +0200"
        ]
    );
    // The recipe's own folder is never touched.
    assert!(
        !context
            .path()
            .join("overlays/vllm/platforms/sm12x_warmup.py")
            .exists()
    );
}

/// `onto = { git = "file://...", rev = "..." }`: fetched into forge's cache, patched in scratch.
#[test]
fn a_git_target_is_fetched_into_the_cache_and_patched_in_scratch() {
    let bench = Workbench::new();
    let base = build_history(&bench);
    let recipe = TestContext::default_recipe();
    format_patch(&bench, &base, "cases");
    crate::support::copy_tree(&bench.path("cases"), &recipe.path().join("patches/cases"));
    let url = format!("file://{}", bench.path("origin").display());
    recipe
        .edit(
            "pins.toml",
            "series = \"patches/pr4\"",
            "series = \"patches/cases\"",
        )
        .edit(
            "pins.toml",
            "onto = \"overlays/vllm\"",
            &format!("onto = {{ git = \"{url}\", rev = \"{base}\" }}"),
        )
        // The git pin that builds that remote at that commit.
        .edit(
            "pins.toml",
            "url = \"https://github.com/deepseek-ai/DeepGEMM.git\"",
            &format!("url = \"{url}\""),
        )
        .edit(
            "pins.toml",
            "rev = \"a6b593d2826719dcf4892609af7b84ee23aaf32a\"",
            &format!("rev = \"{base}\""),
        );

    let run = bench
        .forge_in(&recipe, &["--json", "patch", "apply"])
        .expect_code(0);
    let document = run.json();
    let target = &document["targets"][0];
    assert_eq!(target["kind"], "git");
    assert_eq!(target["base"], base.as_str());
    let expected_tree = bench.git("origin", &["rev-parse", "main^{tree}"], &[]);
    assert_eq!(target["tree"], expected_tree.trim());
    let cache = bench.path("cache/forge/git");
    assert_eq!(
        std::fs::read_dir(&cache).unwrap().count(),
        1,
        "one cached repository"
    );
    // The second run uses the cache: the source may be gone.
    std::fs::rename(bench.path("origin"), bench.path("origin-moved")).unwrap();
    let run = bench
        .forge_in(&recipe, &["--json", "patch", "check"])
        .expect_code(0);
    assert_eq!(run.json()["targets"][0]["tree"], expected_tree.trim());
}

/// `headers` (ending in the blank line) declaring a body in `encoding`: git writes MIME headers
/// only when the body is not plain ASCII.
fn with_transfer_encoding(headers: &str, encoding: &str) -> String {
    let kept: String = headers
        .trim_end()
        .lines()
        .filter(|line| {
            !line.starts_with("Content-Transfer-Encoding:")
                && !line.starts_with("MIME-Version:")
                && !line.starts_with("Content-Type:")
        })
        .map(|line| format!("{line}\n"))
        .collect();
    format!(
        "{kept}MIME-Version: 1.0\nContent-Type: text/plain; charset=UTF-8\nContent-Transfer-Encoding: {encoding}\n\n"
    )
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let value = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for position in 0..4 {
            if position <= chunk.len() {
                out.push(ALPHABET[(value >> (18 - 6 * position) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Quoted-printable as RFC 2045 writes it: `=XX` for `=`, control bytes (CR included) and
/// non-ASCII, soft line breaks before 76 columns.
fn quoted_printable(bytes: &[u8]) -> String {
    let mut out = String::new();
    let mut column = 0;
    for (index, &byte) in bytes.iter().enumerate() {
        if byte == b'\n' {
            out.push('\n');
            column = 0;
            continue;
        }
        // Decoders drop whitespace at the end of a line, so it travels encoded.
        let at_line_end = matches!(bytes.get(index + 1), None | Some(b'\n'));
        let piece = if byte == b'='
            || !(0x20..0x7f).contains(&byte)
            || (at_line_end && matches!(byte, b' ' | b'\t'))
        {
            format!("={byte:02X}")
        } else {
            (byte as char).to_string()
        };
        if column + piece.len() > 75 {
            out.push_str("=\n");
            column = 0;
        }
        column += piece.len();
        out.push_str(&piece);
    }
    out
}

/// Other shapes `git format-patch` writes: a version and a prefix in the tag
/// (`[RFC PATCH v2 3/6]`), the author moved into the body by `--from`, the diff as a MIME
/// attachment, and a signature of several lines.
#[test]
fn other_format_patch_shapes_make_the_commits_git_am_makes() {
    for (label, options) in [
        ("versioned", vec!["-v2", "--subject-prefix=RFC PATCH"]),
        ("from", vec!["--from=Patch Sender <sender@example.org>"]),
        ("attach", vec!["--attach"]),
        ("signature", vec!["--signature=forge test\nsecond line"]),
    ] {
        let (bench, base) = bench_with_target();
        let out = bench.path("series");
        let mut rest = vec!["-q", "-o", out.to_str().unwrap()];
        rest.extend(options.iter().copied());
        let range = format!("{base}..main");
        rest.push(&range);
        bench.git("origin", &format_patch_args(&rest), &[]);
        let first = std::fs::read_dir(&out)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .min()
            .unwrap();
        let text = std::fs::read_to_string(&first).unwrap();
        match label {
            "versioned" => assert!(text.contains("Subject: [RFC PATCH v2 1/6]"), "{text}"),
            "from" => assert!(
                text.contains("From: Patch Sender <sender@example.org>")
                    && text.contains("\n\nFrom: Jörg Müller <joerg@example.org>\n"),
                "{text}"
            ),
            "attach" => assert!(text.contains("Content-Type: multipart/mixed"), "{text}"),
            _ => assert!(text.contains("-- \nforge test\nsecond line"), "{text}"),
        }
        let run = bench.patch("apply", std::slice::from_ref(&out));
        assert_eq!(run.code, 0, "{label}: {}", run.stderr);
        assert_same_as_git_am(&bench, &base, std::slice::from_ref(&out));
    }
}

/// Without a committer identity forge refuses to commit, says how to set one, and changes
/// nothing; a check needs no identity.
#[test]
fn a_missing_committer_identity_is_refused_with_a_hint() {
    let (bench, _, _) = bench_with_series();
    let target = bench.path("target");
    let before = bench.target_snapshot();
    let environment: Vec<(&str, String)> = git_environment(bench.context.path())
        .into_iter()
        .filter(|(name, _)| {
            !name.starts_with("FORGE_COMMITTER") && !name.starts_with("GIT_COMMITTER")
        })
        .collect();
    let pairs = env_refs(&environment);
    let series = [bench.path("series")];
    let run = bench
        .context
        .forge_with(&patch_args("apply", &target, &series), &pairs)
        .expect_code(2);
    forge_snapshot!(run.stderr, bench.context.path(), @r"
            Applying 6 patches onto <recipe>/target
        error: cannot apply <recipe>/series onto <recipe>/target; nothing was changed
        caused by: no committer identity for <recipe>/target/: user.name or user.email is not set
        hint: set user.name and user.email in git config, or FORGE_COMMITTER_NAME and FORGE_COMMITTER_EMAIL
        ");
    assert_unchanged(&before, &bench.target_snapshot());
    bench
        .context
        .forge_with(&patch_args("check", &target, &series), &pairs)
        .expect_code(0);
    assert_unchanged(&before, &bench.target_snapshot());
}

/// An untracked file where the series creates one: the checkout is refused before it writes
/// anything, and HEAD, the index and the worktree stay as they were.
#[test]
fn an_untracked_file_in_the_way_leaves_the_worktree_as_it_was() {
    let (bench, _, _) = bench_with_series();
    bench.write("target/new.bin", b"mine, not tracked\n");
    let head = bench.target_head();
    let before = bench.target_snapshot();
    let run = bench.patch("apply", &[bench.path("series")]).expect_code(2);
    forge_snapshot!(run.stderr, bench.context.path(), @"
        Applying 6 patches onto <recipe>/target
    error: cannot apply <recipe>/series onto <recipe>/target; nothing was changed
    caused by: untracked files in <recipe>/target/ are where the series adds files: new.bin
    hint: move those files away (or add them to the series' base), then run again; nothing was applied
    ");
    assert_eq!(bench.target_head(), head);
    assert_unchanged(&before, &bench.target_snapshot());
}

#[test]
fn scratch_commits_keep_their_ids_from_run_to_run() {
    // A build applies its series in a scratch copy; without SOURCE_DATE_EPOCH the commit ids
    // must still not depend on the clock, or forge.lock would change with every build.
    let context = TestContext::default_recipe();
    let ids = |run: Run| -> Vec<String> {
        let document = run.expect_code(0).json();
        let text = document.to_string();
        let mut ids = Vec::new();
        let mut rest = text.as_str();
        while let Some(start) = rest.find("\"new_id\":\"") {
            rest = &rest[start + 10..];
            ids.push(rest[..40].to_owned());
        }
        ids
    };
    let first = ids(context.forge(&["--json", "patch", "apply"]));
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let second = ids(context.forge(&["--json", "patch", "apply"]));
    assert_eq!(first.len(), 2, "two patches applied");
    assert_eq!(first, second, "scratch commit ids changed between runs");
}

/// `patch apply` onto a folder patches a scratch copy: it says so, names no new head, and the
/// folder keeps its bytes.
#[test]
fn apply_onto_a_folder_says_the_folder_is_unchanged() {
    let context = TestContext::default_recipe();
    let before = context.read("overlays/vllm/model_executor/layers/deepseek_v4_sm12x.py");
    let run = context.forge(&["patch", "apply"]).expect_code(0);
    forge_snapshot!(run.stderr, context.path(), @"
    Applying 2 patches onto overlays/vllm (a scratch repository of the folder)
     Applied 0001-sm12x-feature-detect-the-DeepGEMM-fmax-binding.patch (Mira Castellanos <mira.castellanos@example.org>) as <short>
     Applied 0002-sm12x-read-the-DeepGEMM-warm-up-policy-in-one-place.patch (Mira Castellanos <mira.castellanos@example.org>) as <short>
     Checked overlays/vllm: 2 apply, 0 already applied, in a scratch copy (tree <short>); the source is unchanged, `forge build` applies the series in its own copy
    ");
    let json = context
        .forge(&["--json", "patch", "apply"])
        .expect_code(0)
        .json();
    assert_eq!(json["targets"][0]["head"], serde_json::Value::Null);
    assert_eq!(
        context.read("overlays/vllm/model_executor/layers/deepseek_v4_sm12x.py"),
        before
    );
}

/// `git format-patch` numbers a long series `9999-...`, `10000-...`: a folder applies in that
/// order (a sort of the names would put `10000-` first), making the commits `git am` makes from
/// the files in git's order.
#[test]
fn a_series_folder_applies_in_the_order_git_numbers_it() {
    let (bench, base) = bench_with_target();
    let out = bench.path("numbered");
    bench.git(
        "origin",
        &crate::support::format_patch_args(&[
            "-q",
            "--start-number",
            "9998",
            "-o",
            out.to_str().unwrap(),
            &format!("{base}..main"),
        ]),
        &[],
    );
    let mut files: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    let number = |file: &PathBuf| -> u32 {
        let name = file.file_name().unwrap().to_str().unwrap();
        name.split('-').next().unwrap().parse().unwrap()
    };
    files.sort_by_key(number);
    assert_eq!(
        files.iter().map(number).collect::<Vec<_>>(),
        (9998..10004).collect::<Vec<_>>()
    );
    let run = bench.patch("apply", &[out]).expect_code(0);
    forge_snapshot!(run.stderr, bench.context.path(), @"
    Applying 6 patches onto <recipe>/target
     Applied 9998-a-very-long-subject-line-that-goes-on-and-on-and-on-.patch (Jörg Müller <joerg@example.org>) as <short>
     Applied 9999-crlf-keep-carriage-returns.patch (O'Brien, Séan <sean@example.org>) as <short>
     Applied 10000-docs-no-trailing-newline.patch (O'Brien, Sean <sean.ascii@example.org>) as <short>
     Applied 10001-binary-literal-and-delta.patch (Bin Ary <binary@example.org>) as <short>
     Applied 10002-rename-copy-mode-delete.patch (Re Namer <rename@example.org>) as <short>
     Applied 10003-symlinks-an-empty-file-spaces.patch (Sym Link <symlink@example.org>) as <short>
     Patched <recipe>/target: 6 applied, 0 already applied; head <short>, tree <short>
    ");
    assert_same_as_git_am(&bench, &base, &files);
}
