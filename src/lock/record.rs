//! The record of a build: what went in (`Inputs`, the base, the patches) and what came out (the
//! image, its tags and pushed digests, the attachments), as forge.lock's TOML spells it.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{FORMAT_VERSION, HEADER, Inputs, LockError, write_text};
use crate::fs::Written;
use crate::pins::Mutability;
use crate::types::oci::{Digest, ImageRef, Platform, Repository, Tag};

/// Everything `forge.lock` records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// The format version.
    pub version: u32,
    /// Digests of what the build was made from.
    pub inputs: Inputs,
    /// The image built on.
    pub base: BaseRecord,
    /// The image built.
    pub image: ImageRecord,
    /// The tags applied, in pins.toml order.
    #[serde(default)]
    pub tags: Vec<TagRecord>,
    /// The patches applied to the patch targets, in order.
    #[serde(default)]
    pub patches: Vec<PatchRecord>,
    /// What `build --push --sign` attached to the pushed image in its registry; records
    /// written before forge signed leave it out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<AttachmentRecord>,
    /// For a recipe of several platforms: each platform's image, whose manifests the tags'
    /// OCI image index lists; empty for one platform.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub platforms: Vec<PlatformRecord>,
}

/// What kind of thing is attached to a pushed image, under cosign's tag scheme.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum AttachmentKind {
    /// The signature of the image.
    Signature,
    /// A signed provenance statement.
    Attestation,
    /// The SBOM.
    Sbom,
    /// The build record (`attest::record`).
    Record,
    /// The signature as cosign 3 writes it: a sigstore bundle referring to the image.
    #[serde(rename = "signature-bundle")]
    SignatureBundle,
    /// The signed provenance as cosign 3 writes it: a sigstore bundle referring to the image.
    #[serde(rename = "attestation-bundle")]
    AttestationBundle,
}

impl AttachmentKind {
    /// What it is, for people.
    pub fn noun(self) -> &'static str {
        match self {
            AttachmentKind::Signature => "signature",
            AttachmentKind::Attestation => "provenance",
            AttachmentKind::Sbom => "SBOM",
            AttachmentKind::Record => "build record",
            AttachmentKind::SignatureBundle => "signature bundle",
            AttachmentKind::AttestationBundle => "provenance bundle",
        }
    }

    /// Whether it is a referrer (a bundle found through the image's referrers) rather than a
    /// manifest under a cosign tag of its own.
    pub fn is_referrer(self) -> bool {
        matches!(
            self,
            AttachmentKind::SignatureBundle | AttachmentKind::AttestationBundle
        )
    }

    /// The tag the attachment of this kind for the manifest `digest` lives under: cosign's
    /// `sha256-HEX.sig`, `.att`, `.sbom` (and forge's `.record`); for a bundle, the referrers
    /// tag `sha256-HEX` whose index lists it where the registry has no referrers API.
    pub fn tag(self, digest: &Digest) -> String {
        let suffix = match self {
            AttachmentKind::Signature => "sig",
            AttachmentKind::Attestation => "att",
            AttachmentKind::Sbom => "sbom",
            AttachmentKind::Record => "record",
            AttachmentKind::SignatureBundle | AttachmentKind::AttestationBundle => {
                return format!("sha256-{}", digest.hex());
            }
        };
        format!("sha256-{}.{suffix}", digest.hex())
    }
}

/// One platform's image of a multi-platform build.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlatformRecord {
    /// `os/arch[/variant]`.
    pub platform: Platform,
    /// The image id the node that built it reported.
    pub id: Digest,
    /// The manifest digest the registry stored for it (an entry of the index).
    pub manifest: Digest,
    /// The daemon that built it, as `--node` named it.
    pub node: String,
}

/// One attachment of the pushed image, under its cosign tag.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachmentRecord {
    /// `signature`, `attestation` or `sbom`.
    pub kind: AttachmentKind,
    /// The manifest it is attached to.
    pub subject: Digest,
    /// The tag it lives under (`sha256-HEX.sig`, `.att`, `.sbom`); for a bundle, the
    /// referrers tag whose index lists it, empty where the registry's referrers API lists it.
    pub tag: String,
    /// The digest of the attachment's manifest.
    pub manifest: Digest,
    /// The digest of what it holds: the signed payload, the DSSE envelope, the SBOM.
    pub content: Digest,
}

/// The base image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BaseRecord {
    /// The reference pins.toml names.
    pub image: ImageRef,
    /// The digest it resolved to, when known (pinned in pins.toml, or from the local image).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<Digest>,
    /// The local image id the build started from, when the daemon had it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<Digest>,
    /// The Python distributions installed in the image (normalized name to version), as
    /// `verify-digest --contents` read them with `importlib.metadata`: what the base supplies
    /// for the requirements of the pins on packages the recipe does not pin. Records written
    /// before forge read them leave it out.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub packages: std::collections::BTreeMap<String, String>,
    /// The glibc the image runs (`2.39`), as `verify-digest --contents` read it: which
    /// manylinux wheels load there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glibc: Option<String>,
    /// The Python the image runs (`3.12`), as `verify-digest --contents` read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<String>,
}

/// The image built.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageRecord {
    /// The repository its tags live in.
    pub repository: Repository,
    /// The image id.
    pub id: Digest,
    /// The platform it was built for (`--platform`, else pins.toml's); records written before
    /// forge recorded it leave it out, and pins.toml's platform stands in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<Platform>,
    /// The recipe repository's commit the image was built from (its revision label), when the
    /// recipe is in git.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// The daemon's builder that built it, which `verify-digest --rebuild` builds with again;
    /// records written before forge recorded it leave it out, and BuildKit stands in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub builder: Option<crate::engine::Builder>,
    /// The image the engine built, which forge normalized into `id`: a build that ends on it
    /// again, with the same `normalized` format, reuses `id` instead of rewriting it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub built: Option<Digest>,
    /// The format of the normalization that made `id` of `built` (`normalize::FORMAT`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub normalized: Option<u32>,
    /// The manifest forge wrote for the image: its digest in the registry, and the image's id
    /// in a containerd image store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest: Option<Digest>,
    /// The epoch (seconds since 1970) every time of forge's layers and steps was set to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch: Option<u64>,
}

/// One tag applied to the image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TagRecord {
    /// The tag.
    pub name: Tag,
    /// Whether it may move.
    #[serde(with = "mutability")]
    pub mutability: Mutability,
    /// The manifest digest the registry stored, when the tag was pushed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pushed: Option<Digest>,
}

/// One applied patch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PatchRecord {
    /// The patch file, relative to the recipe folder.
    pub file: String,
    /// The commit the patch was made from, when its mail names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original: Option<String>,
    /// The commit it became on the patch target (absent when already applied there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied: Option<String>,
    /// `Name <email>` of its author, kept on the new commit.
    pub author: String,
    /// The first line of its commit message.
    #[serde(default)]
    pub subject: String,
}

impl PatchRecord {
    /// One line for people: `original -> applied author: subject`, ids abbreviated.
    pub fn summary(&self) -> String {
        let short = |id: &Option<String>| {
            id.as_deref()
                .map_or("-".to_owned(), |id| id.chars().take(12).collect())
        };
        format!(
            "{} -> {} {}: {}",
            short(&self.original),
            short(&self.applied),
            self.author,
            self.subject
        )
    }
}

/// `Mutability` as the record spells it; pins.toml spells it as the table a tag is listed in.
mod mutability {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::pins::Mutability;

    pub fn serialize<S: Serializer>(value: &Mutability, serializer: S) -> Result<S::Ok, S::Error> {
        value.serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Mutability, D::Error> {
        match String::deserialize(deserializer)?.as_str() {
            "moving" => Ok(Mutability::Moving),
            "immutable" => Ok(Mutability::Immutable),
            other => Err(serde::de::Error::custom(format!(
                "unknown mutability {other:?}: expected \"moving\" or \"immutable\""
            ))),
        }
    }
}

impl Record {
    /// A record of two tags and one patch: a fixture for tests.
    #[cfg(test)]
    pub(crate) fn sample() -> Self {
        Self::new(
            Inputs::sample(),
            BaseRecord {
                image: "forge-example-base:1".parse().unwrap(),
                digest: None,
                id: Some(Digest::filled('9')),
                packages: std::collections::BTreeMap::new(),
                glibc: None,
                python: None,
            },
            ImageRecord {
                repository: "localhost:5000/forge/example".parse().unwrap(),
                id: Digest::filled('a'),
                platform: Some("linux/arm64".parse().unwrap()),
                revision: Some("e".repeat(40)),
                builder: Some(crate::engine::Builder::Buildkit),
                built: Some(Digest::filled('c')),
                normalized: Some(2),
                manifest: Some(Digest::filled('d')),
                epoch: Some(1_783_468_800),
            },
            vec![
                TagRecord {
                    name: "latest".parse().unwrap(),
                    mutability: Mutability::Moving,
                    pushed: Some(Digest::filled('b')),
                },
                TagRecord {
                    name: "2026-07-08".parse().unwrap(),
                    mutability: Mutability::Immutable,
                    pushed: None,
                },
            ],
            vec![PatchRecord {
                file: "patches/example/0001-x.patch".to_owned(),
                original: Some("c".repeat(40)),
                applied: Some("d".repeat(40)),
                author: "Ada <ada@example.org>".to_owned(),
                subject: "example: one fix".to_owned(),
            }],
        )
    }

    /// Whether a daemon's id `id` names the recorded image: its image id (a classic image
    /// store's name for it), or the manifest forge wrote or a tag was pushed as (a containerd
    /// store names an image by the manifest, or the index, it holds).
    pub fn names(&self, id: &Digest) -> bool {
        *id == self.image.id
            || self.image.manifest.as_ref() == Some(id)
            || self.tags.iter().any(|tag| tag.pushed.as_ref() == Some(id))
    }

    /// The names a daemon may hold the recorded image by, image id first.
    pub fn identities(&self) -> Vec<&Digest> {
        let mut names = vec![&self.image.id];
        names.extend(self.image.manifest.as_ref());
        names.extend(self.tags.iter().filter_map(|tag| tag.pushed.as_ref()));
        names.dedup();
        names
    }

    /// A record in the current format.
    pub fn new(
        inputs: Inputs,
        base: BaseRecord,
        image: ImageRecord,
        tags: Vec<TagRecord>,
        patches: Vec<PatchRecord>,
    ) -> Self {
        Self {
            version: FORMAT_VERSION,
            inputs,
            base,
            image,
            tags,
            patches,
            attachments: Vec::new(),
            platforms: Vec::new(),
        }
    }

    /// The record as forge writes it.
    pub fn to_text(&self) -> String {
        let body = toml::to_string(self).expect("a record serializes");
        format!("{HEADER}{body}")
    }

    /// Writes the record to `root`/forge.lock through a temporary file and a rename; a record
    /// equal to the one there leaves the file untouched.
    pub fn write(&self, root: &Path) -> Result<Written, LockError> {
        write_text(root, &self.to_text())
    }
}
