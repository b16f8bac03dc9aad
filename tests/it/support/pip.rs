//! pip as the judge of a rendered install step: the step's own `printf '%s\n' LINE... | python3
//! -m pip install ... -r /dev/stdin`, run on this machine into a scratch folder, for the image's
//! platform and Python, with none of this machine's pip configuration.

use std::process::{Command, Output};

/// The rendered step that installs `marker` (a package in its requirement lines): its pip
/// command (the step up to its first `&&`, continuation lines joined) and the lines it gives pip.
fn step(dockerfile: &str, marker: &str) -> (String, Vec<String>) {
    let mut steps = Vec::new();
    let mut current = String::new();
    for line in dockerfile.lines() {
        match line.strip_suffix('\\') {
            Some(continued) => current.push_str(continued),
            None => {
                current.push_str(line);
                steps.push(std::mem::take(&mut current));
            }
        }
    }
    let step = steps
        .iter()
        .find(|step| step.starts_with("RUN printf '%s\\n'") && step.contains(marker))
        .unwrap_or_else(|| panic!("no rendered pip step installs {marker}:\n{dockerfile}"));
    let command = step
        .strip_prefix("RUN ")
        .and_then(|step| step.split(" && ").next())
        .expect("a pip command")
        .to_owned();
    let words = command
        .strip_prefix("printf '%s\\n'")
        .and_then(|rest| rest.split(" | ").next())
        .expect("printf's lines");
    let lines = words
        .split('\'')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect();
    (command, lines)
}

/// The requirement lines the rendered step that installs `marker` hands pip, as written:
/// `package==version --hash=sha256:...`, or a URL with its `--hash`.
pub fn requirement_lines(dockerfile: &str, marker: &str) -> Vec<String> {
    step(dockerfile, marker).1
}

/// Runs the pip command of the rendered step that installs `marker`, as the image's build does,
/// into a scratch folder for linux/aarch64 with glibc 2.34 and CPython 3.12; `index` is the
/// index pip asks.
pub fn run_step(dockerfile: &str, marker: &str, index: Option<&str>) -> Output {
    let (command, _) = step(dockerfile, marker);
    let target = tempfile::tempdir().expect("a scratch folder");
    // `python3` is the interpreter itself, not a version manager's shim around it (a shim that
    // rehashes after an install fails when two tests install at once).
    let bin = tempfile::tempdir().expect("a scratch folder");
    let interpreter = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 runs");
    let interpreter = String::from_utf8(interpreter.stdout).expect("a path");
    std::os::unix::fs::symlink(interpreter.trim(), bin.path().join("python3"))
        .expect("link python3");
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut shell = Command::new("bash");
    shell
        .args(["-o", "pipefail", "-c", &command])
        .env("PATH", path)
        .env("PIP_CONFIG_FILE", "/dev/null")
        .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        .env("PIP_NO_INPUT", "1")
        .env("PIP_TARGET", target.path())
        // Every manylinux tag a glibc 2.34 system takes, newest first, as pip ranks them on one.
        .env(
            "PIP_PLATFORM",
            "manylinux_2_34_aarch64 manylinux_2_28_aarch64 manylinux_2_17_aarch64 manylinux2014_aarch64 linux_aarch64",
        )
        .env("PIP_PYTHON_VERSION", "3.12");
    if let Some(index) = index {
        shell.env("PIP_INDEX_URL", index);
    }
    shell.output().expect("bash runs the step")
}
