//! `forge sign-blob FILE [--sign-key KEY] [--out SIG]`.

use crate::cli::SignBlobArgs;
use crate::diagnostics::ExitStatus;
use crate::ops::sign_blob::{default_signature_path, sign_blob, signing_key};
use crate::printer::{Document, Printer};

pub(super) fn run(args: &SignBlobArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let key = signing_key(args.sign_key.as_deref())?;
    let out = (args.out.clone()).unwrap_or_else(|| default_signature_path(&args.file));
    let signature = sign_blob(&args.file, &key, &out, args.bundle.as_deref(), printer)?;
    printer.document(&Signed {
        file: args.file.display().to_string(),
        signature,
        path: out.display().to_string(),
        bundle: args.bundle.as_ref().map(|path| path.display().to_string()),
    });
    Ok(ExitStatus::Success)
}

/// What `forge sign-blob` wrote: the statuses say it; `--json` prints this.
#[derive(Debug, serde::Serialize)]
struct Signed<S: serde::Serialize> {
    /// The file signed.
    file: String,
    /// The signature.
    signature: S,
    /// Where the signature was written.
    path: String,
    /// Where the sigstore bundle was written, if asked for.
    bundle: Option<String>,
}

impl<S: serde::Serialize> Document for Signed<S> {}
