//! Why a build context could not be assembled, each with what to do.

use std::path::PathBuf;

use crate::diagnostics::{Advice, Advise, ExitStatus};
use crate::fs::PathError;

use super::ignore::IgnoreFileError;

/// Why the context could not be assembled.
#[derive(Debug, thiserror::Error)]
pub enum ContextError {
    /// A file or folder of the context could not be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The archive could not be written.
    #[error("cannot write the build context: {0}")]
    Write(std::io::Error),
    /// The archive could not be written to the file `--context-out` names.
    #[error("cannot write the build context to {}", path.display())]
    WriteTo {
        /// What `--context-out` names.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A special file sits in a context folder, or a path leads out of the recipe.
    #[error(transparent)]
    Path(#[from] PathError),
    /// Secret-looking files would go into the context.
    #[error(
        "the build context would hold {}: {}",
        if files.len() == 1 { "a file that looks like a secret" } else { "files that look like secrets" },
        files.join(", ")
    )]
    Secrets {
        /// Their paths in the context.
        files: Vec<String>,
    },
    /// A file name that is not UTF-8 cannot be named in a tar header portably.
    #[error("{} has a name that is not UTF-8", path.display())]
    NotUtf8 {
        /// The path.
        path: PathBuf,
    },
    /// A file shrank while it was archived.
    #[error("{} changed while the build context was written", path.display())]
    Changed {
        /// The path.
        path: PathBuf,
    },
    /// `SOURCE_DATE_EPOCH` is set but is not a Unix timestamp.
    #[error("SOURCE_DATE_EPOCH={value:?} is not a number of seconds since 1970-01-01 UTC")]
    SourceDateEpoch {
        /// Its value.
        value: String,
    },
    /// `.dockerignore` could not be read.
    #[error(transparent)]
    IgnoreFile(#[from] IgnoreFileError),
}

impl Advise for ContextError {
    fn advice(&self) -> Advice {
        match self {
            ContextError::Read { .. } => {
                Advice::Hint("check that the path exists and is readable".to_owned())
            }
            ContextError::IgnoreFile(error) => error.advice(),
            ContextError::Write(_) => Advice::Hint(
                "the archive is written to the temporary folder; check its free space or set TMPDIR"
                    .to_owned(),
            ),
            ContextError::WriteTo { .. } => Advice::Hint(
                "check that the file --context-out names is writable and its disk has room; nothing was built"
                    .to_owned(),
            ),
            ContextError::Path(error) => error.advice(),
            ContextError::Secrets { files } => Advice::Hint(format!(
                "exclude {} in .dockerignore, or allow {} by name in pins.toml: [context] allow_secrets = [{}]",
                if files.len() == 1 { "it" } else { "them" },
                if files.len() == 1 { "it" } else { "each" },
                files
                    .iter()
                    .map(|file| format!("\"{file}\""))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            ContextError::NotUtf8 { .. } => Advice::Hint("rename it".to_owned()),
            ContextError::Changed { .. } => {
                Advice::Hint("run the build again once nothing writes to the recipe".to_owned())
            }
            ContextError::SourceDateEpoch { .. } => Advice::Hint(
                "unset it, or set it to an integer such as `git log -1 --format=%ct`".to_owned(),
            ),
        }
    }

    fn exit_status(&self) -> ExitStatus {
        match self {
            ContextError::Secrets { .. } => ExitStatus::Failure,
            _ => ExitStatus::Error,
        }
    }
}

crate::advised!(ContextError);
