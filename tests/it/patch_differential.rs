//! forge's patch stage judged by `git am --keep-cr` on the same input.
//!
//! Three modes share one machinery (states written as commits with git2, patches made by
//! `git format-patch -M -C --binary`, both tools run as processes on identical checkouts with
//! the same committer and date, so that agreeing tools make byte-identical commits):
//!
//! - **generated histories**: a linear history of random edits (lines inserted, deleted and
//!   changed at the start, middle and end; files added, deleted, emptied, renamed, copied;
//!   modes, symlinks, gitlinks, binary files, CRLF text, missing final newlines, runs of
//!   identical lines), applied as one series by both tools: every commit must be identical.
//! - **generated cases**: one patch (A to B) applied onto a target that is A, B, or A changed
//!   in a way that moves, breaks or blocks the patch, and some mails damaged on the way:
//!   where git applies, forge makes the same commit; where git refuses, forge changes nothing
//!   and calls the patch `already applied` only if `git apply -R --check` accepts it.
//! - **named cases**: one test per class of disagreement found before (see each test).
//!
//! `FORGE_DIFFERENTIAL_SEED`, `FORGE_DIFFERENTIAL_COMMITS` and `FORGE_DIFFERENTIAL_CASES`
//! make longer runs; `FORGE_HISTORY=GITDIR:BASE:TIP[,...]` replays real histories (see
//! docs/testing.md); `FORGE_DIFFERENTIAL_BINARY` judges another forge binary.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::support::Rng;
use std::process::{Command, Output};
use std::sync::Mutex;

use git2::{Oid, Repository};

/// The committer both tools record, and when.
const COMMITTER: (&str, &str) = ("Diff Committer", "committer@example.org");
const COMMITTER_EPOCH: i64 = 1_780_000_000;

const REGULAR: u32 = 0o100644;
const EXECUTABLE: u32 = 0o100755;
const SYMLINK: u32 = 0o120000;
const GITLINK: u32 = 0o160000;

// ---------------------------------------------------------------------------------------------
// Random numbers, states and commits.

/// A file as git stores it: mode and content (a gitlink's content is its commit id in hex).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    mode: u32,
    data: Vec<u8>,
}

impl Entry {
    fn text(data: &[u8]) -> Self {
        Entry {
            mode: REGULAR,
            data: data.to_vec(),
        }
    }

    fn is_text(&self) -> bool {
        matches!(self.mode, REGULAR | EXECUTABLE) && !self.data.contains(&0)
    }
}

/// A tree: path to entry.
type State = BTreeMap<String, Entry>;

/// Whether `path` can hold a file in `state`: no file on the way to it, no folder at it.
fn can_add(state: &State, path: &str) -> bool {
    if state.contains_key(path) {
        return false;
    }
    let folder = format!("{path}/");
    if state.keys().any(|existing| existing.starts_with(&folder)) {
        return false;
    }
    let mut prefix = String::new();
    for part in path.split('/').collect::<Vec<_>>().split_last().unwrap().1 {
        if !prefix.is_empty() {
            prefix.push('/');
        }
        prefix.push_str(part);
        if state.contains_key(&prefix) {
            return false;
        }
    }
    true
}

/// Whether every path of `state` can be checked out: none lies below another.
fn is_valid(state: &State) -> bool {
    state.keys().all(|path| {
        let mut prefix = path.as_str();
        while let Some((parent, _)) = prefix.rsplit_once('/') {
            if state.contains_key(parent) {
                return false;
            }
            prefix = parent;
        }
        true
    })
}

/// Who wrote a commit and when.
#[derive(Debug, Clone)]
struct Author {
    name: String,
    email: String,
    seconds: i64,
    offset_minutes: i32,
}

fn write_tree(repository: &Repository, state: &State) -> Oid {
    let mut index = git2::Index::new().expect("an in-memory index");
    for (path, entry) in state {
        let id = if entry.mode == GITLINK {
            Oid::from_str(std::str::from_utf8(&entry.data).unwrap()).unwrap()
        } else {
            repository.blob(&entry.data).expect("blob")
        };
        index
            .add(&git2::IndexEntry {
                ctime: git2::IndexTime::new(0, 0),
                mtime: git2::IndexTime::new(0, 0),
                dev: 0,
                ino: 0,
                mode: entry.mode,
                uid: 0,
                gid: 0,
                file_size: 0,
                id,
                flags: 0,
                flags_extended: 0,
                path: path.as_bytes().to_vec(),
            })
            .expect("index entry");
    }
    index.write_tree_to(repository).expect("tree")
}

fn commit(
    repository: &Repository,
    state: &State,
    parents: &[Oid],
    author: &Author,
    message: &str,
) -> Oid {
    let tree = repository.find_tree(write_tree(repository, state)).unwrap();
    let author = git2::Signature::new(
        &author.name,
        &author.email,
        &git2::Time::new(author.seconds, author.offset_minutes),
    )
    .expect("author");
    let committer =
        git2::Signature::new("Origin", "origin@example.org", &git2::Time::new(0, 0)).unwrap();
    let parents: Vec<git2::Commit<'_>> = parents
        .iter()
        .map(|id| repository.find_commit(*id).unwrap())
        .collect();
    let parents: Vec<&git2::Commit<'_>> = parents.iter().collect();
    repository
        .commit(None, &author, &committer, message, &tree, &parents)
        .expect("commit")
}

/// A repository at `folder` whose `main` is a chain of `history` commits, checked out.
fn repository_with(folder: &Path, history: &[(State, Author, String)]) -> Oid {
    let repository = Repository::init(folder).expect("init");
    let mut parent: Option<Oid> = None;
    for (state, author, message) in history {
        let parents: Vec<Oid> = parent.into_iter().collect();
        parent = Some(commit(&repository, state, &parents, author, message));
    }
    let head = parent.expect("a commit");
    repository
        .reference("refs/heads/main", head, true, "test")
        .unwrap();
    repository.set_head("refs/heads/main").unwrap();
    if let Err(error) = repository.checkout_head(Some(git2::build::CheckoutBuilder::new().force()))
    {
        let paths: Vec<(&String, u32)> = history
            .last()
            .unwrap()
            .0
            .iter()
            .map(|(path, entry)| (path, entry.mode))
            .collect();
        panic!("checkout of {paths:?}: {error}");
    }
    // git keeps an empty folder where a gitlink is; git am checks it is there.
    for (path, entry) in &history.last().unwrap().0 {
        if entry.mode == GITLINK {
            std::fs::create_dir_all(folder.join(path)).unwrap();
        }
    }
    head
}

// ---------------------------------------------------------------------------------------------
// Running the tools.

fn tool_environment(home: &Path) -> Vec<(&'static str, String)> {
    let date = format!("@{COMMITTER_EPOCH} +0000");
    vec![
        ("GIT_CONFIG_GLOBAL", "/dev/null".to_owned()),
        ("GIT_CONFIG_NOSYSTEM", "1".to_owned()),
        ("HOME", home.display().to_string()),
        ("GIT_COMMITTER_NAME", COMMITTER.0.to_owned()),
        ("GIT_COMMITTER_EMAIL", COMMITTER.1.to_owned()),
        ("GIT_COMMITTER_DATE", date),
        ("FORGE_COMMITTER_NAME", COMMITTER.0.to_owned()),
        ("FORGE_COMMITTER_EMAIL", COMMITTER.1.to_owned()),
        ("SOURCE_DATE_EPOCH", COMMITTER_EPOCH.to_string()),
        ("TZ", "UTC".to_owned()),
        ("NO_COLOR", "1".to_owned()),
    ]
}

fn git(folder: &Path, home: &Path, args: &[&str]) -> Output {
    let mut command = Command::new("git");
    command.args(args).current_dir(folder);
    for (name, value) in tool_environment(home) {
        command.env(name, value);
    }
    command.output().expect("git runs")
}

fn forge_binary() -> PathBuf {
    std::env::var_os("FORGE_DIFFERENTIAL_BINARY")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_forge")))
}

fn forge(folder: &Path, home: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(forge_binary());
    command.args(args).current_dir(folder);
    for (name, value) in tool_environment(home) {
        command.env(name, value);
    }
    command.output().expect("forge runs")
}

fn head_of(folder: &Path) -> Oid {
    Repository::open(folder)
        .unwrap()
        .head()
        .unwrap()
        .target()
        .unwrap()
}

/// tree, author, message of a commit, for messages about disagreements.
fn facts(folder: &Path, id: Oid) -> String {
    let repository = Repository::open(folder).unwrap();
    let commit = repository.find_commit(id).unwrap();
    let author = commit.author();
    format!(
        "tree {} author {:?} <{:?}> {} {:+} message {:?}",
        commit.tree_id(),
        String::from_utf8_lossy(author.name_bytes()),
        String::from_utf8_lossy(author.email_bytes()),
        author.when().seconds(),
        author.when().offset_minutes(),
        String::from_utf8_lossy(commit.message_bytes())
    )
}

/// A temporary folder for one case or history: in memory (`/dev/shm`) where the machine has
/// it, since git am's many small files make a disk the bottleneck.
fn scratch() -> tempfile::TempDir {
    let memory = Path::new("/dev/shm");
    if memory.is_dir()
        && let Ok(folder) = tempfile::Builder::new()
            .prefix("forge-differential")
            .tempdir_in(memory)
    {
        return folder;
    }
    tempfile::tempdir().expect("a temporary folder")
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

// ---------------------------------------------------------------------------------------------
// One case: a patch, a target, both tools, one verdict.

/// What `git am` did with a case, and what forge did.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Verdict {
    /// A new commit with this id (identical ids mean identical tree, author, message).
    Applied(Oid),
    /// Nothing moved; `already` says forge called it already applied.
    Refused { already: bool },
}

/// A patch case: the mail, and the history of the target it is applied onto.
struct Case {
    label: String,
    mail: Vec<u8>,
    target: Vec<(State, Author, String)>,
}

/// git am's verdict on a case, whether `git apply -R --check` accepts the patch there, and
/// forge's verdict (with its output, for the report).
fn judge(case: &Case, work: &Path) -> (Verdict, bool, Verdict, String) {
    let home = work.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let mail = work.join("case.patch");
    std::fs::write(&mail, &case.mail).unwrap();
    let mail_arg = mail.to_str().unwrap();

    let am_folder = work.join("am");
    let before = repository_with(&am_folder, &case.target);
    let am = git(&am_folder, &home, &["am", "-q", "--keep-cr", mail_arg]);
    let git_verdict = if am.status.success() {
        Verdict::Applied(head_of(&am_folder))
    } else {
        assert_eq!(head_of(&am_folder), before, "git am moved HEAD and failed");
        Verdict::Refused { already: false }
    };
    let reverse_applies = !am.status.success() && {
        let _ = git(&am_folder, &home, &["am", "--abort"]);
        git(&am_folder, &home, &["apply", "-R", "--check", mail_arg])
            .status
            .success()
    };

    let forge_folder = work.join("forge");
    let before = repository_with(&forge_folder, &case.target);
    let run = forge(
        &forge_folder,
        &home,
        &[
            "--json",
            "patch",
            "apply",
            "--onto",
            forge_folder.to_str().unwrap(),
            mail_arg,
        ],
    );
    let output = format!(
        "exit {:?}\n{}{}",
        run.status.code(),
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    let head = head_of(&forge_folder);
    let forge_verdict = if head != before {
        Verdict::Applied(head)
    } else {
        let already = run.status.success() && output.contains("\"already applied\"");
        Verdict::Refused { already }
    };
    (git_verdict, reverse_applies, forge_verdict, output)
}

/// git am's verdict on `case` when forge agrees with it, else a report of both.
fn compare(case: &Case, work: &Path) -> Result<Verdict, String> {
    let (git_verdict, reverse_applies, forge_verdict, output) = judge(case, work);
    let agrees = match (&git_verdict, &forge_verdict) {
        (Verdict::Applied(expected), Verdict::Applied(made)) => expected == made,
        (Verdict::Refused { .. }, Verdict::Refused { already }) => !already || reverse_applies,
        // forge refuses a patch whose hunks do not make the blob its index line names, where
        // git commits the partial change: right only when git's own result breaks that line.
        (Verdict::Applied(commit), Verdict::Refused { already: false }) => {
            output.contains("but its hunks make")
                && breaks_index_line(&work.join("am"), *commit, &case.mail)
        }
        _ => false,
    };
    if agrees {
        return Ok(git_verdict);
    }
    let describe = |verdict: &Verdict, folder: &str| match verdict {
        Verdict::Applied(id) => format!("applied: {}", facts(&work.join(folder), *id)),
        Verdict::Refused { already } => format!("refused (already applied: {already})"),
    };
    Err(format!(
        "{}: git am {}; forge {}; git apply -R --check {}\n--- mail\n{}\n--- forge\n{}",
        case.label,
        describe(&git_verdict, "am"),
        describe(&forge_verdict, "forge"),
        if reverse_applies {
            "accepts"
        } else {
            "refuses"
        },
        String::from_utf8_lossy(&case.mail),
        output
    ))
}

/// Whether the mail's `index` lines name a result that `commit` (git's) does not hold: a blob
/// named after `..` that no file of the commit is.
fn breaks_index_line(folder: &Path, commit: Oid, mail: &[u8]) -> bool {
    let repository = Repository::open(folder).unwrap();
    let tree = repository.find_commit(commit).unwrap().tree().unwrap();
    let mut blobs = Vec::new();
    tree.walk(git2::TreeWalkMode::PreOrder, |_, entry| {
        blobs.push(entry.id().to_string());
        git2::TreeWalkResult::Ok
    })
    .unwrap();
    String::from_utf8_lossy(mail)
        .lines()
        .filter_map(|line| line.strip_prefix("index "))
        .filter_map(|rest| {
            rest.split(' ')
                .next()?
                .split_once("..")
                .map(|(_, after)| after.to_owned())
        })
        .filter(|after| !after.bytes().all(|c| c == b'0'))
        .any(|after| !blobs.iter().any(|blob| blob.starts_with(&after)))
}

/// Judges `case` in a fresh folder and panics with the disagreement, if any; returns what git
/// did (`None`: it refused; else the facts of its commit) so that a named case can also
/// assert what git must do.
#[track_caller]
fn assert_agrees(case: &Case) -> Option<String> {
    let work = scratch();
    match compare(case, work.path()).unwrap_or_else(|report| panic!("{report}")) {
        Verdict::Applied(id) => Some(facts(&work.path().join("am"), id)),
        Verdict::Refused { .. } => None,
    }
}

/// A named case that git applies; returns the facts of the commit both made.
#[track_caller]
fn assert_both_apply(case: &Case) -> String {
    assert_agrees(case).unwrap_or_else(|| panic!("{}: git am refused it", case.label))
}

/// A named case that git refuses: forge must refuse it too.
#[track_caller]
fn assert_both_refuse(case: &Case) {
    if let Some(facts) = assert_agrees(case) {
        panic!("{}: git am applied it: {facts}", case.label);
    }
}

/// The mail `git format-patch -M -C --binary` writes for the change from `before` to `after`.
fn mail_for(before: &State, after: &State, author: &Author, message: &str) -> Vec<u8> {
    let work = scratch();
    let repository = Repository::init(work.path()).unwrap();
    let base = commit(&repository, before, &[], author, "base");
    let change = commit(&repository, after, &[base], author, message);
    let home = work.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let output = git(
        work.path(),
        &home,
        &[
            "format-patch",
            "-M",
            "-C",
            "--binary",
            "--stdout",
            &format!("{base}..{change}"),
        ],
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

fn base_author() -> Author {
    Author {
        name: "Base Author".to_owned(),
        email: "base@example.org".to_owned(),
        seconds: 1_700_000_000,
        offset_minutes: 0,
    }
}

fn ada() -> Author {
    Author {
        name: "Ada Lovelace".to_owned(),
        email: "ada@example.org".to_owned(),
        seconds: 1_783_339_929,
        offset_minutes: 120,
    }
}

/// A case whose target is `target` (a single commit).
fn case(label: &str, mail: Vec<u8>, target: &State) -> Case {
    Case {
        label: label.to_owned(),
        mail,
        target: vec![(target.clone(), base_author(), "target\n".to_owned())],
    }
}

fn state(files: &[(&str, u32, &[u8])]) -> State {
    files
        .iter()
        .map(|(path, mode, data)| {
            (
                (*path).to_owned(),
                Entry {
                    mode: *mode,
                    data: data.to_vec(),
                },
            )
        })
        .collect()
}

/// A change to one path: what goes there (mode and content), or `None` to remove it.
type Change<'a> = (&'a str, Option<(u32, &'a [u8])>);

fn with(base: &State, changes: &[Change<'_>]) -> State {
    let mut state = base.clone();
    for (path, change) in changes {
        match change {
            Some((mode, data)) => {
                state.insert(
                    (*path).to_owned(),
                    Entry {
                        mode: *mode,
                        data: data.to_vec(),
                    },
                );
            }
            None => {
                state.remove(*path);
            }
        }
    }
    state
}

// ---------------------------------------------------------------------------------------------
// Random edits.

const WORDS: [&str; 12] = [
    "same",
    "same",
    "",
    "{",
    "}",
    "return 0;",
    "  indented",
    "x = 1",
    "tab\there",
    "trailing ",
    "ünïcödé",
    "line",
];

fn random_text(rng: &mut Rng) -> Vec<u8> {
    let lines = rng.below(24);
    let crlf = rng.chance(15);
    let mut text = Vec::new();
    for index in 0..lines {
        let word = *rng.pick(&WORDS);
        if word == "line" {
            text.extend_from_slice(format!("line {}", rng.below(50)).as_bytes());
        } else {
            text.extend_from_slice(word.as_bytes());
        }
        let last = index + 1 == lines;
        if last && rng.chance(15) {
            break;
        }
        text.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
    }
    text
}

fn random_binary(rng: &mut Rng) -> Vec<u8> {
    let length = if rng.chance(30) {
        2000 + rng.below(6000)
    } else {
        1 + rng.below(200)
    };
    let mut data: Vec<u8> = (0..length).map(|_| rng.next() as u8).collect();
    data[rng.below(length)] = 0;
    data
}

fn random_path(rng: &mut Rng) -> String {
    let folders = ["dir", "sub", "with space", "é", "deep/er"];
    let names = ["a", "b.txt", "c d", "e.bin", "f", "g.sh", "h~", "README"];
    let depth = rng.below(3);
    let mut path = String::new();
    for _ in 0..depth {
        path.push_str(rng.pick::<&str>(&folders));
        path.push('/');
    }
    path.push_str(rng.pick::<&str>(&names));
    if rng.chance(30) {
        path.push_str(&rng.below(100).to_string());
    }
    path
}

/// Where a generated symbolic link points: never at a path of the tree, so that no link loops
/// (git's checks read the worktree, where a loop is an error of its own).
fn link_target(rng: &mut Rng) -> Vec<u8> {
    match rng.below(3) {
        0 => format!("target-{}", rng.below(100)).into_bytes(),
        1 => b"../outside/the/tree".to_vec(),
        _ => b"/usr/share/doc".to_vec(),
    }
}

fn random_entry(rng: &mut Rng) -> Entry {
    match rng.below(10) {
        0 => Entry {
            mode: SYMLINK,
            data: link_target(rng),
        },
        1 => Entry {
            mode: GITLINK,
            data: format!("{:040x}", rng.next() as u128 * 0x1_0000_0001 + 1).into_bytes(),
        },
        2 => Entry {
            mode: REGULAR,
            data: random_binary(rng),
        },
        3 => Entry {
            mode: EXECUTABLE,
            data: random_text(rng),
        },
        4 => Entry::text(b""),
        _ => Entry::text(&random_text(rng)),
    }
}

fn random_state(rng: &mut Rng) -> State {
    let mut state = State::new();
    for _ in 0..3 + rng.below(8) {
        let path = random_path(rng);
        if can_add(&state, &path) {
            state.insert(path, random_entry(rng));
        }
    }
    if state.is_empty() {
        state.insert("a".to_owned(), Entry::text(b"a\n"));
    }
    state
}

/// Lines of `text`, each with its line ending.
fn lines(text: &[u8]) -> Vec<Vec<u8>> {
    text.split_inclusive(|&c| c == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

/// Inserts, deletes or changes a few lines at the start, the middle or the end.
fn edit_text(rng: &mut Rng, text: &[u8]) -> Vec<u8> {
    let mut lines = lines(text);
    let crlf = text.windows(2).any(|pair| pair == b"\r\n");
    let ending: &[u8] = if crlf { b"\r\n" } else { b"\n" };
    for _ in 0..1 + rng.below(3) {
        let at = match rng.below(3) {
            0 => 0,
            1 => lines.len() / 2,
            _ => lines.len(),
        }
        .min(lines.len());
        match rng.below(4) {
            0 => {
                for _ in 0..1 + rng.below(3) {
                    let mut line = rng.pick(&WORDS).as_bytes().to_vec();
                    line.extend_from_slice(ending);
                    lines.insert(at, line);
                }
            }
            1 if !lines.is_empty() => {
                let at = at.min(lines.len() - 1);
                let count = (1 + rng.below(3)).min(lines.len() - at);
                lines.drain(at..at + count);
            }
            2 if !lines.is_empty() => {
                let at = at.min(lines.len() - 1);
                let keep_end = lines[at].ends_with(b"\n");
                let mut line = format!("changed {}", rng.below(1000)).into_bytes();
                if keep_end {
                    line.extend_from_slice(ending);
                }
                lines[at] = line;
            }
            _ => {
                // Add or take away the final newline.
                if let Some(last) = lines.last_mut() {
                    if last.ends_with(b"\n") {
                        last.pop();
                        if last.ends_with(b"\r") {
                            last.pop();
                        }
                    } else {
                        last.extend_from_slice(ending);
                    }
                }
            }
        }
    }
    lines.concat()
}

/// One random change; `false` when none could be made.
fn random_edit(rng: &mut Rng, state: &mut State) -> bool {
    let paths: Vec<String> = state.keys().cloned().collect();
    let Some(path) = (!paths.is_empty()).then(|| rng.pick(&paths).clone()) else {
        let path = random_path(rng);
        state.insert(path, random_entry(rng));
        return true;
    };
    let entry = state[&path].clone();
    match rng.below(14) {
        0..=3 if entry.is_text() => {
            let edited = edit_text(rng, &entry.data);
            state.get_mut(&path).unwrap().data = edited;
        }
        4 => {
            let new = random_path(rng);
            if !can_add(state, &new) {
                return false;
            }
            state.insert(new, random_entry(rng));
        }
        5 => {
            state.remove(&path);
        }
        6 if matches!(entry.mode, REGULAR | EXECUTABLE) => {
            state.get_mut(&path).unwrap().data.clear()
        }
        7 => {
            // A rename, sometimes with an edit.
            let new = random_path(rng);
            state.remove(&path);
            if !can_add(state, &new) {
                state.insert(path, entry);
                return false;
            }
            let mut moved = entry;
            if moved.is_text() && rng.chance(50) {
                moved.data = edit_text(rng, &moved.data);
            }
            state.insert(new, moved);
        }
        8 => {
            // A copy with an edit.
            let new = random_path(rng);
            if !can_add(state, &new) {
                return false;
            }
            let mut copy = entry;
            if copy.is_text() {
                copy.data = edit_text(rng, &copy.data);
            }
            state.insert(new, copy);
        }
        9 => {
            let file = state.get_mut(&path).unwrap();
            file.mode = match file.mode {
                REGULAR => EXECUTABLE,
                EXECUTABLE => REGULAR,
                SYMLINK => REGULAR,
                _ => SYMLINK,
            };
            if file.mode == SYMLINK || entry.mode == GITLINK {
                file.data = link_target(rng);
            }
        }
        10 => {
            // A folder replaced by a file of the same name, or a file by a folder.
            if let Some((folder, _)) = path.rsplit_once('/') {
                let folder = folder.to_owned();
                let prefix = format!("{folder}/");
                state.retain(|key, _| !key.starts_with(&prefix));
                if !can_add(state, &folder) {
                    return false;
                }
                state.insert(folder, random_entry(rng));
            } else {
                state.remove(&path);
                state.insert(format!("{path}/inside"), random_entry(rng));
            }
        }
        11 if entry.mode == REGULAR && entry.data.contains(&0) => {
            let mut data = entry.data.clone();
            let at = rng.below(data.len());
            data[at] ^= 0x5a;
            if rng.chance(50) {
                data.extend_from_slice(&random_binary(rng));
            }
            state.get_mut(&path).unwrap().data = data;
        }
        12 if entry.mode == GITLINK => {
            state.get_mut(&path).unwrap().data =
                format!("{:040x}", rng.next() as u128 * 0x1_0000_0003 + 7).into_bytes();
        }
        _ => {
            let file = state.get_mut(&path).unwrap();
            *file = random_entry(rng);
        }
    }
    true
}

/// A state with one to three random changes made, different from `state`.
fn changed(rng: &mut Rng, state: &State) -> State {
    loop {
        let mut next = state.clone();
        for _ in 0..1 + rng.below(3) {
            random_edit(rng, &mut next);
        }
        if next != *state && !next.is_empty() && is_valid(&next) {
            return next;
        }
    }
}

const NAMES: [(&str, &str); 6] = [
    ("Ada Lovelace", "ada@example.org"),
    ("Jörg Müller", "joerg@example.org"),
    ("O'Brien, Séan", "sean@example.org"),
    ("李小龍", "lee@example.org"),
    ("X", "x@example.org"),
    ("Ann-Marie Dash", "dash@example.org"),
];
const OFFSETS: [i32; 8] = [-720, -420, -210, 0, 60, 330, 345, 780];
const MESSAGES: [&str; 10] = [
    "fix the thing",
    "[docs] a bracketed subject",
    "Re: a reply subject\n\nwith a body",
    "subject\n\nbody line\n--- a line that ends the message\nafter it",
    "subject\n\nFrom: In Body <inbody@example.org>\n\nbody after an in-body header",
    "subject with trailing spaces   \n\n\n\nbody after blank lines  \t",
    "subject\n\nbody with a non-breaking space at the end\u{a0}",
    "a very long subject line that goes on and on and on so that format-patch folds it",
    "subject\n\nSigned-off-by: Ada Lovelace <ada@example.org>",
    "subject\n\n    indented code\n\ttabbed\n---not a break",
];

fn random_author(rng: &mut Rng) -> Author {
    let (name, email) = *rng.pick(&NAMES);
    Author {
        name: name.to_owned(),
        email: email.to_owned(),
        seconds: 1_000_000_000 + (rng.next() % 800_000_000) as i64,
        offset_minutes: *rng.pick(&OFFSETS),
    }
}

// ---------------------------------------------------------------------------------------------
// Generated histories.

/// What replaying a history found.
struct Replay {
    /// The first difference, if any.
    difference: Option<String>,
    /// Commits both tools made identically.
    compared: usize,
    /// Commits git am refuses to make from their own patch (forge refused them too).
    refused: Vec<String>,
    /// Seconds git am and forge took.
    seconds: [f64; 2],
}

/// Applies the series `base..tip` of `origin` with both tools onto clones at `base` and
/// compares every commit. Where git am refuses a patch of the history (git cannot always
/// apply its own format-patch output), forge must refuse it too, and both go on from the
/// original commit.
fn replay_history(origin: &Path, base: &str, tip: &str, work: &Path) -> Replay {
    let home = work.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let originals = rev_list(origin, &home, &format!("{base}..{tip}"));
    let mut replay = Replay {
        difference: None,
        compared: 0,
        refused: Vec::new(),
        seconds: [0.0; 2],
    };
    let mut start = 0;
    let mut round = 0;
    while start < originals.len() {
        round += 1;
        let from = if start == 0 {
            base.to_owned()
        } else {
            originals[start - 1].clone()
        };
        let round = Round::new(origin, &home, work.join(format!("round{round}")), from, tip);
        match round.compare(&mut replay) {
            Err(difference) => {
                replay.difference = Some(difference);
                return replay;
            }
            Ok(None) => break,
            Ok(Some(applied)) => {
                replay.refused.push(originals[start + applied].clone());
                start += applied + 1;
            }
        }
    }
    replay
}

/// The commits of `range` in `folder`, oldest first.
fn rev_list(folder: &Path, home: &Path, range: &str) -> Vec<String> {
    String::from_utf8(git(folder, home, &["rev-list", "--reverse", range]).stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// One round of a replay: the series `from..tip` of `origin`, as files in `folder`, applied by
/// both tools onto clones at `from`.
struct Round<'a> {
    origin: &'a Path,
    home: &'a Path,
    folder: PathBuf,
    from: String,
    /// The series' patch files, in order.
    files: Vec<PathBuf>,
}

impl<'a> Round<'a> {
    /// Writes the series `from..tip` of `origin` into `folder`.
    fn new(origin: &'a Path, home: &'a Path, folder: PathBuf, from: String, tip: &str) -> Self {
        let patches = folder.join("series");
        let made = git(
            origin,
            home,
            &crate::support::format_patch_args(&[
                "-q",
                "-o",
                patches.to_str().unwrap(),
                &format!("{from}..{tip}"),
            ]),
        );
        assert!(
            made.status.success(),
            "{}",
            String::from_utf8_lossy(&made.stderr)
        );
        let mut files: Vec<PathBuf> = std::fs::read_dir(&patches)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .collect();
        files.sort();
        Self {
            origin,
            home,
            folder,
            from,
            files,
        }
    }

    /// `files` concatenated into one mbox `name` in the round's folder.
    fn mbox(&self, name: &str, files: &[PathBuf]) -> PathBuf {
        let path = self.folder.join(name);
        let bytes: Vec<u8> = files
            .iter()
            .flat_map(|file| std::fs::read(file).unwrap())
            .collect();
        std::fs::write(&path, bytes).unwrap();
        path
    }

    /// A clone of origin, `name` in the round's folder, with `work` checked out at `from`.
    fn clone_as(&self, name: &str) -> PathBuf {
        let cloned = git(
            &self.folder,
            self.home,
            &[
                "clone",
                "-q",
                "--no-checkout",
                self.origin.to_str().unwrap(),
                name,
            ],
        );
        assert!(
            cloned.status.success(),
            "{}",
            String::from_utf8_lossy(&cloned.stderr)
        );
        let checked_out = git(
            &self.folder.join(name),
            self.home,
            &["checkout", "-q", "-B", "work", &self.from],
        );
        assert!(checked_out.status.success());
        self.folder.join(name)
    }

    /// The commits made in the clone `folder` since `from`.
    fn made_since(&self, folder: &Path) -> Vec<String> {
        rev_list(folder, self.home, &format!("{}..work", self.from))
    }

    /// `forge patch apply` of `series` in the clone `folder`.
    fn forge_apply(&self, folder: &Path, series: &Path) -> Output {
        forge(
            folder,
            self.home,
            &[
                "-q",
                "patch",
                "apply",
                "--onto",
                ".",
                series.to_str().unwrap(),
            ],
        )
    }

    /// Applies the series with both tools and compares what they made, adding the commits
    /// compared and the time taken to `replay`: the first difference, or where git am stopped
    /// (`None` where it applied the whole series), forge having refused that patch too.
    fn compare(&self, replay: &mut Replay) -> Result<Option<usize>, String> {
        let am = self.clone_as("am");
        let all = self.mbox("all.mbox", &self.files);
        let started = std::time::Instant::now();
        let run = git(
            &am,
            self.home,
            &["am", "-q", "--keep-cr", all.to_str().unwrap()],
        );
        replay.seconds[0] += started.elapsed().as_secs_f64();
        let expected = self.made_since(&am);
        let applied = expected.len();

        let forge_folder = self.clone_as("forge");
        let series = if run.status.success() {
            all
        } else {
            self.mbox("applied.mbox", &self.files[..applied])
        };
        if applied > 0 {
            let started = std::time::Instant::now();
            let run = self.forge_apply(&forge_folder, &series);
            replay.seconds[1] += started.elapsed().as_secs_f64();
            if !run.status.success() {
                return Err(format!(
                    "forge failed where git am applied: {}",
                    String::from_utf8_lossy(&run.stderr)
                ));
            }
        }
        let made = self.made_since(&forge_folder);
        if let Some((reference, copy)) = expected
            .iter()
            .zip(&made)
            .find(|(left, right)| left != right)
        {
            return Err(format!(
                "git am {}\nforge  {}",
                facts(&am, Oid::from_str(reference).unwrap()),
                facts(&forge_folder, Oid::from_str(copy).unwrap())
            ));
        }
        if made.len() != expected.len() {
            return Err(format!(
                "git am made {applied} commits, forge {}",
                made.len()
            ));
        }
        replay.compared += applied;
        if run.status.success() {
            return Ok(None);
        }
        self.refused_by_forge(&forge_folder, applied).map(Some)
    }

    /// git am stopped at patch `at`: forge must refuse it as well, changing nothing in its clone
    /// `folder`.
    fn refused_by_forge(&self, folder: &Path, at: usize) -> Result<usize, String> {
        let refused = self.mbox("refused.mbox", &self.files[at..=at]);
        let head = head_of(folder);
        let run = self.forge_apply(folder, &refused);
        if run.status.success() || head_of(folder) != head {
            return Err(format!(
                "git am refuses {} but forge applies it",
                self.files[at].display()
            ));
        }
        Ok(at)
    }
}

#[test]
#[allow(clippy::print_stderr)]
fn generated_histories_make_the_commits_git_am_makes() {
    let seed = env_number("FORGE_DIFFERENTIAL_SEED", 11);
    let count = env_number("FORGE_DIFFERENTIAL_COMMITS", 1000) as usize;
    let work = scratch();
    let origin = work.path().join("origin");
    let repository = Repository::init(&origin).unwrap();
    let mut rng = Rng(seed);
    let mut state = random_state(&mut rng);
    for index in 0..12 {
        let path = format!("base/file{index}.txt");
        state.insert(path, Entry::text(&random_text(&mut rng)));
    }
    let base = commit(&repository, &state, &[], &base_author(), "base\n");
    let mut tip = base;
    for _ in 0..count {
        state = changed(&mut rng, &state);
        let author = random_author(&mut rng);
        let message = *rng.pick(&MESSAGES);
        tip = commit(&repository, &state, &[tip], &author, message);
    }
    let replay = replay_history(&origin, &base.to_string(), &tip.to_string(), work.path());
    if replay.difference.is_some() && std::env::var_os("FORGE_DIFFERENTIAL_KEEP").is_some() {
        eprintln!("kept {}", work.keep().display());
    }
    assert!(
        replay.difference.is_none(),
        "seed {seed}: {}",
        replay.difference.unwrap_or_default()
    );
    assert!(
        replay.compared >= count * 9 / 10,
        "only {} commits compared",
        replay.compared
    );
    eprintln!(
        "{count} generated commits: {} identical, {} refused by both; git am {:.2}s, forge {:.2}s",
        replay.compared,
        replay.refused.len(),
        replay.seconds[0],
        replay.seconds[1]
    );
}

/// Real histories, when named: `FORGE_HISTORY=GITDIR:BASE:TIP[,GITDIR:BASE:TIP...]`.
#[test]
#[allow(clippy::print_stderr)]
fn named_real_histories_make_the_commits_git_am_makes() {
    let Ok(list) = std::env::var("FORGE_HISTORY") else {
        return;
    };
    for entry in list.split(',').filter(|entry| !entry.is_empty()) {
        let parts: Vec<&str> = entry.rsplitn(3, ':').collect();
        let [tip, base, origin] = parts[..] else {
            panic!("FORGE_HISTORY entries are GITDIR:BASE:TIP, not {entry}");
        };
        let work = scratch();
        let replay = replay_history(Path::new(origin), base, tip, work.path());
        assert!(
            replay.difference.is_none(),
            "{entry}: {}",
            replay.difference.unwrap_or_default()
        );
        eprintln!(
            "{entry}: {} identical commits, {} refused by both {:?}; git am {:.2}s, forge {:.2}s",
            replay.compared,
            replay.refused.len(),
            replay.refused,
            replay.seconds[0],
            replay.seconds[1]
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Generated cases.

/// The target a case's patch meets: A itself, B (already applied), or A changed so that the
/// patch moves, breaks or is blocked.
fn mutated_target(rng: &mut Rng, before: &State, after: &State) -> State {
    let target = mutation(rng, before, after);
    if is_valid(&target) {
        target
    } else {
        before.clone()
    }
}

fn mutation(rng: &mut Rng, before: &State, after: &State) -> State {
    let touched: Vec<String> = before
        .keys()
        .chain(after.keys())
        .filter(|path| before.get(*path) != after.get(*path))
        .cloned()
        .collect();
    let mut target = before.clone();
    let Some(path) = (!touched.is_empty()).then(|| rng.pick(&touched).clone()) else {
        return target;
    };
    match rng.below(12) {
        0 | 1 => {}
        2 => return after.clone(),
        3 | 4 => {
            if let Some(entry) = target.get_mut(&path)
                && entry.is_text()
            {
                let extra = format!("extra {}\n", rng.below(9));
                if rng.chance(50) {
                    entry.data.extend_from_slice(extra.as_bytes());
                } else {
                    let mut data = extra.into_bytes();
                    data.extend_from_slice(&entry.data);
                    entry.data = data;
                }
            }
        }
        5 => {
            if let Some(entry) = target.get_mut(&path)
                && entry.is_text()
            {
                entry.data = edit_text(rng, &entry.data);
            }
        }
        6 => {
            target.remove(&path);
        }
        7 => {
            // Something already where the patch writes.
            if let Some(entry) = after.get(&path)
                && !before.contains_key(&path)
                && can_add(&target, &path)
            {
                let mut entry = entry.clone();
                if rng.chance(50) && entry.is_text() {
                    entry.data.extend_from_slice(b"different\n");
                }
                target.insert(path, entry);
            }
        }
        8 => {
            // A folder where the patch writes a file.
            target.remove(&path);
            target.insert(format!("{path}/blocker"), Entry::text(b"in the way\n"));
        }
        9 => {
            if let Some(entry) = target.get_mut(&path)
                && entry.mode != GITLINK
            {
                entry.mode = match entry.mode {
                    REGULAR => EXECUTABLE,
                    EXECUTABLE => SYMLINK,
                    _ => REGULAR,
                };
                if entry.mode == SYMLINK {
                    entry.data = link_target(rng);
                }
            }
        }
        10 => {
            // A symbolic link on the way to the file.
            if let Some((folder, _)) = path.rsplit_once('/') {
                let prefix = format!("{folder}/");
                target.retain(|key, _| !key.starts_with(&prefix));
                if can_add(&target, folder) {
                    target.insert(
                        folder.to_owned(),
                        Entry {
                            mode: SYMLINK,
                            data: b"elsewhere".to_vec(),
                        },
                    );
                }
            }
        }
        _ => {
            if let Some(entry) = target.get_mut(&path)
                && matches!(entry.mode, REGULAR | EXECUTABLE)
            {
                entry.data.clear();
            }
        }
    }
    target
}

/// Damages a mail the way transfer and hand edits do: truncated, a hunk count off by one, a
/// context line changed, a header rewritten.
fn mutated_mail(rng: &mut Rng, mail: &[u8]) -> Vec<u8> {
    let text = mail.to_vec();
    let lines = lines(&text);
    match rng.below(8) {
        0 => lines[..rng.below(lines.len()).max(1)].concat(),
        1 => {
            let mut lines = lines;
            if let Some(at) = lines.iter().position(|line| line.starts_with(b"@@ -")) {
                let header = String::from_utf8_lossy(&lines[at]).into_owned();
                let bumped = header.replacen(",", &format!(",{}", rng.below(3)), 1);
                lines[at] = bumped.into_bytes();
            }
            lines.concat()
        }
        2 => {
            let mut lines = lines;
            let context: Vec<usize> = (0..lines.len())
                .filter(|&at| lines[at].starts_with(b" ") && lines[at].len() > 2)
                .collect();
            if !context.is_empty() {
                let at = *rng.pick(&context);
                lines[at] = b" context changed in transit\n".to_vec();
            }
            lines.concat()
        }
        3 => {
            let date = *rng.pick(&[
                "Mon, 6 Jul 2026 14:12:09 PDT",
                "yesterday",
                "2026-07-06T14:12:09+02:00",
                "6 Jul 2026 14:12:09 -0330 (NST)",
                "Mon, 6 Jul 2026 14:12:09",
                "Jul 6 2026 2:12pm +0100",
            ]);
            replace_header(&text, "Date", date)
        }
        4 => {
            let from = *rng.pick(&[
                "ada@example.org (Ada Lovelace)",
                "\"Lovelace, Ada\" <ada@example.org>",
                "=?ISO-8859-1?Q?J=F6rg_M=FCller?= <joerg@example.org>",
                "<nobody@example.org>",
                "Ada Lovelace",
                "Ada (the first) Lovelace <ada@example.org> (programmer)",
            ]);
            replace_header(&text, "From", from)
        }
        _ => text,
    }
}

fn replace_header(mail: &[u8], name: &str, value: &str) -> Vec<u8> {
    let text = String::from_utf8_lossy(mail).into_owned();
    let prefix = format!("\n{name}: ");
    let Some(start) = text.find(&prefix) else {
        return mail.to_vec();
    };
    let end = start + 1 + text[start + 1..].find('\n').unwrap();
    format!("{}\n{name}: {value}{}", &text[..start], &text[end..]).into_bytes()
}

#[test]
fn generated_cases_get_git_ams_verdict() {
    let seed = env_number("FORGE_DIFFERENTIAL_SEED", 11);
    let count = env_number("FORGE_DIFFERENTIAL_CASES", 1000) as usize;
    let mut rng = Rng(seed ^ 0x5eed);
    let mut cases = Vec::with_capacity(count);
    for index in 0..count {
        let before = random_state(&mut rng);
        let after = changed(&mut rng, &before);
        let author = random_author(&mut rng);
        let message = *rng.pick(&MESSAGES);
        let mut mail = mail_for(&before, &after, &author, message);
        if rng.chance(25) {
            mail = mutated_mail(&mut rng, &mail);
        }
        let target = mutated_target(&mut rng, &before, &after);
        cases.push(case(&format!("seed {seed} case {index}"), mail, &target));
    }
    let next = Mutex::new(0usize);
    let found = Mutex::new(Vec::new());
    let counts = Mutex::new([0usize; 2]);
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                loop {
                    let index = {
                        let mut next = next.lock().unwrap();
                        *next += 1;
                        *next - 1
                    };
                    let Some(case) = cases.get(index) else { break };
                    let work = scratch();
                    match compare(case, work.path()) {
                        Ok(verdict) => {
                            let applied = matches!(verdict, Verdict::Applied(_));
                            counts.lock().unwrap()[usize::from(applied)] += 1;
                        }
                        Err(report) => found.lock().unwrap().push(report),
                    }
                }
            });
        }
    });
    let found = found.into_inner().unwrap();
    let [refused, applied] = counts.into_inner().unwrap();
    assert!(
        found.is_empty(),
        "{} of {count} cases disagree with git am; the first:\n{}",
        found.len(),
        found[0]
    );
    // The generator must exercise both verdicts in earnest.
    assert!(
        applied > count / 5 && refused > count / 5,
        "applied {applied}, refused {refused}"
    );
}

// ---------------------------------------------------------------------------------------------
// Named cases: each class of disagreement with git found before, as its own test.

/// The mail for Ada's change of the one file `f` from `before` to `after`, and the state
/// before it.
fn change_of_f(before: &[u8], after: &[u8], message: &str) -> (State, Vec<u8>) {
    let before = state(&[("f", REGULAR, before)]);
    let after = state(&[("f", REGULAR, after)]);
    let mail = mail_for(&before, &after, &ada(), message);
    (before, mail)
}

fn lines_of(count: usize, word: &str) -> Vec<u8> {
    (0..count)
        .map(|_| format!("{word}\n"))
        .collect::<String>()
        .into_bytes()
}

/// Emptying a file: the reverse also applies, which once made it look already applied.
#[test]
fn emptying_a_file_is_applied() {
    let (before, mail) = change_of_f(b"a\nb\n", b"", "empty it");
    assert_both_apply(&case("emptying a file", mail, &before));
}

/// Deleting the last lines of a file whose remaining lines look like the context.
#[test]
fn deleting_trailing_lines_that_match_the_context_is_applied() {
    let (before, mail) = change_of_f(&lines_of(3, "a"), b"a\n", "drop the tail");
    assert_both_apply(&case("trailing lines", mail, &before));
}

/// The patch's own commit is in the branch, but a later commit reverted it: the change is not
/// in the tree, so the patch applies.
#[test]
fn a_patch_whose_commit_was_reverted_is_applied() {
    let before = state(&[("f", REGULAR, b"one\ntwo\nthree\n")]);
    let after = state(&[("f", REGULAR, b"one\n2\nthree\n")]);
    let author = ada();
    let mail = mail_for(&before, &after, &author, "change two");
    let mut reverted = case("reverted", mail, &before);
    reverted.target = vec![
        (before.clone(), base_author(), "base\n".to_owned()),
        (after.clone(), author.clone(), "change two\n".to_owned()),
        (
            before.clone(),
            base_author(),
            "Revert \"change two\"\n".to_owned(),
        ),
    ];
    assert_both_apply(&reverted);
}

/// A new-file patch onto an existing, different file.
#[test]
fn a_new_file_onto_an_existing_file_is_refused() {
    let before = state(&[("a", REGULAR, b"a\n")]);
    let after = with(&before, &[("f", Some((REGULAR, b"new\n")))]);
    let mail = mail_for(&before, &after, &ada(), "add f");
    let target = with(&before, &[("f", Some((REGULAR, b"other\n")))]);
    assert_both_refuse(&case("new onto existing", mail, &target));
}

/// A deletion whose preimage is not the file there.
#[test]
fn a_deletion_of_a_different_file_is_refused() {
    let before = state(&[("a", REGULAR, b"a\n"), ("f", REGULAR, b"a\nb\n")]);
    let after = with(&before, &[("f", None)]);
    let mail = mail_for(&before, &after, &ada(), "delete f");
    let target = with(&before, &[("f", Some((REGULAR, b"a\nb\nc\n")))]);
    assert_both_refuse(&case("deletion", mail, &target));
}

/// A rename, and a copy, onto a file that exists.
#[test]
fn a_rename_or_copy_onto_an_existing_file_is_refused() {
    let content = lines_of(20, "same");
    let before = state(&[("f", REGULAR, &content)]);
    let target = with(&before, &[("g", Some((REGULAR, b"other\n")))]);
    let renamed = with(&before, &[("f", None), ("g", Some((REGULAR, &content)))]);
    let mail = mail_for(&before, &renamed, &ada(), "rename f to g");
    assert!(String::from_utf8_lossy(&mail).contains("rename from f"));
    assert_both_refuse(&case("rename onto existing", mail, &target));
    let mut edited = content.clone();
    edited.extend_from_slice(b"one more\n");
    let copied = with(
        &before,
        &[
            ("f", Some((REGULAR, &edited))),
            ("g", Some((REGULAR, &content))),
        ],
    );
    let mail = mail_for(&before, &copied, &ada(), "copy f to g");
    assert!(String::from_utf8_lossy(&mail).contains("copy from f"));
    assert_both_refuse(&case("copy onto existing", mail, &target));
}

/// A hunk with no context after its change must match at the end of the file.
#[test]
fn a_hunk_that_must_end_the_file_is_refused_when_lines_follow() {
    let (_, mail) = change_of_f(b"a\nb\nc\n", b"a\nb\nc\nd\n", "append d");
    let target = state(&[("f", REGULAR, b"a\nb\nc\nx\n")]);
    assert_both_refuse(&case("end of file", mail, &target));
}

/// A hunk header whose counts are smaller than its lines.
#[test]
fn a_hunk_whose_counts_are_too_small_is_refused() {
    let (before, mail) = change_of_f(b"a\nb\nc\n", b"a\nB\nc\n", "b to B");
    let mail = String::from_utf8(mail).unwrap();
    assert!(mail.contains("@@ -1,3 +1,3 @@"), "{mail}");
    let mail = mail.replace("@@ -1,3 +1,3 @@", "@@ -1,2 +1,2 @@");
    assert_both_refuse(&case("counts", mail.into_bytes(), &before));
}

/// A patch cut off in the middle of a hunk.
#[test]
fn a_truncated_patch_is_refused() {
    let before = state(&[("f", REGULAR, &lines_of(10, "line"))]);
    let mut edited = lines_of(10, "line");
    edited.extend_from_slice(b"one\ntwo\nthree\n");
    let after = state(&[("f", REGULAR, &edited)]);
    let mail = String::from_utf8(mail_for(&before, &after, &ada(), "three more")).unwrap();
    // Cut after a whole line, and in the middle of one.
    let cut = mail.find("+two").expect("the hunk");
    assert_both_refuse(&case(
        "truncated at a line",
        mail.as_bytes()[..cut].to_vec(),
        &before,
    ));
    assert_both_refuse(&case(
        "truncated in a line",
        mail.as_bytes()[..cut + 2].to_vec(),
        &before,
    ));
    // The last line without its newline: the hunk is complete but for one byte.
    let end = mail.find("+three").expect("the last line") + "+three".len();
    assert_both_refuse(&case(
        "truncated at the last newline",
        mail.as_bytes()[..end].to_vec(),
        &before,
    ));
}

/// A folder replaced by a file of the same name (format-patch lists the new file first).
#[test]
fn a_folder_replaced_by_a_file_is_applied() {
    let before = state(&[
        ("d/x", REGULAR, b"x\n"),
        ("d/y", REGULAR, b"y\n"),
        ("e", REGULAR, b"e\n"),
    ]);
    let after = state(&[("d", REGULAR, b"now a file\n"), ("e", REGULAR, b"e\n")]);
    let mail = mail_for(&before, &after, &ada(), "d becomes a file");
    let facts = assert_both_apply(&case("folder to file", mail, &before));
    assert!(facts.contains("d becomes a file"), "{facts}");
}

/// A folder replaced by a symbolic link, and a link replaced by a folder.
#[test]
fn a_symlink_and_paths_beneath_it_in_one_patch_are_applied() {
    let folder = state(&[
        ("d/x", REGULAR, b"x\n"),
        ("d/y/z", REGULAR, b"z\n"),
        ("e", REGULAR, b"e\n"),
    ]);
    let link = state(&[("d", SYMLINK, b"e"), ("e", REGULAR, b"e\n")]);
    let mail = mail_for(&folder, &link, &ada(), "d becomes a link");
    assert_both_apply(&case("folder to link", mail, &folder));
    let mail = mail_for(&link, &folder, &ada(), "d becomes a folder");
    assert_both_apply(&case("link to folder", mail, &link));
}

/// A submodule bump (`Subproject commit a` to `b`), which once crashed inside libgit2.
#[test]
fn a_submodule_bump_is_applied() {
    let old = b"1111111111111111111111111111111111111111";
    let new = b"2222222222222222222222222222222222222222";
    let before = state(&[("a", REGULAR, b"a\n"), ("sub", GITLINK, old)]);
    let after = state(&[("a", REGULAR, b"a\n"), ("sub", GITLINK, new)]);
    let mail = mail_for(&before, &after, &ada(), "bump sub");
    assert!(String::from_utf8_lossy(&mail).contains("+Subproject commit 2222"));
    assert_both_apply(&case("submodule bump", mail, &before));
}

/// `old mode 100644` / `new mode 160000` on a regular file: git refuses to make a gitlink of it.
#[test]
fn a_mode_change_into_a_gitlink_is_refused() {
    let before = state(&[("f", REGULAR, b"text\n")]);
    let after = state(&[("f", EXECUTABLE, b"text\n")]);
    let mail = String::from_utf8(mail_for(&before, &after, &ada(), "mode")).unwrap();
    let mail = mail.replace("new mode 100755", "new mode 160000");
    assert_both_refuse(&case("gitlink mode", mail.into_bytes(), &before));
}

fn header_case(label: &str, edit: impl Fn(String) -> String) -> (Case, State) {
    let (before, mail) = change_of_f(b"a\n", b"a\nb\n", "add b\n\nA body.");
    let mail = String::from_utf8(mail).unwrap();
    (case(label, edit(mail).into_bytes(), &before), before)
}

/// `Date: ... PDT` is -0700; `Date: yesterday` is refused.
#[test]
fn mail_dates_are_read_as_git_reads_them() {
    let (pdt, _) = header_case("PDT", |mail| {
        replace_date(&mail, "Mon, 6 Jul 2026 14:12:09 PDT")
    });
    let facts = assert_both_apply(&pdt);
    assert!(facts.contains(" 1783372329 -420 "), "{facts}");
    let (yesterday, _) = header_case("yesterday", |mail| replace_date(&mail, "yesterday"));
    assert_both_refuse(&yesterday);
}

fn replace_date(mail: &str, date: &str) -> String {
    String::from_utf8(replace_header(mail.as_bytes(), "Date", date)).unwrap()
}

/// A body in ISO-8859-1 is converted to UTF-8.
#[test]
fn a_latin1_body_is_converted_to_utf8() {
    let (before, mail) = change_of_f(b"a\n", b"a\nb\n", "add b\n\nCafé crème.");
    let mail = String::from_utf8(mail).unwrap();
    assert!(mail.contains("charset=UTF-8"), "{mail}");
    let latin1: Vec<u8> = mail
        .replace("charset=UTF-8", "charset=ISO-8859-1")
        .chars()
        .map(|c| c as u32 as u8)
        .collect();
    let facts = assert_both_apply(&case("latin-1", latin1, &before));
    assert!(facts.contains("Café crème."), "{facts}");
}

/// `From: ada@example.org (Ada Lovelace)` names Ada Lovelace.
#[test]
fn a_from_with_the_name_in_a_comment_keeps_the_name() {
    let (comment, _) = header_case("comment", |mail| {
        String::from_utf8(replace_header(
            mail.as_bytes(),
            "From",
            "ada@example.org (Ada Lovelace)",
        ))
        .unwrap()
    });
    let facts = assert_both_apply(&comment);
    assert!(
        facts.contains("\"Ada Lovelace\" <\"ada@example.org\">"),
        "{facts}"
    );
}

/// A no-break space or an ideographic space at the end of a line stays in the message.
#[test]
fn trailing_non_ascii_spaces_stay_in_the_message() {
    let (before, mail) = change_of_f(b"a\n", b"b\n", "spaces\u{3000}\n\nno-break\u{a0}\n");
    let facts = assert_both_apply(&case("spaces", mail, &before));
    assert!(facts.contains(r"no-break\u{a0}"), "{facts}");
}
