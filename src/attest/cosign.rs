//! Attachments as cosign and the containers tools (skopeo, podman) read them from a registry
//! without the OCI 1.1 referrers API: for an image whose manifest is `sha256:H`, the tags
//! `sha256-H.sig` (signatures), `sha256-H.att` (attestations) and `sha256-H.sbom` (the SBOM)
//! in the same repository, each an OCI image manifest whose layers are the attached blobs.
//!
//! A signature is the "simple signing" payload (which repository, which manifest digest)
//! signed with ECDSA, the signature in the layer's `dev.cosignproject.cosign/signature`
//! annotation. An attestation layer is a DSSE envelope of an in-toto statement.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;
use sha2::Digest as _;

use crate::types::manifest::{Descriptor, ImageManifest, in_byte_order};
use crate::types::oci::Digest;

/// A simple-signing payload layer.
pub const SIMPLE_SIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The annotation that holds a layer's signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// A DSSE envelope layer.
pub const DSSE_ENVELOPE: &str = "application/vnd.dsse.envelope.v1+json";
/// The annotation that names an attestation's predicate type.
pub const PREDICATE_ANNOTATION: &str = "predicateType";
/// A CycloneDX JSON SBOM layer.
pub const CYCLONEDX: &str = "application/vnd.cyclonedx+json";
pub use crate::types::manifest::OCI_MANIFEST;
/// An OCI image configuration.
pub const OCI_CONFIG: &str = "application/vnd.oci.image.config.v1+json";

/// What kind of thing is attached (forge.lock records it).
pub use crate::lock::AttachmentKind as Kind;

/// A blob to upload, as a layer of an attachment manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layer {
    /// Its media type.
    pub media_type: String,
    /// The bytes.
    pub bytes: Vec<u8>,
    /// The layer's annotations.
    pub annotations: BTreeMap<String, String>,
}

impl Layer {
    /// The blob's digest.
    pub fn digest(&self) -> Digest {
        digest_of(&self.bytes)
    }
}

/// `sha256:` of `bytes`.
pub fn digest_of(bytes: &[u8]) -> Digest {
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(bytes)))
        .parse()
        .expect("a sha256 digest is a digest")
}

/// An attachment ready to upload: the config blob, the layers, and the manifest that ties them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    /// The config blob.
    pub config: Vec<u8>,
    /// The layers.
    pub layers: Vec<Layer>,
    /// The manifest (OCI image manifest JSON).
    pub manifest: Vec<u8>,
}

impl Attachment {
    /// An attachment of `layers`, with a config that lists them as an image would.
    pub fn of(layers: Vec<Layer>) -> Attachment {
        let diff_ids: Vec<String> = layers
            .iter()
            .map(|layer| layer.digest().to_string())
            .collect();
        let config = in_byte_order(&AttachmentConfig {
            architecture: "",
            os: "",
            config: BTreeMap::new(),
            rootfs: RootFs {
                kind: "layers",
                diff_ids,
            },
        });
        let manifest = ImageManifest::new(
            Descriptor::of(OCI_CONFIG, &config),
            layers
                .iter()
                .map(|layer| Descriptor {
                    annotations: layer.annotations.clone(),
                    ..Descriptor::of(&layer.media_type, &layer.bytes)
                })
                .collect(),
        )
        .to_bytes();
        Attachment {
            config,
            layers,
            manifest,
        }
    }

    /// The manifest's digest.
    pub fn digest(&self) -> Digest {
        digest_of(&self.manifest)
    }
}

/// The `critical.type` of a simple-signing payload.
const SIMPLE_SIGNING_TYPE: &str = "cosign container image signature";

/// The simple-signing payload that says: the image in `repository` whose manifest is
/// `digest` is signed.
pub fn payload(repository: &str, digest: &Digest) -> Vec<u8> {
    in_byte_order(&SimpleSigning {
        critical: Critical {
            identity: Identity {
                docker_reference: repository,
            },
            image: Image {
                docker_manifest_digest: digest,
            },
            kind: SIMPLE_SIGNING_TYPE,
        },
        optional: None,
    })
}

/// The config of an attachment manifest: an image's, with no platform and its layers' digests.
#[derive(Serialize)]
struct AttachmentConfig {
    architecture: &'static str,
    os: &'static str,
    config: BTreeMap<String, String>,
    rootfs: RootFs,
}

/// The layers an attachment's config lists.
#[derive(Serialize)]
struct RootFs {
    #[serde(rename = "type")]
    kind: &'static str,
    diff_ids: Vec<String>,
}

/// A simple-signing payload (containers/image's format, which cosign signs).
#[derive(Serialize)]
struct SimpleSigning<'a> {
    critical: Critical<'a>,
    optional: Option<()>,
}

/// What a simple-signing payload vouches for.
#[derive(Serialize)]
struct Critical<'a> {
    identity: Identity<'a>,
    image: Image<'a>,
    #[serde(rename = "type")]
    kind: &'static str,
}

/// The repository a signature names.
#[derive(Serialize)]
struct Identity<'a> {
    #[serde(rename = "docker-reference")]
    docker_reference: &'a str,
}

/// The manifest a signature names.
#[derive(Serialize)]
struct Image<'a> {
    #[serde(rename = "docker-manifest-digest")]
    docker_manifest_digest: &'a Digest,
}

/// What a simple-signing payload claims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claims {
    /// The repository it names.
    pub repository: String,
    /// The manifest digest it names.
    pub digest: String,
}

/// The claims of a simple-signing payload, when it is one.
pub fn claims(payload: &[u8]) -> Option<Claims> {
    let value: Value = serde_json::from_slice(payload).ok()?;
    let critical = value.get("critical")?;
    if critical.get("type")?.as_str()? != SIMPLE_SIGNING_TYPE {
        return None;
    }
    Some(Claims {
        repository: critical
            .get("identity")?
            .get("docker-reference")?
            .as_str()?
            .to_owned(),
        digest: critical
            .get("image")?
            .get("docker-manifest-digest")?
            .as_str()?
            .to_owned(),
    })
}

/// The signature layer for `payload`, signed with `signature`.
pub fn signature_layer(payload: Vec<u8>, signature: String) -> Layer {
    Layer {
        media_type: SIMPLE_SIGNING.to_owned(),
        bytes: payload,
        annotations: BTreeMap::from([(SIGNATURE_ANNOTATION.to_owned(), signature)]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attachments_live_under_cosign_tags() {
        let digest: Digest =
            "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
                .parse()
                .unwrap();
        assert_eq!(
            Kind::Signature.tag(&digest),
            "sha256-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.sig"
        );
        assert!(Kind::Sbom.tag(&digest).ends_with(".sbom"));
    }

    #[test]
    fn a_payload_claims_its_repository_and_digest() {
        let digest: Digest =
            "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
                .parse()
                .unwrap();
        let claims = claims(&payload("127.0.0.1:5000/forge/offline", &digest)).unwrap();
        assert_eq!(claims.repository, "127.0.0.1:5000/forge/offline");
        assert_eq!(claims.digest, digest.as_str());
        let attachment = Attachment::of(vec![signature_layer(b"{}".to_vec(), "c2ln".to_owned())]);
        let manifest: Value = serde_json::from_slice(&attachment.manifest).unwrap();
        assert_eq!(
            manifest["layers"][0]["annotations"][SIGNATURE_ANNOTATION],
            "c2ln"
        );
        assert_eq!(
            manifest["config"]["digest"],
            digest_of(&attachment.config).as_str()
        );
    }
}
