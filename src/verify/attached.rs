//! What a tag's manifest carries under cosign's tags, judged with a public key: the signature
//! (valid for the manifest the tag holds), the provenance (signed, its subject that manifest,
//! its inputs the recipe's current ones) and the SBOM (the one the provenance names, listing
//! the recipe's pins).

use crate::attest::cosign;
use crate::attest::dsse::Envelope;
use crate::attest::keys::VerifyingKey;
use crate::attest::{provenance, sbom};
use crate::lock::Inputs;
use crate::types::oci::Digest;

use super::{Check, Kind};

/// What the registry holds under one manifest's cosign tags; `None` where the tag is absent.
#[derive(Debug, Clone, Default)]
pub struct Attached {
    /// Each simple-signing layer of the `.sig` manifest: its payload and its signature
    /// annotation.
    pub signatures: Option<Vec<(Vec<u8>, String)>>,
    /// Each layer of the `.att` manifest (DSSE envelopes).
    pub attestations: Option<Vec<Vec<u8>>>,
    /// The first layer of the `.sbom` manifest: its digest and bytes.
    pub sbom: Option<(Digest, Vec<u8>)>,
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

/// The rows for the tag `reference`, which holds the manifest `held`.
pub fn checks(
    reference: &str,
    held: &Digest,
    attached: &Attached,
    key: &VerifyingKey,
    expected: Expected<'_>,
) -> Vec<Check> {
    let not_signed = format!("none signed by {}", key.origin);
    let signature = match &attached.signatures {
        None => NOT_ATTACHED.to_owned(),
        Some(layers) => layers
            .iter()
            .filter(|(payload, signature)| key.verifies(payload, signature))
            .filter_map(|(payload, _)| cosign::claims(payload))
            .filter(|claims| claims.repository == expected.repository)
            .map(|claims| claims.digest)
            // One valid for `held` wins over any for another manifest.
            .max_by_key(|digest| digest == held.as_str())
            .unwrap_or_else(|| not_signed.clone()),
    };
    let mut rows = vec![Check::compare(
        Kind::Signature,
        reference,
        held.as_str(),
        signature,
    )];

    let statement = attached.attestations.as_ref().map(|layers| {
        layers.iter().find_map(|layer| {
            let envelope: Envelope = serde_json::from_slice(layer).ok()?;
            let payload = envelope.verified_payload(key)?;
            provenance::stated(&serde_json::from_slice(&payload).ok()?)
        })
    });
    let (subject, inputs, named_sbom) = match &statement {
        None => (NOT_ATTACHED.to_owned(), NOT_ATTACHED.to_owned(), None),
        Some(None) => (not_signed.clone(), not_signed.clone(), None),
        Some(Some(stated)) => (
            stated.subject.clone(),
            stated_inputs(&stated.inputs, expected.inputs),
            stated.sbom.clone(),
        ),
    };
    rows.push(Check::compare(
        Kind::ProvenanceSubject,
        reference,
        held.as_str(),
        subject,
    ));
    rows.push(Check::compare(
        Kind::ProvenanceInputs,
        reference,
        CURRENT_INPUTS,
        inputs,
    ));
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
