//! `forge sign-blob FILE [--sign-key KEY] [--out SIG]`.

use crate::cli::SignBlobArgs;
use crate::diagnostics::ExitStatus;
use crate::ops::sign_blob::{default_signature_path, sign_blob, signing_key};
use crate::printer::Printer;

pub(super) fn run(args: &SignBlobArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let key = signing_key(args.sign_key.as_deref())?;
    let out = (args.out.clone()).unwrap_or_else(|| default_signature_path(&args.file));
    let signature = sign_blob(&args.file, &key, &out, args.bundle.as_deref(), printer)?;
    if printer.is_json() {
        printer.json(&serde_json::json!({
            "file": args.file.display().to_string(),
            "signature": signature,
            "path": out.display().to_string(),
            "bundle": args.bundle.as_ref().map(|path| path.display().to_string()),
        }));
    }
    Ok(ExitStatus::Success)
}
