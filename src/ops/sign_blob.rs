//! `forge sign-blob FILE`: a detached signature of a file, as `cosign sign-blob --key` writes
//! one (base64 of the ASN.1 DER ECDSA P-256 signature over the file's SHA-256), so that the
//! release's checksums are signed by the key that signs the images; `cosign verify-blob` and
//! `openssl dgst -sha256 -verify` both check it. With `--bundle`, also the sigstore bundle
//! cosign 3 writes and reads (`cosign verify-blob --bundle`).

use std::path::{Path, PathBuf};

use crate::attest::keys::SigningKey;
use crate::printer::Printer;

/// Why a file could not be signed.
#[derive(Debug, thiserror::Error)]
pub enum SignBlobError {
    /// Neither `--sign-key` nor `FORGE_SIGNING_KEY` gives a key.
    #[error(
        "forge sign-blob needs a signing key, and neither --sign-key nor FORGE_SIGNING_KEY gives one"
    )]
    NoKey,
    /// The file to sign could not be opened as a regular file.
    #[error(transparent)]
    Open(#[from] crate::fs::PathError),
    /// Reading the file failed part way.
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// `--out` or `--bundle` names the file being signed.
    #[error("{} is the file being signed; its signature would replace it", path.display())]
    OverFile { path: PathBuf },
    /// The signature could not be written.
    #[error("cannot write the signature to {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl crate::diagnostics::Advise for SignBlobError {
    fn advice(&self) -> crate::diagnostics::Advice {
        use crate::diagnostics::Advice;
        match self {
            SignBlobError::NoKey => crate::attest::keys::KeyError::Missing.advice(),
            SignBlobError::Open(error) => error.advice(),
            SignBlobError::Read { .. } => {
                Advice::Hint("check the file and sign it again; no signature was written".into())
            }
            SignBlobError::OverFile { .. } => Advice::Hint(
                "name another file for the signature (without --out it goes to FILE.sig); nothing was written".into(),
            ),
            SignBlobError::Write { .. } => Advice::Hint(
                "check that the folder of --out exists and is writable; nothing else was written"
                    .into(),
            ),
        }
    }
}

crate::advised!(SignBlobError);

/// The key `--sign-key` names, else the one `FORGE_SIGNING_KEY` holds.
pub fn signing_key(path: Option<&Path>) -> anyhow::Result<SigningKey> {
    match SigningKey::given(path) {
        Err(crate::attest::keys::KeyError::Missing) => Err(SignBlobError::NoKey.into()),
        other => Ok(other?),
    }
}

/// Whether `a` and `b` name one file (by device and inode, whatever links or relative paths
/// lead there); false when either does not exist.
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Where the signature of `file` goes by default: beside it, as `FILE.sig`.
pub fn default_signature_path(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".sig");
    PathBuf::from(name)
}

/// Signs `file` with `key` and writes the signature (base64, one line) to `out` and, when
/// `bundle` names a file, a sigstore bundle of it there, as `cosign sign-blob --bundle` (cosign
/// 3) writes one: the file's SHA-256 and the signature, the key named by its hint.
pub fn sign_blob(
    file: &Path,
    key: &SigningKey,
    out: &Path,
    bundle: Option<&Path>,
    printer: &Printer,
) -> Result<String, SignBlobError> {
    let opened = crate::fs::open_regular(file)?;
    for path in std::iter::once(out).chain(bundle) {
        if same_file(file, path) {
            return Err(SignBlobError::OverFile {
                path: path.to_owned(),
            });
        }
    }
    let (signature, sha256) = key
        .sign_stream(std::io::BufReader::with_capacity(1 << 16, opened))
        .map_err(|source| SignBlobError::Read {
            path: file.to_owned(),
            source,
        })?;
    let write = |path: &Path, bytes: &[u8]| {
        crate::fs::write_output(path, bytes).map_err(|source| SignBlobError::Write {
            path: path.to_owned(),
            source,
        })
    };
    write(out, format!("{signature}\n").as_bytes())?;
    printer.status(
        "Signed",
        format_args!("{} with {} → {}", file.display(), key.origin, out.display()),
    );
    if let Some(path) = bundle {
        let verifying = key.verifying_key();
        write(
            path,
            &crate::attest::bundle::of_message(&sha256, &signature, &verifying),
        )?;
        printer.status(
            "Wrote",
            format_args!("{} (sigstore bundle)", path.display()),
        );
    }
    Ok(signature)
}
