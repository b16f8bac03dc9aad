//! forge when things go wrong underneath `patch apply`: SIGINT during a series and while the
//! patched files are written, SIGKILL during the checkout, and hostile patches (a 100 MB one,
//! one past the size limit, one that writes through a symlink).
//! Each test takes the state that must survive (a repository's HEAD, index and worktree) before
//! the fault and compares it after.

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader, Write};
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::process::Background;
use crate::support::{TestContext, assert_contains, git_in, patch_args};

/// Runs git in `folder` with Ada Lovelace as author, panicking on failure; returns stdout.
#[track_caller]
fn git(folder: &Path, args: &[&str]) -> String {
    let identity = [
        ("GIT_AUTHOR_NAME", "Ada Lovelace"),
        ("GIT_AUTHOR_EMAIL", "ada@example.org"),
        ("GIT_COMMITTER_NAME", "Forge Test"),
        ("GIT_COMMITTER_EMAIL", "test@example.org"),
    ];
    git_in(folder, args, &identity)
}

/// A repository's HEAD, index, status and worktree files.
#[derive(Debug, PartialEq, Eq)]
struct RepositoryState {
    head: String,
    index: String,
    status: String,
    files: BTreeMap<PathBuf, Vec<u8>>,
}

fn repository_state(folder: &Path) -> RepositoryState {
    fn walk(root: &Path, folder: &Path, files: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(folder).unwrap() {
            let path = entry.unwrap().path();
            let relative = path.strip_prefix(root).unwrap().to_owned();
            if relative == Path::new(".git") {
                continue;
            }
            let metadata = std::fs::symlink_metadata(&path).unwrap();
            if metadata.file_type().is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                files.insert(relative, target.into_os_string().into_encoded_bytes());
            } else if metadata.is_dir() {
                walk(root, &path, files);
            } else {
                files.insert(relative, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut files = BTreeMap::new();
    walk(folder, folder, &mut files);
    RepositoryState {
        head: git(folder, &["rev-parse", "HEAD"]),
        index: git(folder, &["ls-files", "--stage"]),
        status: git(folder, &["status", "--porcelain", "--untracked-files=all"]),
        files,
    }
}

/// An empty repository `target` in `bench`, on `main`.
fn new_repository(bench: &Path) -> PathBuf {
    let target = bench.join("target");
    std::fs::create_dir_all(&target).unwrap();
    git(&target, &["init", "-q", "-b", "main"]);
    target
}

/// A repository `target` in `bench` with one commit, `base`, holding a README.
fn repository_with_a_base(bench: &Path) -> PathBuf {
    let target = new_repository(bench);
    std::fs::write(target.join("README"), "base\n").unwrap();
    git(&target, &["add", "."]);
    git(&target, &["commit", "-q", "-m", "base"]);
    target
}

/// A repository with one base commit and a series of `count` patches on it (made by git), the
/// repository reset to the base.
fn repository_with_series(bench: &Path, count: usize) -> (PathBuf, PathBuf) {
    let target = repository_with_a_base(bench);
    for index in 0..count {
        let folder = target.join(format!("part-{}", index % 16));
        std::fs::create_dir_all(&folder).unwrap();
        let text: String = (0..200)
            .map(|line| format!("patch {index} line {line}\n"))
            .collect();
        std::fs::write(folder.join(format!("file-{index}.txt")), text).unwrap();
        git(&target, &["add", "."]);
        git(&target, &["commit", "-q", "-m", &format!("part {index}")]);
    }
    let series = bench.join("series");
    git(
        &target,
        &[
            "format-patch",
            "-q",
            "-o",
            series.to_str().unwrap(),
            "HEAD~",
            "--root",
        ],
    );
    let _ = std::fs::remove_file(series.join("0001-base.patch"));
    git(&target, &["reset", "-q", "--hard", "HEAD~"]);
    git(
        &target,
        &["reset", "-q", "--hard", &format!("HEAD~{}", count - 1)],
    );
    (target, series)
}

#[test]
fn sigint_during_a_patch_series_leaves_the_repository_as_it_was() {
    let bench = TestContext::empty();
    let (target, series) = repository_with_series(bench.path(), 300);
    let before = repository_state(&target);
    let series = [series];
    let args = patch_args("apply", &target, &series);
    // How long the series takes to check, to interrupt the apply well inside it.
    let started = Instant::now();
    bench
        .forge(&patch_args("check", &target, &series))
        .expect_code(0);
    let takes = started.elapsed();

    let run = Background::start(bench.path(), &args, &[]);
    std::thread::sleep(takes / 3);
    run.signal("INT");
    let (status, stderr) = run.finish();
    let after = repository_state(&target);
    if status.signal() == Some(2) {
        assert_eq!(
            after, before,
            "interrupted, yet the repository changed:\n{stderr}"
        );
    } else {
        // The whole series went in before the signal arrived: all of it, cleanly.
        assert!(status.success(), "{stderr}");
        assert_eq!(after.status, "");
        assert_eq!(
            git(&target, &["rev-list", "--count", "HEAD"]).trim(),
            "301",
            "{stderr}"
        );
    }
}

/// Ctrl-C stops `patch apply` even when forge was started from a script that ignores SIGINT
/// (a non-interactive shell does so for `command &`), before anything is written.
#[test]
fn sigint_stops_a_patch_apply_started_with_sigint_ignored() {
    let bench = TestContext::empty();
    let (target, _) = repository_with_series(bench.path(), 1);
    let before = repository_state(&target);
    // One patch big enough that applying it takes a while: a file of two million lines.
    let mut mail = String::from(
        "From 0000000000000000000000000000000000000001 Mon Sep 17 00:00:00 2001\n\
         From: Big Patch <big@example.org>\nDate: Mon, 6 Jul 2026 14:12:09 +0200\n\
         Subject: [PATCH] a big file\n\n---\n\
         diff --git a/big b/big\nnew file mode 100644\nindex 0000000..1111111\n\
         --- /dev/null\n+++ b/big\n@@ -0,0 +1,2000000 @@\n",
    );
    for line in 0..2_000_000 {
        mail.push_str(&format!("+line {line} of a big file\n"));
    }
    let series = bench.path().join("big.patch");
    std::fs::write(&series, mail).unwrap();
    let script = format!(
        "trap '' INT; exec '{}' -C '{}' patch apply --onto '{}' '{}'",
        env!("CARGO_BIN_EXE_forge"),
        bench.path().display(),
        target.display(),
        series.display()
    );
    let mut child = Command::new("sh")
        .args(["-c", &script])
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sh starts");
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let started = lines
        .by_ref()
        .map_while(Result::ok)
        .any(|line| line.contains("Applying 1 patch"));
    assert!(started, "forge never started applying");
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = child.wait().unwrap();
    assert_eq!(
        status.signal(),
        Some(libc::SIGINT),
        "forge went on after SIGINT: {status:?}\n{}",
        rest.join("\n")
    );
    assert_eq!(repository_state(&target), before, "the repository changed");
}

/// A signal while the patched tree is being written out (one patch touching thousands of
/// files, so that writing them takes most of the run): the apply is all or nothing.
/// A repository of `FILES` files at its base commit, a series of one patch that changes every
/// file, and the tree the patch makes.
fn repository_changing_every_file(bench: &Path) -> (PathBuf, PathBuf, String) {
    const FILES: usize = 4000;
    let target = new_repository(bench);
    for index in 0..FILES {
        let folder = target.join(format!("part-{}", index % 40));
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join(format!("file-{index}.txt")),
            format!("{index}\n"),
        )
        .unwrap();
    }
    git(&target, &["add", "."]);
    git(&target, &["commit", "-q", "-m", "base"]);
    for index in 0..FILES {
        let path = target.join(format!("part-{}/file-{index}.txt", index % 40));
        std::fs::write(path, format!("{index}, changed\n")).unwrap();
    }
    git(&target, &["commit", "-q", "-a", "-m", "change every file"]);
    let series = bench.join("series");
    git(
        &target,
        &["format-patch", "-q", "-1", "-o", series.to_str().unwrap()],
    );
    let patched = git(&target, &["rev-parse", "HEAD^{tree}"]);
    git(&target, &["reset", "-q", "--hard", "HEAD~"]);
    (target, series, patched)
}

#[test]
fn sigint_while_the_patched_files_are_written_leaves_all_or_nothing() {
    let bench = TestContext::empty();
    let (target, series, patched) = repository_changing_every_file(bench.path());
    let before = repository_state(&target);
    let series = [series];
    let args = patch_args("apply", &target, &series);
    let started = Instant::now();
    bench.forge(&args).expect_code(0);
    let takes = started.elapsed();
    git(&target, &["reset", "-q", "--hard", "HEAD~"]);
    assert_eq!(repository_state(&target), before);

    let mut interrupted = 0;
    for step in 1..=12 {
        let run = Background::start(bench.path(), &args, &[]);
        std::thread::sleep(takes * step / 13);
        run.signal("INT");
        let (status, stderr) = run.finish();
        let after = repository_state(&target);
        if after.head == before.head {
            interrupted += 1;
            assert_eq!(
                after, before,
                "interrupted after {step}/13 of the run, HEAD stayed but the files did not:\n{stderr}"
            );
            assert!(!status.success(), "{stderr}");
        } else {
            // Everything went in: the new commit, its tree checked out, nothing left over.
            assert_eq!(after.status, "", "step {step}:\n{stderr}");
            assert_eq!(git(&target, &["rev-parse", "HEAD^{tree}"]), patched);
            git(&target, &["reset", "-q", "--hard", "HEAD~"]);
        }
    }
    assert!(interrupted > 0, "no run was interrupted before it finished");
}

#[test]
fn a_100_mb_patch_applies_within_bounded_memory_and_time() {
    let bench = TestContext::empty();
    let target = repository_with_a_base(bench.path());
    const LINES: usize = 1_700_000;
    let row = format!("+{}\n", "x".repeat(58));
    let patch = bench.path().join("big.patch");
    {
        let mut file = std::io::BufWriter::new(std::fs::File::create(&patch).unwrap());
        write!(
            file,
            "From 2222222222222222222222222222222222222222 Mon Sep 17 00:00:00 2001\n\
             From: Big Patch <big@example.org>\nDate: Mon, 6 Jul 2026 14:12:09 +0200\n\
             Subject: [PATCH] one big file\n\n---\n\
             diff --git a/big.txt b/big.txt\nnew file mode 100644\nindex 0000000..1111111\n\
             --- /dev/null\n+++ b/big.txt\n@@ -0,0 +1,{LINES} @@\n"
        )
        .unwrap();
        for _ in 0..LINES {
            file.write_all(row.as_bytes()).unwrap();
        }
        file.write_all(b"-- \n2.47.3\n").unwrap();
    }
    assert!(std::fs::metadata(&patch).unwrap().len() > 100_000_000);

    // 1.5 GB of address space for a 100 MB patch; a copy per line or per hunk would not fit.
    let started = Instant::now();
    let output = Command::new("sh")
        .args(["-c", "ulimit -v 1500000 && exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_forge"))
        .args(["patch", "apply", "--onto"])
        .arg(&target)
        .arg(&patch)
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        .env("GIT_COMMITTER_NAME", "Forge Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.org")
        .output()
        .unwrap();
    let took = started.elapsed();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(took < Duration::from_secs(120), "took {took:?}");
    let size = git(&target, &["cat-file", "-s", "HEAD:big.txt"]);
    assert_eq!(size.trim(), (LINES * 59).to_string());
    assert_eq!(
        git(&target, &["log", "-1", "--format=%an <%ae>"]).trim(),
        "Big Patch <big@example.org>"
    );
    assert_eq!(git(&target, &["status", "--porcelain"]), "");
}

/// Runs `forge args...` in `folder` within `kib` KiB of address space.
fn forge_within(folder: &Path, kib: u64, args: &[&str]) -> std::process::Output {
    Command::new("sh")
        .args(["-c", &format!("ulimit -v {kib} && exec \"$0\" \"$@\"")])
        .arg(env!("CARGO_BIN_EXE_forge"))
        .arg("-C")
        .arg(folder)
        .args(args)
        .current_dir(folder)
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        .env("GIT_COMMITTER_NAME", "Forge Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.org")
        .env_remove("SOURCE_DATE_EPOCH")
        .output()
        .unwrap()
}

/// A file of a patched overlay that the series leaves alone streams from the recipe into the
/// scratch repository and the context, as it does in an unpatched overlay: a 400 MB file goes
/// through within 300 MB of address space.
#[test]
fn a_large_file_in_a_patched_overlay_streams_into_the_context() {
    let context = TestContext::default_recipe();
    const SIZE: u64 = 400 * 1024 * 1024;
    let big = context.path().join("overlays/vllm/weights.bin");
    let file = std::fs::File::create(&big).unwrap();
    file.set_len(SIZE).unwrap();
    drop(file);
    let started = Instant::now();
    let output = forge_within(context.path(), 300_000, &["--json", "build", "--dry-run"]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert!(output.status.success(), "{stderr}");
    assert_contains(&stderr, "Patched patches/pr4 onto ");
    let bytes = serde_json::from_str::<serde_json::Value>(&stdout)
        .ok()
        .and_then(|plan| plan["context_size"].as_u64())
        .unwrap_or_else(|| panic!("no context size in {stdout}"));
    assert!(bytes > SIZE, "the context holds {bytes} bytes");
    assert!(
        started.elapsed() < Duration::from_secs(120),
        "took {:?}",
        started.elapsed()
    );
}

/// A patch that changes a file larger than the patch stage holds in memory is refused by name,
/// before the file is read, and nothing is applied.
#[test]
fn a_patch_to_a_file_past_the_limit_is_refused_by_name() {
    let bench = TestContext::empty();
    let target = repository_with_a_base(bench.path());
    let big = std::fs::File::create(target.join("big.txt")).unwrap();
    big.set_len(200 * 1024 * 1024).unwrap();
    drop(big);
    git(&target, &["add", "big.txt"]);
    git(&target, &["commit", "-q", "-m", "a big file"]);
    bench.write(
        "big.patch",
        "From 1111111111111111111111111111111111111111 Mon Sep 17 00:00:00 2001\n\
         From: Big Patch <big@example.org>\nDate: Mon, 6 Jul 2026 14:12:09 +0200\n\
         Subject: [PATCH] change the big file\n\n---\n\
         diff --git a/big.txt b/big.txt\n--- a/big.txt\n+++ b/big.txt\n\
         @@ -1 +1 @@\n-a\n+b\n-- \n2.47.3\n",
    );
    let head = git(&target, &["rev-parse", "HEAD"]);
    let series = [bench.path().join("big.patch")];
    for command in ["check", "apply"] {
        let output = forge_within(
            bench.path(),
            300_000,
            &patch_args(command, &target, &series),
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert_contains(
            &stderr,
            "big.patch: cannot patch big.txt: it is 209715200 bytes, more than the 128 MiB a patched file may have",
        );
        assert_contains(&stderr, "nothing was applied");
        assert_eq!(git(&target, &["rev-parse", "HEAD"]), head, "HEAD moved");
    }
}

#[test]
fn a_patch_through_a_symlink_is_refused_and_writes_nothing() {
    let bench = TestContext::empty();
    let outside = bench.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let target = new_repository(bench.path());
    std::os::unix::fs::symlink("../outside", target.join("link")).unwrap();
    std::fs::write(target.join("a.txt"), "a\n").unwrap();
    git(&target, &["add", "."]);
    git(&target, &["commit", "-q", "-m", "base"]);
    let mail = "From 1111111111111111111111111111111111111111 Mon Sep 17 00:00:00 2001\n\
        From: Mallory <mallory@example.org>\nDate: Mon, 6 Jul 2026 14:12:09 +0200\n\
        Subject: [PATCH] through the link\n\n---\n\
        diff --git a/link/evil.txt b/link/evil.txt\nnew file mode 100644\nindex 0000000..4903981\n\
        --- /dev/null\n+++ b/link/evil.txt\n@@ -0,0 +1 @@\n+owned\n-- \n2.47.3\n";
    bench.write("evil.patch", mail);
    let head = git(&target, &["rev-parse", "HEAD"]);
    let series = [bench.path().join("evil.patch")];
    for command in ["check", "apply"] {
        let run = bench
            .forge(&patch_args(command, &target, &series))
            .expect_code(2);
        assert_contains(&run.stderr, "link/evil.txt");
        assert_contains(&run.stderr, "it goes through a symbolic link");
        assert_eq!(git(&target, &["rev-parse", "HEAD"]), head, "HEAD moved");
        assert!(
            std::fs::symlink_metadata(target.join("link"))
                .unwrap()
                .file_type()
                .is_symlink(),
            "the link was replaced"
        );
        let written: Vec<_> = std::fs::read_dir(&outside).unwrap().collect();
        assert!(
            written.is_empty(),
            "`forge patch {command}` wrote through the symlink"
        );
    }
}

#[test]
fn sigkill_during_the_checkout_is_finished_by_the_next_apply() {
    let bench = TestContext::empty();
    let (target, series, patched) = repository_changing_every_file(bench.path());
    let before = repository_state(&target);
    let series = [series];
    let args = patch_args("apply", &target, &series);
    let started = Instant::now();
    bench.forge(&args).expect_code(0);
    let takes = started.elapsed();
    git(&target, &["reset", "-q", "--hard", before.head.trim()]);

    // Half the kills land as soon as the checkout changes its first file; the others at
    // points spread over a whole run.
    let first_file = target.join("part-0/file-0.txt");
    let mut mid_checkout = 0;
    for step in 0..6 {
        let run = Background::start(bench.path(), &args, &[]);
        if step % 2 == 0 {
            let deadline = Instant::now() + Duration::from_secs(60);
            while std::fs::read(&first_file).unwrap_or_default() == b"0\n"
                && Instant::now() < deadline
            {
                std::thread::sleep(Duration::from_micros(200));
            }
        } else {
            std::thread::sleep(takes * step / 6);
        }
        run.signal("KILL");
        let (status, stderr) = run.finish();
        // A run may end before its kill arrives.
        assert!(
            status.signal() == Some(9) || status.success(),
            "step {step}: {status:?} {stderr}"
        );
        let after = repository_state(&target);
        let killed_mid_checkout = after.head == before.head && after != before;
        if killed_mid_checkout {
            mid_checkout += 1;
        } else if after.head != before.head {
            assert_eq!(after.status, "", "step {step}");
        }

        // The next apply finishes what the killed one started, or does it all itself.
        let next = bench.forge(&args).expect_code(0);
        assert_eq!(git(&target, &["rev-parse", "HEAD^{tree}"]), patched);
        assert_eq!(
            git(&target, &["status", "--porcelain", "--untracked-files=all"]),
            "",
            "step {step}"
        );
        if killed_mid_checkout {
            assert_contains(&next.stderr, "Recovered");
        }
        assert!(!target.join(".git/FORGE_APPLY").exists(), "step {step}");
        git(&target, &["reset", "-q", "--hard", before.head.trim()]);
    }
    assert!(mid_checkout > 0, "no kill landed during the checkout");
}

/// A series of 10,000 patches, named as `git format-patch --start-number 1` would past 9999
/// (`9999-...`, `10000-...`), each moving one counter on by one so that any other order
/// conflicts: `patch check` finds every one applying, in git's order, within 1 GiB of address
/// space.
#[test]
fn ten_thousand_patches_check_in_order_within_bounded_memory() {
    let bench = TestContext::empty();
    let target = new_repository(bench.path());
    std::fs::write(target.join("counter.txt"), "0\n").unwrap();
    git(&target, &["add", "."]);
    git(&target, &["commit", "-q", "-m", "base"]);
    let series = bench.path().join("series");
    std::fs::create_dir_all(&series).unwrap();
    const COUNT: usize = 10_000;
    for number in 1..=COUNT {
        let name = if number < 10_000 {
            format!("{number:04}-count-{number}.patch")
        } else {
            format!("{number}-count-{number}.patch")
        };
        let mail = format!(
            "From 1111111111111111111111111111111111111111 Mon Sep 17 00:00:00 2001\n\
             From: Many Patches <many@example.org>\nDate: Mon, 6 Jul 2026 14:12:09 +0200\n\
             Subject: [PATCH] count {number}\n\n---\n\
             diff --git a/counter.txt b/counter.txt\n--- a/counter.txt\n+++ b/counter.txt\n\
             @@ -1 +1 @@\n-{}\n+{number}\n-- \n2.47.3\n",
            number - 1
        );
        std::fs::write(series.join(name), mail).unwrap();
    }
    let started = Instant::now();
    let output = Command::new("sh")
        .args(["-c", "ulimit -v 1048576 && exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_forge"))
        .args(["patch", "check", "--onto"])
        .arg(&target)
        .arg(&series)
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        .output()
        .unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{}",
        &stderr[stderr.len().saturating_sub(2000)..]
    );
    assert_contains(
        &stderr,
        &format!("{COUNT} apply, 0 already applied, 0 conflicts"),
    );
    assert!(took < Duration::from_secs(120), "took {took:?}");
}
