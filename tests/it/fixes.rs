//! `[fixes]`: a fix's check gates the step that brings it, names its symptom when it fails,
//! and is run again by `verify-digest --contents`. The stand-in is a module an overlay copies
//! into the Python base image's site-packages, once with the keyword argument the fix is
//! about and once without it.

use crate::support::image_guard::ImageGuard;
use crate::support::images::{build_in, daemon_platform, docker_available};
use crate::support::python_image;
use crate::support::verify::{failing, row, verify_in};
use crate::support::{TestContext, assert_contains};

const FIXED: &str = "def decode(query, swa_topk_lens=None):\n    return query\n";
const BROKEN: &str = "def decode(query):\n    return query\n";
const SYMPTOM: &str = "decode fails with an unexpected keyword argument swa_topk_lens";

/// A recipe on the Python base whose overlay brings the module `stand_in`.
fn recipe(repository: &str, images: &ImageGuard, module: &str) -> TestContext {
    let base = python_image::ensure();
    let context = TestContext::empty();
    context.write("overlays/kernels/__init__.py", module);
    context.write(
        "pins.toml",
        &format!(
            "[image]\nrepository = \"{repository}\"\ndate = \"2026-07-08\"\nplatform = \"{}\"\n\n\
             [image.tags]\nmoving = [\"latest\"]\n\n\
             [image.labels]\n{}\n\n\
             [base]\nimage = \"{}\"\n\n\
             [[overlays]]\nfrom = \"overlays/kernels\"\nto = \"{}/forge_fix_kernels/\"\n\n\
             [fixes.decode-kwargs]\nby = \"overlays/kernels\"\nsymptom = \"{SYMPTOM}\"\n\
             fix = \"the kernels' decode takes swa_topk_lens\"\n\
             check = \"'swa_topk_lens' in inspect.signature(import_module('forge_fix_kernels').decode).parameters\"\n",
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
         LABEL{% for label in image.labels %} {{ label.name }}=\"{{ label.value }}\"{% endfor %}\n",
    );
    context
}

#[test]
fn a_fix_gates_its_step_names_its_symptom_and_is_verified_in_the_image() {
    if !docker_available() {
        return;
    }
    let repository = format!("forge-test/fixes-{}", std::process::id());
    let images = ImageGuard::new(&repository);

    // Without the keyword argument the overlay's step fails, naming the fix and its symptom.
    let broken = recipe(&repository, &images, BROKEN);
    let run = build_in(&broken, &[], &[]).expect_code(1);
    assert_contains(&run.stderr, "error: step ");
    assert_contains(&run.stderr, "RUN python3 -c \"import forge_fix_kernels\"");
    assert_contains(
        &run.stderr,
        &format!("fix decode-kwargs is not in place: {SYMPTOM}"),
    );
    assert!(!broken.path().join("forge.lock").exists());

    // With it the build passes, and the image holds the fix.
    let fixed = recipe(&repository, &images, FIXED);
    build_in(&fixed, &[], &[]).expect_code(0);
    let json = verify_in(&fixed, &["--contents"], &[])
        .expect_code(0)
        .json();
    let fix = row(&json, "fix", "decode-kwargs");
    assert_eq!(fix["expected"], "in place");
    assert_eq!(fix["actual"], "in place");

    // A fix the image does not hold: its row fails, naming the symptom.
    fixed.edit(
        "pins.toml",
        "'swa_topk_lens' in",
        "'extra_sparse_topk_lens' in",
    );
    let json = verify_in(&fixed, &["--contents"], &[])
        .expect_code(1)
        .json();
    assert!(
        failing(&json).contains(&"fix decode-kwargs".to_owned()),
        "{json:#}"
    );
    assert_eq!(
        row(&json, "fix", "decode-kwargs")["actual"],
        format!("missing: {SYMPTOM}").as_str()
    );

    // The report lists the fix: symptom, fix, what brings it and its check.
    let report = fixed.forge(&["report"]).expect_code(0).stdout;
    assert_contains(&report, "## Fixes");
    assert_contains(
        &report,
        &format!(
            "| {SYMPTOM} | the kernels' decode takes swa_topk_lens | overlay overlays/kernels |"
        ),
    );
}
