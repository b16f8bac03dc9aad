//! Image manifests: read as the daemon pushes them (Docker's schema 2, OCI's image manifest, or
//! an index of them), written as forge publishes them.
//!
//! forge writes one form: Docker's schema 2 with Docker's media types, its keys in the order
//! Docker writes them and indented by three spaces, no newline at the end: byte for byte what a
//! classic image store writes when it pushes the same image. So a daemon of either store that
//! pushes the image forge gave it sends the manifest forge made, and the manifest digest is one
//! wherever the image was built.

use serde::{Deserialize, Serialize};

use crate::types::oci::{Digest, Platform};

/// Docker's schema 2 manifest.
pub const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
/// Docker's image config.
pub const DOCKER_CONFIG: &str = "application/vnd.docker.container.image.v1+json";
/// Docker's gzip-compressed layer.
pub const DOCKER_LAYER: &str = "application/vnd.docker.image.rootfs.diff.tar.gzip";
/// OCI's gzip-compressed layer, the same bytes under OCI's name.
const OCI_LAYER_GZIP: &str = "application/vnd.oci.image.layer.v1.tar+gzip";
/// OCI's uncompressed layer.
pub const OCI_LAYER_TAR: &str = "application/vnd.oci.image.layer.v1.tar";
/// Docker's uncompressed layer.
const DOCKER_LAYER_TAR: &str = "application/vnd.docker.image.rootfs.diff.tar";

/// A content descriptor, its keys in the order Docker writes them (`types::manifest::Descriptor`
/// writes them in byte order, as forge's attachments have them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Descriptor {
    /// Its media type.
    #[serde(rename = "mediaType", default)]
    pub media_type: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its digest.
    pub digest: Digest,
}

impl Descriptor {
    /// Whether the blob is a layer compressed with gzip.
    pub fn is_gzip(&self) -> bool {
        self.media_type == DOCKER_LAYER || self.media_type == OCI_LAYER_GZIP
    }

    /// Whether the blob is an uncompressed layer.
    pub fn is_plain_tar(&self) -> bool {
        self.media_type == DOCKER_LAYER_TAR || self.media_type == OCI_LAYER_TAR
    }

    /// The same blob, under Docker's media type when it is a gzip layer.
    pub fn as_docker(&self) -> Self {
        let mut descriptor = self.clone();
        if descriptor.media_type == OCI_LAYER_GZIP {
            descriptor.media_type = DOCKER_LAYER.to_owned();
        }
        descriptor
    }
}

/// An image manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// 2.
    #[serde(rename = "schemaVersion")]
    pub schema_version: u32,
    /// Its own media type.
    #[serde(rename = "mediaType", default)]
    pub media_type: String,
    /// The config.
    pub config: Descriptor,
    /// The layers, bottom first.
    pub layers: Vec<Descriptor>,
}

/// What a manifest document holds: an image, or an index of them.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Document {
    Index {
        manifests: Vec<crate::types::manifest::Descriptor>,
    },
    Image(Manifest),
}

impl Manifest {
    /// Reads a manifest document; an index yields an empty manifest whose entry for a platform
    /// `platform_entry` names.
    pub fn parse(bytes: &[u8]) -> Result<Parsed, String> {
        match serde_json::from_slice::<Document>(bytes).map_err(|error| error.to_string())? {
            Document::Image(manifest) => Ok(Parsed::Image(manifest)),
            Document::Index { manifests } => Ok(Parsed::Index(
                manifests
                    .into_iter()
                    .map(|entry| {
                        let platform = entry.platform.map(|platform| {
                            let mut text = format!("{}/{}", platform.os, platform.architecture);
                            if let Some(variant) = platform.variant.filter(|v| !v.is_empty()) {
                                text = format!("{text}/{variant}");
                            }
                            text
                        });
                        (entry.digest, platform)
                    })
                    .collect(),
            )),
        }
    }

    /// The bytes forge publishes for a Docker schema 2 manifest of `config` and `layers`.
    pub fn docker(config: Descriptor, layers: Vec<Descriptor>) -> Vec<u8> {
        let manifest = Manifest {
            schema_version: 2,
            media_type: DOCKER_MANIFEST.to_owned(),
            config,
            layers,
        };
        let mut bytes = Vec::new();
        let formatter = serde_json::ser::PrettyFormatter::with_indent(b"   ");
        let mut serializer = serde_json::Serializer::with_formatter(&mut bytes, formatter);
        manifest
            .serialize(&mut serializer)
            .expect("a manifest serializes");
        bytes
    }
}

/// A manifest document read.
#[derive(Debug, Clone)]
pub enum Parsed {
    /// An image manifest.
    Image(Manifest),
    /// An index: each entry's digest and platform (`os/arch[/variant]`), if it names one.
    Index(Vec<(Digest, Option<String>)>),
}

impl Parsed {
    /// The index's entry for `platform` (an entry without a variant matches any variant).
    pub fn platform_entry(&self, platform: &Platform) -> Option<Digest> {
        let Parsed::Index(entries) = self else {
            return None;
        };
        let wanted = platform.as_str();
        let base = |text: &str| text.split('/').take(2).collect::<Vec<_>>().join("/");
        entries
            .iter()
            .find(|(_, entry)| entry.as_deref() == Some(wanted))
            .or_else(|| {
                entries
                    .iter()
                    .find(|(_, entry)| entry.as_deref().map(base) == Some(base(wanted)))
            })
            .map(|(digest, _)| digest.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Docker 20.10's classic store pushed for an image of two layers.
    const PUSHED: &str = "{\n   \"schemaVersion\": 2,\n   \"mediaType\": \"application/vnd.docker.distribution.manifest.v2+json\",\n   \"config\": {\n      \"mediaType\": \"application/vnd.docker.container.image.v1+json\",\n      \"size\": 2805,\n      \"digest\": \"sha256:e8cc51aae9355d9e207a72948792033e91a66e547f3514e954ca666a2b914535\"\n   },\n   \"layers\": [\n      {\n         \"mediaType\": \"application/vnd.docker.image.rootfs.diff.tar.gzip\",\n         \"size\": 1068599,\n         \"digest\": \"sha256:df7d0bee0c551f847ff43a63b03e3885e9979b75670aa14ac7e2f60d861d271d\"\n      },\n      {\n         \"mediaType\": \"application/vnd.docker.image.rootfs.diff.tar.gzip\",\n         \"size\": 343,\n         \"digest\": \"sha256:dac41c1200ea67323fba9118d05943c9bb92c3a6eb2f05910781b8ab0ed1193f\"\n      }\n   ]\n}";

    #[test]
    fn forge_writes_a_manifest_byte_for_byte_as_a_classic_store_pushes_it() {
        let Parsed::Image(manifest) = Manifest::parse(PUSHED.as_bytes()).unwrap() else {
            panic!("an image manifest");
        };
        let written = Manifest::docker(manifest.config, manifest.layers);
        assert_eq!(String::from_utf8(written).unwrap(), PUSHED);
    }

    #[test]
    fn an_index_names_the_manifest_for_a_platform() {
        let index = r#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[
            {"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:1111111111111111111111111111111111111111111111111111111111111111","size":1,"platform":{"architecture":"arm64","os":"linux","variant":"v8"}},
            {"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:2222222222222222222222222222222222222222222222222222222222222222","size":1,"platform":{"architecture":"amd64","os":"linux"}}]}"#;
        let parsed = Manifest::parse(index.as_bytes()).unwrap();
        let amd64: Platform = "linux/amd64".parse().unwrap();
        let arm64: Platform = "linux/arm64".parse().unwrap();
        assert_eq!(parsed.platform_entry(&amd64), Some(Digest::filled('2')));
        assert_eq!(parsed.platform_entry(&arm64), Some(Digest::filled('1')));
    }
}
