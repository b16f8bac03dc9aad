//! Why verification could not start, and the build record it starts from.

use std::path::PathBuf;

use crate::diagnostics::{Advice, Advise};

/// Why verification could not start.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// There is no build record to verify.
    #[error("there is no build record to verify: {} does not exist", path.display())]
    NoRecord {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// forge.lock records the recipe's inputs, but no build of them.
    #[error("there is no build record to verify: {} records the recipe's inputs but no build of them", path.display())]
    NoBuild {
        /// forge.lock.
        path: PathBuf,
    },
    /// Something a check needed could not be reached.
    #[error("could not verify {subject}")]
    Unreached {
        /// What the check was about (a node, a registry tag).
        subject: String,
    },
}

impl Advise for VerifyError {
    fn advice(&self) -> Advice {
        match self {
            VerifyError::NoRecord { .. } | VerifyError::NoBuild { .. } => Advice::Hint(
                "run `forge build` (with --push for --remote) to record a build here, or name the image (`forge verify-digest REF`) to verify the record attached to it in its registry".to_owned(),
            ),
            VerifyError::Unreached { .. } => Advice::Nothing("the checks that could not run are listed above"),
        }
    }
}

crate::advised!(VerifyError);

/// The build `recipe`'s forge.lock records (`Recipe::lock`), or why there is none to check.
pub fn recorded_build(recipe: &crate::recipe::Recipe) -> anyhow::Result<crate::lock::Record> {
    let path = crate::lock::path(&recipe.root);
    match recipe.lock()?.as_deref() {
        Some(crate::lock::Lock::Built(record)) => Ok((**record).clone()),
        Some(crate::lock::Lock::Inputs { .. }) => Err(VerifyError::NoBuild { path }.into()),
        None => Err(VerifyError::NoRecord { path }.into()),
    }
}
