//! The build record attached to a pushed image, under the tag `sha256-HEX.record` beside the
//! cosign tags: what forge.lock records of the build (without the attachments, which the tag
//! scheme finds), the pins.toml it was built from, and the file each overlay put in the image.
//! With it, `forge verify-digest REF`, `forge pull REF` and `forge report REF` need nothing but
//! the image reference (and the lab's public key).
//!
//! The document is JSON of media type `application/vnd.dev.forge.record.v1+json`:
//!
//! ```json
//! { "mediaType": "application/vnd.dev.forge.record.v1+json",
//!   "record": { "version": 1, "inputs": {...}, "base": {...}, "image": {...}, "tags": [...], ... },
//!   "pins": "<the pins.toml text, whose sha256 is record.inputs.pins>",
//!   "files": [{ "path": "/usr/...", "digest": "sha256:..." }] }
//! ```
//!
//! A signed push (`--sign`) attaches it inside a DSSE envelope of the same payload type, signed
//! with the build's key; an unsigned push attaches the document itself. Every part is bound to
//! what it claims: the pins.toml text hashes to the recorded input, and the record names the
//! manifest it is attached to as a pushed tag's digest.

use serde::{Deserialize, Serialize};

use super::cosign::{self, Attachment, Layer};
use super::dsse::{self, Envelope};
use super::keys::{SigningKey, VerifyingKey};
use crate::context::overlays::ExpectedFile;
use crate::lock::Record;
use crate::pins::Pins;
use crate::types::oci::Digest;

/// The media type of the record document, and the payload type of its envelope.
pub const MEDIA_TYPE: &str = "application/vnd.dev.forge.record.v1+json";

/// The record document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Document {
    /// [`MEDIA_TYPE`].
    #[serde(rename = "mediaType")]
    pub media_type: String,
    /// What forge.lock records of the build, without its attachments.
    pub record: Record,
    /// The pins.toml the image was built from, as text.
    pub pins: String,
    /// Every file the overlays put in the image, with its digest there.
    pub files: Vec<ExpectedFile>,
}

impl Document {
    /// The document of `record`'s build, made from `pins` (pins.toml's text) and `files`.
    pub fn new(record: &Record, pins: String, files: Vec<ExpectedFile>) -> Document {
        let mut record = record.clone();
        record.attachments.clear();
        Document {
            media_type: MEDIA_TYPE.to_owned(),
            record,
            pins,
            files,
        }
    }

    /// The attachment that carries it: the document itself, or with `key` a DSSE envelope of it.
    pub fn attachment(&self, key: Option<&SigningKey>) -> Attachment {
        let bytes = serde_json::to_vec_pretty(self).expect("the record serializes");
        let layer = match key {
            None => Layer {
                media_type: MEDIA_TYPE.to_owned(),
                bytes,
                annotations: Default::default(),
            },
            Some(key) => Layer {
                media_type: cosign::DSSE_ENVELOPE.to_owned(),
                bytes: serde_json::to_vec(&Envelope::sign(MEDIA_TYPE, &bytes, key))
                    .expect("JSON serializes"),
                annotations: [(
                    cosign::PREDICATE_ANNOTATION.to_owned(),
                    MEDIA_TYPE.to_owned(),
                )]
                .into(),
            },
        };
        Attachment::of(vec![layer])
    }

    /// The pins it was built from, loaded as pins.toml is; `origin` names where they came from
    /// in messages.
    pub fn pins(&self, origin: &str) -> Result<Pins, crate::pins::LoadError> {
        crate::pins::parse_detached(std::path::Path::new(origin), &self.pins)
    }
}

/// How the record attached to a manifest was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signed {
    /// Inside an envelope that verifies with the key asked for.
    ByKey,
    /// As a plain document, or in an envelope no key was asked of: trusted only as far as the
    /// registry is.
    NotChecked,
}

/// Why an attached record is not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordRefused {
    /// No layer of the record manifest is a record or an envelope of one.
    #[error("the record attachment holds no build record")]
    Empty,
    /// The key was asked for, and only an unsigned record is attached.
    #[error("the attached build record is not signed (found a plain record, signed by no key)")]
    Unsigned,
    /// The key was asked for, and no envelope verifies with it.
    #[error("the attached build record is not signed by {key} (found {found})")]
    OtherKey {
        /// Where the key came from.
        key: String,
        /// What signed the envelopes found, by key id.
        found: String,
    },
    /// The document does not read as a record.
    #[error("the attached build record does not read: {0}")]
    Invalid(String),
    /// The pins.toml text is not the one the record names.
    #[error("the attached pins.toml hashes to {found}, not to the {recorded} the record names")]
    PinsDiffer {
        /// What the record names.
        recorded: Digest,
        /// What the text hashes to.
        found: Digest,
    },
    /// The record describes another manifest than the one it is attached to.
    #[error(
        "the attached build record describes {recorded}, not the manifest {subject} it is attached to"
    )]
    OtherSubject {
        /// The manifest it is attached to.
        subject: Digest,
        /// What the record's pushed tags name.
        recorded: String,
    },
}

impl crate::diagnostics::Advise for RecordRefused {
    fn advice(&self) -> crate::diagnostics::Advice {
        crate::diagnostics::Advice::Nothing(
            "the command that read the record says what to do with the image",
        )
    }

    fn exit_status(&self) -> crate::diagnostics::ExitStatus {
        crate::diagnostics::ExitStatus::Failure
    }
}

crate::advised!(RecordRefused);

/// One layer of a record attachment, as the registry lists it and serves its blob.
#[derive(Debug, Clone)]
pub struct FoundLayer {
    /// Its media type.
    pub media_type: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// The record among `layers` attached to `subject`: with `key`, only one whose envelope
/// verifies with it; without, the first that reads. Then its parts are bound to each other and
/// to `subject`.
pub fn read(
    layers: &[FoundLayer],
    subject: &Digest,
    key: Option<&VerifyingKey>,
) -> Result<(Document, Signed), RecordRefused> {
    let (bytes, signed) = chosen(layers, key)?;
    let document: Document = serde_json::from_slice(&bytes)
        .map_err(|error| RecordRefused::Invalid(error.to_string()))?;
    bound(&document, subject)?;
    Ok((document, signed))
}

/// The record's bytes among `layers`: with `key`, the payload of an envelope it signed; without,
/// a plain record, else any envelope's payload.
fn chosen(
    layers: &[FoundLayer],
    key: Option<&VerifyingKey>,
) -> Result<(Vec<u8>, Signed), RecordRefused> {
    let mut plain = None;
    let mut envelopes = Vec::new();
    for layer in layers {
        match layer.media_type.as_str() {
            MEDIA_TYPE => plain = plain.or(Some(layer.bytes.clone())),
            cosign::DSSE_ENVELOPE => {
                if let Ok(envelope) = serde_json::from_slice::<Envelope>(&layer.bytes)
                    && envelope.payload_type == MEDIA_TYPE
                {
                    envelopes.push(envelope);
                }
            }
            _ => {}
        }
    }
    let Some(key) = key else {
        let payload = plain.or_else(|| {
            use base64::Engine as _;
            envelopes.iter().find_map(|envelope| {
                base64::engine::general_purpose::STANDARD
                    .decode(&envelope.payload)
                    .ok()
            })
        });
        return Ok((payload.ok_or(RecordRefused::Empty)?, Signed::NotChecked));
    };
    if let Some(payload) = envelopes
        .iter()
        .find_map(|envelope| envelope.verified_payload(key))
    {
        return Ok((payload, Signed::ByKey));
    }
    if envelopes.is_empty() {
        return Err(if plain.is_some() {
            RecordRefused::Unsigned
        } else {
            RecordRefused::Empty
        });
    }
    let ids: Vec<String> = envelopes
        .iter()
        .flat_map(|envelope| &envelope.signatures)
        .map(|signature| format!("key id {}", short(&signature.keyid)))
        .collect();
    Err(RecordRefused::OtherKey {
        key: format!("{} (key id {})", key.origin, short(&dsse::key_id(key))),
        found: if ids.is_empty() {
            "an envelope without signatures".to_owned()
        } else {
            format!("signatures by {}", ids.join(", "))
        },
    })
}

/// Refuses a document whose pins.toml is not the one it records, or that does not describe
/// the manifest `subject` it is attached to.
fn bound(document: &Document, subject: &Digest) -> Result<(), RecordRefused> {
    if document.media_type != MEDIA_TYPE {
        return Err(RecordRefused::Invalid(format!(
            "its mediaType is {:?}, not {MEDIA_TYPE}",
            document.media_type
        )));
    }
    let found = cosign::digest_of(document.pins.as_bytes());
    if found != document.record.inputs.pins {
        return Err(RecordRefused::PinsDiffer {
            recorded: document.record.inputs.pins.clone(),
            found,
        });
    }
    let mut pushed: Vec<&Digest> = document
        .record
        .tags
        .iter()
        .filter_map(|tag| tag.pushed.as_ref())
        .collect();
    if pushed.contains(&subject) {
        return Ok(());
    }
    pushed.dedup();
    Err(RecordRefused::OtherSubject {
        subject: subject.clone(),
        recorded: if pushed.is_empty() {
            "no pushed manifest".to_owned()
        } else {
            pushed
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        },
    })
}

fn short(id: &str) -> &str {
    &id[..id.len().min(12)]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn document() -> (Document, Digest) {
        let pins = "# pins\n".to_owned();
        let mut record = Record::sample();
        record.inputs.pins = cosign::digest_of(pins.as_bytes());
        let subject = record.tags[0].pushed.clone().unwrap();
        (Document::new(&record, pins, Vec::new()), subject)
    }

    fn layers(attachment: &Attachment) -> Vec<FoundLayer> {
        attachment
            .layers
            .iter()
            .map(|layer| FoundLayer {
                media_type: layer.media_type.to_owned(),
                bytes: layer.bytes.clone(),
            })
            .collect()
    }

    #[test]
    fn a_signed_record_reads_with_its_key_and_is_refused_with_another() {
        let (document, subject) = document();
        let key = SigningKey::generate();
        let signed = layers(&document.attachment(Some(&key)));
        let (read_back, how) = read(&signed, &subject, Some(&key.verifying_key())).unwrap();
        assert_eq!((read_back, how), (document.clone(), Signed::ByKey));
        let other = SigningKey::generate().verifying_key();
        let refused = read(&signed, &subject, Some(&other)).unwrap_err();
        assert!(
            matches!(&refused, RecordRefused::OtherKey { found, .. } if found.starts_with("signatures by key id ")),
            "{refused}"
        );
        // Without a key it reads, and says it was not checked.
        assert_eq!(read(&signed, &subject, None).unwrap().1, Signed::NotChecked);
    }

    #[test]
    fn an_unsigned_record_is_refused_when_a_key_is_asked_for() {
        let (document, subject) = document();
        let plain = layers(&document.attachment(None));
        assert_eq!(
            read(&plain, &subject, None).unwrap(),
            (document, Signed::NotChecked)
        );
        let key = SigningKey::generate().verifying_key();
        assert_eq!(
            read(&plain, &subject, Some(&key)).unwrap_err(),
            RecordRefused::Unsigned
        );
    }

    #[test]
    fn a_record_is_bound_to_its_pins_and_its_manifest() {
        let (mut document, subject) = document();
        let other = Digest::filled('e');
        assert!(matches!(
            read(&layers(&document.attachment(None)), &other, None).unwrap_err(),
            RecordRefused::OtherSubject { .. }
        ));
        document.pins.push_str("# edited\n");
        assert!(matches!(
            read(&layers(&document.attachment(None)), &subject, None).unwrap_err(),
            RecordRefused::PinsDiffer { .. }
        ));
    }
}
