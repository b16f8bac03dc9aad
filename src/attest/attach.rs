//! After a signed push: what forge knows of the build (`Facts`) in; the signature, the SBOM and
//! the signed provenance attached to the pushed manifest in the registry out, under cosign's
//! tags, with what forge.lock records of each.
//!
//! The SBOM travels unsigned, as cosign attaches it; the provenance names the SBOM's digest, so
//! the signature over the provenance covers the SBOM too.

use std::collections::BTreeMap;

use crate::context::overlays::ExpectedFile;
use crate::lock::{AttachmentRecord, Record};
use crate::pins::Pin;
use crate::recipe::Recipe;
use crate::registry::{RegistryClient, RegistryError, RemoteRepository, referrers};
use crate::types::manifest::{Descriptor, ImageManifest};
use crate::types::oci::Digest;

use super::bundle;
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

/// The signature and the provenance of `documents` (made by `documents` with `key`) as cosign
/// 3 writes them: a bundle of a signature statement about the manifest, and a bundle of the
/// very provenance envelope the `.att` tag holds.
pub fn bundles(documents: &[(Kind, Attachment)], facts: &Facts, key: &SigningKey) -> Vec<Bundled> {
    let verifying = key.verifying_key();
    let mut bundled = Vec::new();
    let provenance = documents
        .iter()
        .find(|(kind, _)| *kind == Kind::Attestation)
        .and_then(|(_, attachment)| attachment.layers.first())
        .and_then(|layer| serde_json::from_slice::<Envelope>(&layer.bytes).ok());
    if let Some(envelope) = provenance {
        bundled.push(Bundled {
            kind: Kind::AttestationBundle,
            bundle: bundle::of_envelope(&envelope, &verifying),
            predicate_type: provenance::PREDICATE,
        });
    }
    let statement = bundle::sign_statement(facts.repository.as_str(), &facts.manifest);
    let envelope = Envelope::sign(dsse::IN_TOTO, &statement, key);
    bundled.push(Bundled {
        kind: Kind::SignatureBundle,
        bundle: bundle::of_envelope(&envelope, &verifying),
        predicate_type: bundle::SIGN_PREDICATE,
    });
    bundled
}

/// A bundle to attach as a referrer of the image.
#[derive(Debug, Clone)]
pub struct Bundled {
    /// `SignatureBundle` or `AttestationBundle`.
    pub kind: Kind,
    /// The bundle.
    pub bundle: Vec<u8>,
    /// The predicate type of the statement it holds.
    pub predicate_type: &'static str,
}

/// Attaches each of `bundled` to `subject` in `repository` as a referrer: the bundle and its
/// manifest pushed, and where the registry did not index it (no referrers API), added to the
/// index under the referrers tag, in place of any bundle `key` made before for `subject` with
/// the same predicate (another signer's stays). Returns what forge.lock records of each.
pub fn upload_bundles(
    client: &RegistryClient,
    repository: &RemoteRepository,
    subject: &Digest,
    bundled: &[Bundled],
    key: &VerifyingKey,
) -> Result<Vec<AttachmentRecord>, RegistryError> {
    use crate::registry::Registry as _;
    let image = client.manifest(repository, subject.as_str())?;
    let described = bundle::Subject {
        media_type: image.media_type.as_str().to_owned(),
        size: image.body.len() as u64,
        digest: subject.clone(),
    };
    let mut records = Vec::new();
    for bundled in bundled {
        let referrer =
            bundle::Referrer::new(&described, bundled.bundle.clone(), bundled.predicate_type);
        client.push_blob(repository, bundle::EMPTY_BLOB)?;
        client.push_blob(repository, &referrer.bundle)?;
        let (manifest, indexed) = client.push_referrer(repository, &referrer.manifest)?;
        let tag = if indexed {
            String::new()
        } else {
            let listed = client.referrers(repository, subject)?;
            let mut entries = Vec::new();
            for (entry, descriptor) in listed.entries.iter().zip(listed.descriptors()) {
                let replaced = descriptor.is_ok_and(|descriptor| {
                    descriptor.digest == manifest
                        || replaced_by(client, repository, &descriptor, bundled, subject, key)
                });
                if !replaced {
                    entries.push(entry.clone());
                }
            }
            entries.push(referrer.descriptor());
            client.put_referrers_tag(repository, subject, &entries)?;
            referrers::tag(subject)
        };
        records.push(AttachmentRecord {
            kind: bundled.kind,
            subject: subject.clone(),
            tag,
            manifest,
            content: referrer.bundle_digest(),
        });
    }
    Ok(records)
}

/// Whether the referrer `descriptor` names is a bundle `key` made for `subject` of the
/// predicate `bundled` holds: one a new signing replaces. Whatever cannot be read is kept.
fn replaced_by(
    client: &RegistryClient,
    repository: &RemoteRepository,
    descriptor: &Descriptor,
    bundled: &Bundled,
    subject: &Digest,
    key: &VerifyingKey,
) -> bool {
    if !bundle::may_be_bundle(descriptor) {
        return false;
    }
    let Ok(read) = read_referrer(client, repository, descriptor) else {
        return false;
    };
    if read.predicate.as_deref() != Some(bundled.predicate_type) {
        return false;
    }
    let Some(payload) = bundle::envelope(&read.bundle)
        .ok()
        .and_then(|envelope| envelope.verified_payload(key))
    else {
        return false;
    };
    match bundled.kind {
        Kind::SignatureBundle => bundle::signed_subjects(&payload).is_some_and(|subjects| {
            subjects
                .iter()
                .any(|(digest, _)| digest == subject.as_str())
        }),
        _ => serde_json::from_slice(&payload)
            .ok()
            .and_then(|statement| provenance::stated(&statement))
            .is_some_and(|stated| stated.names(subject)),
    }
}

/// A referrer as the registry holds it: the image its manifest names as `subject`, the
/// predicate type its annotation names, and its bundle.
#[derive(Debug, Clone)]
pub struct ReadReferrer {
    /// The manifest's `subject` digest.
    pub subject: Option<Digest>,
    /// The manifest's `dev.sigstore.bundle.predicateType` annotation.
    pub predicate: Option<String>,
    /// The bundle (the manifest's one layer).
    pub bundle: Vec<u8>,
}

/// Reads the referrer `descriptor` names: its manifest (of the digest and at most the size the
/// index gives, and a sigstore bundle's), then its bundle layer (at most
/// `bundle::BUNDLE_LIMIT` bytes). Why not, when it is not such a referrer or cannot be read.
pub fn read_referrer(
    client: &RegistryClient,
    repository: &RemoteRepository,
    descriptor: &Descriptor,
) -> Result<ReadReferrer, String> {
    use crate::registry::Registry as _;
    if descriptor.size > crate::http::BODY_LIMIT.min(bundle::BUNDLE_LIMIT) {
        return Err(format!("a manifest of {} bytes", descriptor.size));
    }
    let served = client
        .manifest(repository, descriptor.digest.as_str())
        .map_err(|error| format!("unreadable ({error})"))?;
    if served.received != descriptor.digest {
        return Err(format!(
            "served as {} for {}",
            served.received, descriptor.digest
        ));
    }
    let manifest =
        ImageManifest::read(&served.body).ok_or_else(|| "not an image manifest".to_owned())?;
    let (Some(layer), 1) = (manifest.layers.first(), manifest.layers.len()) else {
        return Err(format!("{} layers, not one bundle", manifest.layers.len()));
    };
    if !bundle::is_bundle(&layer.media_type) || !bundle::is_bundle(manifest.artifact()) {
        return Err(format!("of type {}", layer.media_type));
    }
    if layer.size > bundle::BUNDLE_LIMIT {
        return Err(format!("a bundle of {} bytes", layer.size));
    }
    let bytes = client
        .blob(repository, &layer.digest)
        .map_err(|error| format!("unreadable ({error})"))?;
    Ok(ReadReferrer {
        subject: manifest.subject.map(|subject| subject.digest),
        predicate: manifest
            .annotations
            .get(bundle::PREDICATE_ANNOTATION)
            .cloned(),
        bundle: bytes,
    })
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

/// The bounds on what forge reads of one manifest's attachments: at most `LAYERS` layers of an
/// attachment are looked at, a layer said to be larger than `LAYER` bytes is not fetched, and
/// no more than `TOTAL` bytes are fetched in all; what falls outside is named, never trusted.
#[derive(Debug, Clone)]
pub struct Budget {
    left: u64,
}

impl Budget {
    /// The most layers of one attachment forge looks at.
    pub const LAYERS: usize = 64;
    /// The largest layer forge fetches: 16 MiB (a record, an SBOM or an envelope is KiBs).
    pub const LAYER: u64 = 16 * 1024 * 1024;
    /// The most bytes forge fetches of one manifest's attachments: 64 MiB.
    pub const TOTAL: u64 = 64 * 1024 * 1024;

    /// A fresh budget.
    pub fn new() -> Self {
        Self { left: Self::TOTAL }
    }

    /// Takes the `index`th layer (of the size its manifest gives) from the budget, or says why
    /// it is not to be fetched.
    pub fn take(&mut self, index: usize, size: u64) -> Result<(), String> {
        if index >= Self::LAYERS {
            return Err(format!("past the first {} layers", Self::LAYERS));
        }
        if size > Self::LAYER {
            return Err(format!("a layer of {size} bytes"));
        }
        if size > self.left {
            return Err(format!(
                "past the {} MiB forge reads of one image's attachments",
                Self::TOTAL >> 20
            ));
        }
        self.left -= size;
        Ok(())
    }
}

impl Default for Budget {
    fn default() -> Self {
        Self::new()
    }
}

/// An attachment manifest as the registry holds it.
#[derive(Debug, Clone)]
pub struct Listed {
    /// The manifest's digest.
    pub manifest: Digest,
    /// Its layers, in order (none when the manifest does not read as an image manifest).
    pub layers: Vec<Descriptor>,
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
    use crate::registry::Registry as _;
    let served = match client.manifest(repository, &kind.tag(subject)) {
        Ok(served) => served,
        Err(RegistryError::NotFound { .. }) => return Ok(None),
        Err(error) => return Err(error),
    };
    // An image manifest has its layers; an index or anything else has none to add to.
    let layers = ImageManifest::read(&served.body).map(|manifest| manifest.layers);
    Ok(Some(Listed {
        readable: layers.is_some(),
        layers: layers.unwrap_or_default(),
        manifest: served.claimed.unwrap_or(served.received),
    }))
}

/// Each pin as the SBOM and the provenance list it: a wheel set as one entry per wheel.
pub fn pin_facts<'a>(pins: impl IntoIterator<Item = &'a Pin>) -> Vec<PinFact> {
    pins.into_iter()
        .flat_map(|pin| pin.as_kind().facts(&pin.name))
        .collect()
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

#[cfg(test)]
mod tests {
    use super::Budget;

    #[test]
    fn the_budget_refuses_a_layer_too_large_too_many_layers_and_past_its_total() {
        let mut budget = Budget::new();
        assert_eq!(
            budget.take(0, Budget::LAYER + 1),
            Err(format!("a layer of {} bytes", Budget::LAYER + 1))
        );
        for index in 0..4 {
            assert_eq!(budget.take(index, Budget::LAYER), Ok(()));
        }
        assert!(
            budget
                .take(4, 1)
                .unwrap_err()
                .starts_with("past the 64 MiB")
        );
        assert_eq!(
            Budget::new().take(Budget::LAYERS, 1),
            Err("past the first 64 layers".to_owned())
        );
    }
}
