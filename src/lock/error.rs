//! Why forge.lock could not be read or written.

use std::path::PathBuf;

use super::FORMAT_VERSION;
use crate::context::ContextError;
use crate::diagnostics::{Advice, Advise};

/// Why forge.lock could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
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
    /// The file is not a record forge wrote.
    #[error("{at}: not a valid build record: {message}")]
    Invalid {
        /// The file, with the line and column of what is wrong when there is one.
        at: String,
        /// What is wrong.
        message: String,
    },
    /// The record is in a format this forge does not read.
    #[error("{at}: forge.lock format version {found}; this forge reads version {FORMAT_VERSION}")]
    Version {
        /// The file, line and column of the version.
        at: String,
        /// The version the file declares.
        found: i64,
    },
    /// An input could not be hashed.
    #[error(transparent)]
    Inputs(#[from] ContextError),
}

impl Advise for LockError {
    fn advice(&self) -> Advice {
        Advice::Hint(match self {
            LockError::Io { .. } => "check the recipe folder's permissions".to_owned(),
            LockError::Invalid { .. } => {
                "restore it from version control, or delete it and run `forge build` to record a fresh build"
                    .to_owned()
            }
            LockError::Version { found, .. } if *found > i64::from(FORMAT_VERSION) => {
                "a newer forge wrote it: build with that version, or delete forge.lock and run `forge build` to record a fresh build".to_owned()
            }
            LockError::Version { .. } => {
                "delete forge.lock and run `forge build` to record a fresh build".to_owned()
            }
            LockError::Inputs(error) => return error.advice(),
        })
    }
}

crate::advised!(LockError);
