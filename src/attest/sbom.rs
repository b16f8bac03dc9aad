//! The layer's SBOM: what forge put into the image, as CycloneDX 1.5 JSON. CycloneDX rather
//! than SPDX because it has first-class places for what this layer is made of: a container
//! component for the base (by digest, with what the layer only asserts of it as its
//! components), package URLs for pins, `pedigree` for the patches applied to a component
//! (each commit with its author), and file components with hashes for the overlay files.

use base64::Engine as _;
use serde_json::{Value, json};

use super::Facts;
use crate::types::oci::ImageRef;

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
    json!({
        "bomFormat": "CycloneDX",
        "specVersion": "1.5",
        "serialNumber": serial_number(),
        "version": 1,
        "metadata": {
            "timestamp": facts.finished,
            "tools": { "components": [{
                "type": "application",
                "name": "forge",
                "version": facts.forge_version,
            }]},
            "component": {
                "type": "container",
                "bom-ref": "image",
                "name": facts.repository,
                "version": facts.manifest.as_str(),
                "purl": oci_purl(facts.repository.as_str(), facts.manifest.as_str()),
            },
        },
        "components": components,
    })
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

fn base_component(facts: &Facts) -> Value {
    let (name, _) = split_reference(facts.base.image.as_str());
    let platform = facts.platform.as_ref().map(ToString::to_string);
    let mut component = json!({
        "type": "container",
        "bom-ref": "base",
        "name": name,
        // A base that only the daemon holds has no registry digest: its image id stands in.
        "version": facts.base.digest.as_ref().or(facts.base.id.as_ref()).map_or(facts.base.image.as_str(), crate::types::oci::Digest::as_str),
        "description": format!("the base image {}", facts.base.image),
        "purl": docker_purl(&facts.base.image, platform.as_deref()),
        "components": facts.pins.iter().filter(|pin| pin.in_base).map(pin_component).collect::<Vec<_>>(),
    });
    if let Some(id) = &facts.base.id {
        component["properties"] = json!([{ "name": "dev.forge:image-id", "value": id }]);
    }
    if let Some(digest) = &facts.base.digest {
        component["hashes"] = json!([{ "alg": "SHA-256", "content": digest.hex() }]);
    }
    component
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

fn pin_component(pin: &super::PinFact) -> Value {
    let mut component = json!({
        "type": "library",
        "bom-ref": format!("pin:{}", pin.name),
        "name": pin.package.clone().unwrap_or_else(|| pin.name.clone()),
        "version": pin.version,
    });
    if let Some(purl) = pin.purl() {
        component["purl"] = json!(purl);
    }
    if let Some(url) = &pin.url {
        component["externalReferences"] = json!([{ "type": "vcs", "url": url }]);
    }
    component
}

/// One component per overlay folder, its files (with the sha256 the image holds) as its
/// components and the patches applied to it as its pedigree.
fn overlay_components(facts: &Facts) -> Vec<Value> {
    facts
        .overlays
        .iter()
        .map(|overlay| {
            let files: Vec<Value> = overlay
                .files
                .iter()
                .map(|file| {
                    json!({
                        "type": "file",
                        "bom-ref": format!("file:{}", file.path),
                        "name": file.path,
                        "hashes": [{ "alg": "SHA-256", "content": file.sha256 }],
                    })
                })
                .collect();
            let patches: Vec<&super::PatchFact> = facts
                .patches
                .iter()
                .filter(|patch| overlay.patches.contains(&patch.record.file))
                .collect();
            let mut component = json!({
                "type": "library",
                "bom-ref": format!("overlay:{}", overlay.from),
                "name": overlay.from,
                "description": format!("recipe files copied to {}", overlay.to),
                "components": files,
            });
            if !patches.is_empty() {
                component["pedigree"] = pedigree(&patches);
            }
            component
        })
        .collect()
}

/// The patches applied to an overlay: each commit with its author, and each patch itself
/// (base64, when it is small enough to carry).
fn pedigree(patches: &[&super::PatchFact]) -> Value {
    json!({
        "commits": patches.iter().map(|patch| {
            let record = &patch.record;
            let (name, email) = split_identity(&record.author);
            let mut author = json!({ "name": name });
            if !email.is_empty() {
                author["email"] = json!(email);
            }
            let mut commit = json!({ "author": author, "message": record.subject });
            if let Some(uid) = record.applied.as_ref().or(record.original.as_ref()) {
                commit["uid"] = json!(uid);
            }
            commit
        }).collect::<Vec<_>>(),
        "patches": patches.iter().map(|patch| {
            let mut diff = json!({});
            if let Some(text) = &patch.text {
                diff["text"] = json!({
                    "contentType": "text/x-diff",
                    "encoding": "base64",
                    "content": base64::engine::general_purpose::STANDARD.encode(text),
                });
            }
            json!({ "type": "unofficial", "diff": diff })
        }).collect::<Vec<_>>(),
    })
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
