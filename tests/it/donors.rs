//! `[donors.NAME]`: an image a stage of the template copies from (the slim rebase), always
//! pinned by its manifest digest. A donor without a digest is refused where pins.toml names it,
//! a template that never starts a stage from it is refused at render, and a pushed image built
//! with one holds what it copied and names the donor with its digest in its provenance.

use crate::support::images::{Example, docker_available};
use crate::support::keys::Keys;
use crate::support::registry::{RegistryServer, path_of, registry_tools_missing};
use crate::support::snapshot::forge_snapshot;

/// The stage the offline example's template gets: FROM the donor, before the image's own.
const STAGE: &str = "FROM {{ donors.full.reference }} AS full\n";
/// What the image's stage copies from it, after the overlay.
const COPY: &str = "COPY --from=full /opt/app/greet.sh /opt/donated/greet.sh\n";

/// The offline example in `repository`, copying from the donor `image` (`digest`).
fn slim(repository: &str, image: &str, digest: &str) -> Example {
    let example = Example::with_repository(repository);
    let pins = example.context.read("pins.toml");
    example.context.write(
        "pins.toml",
        &format!("{pins}\n[donors.full]\nimage = \"{image}\"\ndigest = \"{digest}\"\n"),
    );
    let template = example.context.read("templates/Dockerfile.j2");
    let template = template.replacen(
        "FROM {{ base.reference }}",
        &format!("{STAGE}\nFROM {{{{ base.reference }}}}"),
        1,
    );
    let template = template.replacen("{% endfor %}\n\n", &format!("{{% endfor %}}\n{COPY}\n"), 1);
    example.context.write("templates/Dockerfile.j2", &template);
    example
}

#[test]
fn a_donor_is_pinned_by_digest_and_starts_a_stage_of_the_template() {
    let digest = format!("sha256:{}", "d".repeat(64));
    let example = slim(
        "forge-test/donor-render",
        "forge-example/offline:latest",
        &digest,
    );
    let rendered = example.context.forge(&["render"]).expect_code(0);
    let lines: Vec<&str> = rendered
        .stdout
        .lines()
        .filter(|line| line.starts_with("FROM ") || line.starts_with("COPY --from"))
        .collect();
    forge_snapshot!(lines.join("\n"), example.context.path(), @"
    FROM forge-example/offline:latest@sha256:<digest> AS full
    FROM forge-test-<pid>:busybox
    COPY --from=full /opt/app/greet.sh /opt/donated/greet.sh
    ");

    let pins = example.context.read("pins.toml");
    example.context.write(
        "pins.toml",
        &pins.replace(&format!("digest = \"{digest}\"\n"), ""),
    );
    let run = example.context.forge(&["render"]).expect_code(2);
    forge_snapshot!(run.stderr, example.context.path(), @r#"
    error: pins.toml:43:1: donor `full` (forge-example/offline:latest) is not pinned by a digest
    hint: add digest = "sha256:...", the manifest digest of the image the stage copies from (`crane digest IMAGE` or `docker buildx imagetools inspect IMAGE` prints it): a donor named by its tag alone could change under the build
    "#);
    example.context.write("pins.toml", &pins);

    example.context.edit("templates/Dockerfile.j2", STAGE, "");
    let run = example.context.forge(&["render"]).expect_code(2);
    forge_snapshot!(run.stderr, example.context.path(), @"
    error: templates/Dockerfile.j2: donor `full` is in pins.toml, but no stage of the Dockerfile starts FROM it
    hint: start its stage with `FROM {{ donors['full'].reference }} AS full`, then `COPY --from=full ...` in the image's stage
    ");
}

/// The full image pushed, then the slim one built from the base with the full one's file
/// copied in, pushed signed: the image holds the donor's file and its provenance names the
/// donor by its digest.
#[test]
fn a_slim_image_copies_from_its_donor_and_its_provenance_names_it() {
    let registry = RegistryServer::start();
    if !docker_available() || registry_tools_missing() {
        return;
    }
    crate::support::images::ensure_base_image();
    let pid = std::process::id();
    let full = Example::with_repository(&format!(
        "{}/forge-test/donor-full-{pid}",
        registry.address()
    ));
    full.build(&["--push"]).expect_code(0);
    let digest = registry.digest(&path_of(&full, &registry), "latest");

    let slim = slim(
        &format!("{}/forge-test/donor-slim-{pid}", registry.address()),
        &format!("{}:latest", full.repository),
        &digest,
    );
    let keys = Keys::new();
    slim.build(&["--push", "--sign", "--sign-key", &keys.private_arg()])
        .expect_code(0);
    let donated = std::process::Command::new("docker")
        .args([
            "run",
            "--rm",
            &format!("{}:latest", slim.repository),
            "cat",
            "/opt/donated/greet.sh",
        ])
        .output()
        .expect("docker runs");
    let original = std::process::Command::new("docker")
        .args([
            "run",
            "--rm",
            &format!("{}:latest", full.repository),
            "cat",
            "/opt/app/greet.sh",
        ])
        .output()
        .expect("docker runs");
    assert!(!donated.stdout.is_empty());
    assert_eq!(donated.stdout, original.stdout);

    let path = path_of(&slim, &registry);
    let manifest = registry.digest(&path, "latest");
    let statement =
        crate::support::signed::statement_of(&registry.attached(&path, &manifest, "att"));
    let donor = statement["predicate"]["buildDefinition"]["resolvedDependencies"]
        .as_array()
        .expect("resolved dependencies")
        .iter()
        .find(|dependency| dependency["name"] == "donor:full")
        .unwrap_or_else(|| panic!("no donor in {statement:#}"));
    assert_eq!(
        donor["digest"]["sha256"],
        digest.trim_start_matches("sha256:"),
        "{donor:#}"
    );
    assert_eq!(donor["annotations"]["dev.forge.kind"], "donor");
    // A tester's report, from the record attached to the image, names the donor by digest.
    let report = slim
        .context
        .forge(&["--json", "report", &format!("{}:latest", slim.repository)])
        .expect_code(0)
        .json();
    assert_eq!(report["donors"][0]["name"], "full", "{report:#}");
    assert_eq!(report["donors"][0]["digest"], digest.as_str());
}
