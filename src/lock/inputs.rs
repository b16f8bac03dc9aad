//! The digests of a build's inputs, and how two sets of them differ (`--locked`).

use serde::{Deserialize, Serialize};

use super::LockError;
use crate::context::{self, BuildContext};
use crate::recipe::{Recipe, TEMPLATES_DIR};
use crate::render::Dockerfile;
use crate::types::oci::Digest;

/// The digests of a build's inputs; equal inputs give an equal context and Dockerfile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inputs {
    /// pins.toml.
    pub pins: Digest,
    /// The templates folder.
    pub templates: Digest,
    /// Every patch series folder.
    pub patches: Digest,
    /// Every overlay folder, as checked in (before patches).
    pub overlays: Digest,
    /// The rendered Dockerfile.
    pub dockerfile: Digest,
    /// The build context archive.
    pub context: Digest,
    /// The mtime every context entry carried (`SOURCE_DATE_EPOCH` at build time, else 0);
    /// `forge verify-digest` assembles the context with it again.
    #[serde(default)]
    pub context_mtime: u64,
}

impl Inputs {
    /// Inputs whose digests are all distinct fixtures: for tests.
    #[cfg(test)]
    pub(crate) fn sample() -> Self {
        Self {
            pins: Digest::filled('1'),
            templates: Digest::filled('2'),
            patches: Digest::filled('3'),
            overlays: Digest::filled('4'),
            dockerfile: Digest::filled('5'),
            context: Digest::filled('6'),
            context_mtime: 0,
        }
    }

    /// The inputs of `recipe` as they are now: pins.toml, the templates folder, every patch
    /// series, every overlay folder and shim file as checked in, and the Dockerfile and context
    /// made from them.
    pub fn of(
        recipe: &Recipe,
        dockerfile: &Dockerfile,
        context: &BuildContext,
        context_mtime: u64,
    ) -> Result<Inputs, LockError> {
        let pins_path = recipe.pins_path();
        // A lane's pins.toml counts as laid over the recipe it varies: a change in either is one.
        let pins_bytes = recipe.pins_text().map_err(|source| LockError::Io {
            action: "read",
            path: pins_path.clone(),
            source,
        })?;
        let pins = Digest::from_sha256(&<sha2::Sha256 as sha2::Digest>::digest(
            pins_bytes.as_bytes(),
        ));
        Ok(Inputs {
            pins,
            templates: context::digest_of(&recipe.files, &[TEMPLATES_DIR])?,
            patches: context::digest_of(&recipe.files, &recipe.series_paths())?,
            overlays: context::digest_of(&recipe.files, &recipe.copied_paths())?,
            dockerfile: dockerfile.digest(),
            context: context.digest.clone(),
            context_mtime,
        })
    }

    /// The names people know the inputs by, in record order.
    pub const NAMES: [&'static str; 6] = [
        "pins.toml",
        "templates",
        "patches",
        "overlays",
        "Dockerfile",
        "context",
    ];

    /// Each digest with the name people know its input by, in record order.
    pub fn named(&self) -> [(&'static str, &Digest); 6] {
        let [pins, templates, patches, overlays, dockerfile, context] = Self::NAMES;
        [
            (pins, &self.pins),
            (templates, &self.templates),
            (patches, &self.patches),
            (overlays, &self.overlays),
            (dockerfile, &self.dockerfile),
            (context, &self.context),
        ]
    }

    /// The inputs that differ between `self` (recorded) and `current`, as
    /// `(name, recorded, current)`.
    pub fn differences(&self, current: &Inputs) -> Vec<(&'static str, Digest, Digest)> {
        self.named()
            .into_iter()
            .zip(current.named())
            .filter(|((_, recorded), (_, current))| recorded != current)
            .map(|((name, recorded), (_, current))| (name, recorded.clone(), current.clone()))
            .collect()
    }
}
