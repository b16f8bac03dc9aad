//! Signing keys: ECDSA P-256, private keys as PKCS#8 PEM (plain, encrypted, or sealed as
//! `cosign generate-key-pair` seals them, see `sealed`) and public keys as SPKI PEM (what the
//! containers tools' `keyPath` and `cosign verify --key` expect). Signatures are ASN.1 DER over
//! SHA-256 of the message, base64 in transport.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use p256::ecdsa::signature::{Signer as _, Verifier as _};
use p256::pkcs8::{
    DecodePrivateKey as _, DecodePublicKey as _, EncodePrivateKey as _, EncodePublicKey as _,
    LineEnding,
};

/// The password in `variable` (`COSIGN_PASSWORD` for cosign's keys, as cosign reads it;
/// `FORGE_SIGNING_PASSWORD` for an encrypted PKCS#8 key), when it is set; with the variable's
/// name, for messages.
fn password(variable: &'static str) -> (&'static str, Option<zeroize::Zeroizing<String>>) {
    (
        variable,
        std::env::var(variable).ok().map(zeroize::Zeroizing::new),
    )
}

/// A private key that signs.
#[derive(Clone)]
pub struct SigningKey {
    key: p256::ecdsa::SigningKey,
    /// Where it was read from, for messages.
    pub origin: String,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key itself.
        f.debug_struct("SigningKey")
            .field("origin", &self.origin)
            .finish()
    }
}

/// A public key that verifies.
#[derive(Debug, Clone)]
pub struct VerifyingKey {
    key: p256::ecdsa::VerifyingKey,
    /// Where it was read from, for messages.
    pub origin: String,
}

/// Why a key could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The file could not be read or written.
    #[error("cannot {action} {}", path.display())]
    Io {
        /// `read` or `write`.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not a key of the kind expected.
    #[error("{origin} is not {expected}")]
    NotAKey {
        /// The file, or the variable that held the key.
        origin: String,
        /// What it should be.
        expected: &'static str,
    },
    /// `--sign` without a key.
    #[error("--sign needs a signing key, and neither --sign-key nor FORGE_SIGNING_KEY gives one")]
    Missing,
    /// The path names a special file (a FIFO, a device, a socket), refused without reading it.
    #[error("{} is a {kind}, not a key file", path.display())]
    Special {
        /// The file.
        path: PathBuf,
        /// What it is.
        kind: crate::fs::Special,
    },
    /// The file is larger than any key file.
    #[error("{} holds more than {} KiB, more than any key file", path.display(), crate::limits::KEY_FILE_LIMIT / 1024)]
    TooLarge {
        /// The file.
        path: PathBuf,
    },
    /// An encrypted key whose password variable is not set (or, for cosign's, whose empty
    /// password does not open it).
    #[error("{origin} is an encrypted key, and {variable} is not set to its password")]
    PasswordMissing {
        /// The file, or the variable that held the key.
        origin: String,
        /// The variable the password is read from.
        variable: &'static str,
    },
    /// An encrypted key the password does not open, or not sealed as its PEM label says.
    #[error("cannot open the encrypted key {origin}: {reason}")]
    Sealed {
        /// The file, or the variable that held the key.
        origin: String,
        /// The variable the password was read from.
        variable: &'static str,
        /// Why (never the password).
        reason: super::sealed::SealError,
    },
    /// A key to seal, and no password given for it.
    #[error("a key sealed as cosign seals one needs a password, and {variable} is not set")]
    PasswordUnset {
        /// The variable the password is read from.
        variable: &'static str,
    },
    /// A file that would be overwritten exists.
    #[error("{} already exists", path.display())]
    Exists {
        /// The file.
        path: PathBuf,
    },
}

impl crate::diagnostics::Advise for KeyError {
    fn advice(&self) -> crate::diagnostics::Advice {
        crate::diagnostics::Advice::Hint(match self {
            KeyError::Io { .. } => "check the path and its permissions".to_owned(),
            KeyError::Special { .. } | KeyError::TooLarge { .. } => "name the PEM file itself (`forge keygen` writes one of a few hundred bytes); a key can also come as PEM text in FORGE_SIGNING_KEY".to_owned(),
            KeyError::NotAKey { .. } => "`forge keygen` writes a key pair forge reads: a PKCS#8 private key and an SPKI public key, both PEM, on the P-256 curve; `cosign generate-key-pair`'s keys and encrypted PKCS#8 keys are read too".to_owned(),
            KeyError::Exists { .. } => "move it away, or name other files".to_owned(),
            KeyError::PasswordUnset { variable } => format!("set {variable} to the password, as for `cosign generate-key-pair`; set it empty (`{variable}=`) for a key without one"),
            KeyError::PasswordMissing { variable, .. } => format!("set {variable} to the key's password (cosign's keys read COSIGN_PASSWORD, as cosign does; an encrypted PKCS#8 key FORGE_SIGNING_PASSWORD)"),
            KeyError::Sealed { variable, reason: super::sealed::SealError::Password, .. } => format!("check the password in {variable}; the key file itself is left as it was"),
            KeyError::Sealed { .. } => "name a key `cosign generate-key-pair` or `forge keygen` wrote, or an encrypted PKCS#8 key (`openssl pkcs8 -topk8 -v2 aes-256-cbc`)".to_owned(),
            KeyError::Missing => "name the private key with --sign-key FILE, or put its PEM text in FORGE_SIGNING_KEY; `forge keygen` writes a pair".to_owned(),
        })
    }
}

crate::advised!(KeyError);

impl SigningKey {
    /// The key in `pem`, on the P-256 curve: a PKCS#8 `PRIVATE KEY` block; an `ENCRYPTED
    /// PRIVATE KEY` (PKCS#8, PBES2) opened with `FORGE_SIGNING_PASSWORD`; or cosign's
    /// `ENCRYPTED SIGSTORE PRIVATE KEY` (or `ENCRYPTED COSIGN PRIVATE KEY`) opened with
    /// `COSIGN_PASSWORD`, as cosign opens it (unset, the empty password cosign's keys for CI
    /// are made with).
    pub fn from_pem(pem: &str, origin: impl Into<String>) -> Result<Self, KeyError> {
        let origin = origin.into();
        let not_a_key = || KeyError::NotAKey {
            origin: origin.clone(),
            expected: "a PEM private key on the P-256 curve (PKCS#8, encrypted PKCS#8, or cosign's)",
        };
        let pem = rewrapped(pem).ok_or_else(not_a_key)?;
        let (label, bytes) =
            p256::pkcs8::der::pem::decode_vec(pem.as_bytes()).map_err(|_| not_a_key())?;
        let sealed = |variable: &'static str, reason| KeyError::Sealed {
            origin: origin.clone(),
            variable,
            reason,
        };
        let der = match label {
            "PRIVATE KEY" => zeroize::Zeroizing::new(bytes),
            "ENCRYPTED PRIVATE KEY" => {
                let (variable, password) = password("FORGE_SIGNING_PASSWORD");
                let password = password.ok_or_else(|| KeyError::PasswordMissing {
                    origin: origin.clone(),
                    variable,
                })?;
                super::sealed::open_pkcs8(&bytes, password.as_bytes())
                    .map_err(|reason| sealed(variable, reason))?
            }
            COSIGN_LABEL | "ENCRYPTED COSIGN PRIVATE KEY" => {
                let (variable, given) = password("COSIGN_PASSWORD");
                let password = given.as_deref().map_or("", String::as_str);
                match super::sealed::open_cosign(&bytes, password.as_bytes()) {
                    Err(super::sealed::SealError::Password) if given.is_none() => {
                        return Err(KeyError::PasswordMissing { origin, variable });
                    }
                    opened => opened.map_err(|reason| sealed(variable, reason))?,
                }
            }
            _ => return Err(not_a_key()),
        };
        let key = p256::ecdsa::SigningKey::from_pkcs8_der(&der).map_err(|_| not_a_key())?;
        Ok(Self { key, origin })
    }

    /// The key in the file at `path`.
    pub fn read(path: &Path) -> Result<Self, KeyError> {
        Self::from_pem(&read_pem(path)?, path.display().to_string())
    }

    /// The key `--sign-key` names, else the PEM text `FORGE_SIGNING_KEY` holds.
    pub fn given(path: Option<&Path>) -> Result<Self, KeyError> {
        if let Some(path) = path {
            return Self::read(path);
        }
        match std::env::var("FORGE_SIGNING_KEY") {
            Ok(pem) if !pem.trim().is_empty() => Self::from_pem(&pem, "FORGE_SIGNING_KEY"),
            _ => Err(KeyError::Missing),
        }
    }

    /// A new random key.
    pub fn generate() -> Self {
        Self {
            key: p256::ecdsa::SigningKey::random(&mut rand_core::OsRng),
            origin: "a new key".to_owned(),
        }
    }

    /// The signature of `message`: ASN.1 DER, base64.
    pub fn sign(&self, message: &[u8]) -> String {
        let signature: p256::ecdsa::Signature = self.key.sign(message);
        base64::engine::general_purpose::STANDARD.encode(signature.to_der().as_bytes())
    }

    /// The signature of everything `reader` yields, hashed as it streams: the same signature
    /// `sign` gives for those bytes at once (ECDSA over their SHA-256, deterministic); with
    /// that SHA-256.
    pub fn sign_stream(
        &self,
        mut reader: impl std::io::Read,
    ) -> std::io::Result<(String, [u8; 32])> {
        use p256::ecdsa::signature::DigestSigner as _;
        let mut hasher = <sha2::Sha256 as sha2::Digest>::new();
        std::io::copy(&mut reader, &mut hasher)?;
        let sha256: [u8; 32] = sha2::Digest::finalize(hasher.clone()).into();
        let signature: p256::ecdsa::Signature = self.key.sign_digest(hasher);
        Ok((
            base64::engine::general_purpose::STANDARD.encode(signature.to_der().as_bytes()),
            sha256,
        ))
    }

    /// The public half.
    pub fn verifying_key(&self) -> VerifyingKey {
        VerifyingKey {
            key: *self.key.verifying_key(),
            origin: format!("the public key of {}", self.origin),
        }
    }

    /// The private key as PKCS#8 PEM.
    pub fn to_pem(&self) -> String {
        self.key
            .to_pkcs8_pem(LineEnding::LF)
            .expect("a P-256 key encodes as PKCS#8")
            .to_string()
    }

    /// The private key sealed under `password` as `cosign generate-key-pair` writes it: an
    /// `ENCRYPTED SIGSTORE PRIVATE KEY` PEM block, which `cosign sign --key` opens with
    /// `COSIGN_PASSWORD`.
    pub fn to_cosign_pem(&self, password: &str) -> String {
        let der = zeroize::Zeroizing::new(
            self.key
                .to_pkcs8_der()
                .expect("a P-256 key encodes as PKCS#8")
                .as_bytes()
                .to_vec(),
        );
        let sealed = super::sealed::seal_cosign(&der, password.as_bytes());
        p256::pkcs8::der::pem::encode_string(COSIGN_LABEL, LineEnding::LF, &sealed)
            .expect("a JSON document encodes as PEM")
    }
}

/// The PEM label of a private key sealed as cosign 2 and 3 seal one.
const COSIGN_LABEL: &str = "ENCRYPTED SIGSTORE PRIVATE KEY";

/// How `write_pair` writes the private key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrivateForm {
    /// Plain PKCS#8 PEM (`PRIVATE KEY`): what openssl and the containers tools read.
    Pkcs8,
    /// Sealed under the password in `COSIGN_PASSWORD` as cosign seals its keys, so that
    /// `cosign sign --key` signs with it.
    Cosign,
}

impl VerifyingKey {
    /// The key in `pem` (an SPKI `PUBLIC KEY` block on the P-256 curve).
    pub fn from_pem(pem: &str, origin: impl Into<String>) -> Result<Self, KeyError> {
        let origin = origin.into();
        let not_a_key = || KeyError::NotAKey {
            origin: origin.clone(),
            expected: "a PEM public key on the P-256 curve",
        };
        let pem = rewrapped(pem).ok_or_else(not_a_key)?;
        let key = p256::ecdsa::VerifyingKey::from_public_key_pem(&pem).map_err(|_| not_a_key())?;
        Ok(Self { key, origin })
    }

    /// The key in the file at `path`.
    pub fn read(path: &Path) -> Result<Self, KeyError> {
        Self::from_pem(&read_pem(path)?, path.display().to_string())
    }

    /// Whether `signature` (base64 DER, or base64 of the raw 64 bytes) signs `message`.
    pub fn verifies(&self, message: &[u8], signature: &str) -> bool {
        let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(signature.trim()) else {
            return false;
        };
        let parsed = p256::ecdsa::Signature::from_der(&bytes)
            .or_else(|_| p256::ecdsa::Signature::from_slice(&bytes));
        parsed.is_ok_and(|signature| self.key.verify(message, &signature).is_ok())
    }

    /// The public key as SPKI DER.
    pub fn to_der(&self) -> Vec<u8> {
        self.key
            .to_public_key_der()
            .expect("a P-256 key encodes as SPKI")
            .into_vec()
    }

    /// The public key as SPKI PEM.
    pub fn to_pem(&self) -> String {
        self.key
            .to_public_key_pem(LineEnding::LF)
            .expect("a P-256 key encodes as SPKI")
    }
}

/// Writes a new key pair to `private` (mode 0600, in `form`) and `public`, refusing to
/// overwrite either.
pub fn write_pair(
    private: &Path,
    public: &Path,
    form: PrivateForm,
) -> Result<VerifyingKey, KeyError> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    // Both names are checked before either is written; a link, even one to nothing, is a
    // name taken.
    for path in [private, public] {
        if std::fs::symlink_metadata(path).is_ok() {
            return Err(KeyError::Exists {
                path: path.to_owned(),
            });
        }
    }
    let key = SigningKey::generate();
    let private_pem = zeroize::Zeroizing::new(match form {
        PrivateForm::Pkcs8 => key.to_pem(),
        PrivateForm::Cosign => match password("COSIGN_PASSWORD") {
            (_, Some(password)) => key.to_cosign_pem(&password),
            (variable, None) => return Err(KeyError::PasswordUnset { variable }),
        },
    });
    let verifying = key.verifying_key();
    let write = |path: &Path, text: &str, mode: u32| {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(path)
            .and_then(|mut file| file.write_all(text.as_bytes()))
            .map_err(|source| KeyError::Io {
                action: "write",
                path: path.to_owned(),
                source,
            })
    };
    write(private, &private_pem, 0o600)?;
    write(public, &verifying.to_pem(), 0o644)?;
    Ok(verifying)
}

/// The one PEM block of `text` as RFC 7468's strict form writes it, which the decoder reads: its
/// base64 wrapped at 64 columns, lines ended by LF. Keys come wrapped at other widths (76, as
/// Go's and some OpenSSL builds write them), with CRLF, or with text around the block; PEM's
/// own readers (OpenSSL, Go) take all of them, and so does forge. `None` without one block.
fn rewrapped(text: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let begin = lines
        .iter()
        .position(|line| line.starts_with("-----BEGIN "))?;
    let label = lines[begin]
        .strip_prefix("-----BEGIN ")?
        .strip_suffix("-----")?;
    let end = begin
        + lines[begin..]
            .iter()
            .position(|line| line.starts_with("-----END "))?;
    if lines[end] != format!("-----END {label}-----") {
        return None;
    }
    let body: String = lines[begin + 1..end].concat();
    let mut wrapped = format!("-----BEGIN {label}-----\n");
    for chunk in body.as_bytes().chunks(64) {
        wrapped.push_str(std::str::from_utf8(chunk).ok()?);
        wrapped.push('\n');
    }
    wrapped.push_str(&format!("-----END {label}-----\n"));
    Some(wrapped)
}

/// The text of the PEM file at `path`: a regular file (a FIFO or a device is refused without
/// being read, so nothing blocks or runs on for ever) of at most `limits::KEY_FILE_LIMIT` bytes,
/// of which no more than one byte past the limit is read.
fn read_pem(path: &Path) -> Result<String, KeyError> {
    use std::io::Read as _;
    let io = |source| KeyError::Io {
        action: "read",
        path: path.to_owned(),
        source,
    };
    let file = crate::fs::open_regular(path).map_err(|error| match error {
        crate::fs::PathError::Special { kind, .. } => KeyError::Special {
            path: path.to_owned(),
            kind,
        },
        crate::fs::PathError::Read { source, .. } => io(source),
        other => io(std::io::Error::other(other.to_string())),
    })?;
    let limit = crate::limits::KEY_FILE_LIMIT;
    let too_large = || KeyError::TooLarge {
        path: path.to_owned(),
    };
    // A sparse file of gigabytes is refused by its size, before a byte of it is read.
    if file.metadata().map_err(io)?.len() > limit {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    // Bytes that are not text are not a PEM key either: the parse says so, naming the kind of
    // key wanted, rather than an I/O error about UTF-8.
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_verifies_with_the_public_half_only() {
        let key = SigningKey::generate();
        let pem = key.to_pem();
        assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----"));
        let read = SigningKey::from_pem(&pem, "test").unwrap();
        let signature = read.sign(b"message");
        let public = VerifyingKey::from_pem(&key.verifying_key().to_pem(), "test").unwrap();
        assert!(public.verifies(b"message", &signature));
        assert!(!public.verifies(b"other message", &signature));
        let other = SigningKey::generate().verifying_key();
        assert!(!other.verifies(b"message", &signature));
    }

    #[test]
    fn a_streamed_signature_is_the_signature_of_the_whole_message() {
        let key = SigningKey::generate();
        let message = vec![7u8; 200_000];
        let (streamed, sha256) = key.sign_stream(&message[..]).unwrap();
        assert_eq!(
            sha256.as_slice(),
            <sha2::Sha256 as sha2::Digest>::digest(&message[..]).as_slice()
        );
        assert_eq!(streamed, key.sign(&message));
        assert!(key.verifying_key().verifies(&message, &streamed));
    }

    /// `pem` with its base64 wrapped at `width` columns, lines ended by `end`, and a line of
    /// text before it.
    fn wrapped_at(pem: &str, width: usize, end: &str) -> String {
        let lines: Vec<&str> = pem.lines().collect();
        let body: String = lines[1..lines.len() - 1].concat();
        let mut text = format!("Key of the lab{end}{}{end}", lines[0]);
        for chunk in body.as_bytes().chunks(width) {
            text.push_str(std::str::from_utf8(chunk).unwrap());
            text.push_str(end);
        }
        text.push_str(lines[lines.len() - 1]);
        text.push_str(end);
        text
    }

    #[test]
    fn a_key_wrapped_at_any_width_with_any_line_end_reads_as_itself() {
        let key = SigningKey::generate();
        let public = key.verifying_key().to_pem();
        for (width, end) in [(76, "\n"), (64, "\r\n"), (40, "\r\n"), (200, "\n")] {
            let private = SigningKey::from_pem(&wrapped_at(&key.to_pem(), width, end), "test")
                .unwrap_or_else(|error| panic!("{width} columns: {error}"));
            assert_eq!(private.to_pem(), key.to_pem());
            let read = VerifyingKey::from_pem(&wrapped_at(&public, width, end), "test").unwrap();
            assert_eq!(read.to_pem(), public);
        }
        assert!(
            VerifyingKey::from_pem(
                "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
                "test"
            )
            .is_err()
        );
    }

    #[test]
    fn other_pem_is_refused_by_name() {
        let error = SigningKey::from_pem(
            "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
            "FORGE_SIGNING_KEY",
        )
        .unwrap_err();
        assert!(
            error.to_string().starts_with("FORGE_SIGNING_KEY is not"),
            "{error}"
        );
    }
}
