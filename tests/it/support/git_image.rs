//! A git-capable base image made on the spot from busybox and the host's own `git`, for the
//! tests whose build steps apply a patch series with `git apply` (no registry can be reached to
//! pull one).
//!
//! `git apply` is a builtin of the main binary, so the binary, the libraries `ldd` names for it
//! and the dynamic loader are all it needs at run time; `/bin/git` links to it, since the image's
//! PATH is busybox's `/bin`.

use std::path::PathBuf;
use std::sync::OnceLock;

use crate::support::host_image::{self, Tree};

/// The repository the image is imported under; the tag is a content hash.
const REPOSITORY: &str = "forge-test-git";

/// Makes the image unless one with the same content exists, and returns its name.
pub(crate) fn ensure() -> String {
    static MADE: OnceLock<String> = OnceLock::new();
    MADE.get_or_init(|| {
        let git = host_git();
        let git = git.to_str().expect("a UTF-8 path");
        let mut tree = Tree::default();
        tree.busybox();
        tree.binary(git);
        if git != "/bin/git" {
            tree.link("/bin/git", git);
        }
        host_image::imported(REPOSITORY, &tree)
    })
    .clone()
}

/// The host's `git`, found on PATH, symbolic links resolved.
fn host_git() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|folder| folder.join("git"))
        .find(|candidate| candidate.is_file())
        .map(|found| std::fs::canonicalize(found).expect("resolve the path of git"))
        .expect("git on PATH (apt-get install git)")
}
