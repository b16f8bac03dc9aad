//! What a tag's manifest carries under cosign's tags and among its referrers (sigstore bundles,
//! as cosign 3 attaches them), judged with a public key as cosign judges them: every layer and
//! every bundle is looked at, and an attachment holds when at least one of them is valid for
//! the manifest and the key (the others, a co-signer's signature or another image's envelope,
//! are counted in the row's note, which also says in which format a valid one was found). The signature must be for the manifest the tag
//! holds in the recorded repository; the provenance signed, its subject that manifest, its
//! inputs the recipe's current ones; the SBOM the one the provenance names, listing the
//! recipe's pins.

use crate::attest::keys::VerifyingKey;
use crate::attest::{bundle, cosign};
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
    /// Each sigstore bundle among the manifest's referrers.
    pub bundles: Vec<Bundle>,
}

/// A sigstore bundle referring to the manifest, as the registry holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bundle {
    /// The predicate type its referrer manifest's annotation names: cosign's sign predicate
    /// makes it a signature, anything else is judged as provenance.
    pub predicate: Option<String>,
    /// The `subject` its referrer manifest names, and the bundle; or why it cannot be read (a
    /// malformed index entry or manifest, a bundle past `bundle::BUNDLE_LIMIT`).
    pub read: Result<(Option<Digest>, Vec<u8>), String>,
}

impl Bundle {
    /// Whether it is judged as a signature (else as provenance).
    fn is_signature(&self) -> bool {
        self.predicate.as_deref() == Some(bundle::SIGN_PREDICATE)
    }

    /// Its DSSE envelope, when it is a bundle for `held` that holds one; else why it is
    /// ignored.
    fn envelope(&self, held: &Digest) -> Result<crate::attest::dsse::Envelope, Ignored> {
        let (subject, bytes) = self
            .read
            .as_ref()
            .map_err(|why| Ignored::Malformed(why.clone()))?;
        match subject {
            Some(subject) if subject == held => {}
            Some(subject) => return Err(Ignored::OtherImage(subject.to_string())),
            None => {
                return Err(Ignored::Malformed(
                    "a referrer without a subject".to_owned(),
                ));
            }
        }
        bundle::envelope(bytes).map_err(|why| Ignored::Malformed(why.to_owned()))
    }
}

/// Which formats held a valid signature or statement: cosign's tag, a sigstore bundle.
#[derive(Debug, Clone, Copy, Default)]
struct Held {
    tag: bool,
    bundle: bool,
}

impl Held {
    /// Whether any did.
    fn any(self) -> bool {
        self.tag || self.bundle
    }

    /// The note's words for it: `in both formats`, `in the .sig tag only`, `in a sigstore
    /// bundle only`.
    fn said(self, suffix: &str) -> Option<String> {
        match (self.tag, self.bundle) {
            (true, true) => Some("in both formats".to_owned()),
            (true, false) => Some(format!("in the .{suffix} tag only")),
            (false, true) => Some("in a sigstore bundle only".to_owned()),
            (false, false) => None,
        }
    }
}

/// The note of a row: which formats held, then what was ignored; none for a row that found a
/// valid one in both formats and ignored nothing (what a forge-signed push holds).
fn note(held: Held, suffix: &str, ignored: Option<String>) -> Option<String> {
    match (held.said(suffix), ignored) {
        (Some(held), Some(ignored)) => Some(format!("{held}; {ignored}")),
        (_, None) if held.tag && held.bundle => None,
        (held, ignored) => held.or(ignored),
    }
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
    /// Why its blob was not read (past the bounds of `attach::Budget`), when it was not.
    pub unread: Option<String>,
}

impl Layer {
    /// A simple-signing layer: `payload`, signed with `signature`.
    pub fn signed(payload: Vec<u8>, signature: String) -> Self {
        Self {
            media_type: cosign::SIMPLE_SIGNING.to_owned(),
            bytes: payload,
            signature: Some(signature),
            unread: None,
        }
    }

    /// A DSSE envelope layer.
    pub fn envelope(bytes: Vec<u8>) -> Self {
        Self {
            media_type: cosign::DSSE_ENVELOPE.to_owned(),
            bytes,
            signature: None,
            unread: None,
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
    /// Signed by the key for another manifest (or a referrer of another manifest).
    OtherImage(String),
    /// A bundle or referrer that cannot be read as one, and why.
    Malformed(String),
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
            Ignored::Malformed(why) => format!("malformed ({why})"),
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

/// The `signature` row: it holds when at least one simple-signing layer of the `.sig` tag, or
/// one signature bundle, is signed by `key` for `held` in the expected repository (cosign's
/// rule, with the repository a containers policy's `matchRepository` asks for; a bundle that
/// names no repository, as cosign 3's do not, is bound to the manifest only).
fn signature_check(
    reference: &str,
    held: &Digest,
    attached: &Attached,
    key: &VerifyingKey,
    repository: &str,
) -> Check {
    let bundles: Vec<&Bundle> = attached
        .bundles
        .iter()
        .filter(|bundle| bundle.is_signature())
        .collect();
    if attached.signatures.is_none() && bundles.is_empty() {
        return Check::compare(Kind::Signature, reference, held.as_str(), NOT_ATTACHED);
    }
    let layers = attached.signatures.as_deref().unwrap_or_default();
    let mut ignored = Vec::new();
    let mut valid = Held::default();
    for layer in layers {
        match signed_layer(layer, held, key, repository) {
            Ok(()) => valid.tag = true,
            Err(why) => ignored.push(why),
        }
    }
    for bundle in &bundles {
        match signed_bundle(bundle, held, key, repository) {
            Ok(()) => valid.bundle = true,
            Err(why) => ignored.push(why),
        }
    }
    let actual = if valid.any() {
        held.to_string()
    } else {
        nothing_valid(&ignored, key)
    };
    let ignored_note = ignored_note(&ignored, layers.len() + bundles.len(), key);
    Check::compare(Kind::Signature, reference, held.as_str(), actual).noted(note(
        valid,
        "sig",
        ignored_note,
    ))
}

/// Whether the simple-signing `layer` is signed by `key` for `held` in `repository`.
fn signed_layer(
    layer: &Layer,
    held: &Digest,
    key: &VerifyingKey,
    repository: &str,
) -> Result<(), Ignored> {
    if layer.media_type != cosign::SIMPLE_SIGNING {
        return Err(Ignored::OtherType(layer.media_type.clone()));
    }
    if let Some(why) = &layer.unread {
        return Err(Ignored::Malformed(why.clone()));
    }
    let signature = layer.signature.as_deref().unwrap_or_default();
    if !key.verifies(&layer.bytes, signature) {
        return Err(Ignored::NotSigned);
    }
    match cosign::claims(&layer.bytes) {
        None => Err(Ignored::Unreadable),
        Some(claims) if claims.digest != held.as_str() => Err(Ignored::OtherImage(claims.digest)),
        Some(claims) if claims.repository != repository => {
            Err(Ignored::OtherRepository(claims.repository))
        }
        Some(_) => Ok(()),
    }
}

/// Whether the signature `bundle` is signed by `key` for `held` (in `repository`, when its
/// statement names one).
fn signed_bundle(
    bundle: &Bundle,
    held: &Digest,
    key: &VerifyingKey,
    repository: &str,
) -> Result<(), Ignored> {
    let envelope = bundle.envelope(held)?;
    let payload = envelope.verified_payload(key).ok_or(Ignored::NotSigned)?;
    let subjects = bundle::signed_subjects(&payload).ok_or(Ignored::Unreadable)?;
    let Some((_, name)) = subjects.iter().find(|(digest, _)| digest == held.as_str()) else {
        let other = subjects.first().map(|(digest, _)| digest.clone());
        return Err(Ignored::OtherImage(other.unwrap_or_default()));
    };
    match name {
        Some(name) if name != repository => Err(Ignored::OtherRepository(name.clone())),
        _ => Ok(()),
    }
}

/// Of the `.att` layers and the provenance bundles: the statement of the first signed by `key`
/// one of whose subjects is `held`, and whether one is (else, of the first signed by `key` for
/// another manifest, to say how it differs); which formats held one; why each other was
/// ignored.
fn provenance_of(
    layers: &[Layer],
    bundles: &[&Bundle],
    held: &Digest,
    key: &VerifyingKey,
) -> (Option<(provenance::Stated, bool)>, Held, Vec<Ignored>) {
    let mut ignored = Vec::new();
    let mut chosen = None;
    let mut other = None;
    let mut valid = Held::default();
    let from_layers = layers.iter().map(|layer| {
        if layer.media_type != cosign::DSSE_ENVELOPE {
            return (false, Err(Ignored::OtherType(layer.media_type.clone())));
        }
        if let Some(why) = &layer.unread {
            return (false, Err(Ignored::Malformed(why.clone())));
        }
        let envelope = serde_json::from_slice(&layer.bytes).map_err(|_| Ignored::Unreadable);
        (false, envelope)
    });
    let from_bundles = bundles.iter().map(|bundle| (true, bundle.envelope(held)));
    for (in_bundle, envelope) in from_layers.chain(from_bundles) {
        let stated = envelope.and_then(|envelope| {
            provenance::signed_in(&envelope, key).map_err(|why| match why {
                provenance::NotSigned::Unreadable => Ignored::Unreadable,
                provenance::NotSigned::ByKey => Ignored::NotSigned,
                provenance::NotSigned::NotProvenance => Ignored::NotProvenance,
            })
        });
        let stated = match stated {
            Ok(stated) => stated,
            Err(why) => {
                ignored.push(why);
                continue;
            }
        };
        if !stated.names(held) {
            ignored.push(Ignored::OtherImage(
                stated.subjects.first().cloned().unwrap_or_default(),
            ));
            other.get_or_insert(stated);
            continue;
        }
        if in_bundle {
            valid.bundle = true;
        } else {
            valid.tag = true;
        }
        chosen.get_or_insert(stated);
    }
    let found = chosen
        .map(|stated| (stated, true))
        .or_else(|| other.map(|stated| (stated, false)));
    (found, valid, ignored)
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
        attached,
        key,
        expected.repository,
    )];
    let bundles: Vec<&Bundle> = attached
        .bundles
        .iter()
        .filter(|bundle| !bundle.is_signature())
        .collect();
    let layers = match &attached.attestations {
        None if bundles.is_empty() => None,
        layers => Some(layers.as_deref().unwrap_or_default()),
    };
    let (subject, inputs, named_sbom, note) = match layers {
        None => (NOT_ATTACHED.to_owned(), None, None, None),
        Some(layers) => {
            let (stated, valid, ignored) = provenance_of(layers, &bundles, held, key);
            let note = note(
                valid,
                "att",
                ignored_note(&ignored, layers.len() + bundles.len(), key),
            );
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
        let envelope = provenance_envelope(key, subject, inputs, provenance::STATEMENT);
        Layer::envelope(serde_json::to_vec(&envelope).unwrap())
    }

    /// A provenance statement of in-toto Statement `version` about `subject`, signed by `key`.
    fn provenance_envelope(
        key: &SigningKey,
        subject: &Digest,
        inputs: &Inputs,
        version: &str,
    ) -> Envelope {
        let named: serde_json::Map<String, serde_json::Value> = inputs
            .named()
            .iter()
            .map(|(name, digest)| ((*name).to_owned(), serde_json::json!(digest.as_str())))
            .collect();
        let statement = serde_json::json!({
            "_type": version,
            "predicateType": provenance::PREDICATE,
            "subject": [{ "name": REPOSITORY, "digest": { "sha256": subject.hex() } }],
            "predicate": { "buildDefinition": { "externalParameters": { "inputs": named } } },
        });
        Envelope::sign(dsse::IN_TOTO, &serde_json::to_vec(&statement).unwrap(), key)
    }

    /// A bundle of `envelope` referring to `referred`, under `predicate`'s annotation.
    fn bundled(
        key: &SigningKey,
        envelope: &Envelope,
        referred: &Digest,
        predicate: &str,
    ) -> Bundle {
        Bundle {
            predicate: Some(predicate.to_owned()),
            read: Ok((
                Some(referred.clone()),
                bundle::of_envelope(envelope, &key.verifying_key()),
            )),
        }
    }

    /// A signature bundle as cosign 3 writes one (its statement names no repository) for
    /// `subject`, referring to `referred`.
    fn cosign3_signature(key: &SigningKey, subject: &Digest, referred: &Digest) -> Bundle {
        let statement = serde_json::json!({
            "_type": provenance::STATEMENT,
            "subject": [{ "digest": { "sha256": subject.hex() }, "annotations": {} }],
            "predicateType": bundle::SIGN_PREDICATE,
            "predicate": {},
        });
        let envelope = Envelope::sign(dsse::IN_TOTO, &serde_json::to_vec(&statement).unwrap(), key);
        bundled(key, &envelope, referred, bundle::SIGN_PREDICATE)
    }

    #[test]
    fn a_signature_bundle_alone_holds_and_the_row_says_so() {
        let held = Digest::filled('1');
        let (key, other) = (SigningKey::generate(), SigningKey::generate());
        let attached = Attached {
            bundles: vec![
                cosign3_signature(&other, &held, &held),
                cosign3_signature(&key, &held, &held),
            ],
            ..Attached::default()
        };
        let row = &rows(&attached, &held, &key, &Inputs::sample())[0];
        assert!(row.ok, "{row:?}");
        assert_eq!(
            row.note.as_deref(),
            Some(
                "in a sigstore bundle only; 1 of 2 layers ignored: not signed by the public key of a new key"
            )
        );
        let both = Attached {
            signatures: Some(vec![signature(&key, REPOSITORY, &held)]),
            ..attached
        };
        let row = &rows(&both, &held, &key, &Inputs::sample())[0];
        assert!(row.ok, "{row:?}");
        assert!(
            row.note
                .as_deref()
                .unwrap()
                .starts_with("in both formats; "),
            "{row:?}"
        );
    }

    #[test]
    fn a_bundle_for_another_image_or_malformed_is_named_and_never_counts() {
        let (held, theirs) = (Digest::filled('1'), Digest::filled('2'));
        let key = SigningKey::generate();
        // A referrer of this image whose statement is about another; a referrer of another
        // image listed under this one's referrers; a bundle too large to read.
        let attached = Attached {
            bundles: vec![
                cosign3_signature(&key, &theirs, &held),
                cosign3_signature(&key, &held, &theirs),
                Bundle {
                    predicate: Some(bundle::SIGN_PREDICATE.to_owned()),
                    read: Err("a bundle of 99999999 bytes".to_owned()),
                },
            ],
            ..Attached::default()
        };
        let row = &rows(&attached, &held, &key, &Inputs::sample())[0];
        assert!(!row.ok, "{row:?}");
        assert_eq!(row.actual, theirs.as_str());
        assert_eq!(
            row.note.as_deref(),
            Some(
                format!(
                    "3 of 3 layers ignored: 2 for {theirs}, malformed (a bundle of 99999999 bytes)"
                )
                .as_str()
            )
        );
    }

    #[test]
    fn provenance_holds_in_a_bundle_alone_and_as_statement_v0_1_under_the_tag() {
        let held = Digest::filled('1');
        let key = SigningKey::generate();
        let inputs = Inputs::sample();
        let v1 = provenance_envelope(&key, &held, &inputs, provenance::STATEMENT);
        let attached = Attached {
            bundles: vec![bundled(&key, &v1, &held, provenance::PREDICATE)],
            ..Attached::default()
        };
        let rows = rows(&attached, &held, &key, &inputs);
        assert!(rows[1].ok && rows[2].ok, "{rows:?}");
        assert_eq!(rows[1].note.as_deref(), Some("in a sigstore bundle only"));
        // cosign 2's `attest` writes Statement v0.1 under the `.att` tag.
        let v01 = provenance_envelope(&key, &held, &inputs, provenance::STATEMENT_V01);
        let attached = Attached {
            attestations: Some(vec![Layer::envelope(serde_json::to_vec(&v01).unwrap())]),
            ..Attached::default()
        };
        let rows = super::checks(
            "r:latest",
            &held,
            &attached,
            &key.verifying_key(),
            Expected {
                repository: REPOSITORY,
                inputs: &inputs,
                pins: &[],
            },
        );
        assert!(rows[1].ok && rows[2].ok, "{rows:?}");
        assert_eq!(rows[1].note.as_deref(), Some("in the .att tag only"));
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
                Some(format!("in the .att tag only; 1 of 2 layers ignored: for {theirs}").as_str())
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
            Some(
                "in the .sig tag only; 1 of 2 layers ignored: not signed by the public key of a new key"
            )
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
