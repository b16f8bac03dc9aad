//! `forge build --push --sign` and `forge verify-digest --remote --key`, against Debian's
//! `docker-registry` on loopback. What forge attaches is judged by other tools: `skopeo` reads
//! the signature through cosign's tag scheme (`use-sigstore-attachments`) and its policy
//! (`sigstoreSigned`) judges it where the skopeo build has sigstore; `openssl` verifies the
//! signature over the payload skopeo found with forge's public key.

use std::path::Path;
use std::process::{Command, Output};

use base64::Engine as _;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::support::images::{DATED_TAG, Example, docker_available, ensure_base_image};
use crate::support::keys::Keys;
use crate::support::registry::RegistryServer;
use crate::support::registry::{no_credentials, path_of, registry_tools_missing};
use crate::support::signed::{
    OCI_MANIFEST, attest_check, openssl_verifies, pushed_again_signed, signed, verifier_python,
};
use crate::support::snapshot::forge_snapshot;
use crate::support::verify::{failing, row, verify};
use crate::support::{TestContext, assert_contains};

/// The signatures skopeo finds for `reference` through cosign's tag scheme, as it stores them
/// in a `dir:` copy (`signature-N`: a NUL, `sigstore-json`, a newline, then JSON), and the
/// sha256 of the manifest it copied.
fn skopeo_signatures(registry: &RegistryServer, reference: &str) -> (String, Vec<Value>) {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(
        work.path().join("policy.json"),
        r#"{"default":[{"type":"insecureAcceptAnything"}]}"#,
    )
    .unwrap();
    let output = skopeo_copy_with(registry, work.path(), reference);
    assert!(
        output.status.success(),
        "skopeo copy {reference}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let copy = work.path().join("copy");
    let manifest = std::fs::read(copy.join("manifest.json")).unwrap();
    let mut signatures = Vec::new();
    for index in 1.. {
        let Ok(bytes) = std::fs::read(copy.join(format!("signature-{index}"))) else {
            break;
        };
        let start = bytes.iter().position(|&byte| byte == b'{').unwrap();
        assert_eq!(&bytes[..start], b"\0sigstore-json\n");
        signatures.push(serde_json::from_slice(&bytes[start..]).unwrap());
    }
    (
        format!("sha256:{}", hex::encode(Sha256::digest(&manifest))),
        signatures,
    )
}

/// `skopeo copy` of `reference` to a `dir:` under `work`, reading the registry's attachments
/// by cosign's tag scheme, with the policy in `work/policy.json`.
fn skopeo_copy_with(registry: &RegistryServer, work: &Path, reference: &str) -> Output {
    let registries = work.join("registries.d");
    std::fs::create_dir_all(&registries).unwrap();
    std::fs::write(
        registries.join("forge-test.yaml"),
        format!(
            "docker:\n  {}:\n    use-sigstore-attachments: true\n",
            registry.address()
        ),
    )
    .unwrap();
    Command::new("skopeo")
        .arg("--policy")
        .arg(work.join("policy.json"))
        .arg("--registries.d")
        .arg(&registries)
        .args(["copy", "--quiet", "--src-tls-verify=false"])
        .arg(format!("docker://{reference}"))
        .arg(format!("dir:{}", work.join("copy").display()))
        .output()
        .expect("skopeo runs")
}

/// `skopeo copy` of `reference` under a policy that requires a `sigstoreSigned` signature by
/// `public` for the repository.
fn skopeo_policy(
    registry: &RegistryServer,
    repository: &str,
    reference: &str,
    public: &Path,
) -> Output {
    let work = tempfile::tempdir().unwrap();
    let policy = serde_json::json!({
        "default": [{ "type": "reject" }],
        "transports": { "docker": { repository: [{
            "type": "sigstoreSigned",
            "keyPath": public,
            "signedIdentity": { "type": "matchRepository" },
        }]}},
    });
    std::fs::write(work.path().join("policy.json"), policy.to_string()).unwrap();
    skopeo_copy_with(registry, work.path(), reference)
}

/// Debian's skopeo is built with sigstore verification taken out (it says so when a policy
/// asks for it); any other build judges the signature itself.
const SIGSTORE_DISABLED: &str = "sigstore disabled";

#[test]
fn keygen_writes_a_private_key_only_its_owner_reads_and_never_overwrites() {
    use std::os::unix::fs::PermissionsExt as _;
    let keys = Keys::new();
    let mode = std::fs::metadata(keys.private())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let private = std::fs::read_to_string(keys.private()).unwrap();
    assert!(
        private.starts_with("-----BEGIN PRIVATE KEY-----"),
        "{private}"
    );
    let public = std::fs::read_to_string(keys.public()).unwrap();
    assert!(public.starts_with("-----BEGIN PUBLIC KEY-----"), "{public}");
    // openssl reads both halves as a P-256 pair.
    let output = Command::new("openssl")
        .args(["pkey", "-in"])
        .arg(keys.private())
        .args(["-pubout"])
        .output()
        .expect("openssl runs");
    assert_eq!(String::from_utf8_lossy(&output.stdout), public);

    let context = TestContext::empty();
    let run = context
        .forge(&["keygen", "--out", &keys.prefix()])
        .expect_code(2);
    forge_snapshot!(run.stderr, context.path(), @"
    error: <tmp>/signing.key already exists
    hint: move it away, or name other files
    ");
    assert_eq!(std::fs::read_to_string(keys.private()).unwrap(), private);

    // A public key's name taken by a link to nothing: refused before the private key is
    // written, and a rerun meets the same refusal, not a half-written pair.
    std::os::unix::fs::symlink("nowhere", context.path().join("lab.pub")).unwrap();
    let mut refusals = String::new();
    for _ in 0..2 {
        let run = context.forge(&["keygen", "--out", "lab"]).expect_code(2);
        refusals.push_str(&run.stderr);
        assert!(!context.path().join("lab.key").exists());
    }
    forge_snapshot!(refusals, context.path(), @"
    error: lab.pub already exists
    hint: move it away, or name other files
    error: lab.pub already exists
    hint: move it away, or name other files
    ");
}

/// `forge sign-blob` signs a file as `cosign sign-blob --key` does: FILE.sig is base64 of the
/// DER signature over the file's SHA-256, which openssl checks with the public key alone; a
/// changed byte or another key does not check, and a device is refused without being read.
#[test]
fn sign_blob_writes_a_signature_openssl_checks_with_the_public_key() {
    let keys = Keys::new();
    let context = TestContext::empty();
    let file = context.path().join("SHA256SUMS");
    let text = "0123  forge-x86_64-unknown-linux-gnu.tar.gz\n".repeat(5000);
    std::fs::write(&file, &text).unwrap();
    let run = context
        .forge(&["sign-blob", "SHA256SUMS", "--sign-key", &keys.private_arg()])
        .expect_code(0);
    forge_snapshot!(run.stderr, context.path(), @"      Signed SHA256SUMS with <tmp>/signing.key → SHA256SUMS.sig");
    let signature = std::fs::read_to_string(context.path().join("SHA256SUMS.sig")).unwrap();
    assert!(signature.ends_with('\n') && signature.trim().lines().count() == 1);
    assert!(openssl_verifies(
        &keys.public(),
        text.as_bytes(),
        signature.trim()
    ));
    let mut changed = text.clone().into_bytes();
    changed[0] = b'1';
    assert!(!openssl_verifies(
        &keys.public(),
        &changed,
        signature.trim()
    ));
    let other = Keys::new();
    assert!(!openssl_verifies(
        &other.public(),
        text.as_bytes(),
        signature.trim()
    ));

    // FORGE_SIGNING_KEY and --out, as the release workflow signs.
    let pem = std::fs::read_to_string(keys.private()).unwrap();
    context
        .forge_with(
            &["sign-blob", "SHA256SUMS", "--out", "sums.sig"],
            &[("FORGE_SIGNING_KEY", pem.as_str())],
        )
        .expect_code(0);
    let again = std::fs::read_to_string(context.path().join("sums.sig")).unwrap();
    assert!(openssl_verifies(
        &keys.public(),
        text.as_bytes(),
        again.trim()
    ));

    let run = context
        .forge(&[
            "sign-blob",
            "/dev/zero",
            "--sign-key",
            &keys.private_arg(),
            "--out",
            "z.sig",
        ])
        .expect_code(2);
    forge_snapshot!(run.stderr, context.path(), @"
    error: /dev/zero is a character device
    hint: a recipe holds files, folders and symbolic links only: remove it (forge refused it without reading it)
    ");
    assert!(!context.path().join("z.sig").exists());

    // --out naming the file itself (here through a link) is refused, the file left as it was.
    std::os::unix::fs::symlink("SHA256SUMS", context.path().join("sums-link")).unwrap();
    let run = context
        .forge(&[
            "sign-blob",
            "SHA256SUMS",
            "--sign-key",
            &keys.private_arg(),
            "--out",
            "sums-link",
        ])
        .expect_code(2);
    forge_snapshot!(run.stderr, context.path(), @"
    error: sums-link is the file being signed; its signature would replace it
    hint: name another file for the signature (without --out it goes to FILE.sig); nothing was written
    ");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
}

#[test]
fn sign_without_a_key_is_refused_before_anything_is_built() {
    let context = TestContext::empty();
    let run = context.forge_with(&["build", "--push", "--sign"], &[("FORGE_SIGNING_KEY", "")]);
    let run = run.expect_code(2);
    forge_snapshot!(run.stderr, context.path(), @"
    error: --sign needs a signing key, and neither --sign-key nor FORGE_SIGNING_KEY gives one
    hint: name the private key with --sign-key FILE, or put its PEM text in FORGE_SIGNING_KEY; `forge keygen` writes a pair
    ");
}

#[test]
fn skopeo_finds_the_signature_forge_attached_and_none_on_a_re_pointed_tag() {
    let registry = RegistryServer::start();
    let keys = Keys::new();
    let Some(example) = signed(&registry, "attest-skopeo", &keys) else {
        return;
    };
    let path = path_of(&example, &registry);
    let latest = format!("{}:latest", example.repository);
    let pushed = registry.digest(&path, "latest");
    let lock = example.context.read("forge.lock");
    for suffix in ["sig", "att", "sbom"] {
        let tag = format!("sha256-{}.{suffix}", pushed.trim_start_matches("sha256:"));
        assert_contains(&lock, &format!("tag = \"{tag}\""));
        registry.digest(&path, &tag);
    }

    // skopeo finds exactly one signature, forge's, through the tag scheme.
    let (copied, signatures) = skopeo_signatures(&registry, &latest);
    assert_eq!(copied, pushed);
    assert_eq!(signatures.len(), 1, "{signatures:#?}");
    let signature = &signatures[0];
    assert_eq!(
        signature["mimeType"],
        "application/vnd.dev.cosign.simplesigning.v1+json"
    );
    let payload = base64::engine::general_purpose::STANDARD
        .decode(signature["payload"].as_str().unwrap())
        .unwrap();
    let claims: Value = serde_json::from_slice(&payload).unwrap();
    assert_eq!(
        claims["critical"]["image"]["docker-manifest-digest"],
        pushed.as_str()
    );
    assert_eq!(
        claims["critical"]["identity"]["docker-reference"],
        example.repository.as_str()
    );
    assert_eq!(
        claims["critical"]["type"],
        "cosign container image signature"
    );
    let annotation = signature["annotations"]["dev.cosignproject.cosign/signature"]
        .as_str()
        .unwrap();
    assert!(openssl_verifies(&keys.public(), &payload, annotation));
    let other = Keys::new();
    assert!(!openssl_verifies(&other.public(), &payload, annotation));

    let judged = skopeo_policy(&registry, &example.repository, &latest, &keys.public());
    let said = String::from_utf8_lossy(&judged.stderr).into_owned();
    let sigstore = !said.contains(SIGSTORE_DISABLED);
    if sigstore {
        assert!(judged.status.success(), "{said}");
        let wrong = skopeo_policy(&registry, &example.repository, &latest, &other.public());
        assert!(!wrong.status.success());
    }

    // The tag re-pointed at an image nobody signed: no signature for what it holds.
    let unsigned = registry.push(&path, "latest");
    let (copied, signatures) = skopeo_signatures(&registry, &latest);
    assert_eq!(copied, unsigned);
    assert!(signatures.is_empty(), "{signatures:#?}");
    if sigstore {
        let judged = skopeo_policy(&registry, &example.repository, &latest, &keys.public());
        assert!(!judged.status.success());
    }
    // The dated tag still holds the signed image.
    let (_, signatures) =
        skopeo_signatures(&registry, &format!("{}:{DATED_TAG}", example.repository));
    assert_eq!(signatures.len(), 1);

    let config = no_credentials();
    let env = [("DOCKER_CONFIG", config.path().to_str().unwrap())];
    let run = verify(&example, &["--remote", "--key", &keys.public_arg()], &env).expect_code(1);
    let json = run.json();
    let signature = row(&json, "signature", &latest);
    assert_eq!(signature["expected"], unsigned.as_str());
    assert_eq!(signature["actual"], "none attached");
    assert_eq!(
        row(&json, "provenance subject", &latest)["actual"],
        "none attached"
    );
    let dated = format!("{}:{DATED_TAG}", example.repository);
    assert_eq!(row(&json, "signature", &dated)["ok"], true);
    assert_eq!(row(&json, "provenance subject", &dated)["ok"], true);
}

#[test]
fn verify_with_the_key_holds_for_a_signed_push_and_fails_with_a_key_that_did_not_sign() {
    let registry = RegistryServer::start();
    let keys = Keys::new();
    let Some(example) = signed(&registry, "attest-verify", &keys) else {
        return;
    };
    let path = path_of(&example, &registry);
    let first = registry.digest(&path, "latest");
    let config = no_credentials();
    let env = [("DOCKER_CONFIG", config.path().to_str().unwrap())];
    let key = keys.public_arg();
    let json = verify(&example, &["--remote", "--key", &key], &env)
        .expect_code(0)
        .json();
    for tag in ["latest", DATED_TAG] {
        let reference = format!("{}:{tag}", example.repository);
        let signature = row(&json, "signature", &reference);
        assert_eq!(signature["expected"], first.as_str());
        assert_eq!(signature["ok"], true);
        let subject = row(&json, "provenance subject", &reference);
        assert_eq!(subject["actual"], first.as_str());
        assert_eq!(
            row(&json, "provenance inputs", &reference)["actual"],
            "the recipe's current inputs"
        );
        let sbom = row(&json, "sbom", &reference);
        assert_eq!(
            sbom["actual"],
            "app@3f1c0de5a9b2e47c8d6f0a1b2c3d4e5f60718293"
        );
        assert_eq!(sbom["ok"], true);
    }

    // A key that did not sign.
    let other = Keys::new();
    let run = verify(&example, &["--remote", "--key", &other.public_arg()], &env).expect_code(1);
    let json = run.json();
    let latest = format!("{}:latest", example.repository);
    let signature = row(&json, "signature", &latest);
    assert_eq!(
        signature["actual"],
        format!("none signed by {}", other.public_arg())
    );
    assert_eq!(signature["ok"], false);
    assert_eq!(row(&json, "provenance subject", &latest)["ok"], false);
    assert_contains(&run.stderr, "FAIL");
}

#[test]
fn a_swapped_provenance_signature_or_sbom_fails_verify_with_the_key() {
    let registry = RegistryServer::start();
    let keys = Keys::new();
    let Some(example) = signed(&registry, "attest-swap", &keys) else {
        return;
    };
    let path = path_of(&example, &registry);
    let first = registry.digest(&path, "latest");
    let config = no_credentials();
    let env = [("DOCKER_CONFIG", config.path().to_str().unwrap())];
    let key = keys.public_arg();
    let latest = format!("{}:latest", example.repository);
    // A second signed image, then each of the first image's attachments put in the place of
    // the second's, one at a time.
    let attachment = |digest: &str, suffix: &str| {
        format!("sha256-{}.{suffix}", digest.trim_start_matches("sha256:"))
    };
    let held = |tag: &str| registry.held(&path, tag, &[OCI_MANIFEST]).1;
    let first_att = held(&attachment(&first, "att"));
    let first_sig = held(&attachment(&first, "sig"));
    let first_sbom = held(&attachment(&first, "sbom"));
    // The first image's bundles (its referrers index) go in place of the second's throughout:
    // a swap is of both formats, or the second's own bundles would still hold.
    let referrers = |digest: &str| format!("sha256-{}", digest.trim_start_matches("sha256:"));
    let index = "application/vnd.oci.image.index.v1+json";
    let first_bundles = registry.held(&path, &referrers(&first), &[index]).1;
    pushed_again_signed(&example, &keys);
    let second = registry.digest(&path, "latest");
    assert_ne!(second, first);
    verify(&example, &["--remote", "--key", &key], &env).expect_code(0);
    let second_att = held(&attachment(&second, "att"));
    registry.put_manifest(&path, &referrers(&second), index, &first_bundles);
    registry.put_manifest(&path, &attachment(&second, "att"), OCI_MANIFEST, &first_att);
    let run = verify(&example, &["--remote", "--key", &key], &env).expect_code(1);
    let json = run.json();
    let subject = row(&json, "provenance subject", &latest);
    assert_eq!(subject["expected"], second.as_str());
    assert_eq!(subject["actual"], first.as_str());
    let inputs = row(&json, "provenance inputs", &latest);
    assert_eq!(inputs["ok"], false);
    assert_contains(inputs["actual"].as_str().unwrap(), "overlays sha256:");
    // The signature itself still holds: only the swapped attachment fails, with the SBOM the
    // swapped provenance does not name.
    assert_eq!(row(&json, "signature", &latest)["ok"], true);
    let failed = failing(&json);
    assert!(
        failed.contains(&format!("provenance subject {latest}")),
        "{failed:?}"
    );
    assert!(failed.contains(&format!("sbom {latest}")), "{failed:?}");

    // The second image's provenance back, and the first image's signature in place of its own:
    // a valid signature, of another manifest.
    registry.put_manifest(
        &path,
        &attachment(&second, "att"),
        OCI_MANIFEST,
        &second_att,
    );
    registry.put_manifest(&path, &attachment(&second, "sig"), OCI_MANIFEST, &first_sig);
    let json = verify(&example, &["--remote", "--key", &key], &env)
        .expect_code(1)
        .json();
    let signature = row(&json, "signature", &latest);
    assert_eq!(signature["expected"], second.as_str());
    assert_eq!(signature["actual"], first.as_str());

    // The first image's SBOM in place of the second's: not the SBOM the provenance names.
    registry.put_manifest(
        &path,
        &attachment(&second, "sbom"),
        OCI_MANIFEST,
        &first_sbom,
    );
    let json = verify(&example, &["--remote", "--key", &key], &env)
        .expect_code(1)
        .json();
    let sbom = row(&json, "sbom", &latest);
    assert_eq!(sbom["ok"], false);
    assert_contains(
        sbom["actual"].as_str().unwrap(),
        "which the signed provenance does not name",
    );
}

/// The first layer of the attachment `tag` of `path` on `registry`: its bytes.
fn attached_layer(registry: &RegistryServer, path: &str, tag: &str) -> Vec<u8> {
    let (_, manifest) = registry.held(path, tag, &[OCI_MANIFEST]);
    let manifest: Value = serde_json::from_slice(&manifest).unwrap();
    let digest = manifest["layers"][0]["digest"].as_str().unwrap();
    let (code, _, bytes) = registry
        .get(&format!("/v2/{path}/blobs/{digest}"), "*/*")
        .expect("the registry answers");
    assert_eq!(code, 200, "blob {digest}");
    bytes
}

#[test]
fn the_sbom_validates_and_the_provenance_envelope_verifies_with_independent_libraries() {
    let Some(python) = verifier_python() else {
        return;
    };
    let registry = RegistryServer::start();
    let keys = Keys::new();
    let Some(example) = signed(&registry, "attest-python", &keys) else {
        return;
    };
    let path = path_of(&example, &registry);
    let hex = registry.digest(&path, "latest");
    let hex = hex.trim_start_matches("sha256:");
    let work = tempfile::tempdir().unwrap();
    let file = |name: &str, bytes: &[u8]| {
        let path = work.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        path.display().to_string()
    };

    let sbom = attached_layer(&registry, &path, &format!("sha256-{hex}.sbom"));
    let (code, said) = attest_check(&python, &["sbom", &file("sbom.json", &sbom)]);
    assert_eq!((code, said.trim()), (0, "valid"));
    // The validator is no pushover: a component of a kind CycloneDX does not have fails it.
    let mut broken: Value = serde_json::from_slice(&sbom).unwrap();
    broken["components"][0]["type"] = "image".into();
    let (code, said) = attest_check(
        &python,
        &["sbom", &file("broken.json", broken.to_string().as_bytes())],
    );
    assert_eq!(code, 1, "{said}");

    let envelope = attached_layer(&registry, &path, &format!("sha256-{hex}.att"));
    let document: Value = serde_json::from_slice(&envelope).unwrap();
    let keyid = document["signatures"][0]["keyid"]
        .as_str()
        .unwrap()
        .to_owned();
    // The key id is the sha256 of the public key's PEM, as forge keygen wrote it.
    let public = std::fs::read(keys.public()).unwrap();
    assert_eq!(keyid, hex::encode(Sha256::digest(&public)));
    let envelope_file = file("envelope.json", &envelope);
    let (code, said) = attest_check(
        &python,
        &["dsse", &envelope_file, &keys.public_arg(), &keyid],
    );
    assert_eq!(code, 0, "{said}");
    assert_contains(&said, "valid application/vnd.in-toto+json");
    let other = Keys::new();
    let (code, said) = attest_check(
        &python,
        &["dsse", &envelope_file, &other.public_arg(), &keyid],
    );
    assert_eq!(code, 1, "{said}");
    // A payload changed after signing no longer verifies.
    let mut edited = document.clone();
    let payload = base64::engine::general_purpose::STANDARD
        .decode(document["payload"].as_str().unwrap())
        .unwrap();
    let payload = String::from_utf8(payload)
        .unwrap()
        .replace(hex, &"0".repeat(64));
    edited["payload"] = base64::engine::general_purpose::STANDARD
        .encode(payload)
        .into();
    let (code, said) = attest_check(
        &python,
        &[
            "dsse",
            &file("edited.json", edited.to_string().as_bytes()),
            &keys.public_arg(),
            &keyid,
        ],
    );
    assert_eq!(code, 1, "{said}");
}

#[test]
fn a_signed_push_to_a_token_registry_asks_for_a_token_that_may_push() {
    let registry = RegistryServer::start_with_token_auth();
    if !docker_available() || registry_tools_missing() {
        return;
    }
    ensure_base_image();
    let keys = Keys::new();
    // The token server signs for this one repository path.
    let example = Example::with_repository(&format!("{}/aeon-7/base", registry.address()));
    let config = no_credentials();
    let env = [("DOCKER_CONFIG", config.path().to_str().unwrap())];
    let key = keys.private();
    example
        .build_with(
            &["--push", "--sign", "--sign-key", key.to_str().unwrap()],
            &env,
        )
        .expect_code(0);
    // forge's own requests (the daemon asks for its push too): the registry names the actions
    // of a push in either order.
    let asked = registry.token_requests_from("forge/");
    assert!(
        asked.iter().any(|request| [
            "scope=repository%3Aaeon-7%2Fbase%3Apull%2Cpush",
            "scope=repository%3Aaeon-7%2Fbase%3Apush%2Cpull"
        ]
        .iter()
        .any(|scope| request.contains(scope))),
        "{asked:?}"
    );
    verify(&example, &["--remote", "--key", &keys.public_arg()], &env).expect_code(0);
}

#[test]
fn a_key_path_that_is_no_key_file_is_refused_without_reading_it_whole() {
    let context = TestContext::empty();
    let folder = tempfile::tempdir().unwrap();
    let fifo = folder.path().join("key.fifo");
    crate::support::fifo(&fifo);
    // 3 GB that take no disk: refused by their size, not after reading them.
    let sparse = folder.path().join("sparse.pem");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(3 << 30)
        .unwrap();
    let large = folder.path().join("large.pem");
    std::fs::write(&large, "x".repeat(64 * 1024 + 1)).unwrap();
    let cases = [
        "/dev/zero".to_owned(),
        fifo.display().to_string(),
        sparse.display().to_string(),
        large.display().to_string(),
    ];
    let garbage = folder.path().join("garbage.pem");
    std::fs::write(&garbage, [0xff_u8, 0xfe, 0x00, 0x80]).unwrap();
    let run = context
        .forge(&[
            "build",
            "--push",
            "--sign",
            "--sign-key",
            garbage.to_str().unwrap(),
        ])
        .expect_code(2);
    let at = |text: &str| text.replace(folder.path().to_str().unwrap(), "<folder>");
    forge_snapshot!(at(&run.stderr), context.path(), @"
    error: <folder>/garbage.pem is not a PEM private key on the P-256 curve (PKCS#8, encrypted PKCS#8, or cosign's)
    hint: `forge keygen` writes a key pair forge reads: a PKCS#8 private key and an SPKI public key, both PEM, on the P-256 curve; `cosign generate-key-pair`'s keys and encrypted PKCS#8 keys are read too
    ");
    let mut refusals = String::new();
    for path in &cases {
        for args in [
            vec!["build", "--push", "--sign", "--sign-key", path.as_str()],
            vec![
                "verify-digest",
                "example.org/r:latest",
                "--key",
                path.as_str(),
            ],
        ] {
            let Some(run) = context.forge_bounded(&args, std::time::Duration::from_secs(20)) else {
                panic!("forge {args:?} was still running after 20 s");
            };
            let run = run.expect_code(2);
            refusals.push_str(&run.stderr);
        }
    }
    forge_snapshot!("key_paths_refused", at(&refusals), context.path());
}
