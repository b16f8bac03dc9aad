//! Signing as cosign users sign, on a real registry: every way the attachments of a signed
//! push can be tampered with, in either format (cosign's tags, sigstore bundles among the
//! image's referrers), gets the same verdict from `forge verify-digest --key`'s `signature` and
//! `provenance subject` rows as from the real cosign 3, and from cosign 2 where it reads the
//! format (`cosign verify`, `cosign verify-attestation`); a co-signature survives a re-sign; and
//! the keys users already have sign: cosign's own sealed format (made here by
//! `tests/python/cosign_key.py` with libsodium, for the labels and costs no cosign here writes)
//! and encrypted PKCS#8 (made by openssl).

use std::path::Path;
use std::process::Command;

use base64::Engine as _;
use serde_json::{Value, json};

use crate::support::TestContext;
use crate::support::keys::Keys;
use crate::support::registry::{RegistryServer, no_credentials, path_of};
use crate::support::signed::openssl_verifies;
use crate::support::signed::{OCI_MANIFEST, pushed_again_signed, signed, verifier_python};
use crate::support::snapshot::forge_snapshot;
use crate::support::verify::{row, verify};

/// The tag cosign keeps `suffix` (`sig`, `att`, `sbom`) of the manifest `digest` under.
fn attachment(digest: &str, suffix: &str) -> String {
    format!("sha256-{}.{suffix}", digest.trim_start_matches("sha256:"))
}

/// The manifest `manifest` with `layers` as its layers.
fn with_layers(manifest: &Value, layers: Vec<Value>) -> Vec<u8> {
    let mut manifest = manifest.clone();
    manifest["layers"] = json!(layers);
    serde_json::to_vec(&manifest).unwrap()
}

/// A second signer's signature layer for the manifest the `.sig` manifest `sig` is attached to:
/// its payload, signed by `keys` (with openssl).
fn co_signature(registry: &RegistryServer, path: &str, sig: &Value, keys: &Keys) -> Value {
    let mut layer = layers(sig)[0].clone();
    let payload_digest = layer["digest"].as_str().unwrap().to_owned();
    let payload = registry
        .get(&format!("/v2/{path}/blobs/{payload_digest}"), "*/*")
        .unwrap()
        .2;
    layer["annotations"]["dev.cosignproject.cosign/signature"] = json!(keys.sign(&payload));
    layer
}

/// The layers of `manifest`.
fn layers(manifest: &Value) -> Vec<Value> {
    manifest["layers"].as_array().unwrap().clone()
}

/// Two signed pushes of the offline example to one repository (`first`, then `second` over
/// the same tags), another key, and what each push's `.sig`, `.att` and referrers tag held:
/// what a tampering is made of, and a judge of it by forge and by cosign 2 and 3.
struct Pushes {
    registry: RegistryServer,
    example: crate::support::images::Example,
    path: String,
    keys: Keys,
    other: Keys,
    first: String,
    second: String,
    first_sig: Value,
    first_att: Value,
    second_sig: Value,
    second_att: Value,
    /// The entries of each push's referrers index: its two bundles.
    first_bundles: Vec<Value>,
    second_bundles: Vec<Value>,
    config: tempfile::TempDir,
}

/// An OCI image index.
const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";

/// The referrers tag of the manifest `digest`: `sha256-HEX`.
fn referrers_tag(digest: &str) -> String {
    format!("sha256-{}", digest.trim_start_matches("sha256:"))
}

/// The referrers index of `entries`.
fn referrers_index(entries: &[Value]) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": OCI_INDEX,
        "manifests": entries,
    }))
    .unwrap()
}

impl Pushes {
    fn signed_twice(name: &str) -> Option<Self> {
        if crate::support::cosign::cosigns().is_empty() {
            return None;
        }
        let registry = RegistryServer::start();
        let (keys, other) = (Keys::new(), Keys::new());
        let example = signed(&registry, name, &keys)?;
        let path = path_of(&example, &registry);
        let first = registry.digest(&path, "latest");
        pushed_again_signed(&example, &keys);
        let second = registry.digest(&path, "latest");
        let held = |digest: &str, suffix: &str| -> Value {
            let tag = attachment(digest, suffix);
            serde_json::from_slice(&registry.held(&path, &tag, &[OCI_MANIFEST]).1).unwrap()
        };
        let bundles = |digest: &str| -> Vec<Value> {
            let (_, index) = registry.held(&path, &referrers_tag(digest), &[OCI_INDEX]);
            let index: Value = serde_json::from_slice(&index).unwrap();
            index["manifests"].as_array().unwrap().clone()
        };
        Some(Self {
            first_sig: held(&first, "sig"),
            first_att: held(&first, "att"),
            second_sig: held(&second, "sig"),
            second_att: held(&second, "att"),
            first_bundles: bundles(&first),
            second_bundles: bundles(&second),
            example,
            path,
            keys,
            other,
            first,
            second,
            config: no_credentials(),
            registry,
        })
    }

    /// Puts `sig` and `att` as the layers of the second push's `.sig` and `.att`, and no
    /// bundles among its referrers: cosign's tags judged alone.
    fn put(&self, sig: &[Value], att: &[Value]) {
        self.put_tags(sig, att);
        self.put_bundles_only(&[]);
    }

    /// Puts `entries` as the second push's referrers index, and no layers under its `.sig` and
    /// `.att`: the bundles judged alone.
    fn put_bundles(&self, entries: &[Value]) {
        self.put_tags(&[], &[]);
        self.put_bundles_only(entries);
    }

    /// Puts `entries` as the second push's referrers index.
    fn put_bundles_only(&self, entries: &[Value]) {
        self.registry.put_manifest(
            &self.path,
            &referrers_tag(&self.second),
            OCI_INDEX,
            &referrers_index(entries),
        );
    }

    /// Puts `sig` and `att` as the layers of the second push's `.sig` and `.att`.
    fn put_tags(&self, sig: &[Value], att: &[Value]) {
        for (suffix, manifest, layers) in [
            ("sig", &self.second_sig, sig),
            ("att", &self.second_att, att),
        ] {
            self.registry.put_manifest(
                &self.path,
                &attachment(&self.second, suffix),
                OCI_MANIFEST,
                &with_layers(manifest, layers.to_vec()),
            );
        }
    }

    /// `forge --json verify-digest --key KEY` of the recipe, and whether its signature and
    /// provenance rows hold; and each cosign's verdict with the same key.
    fn verdicts(&self, key: &Keys) -> (Value, (bool, bool), crate::support::cosign::Verdicts) {
        let env = [("DOCKER_CONFIG", self.config.path().to_str().unwrap())];
        let json = verify(&self.example, &["--key", &key.public_arg()], &env).json();
        let latest = self.latest();
        let forge = (
            row(&json, "signature", &latest)["ok"] == true,
            row(&json, "provenance subject", &latest)["ok"] == true,
        );
        let cosign = crate::support::cosign::verdicts(&key.public(), &latest);
        (json, forge, cosign)
    }

    fn latest(&self) -> String {
        format!("{}:latest", self.example.repository)
    }
}

/// Each tampering of cosign's tags, made on the registry (with no bundles among the referrers)
/// and judged by forge and by cosign 2 and 3: all agree on the signature and on the provenance,
/// and forge names what it ignored.
#[test]
fn forge_judges_every_tampering_of_the_tags_as_cosign_2_and_3() {
    let Some(pushes) = Pushes::signed_twice("cosign-rule") else {
        return;
    };
    let Pushes { keys, other, .. } = &pushes;
    let (first_sig, first_att) = (layers(&pushes.first_sig), layers(&pushes.first_att));
    let (second_sig, second_att) = (layers(&pushes.second_sig), layers(&pushes.second_att));
    let other_signed = co_signature(&pushes.registry, &pushes.path, &pushes.second_sig, other);
    let mut swapped_payload = second_sig[0].clone();
    swapped_payload["digest"] = first_sig[0]["digest"].clone();
    swapped_payload["size"] = first_sig[0]["size"].clone();
    let note_layer = json!({
        "mediaType": "application/vnd.example.note+json",
        "digest": pushes.second_sig["config"]["digest"],
        "size": pushes.second_sig["config"]["size"],
    });
    let two_subjects = envelope_signed_by(
        &pushes.registry,
        &pushes.path,
        keys,
        &pushes.second_att,
        Some(&pushes.first),
    );
    // (what is done, the key verifying, the .sig and .att layers of `second` put in place)
    let cases: Vec<(&str, &Keys, Vec<Value>, Vec<Value>)> = vec![
        ("as pushed", keys, second_sig.clone(), second_att.clone()),
        ("another key", other, second_sig.clone(), second_att.clone()),
        (
            "a swapped payload",
            keys,
            vec![swapped_payload],
            second_att.clone(),
        ),
        ("replayed signatures", keys, first_sig, first_att.clone()),
        (
            "a foreign envelope before forge's",
            keys,
            second_sig.clone(),
            [first_att.clone(), second_att.clone()].concat(),
        ),
        (
            "a foreign envelope after forge's",
            keys,
            second_sig.clone(),
            [second_att.clone(), first_att].concat(),
        ),
        (
            "a co-signature before forge's",
            keys,
            [vec![other_signed.clone()], second_sig.clone()].concat(),
            second_att.clone(),
        ),
        (
            "only a co-signature",
            keys,
            vec![other_signed],
            second_att.clone(),
        ),
        (
            "a layer of another type before forge's",
            keys,
            [vec![note_layer], second_sig.clone()].concat(),
            second_att,
        ),
        (
            "a statement naming another image before this one",
            keys,
            second_sig,
            vec![two_subjects],
        ),
    ];
    for (case, key, sig, att) in cases {
        pushes.put(&sig, &att);
        let (json, forge, cosigns) = pushes.verdicts(key);
        for (suite, cosign) in cosigns {
            assert_eq!(
                forge, cosign,
                "{case}: forge (signature, provenance) {forge:?}, {suite}'s cosign {cosign:?}:\n{json:#}"
            );
        }
        assert_notes(&pushes, &json, case, key, (&sig, &att), forge);
    }
}

/// The referrer `entry` (a bundle of the second push) as another signer with `keys` makes it:
/// its envelope's payload signed by `keys` (with openssl), pushed as a new bundle and referrer
/// manifest of the same subject; the new index entry.
fn bundle_signed_by(pushes: &Pushes, entry: &Value, keys: &Keys) -> Value {
    use sha2::Digest as _;
    let (registry, path) = (&pushes.registry, &pushes.path);
    let digest = entry["digest"].as_str().unwrap();
    let manifest: Value =
        serde_json::from_slice(&registry.held(path, digest, &[OCI_MANIFEST]).1).unwrap();
    let layer = &layers(&manifest)[0];
    let blob = layer["digest"].as_str().unwrap();
    let mut bundle: Value = serde_json::from_slice(
        &registry
            .get(&format!("/v2/{path}/blobs/{blob}"), "*/*")
            .unwrap()
            .2,
    )
    .unwrap();
    let b64 = &base64::engine::general_purpose::STANDARD;
    let envelope = &bundle["dsseEnvelope"];
    let payload = b64.decode(envelope["payload"].as_str().unwrap()).unwrap();
    let payload_type = envelope["payloadType"].as_str().unwrap().to_owned();
    let signature = keys.sign(&pre_authentication(&payload_type, &payload));
    bundle["dsseEnvelope"]["signatures"] = json!([{ "sig": signature }]);
    let der = crate::support::stdout_of(
        Command::new("openssl")
            .args(["pkey", "-pubin", "-outform", "DER", "-in"])
            .arg(keys.public()),
    );
    bundle["verificationMaterial"]["publicKey"]["hint"] =
        json!(b64.encode(sha2::Sha256::digest(&der)));
    let bytes = serde_json::to_vec(&bundle).unwrap();
    let mut manifest = manifest.clone();
    manifest["layers"][0]["digest"] = json!(registry.put_blob(path, &bytes));
    manifest["layers"][0]["size"] = json!(bytes.len());
    let manifest = serde_json::to_vec(&manifest).unwrap();
    let digest = format!("sha256:{}", hex::encode(sha2::Sha256::digest(&manifest)));
    registry.put_manifest(path, &digest, OCI_MANIFEST, &manifest);
    let mut entry = entry.clone();
    entry["digest"] = json!(digest);
    entry["size"] = json!(manifest.len());
    entry
}

/// Each tampering of the bundles among the second push's referrers, made on the registry
/// (with nothing under cosign's tags) and judged by forge and by cosign 3: the two agree, and
/// forge says the bundle held. Then the one place they part, by design: bundles that do not
/// hold beside tags that do, which cosign 3 refuses (once any bundle is attached it reads
/// nothing else) and forge and cosign 2 accept (a valid signature in either format counts).
#[test]
fn forge_judges_every_tampering_of_the_bundles_as_cosign_3() {
    let Some(pushes) = Pushes::signed_twice("bundle-rule") else {
        return;
    };
    let Pushes { keys, other, .. } = &pushes;
    let (first, second) = (&pushes.first_bundles, &pushes.second_bundles);
    assert_eq!(second.len(), 2, "{second:?}");
    let co_signed: Vec<Value> = second
        .iter()
        .map(|entry| bundle_signed_by(&pushes, entry, other))
        .collect();
    // (what is done, the key verifying, the referrers index put in place, forge's verdict)
    type Case<'a> = (&'a str, &'a Keys, Vec<Value>, (bool, bool));
    let cases: Vec<Case<'_>> = vec![
        ("bundles as pushed", keys, second.clone(), (true, true)),
        ("another key", other, second.clone(), (false, false)),
        ("replayed bundles", keys, first.clone(), (false, false)),
        (
            "a foreign bundle before forge's",
            keys,
            [first.clone(), second.clone()].concat(),
            (true, true),
        ),
        (
            "a co-signature before forge's",
            keys,
            [co_signed.clone(), second.clone()].concat(),
            (true, true),
        ),
        (
            "only a co-signature",
            keys,
            co_signed.clone(),
            (false, false),
        ),
        ("the co-signer's key", other, co_signed, (true, true)),
    ];
    let latest = pushes.latest();
    for (case, key, entries, expected) in cases {
        pushes.put_bundles(&entries);
        let (json, forge, cosigns) = pushes.verdicts(key);
        assert_eq!(forge, expected, "{case}: forge:\n{json:#}");
        let cosign3 = cosigns.iter().find(|(suite, _)| *suite == "forky");
        assert_eq!(
            cosign3.map(|(_, verdict)| *verdict),
            Some(forge),
            "{case}: cosign 3"
        );
        if forge.0 {
            let note = row(&json, "signature", &latest)["note"]
                .as_str()
                .unwrap()
                .to_owned();
            assert!(
                note.starts_with("in a sigstore bundle only"),
                "{case}: {note}"
            );
        }
    }

    pushes.put_tags(&layers(&pushes.second_sig), &layers(&pushes.second_att));
    pushes.put_bundles_only(first);
    let (json, forge, cosigns) = pushes.verdicts(keys);
    assert_eq!(forge, (true, true), "{json:#}");
    assert_eq!(
        cosigns,
        vec![("trixie", (true, true)), ("forky", (false, false))],
        "cosign 2 reads the tags, cosign 3 only the bundles"
    );
    let note = row(&json, "signature", &latest)["note"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        note.starts_with("in the .sig tag only; 1 of 2 layers ignored: for "),
        "{note}"
    );
}

/// Where a tampering left a valid layer beside one forge ignored, the row's note says which
/// and why.
#[track_caller]
fn assert_notes(
    pushes: &Pushes,
    json: &Value,
    case: &str,
    key: &Keys,
    (sig, att): (&[Value], &[Value]),
    (signed, attested): (bool, bool),
) {
    let latest = pushes.latest();
    if att.len() > 1 && attested {
        let note = &row(json, "provenance subject", &latest)["note"];
        let expected = format!(
            "in the .att tag only; 1 of 2 layers ignored: for {}",
            pushes.first
        );
        assert_eq!(note, &json!(expected), "{case}");
    }
    if sig.len() > 1 && signed {
        let note = &row(json, "signature", &latest)["note"];
        let reason = match sig[0]["mediaType"].as_str().unwrap() {
            "application/vnd.example.note+json" => {
                "of type application/vnd.example.note+json".to_owned()
            }
            _ => format!("not signed by {}", key.public_arg()),
        };
        assert_eq!(
            note,
            &json!(format!(
                "in the .sig tag only; 1 of 2 layers ignored: {reason}"
            )),
            "{case}"
        );
    }
}

/// A valid signature of the manifest that names another repository: cosign checks only the
/// digest and accepts it; forge, as a containers policy's `matchRepository`, does not, and says
/// what it found. The one place the two part, by design.
#[test]
fn a_signature_for_another_repository_is_refused_where_cosign_accepts_it() {
    let Some(pushes) = Pushes::signed_twice("elsewhere") else {
        return;
    };
    let elsewhere = format!("{}/forge-test/elsewhere", pushes.registry.address());
    let payload = serde_json::to_vec(&json!({
        "critical": {
            "identity": { "docker-reference": elsewhere },
            "image": { "docker-manifest-digest": pushes.second },
            "type": "cosign container image signature",
        },
        "optional": null,
    }))
    .unwrap();
    let mut foreign = layers(&pushes.second_sig)[0].clone();
    foreign["digest"] = json!(pushes.registry.put_blob(&pushes.path, &payload));
    foreign["size"] = json!(payload.len());
    foreign["annotations"]["dev.cosignproject.cosign/signature"] =
        json!(pushes.keys.sign(&payload));
    pushes.put(&[foreign], &layers(&pushes.second_att));
    let (json, forge, cosigns) = pushes.verdicts(&pushes.keys);
    assert!(!forge.0, "{json:#}");
    assert_eq!(
        row(&json, "signature", &pushes.latest())["actual"],
        format!("signed by {} for {elsewhere}", pushes.keys.public_arg())
    );
    for (suite, cosign) in cosigns {
        assert!(cosign.0, "{suite}'s cosign checks the digest only");
    }
}

/// The first image's SBOM in place of the second's: cosign does not judge an SBOM attached
/// unsigned, and neither do forge's signature and provenance rows; forge's `sbom` row
/// fails, the SBOM not being the one the signed provenance names. Then a re-pointed tag
/// (`latest` at an image pushed by hand, nothing attached) fails both.
#[test]
fn a_swapped_sbom_and_a_re_pointed_tag_get_cosigns_verdict() {
    let Some(pushes) = Pushes::signed_twice("sbom-swap") else {
        return;
    };
    let path = &pushes.path;
    let first_sbom = pushes
        .registry
        .held(path, &attachment(&pushes.first, "sbom"), &[OCI_MANIFEST])
        .1;
    let second_sbom = attachment(&pushes.second, "sbom");
    pushes
        .registry
        .put_manifest(path, &second_sbom, OCI_MANIFEST, &first_sbom);
    let (json, forge, cosigns) = pushes.verdicts(&pushes.keys);
    for (suite, cosign) in cosigns {
        assert_eq!(forge, cosign, "a swapped SBOM, {suite}'s cosign");
    }
    assert_eq!(forge, (true, true));
    assert_eq!(
        row(&json, "sbom", &pushes.latest())["ok"],
        false,
        "{json:#}"
    );

    pushes.registry.push(path, "latest");
    let (_, forge, cosigns) = pushes.verdicts(&pushes.keys);
    assert_eq!(forge, (false, false));
    for (suite, cosign) in cosigns {
        assert_eq!(cosign, forge, "a re-pointed tag, {suite}'s cosign");
    }
}

/// Appends, as a second signer with `other` would, a signature to the `.sig` and an
/// attestation of the same provenance to the `.att` of the manifest `digest`; the two layers.
fn co_signed(registry: &RegistryServer, path: &str, digest: &str, other: &Keys) -> (Value, Value) {
    let held = |tag: &str| -> Value {
        serde_json::from_slice(&registry.held(path, tag, &[OCI_MANIFEST]).1).unwrap()
    };
    let (sig_tag, att_tag) = (attachment(digest, "sig"), attachment(digest, "att"));
    let (sig, att) = (held(&sig_tag), held(&att_tag));
    let co_signature = co_signature(registry, path, &sig, other);
    let co_attestation = envelope_signed_by(registry, path, other, &att, None);
    for (tag, manifest, layer) in [
        (&sig_tag, &sig, &co_signature),
        (&att_tag, &att, &co_attestation),
    ] {
        let appended = [layers(manifest), vec![layer.clone()]].concat();
        registry.put_manifest(path, tag, OCI_MANIFEST, &with_layers(manifest, appended));
    }
    (co_signature, co_attestation)
}

/// A second signer appends a signature to the `.sig` and an attestation to the `.att` of a
/// signed push, as cosign 2 does; forge signing the same image again keeps both, replacing only
/// its own layers and its own bundles, and either key then verifies by forge and by cosign 2.
/// cosign 3 verifies forge's key from its bundles and, reading nothing else once a bundle is
/// attached, does not see the co-signature under the tags.
#[test]
fn a_co_signature_survives_a_re_sign() {
    if crate::support::cosign::cosigns().is_empty() {
        return;
    }
    let registry = RegistryServer::start();
    let (keys, other) = (Keys::new(), Keys::new());
    let Some(example) = signed(&registry, "co-signed", &keys) else {
        return;
    };
    let path = path_of(&example, &registry);
    let digest = registry.digest(&path, "latest");
    let (tag, att_tag) = (attachment(&digest, "sig"), attachment(&digest, "att"));
    let (co_signature, co_attestation) = co_signed(&registry, &path, &digest, &other);

    for _ in 0..2 {
        example
            .build_with(
                &["--push", "--sign", "--sign-key", &keys.private_arg()],
                &[],
            )
            .expect_code(0);
        assert_eq!(registry.digest(&path, "latest"), digest, "the same image");
        let signed_again: Value =
            serde_json::from_slice(&registry.held(&path, &tag, &[OCI_MANIFEST]).1).unwrap();
        let annotations: Vec<Value> = layers(&signed_again)
            .iter()
            .map(|layer| layer["annotations"]["dev.cosignproject.cosign/signature"].clone())
            .collect();
        assert_eq!(
            annotations.len(),
            2,
            "the co-signature and forge's own, once: {signed_again:#}"
        );
        assert_eq!(
            annotations[0], co_signature["annotations"]["dev.cosignproject.cosign/signature"],
            "the co-signature is kept first: {signed_again:#}"
        );
        let attested_again: Value =
            serde_json::from_slice(&registry.held(&path, &att_tag, &[OCI_MANIFEST]).1).unwrap();
        let envelopes = layers(&attested_again);
        assert_eq!(envelopes.len(), 2, "{attested_again:#}");
        assert_eq!(envelopes[0]["digest"], co_attestation["digest"]);
    }
    let config = no_credentials();
    let env = [("DOCKER_CONFIG", config.path().to_str().unwrap())];
    let latest = format!("{}:latest", example.repository);
    for key in [&keys, &other] {
        let json = verify(&example, &["--key", &key.public_arg()], &env).json();
        assert_eq!(row(&json, "signature", &latest)["ok"], true, "{json:#}");
        assert_eq!(
            row(&json, "provenance subject", &latest)["ok"],
            true,
            "{json:#}"
        );
        let cosigns = crate::support::cosign::verdicts(&key.public(), &latest);
        let expected = if key.public() == keys.public() {
            vec![("trixie", (true, true)), ("forky", (true, true))]
        } else {
            vec![("trixie", (true, true)), ("forky", (false, false))]
        };
        assert_eq!(cosigns, expected, "{}", key.public_arg());
    }
    let (_, index) = registry.held(&path, &format!("sha256-{}", &digest[7..]), &[OCI_INDEX]);
    let index: Value = serde_json::from_slice(&index).unwrap();
    assert_eq!(
        index["manifests"].as_array().map(Vec::len),
        Some(2),
        "forge's two bundles, each replaced by the re-sign: {index:#}"
    );
}

/// The pre-authentication encoding a DSSE signature covers (the DSSE specification's PAE).
fn pre_authentication(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut bytes = format!(
        "DSSEv1 {} {payload_type} {} ",
        payload_type.len(),
        payload.len()
    )
    .into_bytes();
    bytes.extend_from_slice(payload);
    bytes
}

/// A layer for the `.att` of the manifest `att` is attached to: the statement its envelope
/// carries (with `first` named before its subject, when given) signed by `keys` (with
/// openssl), as another signer attests it, uploaded to `path`.
fn envelope_signed_by(
    registry: &RegistryServer,
    path: &str,
    keys: &Keys,
    att: &Value,
    first: Option<&str>,
) -> Value {
    let layer = &layers(att)[0];
    let blob = layer["digest"].as_str().unwrap();
    let envelope: Value = serde_json::from_slice(
        &registry
            .get(&format!("/v2/{path}/blobs/{blob}"), "*/*")
            .unwrap()
            .2,
    )
    .unwrap();
    let b64 = &base64::engine::general_purpose::STANDARD;
    let mut statement: Value =
        serde_json::from_slice(&b64.decode(envelope["payload"].as_str().unwrap()).unwrap())
            .unwrap();
    let mut subjects: Vec<Value> = first
        .map(|first| {
            json!({
                "name": statement["subject"][0]["name"],
                "digest": { "sha256": first.trim_start_matches("sha256:") },
            })
        })
        .into_iter()
        .collect();
    subjects.extend(statement["subject"].as_array().unwrap().iter().cloned());
    statement["subject"] = json!(subjects);
    let payload = statement.to_string();
    let payload_type = envelope["payloadType"].as_str().unwrap();
    let signature = keys.sign(&pre_authentication(payload_type, payload.as_bytes()));
    let bytes = serde_json::to_vec(&json!({
        "payload": b64.encode(&payload),
        "payloadType": payload_type,
        "signatures": [{ "keyid": "", "sig": signature }],
    }))
    .unwrap();
    let digest = registry.put_blob(path, &bytes);
    let mut new = layer.clone();
    new["digest"] = json!(digest);
    new["size"] = json!(bytes.len());
    new
}

/// `tests/python/cosign_key.py PREFIX PASSWORD [LABEL N]` in `folder`: a pair in cosign's files
/// (`label` and `cost` of its sealing, else cosign 2's).
fn cosign_key(python: &Path, folder: &Path, password: &str, sealing: Option<(&str, &str)>) {
    let script = crate::support::repository_root().join("tests/python/cosign_key.py");
    let output = Command::new(python)
        .arg(script)
        .arg(folder.join("cosign"))
        .arg(password)
        .args(
            sealing
                .map(|(label, cost)| [label, cost])
                .into_iter()
                .flatten(),
        )
        .output()
        .expect("python runs");
    assert!(
        output.status.success(),
        "cosign_key.py: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `forge sign-blob SUMS --sign-key KEY --out SUMS.sig` in `context` with `env`.
fn sign_sums(context: &TestContext, key: &str, env: &[(&str, &str)]) -> crate::support::Run {
    std::fs::write(context.path().join("SUMS"), "0123  forge.tar.gz\n").unwrap();
    context.forge_with(
        &["sign-blob", "SUMS", "--sign-key", key, "--out", "SUMS.sig"],
        env,
    )
}

/// Whether `SUMS.sig` in `folder` verifies with the public key `public` (openssl).
fn sums_verify(folder: &Path, public: &str) -> bool {
    let signature = std::fs::read_to_string(folder.join("SUMS.sig")).unwrap();
    openssl_verifies(
        &folder.join(public),
        b"0123  forge.tar.gz\n",
        signature.trim(),
    )
}

/// A key in cosign's sealed format, as cosign 2 writes it (`ENCRYPTED SIGSTORE PRIVATE KEY`,
/// scrypt N = 2^16) and as cosign 1 did (`ENCRYPTED COSIGN PRIVATE KEY`, N = 2^15), signs with
/// the password in COSIGN_PASSWORD; a wrong or missing password is refused naming the variable
/// and never saying the password. A cost cosign does not write is refused before any work.
#[test]
fn a_cosign_key_signs_with_its_password_and_never_says_it() {
    let Some(python) = verifier_python() else {
        return;
    };
    let context = TestContext::empty();
    let folder = context.path();
    let sign = |key: &str, env: &[(&str, &str)]| sign_sums(&context, key, env);
    let mut refusals = String::new();
    for sealing in [None, Some(("ENCRYPTED COSIGN PRIVATE KEY", "32768"))] {
        cosign_key(&python, folder, "correct horse", sealing);
        sign("cosign.key", &[("COSIGN_PASSWORD", "correct horse")]).expect_code(0);
        assert!(sums_verify(folder, "cosign.pub"), "{sealing:?}");
        let wrong = sign("cosign.key", &[("COSIGN_PASSWORD", "battery staple")]).expect_code(2);
        assert!(!wrong.stderr.contains("battery"), "{}", wrong.stderr);
        let unset = sign("cosign.key", &[]).expect_code(2);
        refusals.push_str(&format!("{}{}", wrong.stderr, unset.stderr));
    }
    forge_snapshot!(refusals, folder, @"
    error: cannot open the encrypted key cosign.key: the password does not open it
    hint: check the password in COSIGN_PASSWORD; the key file itself is left as it was
    error: cosign.key is an encrypted key, and COSIGN_PASSWORD is not set to its password
    hint: set COSIGN_PASSWORD to the key's password (cosign's keys read COSIGN_PASSWORD, as cosign does; an encrypted PKCS#8 key FORGE_SIGNING_PASSWORD)
    error: cannot open the encrypted key cosign.key: the password does not open it
    hint: check the password in COSIGN_PASSWORD; the key file itself is left as it was
    error: cosign.key is an encrypted key, and COSIGN_PASSWORD is not set to its password
    hint: set COSIGN_PASSWORD to the key's password (cosign's keys read COSIGN_PASSWORD, as cosign does; an encrypted PKCS#8 key FORGE_SIGNING_PASSWORD)
    ");
    // A key made for CI with an empty password opens without the variable (where cosign
    // would prompt for it).
    cosign_key(&python, folder, "", None);
    sign("cosign.key", &[]).expect_code(0);
    assert!(sums_verify(folder, "cosign.pub"));
    // The same key claiming a cost of 2^30 (a crafted file): refused before any work.
    let pem = std::fs::read_to_string(folder.join("cosign.key")).unwrap();
    let body: String = pem
        .lines()
        .filter(|line| !line.starts_with("-----"))
        .collect();
    let mut sealed: Value = serde_json::from_slice(
        &base64::engine::general_purpose::STANDARD
            .decode(body)
            .unwrap(),
    )
    .unwrap();
    sealed["kdf"]["params"]["N"] = json!(1u64 << 30);
    let body = base64::engine::general_purpose::STANDARD.encode(sealed.to_string());
    let lines: Vec<&str> = body
        .as_bytes()
        .chunks(64)
        .map(|line| std::str::from_utf8(line).unwrap())
        .collect();
    let crafted = format!(
        "-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n{}\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n",
        lines.join("\n")
    );
    std::fs::write(folder.join("crafted.key"), crafted).unwrap();
    let costly = sign("crafted.key", &[]).expect_code(2);
    forge_snapshot!(costly.stderr, folder, @"
    error: cannot open the encrypted key crafted.key: not a key sealed as cosign seals one (scrypt N = <short>, r = 8, p = 1, not a cost cosign writes (N = 2^15, 2^16 or 2^17, r = 8, p = 1))
    hint: name a key `cosign generate-key-pair` or `forge keygen` wrote, or an encrypted PKCS#8 key (`openssl pkcs8 -topk8 -v2 aes-256-cbc`)
    ");
}

/// An encrypted PKCS#8 key (openssl's) signs with the password in FORGE_SIGNING_PASSWORD, and
/// a wrong or missing one is refused naming the variable, never saying the password.
#[test]
fn an_encrypted_pkcs8_key_signs_with_its_password() {
    let context = TestContext::empty();
    let folder = context.path();
    let sign = |key: &str, env: &[(&str, &str)]| sign_sums(&context, key, env);
    let openssl = |args: &[&str]| {
        let output = Command::new("openssl")
            .args(args)
            .current_dir(folder)
            .output()
            .expect("openssl runs");
        assert!(
            output.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    };
    openssl(&[
        "ecparam",
        "-name",
        "prime256v1",
        "-genkey",
        "-noout",
        "-out",
        "plain.pem",
    ]);
    openssl(&[
        "pkcs8",
        "-topk8",
        "-v2",
        "aes-256-cbc",
        "-in",
        "plain.pem",
        "-out",
        "sealed.pem",
        "-passout",
        "pass:s3cret words",
    ]);
    openssl(&["ec", "-in", "plain.pem", "-pubout", "-out", "sealed.pub"]);
    assert!(
        std::fs::read_to_string(folder.join("sealed.pem"))
            .unwrap()
            .contains("BEGIN ENCRYPTED PRIVATE KEY")
    );
    sign("sealed.pem", &[("FORGE_SIGNING_PASSWORD", "s3cret words")]).expect_code(0);
    assert!(sums_verify(folder, "sealed.pub"));
    let wrong = sign("sealed.pem", &[("FORGE_SIGNING_PASSWORD", "s3cret wordz")]).expect_code(2);
    assert!(!wrong.stderr.contains("wordz"), "{}", wrong.stderr);
    forge_snapshot!(wrong.stderr, folder, @"
    error: cannot open the encrypted key sealed.pem: the password does not open it
    hint: check the password in FORGE_SIGNING_PASSWORD; the key file itself is left as it was
    ");
    let unset = sign("sealed.pem", &[]).expect_code(2);
    forge_snapshot!(unset.stderr, folder, @"
    error: sealed.pem is an encrypted key, and FORGE_SIGNING_PASSWORD is not set to its password
    hint: set FORGE_SIGNING_PASSWORD to the key's password (cosign's keys read COSIGN_PASSWORD, as cosign does; an encrypted PKCS#8 key FORGE_SIGNING_PASSWORD)
    ");
}

/// A key made in cosign's format (by an independent implementation, with cosign's own scrypt
/// cost) signs a push that forge verifies with the public key, and cosign 2 and 3 agree.
#[test]
fn a_key_in_cosigns_format_signs_a_push_that_verifies() {
    let Some(python) = verifier_python() else {
        return;
    };
    let registry = RegistryServer::start();
    if !crate::support::images::docker_available()
        || crate::support::registry::registry_tools_missing()
    {
        return;
    }
    crate::support::images::ensure_base_image();
    let keys = tempfile::tempdir().unwrap();
    cosign_key(&python, keys.path(), "lab password", None);
    let path = format!("forge-test/cosign-key-{}", std::process::id());
    let example =
        crate::support::images::Example::with_repository(&format!("{}/{path}", registry.address()));
    let key = keys.path().join("cosign.key");
    example
        .build_with(
            &["--push", "--sign", "--sign-key", key.to_str().unwrap()],
            &[("COSIGN_PASSWORD", "lab password")],
        )
        .expect_code(0);
    let public = keys.path().join("cosign.pub");
    let config = no_credentials();
    let env = [("DOCKER_CONFIG", config.path().to_str().unwrap())];
    let json = verify(&example, &["--key", public.to_str().unwrap()], &env)
        .expect_code(0)
        .json();
    let latest = format!("{}:latest", example.repository);
    assert_eq!(row(&json, "signature", &latest)["ok"], true);
    for (suite, cosign) in crate::support::cosign::verdicts(&public, &latest) {
        assert_eq!(cosign, (true, true), "{suite}'s cosign");
    }
}

/// A `.sig` that is not an image manifest (here an index another tool put there) is not
/// written over by a re-sign: forge stops, naming the tag, and the index stays.
#[test]
fn a_sig_forge_cannot_add_to_is_left_as_it_is() {
    let registry = RegistryServer::start();
    let keys = Keys::new();
    let Some(example) = signed(&registry, "sig-index", &keys) else {
        return;
    };
    let path = path_of(&example, &registry);
    let digest = registry.digest(&path, "latest");
    let tag = attachment(&digest, "sig");
    let (_, image) = registry.held(&path, "latest", &[OCI_MANIFEST]);
    let index = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{
            "mediaType": OCI_MANIFEST,
            "digest": digest,
            "size": image.len(),
        }],
    }))
    .unwrap();
    registry.put_manifest(
        &path,
        &tag,
        "application/vnd.oci.image.index.v1+json",
        &index,
    );
    let run = example.build_with(
        &["--push", "--sign", "--sign-key", &keys.private_arg()],
        &[],
    );
    assert_ne!(run.code, 0, "{}", run.stderr);
    let report: Vec<&str> = (run.stderr.lines())
        .filter(|line| {
            ["error: ", "caused by: ", "hint: "]
                .iter()
                .any(|at| line.starts_with(at))
        })
        .collect();
    let report = report.join("\n").replace(&tag, "<tag>");
    forge_snapshot!(report, example.context.path(), @"
    error: cannot attach the build record, the signature and the attestations of 127.0.0.1:<port>/forge-test/sig-index-<pid>@sha256:<digest>; the push stands and forge.lock records it without them
    caused by: the registry sent an answer forge cannot read for 127.0.0.1:<port>/forge-test/sig-index-<pid>:<tag>: the manifest under this tag is not an image manifest forge can add a layer to; move it away, or sign elsewhere
    hint: try again later; `skopeo inspect docker://IMAGE` shows what the registry serves
    ");
    let (_, held) = registry.held(&path, &tag, &["application/vnd.oci.image.index.v1+json"]);
    assert_eq!(held, index, "the index under {tag} is as it was");
}

/// A hostile entry among an image's referrers beside forge's bundles: a bundle whose manifest
/// gives it more than 4 MiB, never fetched. forge names it in the row's note, trusts it not, and
/// still finds its own signature. (The registry itself refuses an index naming a manifest it
/// does not hold or an entry that is no descriptor; forge's judging of those is held by the
/// unit tests of `verify::attached`.)
#[test]
fn malformed_and_oversized_referrers_are_named_and_ignored() {
    let registry = RegistryServer::start();
    let keys = Keys::new();
    let Some(example) = signed(&registry, "hostile-referrers", &keys) else {
        return;
    };
    let path = path_of(&example, &registry);
    let digest = registry.digest(&path, "latest");
    let tag = referrers_tag(&digest);
    let (_, index) = registry.held(&path, &tag, &[OCI_INDEX]);
    let index: Value = serde_json::from_slice(&index).unwrap();
    let entries = index["manifests"].as_array().unwrap().clone();
    let signature_entry = entries
        .iter()
        .find(|entry| {
            entry["annotations"]["dev.sigstore.bundle.predicateType"]
                == "https://sigstore.dev/cosign/sign/v1"
        })
        .unwrap();
    // The signature's referrer manifest, its bundle said to be 5 MiB.
    let mut manifest: Value = serde_json::from_slice(
        &registry
            .held(
                &path,
                signature_entry["digest"].as_str().unwrap(),
                &[OCI_MANIFEST],
            )
            .1,
    )
    .unwrap();
    manifest["layers"][0]["size"] = json!(5 * 1024 * 1024);
    let oversized = serde_json::to_vec(&manifest).unwrap();
    let oversized_digest = {
        use sha2::Digest as _;
        format!("sha256:{}", hex::encode(sha2::Sha256::digest(&oversized)))
    };
    registry.put_manifest(&path, &oversized_digest, OCI_MANIFEST, &oversized);
    let mut huge = signature_entry.clone();
    huge["digest"] = json!(oversized_digest);
    huge["size"] = json!(oversized.len());
    let hostile = [huge, entries[0].clone(), entries[1].clone()];
    registry.put_manifest(&path, &tag, OCI_INDEX, &referrers_index(&hostile));

    let config = no_credentials();
    let env = [("DOCKER_CONFIG", config.path().to_str().unwrap())];
    let json = verify(&example, &["--key", &keys.public_arg()], &env)
        .expect_code(0)
        .json();
    let latest = format!("{}:latest", example.repository);
    let note = row(&json, "signature", &latest)["note"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        note,
        "in both formats; 1 of 3 layers ignored: malformed (a bundle of 5242880 bytes)"
    );
}

/// A `.sig` whose manifest lists 70 layers (forge's own signature first, then the same payload
/// again and again): forge looks at the first 64 only, names the rest, and still holds the
/// signature; it never fetches past its bounds.
#[test]
fn an_attachment_with_too_many_layers_is_read_within_bounds() {
    let registry = RegistryServer::start();
    let keys = Keys::new();
    let Some(example) = signed(&registry, "many-layers", &keys) else {
        return;
    };
    let path = path_of(&example, &registry);
    let digest = registry.digest(&path, "latest");
    let tag = attachment(&digest, "sig");
    let sig: Value =
        serde_json::from_slice(&registry.held(&path, &tag, &[OCI_MANIFEST]).1).unwrap();
    let layer = layers(&sig)[0].clone();
    registry.put_manifest(
        &path,
        &tag,
        OCI_MANIFEST,
        &with_layers(&sig, vec![layer; 70]),
    );
    let config = no_credentials();
    let env = [("DOCKER_CONFIG", config.path().to_str().unwrap())];
    let json = verify(&example, &["--key", &keys.public_arg()], &env)
        .expect_code(0)
        .json();
    let latest = format!("{}:latest", example.repository);
    let note = row(&json, "signature", &latest)["note"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        note,
        "in both formats; 6 of 71 layers ignored: 6 malformed (past the first 64 layers)"
    );
}
