//! The test harness: a temporary recipe folder and a way to run the real `forge` binary in it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root, where the default recipe lives.
pub fn repository_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// What a forge run left behind.
#[derive(Debug)]
pub struct Run {
    /// The exit code.
    pub code: i32,
    /// Everything on stdout.
    pub stdout: String,
    /// Everything on stderr.
    pub stderr: String,
}

impl Run {
    /// Panics with both streams unless forge exited with `code`.
    #[track_caller]
    pub fn expect_code(self, code: i32) -> Self {
        assert_eq!(
            self.code, code,
            "forge exited {} (wanted {code})\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        );
        self
    }

    /// stdout parsed as the one JSON document `--json` promises.
    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|error| {
            panic!(
                "stdout is not one JSON document ({error}):\n{}",
                self.stdout
            )
        })
    }
}

/// A temporary recipe folder.
pub struct TestContext {
    dir: tempfile::TempDir,
}

impl TestContext {
    /// An empty folder.
    pub fn empty() -> Self {
        Self {
            dir: tempfile::tempdir().expect("a temporary folder"),
        }
    }

    /// A copy of the default recipe at the repository root (pins.toml, templates, patches,
    /// overlays).
    pub fn default_recipe() -> Self {
        let context = Self::empty();
        let root = repository_root();
        for entry in ["pins.toml", "templates", "patches", "overlays"] {
            copy_tree(&root.join(entry), &context.path().join(entry));
        }
        context
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes `text` to `relative` inside the folder, creating parents.
    pub fn write(&self, relative: &str, text: &str) -> &Self {
        let path = self.path().join(relative);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("create parents");
        std::fs::write(path, text).expect("write");
        self
    }

    /// The text of `relative` inside the folder.
    pub fn read(&self, relative: &str) -> String {
        std::fs::read_to_string(self.path().join(relative)).expect("read")
    }

    /// Replaces the first occurrence of `from` with `to` in `relative`, which must contain it.
    pub fn edit(&self, relative: &str, from: &str, to: &str) -> &Self {
        let text = self.read(relative);
        assert!(text.contains(from), "{relative} does not contain {from:?}");
        self.write(relative, &text.replacen(from, to, 1))
    }

    /// Runs `forge -C <folder> args...`.
    pub fn forge(&self, args: &[&str]) -> Run {
        self.forge_with(args, &[])
    }

    /// Runs `forge -C <folder> args...` with extra environment variables.
    pub fn forge_with(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut command = Command::new(env!("CARGO_BIN_EXE_forge"));
        command
            .arg("-C")
            .arg(self.path())
            .args(args)
            .current_dir(self.path());
        command.env_remove("SOURCE_DATE_EPOCH").env("NO_COLOR", "1");
        for (name, value) in env {
            command.env(name, value);
        }
        let output = command.output().expect("forge runs");
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

/// Copies a file or folder tree.
pub fn copy_tree(from: &Path, to: &Path) {
    if from.is_dir() {
        std::fs::create_dir_all(to).expect("create folder");
        for entry in std::fs::read_dir(from).expect("read folder") {
            let entry = entry.expect("folder entry");
            copy_tree(&entry.path(), &to.join(entry.file_name()));
        }
    } else {
        std::fs::copy(from, to).expect("copy file");
    }
}
