//! The layer's SBOM: what forge put into the image, as CycloneDX 1.5 JSON. CycloneDX rather
//! than SPDX because it has first-class places for what this layer is made of: a container
//! component for the base (by digest, with what the layer only asserts of it as its
//! components), package URLs for pins, `pedigree` for the patches applied to a component
//! (each commit with its author), and file components with hashes for the overlay files.

use base64::Engine as _;
use serde::Serialize;
use serde_json::Value;

use super::Facts;
use crate::types::oci::ImageRef;

/// A CycloneDX 1.5 BOM as forge writes it: the fields of the specification forge fills, each
/// optional one left out when empty.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Bom<'a> {
    bom_format: &'static str,
    spec_version: &'static str,
    serial_number: String,
    version: u32,
    metadata: Metadata<'a>,
    components: Vec<Component>,
}

/// When the BOM was made, by what, and of what.
#[derive(Debug, Serialize)]
struct Metadata<'a> {
    timestamp: &'a str,
    tools: Tools,
    component: Component,
}

/// The tools that made the BOM.
#[derive(Debug, Serialize)]
struct Tools {
    components: Vec<Component>,
}

/// A component: the image, the base, a pin, an overlay or a file.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
struct Component {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(rename = "bom-ref", skip_serializing_if = "Option::is_none")]
    bom_ref: Option<String>,
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    purl: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hashes: Option<Vec<Hash>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    properties: Option<Vec<Property>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    external_references: Option<Vec<Reference>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    components: Option<Vec<Component>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pedigree: Option<Pedigree>,
}

/// A SHA-256 of a component.
#[derive(Debug, Serialize)]
struct Hash {
    alg: &'static str,
    content: String,
}

impl Hash {
    fn sha256(content: impl Into<String>) -> Vec<Hash> {
        vec![Hash {
            alg: "SHA-256",
            content: content.into(),
        }]
    }
}

/// A name and value forge records about a component.
#[derive(Debug, Serialize)]
struct Property {
    name: &'static str,
    value: String,
}

/// Where a component's source is.
#[derive(Debug, Serialize)]
struct Reference {
    #[serde(rename = "type")]
    kind: &'static str,
    url: String,
}

/// The patches applied to a component.
#[derive(Debug, Serialize)]
struct Pedigree {
    commits: Vec<Commit>,
    patches: Vec<PatchEntry>,
}

/// A commit of a patch, with its author.
#[derive(Debug, Serialize)]
struct Commit {
    #[serde(skip_serializing_if = "Option::is_none")]
    uid: Option<String>,
    author: Identity,
    message: String,
}

/// A commit's author.
#[derive(Debug, Serialize)]
struct Identity {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    email: Option<String>,
}

/// A patch, carried whole when it is small enough.
#[derive(Debug, Serialize)]
struct PatchEntry {
    #[serde(rename = "type")]
    kind: &'static str,
    diff: Diff,
}

/// A patch's text.
#[derive(Debug, Serialize)]
struct Diff {
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<Attachment>,
}

/// Bytes carried in the BOM.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Attachment {
    content_type: &'static str,
    encoding: &'static str,
    content: String,
}

/// The SBOM of `facts`, as JSON.
pub fn document(facts: &Facts) -> Value {
    let mut components = vec![base_component(facts)];
    components.extend(
        facts
            .pins
            .iter()
            .filter(|pin| !pin.in_base)
            .map(pin_component),
    );
    components.extend(overlay_components(facts));
    let bom = Bom {
        bom_format: "CycloneDX",
        spec_version: "1.5",
        serial_number: serial_number(),
        version: 1,
        metadata: Metadata {
            timestamp: &facts.finished,
            tools: Tools {
                components: vec![Component {
                    kind: "application",
                    name: "forge".to_owned(),
                    version: Some(facts.forge_version.clone()),
                    ..Component::default()
                }],
            },
            component: Component {
                kind: "container",
                bom_ref: Some("image".to_owned()),
                name: facts.repository.to_string(),
                version: Some(facts.manifest.to_string()),
                purl: Some(oci_purl(facts.repository.as_str(), facts.manifest.as_str())),
                ..Component::default()
            },
        },
        components,
    };
    serde_json::to_value(bom).expect("a BOM serializes")
}

/// A serial number of its own for each BOM, as CycloneDX asks: a random (version 4) UUID.
fn serial_number() -> String {
    use rand_core::RngCore as _;
    let mut bytes = [0u8; 16];
    rand_core::OsRng.fill_bytes(&mut bytes);
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex = hex::encode(bytes);
    format!(
        "urn:uuid:{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// `text` percent-encoded as a package URL's version or qualifier value in its canonical
/// form (as packageurl-python writes it): every byte but ASCII letters, digits and `.-_~:/`
/// encoded.
pub fn purl_encoded(text: &str) -> String {
    let mut out = String::new();
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b".-_~:/".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The `pkg:docker` package URL of an image reference: its repository path as namespace and
/// name (an official Docker Hub image without `library/`), its digest (when the reference pins
/// one) else its tag as version, its registry as `repository_url` unless Docker Hub, and
/// `platform` when given (as BuildKit names a base in its provenance).
pub fn docker_purl(image: &ImageRef, platform: Option<&str>) -> String {
    let version = image
        .digest()
        .map(|digest| digest.as_str().to_owned())
        .or_else(|| image.tag().map(ToOwned::to_owned))
        .unwrap_or_else(|| "latest".to_owned());
    // An official Docker Hub image is named without its `library/` namespace.
    let hub = image.registry().is_docker_hub();
    let path = if hub {
        image
            .repository()
            .strip_prefix("library/")
            .unwrap_or(image.repository())
    } else {
        image.repository()
    };
    let mut purl = format!("pkg:docker/{path}@{}", purl_encoded(&version));
    let mut qualifiers = Vec::new();
    if let Some(platform) = platform {
        qualifiers.push(format!("platform={}", purl_encoded(platform)));
    }
    if !hub {
        qualifiers.push(format!(
            "repository_url={}",
            purl_encoded(image.registry().as_str())
        ));
    }
    if !qualifiers.is_empty() {
        purl.push('?');
        purl.push_str(&qualifiers.join("&"));
    }
    purl
}

/// `pkg:oci/NAME@DIGEST?repository_url=REGISTRY/PATH`.
fn oci_purl(repository: &str, digest: &str) -> String {
    let (location, name) = repository.rsplit_once('/').unwrap_or(("", repository));
    let mut purl = format!("pkg:oci/{name}@{}", purl_encoded(digest));
    if !location.is_empty() {
        purl.push_str(&format!("?repository_url={location}/{name}"));
    }
    purl
}

fn base_component(facts: &Facts) -> Component {
    let (name, _) = split_reference(facts.base.image.as_str());
    let platform = facts.platform.as_ref().map(ToString::to_string);
    // A base that only the daemon holds has no registry digest: its image id stands in.
    let version = (facts.base.digest.as_ref().or(facts.base.id.as_ref()))
        .map_or(facts.base.image.as_str(), crate::types::oci::Digest::as_str);
    Component {
        kind: "container",
        bom_ref: Some("base".to_owned()),
        name: name.to_owned(),
        version: Some(version.to_owned()),
        description: Some(format!("the base image {}", facts.base.image)),
        purl: Some(docker_purl(&facts.base.image, platform.as_deref())),
        components: Some(
            facts
                .pins
                .iter()
                .filter(|pin| pin.in_base)
                .map(pin_component)
                .collect(),
        ),
        properties: facts.base.id.as_ref().map(|id| {
            vec![Property {
                name: "dev.forge:image-id",
                value: id.to_string(),
            }]
        }),
        hashes: facts
            .base
            .digest
            .as_ref()
            .map(|digest| Hash::sha256(digest.hex())),
        ..Component::default()
    }
}

/// `repository` and tag of an image reference.
fn split_reference(reference: &str) -> (&str, Option<&str>) {
    let name_end = reference.rfind('/').map_or(0, |slash| slash + 1);
    match reference[name_end..].find([':', '@']) {
        Some(at) => (
            &reference[..name_end + at],
            Some(&reference[name_end + at + 1..]),
        ),
        None => (reference, None),
    }
}

fn pin_component(pin: &super::PinFact) -> Component {
    Component {
        kind: "library",
        bom_ref: Some(format!("pin:{}", pin.name)),
        name: pin.package.clone().unwrap_or_else(|| pin.name.clone()),
        version: Some(pin.version.clone()),
        purl: pin.purl(),
        external_references: pin.url.as_ref().map(|url| {
            vec![Reference {
                kind: "vcs",
                url: url.clone(),
            }]
        }),
        ..Component::default()
    }
}

/// One component per overlay folder, its files (with the sha256 the image holds) as its
/// components and the patches applied to it as its pedigree.
fn overlay_components(facts: &Facts) -> Vec<Component> {
    facts
        .overlays
        .iter()
        .map(|overlay| {
            let files = overlay
                .files
                .iter()
                .map(|file| Component {
                    kind: "file",
                    bom_ref: Some(format!("file:{}", file.path)),
                    name: file.path.clone(),
                    hashes: Some(Hash::sha256(file.sha256.clone())),
                    ..Component::default()
                })
                .collect();
            let patches: Vec<&super::PatchFact> = facts
                .patches
                .iter()
                .filter(|patch| overlay.patches.contains(&patch.record.file))
                .collect();
            Component {
                kind: "library",
                bom_ref: Some(format!("overlay:{}", overlay.from)),
                name: overlay.from.to_string(),
                description: Some(format!("recipe files copied to {}", overlay.to)),
                components: Some(files),
                pedigree: (!patches.is_empty()).then(|| pedigree(&patches)),
                ..Component::default()
            }
        })
        .collect()
}

/// The patches applied to an overlay: each commit with its author, and each patch itself
/// (base64, when it is small enough to carry).
fn pedigree(patches: &[&super::PatchFact]) -> Pedigree {
    Pedigree {
        commits: patches
            .iter()
            .map(|patch| {
                let record = &patch.record;
                let (name, email) = split_identity(&record.author);
                Commit {
                    uid: record
                        .applied
                        .as_ref()
                        .or(record.original.as_ref())
                        .cloned(),
                    author: Identity {
                        name,
                        email: (!email.is_empty()).then_some(email),
                    },
                    message: record.subject.clone(),
                }
            })
            .collect(),
        patches: patches
            .iter()
            .map(|patch| PatchEntry {
                kind: "unofficial",
                diff: Diff {
                    text: patch.text.as_ref().map(|text| Attachment {
                        content_type: "text/x-diff",
                        encoding: "base64",
                        content: base64::engine::general_purpose::STANDARD.encode(text),
                    }),
                },
            })
            .collect(),
    }
}

/// `Name <email>` split.
fn split_identity(identity: &str) -> (String, String) {
    match identity.rsplit_once(" <") {
        Some((name, email)) => (name.to_owned(), email.trim_end_matches('>').to_owned()),
        None => (identity.to_owned(), String::new()),
    }
}

/// The pins an SBOM lists, as `(name, version)`.
pub fn pins_listed(document: &Value) -> Vec<(String, String)> {
    let mut listed = Vec::new();
    let mut visit = |component: &Value| {
        if let (Some(reference), Some(version)) = (
            component["bom-ref"]
                .as_str()
                .and_then(|reference| reference.strip_prefix("pin:")),
            component["version"].as_str(),
        ) {
            listed.push((reference.to_owned(), version.to_owned()));
        }
    };
    for component in document["components"].as_array().into_iter().flatten() {
        visit(component);
        for inner in component["components"].as_array().into_iter().flatten() {
            visit(inner);
        }
    }
    listed.sort();
    listed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_split_into_repository_and_tag() {
        assert_eq!(
            split_reference("ghcr.io/a/b:1.0"),
            ("ghcr.io/a/b", Some("1.0"))
        );
        assert_eq!(
            split_reference("127.0.0.1:5000/a/b"),
            ("127.0.0.1:5000/a/b", None)
        );
        assert_eq!(
            split_identity("Mira C <m@example.org>"),
            ("Mira C".to_owned(), "m@example.org".to_owned())
        );
    }
}
