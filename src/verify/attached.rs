//! What a tag's manifest carries under cosign's tags, judged with a public key as cosign judges
//! it: every layer is looked at, and an attachment holds when at least one of its layers is
//! valid for the manifest and the key (the others, a co-signer's signature or another image's
//! envelope, are counted in the row's note). The signature must be for the manifest the tag
//! holds in the recorded repository; the provenance signed, its subject that manifest, its
//! inputs the recipe's current ones; the SBOM the one the provenance names, listing the
//! recipe's pins.

use crate::attest::cosign;
use crate::attest::keys::VerifyingKey;
use crate::attest::{provenance, sbom};
use crate::lock::Inputs;
use crate::types::oci::Digest;

use super::{Check, Kind};

/// What the registry holds under one manifest's cosign tags; `None` where the tag is absent.
#[derive(Debug, Clone, Default)]
pub struct Attached {
    /// Each layer of the `.sig` manifest.
    pub signatures: Option<Vec<Layer>>,
    /// Each layer of the `.att` manifest.
    pub attestations: Option<Vec<Layer>>,
    /// The first layer of the `.sbom` manifest: its digest and bytes.
    pub sbom: Option<(Digest, Vec<u8>)>,
}

/// One layer of an attachment: its media type, its blob (read only for the media types the
/// checks read: a simple-signing payload, a DSSE envelope) and its signature annotation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layer {
    /// Its media type.
    pub media_type: String,
    /// Its blob, for a media type the checks read; else empty.
    pub bytes: Vec<u8>,
    /// The `dev.cosignproject.cosign/signature` annotation, when it has one.
    pub signature: Option<String>,
}

impl Layer {
    /// A simple-signing layer: `payload`, signed with `signature`.
    pub fn signed(payload: Vec<u8>, signature: String) -> Self {
        Self {
            media_type: cosign::SIMPLE_SIGNING.to_owned(),
            bytes: payload,
            signature: Some(signature),
        }
    }

    /// A DSSE envelope layer.
    pub fn envelope(bytes: Vec<u8>) -> Self {
        Self {
            media_type: cosign::DSSE_ENVELOPE.to_owned(),
            bytes,
            signature: None,
        }
    }
}

/// What the checks compare with.
#[derive(Debug, Clone, Copy)]
pub struct Expected<'a> {
    /// `registry/repository`, as signatures name it.
    pub repository: &'a str,
    /// The recipe's inputs as they are now.
    pub inputs: &'a Inputs,
    /// The recipe's pins, `(name, version)`, sorted.
    pub pins: &'a [(String, String)],
}

/// What is written when an attachment is absent.
const NOT_ATTACHED: &str = "none attached";

/// Why one layer of an attachment does not count for the manifest and the key: as cosign
/// judges a `.sig` or `.att`, every layer is looked at, and one valid layer is enough.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Ignored {
    /// Of another media type than the attachment's own.
    OtherType(String),
    /// Not JSON of the layer's kind (a DSSE envelope), or a payload forge does not read.
    Unreadable,
    /// No signature by the key (another signer's, say).
    NotSigned,
    /// Signed by the key, but a statement of another type than SLSA provenance.
    NotProvenance,
    /// Signed by the key for this manifest, in another repository.
    OtherRepository(String),
    /// Signed by the key for another manifest.
    OtherImage(String),
}

impl Ignored {
    fn reason(&self, key: &VerifyingKey) -> String {
        match self {
            Ignored::OtherType(media_type) => format!("of type {media_type}"),
            Ignored::Unreadable => "unreadable".to_owned(),
            Ignored::NotSigned => format!("not signed by {}", key.origin),
            Ignored::NotProvenance => "not SLSA provenance".to_owned(),
            Ignored::OtherRepository(repository) => format!("for {repository}"),
            Ignored::OtherImage(digest) => format!("for {digest}"),
        }
    }
}

/// The layers that did not count, as a note: `N of M layers ignored: REASON, ...` (each reason
/// with its count); none when every layer counted.
fn ignored_note(ignored: &[Ignored], layers: usize, key: &VerifyingKey) -> Option<String> {
    if ignored.is_empty() {
        return None;
    }
    let mut reasons: Vec<(String, usize)> = Vec::new();
    let mut sorted = ignored.to_vec();
    sorted.sort();
    for reason in sorted.iter().map(|ignored| ignored.reason(key)) {
        match reasons.last_mut() {
            Some((last, count)) if *last == reason => *count += 1,
            _ => reasons.push((reason, 1)),
        }
    }
    let reasons: Vec<String> = reasons
        .into_iter()
        .map(|(reason, count)| {
            if count == 1 {
                reason
            } else {
                format!("{count} {reason}")
            }
        })
        .collect();
    let noun = if layers == 1 { "layer" } else { "layers" };
    Some(format!(
        "{} of {layers} {noun} ignored: {}",
        ignored.len(),
        reasons.join(", ")
    ))
}

/// What a verdict says when no layer counts: the manifest a layer signed by the key is for
/// (another image's), else the repository one names, else that none is signed by the key.
fn nothing_valid(ignored: &[Ignored], key: &VerifyingKey) -> String {
    ignored
        .iter()
        .find_map(|ignored| match ignored {
            Ignored::OtherImage(digest) => Some(digest.clone()),
            _ => None,
        })
        .or_else(|| {
            ignored.iter().find_map(|ignored| match ignored {
                Ignored::OtherRepository(repository) => {
                    Some(format!("signed by {} for {repository}", key.origin))
                }
                _ => None,
            })
        })
        .unwrap_or_else(|| format!("none signed by {}", key.origin))
}

/// The `signature` row: it holds when at least one simple-signing layer is signed by `key`
/// for `held` in the expected repository (cosign's rule, with the repository a containers
/// policy's `matchRepository` asks for).
fn signature_check(
    reference: &str,
    held: &Digest,
    layers: Option<&[Layer]>,
    key: &VerifyingKey,
    repository: &str,
) -> Check {
    let Some(layers) = layers else {
        return Check::compare(Kind::Signature, reference, held.as_str(), NOT_ATTACHED);
    };
    let mut ignored = Vec::new();
    let mut valid = 0;
    for layer in layers {
        if layer.media_type != cosign::SIMPLE_SIGNING {
            ignored.push(Ignored::OtherType(layer.media_type.clone()));
            continue;
        }
        let signature = layer.signature.as_deref().unwrap_or_default();
        if !key.verifies(&layer.bytes, signature) {
            ignored.push(Ignored::NotSigned);
            continue;
        }
        match cosign::claims(&layer.bytes) {
            None => ignored.push(Ignored::Unreadable),
            Some(claims) if claims.digest != held.as_str() => {
                ignored.push(Ignored::OtherImage(claims.digest));
            }
            Some(claims) if claims.repository != repository => {
                ignored.push(Ignored::OtherRepository(claims.repository));
            }
            Some(_) => valid += 1,
        }
    }
    let actual = if valid > 0 {
        held.to_string()
    } else {
        nothing_valid(&ignored, key)
    };
    Check::compare(Kind::Signature, reference, held.as_str(), actual).noted(ignored_note(
        &ignored,
        layers.len(),
        key,
    ))
}

/// Of the `.att` layers: the statement of the first layer signed by `key` one of whose subjects
/// is `held`, and whether one is (else, of the first signed by `key` for another manifest, to
/// say how it differs), and why each other layer was ignored.
fn provenance_of(
    layers: &[Layer],
    held: &Digest,
    key: &VerifyingKey,
) -> (Option<(provenance::Stated, bool)>, Vec<Ignored>) {
    let mut ignored = Vec::new();
    let mut chosen = None;
    let mut other = None;
    for layer in layers {
        if layer.media_type != cosign::DSSE_ENVELOPE {
            ignored.push(Ignored::OtherType(layer.media_type.clone()));
            continue;
        }
        let stated = match provenance::signed_by(&layer.bytes, key) {
            Ok(stated) => stated,
            Err(why) => {
                ignored.push(match why {
                    provenance::NotSigned::Unreadable => Ignored::Unreadable,
                    provenance::NotSigned::ByKey => Ignored::NotSigned,
                    provenance::NotSigned::NotProvenance => Ignored::NotProvenance,
                });
                continue;
            }
        };
        if !stated.names(held) {
            ignored.push(Ignored::OtherImage(
                stated.subjects.first().cloned().unwrap_or_default(),
            ));
            other.get_or_insert(stated);
        } else if chosen.is_none() {
            chosen = Some(stated);
        }
    }
    let found = chosen
        .map(|stated| (stated, true))
        .or_else(|| other.map(|stated| (stated, false)));
    (found, ignored)
}

/// The rows for the tag `reference`, which holds the manifest `held`.
pub fn checks(
    reference: &str,
    held: &Digest,
    attached: &Attached,
    key: &VerifyingKey,
    expected: Expected<'_>,
) -> Vec<Check> {
    let mut rows = vec![signature_check(
        reference,
        held,
        attached.signatures.as_deref(),
        key,
        expected.repository,
    )];
    let (subject, inputs, named_sbom, note) = match &attached.attestations {
        None => (NOT_ATTACHED.to_owned(), None, None, None),
        Some(layers) => {
            let (stated, ignored) = provenance_of(layers, held, key);
            let note = ignored_note(&ignored, layers.len(), key);
            match stated {
                None => (nothing_valid(&ignored, key), None, None, note),
                Some((stated, valid)) => {
                    let subject = if valid {
                        held.to_string()
                    } else {
                        stated.subjects.first().cloned().unwrap_or_default()
                    };
                    let inputs = stated_inputs(&stated.inputs, expected.inputs);
                    (subject, Some((inputs, valid)), stated.sbom.clone(), note)
                }
            }
        }
    };
    let not_attached = subject == NOT_ATTACHED;
    rows.push(
        Check::compare(Kind::ProvenanceSubject, reference, held.as_str(), &subject).noted(note),
    );
    rows.push(match inputs {
        // Inputs of a statement for another manifest are never this image's.
        Some((inputs, valid)) => Check::new(
            Kind::ProvenanceInputs,
            reference,
            CURRENT_INPUTS,
            &inputs,
            valid && inputs == CURRENT_INPUTS,
        ),
        None if not_attached => Check::compare(
            Kind::ProvenanceInputs,
            reference,
            CURRENT_INPUTS,
            NOT_ATTACHED,
        ),
        None => Check::compare(Kind::ProvenanceInputs, reference, CURRENT_INPUTS, &subject),
    });
    rows.push(sbom_check(reference, attached, named_sbom, expected.pins));
    rows
}

/// What the rows say when the provenance names exactly the current inputs.
const CURRENT_INPUTS: &str = "the recipe's current inputs";

/// `CURRENT_INPUTS` when `stated` are the `current` inputs, else each one that differs as
/// `NAME DIGEST (now DIGEST)`.
fn stated_inputs(stated: &[(String, String)], current: &Inputs) -> String {
    let differing: Vec<String> = current
        .named()
        .iter()
        .filter_map(|(name, digest)| {
            let said = stated
                .iter()
                .find(|(stated, _)| stated == name)
                .map_or("nothing", |(_, digest)| digest.as_str());
            (said != digest.as_str()).then(|| format!("{name} {said} (now {digest})"))
        })
        .collect();
    if differing.is_empty() && stated.len() == current.named().len() {
        CURRENT_INPUTS.to_owned()
    } else if differing.is_empty() {
        "inputs the recipe does not have".to_owned()
    } else {
        differing.join(", ")
    }
}

/// The SBOM row: it must be the SBOM the signed provenance names, and list the pins.
fn sbom_check(
    reference: &str,
    attached: &Attached,
    named: Option<String>,
    pins: &[(String, String)],
) -> Check {
    let listing = |pins: &[(String, String)]| {
        pins.iter()
            .map(|(name, version)| format!("{name}@{version}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let expected = listing(pins);
    let actual = match (&attached.sbom, named) {
        (None, _) => NOT_ATTACHED.to_owned(),
        (Some((digest, _)), named) if named.as_deref() != Some(digest.as_str()) => format!(
            "{digest}, which the signed provenance does not name ({})",
            named
                .as_deref()
                .unwrap_or("no provenance signed by this key names one")
        ),
        (Some((_, bytes)), _) => match serde_json::from_slice(bytes) {
            Ok(document) => listing(&sbom::pins_listed(&document)),
            Err(_) => "not JSON".to_owned(),
        },
    };
    Check::compare(Kind::Sbom, reference, expected, actual)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attest::dsse::{self, Envelope};
    use crate::attest::keys::SigningKey;

    const REPOSITORY: &str = "127.0.0.1:5000/forge/app";

    /// An envelope signed by `key` of a provenance statement whose subject is `subject` and
    /// whose inputs are `inputs`.
    fn envelope(key: &SigningKey, subject: &Digest, inputs: &Inputs) -> Layer {
        let named: serde_json::Map<String, serde_json::Value> = inputs
            .named()
            .iter()
            .map(|(name, digest)| ((*name).to_owned(), serde_json::json!(digest.as_str())))
            .collect();
        let statement = serde_json::json!({
            "_type": provenance::STATEMENT,
            "predicateType": provenance::PREDICATE,
            "subject": [{ "name": REPOSITORY, "digest": { "sha256": subject.hex() } }],
            "predicate": { "buildDefinition": { "externalParameters": { "inputs": named } } },
        });
        let envelope = Envelope::sign(dsse::IN_TOTO, &serde_json::to_vec(&statement).unwrap(), key);
        Layer::envelope(serde_json::to_vec(&envelope).unwrap())
    }

    fn signature(key: &SigningKey, repository: &str, subject: &Digest) -> Layer {
        let payload = cosign::payload(repository, subject);
        let signature = key.sign(&payload);
        Layer::signed(payload, signature)
    }

    fn rows(attached: &Attached, held: &Digest, key: &SigningKey, inputs: &Inputs) -> Vec<Check> {
        let expected = Expected {
            repository: REPOSITORY,
            inputs,
            pins: &[],
        };
        checks("r:latest", held, attached, &key.verifying_key(), expected)
    }

    #[test]
    fn a_foreign_envelope_before_or_after_forges_own_is_ignored_and_counted() {
        let (ours, theirs) = (Digest::filled('1'), Digest::filled('2'));
        let key = SigningKey::generate();
        let inputs = Inputs::sample();
        let foreign = envelope(&key, &theirs, &inputs);
        let own = envelope(&key, &ours, &inputs);
        for layers in [vec![foreign.clone(), own.clone()], vec![own, foreign]] {
            let attached = Attached {
                attestations: Some(layers),
                ..Attached::default()
            };
            let rows = rows(&attached, &ours, &key, &inputs);
            assert!(rows[1].ok, "{:?}", rows[1]);
            assert!(rows[2].ok, "{:?}", rows[2]);
            assert_eq!(
                rows[1].note.as_deref(),
                Some(format!("1 of 2 layers ignored: for {theirs}").as_str())
            );
        }
    }

    #[test]
    fn only_another_images_envelope_fails_naming_that_image() {
        let (ours, theirs) = (Digest::filled('1'), Digest::filled('2'));
        let key = SigningKey::generate();
        let inputs = Inputs::sample();
        let attached = Attached {
            attestations: Some(vec![envelope(&key, &theirs, &inputs)]),
            ..Attached::default()
        };
        let rows = rows(&attached, &ours, &key, &inputs);
        assert!(!rows[1].ok);
        assert_eq!(rows[1].actual, theirs.as_str());
        // Its inputs are the recipe's, but they are another image's inputs.
        assert!(!rows[2].ok, "{:?}", rows[2]);
    }

    #[test]
    fn a_co_signature_by_another_key_is_ignored_and_one_valid_layer_holds() {
        let held = Digest::filled('1');
        let (key, other) = (SigningKey::generate(), SigningKey::generate());
        let attached = Attached {
            signatures: Some(vec![
                signature(&other, REPOSITORY, &held),
                signature(&key, REPOSITORY, &held),
            ]),
            ..Attached::default()
        };
        let row = &rows(&attached, &held, &key, &Inputs::sample())[0];
        assert!(row.ok, "{row:?}");
        assert_eq!(
            row.note.as_deref(),
            Some("1 of 2 layers ignored: not signed by the public key of a new key")
        );
        let only_other = Attached {
            signatures: Some(vec![signature(&other, REPOSITORY, &held)]),
            ..Attached::default()
        };
        let row = &rows(&only_other, &held, &key, &Inputs::sample())[0];
        assert!(!row.ok);
        assert_eq!(row.actual, "none signed by the public key of a new key");
    }

    #[test]
    fn a_valid_signature_for_another_repository_is_named() {
        let held = Digest::filled('1');
        let key = SigningKey::generate();
        let attached = Attached {
            signatures: Some(vec![signature(&key, "127.0.0.1:5000/elsewhere", &held)]),
            ..Attached::default()
        };
        let row = &rows(&attached, &held, &key, &Inputs::sample())[0];
        assert!(!row.ok);
        assert_eq!(
            row.actual,
            "signed by the public key of a new key for 127.0.0.1:5000/elsewhere"
        );
    }
}
