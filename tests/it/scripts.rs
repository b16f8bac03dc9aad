//! `[[scripts]]`: patch scripts, idempotent patchers run in the image after the overlays. Each
//! runs twice and then its check, on the Python base made here; one that is not idempotent or
//! whose patch did not take fails the build naming it; the pushed image's provenance records
//! each script's sha256; a recipe that names a script wrongly is refused where it names it.

use crate::support::image_guard::ImageGuard;
use crate::support::images::{build_in, daemon_platform, docker_available};
use crate::support::python_image;
use crate::support::snapshot::forge_snapshot;
use crate::support::{TestContext, assert_contains};

/// The module the overlay brings.
const MODULE: &str = "def warm_up():\n    return 'all'\n";

/// A patcher as the production layer writes them: it edits a module the base ships, in place,
/// and leaves a file it already patched alone.
const IDEMPOTENT: &str = r#"import importlib.util
path = importlib.util.find_spec('forge_probe_fixture').origin
text = open(path, encoding='utf-8').read()
if '# patched: skip warm-up' not in text:
    open(path, 'a', encoding='utf-8').write("WARM_UP = 'skip'  # patched: skip warm-up\n")
"#;

/// One that appends every time it runs.
const NOT_IDEMPOTENT: &str = "import importlib.util\n\
path = importlib.util.find_spec('forge_probe_fixture').origin\n\
open(path, 'a', encoding='utf-8').write(\"WARM_UP = 'skip'  # patched: skip warm-up\\n\")\n";

const CHECK: &str = "source('forge_probe_fixture').count('# patched: skip warm-up') == 1";

/// A recipe on the Python base: an overlay brings a module, then `script` patches a module the
/// base ships.
fn recipe(repository: &str, images: &ImageGuard, script: &str) -> TestContext {
    let base = python_image::ensure();
    let context = TestContext::empty();
    context.write("overlays/kernels/__init__.py", MODULE);
    context.write("scripts/patch_warm_up.py", script);
    context.write(
        "pins.toml",
        &format!(
            "[image]\nrepository = \"{repository}\"\ndate = \"2026-07-08\"\nplatform = \"{}\"\n\n\
             [image.tags]\nmoving = [\"latest\"]\n\n\
             [image.labels]\n{}\n\n\
             [base]\nimage = \"{}\"\n\n\
             [[overlays]]\nfrom = \"overlays/kernels\"\nto = \"{}/forge_script_kernels/\"\n\n\
             [[scripts]]\nfile = \"scripts/patch_warm_up.py\"\ncheck = \"{CHECK}\"\n",
            daemon_platform(),
            images.label_entry(),
            base.name,
            base.site_packages,
        ),
    );
    context.write(
        "templates/Dockerfile.j2",
        "FROM {{ base.reference }}\n\
         {% for overlay in overlays %}\n\
         COPY {{ overlay.from }}/ {{ overlay.to }}\n\
         RUN {{ overlay.gate }}\n\
         {% endfor %}\n\
         {% for script in scripts %}\n\
         COPY {{ script.file }} {{ script.to }}\n\
         RUN {{ script.run }}\n\
         {% endfor %}\n\
         LABEL{% for label in image.labels %} {{ label.name }}=\"{{ label.value }}\"{% endfor %}\n",
    );
    context
}

#[test]
fn a_patch_script_runs_twice_then_its_check_and_a_script_that_is_not_idempotent_fails() {
    let repository = format!("forge-test/scripts-{}", std::process::id());
    let images = ImageGuard::new(&repository);
    let context = recipe(&repository, &images, IDEMPOTENT);
    let rendered = context.forge(&["render"]).expect_code(0);
    let step: Vec<&str> = rendered
        .stdout
        .lines()
        .skip_while(|line| !line.starts_with("COPY scripts/"))
        .take_while(|line| !line.starts_with("LABEL"))
        .collect();
    forge_snapshot!(step.join("\n"), context.path(), @r#"
    COPY scripts/patch_warm_up.py /opt/forge/scripts/patch_warm_up.py
    RUN python3 /opt/forge/scripts/patch_warm_up.py \
     && python3 /opt/forge/scripts/patch_warm_up.py \
     && (python3 -P -c "import sys; import importlib.util; source = lambda module: open(importlib.util.find_spec(module).origin, encoding='utf-8').read(); sys.exit(0 if (source('forge_probe_fixture').count('# patched: skip warm-up') == 1) else 1)" || { echo 'patch script scripts/patch_warm_up.py did not take: its check is false after two runs' >&2; exit 1; })
    "#);
    if !docker_available() {
        return;
    }
    build_in(&context, &[], &[]).expect_code(0);
    let patched = std::process::Command::new("docker")
        .args([
            "run",
            "--rm",
            &format!("{repository}:latest"),
            "python3",
            "-c",
            "import forge_probe_fixture; print(forge_probe_fixture.WARM_UP)",
        ])
        .output()
        .expect("docker runs");
    assert_eq!(String::from_utf8_lossy(&patched.stdout), "skip\n");
    // verify-digest --contents runs the check again in the built image; a check the image no
    // longer meets is a failing row.
    let json = crate::support::verify::verify_in(&context, &["--contents"], &[])
        .expect_code(0)
        .json();
    let row = crate::support::verify::row(&json, "script", "scripts/patch_warm_up.py");
    assert_eq!(
        (&row["expected"], &row["actual"]),
        (&"in place".into(), &"in place".into())
    );
    context.edit("pins.toml", "== 1\"", "== 2\"");
    let json = crate::support::verify::verify_in(&context, &["--contents"], &[])
        .expect_code(1)
        .json();
    let row = crate::support::verify::row(&json, "script", "scripts/patch_warm_up.py");
    assert_eq!(row["actual"], "missing: its check is false", "{json:#}");
    context.edit("pins.toml", "== 2\"", "== 1\"");
    // The report lists the script and its check.
    let report = context.forge(&["report"]).expect_code(0).stdout;
    let start = report
        .find("## Patch scripts")
        .expect("a patch scripts section");
    let section = &report[start..];
    let section = section[1..]
        .find("\n## ")
        .map_or(section, |end| &section[..=end]);
    forge_snapshot!(section, context.path(), @"
    ## Patch scripts

    Run in the image after the overlays, twice, then checked:

    | script | check |
    |---|---|
    | `scripts/patch_warm_up.py` | `source('forge_probe_fixture').count('# patched: skip warm-up') == 1` |
    ");

    // Appending on every run: the second run leaves two marks, and the check says which script.
    let broken = recipe(&repository, &images, NOT_IDEMPOTENT);
    let run = build_in(&broken, &[], &[]).expect_code(1);
    assert_contains(
        &run.stderr,
        "patch script scripts/patch_warm_up.py did not take: its check is false after two runs",
    );
    assert!(!broken.path().join("forge.lock").exists());
}

#[test]
fn a_patch_script_is_an_input_and_a_template_that_never_runs_it_is_refused() {
    let repository = format!("forge-test/scripts-input-{}", std::process::id());
    let images = ImageGuard::new(&repository);
    let context = recipe(&repository, &images, IDEMPOTENT);
    context.forge(&["lock"]).expect_code(0);
    context
        .forge(&["build", "--dry-run", "--locked"])
        .expect_code(0);
    // An edit of the script moves the recipe's inputs: --locked refuses the build.
    context.write(
        "scripts/patch_warm_up.py",
        &format!("{IDEMPOTENT}# again\n"),
    );
    let run = context
        .forge(&["build", "--dry-run", "--locked"])
        .expect_code(1);
    assert_contains(
        &run.stderr,
        "error: --locked: the inputs no longer match forge.lock (overlays: recorded",
    );
    context.edit(
        "templates/Dockerfile.j2",
        "RUN {{ script.run }}",
        "RUN true",
    );
    let run = context.forge(&["render"]).expect_code(2);
    forge_snapshot!(run.stderr, context.path(), @"
    error: templates/Dockerfile.j2: patch script `scripts/patch_warm_up.py` is in pins.toml, but the Dockerfile never runs it
    hint: after the overlays: `{% for script in scripts %}COPY {{ script.file }} {{ script.to }}` then `RUN {{ script.run }}{% endfor %}` (the default template's step 5 shows how)
    ");
}

#[test]
fn a_patch_script_that_is_not_a_python_file_of_the_recipe_is_refused_where_it_is_named() {
    let images = ImageGuard::new("forge-test/scripts-refused");
    let context = recipe("forge-test/scripts-refused", &images, IDEMPOTENT);
    let cases = [
        (
            "file = \"scripts/patch_warm_up.py\"",
            "file = \"scripts/missing.py\"",
        ),
        (
            "file = \"scripts/patch_warm_up.py\"",
            "file = \"overlays/kernels\"",
        ),
        (
            "file = \"scripts/patch_warm_up.py\"",
            "file = \"../outside/patch_warm_up.py\"",
        ),
    ];
    let mut said = Vec::new();
    for (from, to) in cases {
        let pins = context.read("pins.toml");
        context.write("pins.toml", &pins.replacen(from, to, 1));
        said.push(context.forge(&["render"]).expect_code(2).stderr);
        context.write("pins.toml", &pins);
    }
    context.write("other/patch_warm_up.py", IDEMPOTENT);
    let pins = context.read("pins.toml");
    context.write(
        "pins.toml",
        &format!("{pins}\n[[scripts]]\nfile = \"other/patch_warm_up.py\"\ncheck = \"True\"\n"),
    );
    said.push(context.forge(&["render"]).expect_code(2).stderr);
    forge_snapshot!(said.join(""), context.path(), @r#"
    error: pins.toml:20:8: patch script `scripts/missing.py` does not exist
    hint: paths in pins.toml are relative to the folder that holds it
    error: pins.toml:20:8: patch script `overlays/kernels` is not a .py file
    hint: a patch script is a Python file, run with the image's python3 after the overlays
    error: pins.toml:20:8: invalid recipe path "../outside/patch_warm_up.py": expected a relative path inside the recipe folder ('/'-separated; no '..', hidden or empty components)
    hint: values that reach the Dockerfile must match their grammar exactly; nothing was rendered
    error: pins.toml:24:8: patch scripts `scripts/patch_warm_up.py` and `other/patch_warm_up.py` have one name
    hint: the image keeps patch scripts side by side under their names: rename one
    "#);
}

/// A signed push: the provenance names each patch script with the sha256 of its file.
#[test]
fn a_pushed_images_provenance_names_each_patch_script_with_its_sha256() {
    if !docker_available() || crate::support::registry::registry_tools_missing() {
        return;
    }
    let registry = crate::support::registry::RegistryServer::start();
    let path = format!("forge-test/scripts-signed-{}", std::process::id());
    let repository = format!("{}/{path}", registry.address());
    let images = ImageGuard::new(&repository);
    let context = recipe(&repository, &images, IDEMPOTENT);
    let keys = crate::support::keys::Keys::new();
    build_in(
        &context,
        &["--push", "--sign", "--sign-key", &keys.private_arg()],
        &[],
    )
    .expect_code(0);
    let digest = registry.digest(&path, "latest");
    let statement = crate::support::signed::statement_of(&registry.attached(&path, &digest, "att"));
    let script = statement["predicate"]["buildDefinition"]["resolvedDependencies"]
        .as_array()
        .expect("resolved dependencies")
        .iter()
        .find(|dependency| dependency["name"] == "scripts/patch_warm_up.py")
        .unwrap_or_else(|| panic!("no script in {statement:#}"));
    let sha256 = crate::support::release::sha256_hex(IDEMPOTENT.as_bytes());
    assert_eq!(script["digest"]["sha256"], sha256.as_str(), "{script:#}");
    assert_eq!(script["annotations"]["dev.forge.kind"], "patch-script");
}
