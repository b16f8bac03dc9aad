//! DSSE envelopes (Dead Simple Signing Envelope, the wrapper in-toto attestations travel in):
//! a payload, its type, and signatures over the pre-authentication encoding
//! `DSSEv1 <len(type)> <type> <len(payload)> <payload>`, so that a signature never covers a
//! payload read as another type.

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use super::keys::{SigningKey, VerifyingKey};

/// The payload type of an in-toto statement.
pub const IN_TOTO: &str = "application/vnd.in-toto+json";

/// A signed envelope, as it travels (JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    /// The payload, base64.
    pub payload: String,
    /// What the payload is.
    #[serde(rename = "payloadType")]
    pub payload_type: String,
    /// One signature per key.
    pub signatures: Vec<Signature>,
}

/// One signature of an envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signature {
    /// Which key signed (see `key_id`); cosign's bundles leave it out.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub keyid: String,
    /// The signature, base64 of ASN.1 DER.
    pub sig: String,
}

/// The bytes a DSSE signature covers.
pub fn pre_authentication(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut bytes = format!(
        "DSSEv1 {} {} {} ",
        payload_type.len(),
        payload_type,
        payload.len()
    )
    .into_bytes();
    bytes.extend_from_slice(payload);
    bytes
}

/// The id an envelope names a key by: the sha256 of its public key in PEM, in hex.
pub fn key_id(key: &VerifyingKey) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(key.to_pem().as_bytes()))
}

impl Envelope {
    /// `payload` of `payload_type`, signed with `key`.
    pub fn sign(payload_type: &str, payload: &[u8], key: &SigningKey) -> Envelope {
        Envelope {
            payload: base64::engine::general_purpose::STANDARD.encode(payload),
            payload_type: payload_type.to_owned(),
            signatures: vec![Signature {
                keyid: key_id(&key.verifying_key()),
                sig: key.sign(&pre_authentication(payload_type, payload)),
            }],
        }
    }

    /// The payload, when some signature of the envelope verifies with `key`.
    pub fn verified_payload(&self, key: &VerifyingKey) -> Option<Vec<u8>> {
        let payload = base64::engine::general_purpose::STANDARD
            .decode(&self.payload)
            .ok()?;
        let signed = pre_authentication(&self.payload_type, &payload);
        self.signatures
            .iter()
            .any(|signature| key.verifies(&signed, &signature.sig))
            .then_some(payload)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_encoding_names_both_lengths() {
        assert_eq!(pre_authentication("t", b"hello"), b"DSSEv1 1 t 5 hello");
    }

    #[test]
    fn a_payload_verifies_only_with_its_type() {
        let key = SigningKey::generate();
        let envelope = Envelope::sign(IN_TOTO, b"{}", &key);
        assert_eq!(
            envelope.verified_payload(&key.verifying_key()).as_deref(),
            Some(&b"{}"[..])
        );
        let mut retyped = envelope.clone();
        retyped.payload_type = "text/plain".to_owned();
        assert!(retyped.verified_payload(&key.verifying_key()).is_none());
        assert!(
            envelope
                .verified_payload(&SigningKey::generate().verifying_key())
                .is_none()
        );
    }
}
