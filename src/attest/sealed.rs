//! Private keys kept under a password, in the two forms forge reads: cosign's (`cosign
//! generate-key-pair`: a PEM block `ENCRYPTED SIGSTORE PRIVATE KEY`, or `ENCRYPTED COSIGN
//! PRIVATE KEY` from cosign 1, whose bytes are a JSON document naming an scrypt key derivation
//! and a NaCl secretbox, sealing the key's PKCS#8 DER), and encrypted PKCS#8 (`ENCRYPTED
//! PRIVATE KEY`, PBES2, as `openssl pkcs8 -topk8 -v2 aes-256-cbc` writes it).
//!
//! The JSON is read with serde and each primitive is a RustCrypto crate (`scrypt`,
//! `crypto_secretbox`, `pkcs8` with `pkcs5`); forge only ties them as cosign's format says.

use base64::Engine as _;
use crypto_secretbox::aead::Aead as _;
use crypto_secretbox::{KeyInit as _, XSalsa20Poly1305};
use zeroize::Zeroizing;

/// The scrypt parameters (`N`, `r`, `p`) a key cosign seals may name: those cosign itself opens
/// (go-securesystemslib's `encrypted` package: its legacy, standard and OWASP sets), so that a
/// crafted file cannot make forge work or allocate without end.
const COSIGN_SCRYPT: [(u64, u32, u32); 3] = [(1 << 15, 8, 1), (1 << 16, 8, 1), (1 << 17, 8, 1)];

/// The most PBKDF2 iterations an encrypted PKCS#8 key may ask for (OpenSSL writes 2048; ten
/// million is seconds of work).
const MAX_PBKDF2_ITERATIONS: u32 = 10_000_000;

/// The most memory scrypt may take for an encrypted PKCS#8 key (128·r·N bytes), and the most
/// work in all (that memory filled p times): 1 GiB. OpenSSL writes 16 MiB (N = 2^14, r = 8,
/// p = 1), cosign 128 MiB.
const MAX_SCRYPT_MEMORY: u64 = 1 << 30;

/// Why a sealed key could not be opened; never says the password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    /// The bytes are not cosign's JSON, or name a derivation or cipher other than scrypt and
    /// NaCl secretbox, or parameters out of bounds.
    #[error("not a key sealed as cosign seals one ({0})")]
    Format(String),
    /// The password does not open it (or the bytes were changed).
    #[error("the password does not open it")]
    Password,
}

impl crate::diagnostics::Advise for SealError {
    fn advice(&self) -> crate::diagnostics::Advice {
        crate::diagnostics::Advice::Hint(match self {
            SealError::Format(_) => {
                "name a key `cosign generate-key-pair` wrote, or an encrypted PKCS#8 key".to_owned()
            }
            SealError::Password => "check the password; the key file is left as it was".to_owned(),
        })
    }
}

crate::advised!(SealError);

/// A key sealed as cosign seals one: the scrypt parameters and salt, the secretbox nonce and
/// the ciphertext, base64.
#[derive(serde::Deserialize, serde::Serialize)]
struct Sealed {
    kdf: Kdf,
    cipher: Cipher,
    ciphertext: String,
}

#[derive(serde::Deserialize, serde::Serialize)]
struct Kdf {
    name: String,
    params: Params,
    salt: String,
}

#[derive(serde::Deserialize, serde::Serialize)]
struct Params {
    #[serde(rename = "N")]
    n: u64,
    r: u32,
    p: u32,
}

#[derive(serde::Deserialize, serde::Serialize)]
struct Cipher {
    name: String,
    nonce: String,
}

fn decoded(text: &str, what: &str) -> Result<Vec<u8>, SealError> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|_| SealError::Format(format!("its {what} is not base64")))
}

/// The PKCS#8 DER a cosign-sealed key (`json`, the PEM block's bytes) holds, opened with
/// `password`.
pub fn open_cosign(json: &[u8], password: &[u8]) -> Result<Zeroizing<Vec<u8>>, SealError> {
    let sealed: Sealed = serde_json::from_slice(json)
        .map_err(|error| SealError::Format(format!("its JSON: {error}")))?;
    if sealed.kdf.name != "scrypt" {
        return Err(SealError::Format(format!(
            "key derivation {:?}, not scrypt",
            sealed.kdf.name
        )));
    }
    if sealed.cipher.name != "nacl/secretbox" {
        return Err(SealError::Format(format!(
            "cipher {:?}, not nacl/secretbox",
            sealed.cipher.name
        )));
    }
    let Params { n, r, p } = sealed.kdf.params;
    if !COSIGN_SCRYPT.contains(&(n, r, p)) {
        return Err(SealError::Format(format!(
            "scrypt N = {n}, r = {r}, p = {p}, not a cost cosign writes (N = 2^15, 2^16 or 2^17, r = 8, p = 1)"
        )));
    }
    let params = scrypt::Params::new(
        u8::try_from(n.trailing_zeros()).expect("a power of two up to 2^17"),
        r,
        p,
        32,
    )
    .map_err(|_| SealError::Format(format!("scrypt N = {n}, r = {r}, p = {p}")))?;
    let salt = decoded(&sealed.kdf.salt, "salt")?;
    let nonce = decoded(&sealed.cipher.nonce, "nonce")?;
    if nonce.len() != 24 {
        return Err(SealError::Format(format!(
            "a nonce of {} bytes, not 24",
            nonce.len()
        )));
    }
    let ciphertext = decoded(&sealed.ciphertext, "ciphertext")?;
    let mut key = Zeroizing::new([0u8; 32]);
    scrypt::scrypt(password, &salt, &params, key.as_mut())
        .map_err(|_| SealError::Format("scrypt refuses its parameters".to_owned()))?;
    let cipher = XSalsa20Poly1305::new(crypto_secretbox::Key::from_slice(key.as_ref()));
    cipher
        .decrypt(
            crypto_secretbox::Nonce::from_slice(&nonce),
            ciphertext.as_slice(),
        )
        .map(Zeroizing::new)
        .map_err(|_| SealError::Password)
}

/// The scrypt cost forge seals a key with: cosign's own for `generate-key-pair` (N = 2^16).
const SEAL_SCRYPT_LOG_N: u8 = 16;

/// `der` (a key's PKCS#8 DER) sealed under `password` as `cosign generate-key-pair` seals a key:
/// the JSON document an `ENCRYPTED SIGSTORE PRIVATE KEY` PEM block holds, with a fresh random
/// 32-byte salt and 24-byte nonce.
pub fn seal_cosign(der: &[u8], password: &[u8]) -> Vec<u8> {
    use rand_core::RngCore as _;
    let (mut salt, mut nonce) = ([0u8; 32], [0u8; 24]);
    rand_core::OsRng.fill_bytes(&mut salt);
    rand_core::OsRng.fill_bytes(&mut nonce);
    sealed_with(der, password, &salt, &nonce, SEAL_SCRYPT_LOG_N)
}

/// `plaintext` sealed as cosign seals a key, with the given salt, nonce and scrypt cost.
fn sealed_with(
    plaintext: &[u8],
    password: &[u8],
    salt: &[u8],
    nonce: &[u8; 24],
    log_n: u8,
) -> Vec<u8> {
    let mut key = Zeroizing::new([0u8; 32]);
    scrypt::scrypt(
        password,
        salt,
        &scrypt::Params::new(log_n, 8, 1, 32).expect("cosign's scrypt parameters are valid"),
        key.as_mut(),
    )
    .expect("a 32-byte key is a valid scrypt output length");
    let ciphertext = XSalsa20Poly1305::new(crypto_secretbox::Key::from_slice(key.as_ref()))
        .encrypt(crypto_secretbox::Nonce::from_slice(nonce), plaintext)
        .expect("secretbox seals any plaintext");
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    crate::types::manifest::in_byte_order(&Sealed {
        kdf: Kdf {
            name: "scrypt".to_owned(),
            params: Params {
                n: 1u64 << log_n,
                r: 8,
                p: 1,
            },
            salt: b64(salt),
        },
        cipher: Cipher {
            name: "nacl/secretbox".to_owned(),
            nonce: b64(nonce),
        },
        ciphertext: b64(&ciphertext),
    })
}

/// The PKCS#8 DER an encrypted PKCS#8 document (`der`, the PEM block's bytes) holds, opened
/// with `password`.
pub fn open_pkcs8(der: &[u8], password: &[u8]) -> Result<Zeroizing<Vec<u8>>, SealError> {
    let info = pkcs8::EncryptedPrivateKeyInfo::try_from(der)
        .map_err(|error| SealError::Format(format!("encrypted PKCS#8: {error}")))?;
    bounded(&info.encryption_algorithm)?;
    let document = info.decrypt(password).map_err(|_| SealError::Password)?;
    Ok(Zeroizing::new(document.as_bytes().to_vec()))
}

/// Refuses, before any work, a key derivation that would take longer or more memory than any
/// key file needs.
fn bounded(scheme: &pkcs8::pkcs5::EncryptionScheme<'_>) -> Result<(), SealError> {
    use pkcs8::pkcs5::pbes2::Kdf;
    let pkcs8::pkcs5::EncryptionScheme::Pbes2(parameters) = scheme else {
        return Err(SealError::Format(
            "PBES1, which forge does not open; re-encrypt it with `openssl pkcs8 -topk8 -v2 aes-256-cbc`".to_owned(),
        ));
    };
    match &parameters.kdf {
        Kdf::Pbkdf2(pbkdf2) if pbkdf2.iteration_count > MAX_PBKDF2_ITERATIONS => {
            Err(SealError::Format(format!(
                "{} PBKDF2 iterations, more than {MAX_PBKDF2_ITERATIONS}",
                pbkdf2.iteration_count
            )))
        }
        Kdf::Scrypt(scrypt) => {
            let memory = 128u64
                .saturating_mul(u64::from(scrypt.block_size))
                .saturating_mul(scrypt.cost_parameter);
            let work = memory.saturating_mul(u64::from(scrypt.parallelization));
            if memory > MAX_SCRYPT_MEMORY || work > MAX_SCRYPT_MEMORY {
                Err(SealError::Format(format!(
                    "scrypt N = {}, r = {}, p = {}, more than 1 GiB of work",
                    scrypt.cost_parameter, scrypt.block_size, scrypt.parallelization
                )))
            } else {
                Ok(())
            }
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `plaintext` sealed as cosign seals a key, with `password`, a fixed salt and nonce, and
    /// cosign's legacy cost (N = 2^15).
    fn sealed(plaintext: &[u8], password: &[u8]) -> Vec<u8> {
        sealed_with(plaintext, password, &[7u8; 32], &[9u8; 24], 15)
    }

    #[test]
    fn a_sealed_key_opens_with_its_password_only() {
        let json = sealed(b"the key", b"hunter2");
        assert_eq!(
            open_cosign(&json, b"hunter2").unwrap().as_slice(),
            b"the key"
        );
        assert_eq!(open_cosign(&json, b"hunter3"), Err(SealError::Password));
        assert_eq!(open_cosign(&json, b""), Err(SealError::Password));
    }

    #[test]
    fn a_key_forge_seals_opens_with_its_password_and_is_sealed_afresh_each_time() {
        let first = seal_cosign(b"the key", b"");
        assert_eq!(open_cosign(&first, b"").unwrap().as_slice(), b"the key");
        assert_eq!(open_cosign(&first, b"x"), Err(SealError::Password));
        let value: serde_json::Value = serde_json::from_slice(&first).unwrap();
        assert_eq!(
            value["kdf"]["params"],
            serde_json::json!({"N": 65536, "r": 8, "p": 1})
        );
        assert_ne!(
            seal_cosign(b"the key", b""),
            first,
            "a fresh salt and nonce each time"
        );
    }

    #[test]
    fn a_pkcs8_derivation_past_any_keys_need_is_refused_before_any_work() {
        use pkcs8::pkcs5::{EncryptionScheme, pbes2};
        let (salt, iv) = ([1u8; 16], [2u8; 16]);
        let pbkdf2 = |iterations| {
            let parameters =
                pbes2::Parameters::pbkdf2_sha256_aes256cbc(iterations, &salt, &iv).unwrap();
            bounded(&EncryptionScheme::Pbes2(parameters))
        };
        assert_eq!(pbkdf2(2048), Ok(()));
        assert!(
            matches!(pbkdf2(20_000_000), Err(SealError::Format(why)) if why.contains("PBKDF2 iterations"))
        );
        let scrypt = |log_n, r, p| {
            let parameters = pbes2::Parameters::scrypt_aes256cbc(
                scrypt::Params::new(log_n, r, p, 32).unwrap(),
                &salt,
                &iv,
            )
            .unwrap();
            bounded(&EncryptionScheme::Pbes2(parameters))
        };
        assert_eq!(scrypt(17, 8, 1), Ok(()));
        assert_eq!(scrypt(14, 8, 16), Ok(()));
        for (log_n, r, p) in [(21, 8, 1), (20, 8, 16), (17, 8, 16)] {
            assert!(
                matches!(scrypt(log_n, r, p), Err(SealError::Format(why)) if why.contains("more than 1 GiB of work")),
                "N = 2^{log_n}, r = {r}, p = {p}"
            );
        }
    }

    #[test]
    fn a_crafted_cost_or_cipher_is_refused_before_any_work() {
        let json = sealed(b"k", b"p");
        let mut value: serde_json::Value = serde_json::from_slice(&json).unwrap();
        value["kdf"]["params"]["N"] = serde_json::json!(1u64 << 40);
        let error = open_cosign(&serde_json::to_vec(&value).unwrap(), b"p").unwrap_err();
        assert!(
            matches!(&error, SealError::Format(why) if why.contains("not a cost cosign writes")),
            "{error}"
        );
        value["kdf"]["params"]["N"] = serde_json::json!(1 << 15);
        value["kdf"]["params"]["r"] = serde_json::json!(1 << 20);
        assert!(open_cosign(&serde_json::to_vec(&value).unwrap(), b"p").is_err());
        let mut other = serde_json::from_slice::<serde_json::Value>(&json).unwrap();
        other["cipher"]["name"] = serde_json::json!("aes-gcm");
        let error = open_cosign(&serde_json::to_vec(&other).unwrap(), b"p").unwrap_err();
        assert_eq!(
            error,
            SealError::Format("cipher \"aes-gcm\", not nacl/secretbox".to_owned())
        );
    }
}
