//! The layer's SBOM: what forge put into the image, as CycloneDX 1.5 JSON. CycloneDX rather
//! than SPDX because it has first-class places for what this layer is made of: a container
//! component for the base (by digest, with what the layer only asserts of it as its
//! components), package URLs for pins, `pedigree` for the patches applied to a component
//! (each commit with its author), and file components with hashes for the overlay files.

use serde_json::{Value, json};
use sha2::Digest as _;

use super::Facts;

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
        "serialNumber": serial_number(facts),
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

/// A stable serial number: a UUID made from the image's manifest digest, so that the same
/// image always has the same SBOM.
fn serial_number(facts: &Facts) -> String {
    let hash = sha2::Sha256::digest(facts.manifest.as_str().as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&hash[..16]);
    bytes[6] = (bytes[6] & 0x0f) | 0x50;
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

/// `pkg:oci/NAME@DIGEST?repository_url=REGISTRY/PATH`.
fn oci_purl(repository: &str, digest: &str) -> String {
    let (location, name) = repository.rsplit_once('/').unwrap_or(("", repository));
    let mut purl = format!("pkg:oci/{name}@{}", digest.replace(':', "%3A"));
    if !location.is_empty() {
        purl.push_str(&format!("?repository_url={location}/{name}"));
    }
    purl
}

fn base_component(facts: &Facts) -> Value {
    let (name, _) = split_reference(facts.base.image.as_str());
    let mut component = json!({
        "type": "container",
        "bom-ref": "base",
        "name": name,
        // A base that only the daemon holds has no registry digest: its image id stands in.
        "version": facts.base.digest.as_ref().or(facts.base.id.as_ref()).map_or(facts.base.image.as_str(), crate::types::oci::Digest::as_str),
        "description": format!("the base image {}", facts.base.image),
        "components": facts.pins.iter().filter(|pin| pin.in_base).map(pin_component).collect::<Vec<_>>(),
    });
    if let Some(id) = &facts.base.id {
        component["properties"] = json!([{ "name": "forge:image-id", "value": id }]);
    }
    if let Some(digest) = &facts.base.digest {
        component["purl"] = json!(oci_purl(name, digest.as_str()));
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
            let patches: Vec<&crate::lock::PatchRecord> = facts
                .patches
                .iter()
                .filter(|patch| overlay.patches.contains(&patch.file))
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

fn pedigree(patches: &[&crate::lock::PatchRecord]) -> Value {
    json!({
        "commits": patches.iter().map(|patch| {
            let (name, email) = split_identity(&patch.author);
            let mut commit = json!({
                "uid": patch.applied.clone().or_else(|| patch.original.clone()).unwrap_or_default(),
                "author": { "name": name, "email": email },
                "message": patch.subject,
            });
            if let Some(original) = &patch.original {
                commit["url"] = json!(format!("urn:git:commit:{original}"));
            }
            commit
        }).collect::<Vec<_>>(),
        "patches": patches.iter().map(|patch| json!({
            "type": "unofficial",
            "diff": { "url": format!("file:{}", patch.file) },
        })).collect::<Vec<_>>(),
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
