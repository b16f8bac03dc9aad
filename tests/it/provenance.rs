//! The SBOM and the provenance of a signed push, to the letter of their specifications, judged
//! by `tests/python/attest_check.py` with libraries forge shares no code with: the in-toto
//! Statement and SLSA provenance v1 protos (in-toto-attestation, parsed strictly), RFC 3986 and
//! RFC 3339 validators, cyclonedx-python-lib's strict CycloneDX 1.5 schema and
//! packageurl-python. No MUST is broken and no SHOULD, but those the README lists with the
//! reason; each input is named with its digest where SLSA wants it, checked against git and
//! the registry.

use std::path::Path;
use std::process::Command;

use base64::Engine as _;
use serde_json::Value;

use crate::support::images::{Example, base_image, docker_available, ensure_base_image};
use crate::support::keys::Keys;
use crate::support::registry::{RegistryServer, path_of, registry_tools_missing};
use crate::support::signed::{attest_check, statement_of, verifier_python};
use crate::support::{TestContext, assert_contains};

/// The variables a GitHub Actions runner sets, for a run of `forge.yml` on `main`.
const GITHUB: [(&str, &str); 9] = [
    ("GITHUB_ACTIONS", "true"),
    ("GITHUB_SERVER_URL", "https://github.com"),
    ("GITHUB_REPOSITORY", "aeon-7/forge"),
    (
        "GITHUB_WORKFLOW_REF",
        "aeon-7/forge/.github/workflows/forge.yml@refs/heads/main",
    ),
    ("GITHUB_REF", "refs/heads/main"),
    ("GITHUB_SHA", "0123456789abcdef0123456789abcdef01234567"),
    ("GITHUB_RUN_ID", "4242"),
    ("GITHUB_RUN_ATTEMPT", "2"),
    ("GITHUB_EVENT_NAME", "push"),
];

/// The dependency named `name`.
fn dependency<'a>(statement: &'a Value, name: &str) -> &'a Value {
    statement["predicate"]["buildDefinition"]["resolvedDependencies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|dependency| dependency["name"] == name)
        .unwrap_or_else(|| panic!("no dependency {name} in {statement:#}"))
}

/// `git hash-object FILE`.
fn git_blob(file: &Path) -> String {
    let output = Command::new("git")
        .arg("hash-object")
        .arg(file)
        .output()
        .unwrap();
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// Judges `bytes` (written to `name` in `work`) with `attest_check.py KIND`: valid, and no
/// SHOULD unmet.
#[track_caller]
fn judged_valid(python: &Path, work: &Path, kind: &str, name: &str, bytes: &[u8]) {
    let file = work.join(name);
    std::fs::write(&file, bytes).unwrap();
    let (code, said) = attest_check(python, &[kind, file.to_str().unwrap()]);
    assert_eq!((code, said.trim()), (0, "valid"), "{kind} {name}");
}

/// The base is a `pkg:docker` URL with its image id as digest; every input forge.lock records
/// and every patch (its git blob id git's, its author kept) a descriptor with its digest; the
/// git pin a `gitCommit`.
#[track_caller]
fn assert_every_input_named_with_its_digest(statement: &Value, record: &Value, recipe: &Path) {
    let base = dependency(statement, "base");
    let (name, tag) = base_image().split_once(':').expect("a tagged base");
    assert_eq!(
        base["uri"],
        format!("pkg:docker/{name}@{tag}?platform=linux/amd64").as_str()
    );
    assert_eq!(
        format!("sha256:{}", base["digest"]["sha256"].as_str().unwrap()),
        record["base"]["id"].as_str().unwrap(),
        "a base only the daemon holds is named by its image id"
    );
    assert_eq!(base["annotations"]["dev.forge.digestOf"], "image id");
    for (name, input) in record["inputs"].as_object().unwrap() {
        let name = match name.as_str() {
            "pins" => "pins.toml",
            "dockerfile" => "Dockerfile",
            "context_mtime" => continue,
            other => other,
        };
        let digest = dependency(statement, name)["digest"]["sha256"]
            .as_str()
            .unwrap();
        assert_eq!(
            format!("sha256:{digest}"),
            input.as_str().unwrap(),
            "{name}"
        );
    }
    let app = dependency(statement, "app");
    assert_eq!(
        app["digest"]["gitCommit"],
        "3f1c0de5a9b2e47c8d6f0a1b2c3d4e5f60718293"
    );
    assert_eq!(
        app["uri"],
        "git+https://example.org/forge/offline-app.git@refs/heads/main"
    );
    for patch in record["patches"].as_array().unwrap() {
        let file = patch["file"].as_str().unwrap();
        let descriptor = dependency(statement, file);
        assert_eq!(
            descriptor["digest"]["gitBlob"],
            git_blob(&recipe.join(file))
        );
        assert_eq!(
            descriptor["annotations"]["dev.forge.author"],
            patch["author"]
        );
        assert_contains(patch["author"].as_str().unwrap(), "Ada Lovelace");
    }
}

/// The commit, the workflow at its ref and the run's attempt, as GitHub's provenance names
/// them.
#[track_caller]
fn assert_the_run_named_as_github_names_it(statement: &Value) {
    let source = dependency(statement, "source");
    assert_eq!(
        source["uri"],
        "git+https://github.com/aeon-7/forge@refs/heads/main"
    );
    assert_eq!(source["digest"]["gitCommit"], GITHUB[5].1);
    let run = &statement["predicate"]["runDetails"];
    assert_eq!(
        run["builder"]["id"],
        "https://github.com/aeon-7/forge/.github/workflows/forge.yml@refs/heads/main"
    );
    assert_eq!(
        run["metadata"]["invocationId"],
        "https://github.com/aeon-7/forge/actions/runs/4242/attempts/2"
    );
    let workflow = &statement["predicate"]["buildDefinition"]["externalParameters"]["workflow"];
    assert_eq!(workflow["path"], ".github/workflows/forge.yml");
    assert_eq!(workflow["ref"], "refs/heads/main");
}

/// The base component has its `pkg:docker` URL; the git pin's keeps its remote, `.git` and all.
#[track_caller]
fn assert_sbom_identities(sbom: &Value) {
    let base = &sbom["components"][0];
    assert_eq!(base["bom-ref"], "base");
    let (name, tag) = base_image().split_once(':').expect("a tagged base");
    assert_contains(
        base["purl"].as_str().unwrap(),
        &format!("pkg:docker/{name}@{tag}"),
    );
    let app = sbom["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|component| component["bom-ref"] == "pin:app")
        .unwrap();
    assert_contains(
        app["purl"].as_str().unwrap(),
        "vcs_url=git%2Bhttps://example.org/forge/offline-app.git%40",
    );
}

/// The offline example pushed and signed in a GitHub Actions run: the provenance and the SBOM
/// break no MUST and no SHOULD of their specifications; the base is a URI with its image id
/// as digest, every input and patch is a descriptor with its digest (a patch's git blob id is
/// git's, its author kept), the git pin a `gitCommit`, and the run, its workflow and commit are
/// named as GitHub's own provenance names them. Signed again, the same image gets an SBOM with a
/// serial number of its own.
#[test]
fn a_signed_push_meets_every_must_and_should_of_its_specifications() {
    let Some(python) = verifier_python() else {
        return;
    };
    let registry = RegistryServer::start();
    if !docker_available() || registry_tools_missing() {
        return;
    }
    ensure_base_image();
    let keys = Keys::new();
    let example = Example::with_repository(&format!(
        "{}/forge-test/letter-{}",
        registry.address(),
        std::process::id()
    ));
    let sign = ["--push", "--sign", "--sign-key", &keys.private_arg()];
    example.build_with(&sign, &GITHUB).expect_code(0);
    let path = path_of(&example, &registry);
    let digest = registry.digest(&path, "latest");
    let work = tempfile::tempdir().unwrap();

    let envelope = registry.attached(&path, &digest, "att");
    judged_valid(
        &python,
        work.path(),
        "provenance",
        "envelope.json",
        &envelope,
    );
    let sbom = registry.attached(&path, &digest, "sbom");
    judged_valid(&python, work.path(), "sbom", "sbom.json", &sbom);

    let statement = statement_of(&envelope);
    let record: Value = serde_json::to_value(
        toml::from_str::<toml::Value>(&example.context.read("forge.lock")).unwrap(),
    )
    .unwrap();
    assert_every_input_named_with_its_digest(&statement, &record, example.context.path());
    assert_the_run_named_as_github_names_it(&statement);
    let sbom: Value = serde_json::from_slice(&sbom).unwrap();
    assert_sbom_identities(&sbom);

    // Outside CI the builder is forge itself, described where the id resolves; signed again,
    // the same image gets a BOM of its own.
    example.build_with(&sign, &[]).expect_code(0);
    assert_eq!(registry.digest(&path, "latest"), digest, "the same image");
    let again = registry.attached(&path, &digest, "sbom");
    judged_valid(&python, work.path(), "sbom", "again.json", &again);
    let again: Value = serde_json::from_slice(&again).unwrap();
    assert_ne!(again["serialNumber"], sbom["serialNumber"]);
    let local = statement_of(&registry.attached(&path, &digest, "att"));
    assert_eq!(
        local["predicate"]["runDetails"]["builder"]["id"],
        "https://github.com/aeon-7/forge/blob/main/docs/provenance.md#builder"
    );
    assert!(
        local["predicate"]["buildDefinition"]["externalParameters"]
            .get("workflow")
            .is_none()
    );
}

/// The judge is no pushover: a base named as `oci://NAME:TAG` (the tag where RFC 3986 wants a
/// port) and a digest that is not hex each fail it, and an unnamespaced annotation is a SHOULD
/// it names.
#[test]
fn the_judge_finds_each_violation_it_is_there_for() {
    let Some(python) = verifier_python() else {
        return;
    };
    let work = TestContext::empty();
    let statement = serde_json::json!({
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{ "name": "r", "digest": { "sha256": "0".repeat(64) } }],
        "predicateType": "https://slsa.dev/provenance/v1",
        "predicate": {
            "buildDefinition": {
                "buildType": "https://example.org/build-type",
                "externalParameters": {},
                "resolvedDependencies": [
                    { "name": "base", "uri": "oci://forge-example-base:busybox", "digest": { "sha256": "0".repeat(64) } },
                ],
            },
            "runDetails": { "builder": { "id": "https://example.org/builder" } },
        },
    });
    let envelope = |statement: &Value| {
        serde_json::json!({
            "payload": base64::engine::general_purpose::STANDARD.encode(statement.to_string()),
            "payloadType": "application/vnd.in-toto+json",
            "signatures": [],
        })
        .to_string()
    };
    let judge = |name: &str, statement: &Value| {
        let file = work.path().join(name);
        std::fs::write(&file, envelope(statement)).unwrap();
        attest_check(&python, &["provenance", file.to_str().unwrap()])
    };
    let (code, said) = judge("oci.json", &statement);
    assert_eq!(code, 1, "{said}");
    assert_contains(&said, "is not an RFC 3986 URI");
    let mut fixed = statement.clone();
    fixed["predicate"]["buildDefinition"]["resolvedDependencies"][0]["uri"] =
        "pkg:docker/library/forge-example-base@busybox".into();
    let (code, said) = judge("fixed.json", &fixed);
    assert_eq!((code, said.trim()), (0, "valid"));
    let mut not_hex = fixed.clone();
    not_hex["predicate"]["buildDefinition"]["resolvedDependencies"][0]["digest"]["sha256"] =
        "Z".repeat(64).into();
    assert_eq!(judge("hex.json", &not_hex).0, 1);
    let mut bare = fixed.clone();
    bare["predicate"]["buildDefinition"]["resolvedDependencies"][0]["annotations"] =
        serde_json::json!({ "image_id": "x" });
    let (code, said) = judge("bare.json", &bare);
    assert_eq!(code, 0);
    assert_contains(
        &said,
        "should: resolvedDependencies[base]: annotation 'image_id' is not namespaced",
    );
}
