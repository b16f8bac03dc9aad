//! Signatures and attestations as cosign 3 writes them: a sigstore bundle (v0.3 JSON) holding a
//! DSSE envelope, as the one layer of an OCI manifest whose `subject` is the signed image and
//! whose `artifactType` is the bundle's media type, found through the image's referrers (the
//! registry's referrers API, or the referrers tag `sha256-HEX` where it has none; see
//! `registry::referrers`).
//!
//! An image's signature is an in-toto statement of cosign's predicate
//! `https://sigstore.dev/cosign/sign/v1` (empty) about the manifest; its provenance the same
//! envelope forge puts under the `.att` tag. A blob's signature (`forge sign-blob --bundle`) is
//! a bundle with a bare message signature over the file's SHA-256. The key is named only by its
//! hint (the SHA-256 of its public key, DER), as cosign names a key it was given.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde::Serialize;
use serde_json::Value;
use sha2::Digest as _;

use super::dsse::Envelope;
use super::keys::VerifyingKey;
use crate::types::manifest::{Descriptor, ImageManifest, OCI_MANIFEST, in_byte_order};
use crate::types::oci::Digest;

/// The media type of the bundles forge writes (and the `artifactType` of their manifests).
pub const BUNDLE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
/// What every sigstore bundle's media type starts with (v0.1, v0.2 and v0.3 are read alike).
const BUNDLE_FAMILY: &str = "application/vnd.dev.sigstore.bundle";
/// The predicate of cosign 3's image signature: the statement's subject is signed, nothing more.
pub const SIGN_PREDICATE: &str = "https://sigstore.dev/cosign/sign/v1";
/// The manifest annotation that says what the bundle holds (`dsse-envelope`).
pub const CONTENT_ANNOTATION: &str = "dev.sigstore.bundle.content";
/// The manifest annotation that names the statement's predicate type.
pub const PREDICATE_ANNOTATION: &str = "dev.sigstore.bundle.predicateType";
/// The OCI empty descriptor's media type: the config of a referrer manifest.
pub const EMPTY: &str = "application/vnd.oci.empty.v1+json";
/// The OCI empty blob.
pub const EMPTY_BLOB: &[u8] = b"{}";
/// The most bytes a bundle forge reads may have: a bundle holds one envelope (forge's
/// provenance is a few tens of KiB) and at most a certificate chain and log entries.
pub const BUNDLE_LIMIT: u64 = 4 * 1024 * 1024;

/// The hint a bundle names `key` by: base64 of the SHA-256 of its public key (SPKI DER).
pub fn hint(key: &VerifyingKey) -> String {
    base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(key.to_der()))
}

/// The bundle of `envelope`, signed with `key`. Its signatures name no key id, as cosign's own
/// do: cosign 3 skips a signature whose key id is not the one it derives for the key it is
/// given.
pub fn of_envelope(envelope: &Envelope, key: &VerifyingKey) -> Vec<u8> {
    let mut envelope = envelope.clone();
    for signature in &mut envelope.signatures {
        signature.keyid.clear();
    }
    in_byte_order(&Bundle {
        media_type: BUNDLE,
        verification_material: Material::of(key),
        dsse_envelope: Some(&envelope),
        message_signature: None,
    })
}

/// The bundle of a blob's signature: `signature` (base64 DER) over the blob whose SHA-256 is
/// `sha256`, by `key`.
pub fn of_message(sha256: &[u8], signature: &str, key: &VerifyingKey) -> Vec<u8> {
    in_byte_order(&Bundle {
        media_type: BUNDLE,
        verification_material: Material::of(key),
        dsse_envelope: None,
        message_signature: Some(MessageSignature {
            message_digest: MessageDigest {
                algorithm: "SHA2_256",
                digest: base64::engine::general_purpose::STANDARD.encode(sha256),
            },
            signature,
        }),
    })
}

/// A sigstore bundle (v0.3) as forge writes it: a key named by its hint, and a DSSE envelope or
/// a blob's message signature.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Bundle<'a> {
    media_type: &'static str,
    verification_material: Material,
    #[serde(skip_serializing_if = "Option::is_none")]
    dsse_envelope: Option<&'a Envelope>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message_signature: Option<MessageSignature<'a>>,
}

/// How a bundle names its key: by its hint only.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Material {
    public_key: PublicKey,
}

impl Material {
    fn of(key: &VerifyingKey) -> Self {
        Material {
            public_key: PublicKey { hint: hint(key) },
        }
    }
}

/// A key's hint.
#[derive(Serialize)]
struct PublicKey {
    hint: String,
}

/// A signature over a blob's digest.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MessageSignature<'a> {
    message_digest: MessageDigest,
    signature: &'a str,
}

/// The digest a message signature signs.
#[derive(Serialize)]
struct MessageDigest {
    algorithm: &'static str,
    digest: String,
}

/// The in-toto statement of an image signature: cosign's sign predicate about the manifest
/// `subject`, named by the repository it was pushed to (cosign 3 leaves the name out; forge
/// names it, as its simple-signing payload does, and reads either).
pub fn sign_statement(repository: &str, subject: &Digest) -> Vec<u8> {
    in_byte_order(&SignStatement {
        statement_type: super::provenance::STATEMENT,
        subject: [StatementSubject {
            name: repository,
            digest: BTreeMap::from([("sha256", subject.hex())]),
        }],
        predicate_type: SIGN_PREDICATE,
        predicate: BTreeMap::new(),
    })
}

/// The in-toto statement of an image signature.
#[derive(Serialize)]
struct SignStatement<'a> {
    #[serde(rename = "_type")]
    statement_type: &'static str,
    subject: [StatementSubject<'a>; 1],
    #[serde(rename = "predicateType")]
    predicate_type: &'static str,
    predicate: BTreeMap<String, String>,
}

/// The image a statement is about.
#[derive(Serialize)]
struct StatementSubject<'a> {
    name: &'a str,
    digest: BTreeMap<&'static str, &'a str>,
}

/// The image a referrer is attached to, as its manifest's `subject` names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    /// The image manifest's media type.
    pub media_type: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its digest.
    pub digest: Digest,
}

/// A bundle ready to upload: the bundle blob and the manifest that refers it to its subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Referrer {
    /// The bundle.
    pub bundle: Vec<u8>,
    /// The OCI image manifest (`artifactType` the bundle's, config the empty blob, `subject`).
    pub manifest: Vec<u8>,
    /// The predicate type of the statement the bundle holds.
    pub predicate_type: String,
}

impl Referrer {
    /// `bundle`, holding a statement of `predicate_type`, referred to `subject`.
    pub fn new(subject: &Subject, bundle: Vec<u8>, predicate_type: &str) -> Self {
        let manifest = ImageManifest {
            artifact_type: Some(BUNDLE.to_owned()),
            annotations: annotations(predicate_type),
            subject: Some(Descriptor::named(
                &subject.media_type,
                subject.digest.clone(),
                subject.size,
            )),
            ..ImageManifest::new(
                Descriptor::of(EMPTY, EMPTY_BLOB),
                vec![Descriptor::of(BUNDLE, &bundle)],
            )
        }
        .to_bytes();
        Self {
            bundle,
            manifest,
            predicate_type: predicate_type.to_owned(),
        }
    }

    /// The manifest's digest.
    pub fn digest(&self) -> Digest {
        super::cosign::digest_of(&self.manifest)
    }

    /// The bundle's digest.
    pub fn bundle_digest(&self) -> Digest {
        super::cosign::digest_of(&self.bundle)
    }

    /// Its entry in a referrers index, as the OCI distribution spec has a client write one
    /// under the referrers tag.
    pub fn descriptor(&self) -> Value {
        let descriptor = Descriptor {
            artifact_type: Some(BUNDLE.to_owned()),
            annotations: annotations(&self.predicate_type),
            ..Descriptor::of(OCI_MANIFEST, &self.manifest)
        };
        serde_json::to_value(descriptor).expect("a descriptor serializes")
    }
}

/// The annotations of a referrer manifest holding a statement of `predicate_type`.
fn annotations(predicate_type: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (CONTENT_ANNOTATION.to_owned(), "dsse-envelope".to_owned()),
        (PREDICATE_ANNOTATION.to_owned(), predicate_type.to_owned()),
    ])
}

/// Whether `media_type` is a sigstore bundle's (any version).
pub fn is_bundle(media_type: &str) -> bool {
    media_type.starts_with(BUNDLE_FAMILY)
}

/// Whether the referrers index entry `descriptor` may name a bundle's manifest, to be read and
/// judged by what the manifest itself says: its `artifactType` is a bundle's, or the empty
/// descriptor's, which cosign 3 writes in the entries it adds to a referrers tag (it gives the
/// manifest's config type there, not the manifest's `artifactType`).
pub fn may_be_bundle(descriptor: &crate::types::manifest::Descriptor) -> bool {
    let artifact = descriptor.artifact();
    is_bundle(artifact) || artifact == EMPTY
}

/// The DSSE envelope a bundle (`bytes`, JSON) holds; why not, when it is not one: not JSON,
/// not a bundle, or a bundle of a bare message signature (a blob's, never an image's).
pub fn envelope(bytes: &[u8]) -> Result<Envelope, &'static str> {
    let value: Value = serde_json::from_slice(bytes).map_err(|_| "not JSON")?;
    if !value["mediaType"].as_str().is_some_and(is_bundle) {
        return Err("not a sigstore bundle");
    }
    let Some(envelope) = value.get("dsseEnvelope") else {
        return Err("a bundle without a DSSE envelope");
    };
    serde_json::from_value(envelope.clone()).map_err(|_| "an unreadable DSSE envelope")
}

/// What a signature statement (`payload`, JSON) signs: each subject's `sha256:` digest with
/// the name it gives, when it is an in-toto statement (v1 or v0.1) of cosign's sign predicate.
pub fn signed_subjects(payload: &[u8]) -> Option<Vec<(String, Option<String>)>> {
    let statement: Value = serde_json::from_slice(payload).ok()?;
    let statement_type = statement["_type"].as_str()?;
    if ![
        super::provenance::STATEMENT,
        super::provenance::STATEMENT_V01,
    ]
    .contains(&statement_type)
        || statement["predicateType"] != SIGN_PREDICATE
    {
        return None;
    }
    Some(
        statement["subject"]
            .as_array()?
            .iter()
            .filter_map(|subject| {
                let hex = subject["digest"]["sha256"].as_str()?;
                let name = subject["name"].as_str().map(ToOwned::to_owned);
                Some((format!("sha256:{hex}"), name))
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attest::dsse::{self, Envelope};
    use crate::attest::keys::SigningKey;

    #[test]
    fn a_referrer_names_its_subject_and_the_bundles_type_and_carries_the_envelope() {
        let key = SigningKey::generate();
        let subject = Subject {
            media_type: "application/vnd.docker.distribution.manifest.v2+json".to_owned(),
            size: 423,
            digest: Digest::filled('a'),
        };
        let statement = sign_statement("127.0.0.1:5000/forge/app", &subject.digest);
        let envelope = Envelope::sign(dsse::IN_TOTO, &statement, &key);
        let referrer = Referrer::new(
            &subject,
            of_envelope(&envelope, &key.verifying_key()),
            SIGN_PREDICATE,
        );
        let manifest: Value = serde_json::from_slice(&referrer.manifest).unwrap();
        assert_eq!(manifest["artifactType"], BUNDLE);
        assert_eq!(manifest["subject"]["digest"], subject.digest.as_str());
        assert_eq!(manifest["subject"]["size"], 423);
        assert_eq!(manifest["config"]["mediaType"], EMPTY);
        assert_eq!(
            manifest["layers"][0]["digest"],
            referrer.bundle_digest().as_str()
        );
        let read = super::envelope(&referrer.bundle).unwrap();
        let payload = read.verified_payload(&key.verifying_key()).unwrap();
        assert_eq!(
            signed_subjects(&payload),
            Some(vec![(
                subject.digest.to_string(),
                Some("127.0.0.1:5000/forge/app".to_owned())
            )])
        );
    }

    #[test]
    fn what_is_not_a_bundle_with_an_envelope_says_why() {
        assert_eq!(super::envelope(b"[").unwrap_err(), "not JSON");
        assert_eq!(
            super::envelope(br#"{"mediaType":"application/json"}"#).unwrap_err(),
            "not a sigstore bundle"
        );
        let key = SigningKey::generate();
        let message = of_message(&[0u8; 32], "c2ln", &key.verifying_key());
        assert_eq!(
            super::envelope(&message).unwrap_err(),
            "a bundle without a DSSE envelope"
        );
    }
}
