//! Git remotes for the tests: a bare repository with a branch of three commits and a side
//! branch, series made from it with `git format-patch`, and the default recipe's DeepGEMM pin
//! pointed at it.

use std::path::Path;

use crate::support::{TestContext, git_in};

/// A bare repository with a `nv_dev` branch of three commits (the third also adds
/// `docs.txt`), and a side branch.
pub(crate) struct GitRemote {
    pub(crate) folder: tempfile::TempDir,
    pub(crate) first: String,
    pub(crate) second: String,
    pub(crate) head: String,
    pub(crate) side: String,
}

/// Runs git in `folder` with a fixed identity and returns its stdout, trimmed.
pub(crate) fn git(folder: &Path, args: &[&str]) -> String {
    let identity = ["-c", "user.name=Test", "-c", "user.email=test@example.org"];
    let all = [&identity[..], &["-c", "init.defaultBranch=main"], args].concat();
    git_in(folder, &all, &[]).trim().to_owned()
}

impl GitRemote {
    pub(crate) fn new() -> Self {
        let folder = tempfile::tempdir().unwrap();
        let work = folder.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        git(&work, &["init", "--quiet"]);
        let first = commit(&work, "first", &[("kernel.txt", "first\n")]);
        let second = commit(&work, "second", &[("kernel.txt", "second\n")]);
        let head = commit(
            &work,
            "third",
            &[("kernel.txt", "third\n"), ("docs.txt", "docs\n")],
        );
        git(&work, &["branch", "-m", "nv_dev"]);
        git(&work, &["checkout", "--quiet", "-b", "side", &first]);
        let side = commit(&work, "side", &[("kernel.txt", "side\n")]);
        git(
            &work,
            &[
                "clone",
                "--quiet",
                "--bare",
                ".",
                folder.path().join("remote.git").to_str().unwrap(),
            ],
        );
        Self {
            folder,
            first,
            second,
            head,
            side,
        }
    }

    pub(crate) fn url(&self) -> String {
        format!("file://{}", self.folder.path().join("remote.git").display())
    }

    /// Writes a `git format-patch` series into `into`: one commit per entry of `commits`, made
    /// on a branch from `base`.
    pub(crate) fn series(&self, base: &str, commits: &[(&str, &[(&str, &str)])], into: &Path) {
        self.series_by(None, base, commits, into);
    }

    /// `series`, with the commits authored by `author` (`Name <email>`) when given, rather than
    /// by the committer.
    pub(crate) fn series_by(
        &self,
        author: Option<&str>,
        base: &str,
        commits: &[(&str, &[(&str, &str)])],
        into: &Path,
    ) {
        let work = self.folder.path().join("work");
        git(&work, &["checkout", "--quiet", "--detach", base]);
        for (message, files) in commits {
            commit_by(&work, author, message, files);
        }
        let count = format!("-{}", commits.len());
        git(
            &work,
            &[
                "format-patch",
                "--quiet",
                &count,
                "-o",
                into.to_str().unwrap(),
            ],
        );
    }
}

/// Commits `files` (path, content) in `work` and returns the commit id.
fn commit(work: &Path, message: &str, files: &[(&str, &str)]) -> String {
    commit_by(work, None, message, files)
}

/// `commit`, authored by `author` (`Name <email>`) when given; paths may name new folders.
fn commit_by(work: &Path, author: Option<&str>, message: &str, files: &[(&str, &str)]) -> String {
    for (path, content) in files {
        let path_in_work = work.join(path);
        std::fs::create_dir_all(path_in_work.parent().unwrap()).unwrap();
        std::fs::write(path_in_work, content).unwrap();
        git(work, &["add", path]);
    }
    let author = author.map(|author| format!("--author={author}"));
    let mut args = vec!["commit", "--quiet", "-m", message];
    args.extend(author.as_deref());
    git(work, &args);
    git(work, &["rev-parse", "HEAD"])
}

/// Adds a `[[patches]]` entry for the series folder `series` onto `remote` at `rev`.
pub(crate) fn with_series_onto(
    context: &TestContext,
    series: &str,
    remote: &GitRemote,
    rev: &str,
) -> String {
    // The series is made against the commit the pin builds.
    context.edit(
        "pins.toml",
        "rev = \"a6b593d2826719dcf4892609af7b84ee23aaf32a\"",
        &format!("rev = \"{rev}\""),
    );
    context.edit(
        "pins.toml",
        "[[overlays]]",
        &format!(
            "[[patches]]                    # DeepGEMM fixes, kept until upstream takes them\nseries = \"{series}\"\nonto = {{ git = \"{}\", rev = \"{rev}\" }}\n\n[[overlays]]",
            remote.url()
        ),
    );
    context.read("pins.toml")
}

/// The default recipe with DeepGEMM at a local remote's first commit and a series of
/// `commits` (message, files) onto it in patches/deepgemm.
pub(crate) fn with_a_deepgemm_series(
    commits: &[(&str, &[(&str, &str)])],
) -> (TestContext, GitRemote) {
    let context = TestContext::default_recipe_on_indexes();
    let remote = GitRemote::new();
    with_git_remote(&context, &remote);
    remote.series(
        &remote.first,
        commits,
        &context.path().join("patches/deepgemm"),
    );
    with_series_onto(&context, "patches/deepgemm", &remote, &remote.first);
    (context, remote)
}

/// Points the DeepGEMM pin at `remote`; returns pins.toml as it is then.
pub(crate) fn with_git_remote(context: &TestContext, remote: &GitRemote) -> String {
    deepgemm_from(context, &remote.url())
}

/// Points the DeepGEMM pin at `url`; returns pins.toml as it is then.
pub(crate) fn deepgemm_from(context: &TestContext, url: &str) -> String {
    context.edit(
        "pins.toml",
        "url = \"https://github.com/deepseek-ai/DeepGEMM.git\"",
        &format!("url = \"{url}\""),
    );
    context.read("pins.toml")
}
