//! The machinery the three modes share: states written as commits with git2, both tools run
//! as processes on identical checkouts, and one case judged by both.

use super::*;

/// The committer both tools record, and when.
pub(super) const COMMITTER: (&str, &str) = ("Diff Committer", "committer@example.org");
pub(super) const COMMITTER_EPOCH: i64 = 1_780_000_000;

pub(super) const REGULAR: u32 = 0o100644;
pub(super) const EXECUTABLE: u32 = 0o100755;
pub(super) const SYMLINK: u32 = 0o120000;
pub(super) const GITLINK: u32 = 0o160000;

// ---------------------------------------------------------------------------------------------
// Random numbers, states and commits.

/// A file as git stores it: mode and content (a gitlink's content is its commit id in hex).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Entry {
    pub(super) mode: u32,
    pub(super) data: Vec<u8>,
}

impl Entry {
    pub(super) fn text(data: &[u8]) -> Self {
        Entry {
            mode: REGULAR,
            data: data.to_vec(),
        }
    }

    pub(super) fn is_text(&self) -> bool {
        matches!(self.mode, REGULAR | EXECUTABLE) && !self.data.contains(&0)
    }
}

/// A tree: path to entry.
pub(super) type State = BTreeMap<String, Entry>;

/// Whether `path` can hold a file in `state`: no file on the way to it, no folder at it.
pub(super) fn can_add(state: &State, path: &str) -> bool {
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
pub(super) fn is_valid(state: &State) -> bool {
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
pub(super) struct Author {
    pub(super) name: String,
    pub(super) email: String,
    pub(super) seconds: i64,
    pub(super) offset_minutes: i32,
}

pub(super) fn write_tree(repository: &Repository, state: &State) -> Oid {
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

pub(super) fn commit(
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
pub(super) fn repository_with(folder: &Path, history: &[(State, Author, String)]) -> Oid {
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

pub(super) fn tool_environment(home: &Path) -> Vec<(&'static str, String)> {
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

pub(super) fn git(folder: &Path, home: &Path, args: &[&str]) -> Output {
    let mut command = Command::new("git");
    command.args(args).current_dir(folder);
    for (name, value) in tool_environment(home) {
        command.env(name, value);
    }
    command.output().expect("git runs")
}

pub(super) fn forge_binary() -> PathBuf {
    std::env::var_os("FORGE_DIFFERENTIAL_BINARY")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_forge")))
}

pub(super) fn forge(folder: &Path, home: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(forge_binary());
    command.args(args).current_dir(folder);
    for (name, value) in tool_environment(home) {
        command.env(name, value);
    }
    command.output().expect("forge runs")
}

pub(super) fn head_of(folder: &Path) -> Oid {
    Repository::open(folder)
        .unwrap()
        .head()
        .unwrap()
        .target()
        .unwrap()
}

/// tree, author, message of a commit, for messages about disagreements.
pub(super) fn facts(folder: &Path, id: Oid) -> String {
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
pub(super) fn scratch() -> tempfile::TempDir {
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

pub(super) fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

// ---------------------------------------------------------------------------------------------
// One case: a patch, a target, both tools, one verdict.

/// What `git am` did with a case, and what forge did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Verdict {
    /// A new commit with this id (identical ids mean identical tree, author, message).
    Applied(Oid),
    /// Nothing moved; `already` says forge called it already applied.
    Refused { already: bool },
}

/// A patch case: the mail, and the history of the target it is applied onto.
pub(super) struct Case {
    pub(super) label: String,
    pub(super) mail: Vec<u8>,
    pub(super) target: Vec<(State, Author, String)>,
}

/// git am's verdict on a case, whether `git apply -R --check` accepts the patch there, and
/// forge's verdict (with its output, for the report).
pub(super) fn judge(case: &Case, work: &Path) -> (Verdict, bool, Verdict, String) {
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
pub(super) fn compare(case: &Case, work: &Path) -> Result<Verdict, String> {
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
pub(super) fn breaks_index_line(folder: &Path, commit: Oid, mail: &[u8]) -> bool {
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
pub(super) fn assert_agrees(case: &Case) -> Option<String> {
    let work = scratch();
    match compare(case, work.path()).unwrap_or_else(|report| panic!("{report}")) {
        Verdict::Applied(id) => Some(facts(&work.path().join("am"), id)),
        Verdict::Refused { .. } => None,
    }
}

/// A named case that git applies; returns the facts of the commit both made.
#[track_caller]
pub(super) fn assert_both_apply(case: &Case) -> String {
    assert_agrees(case).unwrap_or_else(|| panic!("{}: git am refused it", case.label))
}

/// A named case that git refuses: forge must refuse it too.
#[track_caller]
pub(super) fn assert_both_refuse(case: &Case) {
    if let Some(facts) = assert_agrees(case) {
        panic!("{}: git am applied it: {facts}", case.label);
    }
}

/// The mail `git format-patch -M -C --binary` writes for the change from `before` to `after`.
pub(super) fn mail_for(before: &State, after: &State, author: &Author, message: &str) -> Vec<u8> {
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

pub(super) fn base_author() -> Author {
    Author {
        name: "Base Author".to_owned(),
        email: "base@example.org".to_owned(),
        seconds: 1_700_000_000,
        offset_minutes: 0,
    }
}

pub(super) fn ada() -> Author {
    Author {
        name: "Ada Lovelace".to_owned(),
        email: "ada@example.org".to_owned(),
        seconds: 1_783_339_929,
        offset_minutes: 120,
    }
}

/// A case whose target is `target` (a single commit).
pub(super) fn case(label: &str, mail: Vec<u8>, target: &State) -> Case {
    Case {
        label: label.to_owned(),
        mail,
        target: vec![(target.clone(), base_author(), "target\n".to_owned())],
    }
}

pub(super) fn state(files: &[(&str, u32, &[u8])]) -> State {
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
pub(super) type Change<'a> = (&'a str, Option<(u32, &'a [u8])>);

pub(super) fn with(base: &State, changes: &[Change<'_>]) -> State {
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

pub(super) fn replace_header(mail: &[u8], name: &str, value: &str) -> Vec<u8> {
    let text = String::from_utf8_lossy(mail).into_owned();
    let prefix = format!("\n{name}: ");
    let Some(start) = text.find(&prefix) else {
        return mail.to_vec();
    };
    let end = start + 1 + text[start + 1..].find('\n').unwrap();
    format!("{}\n{name}: {value}{}", &text[..start], &text[end..]).into_bytes()
}
