//! `verify-digest --contents` reads what pip left of each pinned wheel: the `WHEEL` file names
//! which of the files pins.toml records was installed, and `RECORD` holds the sha256 of every
//! file pip wrote. pip itself installs the distribution here (choosing between a manylinux2014
//! and a manylinux_2_28 file as it does on the image), into a base made from the Python image;
//! then the recorded image is swapped for one with a changed file, and for one holding a file
//! pins.toml does not record.

use std::path::Path;
use std::process::Command;

use crate::support::TestContext;
use crate::support::image_guard::{ImageGuard, LABEL};
use crate::support::images::{daemon_platform, docker_available, image_id};
use crate::support::python_image;
use crate::support::release::{sha256_hex, wheel};
use crate::support::verify::{row, verify_in};

const PACKAGE: &str = "forge-record-probe";
const MODULE: &str = "forge_record_probe";

/// The wheel files of 1.0 for the daemon's machine: pip on this machine (glibc 2.28 or newer)
/// takes the second.
fn files() -> [String; 2] {
    let machine = match daemon_platform().as_str() {
        "linux/arm64" => "aarch64",
        _ => "x86_64",
    };
    [
        format!("{MODULE}-1.0-py3-none-manylinux_2_17_{machine}.manylinux2014_{machine}.whl"),
        format!("{MODULE}-1.0-py3-none-manylinux_2_28_{machine}.whl"),
    ]
}

/// A file of 1.0 pins.toml does not record.
const UNRECORDED: &str = "forge_record_probe-1.0-py3-none-any.whl";

/// pip installs `forge-record-probe==1.0` from `wheels` (a folder of files) into `target`, as
/// the image's step does: no index, no dependencies, wheels only, the machine's pip
/// configuration left out.
fn pip_install(wheels: &Path, target: &Path) {
    let interpreter = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 runs");
    let interpreter = String::from_utf8(interpreter.stdout).unwrap();
    let output = Command::new(interpreter.trim())
        .args([
            "-m",
            "pip",
            "install",
            "--no-index",
            "--no-deps",
            "--only-binary",
            ":all:",
        ])
        .arg("--find-links")
        .arg(wheels)
        .arg("--target")
        .arg(target)
        .arg(format!("{PACKAGE}==1.0"))
        .env("PIP_CONFIG_FILE", "/dev/null")
        .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        .output()
        .expect("pip runs");
    assert!(
        output.status.success(),
        "pip install: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Builds `dockerfile` with `installed` (a pip target folder) in its context as `site/`,
/// tagged `tag` if given; returns the image id.
fn docker_build(dockerfile: &str, installed: Option<&Path>, tag: Option<&str>) -> String {
    let context = tempfile::tempdir().unwrap();
    std::fs::write(context.path().join("Dockerfile"), dockerfile).unwrap();
    if let Some(installed) = installed {
        crate::support::copy_tree(installed, &context.path().join("site"));
    }
    let output = Command::new("docker")
        .args(["build", "--quiet"])
        .args(tag.map(|tag| ["--tag", tag]).into_iter().flatten())
        .arg(context.path())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "docker build: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// A recipe whose base holds what pip installed from the files; pins.toml pins the package at
/// 1.0 with both files' sha256. Returns it with the file names.
fn recipe(repository: &str, images: &ImageGuard) -> (TestContext, [String; 2]) {
    let python = python_image::ensure();
    let wheels = tempfile::tempdir().unwrap();
    let files = files();
    let mut recorded = Vec::new();
    for file in &files {
        let bytes = wheel(file, file);
        recorded.push(format!(
            "{{ file = \"{file}\", sha256 = \"{}\" }}",
            sha256_hex(&bytes)
        ));
        std::fs::write(wheels.path().join(file), bytes).unwrap();
    }
    let installed = tempfile::tempdir().unwrap();
    pip_install(wheels.path(), installed.path());
    // The build's FROM needs a name: the builder would look a bare image id up on Docker Hub.
    let base = format!("{repository}-base:pip");
    docker_build(
        &format!(
            "FROM {}\nCOPY site/ {}/\nLABEL {LABEL}=\"{repository}\"\n",
            python.name, python.site_packages
        ),
        Some(installed.path()),
        Some(&base),
    );
    let context = TestContext::empty();
    context.write(
        "pins.toml",
        &format!(
            "[image]\nrepository = \"{repository}\"\ndate = \"2026-07-08\"\nplatform = \"{}\"\n\n\
             [image.tags]\nmoving = [\"latest\"]\n\n\
             [image.labels]\n{}\n\n\
             [base]\nimage = \"{base}\"\n\n\
             [pins.probe]\nkind = \"python\"\npackage = \"{PACKAGE}\"\nmodule = \"{MODULE}\"\nversion = \"1.0\"\n\
             files = [{}]\n",
            daemon_platform(),
            images.label_entry(),
            recorded.join(", "),
        ),
    );
    context.write(
        "templates/Dockerfile.j2",
        "FROM {{ base.reference }}\n\
         RUN {{ pins.probe.gate }}\n\
         LABEL{% for label in image.labels %} {{ label.name }}=\"{{ label.value }}\"{% endfor %}\n",
    );
    (context, files)
}

/// Makes forge.lock name `image` as the build's image.
fn record_image(context: &TestContext, image: &str) {
    let lock = context.read("forge.lock");
    let recorded: toml::Value = toml::from_str(&lock).unwrap();
    let id = recorded["image"]["id"].as_str().unwrap().to_owned();
    context.write("forge.lock", &lock.replace(&id, image));
}

#[test]
fn contents_name_the_pinned_file_pip_installed_and_each_file_changed_after() {
    if !docker_available() {
        return;
    }
    let repository = format!("forge-test/wheel-record-{}", std::process::id());
    let images = ImageGuard::new(&repository);
    let (context, [_, newest]) = recipe(&repository, &images);
    context.forge(&["build"]).expect_code(0);
    let built = image_id(&format!("{repository}:latest")).unwrap();
    let wheel_row = "probe (forge-record-probe) wheel";
    let record_row = "probe (forge-record-probe) RECORD";

    // pip took the manylinux_2_28 file, and every file is as it wrote it.
    let json = verify_in(&context, &["--contents"], &[])
        .expect_code(0)
        .json();
    let found = row(&json, "pin", wheel_row);
    assert_eq!(
        (&found["expected"], &found["actual"], &found["ok"]),
        (
            &newest.as_str().into(),
            &newest.as_str().into(),
            &true.into()
        ),
        "{json:#}"
    );
    assert_eq!(
        row(&json, "pin", record_row)["actual"],
        "every file as RECORD lists"
    );
    assert_eq!(row(&json, "pin", record_row)["ok"], true);

    // One byte appended to the module after pip installed it.
    let site = python_image::ensure().site_packages;
    let changed = docker_build(
        &format!("FROM {built}\nRUN printf x >> {site}/{MODULE}/__init__.py\n"),
        None,
        None,
    );
    record_image(&context, &changed);
    let json = verify_in(&context, &["--contents"], &[])
        .expect_code(1)
        .json();
    let found = row(&json, "pin", record_row);
    assert_eq!(found["ok"], false, "{json:#}");
    assert_eq!(
        found["actual"],
        format!("1 of 5 changed since pip installed them: {site}/{MODULE}/__init__.py").as_str()
    );
    assert_eq!(row(&json, "pin", wheel_row)["ok"], true);

    // The same version installed from a file pins.toml does not record.
    let wheels = tempfile::tempdir().unwrap();
    std::fs::write(wheels.path().join(UNRECORDED), wheel(UNRECORDED, "any")).unwrap();
    let installed = tempfile::tempdir().unwrap();
    pip_install(wheels.path(), installed.path());
    let other = docker_build(
        &format!("FROM {built}\nCOPY site/ {site}/\n"),
        Some(installed.path()),
        None,
    );
    record_image(&context, &other);
    let json = verify_in(&context, &["--contents"], &[])
        .expect_code(1)
        .json();
    let found = row(&json, "pin", wheel_row);
    assert_eq!(found["ok"], false, "{json:#}");
    assert_eq!(found["actual"], "tags py3-none-any");
    assert_eq!(
        found["expected"],
        format!("one of {}", files().join(", ")).as_str()
    );
    drop(images);
}
