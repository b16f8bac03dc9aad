//! cosign is the judge of what forge signs: the tester's cosign commands of the README, as they
//! are written there, pass against a forge-signed push with both cosign versions users run, 2
//! (Debian trixie's) and 3 (forky's), which `ci/test` unpacks under `FORGE_TEST_ENGINES`; and
//! crane and oras, registry clients forge shares nothing with, read in the registry what
//! forge.lock records of that push.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::cosign::{cosign_with, cosigns, words};
use crate::support::keys::Keys;
use crate::support::registry::RegistryServer;
use crate::support::release::sha256_hex;
use crate::support::signed::signed;
use crate::support::{TestContext, assert_contains, repository_root};

/// The image reference the README's tester commands name.
const DOCUMENTED: &str = "ghcr.io/aeon-7/vllm-ultimate-deepseek-v4-gb10:experimental-pr4";

/// The README's cosign commands for testers, each as its words.
fn documented_commands() -> Vec<Vec<String>> {
    let readme = std::fs::read_to_string(repository_root().join("README.md")).unwrap();
    let commands: Vec<Vec<String>> = readme
        .lines()
        .filter(|line| line.starts_with("cosign verify"))
        .map(|line| line.split_whitespace().map(str::to_owned).collect())
        .collect();
    assert_eq!(
        commands.len(),
        2,
        "the README's two cosign commands for testers"
    );
    commands
}

/// `cosign ARGS` run in `folder` with a home of its own there; its exit code and stderr.
fn cosign(program: &Path, args: &[String], folder: &Path) -> (i32, String) {
    cosign_with(program, args, folder, None)
}

#[test]
fn the_readmes_cosign_commands_accept_a_forge_signed_image_with_cosign_2_and_3() {
    let registry = RegistryServer::start();
    let keys = Keys::new();
    let Some(example) = signed(&registry, "cosign-readme", &keys) else {
        return;
    };
    let tester = TestContext::empty();
    tester.write("signing.pub", &keys.public_text());
    let reference = format!("{}:latest", example.repository);
    for (suite, program) in cosigns() {
        for words in documented_commands() {
            let args: Vec<String> = words[1..]
                .iter()
                .map(|word| {
                    if word == DOCUMENTED {
                        reference.clone()
                    } else {
                        word.clone()
                    }
                })
                .collect();
            let (code, stderr) = cosign(&program, &args, tester.path());
            assert_eq!(
                code,
                0,
                "{suite}'s cosign refused `cosign {}`:\n{stderr}",
                args.join(" ")
            );
        }
    }
}

/// `crane` (forky's), as a second judge of the registry: its words on `args`, which must be a
/// success.
fn crane(args: &[&str], home: &Path) -> Vec<u8> {
    let folder = PathBuf::from(std::env::var_os("FORGE_TEST_ENGINES").expect("the engines"));
    let output = Command::new(folder.join("forky/crane/usr/bin/crane"))
        .args(args)
        .env("HOME", home)
        .output()
        .expect("crane runs");
    assert!(
        output.status.success(),
        "crane {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

/// crane sees in the registry what forge.lock records of a signed push: each tag's manifest
/// digest, the manifest's bytes under that digest, the config under the image id, each
/// attachment's manifest under its cosign tag, and each bundle's manifest under its digest;
/// oras finds exactly those bundles among the image's referrers.
#[test]
fn crane_reads_in_the_registry_what_forge_recorded() {
    if cosigns().is_empty() {
        return;
    }
    let registry = RegistryServer::start();
    let keys = Keys::new();
    let Some(example) = signed(&registry, "crane-judge", &keys) else {
        return;
    };
    let home = TestContext::empty();
    let lock: toml::Table = example.context.read("forge.lock").parse().unwrap();
    let repository = &example.repository;
    let id = lock["image"]["id"].as_str().unwrap();
    for tag in lock["tags"].as_array().unwrap() {
        let reference = format!("{repository}:{}", tag["name"].as_str().unwrap());
        let pushed = tag["pushed"].as_str().unwrap();
        let digest = String::from_utf8(crane(&["digest", &reference], home.path())).unwrap();
        assert_eq!(digest.trim(), pushed, "{reference}");
        let manifest = crane(&["manifest", &reference], home.path());
        assert_eq!(
            format!("sha256:{}", sha256_hex(&manifest)),
            pushed,
            "{reference}"
        );
        let config = crane(&["config", &reference], home.path());
        assert_eq!(format!("sha256:{}", sha256_hex(&config)), id, "{reference}");
    }
    let attachments = lock["attachments"].as_array().unwrap();
    assert!(!attachments.is_empty());
    let pushed = lock["tags"][0]["pushed"].as_str().unwrap();
    let referrers = oras_referrers(&format!("{repository}@{pushed}"), home.path());
    let mut bundles = Vec::new();
    for attachment in attachments {
        let manifest = attachment["manifest"].as_str().unwrap();
        let kind = attachment["kind"].as_str().unwrap();
        if kind.ends_with("-bundle") {
            // A referrer: its manifest under its digest, listed among the image's referrers
            // with the bundle's artifact type, under the referrers tag this registry needs.
            assert_eq!(
                attachment["tag"].as_str(),
                Some(format!("sha256-{}", &pushed[7..]).as_str())
            );
            let bytes = crane(
                &["manifest", &format!("{repository}@{manifest}")],
                home.path(),
            );
            assert_eq!(format!("sha256:{}", sha256_hex(&bytes)), manifest);
            bundles.push((manifest.to_owned(), BUNDLE.to_owned()));
            continue;
        }
        let reference = format!("{repository}:{}", attachment["tag"].as_str().unwrap());
        let digest = String::from_utf8(crane(&["digest", &reference], home.path())).unwrap();
        assert_eq!(digest.trim(), manifest, "{reference}");
    }
    bundles.sort();
    assert_eq!(bundles.len(), 2, "{attachments:?}");
    assert_eq!(referrers, bundles, "oras discover {repository}@{pushed}");
}

/// The media type of the sigstore bundles cosign 3 and forge attach.
const BUNDLE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";

/// `oras discover` (forky's), a third registry client: the referrers of `reference` as
/// `(digest, artifactType)`, sorted.
fn oras_referrers(reference: &str, home: &Path) -> Vec<(String, String)> {
    let folder = PathBuf::from(std::env::var_os("FORGE_TEST_ENGINES").expect("the engines"));
    let output = Command::new(folder.join("forky/oras/usr/bin/oras"))
        .args(["discover", "--plain-http", "--format", "json", reference])
        .env("HOME", home)
        .output()
        .expect("oras runs");
    assert!(
        output.status.success(),
        "oras discover {reference}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let found: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let mut referrers: Vec<(String, String)> = found["referrers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|referrer| {
            (
                referrer["digest"].as_str().unwrap().to_owned(),
                referrer["artifactType"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect();
    referrers.sort();
    referrers
}

/// `cosign sign-blob` with the key `key` of the folder, as each version signs without a
/// transparency log: cosign 2 writes `blob.sig`, cosign 3 the bundle `blob.bundle` it insists on.
/// The words of the `cosign verify-blob` that checks it against `public`.
fn cosign_signs_blob(suite: &str, program: &Path, folder: &Path, key: &str, public: &str) {
    let (sign, verify) = match suite {
        "trixie" => (
            format!(
                "sign-blob --key {key} --tlog-upload=false --yes --output-signature blob.sig blob"
            ),
            format!("verify-blob --key {public} --signature blob.sig --insecure-ignore-tlog blob"),
        ),
        _ => (
            format!(
                "sign-blob --key {key} --use-signing-config=false --tlog-upload=false --yes --bundle blob.bundle blob"
            ),
            format!("verify-blob --key {public} --bundle blob.bundle --insecure-ignore-tlog blob"),
        ),
    };
    let (code, stderr) = cosign_with(program, &words(&sign), folder, Some("lab password"));
    assert_eq!(
        code, 0,
        "{suite}'s cosign did not sign with {key}:\n{stderr}"
    );
    let (code, stderr) = cosign(program, &words(&verify), folder);
    assert_eq!(code, 0, "{suite}'s cosign: {verify}:\n{stderr}");
}

/// Keys both ways: cosign 2 and 3 sign with the key `forge keygen --cosign` seals (and the
/// signature checks against forge's public key), and forge signs with the key each cosign's
/// `generate-key-pair` writes (and that cosign checks forge's signature against its own public
/// key). Without COSIGN_PASSWORD, `keygen --cosign` writes nothing.
#[test]
fn forge_and_cosign_sign_with_each_others_keys() {
    for (suite, program) in cosigns() {
        let folder = TestContext::empty();
        folder.write("blob", "the release's SHA256SUMS\n");
        let unset = folder
            .forge(&["keygen", "--cosign", "--out", "none"])
            .expect_code(2);
        assert_contains(&unset.stderr, "COSIGN_PASSWORD is not set");
        assert!(
            !folder.path().join("none.key").exists() && !folder.path().join("none.pub").exists()
        );

        folder
            .forge_with(
                &["keygen", "--cosign", "--out", "forge"],
                &[("COSIGN_PASSWORD", "lab password")],
            )
            .expect_code(0);
        assert!(
            folder
                .read("forge.key")
                .starts_with("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n")
        );
        cosign_signs_blob(suite, &program, folder.path(), "forge.key", "forge.pub");

        let (code, stderr) = cosign_with(
            &program,
            &words("generate-key-pair"),
            folder.path(),
            Some("lab password"),
        );
        assert_eq!(code, 0, "{suite}'s cosign generate-key-pair:\n{stderr}");
        folder
            .forge_with(
                &[
                    "sign-blob",
                    "blob",
                    "--sign-key",
                    "cosign.key",
                    "--out",
                    "forge.sig",
                ],
                &[("COSIGN_PASSWORD", "lab password")],
            )
            .expect_code(0);
        let verify =
            words("verify-blob --key cosign.pub --signature forge.sig --insecure-ignore-tlog blob");
        let (code, stderr) = cosign(&program, &verify, folder.path());
        assert_eq!(
            code, 0,
            "{suite}'s cosign refused forge's signature with its own key:\n{stderr}"
        );
    }
}

/// `forge sign-blob --bundle` writes what cosign 3's `verify-blob --bundle` accepts with the
/// public key, and refuses once the file changes; the `.sig` beside it is what cosign 2 reads.
#[test]
fn cosign_3_accepts_the_bundle_sign_blob_writes() {
    let keys = Keys::new();
    for (suite, program) in cosigns() {
        let folder = TestContext::empty();
        folder.write("SHA256SUMS", "0123  forge-0.1.0-aarch64.tar.gz\n");
        std::fs::copy(keys.public(), folder.path().join("signing.pub")).unwrap();
        let run = folder
            .forge(&[
                "--json",
                "sign-blob",
                "SHA256SUMS",
                "--sign-key",
                &keys.private_arg(),
                "--bundle",
                "SHA256SUMS.bundle",
            ])
            .expect_code(0);
        assert_eq!(run.json()["bundle"], "SHA256SUMS.bundle");
        let check = match suite {
            "trixie" => {
                "verify-blob --key signing.pub --signature SHA256SUMS.sig --insecure-ignore-tlog SHA256SUMS"
            }
            _ => {
                "verify-blob --key signing.pub --bundle SHA256SUMS.bundle --insecure-ignore-tlog SHA256SUMS"
            }
        };
        let (code, stderr) = cosign(&program, &words(check), folder.path());
        assert_eq!(code, 0, "{suite}'s cosign {check}:\n{stderr}");
        folder.write("SHA256SUMS", "4567  forge-0.1.0-aarch64.tar.gz\n");
        let (code, _) = cosign(&program, &words(check), folder.path());
        assert_ne!(code, 0, "{suite}'s cosign accepted a changed file");
    }
}

/// The rows of docs/provenance.md's table of verdicts: each command's words (with `IMAGE` and
/// `signing.pub` as written there), the cosign suite it names (none for forge), and whether it
/// accepts with tags only, with bundles only, and with both.
fn documented_verdicts() -> Vec<(Vec<String>, Option<&'static str>, [bool; 3])> {
    let text = std::fs::read_to_string(repository_root().join("docs/provenance.md")).unwrap();
    let table = text
        .split("<!-- verdicts: the rows tests/it/cosign.rs runs -->\n")
        .nth(1)
        .expect("the table of verdicts");
    let verdict = |cell: &str| match cell.trim() {
        "accepts" => true,
        "refuses" => false,
        other => panic!("a verdict is `accepts` or `refuses`, not {other:?}"),
    };
    let rows: Vec<_> = table
        .lines()
        .skip(2)
        .take_while(|line| line.starts_with('|'))
        .map(|line| {
            let cells: Vec<&str> = line.trim_matches('|').split(" | ").collect();
            let (command, tool) = cells[0].trim().rsplit_once('`').unwrap();
            let suite = match tool.trim() {
                "(cosign 2.5)" => Some("trixie"),
                "(cosign 3.1)" => Some("forky"),
                "" => None,
                other => panic!("a row names cosign 2.5 or 3.1, or nothing: {other}"),
            };
            let words = command.trim_start_matches('`').split_whitespace();
            (
                words.map(str::to_owned).collect(),
                suite,
                [verdict(cells[1]), verdict(cells[2]), verdict(cells[3])],
            )
        })
        .collect();
    assert_eq!(rows.len(), 5, "the table's rows");
    rows
}

/// docs/provenance.md's table of which command accepts a forge image in which format, each row
/// run as written against a signed push with tags only (no bundle among the referrers), with
/// bundles only (no layer under `.sig` and `.att`) and with both.
#[test]
fn the_documented_verdicts_of_each_format_hold() {
    use crate::support::registry::path_of;
    use crate::support::signed::OCI_MANIFEST;
    let installed = cosigns();
    if installed.is_empty() {
        return;
    }
    let registry = RegistryServer::start();
    let keys = Keys::new();
    let Some(example) = signed(&registry, "cosign-table", &keys) else {
        return;
    };
    let path = path_of(&example, &registry);
    let digest = registry.digest(&path, "latest");
    let hex = digest.trim_start_matches("sha256:");
    let index = "application/vnd.oci.image.index.v1+json";
    let referrers = format!("sha256-{hex}");
    let bundles = registry.held(&path, &referrers, &[index]).1;
    let tags: Vec<(String, Vec<u8>)> = ["sig", "att"]
        .into_iter()
        .map(|suffix| {
            let tag = format!("sha256-{hex}.{suffix}");
            let held = registry.held(&path, &tag, &[OCI_MANIFEST]).1;
            (tag, held)
        })
        .collect();
    let emptied = |manifest: &[u8]| {
        let mut manifest: serde_json::Value = serde_json::from_slice(manifest).unwrap();
        manifest["layers"] = serde_json::json!([]);
        serde_json::to_vec(&manifest).unwrap()
    };
    let no_bundles = br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}"#;
    let folder = TestContext::empty();
    folder.write("signing.pub", &keys.public_text());
    let reference = format!("{}:latest", example.repository);
    let rows = documented_verdicts();
    for (state, name) in ["tags only", "bundles only", "both"]
        .into_iter()
        .enumerate()
    {
        let with_bundles: &[u8] = if state == 0 { no_bundles } else { &bundles };
        registry.put_manifest(&path, &referrers, index, with_bundles);
        for (tag, held) in &tags {
            let layers = if state == 1 {
                emptied(held)
            } else {
                held.clone()
            };
            registry.put_manifest(&path, tag, OCI_MANIFEST, &layers);
        }
        for (words, suite, verdicts) in &rows {
            let args: Vec<String> = words[1..]
                .iter()
                .map(|word| {
                    if word == "IMAGE" {
                        reference.clone()
                    } else {
                        word.clone()
                    }
                })
                .collect();
            let accepted = match suite {
                Some(suite) => {
                    let (_, program) = installed.iter().find(|(name, _)| name == suite).unwrap();
                    cosign(program, &args, folder.path()).0 == 0
                }
                None => {
                    let args: Vec<&str> = args.iter().map(String::as_str).collect();
                    folder.forge(&args).code == 0
                }
            };
            assert_eq!(
                accepted,
                verdicts[state],
                "{name}: {} ({suite:?})",
                words.join(" ")
            );
        }
    }
}

/// To a registry with the referrers API, forge's bundles go by the API alone: the registry
/// says it indexed each (`OCI-Subject`), forge.lock records no referrers tag, the registry holds
/// none, and cosign 3, oras and forge find both bundles through the API.
#[test]
fn a_registry_with_the_referrers_api_lists_the_bundles_without_a_tag() {
    let installed = cosigns();
    if installed.is_empty() {
        return;
    }
    let api = crate::support::referrers_api::ReferrersApi::start();
    let keys = Keys::new();
    let Some(example) = crate::support::signed::signed_at(api.address(), "referrers-api", &keys)
    else {
        return;
    };
    let lock: toml::Table = example.context.read("forge.lock").parse().unwrap();
    let pushed = lock["tags"][0]["pushed"].as_str().unwrap();
    let bundles: Vec<&toml::Value> = lock["attachments"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|attachment| attachment["kind"].as_str().unwrap().ends_with("-bundle"))
        .collect();
    assert_eq!(bundles.len(), 2);
    for bundle in &bundles {
        assert_eq!(bundle["tag"].as_str(), Some(""), "{bundle:?}");
    }
    let path = example
        .repository
        .strip_prefix(&format!("{}/", api.address()))
        .unwrap()
        .to_owned();
    let (_, _, listing) = api
        .backend
        .get(&format!("/v2/{path}/tags/list"), "application/json")
        .expect("the registry answers");
    let listing: serde_json::Value = serde_json::from_slice(&listing).unwrap();
    let tags: Vec<&str> = listing["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tag| tag.as_str().unwrap())
        .collect();
    assert!(
        !tags.contains(&format!("sha256-{}", &pushed[7..]).as_str()),
        "no referrers tag: {tags:?}"
    );
    let asked = format!("GET /v2/{path}/referrers/{pushed}");
    let home = TestContext::empty();
    let mut listed = oras_referrers(&format!("{}@{pushed}", example.repository), home.path());
    listed.retain(|(_, artifact)| artifact == BUNDLE);
    assert_eq!(listed.len(), 2, "oras discover: {listed:?}");

    let folder = TestContext::empty();
    folder.write("signing.pub", &keys.public_text());
    let reference = format!("{}:latest", example.repository);
    for (suite, program) in &installed {
        let verdict = crate::support::cosign::verdict(program, &keys.public(), &reference);
        assert_eq!(verdict, (true, true), "{suite}'s cosign");
    }
    let run = folder
        .forge(&[
            "--json",
            "verify-digest",
            &reference,
            "--key",
            "signing.pub",
        ])
        .expect_code(0);
    let json = run.json();
    for check in json["checks"].as_array().unwrap() {
        if ["signature", "provenance subject"].contains(&check["name"].as_str().unwrap()) {
            assert!(check["note"].is_null(), "found in both formats: {check}");
        }
    }
    assert!(
        api.requests().iter().any(|request| request == &asked),
        "forge asked the referrers API: {:?}",
        api.requests()
    );
}

/// `cosign sign` and `cosign attest --type slsaprovenance1` of `image` (by digest) with the
/// sealed `key` (password `lab`), as each version signs without a transparency log: cosign 2
/// under the tags (its attestation an in-toto Statement v0.1), cosign 3 in bundles.
fn cosign_signs_image(suite: &str, program: &Path, folder: &Path, key: &str, image: &str) {
    let offline = match suite {
        "trixie" => "--tlog-upload=false --yes",
        _ => "--use-signing-config=false --tlog-upload=false --yes",
    };
    for command in [
        format!("sign --key {key} {offline} {image}"),
        format!(
            "attest --key {key} {offline} --type slsaprovenance1 --predicate predicate.json {image}"
        ),
    ] {
        let (code, stderr) = cosign_with(program, &words(&command), folder, Some("lab"));
        assert_eq!(code, 0, "{suite}'s cosign {command}:\n{stderr}");
    }
}

/// The rows `signature`, `provenance subject` and `provenance inputs` of `forge verify-digest
/// REF --key PUB` run in `folder`: each one's verdict and note (where it has none, what it
/// found).
fn forge_rows(folder: &TestContext, reference: &str, public: &str) -> Vec<(bool, String)> {
    let run = folder.forge(&["--json", "verify-digest", reference, "--key", public]);
    let json = run.json();
    ["signature", "provenance subject", "provenance inputs"]
        .into_iter()
        .map(|name| {
            let row = json["checks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|check| check["name"] == name)
                .unwrap_or_else(|| panic!("a {name} row: {json:#}"));
            (
                row["ok"] == true,
                row["note"]
                    .as_str()
                    .unwrap_or(row["actual"].as_str().unwrap_or_default())
                    .to_owned(),
            )
        })
        .collect()
}

/// What each cosign signs and attests itself, with forge's provenance as the predicate, forge
/// accepts with the key, from the format that cosign writes alone (cosign 2: the tags, its
/// attestation an in-toto Statement v0.1; cosign 3: bundles). Then a co-signature by cosign 3
/// with another key leaves the image verifiable by cosign 3 with forge's key, and survives
/// forge signing it again.
#[test]
fn forge_accepts_what_cosign_signs_and_cosign_3_co_signs_beside_forge() {
    use crate::support::signed::OCI_MANIFEST;
    let installed = cosigns();
    if installed.is_empty()
        || !crate::support::images::docker_available()
        || crate::support::registry::registry_tools_missing()
    {
        return;
    }
    crate::support::images::ensure_base_image();
    let registry = RegistryServer::start();
    let folder = TestContext::empty();
    for (prefix, password) in [("lab", "lab"), ("other", "other")] {
        folder
            .forge_with(
                &["keygen", "--cosign", "--out", prefix],
                &[("COSIGN_PASSWORD", password)],
            )
            .expect_code(0);
    }
    let path = format!("forge-test/cosign-signs-{}", std::process::id());
    let example =
        crate::support::images::Example::with_repository(&format!("{}/{path}", registry.address()));
    let key = folder.path().join("lab.key").display().to_string();
    let sign = ["--push", "--sign", "--sign-key", key.as_str()];
    example
        .build_with(&sign, &[("COSIGN_PASSWORD", "lab")])
        .expect_code(0);
    let digest = registry.digest(&path, "latest");
    let hex = &digest[7..];
    let image = format!("{}@{digest}", example.repository);
    let reference = format!("{}:latest", example.repository);
    let index = "application/vnd.oci.image.index.v1+json";
    let referrers = format!("sha256-{hex}");
    let held_index = registry.held(&path, &referrers, &[index]).1;
    let tags: Vec<(String, Vec<u8>)> = ["sig", "att"]
        .into_iter()
        .map(|suffix| {
            let tag = format!("sha256-{hex}.{suffix}");
            let held = registry.held(&path, &tag, &[OCI_MANIFEST]).1;
            (tag, held)
        })
        .collect();
    // forge's predicate, for cosign to attest.
    let att: serde_json::Value = serde_json::from_slice(&tags[1].1).unwrap();
    let envelope = registry
        .get(
            &format!(
                "/v2/{path}/blobs/{}",
                att["layers"][0]["digest"].as_str().unwrap()
            ),
            "*/*",
        )
        .unwrap()
        .2;
    let envelope: serde_json::Value = serde_json::from_slice(&envelope).unwrap();
    use base64::Engine as _;
    let statement = base64::engine::general_purpose::STANDARD
        .decode(envelope["payload"].as_str().unwrap())
        .unwrap();
    let statement: serde_json::Value = serde_json::from_slice(&statement).unwrap();
    folder.write("predicate.json", &statement["predicate"].to_string());

    // An attachment manifest with no layer (its config listing none), as the tags are left
    // when nothing is signed under them.
    let empty_config =
        br#"{"architecture":"","os":"","config":{},"rootfs":{"type":"layers","diff_ids":[]}}"#;
    let empty = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            "size": empty_config.len(),
            "digest": registry.put_blob(&path, empty_config),
        },
        "layers": [],
    }))
    .unwrap();
    let put_back = |bundles: &[u8], emptied: bool| {
        registry.put_manifest(&path, &referrers, index, bundles);
        for (tag, held) in &tags {
            let manifest = if emptied { &empty } else { held };
            registry.put_manifest(&path, tag, OCI_MANIFEST, manifest);
        }
    };
    let no_bundles = br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}"#;
    for (suite, program) in &installed {
        // Nothing of forge's signatures left in either format: what cosign writes alone.
        put_back(no_bundles, true);
        cosign_signs_image(suite, program, folder.path(), "lab.key", &image);
        let rows = forge_rows(&folder, &reference, "lab.pub");
        let held = if *suite == "trixie" {
            "in the .sig tag only"
        } else {
            "in a sigstore bundle only"
        };
        assert!(rows.iter().all(|(ok, _)| *ok), "{suite}: {rows:?}");
        assert_eq!(rows[0].1, held, "{suite}");
    }

    // forge's own signatures back, and cosign 3 co-signs in the bundle format with another key.
    put_back(&held_index, false);
    let (_, cosign3) = installed
        .iter()
        .find(|(suite, _)| *suite == "forky")
        .unwrap();
    let offline = "--use-signing-config=false --tlog-upload=false --yes";
    let co_sign = words(&format!("sign --key other.key {offline} {image}"));
    let (code, stderr) = cosign_with(cosign3, &co_sign, folder.path(), Some("other"));
    assert_eq!(code, 0, "cosign 3 co-signs:\n{stderr}");
    for round in ["co-signed", "signed again by forge"] {
        for public in ["lab.pub", "other.pub"] {
            let verify = words(&format!(
                "verify --key {public} --insecure-ignore-tlog {reference}"
            ));
            let (code, stderr) = cosign(cosign3, &verify, folder.path());
            assert_eq!(code, 0, "{round}: cosign 3 with {public}:\n{stderr}");
        }
        let rows = forge_rows(&folder, &reference, "lab.pub");
        assert!(rows[0].0, "{round}: {rows:?}");
        assert_eq!(
            rows[0].1, "in both formats; 1 of 3 layers ignored: not signed by lab.pub",
            "{round}"
        );
        example
            .build_with(&sign, &[("COSIGN_PASSWORD", "lab")])
            .expect_code(0);
        assert_eq!(registry.digest(&path, "latest"), digest, "the same image");
    }
}
