//! OCI manifests, indexes and descriptors, as forge writes them for what it attaches to an image
//! (cosign's `.sig`/`.att`, sigstore bundles as referrers, the referrers tag's index) and for
//! the index of an image of several platforms. Each is written with its keys in byte order, as
//! forge has always written them, so that the same attachment has the same digest.
//!
//! Forge reads with the same types what a registry serves (an image's manifest and index, the
//! entries of a referrers index, an attachment's layers): a field the specs make optional is
//! optional here too, so a manifest another tool wrote reads as well as forge's own.
//!
//! The image's own manifest is not written here: `normalize::manifest` writes Docker's schema 2
//! in the order Docker writes its keys, byte for byte what a classic image store pushes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::oci::Digest;

/// An OCI image manifest.
pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
/// An OCI image index.
pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";

/// A content descriptor: what a blob or manifest is, its digest and size, and what an index
/// entry or a subject says of it besides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// Its media type (read as empty where a served descriptor leaves it out).
    #[serde(default)]
    pub media_type: String,
    /// Its digest: what it is held to wherever it is read.
    pub digest: Digest,
    /// Its size in bytes (read as 0 where a served descriptor leaves it out).
    #[serde(default)]
    pub size: u64,
    /// What it carries, for an artifact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    /// Its annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// The platform of an index entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<PlatformEntry>,
}

impl Descriptor {
    /// The descriptor of `bytes` of `media_type`.
    pub fn of(media_type: &str, bytes: &[u8]) -> Self {
        use sha2::Digest as _;
        let digest = Digest::from_sha256(&sha2::Sha256::digest(bytes));
        Descriptor::named(media_type, digest, bytes.len() as u64)
    }

    /// What it says it carries: its `artifactType`, empty when it names none.
    pub fn artifact(&self) -> &str {
        self.artifact_type.as_deref().unwrap_or_default()
    }

    /// The descriptor of a blob of `media_type` known by its `digest` and `size`.
    pub fn named(media_type: &str, digest: Digest, size: u64) -> Self {
        Descriptor {
            media_type: media_type.to_owned(),
            digest,
            size,
            artifact_type: None,
            annotations: BTreeMap::new(),
            platform: None,
        }
    }
}

/// The platform an index entry is for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlatformEntry {
    /// Its CPU architecture (`arm64`).
    pub architecture: String,
    /// Its operating system (`linux`).
    pub os: String,
    /// Its CPU variant (`v8`), when named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
}

/// An OCI image manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageManifest {
    /// 2.
    pub schema_version: u32,
    /// `OCI_MANIFEST` (which an OCI manifest may leave out), or Docker's schema 2 type.
    #[serde(default)]
    pub media_type: String,
    /// What it carries, for an artifact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    /// Its config blob.
    pub config: Descriptor,
    /// Its layers.
    pub layers: Vec<Descriptor>,
    /// Its annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// The manifest it refers to, for a referrer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Descriptor>,
}

impl ImageManifest {
    /// An OCI image manifest of `config` and `layers`.
    pub fn new(config: Descriptor, layers: Vec<Descriptor>) -> Self {
        ImageManifest {
            schema_version: 2,
            media_type: OCI_MANIFEST.to_owned(),
            artifact_type: None,
            config,
            layers,
            annotations: BTreeMap::new(),
            subject: None,
        }
    }

    /// Its bytes: compact JSON, keys in byte order.
    pub fn to_bytes(&self) -> Vec<u8> {
        in_byte_order(self)
    }

    /// What it says it carries: its `artifactType`, empty when it names none.
    pub fn artifact(&self) -> &str {
        self.artifact_type.as_deref().unwrap_or_default()
    }

    /// The image manifest `bytes` hold (Docker's schema 2 reads as one too); `None` when they
    /// hold none (an index, or not JSON).
    pub fn read(bytes: &[u8]) -> Option<Self> {
        serde_json::from_slice(bytes).ok()
    }
}

/// An OCI image index; its entries descriptors, or (for a referrers tag, whose entries other
/// tools write too) each entry as it was served.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageIndex<Entry = Descriptor> {
    /// 2.
    pub schema_version: u32,
    /// `OCI_INDEX` (which an OCI index may leave out), or Docker's manifest list type.
    #[serde(default)]
    pub media_type: String,
    /// Its entries.
    pub manifests: Vec<Entry>,
}

impl<Entry: Serialize> ImageIndex<Entry> {
    /// An OCI image index of `manifests`.
    pub fn new(manifests: Vec<Entry>) -> Self {
        ImageIndex {
            schema_version: 2,
            media_type: OCI_INDEX.to_owned(),
            manifests,
        }
    }

    /// Its bytes: compact JSON, keys in byte order.
    pub fn to_bytes(&self) -> Vec<u8> {
        in_byte_order(self)
    }
}

/// `value` as compact JSON with every object's keys in byte order.
pub fn in_byte_order(value: &impl Serialize) -> Vec<u8> {
    let value = serde_json::to_value(value).expect("a manifest serializes");
    serde_json::to_vec(&value).expect("a JSON value serializes")
}
