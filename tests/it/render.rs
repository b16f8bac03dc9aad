//! forge render: the default Dockerfile, pinned by a snapshot and linted by hadolint; strict
//! templates; byte-identical output; --out and --check.

use std::process::Command;

use crate::support::assert_hadolint_passes;
use crate::support::snapshot::forge_snapshot;
use crate::support::{
    TestContext, assert_check_catches_a_stale_render, assert_contains, repository_root,
    with_deepgemm_series,
};

#[test]
fn default_dockerfile_matches_the_snapshot() {
    let run = TestContext::default_recipe()
        .forge(&["render"])
        .expect_code(0);
    insta::assert_snapshot!("default_dockerfile", run.stdout);
}

#[test]
fn default_dockerfile_carries_every_pin_and_a_gate_per_step() {
    let text = TestContext::default_recipe()
        .forge(&["render"])
        .expect_code(0)
        .stdout;
    for needle in [
        "FROM ghcr.io/aeon-7/aeon-vllm-ultimate:2026-07-01-v0.24.0\n",
        "('nvidia-cutlass-dsl', '4.6.0')",
        "from cutlass.cute.core import ThrMma, TiledMma",
        "--branch nv_dev",
        "checkout --quiet --detach a6b593d2826719dcf4892609af7b84ee23aaf32a",
        "grep -q '^a6b593d2826719dcf4892609af7b84ee23aaf32a' /opt/forge/revisions/deepgemm",
        "'apache-tvm-ffi==0.1.11 --hash=sha256:da2c8d07fdc737d1ba75f4de25c29f156905b9dc980f1da90c395b4db525f522 --hash=sha256:a8b845c8dff498fb981c1dda36c954549204191b485a385845e604966594d0b2' 'tilelang==0.1.11 --hash=sha256:c7b0dedc0a181486b7fa137d04eaf793271a7573ebd30e77838c18321a3206db'",
        "--no-deps --only-binary :all: --require-hashes -r /dev/stdin",
        "'https://github.com/flashinfer-ai/flashinfer/releases/download/v0.6.14/flashinfer_python-0.6.14-py3-none-any.whl' 'https://github.com/flashinfer-ai/flashinfer/releases/download/v0.6.14/flashinfer_cubin-0.6.14-py3-none-any.whl'",
        "/v0.6.14/flashinfer_jit_cache-0.6.14+cu130-cp39-abi3-manylinux_2_28_aarch64.whl' \\\n",
        "('flashinfer-jit-cache', '0.6.14+cu130')",
        "wanted 2.28.9",
        "ENV VLLM_DEEP_GEMM_WARMUP=skip\n",
        "ENV TORCH_CUDA_ARCH_LIST=12.1a\n",
        "COPY overlays/vllm/ /usr/local/lib/python3.12/site-packages/vllm/\n",
        "org.opencontainers.image.version=\"2026-07-08-pr4-experimental\"",
        "org.opencontainers.image.created=\"2026-07-08T00:00:00Z\"",
        "org.opencontainers.image.base.name=\"ghcr.io/aeon-7/aeon-vllm-ultimate:2026-07-01-v0.24.0\"",
        "org.opencontainers.image.revision=\"${FORGE_REVISION}\"",
    ] {
        assert!(
            text.contains(needle),
            "the render lacks {needle:?}:\n{text}"
        );
    }
    // Every step that installs or changes something is followed by its gate in the same RUN, or
    // (for COPY) by a RUN that checks it.
    let instructions: Vec<&str> = text
        .lines()
        .filter(|line| !line.starts_with(' ') && !line.starts_with('#') && !line.is_empty())
        .collect();
    for (index, line) in instructions.iter().enumerate() {
        if line.starts_with("COPY") {
            assert!(
                instructions[index + 1].starts_with("RUN "),
                "COPY without a gate after it: {line}"
            );
        }
    }
    let gates = text.matches("python3 -c \"").count();
    assert!(
        gates >= 8,
        "expected a gate per step, found {gates} python gates:\n{text}"
    );
}

#[test]
fn default_dockerfile_passes_hadolint() {
    let run = TestContext::default_recipe()
        .forge(&["render"])
        .expect_code(0);
    assert_hadolint_passes(&run.stdout);
}

/// With a series onto DeepGEMM, the step that copies and applies it passes hadolint too.
#[test]
fn default_dockerfile_with_a_deepgemm_series_passes_hadolint() {
    let context = TestContext::default_recipe();
    with_deepgemm_series(
        &context,
        "{ git = \"https://github.com/deepseek-ai/DeepGEMM.git\", rev = \"a6b593d\" }",
    );
    let run = context.forge(&["render"]).expect_code(0);
    assert_contains(&run.stdout, "COPY .forge/series/deepgemm/");
    assert_hadolint_passes(&run.stdout);
}

#[test]
fn render_is_byte_identical_across_runs_clock_and_folders() {
    let first = TestContext::default_recipe()
        .forge(&["render"])
        .expect_code(0)
        .stdout;
    let second = TestContext::default_recipe()
        .forge_with(
            &["render"],
            &[("SOURCE_DATE_EPOCH", "1"), ("TZ", "Pacific/Kiritimati")],
        )
        .expect_code(0)
        .stdout;
    assert_eq!(first, second);
}

#[test]
fn date_comes_from_source_date_epoch_when_the_file_fixes_none() {
    let context = TestContext::default_recipe();
    context.edit("pins.toml", "date = \"2026-07-08\"", "");
    // 2026-07-09T23:59:59Z
    let run = context
        .forge_with(&["render"], &[("SOURCE_DATE_EPOCH", "1783641599")])
        .expect_code(0);
    insta::assert_snapshot!("dockerfile_dated_by_source_date_epoch", run.stdout);
    let bad = context
        .forge_with(&["render"], &[("SOURCE_DATE_EPOCH", "yesterday")])
        .expect_code(2);
    forge_snapshot!(bad.stderr, context.path(), @r#"
    error: SOURCE_DATE_EPOCH="yesterday" is not a number of seconds since 1970-01-01 UTC
    hint: unset it, or set it to an integer such as `git log -1 --format=%ct`
    "#);
}

#[test]
fn a_pin_the_template_uses_but_pins_toml_lacks_is_an_error_with_template_line_and_column() {
    let context = TestContext::default_recipe();
    let text = context.read("pins.toml");
    let start = text.find("[pins.deepgemm]").unwrap();
    let end = text.find("[pins.apache-tvm-ffi]").unwrap();
    // The pin's fix goes with it: a fix by a pin that is not there is refused before rendering.
    let without = format!("{}{}", &text[..start], &text[end..]);
    let fix_start = without.find("[fixes.deepgemm-sm120]").unwrap();
    let fix_end = without.find("[fixes.tvm-ffi-kwargs-wrapper]").unwrap();
    context.write(
        "pins.toml",
        &format!("{}{}", &without[..fix_start], &without[fix_end..]),
    );
    let run = context.forge(&["render"]).expect_code(2);
    forge_snapshot!(run.stderr, context.path(), @"
    error: templates/Dockerfile.j2:51:18: undefined value `pins.deepgemm.branch`
    hint: the template uses a pin that pins.toml does not define (or a field that kind of pin lacks): add it to pins.toml or drop it from the template
    ");
    assert!(run.stdout.is_empty());
    let template = context.read("templates/Dockerfile.j2");
    let (line, column) = template
        .lines()
        .enumerate()
        .find_map(|(index, line)| {
            line.find("pins.deepgemm")
                .map(|column| (index + 1, column + 1))
        })
        .unwrap();
    let expected =
        format!("templates/Dockerfile.j2:{line}:{column}: undefined value `pins.deepgemm.branch`");
    assert!(
        run.stderr.contains(&expected),
        "wanted {expected:?} in:\n{}",
        run.stderr
    );
}

#[test]
fn no_template_holds_a_version_literal() {
    let templates = repository_root().join("templates");
    for entry in std::fs::read_dir(&templates).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        for word in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '.')) {
            let looks_like_version = word.split('.').count() >= 2
                && word
                    .split('.')
                    .all(|part| !part.is_empty() && part.chars().all(|c| c.is_ascii_digit()));
            assert!(
                !looks_like_version,
                "{} holds the version literal {word:?}; versions belong in pins.toml",
                path.display()
            );
        }
        for pinned in ["a6b593d", "nv_dev", "cu130", "ghcr.io"] {
            assert!(
                !text.contains(pinned),
                "{} holds {pinned:?}; it belongs in pins.toml",
                path.display()
            );
        }
    }
}

#[test]
fn out_writes_only_when_the_content_changes_and_check_fails_when_stale() {
    let context = TestContext::default_recipe();
    let out = context.path().join("Dockerfile");
    let out = out.to_str().unwrap();
    let first = context.forge(&["render", "--out", out]).expect_code(0);
    forge_snapshot!(first.stderr, context.path(), @"
    warning: pin `flashinfer`: no sha256 recorded for flashinfer-python, flashinfer-cubin, flashinfer-jit-cache, so the Dockerfile installs them unchecked (`forge pin bump flashinfer --to 0.6.14` downloads and records them)
        Rendered <recipe>/Dockerfile (sha256:<digest>)
    ");
    let written = std::fs::metadata(out).unwrap().modified().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let second = context.forge(&["render", "--out", out]).expect_code(0);
    forge_snapshot!(second.stderr, context.path(), @"
    warning: pin `flashinfer`: no sha256 recorded for flashinfer-python, flashinfer-cubin, flashinfer-jit-cache, so the Dockerfile installs them unchecked (`forge pin bump flashinfer --to 0.6.14` downloads and records them)
           Fresh <recipe>/Dockerfile (sha256:<digest>)
    ");
    assert_eq!(
        std::fs::metadata(out).unwrap().modified().unwrap(),
        written,
        "an unchanged render was rewritten"
    );

    let stale = assert_check_catches_a_stale_render(&context, out);
    forge_snapshot!(stale.stderr, context.path(), @r"
        warning: pin `flashinfer`: no sha256 recorded for flashinfer-python, flashinfer-cubin, flashinfer-jit-cache, so the Dockerfile installs them unchecked (`forge pin bump flashinfer --to 0.6.14` downloads and records them)
        error: <recipe>/Dockerfile is out of date: a fresh render has digest sha256:<digest>
        hint: run `forge render --out <recipe>/Dockerfile` and commit the result
        ");
    assert!(
        !context.read("Dockerfile").contains("=full"),
        "--check wrote the file"
    );
}

#[test]
fn json_render_is_one_document_with_the_digest() {
    let run = TestContext::default_recipe()
        .forge(&["--json", "render"])
        .expect_code(0);
    let document = run.json();
    let text = document["dockerfile"].as_str().unwrap();
    let digest = document["digest"].as_str().unwrap();
    let expected = {
        use sha2::Digest as _;
        format!(
            "sha256:{}",
            hex::encode(sha2::Sha256::digest(text.as_bytes()))
        )
    };
    assert_eq!(digest, expected);
}

/// Runs forge in `folder` without `-C`, as a user in that folder would.
fn forge_in(folder: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_forge"))
        .args(args)
        .current_dir(folder)
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        .env("HOME", "/nonexistent")
        .output()
        .expect("forge runs")
}

#[test]
fn without_c_the_recipe_is_found_above_the_working_folder_up_to_the_repository_root() {
    let context = TestContext::default_recipe();
    let deep = context.path().join("src/deeper");
    std::fs::create_dir_all(&deep).unwrap();
    let expected = context.forge(&["render"]).expect_code(0).stdout;
    let found = forge_in(&deep, &["render"]);
    assert!(found.status.success(), "{found:?}");
    assert_eq!(String::from_utf8(found.stdout).unwrap(), expected);

    // A repository below the recipe is a boundary: its recipe is its own.
    let repository = context.path().join("vendor/other");
    std::fs::create_dir_all(repository.join(".git")).unwrap();
    std::fs::create_dir_all(repository.join("sub")).unwrap();
    let stopped = forge_in(&repository.join("sub"), &["render"]);
    assert_eq!(stopped.status.code(), Some(2));
    let stopped = String::from_utf8(stopped.stderr).unwrap();
    forge_snapshot!(stopped, context.path(), @"
    error: cannot read pins.toml
    caused by: No such file or directory (os error 2)
    hint: forge reads pins.toml in the folder -C names, else in the working folder or the nearest folder above it that has one (up to the repository root); pass -C DIR to point at the recipe (looked at pins.toml)
    ");

    // -C still wins.
    let named = forge_in(&deep, &["-C", "../..", "render"]);
    assert_eq!(String::from_utf8(named.stdout).unwrap(), expected);
}

#[test]
fn version_names_the_commit_and_date_and_completions_and_the_man_page_are_printed() {
    let context = TestContext::empty();
    let version = context.forge(&["--version"]).expect_code(0).stdout;
    let commit = crate::support::git_in(
        &repository_root(),
        &["rev-parse", "--short=12", "HEAD"],
        &[],
    );
    assert!(
        version.starts_with(&format!(
            "forge {} ({}",
            env!("CARGO_PKG_VERSION"),
            commit.trim()
        )),
        "{version}"
    );
    for shell in ["bash", "zsh", "fish"] {
        let script = context.forge(&["completions", shell]).expect_code(0).stdout;
        assert_contains(&script, "FORGE_COMPLETE");
    }
    let page = context.forge(&["man"]).expect_code(0).stdout;
    assert!(page.contains(".TH forge 1"), "{page}");
    assert_contains(&page, "verify\\-digest");
}

/// `--out` and `--context-out` replace a regular file atomically, write through a FIFO or a
/// device (never renaming over it), follow a link to the file it names, and refuse a folder.
#[test]
fn outputs_write_through_devices_and_fifos_and_replace_only_regular_files() {
    use std::os::unix::fs::FileTypeExt as _;
    let context = TestContext::default_recipe();
    let expected = context.forge(&["render"]).expect_code(0).stdout;
    let folder = tempfile::tempdir().unwrap();

    // A FIFO: what a reader at its other end gets is the Dockerfile, and it stays a FIFO.
    let fifo = folder.path().join("out.fifo");
    crate::support::fifo(&fifo);
    for args in [
        vec!["render", "--out"],
        vec!["build", "--dry-run", "--context-out"],
    ] {
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        let mut args = args.clone();
        let target = fifo.to_str().unwrap();
        args.push(target);
        context.forge(&args).expect_code(0);
        let read = reader.join().unwrap();
        if args[0] == "render" {
            assert_eq!(String::from_utf8(read).unwrap(), expected);
        } else {
            assert!(
                read.len() > 1024,
                "the context archive came through the FIFO"
            );
        }
        assert!(
            std::fs::symlink_metadata(&fifo)
                .unwrap()
                .file_type()
                .is_fifo()
        );
    }

    // A character device of the test's own (the null device's numbers), where mknod may be run.
    let null = folder.path().join("null");
    let name = std::ffi::CString::new(null.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: `name` is a NUL-terminated path that outlives the call.
    let made = unsafe { libc::mknod(name.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) };
    if made == 0 {
        context
            .forge(&["render", "--out", null.to_str().unwrap()])
            .expect_code(0);
        let kind = std::fs::symlink_metadata(&null).unwrap().file_type();
        assert!(kind.is_char_device(), "the device became {kind:?}");
    }

    // A folder is refused by name and left as it was.
    let run = context
        .forge(&["render", "--out", folder.path().to_str().unwrap()])
        .expect_code(2);
    let refused = run
        .stderr
        .replace(folder.path().to_str().unwrap(), "<folder>");
    forge_snapshot!(refused, context.path(), @"
    warning: pin `flashinfer`: no sha256 recorded for flashinfer-python, flashinfer-cubin, flashinfer-jit-cache, so the Dockerfile installs them unchecked (`forge pin bump flashinfer --to 0.6.14` downloads and records them)
    error: cannot write <folder>
    caused by: <folder> is a folder: forge writes output only to a regular file, a character device or a FIFO
    ");
    assert!(folder.path().is_dir());
}

/// `--out` and `--context-out` through links and onto a full device: a link stays and the file
/// it names gets the output (made when the link leads to nothing yet), and a full device's
/// error names the file, not the temporary folder.
#[test]
fn outputs_keep_links_and_name_a_full_destination() {
    let context = TestContext::default_recipe();
    let expected = context.forge(&["render"]).expect_code(0).stdout;
    let folder = tempfile::tempdir().unwrap();

    // A full device of the test's own (the full device's numbers): the error names the file
    // --context-out names, not the temporary folder.
    let full = folder.path().join("full");
    let name = std::ffi::CString::new(full.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: `name` is a NUL-terminated path that outlives the call.
    let made = unsafe { libc::mknod(name.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 7)) };
    if made == 0 {
        let run = context
            .forge(&[
                "build",
                "--dry-run",
                "--context-out",
                full.to_str().unwrap(),
            ])
            .expect_code(2);
        let refused = run
            .stderr
            .replace(folder.path().to_str().unwrap(), "<folder>");
        forge_snapshot!(refused, context.path(), @"
            Rendered Dockerfile sha256:<digest>
        warning: pin `flashinfer`: no sha256 recorded for flashinfer-python, flashinfer-cubin, flashinfer-jit-cache, so the Dockerfile installs them unchecked (`forge pin bump flashinfer --to 0.6.14` downloads and records them)
             Patched patches/pr4 onto overlays/vllm (scratch repository) (2 applied, 0 already there)
        error: cannot write the build context to <folder>/full
        caused by: No space left on device (os error 28)
        hint: check that the file --context-out names is writable and its disk has room; nothing was built
        ");
    }

    // A link to a regular file: the link stays, the file it names gets the Dockerfile.
    let file = folder.path().join("Dockerfile.real");
    std::fs::write(&file, "old\n").unwrap();
    let link = folder.path().join("Dockerfile.link");
    std::os::unix::fs::symlink(&file, &link).unwrap();
    context
        .forge(&["render", "--out", link.to_str().unwrap()])
        .expect_code(0);
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), expected);

    // A link to nothing yet: the link stays, and the file it names is made.
    let named = folder.path().join("Dockerfile.new");
    let dangling = folder.path().join("Dockerfile.dangling");
    std::os::unix::fs::symlink(&named, &dangling).unwrap();
    context
        .forge(&["render", "--out", dangling.to_str().unwrap()])
        .expect_code(0);
    assert!(
        std::fs::symlink_metadata(&dangling)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_to_string(&named).unwrap(), expected);
}
