//! `forge report`: the tester report for a recorded build, from a fixed forge.lock.

use sha2::Digest as _;

use crate::support::TestContext;
use crate::support::snapshot::forge_snapshot;

const IMAGE_ID: &str = "sha256:1f2e3d4c5b6a79881f2e3d4c5b6a79881f2e3d4c5b6a79881f2e3d4c5b6a7988";
const PUSHED: &str = "sha256:9a8b7c6d5e4f30219a8b7c6d5e4f30219a8b7c6d5e4f30219a8b7c6d5e4f3021";
const BASE_DIGEST: &str = "sha256:0c0d0e0f0a0b0c0d0e0f0a0b0c0d0e0f0a0b0c0d0e0f0a0b0c0d0e0f0a0b0c0d";

/// The default recipe with the record of a build of it: the dated tag pushed, the moving tag
/// built but not pushed, both patches of the PR #4 series applied.
fn recorded() -> TestContext {
    let context = TestContext::default_recipe();
    let pins = sha2::Sha256::digest(context.read("pins.toml").as_bytes());
    let digest = |byte: char| format!("sha256:{}", byte.to_string().repeat(64));
    let record = format!(
        r#"# forge.lock: the record of the last successful `forge build` of this recipe.
version = 1

[inputs]
pins = "sha256:{pins}"
templates = "{templates}"
patches = "{patches}"
overlays = "{overlays}"
dockerfile = "{dockerfile}"
context = "{context_digest}"

[base]
image = "ghcr.io/aeon-7/aeon-vllm-ultimate:2026-07-01-v0.24.0"
digest = "{BASE_DIGEST}"

[image]
repository = "ghcr.io/aeon-7/vllm-ultimate-deepseek-v4-gb10"
id = "{IMAGE_ID}"
revision = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

[[tags]]
name = "experimental-pr4"
mutability = "moving"

[[tags]]
name = "2026-07-08-pr4-experimental"
mutability = "immutable"
pushed = "{PUSHED}"

[[patches]]
file = "patches/pr4/0001-sm12x-feature-detect-the-DeepGEMM-fmax-binding.patch"
original = "c80a58513408daf05aede04a237651d859e4bdf3"
applied = "5d1c4f2a9e8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d"
author = "Mira Castellanos <mira.castellanos@example.org>"

[[patches]]
file = "patches/pr4/0002-sm12x-read-the-DeepGEMM-warm-up-policy-in-one-place.patch"
original = "3d465e73cb9191d511a764bf50194ba45e8dcb97"
applied = "8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f"
author = "Mira Castellanos <mira.castellanos@example.org>"
"#,
        pins = hex::encode(pins),
        templates = digest('2'),
        patches = digest('3'),
        overlays = digest('4'),
        dockerfile = digest('5'),
        context_digest = digest('6'),
    );
    context.write("forge.lock", &record);
    context
}

#[test]
fn the_report_of_a_recorded_build() {
    let context = recorded();
    // -q: the default recipe's short-revision warning is not the report's business.
    let run = context.forge(&["-q", "report"]).expect_code(0);
    assert_eq!(run.stderr, "");
    insta::assert_snapshot!("tester_report", run.stdout);
}

#[test]
fn the_json_report_names_the_same_facts_and_leaves_the_tester_fields_null() {
    let context = recorded();
    let json = context.forge(&["--json", "report"]).expect_code(0).json();
    insta::assert_snapshot!(
        "json_report",
        crate::support::json_shape(&json, context.path())
    );
    assert_eq!(json["image"]["id"], IMAGE_ID);
    assert_eq!(
        json["image"]["revision"],
        "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
    );
    assert_eq!(json["base"]["digest"], BASE_DIGEST);
    assert_eq!(json["pins_changed"], false);
    let tags = json["tags"].as_array().unwrap();
    assert_eq!(tags.len(), 2);
    assert_eq!(tags[0]["digest"], serde_json::Value::Null);
    assert_eq!(tags[1]["digest"], PUSHED);
    assert_eq!(
        tags[1]["tag"],
        "ghcr.io/aeon-7/vllm-ultimate-deepseek-v4-gb10:2026-07-08-pr4-experimental"
    );
    let pins: Vec<&str> = json["pins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|pin| pin["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        pins,
        [
            "apache-tvm-ffi",
            "cutlass-dsl",
            "deepgemm",
            "flashinfer",
            "nccl",
            "tilelang"
        ]
    );
    let authors: Vec<&str> = json["patches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|patch| patch["author"].as_str().unwrap())
        .collect();
    assert_eq!(
        authors,
        ["Mira Castellanos <mira.castellanos@example.org>"; 2]
    );
    for field in ["hardware", "driver", "fabric", "nccl"] {
        assert_eq!(json["rig"][field], serde_json::Value::Null, "{field}");
    }
    for field in ["long_context", "soak", "errors", "thermals"] {
        assert_eq!(json["results"][field], serde_json::Value::Null, "{field}");
    }
    let levels: Vec<u64> = json["results"]["concurrency"]
        .as_array()
        .unwrap()
        .iter()
        .map(|level| level["c"].as_u64().unwrap())
        .collect();
    assert_eq!(levels, [1, 2, 4, 8]);
}

#[test]
fn a_pins_toml_changed_since_the_build_is_flagged() {
    let context = recorded();
    context.edit("pins.toml", "version = \"0.6.14\"", "version = \"0.6.15\"");
    let run = context.forge(&["report"]).expect_code(0);
    forge_snapshot!(run.stderr, context.path(), @"warning: pins.toml has changed since the recorded build; the pins listed are today's, the rest is the record's");
    insta::assert_snapshot!("report_pins_changed", run.stdout);
}

#[test]
fn without_a_record_the_report_exits_2_and_says_to_build() {
    let context = TestContext::default_recipe();
    let run = context.forge(&["report"]).expect_code(2);
    forge_snapshot!(run.stderr, context.path(), @"
    error: forge.lock does not exist: there is no recorded build to report on
    hint: run `forge build` (with --push to record registry digests) first; the report describes the build forge.lock records
    ");
    assert_eq!(run.stdout, "");
}

#[test]
fn a_signed_build_names_its_signature_provenance_and_sbom_digests() {
    let context = recorded();
    let hex = PUSHED.trim_start_matches("sha256:");
    let mut record = context.read("forge.lock");
    let attached = [
        ("sbom", "sbom", 'a', 'b'),
        ("attestation", "att", 'c', 'd'),
        ("signature", "sig", 'e', 'f'),
    ];
    for (kind, suffix, manifest, content) in attached {
        record.push_str(&format!(
            "\n[[attachments]]\nkind = \"{kind}\"\nsubject = \"{PUSHED}\"\ntag = \"sha256-{hex}.{suffix}\"\nmanifest = \"sha256:{}\"\ncontent = \"sha256:{}\"\n",
            manifest.to_string().repeat(64),
            content.to_string().repeat(64),
        ));
    }
    context.write("forge.lock", &record);
    let run = context.forge(&["-q", "report"]).expect_code(0);
    let repository = "ghcr.io/aeon-7/vllm-ultimate-deepseek-v4-gb10";
    insta::assert_snapshot!("report_signed_build", run.stdout);
    let json = context.forge(&["--json", "report"]).expect_code(0).json();
    let attachments = json["attachments"].as_array().unwrap();
    assert_eq!(attachments.len(), 3);
    assert_eq!(attachments[2]["kind"], "signature");
    assert_eq!(
        attachments[2]["reference"],
        format!("{repository}:sha256-{hex}.sig")
    );
    assert_eq!(attachments[2]["subject"], PUSHED);
    assert_eq!(
        attachments[2]["manifest"],
        format!("sha256:{}", "e".repeat(64))
    );
}

/// `report REF --key` on a signed push whose `.sig` the registry no longer serves: the signed
/// build record shows the push was signed, so the report says the signature is missing from the
/// registry, not that the build was pushed without `--sign`.
#[test]
fn a_signature_gone_from_the_registry_is_said_missing_not_never_made() {
    let api = crate::support::referrers_api::ReferrersApi::start();
    let keys = crate::support::keys::Keys::new();
    let Some(example) = crate::support::signed::signed_at(api.address(), "report-sig", &keys)
    else {
        return;
    };
    api.hide(".sig");
    let folder = TestContext::empty();
    folder.write("signing.pub", &keys.public_text());
    let reference = format!("{}:latest", example.repository);
    let run = folder
        .forge(&["-q", "report", &reference, "--key", "signing.pub"])
        .expect_code(0);
    crate::support::assert_contains_flowed(
        &run.stdout,
        "The signature is missing from the registry",
    );
    assert!(
        !run.stdout.contains("pushed without `--sign`"),
        "{}",
        run.stdout
    );
}

/// A record without a commit or a base digest says `not recorded` in plain words, as every
/// missing value of the report does, never as a value in code style.
#[test]
fn a_value_not_recorded_is_said_in_plain_words() {
    let context = recorded();
    let lock = context.read("forge.lock").replace(
        "revision = \"4b825dc642cb6eb9a060e54bf8d69288fbee4904\"\n",
        "",
    );
    context.write("forge.lock", &lock);
    let run = context.forge(&["-q", "report"]).expect_code(0);
    insta::assert_snapshot!("report_value_not_recorded", run.stdout);
}
