//! After a signed push: what forge knows of the build (`Facts`) in; the signature, the SBOM and
//! the signed provenance attached to the pushed manifest in the registry out, under cosign's
//! tags, with what forge.lock records of each.
//!
//! The SBOM travels unsigned, as cosign attaches it; the provenance names the SBOM's digest, so
//! the signature over the provenance covers the SBOM too.

use std::collections::BTreeMap;

use crate::context::overlays::ExpectedFile;
use crate::lock::{AttachmentRecord, Record};
use crate::pins::{AssertSource, GitSource, PythonSource, WheelSet};
use crate::pins::{Pin, Source};
use crate::recipe::Recipe;
use crate::registry::{RegistryClient, RegistryError, RemoteRepository};
use crate::types::oci::Digest;

use super::cosign::{self, Attachment, Kind, Layer};
use super::dsse::{self, Envelope};
use super::keys::{SigningKey, VerifyingKey};
use super::{Facts, OverlayFact, PinFact, provenance, sbom};

/// The three attachments of `facts`' manifest, signed with `key`, in upload order: the SBOM
/// first (the provenance names it), the provenance, the signature last (a verifier that finds
/// the signature finds the rest).
pub fn documents(facts: &Facts, key: &SigningKey) -> Vec<(Kind, Attachment)> {
    let sbom = serde_json::to_vec_pretty(&sbom::document(facts)).expect("JSON serializes");
    let sbom_digest = cosign::digest_of(&sbom);
    let statement = serde_json::to_vec(&provenance::statement(facts, sbom_digest.as_str()))
        .expect("JSON serializes");
    let envelope = Envelope::sign(dsse::IN_TOTO, &statement, key);
    let payload = cosign::payload(facts.repository.as_str(), &facts.manifest);
    let signature = key.sign(&payload);
    vec![
        (
            Kind::Sbom,
            Attachment::of(vec![Layer {
                media_type: cosign::CYCLONEDX.to_owned(),
                bytes: sbom,
                annotations: BTreeMap::new(),
            }]),
        ),
        (
            Kind::Attestation,
            Attachment::of(vec![Layer {
                media_type: cosign::DSSE_ENVELOPE.to_owned(),
                bytes: serde_json::to_vec(&envelope).expect("JSON serializes"),
                // cosign's own attestations carry the signature annotation empty (the
                // signature is in the envelope), and cosign refuses a layer without it.
                annotations: BTreeMap::from([
                    (
                        cosign::PREDICATE_ANNOTATION.to_owned(),
                        provenance::PREDICATE.to_owned(),
                    ),
                    (cosign::SIGNATURE_ANNOTATION.to_owned(), String::new()),
                ]),
            }]),
        ),
        (
            Kind::Signature,
            Attachment::of(vec![cosign::signature_layer(payload, signature)]),
        ),
    ]
}

/// Uploads `documents` for `subject` into `repository`: every blob, then each manifest under
/// its cosign tag. A signature or an attestation is added to what the tag holds, as cosign adds
/// one: every layer already there is kept but the one `key` made before for this manifest,
/// which the new one replaces, so that another signer's co-signature survives a re-sign.
/// Returns what forge.lock records of each.
pub fn upload(
    client: &RegistryClient,
    repository: &RemoteRepository,
    subject: &Digest,
    documents: &[(Kind, Attachment)],
    key: Option<&VerifyingKey>,
) -> Result<Vec<AttachmentRecord>, RegistryError> {
    // Everything is read before anything is written: a registry that cannot be read leaves
    // the attachments as they were.
    let mut prepared = Vec::new();
    for (kind, attachment) in documents {
        prepared.push(match (kind, key) {
            (Kind::Signature | Kind::Attestation, Some(key)) => (
                *kind,
                merged(client, repository, *kind, subject, attachment, key)?,
            ),
            _ => (*kind, attachment.clone()),
        });
    }
    let mut records = Vec::new();
    for (kind, attachment) in &prepared {
        client.push_blob(repository, &attachment.config)?;
        for layer in &attachment.layers {
            client.push_blob(repository, &layer.bytes)?;
        }
        let tag = kind.tag(subject);
        let manifest =
            client.push_manifest(repository, &tag, cosign::OCI_MANIFEST, &attachment.manifest)?;
        records.push(AttachmentRecord {
            kind: *kind,
            subject: subject.clone(),
            tag,
            manifest,
            content: attachment
                .layers
                .last()
                .expect("an attachment has a layer")
                .digest(),
        });
    }
    Ok(records)
}

/// `attachment`'s layers after those `repository` already holds under the tag of `kind` for
/// `subject`, less any `key` made for `subject` (forge's own, from an earlier signing).
fn merged(
    client: &RegistryClient,
    repository: &RemoteRepository,
    kind: Kind,
    subject: &Digest,
    attachment: &Attachment,
    key: &VerifyingKey,
) -> Result<Attachment, RegistryError> {
    let Some(held) = listed(client, repository, kind, subject)? else {
        return Ok(attachment.clone());
    };
    if !held.readable {
        // Written over, its layers (another signer's, say) would be lost.
        return Err(RegistryError::Invalid {
            url: format!("{repository}:{}", kind.tag(subject)),
            message: "the manifest under this tag is not an image manifest forge can add a layer to; move it away, or sign elsewhere".to_owned(),
        });
    }
    let mut layers = Vec::new();
    for listed in held.layers {
        let bytes = client.blob(repository, &listed.digest)?;
        let layer = Layer {
            media_type: listed.media_type,
            bytes,
            annotations: listed.annotations,
        };
        if !made_by(&layer, kind, subject, key) {
            layers.push(layer);
        }
    }
    layers.extend(attachment.layers.iter().cloned());
    Ok(Attachment::of(layers))
}

/// Whether `layer` is a signature (or a provenance envelope) that `key` made for `subject`.
fn made_by(layer: &Layer, kind: Kind, subject: &Digest, key: &VerifyingKey) -> bool {
    match kind {
        Kind::Signature => {
            let signature = layer
                .annotations
                .get(cosign::SIGNATURE_ANNOTATION)
                .map_or("", String::as_str);
            key.verifies(&layer.bytes, signature)
                && cosign::claims(&layer.bytes)
                    .is_some_and(|claims| claims.digest == subject.as_str())
        }
        _ => provenance::signed_by(&layer.bytes, key).is_ok_and(|stated| stated.names(subject)),
    }
}

/// One layer of an attachment manifest, as the registry lists it.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct ListedLayer {
    /// Its media type.
    #[serde(rename = "mediaType", default)]
    pub media_type: String,
    /// Its blob's digest.
    pub digest: Digest,
    /// Its annotations.
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
}

/// An attachment manifest as the registry holds it.
#[derive(Debug, Clone)]
pub struct Listed {
    /// The manifest's digest.
    pub manifest: Digest,
    /// Its layers, in order (none when the manifest does not read as an image manifest).
    pub layers: Vec<ListedLayer>,
    /// Whether it reads as an image manifest.
    pub readable: bool,
}

/// What `repository` holds under the tag of `kind` for the manifest `subject`; `None` when the
/// tag does not exist.
pub fn listed(
    client: &RegistryClient,
    repository: &RemoteRepository,
    kind: Kind,
    subject: &Digest,
) -> Result<Option<Listed>, RegistryError> {
    #[derive(serde::Deserialize)]
    struct Layers {
        layers: Option<Vec<ListedLayer>>,
    }
    use crate::registry::Registry as _;
    let served = match client.manifest(repository, &kind.tag(subject)) {
        Ok(served) => served,
        Err(RegistryError::NotFound { .. }) => return Ok(None),
        Err(error) => return Err(error),
    };
    // An image manifest has its layers; an index or anything else has none to add to.
    let layers = serde_json::from_slice::<Layers>(&served.body)
        .ok()
        .and_then(|manifest| manifest.layers);
    Ok(Some(Listed {
        readable: layers.is_some(),
        layers: layers.unwrap_or_default(),
        manifest: served.claimed.unwrap_or(served.received),
    }))
}

/// Each pin as the SBOM and the provenance list it: a wheel set as one entry per wheel.
pub fn pin_facts<'a>(pins: impl IntoIterator<Item = &'a Pin>) -> Vec<PinFact> {
    let hashed = |files: &[crate::pins::HashedFile]| -> Vec<(String, String)> {
        files
            .iter()
            .map(|file| (file.file.to_string(), file.sha256.to_string()))
            .collect()
    };
    let mut facts = Vec::new();
    for pin in pins {
        let name = pin.name.to_string();
        let fact = |package: Option<String>, version: String, in_base: bool| PinFact {
            name: name.clone(),
            package,
            version,
            url: None,
            branch: None,
            files: Vec::new(),
            download: None,
            in_base,
        };
        match &pin.source {
            Source::Python(PythonSource {
                package,
                version,
                files,
                ..
            }) => facts.push(PinFact {
                files: hashed(files),
                ..fact(
                    Some(package.to_string()),
                    version.to_string(),
                    pin.in_base(),
                )
            }),
            Source::Wheels(WheelSet {
                version,
                wheels,
                url,
                ..
            }) => {
                facts.extend(wheels.iter().map(|wheel| {
                    let download = wheel.url(url.as_ref(), version);
                    let files = match (&download, &wheel.file, &wheel.sha256) {
                        (Some(_), Some(file), Some(sha256)) => {
                            vec![(file.expand(version), sha256.to_string())]
                        }
                        (Some(_), _, _) => Vec::new(),
                        (None, _, _) => hashed(&wheel.files),
                    };
                    PinFact {
                        name: format!("{name}/{}", wheel.package),
                        files,
                        download: download.map(|download| download.to_string()),
                        ..fact(
                            Some(wheel.package.to_string()),
                            wheel.version(version),
                            false,
                        )
                    }
                }));
            }
            Source::Git(GitSource { url, branch, rev }) => facts.push(PinFact {
                url: Some(url.to_string()),
                branch: branch.as_ref().map(ToString::to_string),
                ..fact(None, rev.to_string(), false)
            }),
            Source::Assert(AssertSource { version, .. }) => {
                facts.push(fact(None, version.to_string(), true));
            }
        }
    }
    facts
}

/// The pins of `pins` as `(name, version)`, sorted: what the SBOM must list.
pub fn pins_expected(pins: &crate::pins::Pins) -> Vec<(String, String)> {
    let mut pins: Vec<(String, String)> = pin_facts(pins.pins.values())
        .into_iter()
        .map(|pin| (pin.name, pin.version))
        .collect();
    pins.sort();
    pins
}

/// The overlays of `recipe`, each with the files it puts in the image (`files`, read from the
/// context the image was built from) and the patch files `record` says were applied to it.
pub fn overlay_facts(recipe: &Recipe, record: &Record, files: &[ExpectedFile]) -> Vec<OverlayFact> {
    recipe
        .pins
        .overlays
        .iter()
        .map(|overlay| {
            let to = overlay.to.as_str().trim_end_matches('/');
            let series: Vec<&str> = recipe
                .pins
                .patches
                .iter()
                .filter(|entry| matches!(&entry.onto, crate::pins::Onto::Folder(folder) if folder.as_str() == overlay.from.as_str()))
                .map(|entry| entry.series.as_str())
                .collect();
            OverlayFact {
                from: overlay.from.to_string(),
                to: overlay.to.to_string(),
                files: files
                    .iter()
                    .filter(|file| file.path.starts_with(&format!("{to}/")))
                    .map(|file| super::FileFact {
                        path: file.path.clone(),
                        sha256: file.digest.hex().to_owned(),
                    })
                    .collect(),
                patches: record
                    .patches
                    .iter()
                    .filter(|patch| {
                        series
                            .iter()
                            .any(|series| patch.file.starts_with(&format!("{series}/")))
                    })
                    .map(|patch| patch.file.clone())
                    .collect(),
            }
        })
        .collect()
}
