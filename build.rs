//! Names the commit and date forge is built from, for `forge --version`: `git describe`-like
//! text from the repository when there is one, else the package version alone.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?.trim().to_owned();
    (!text.is_empty()).then_some(text)
}

fn main() {
    let version = env!("CARGO_PKG_VERSION");
    let long = match (
        git(&["rev-parse", "--short=12", "HEAD"]),
        git(&["log", "-1", "--format=%cs"]),
    ) {
        (Some(commit), Some(date)) => {
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some();
            let suffix = if dirty { "-modified" } else { "" };
            format!("{version} ({commit}{suffix} {date})")
        }
        _ => version.to_owned(),
    };
    println!("cargo:rustc-env=FORGE_LONG_VERSION={long}");
    // A new commit or a checkout changes HEAD or the ref it names.
    for path in [".git/HEAD", ".git/index"] {
        if std::path::Path::new(path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"]) {
        let path = format!(".git/{reference}");
        if std::path::Path::new(&path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}
