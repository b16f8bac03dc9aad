//! Why a build or publication failed, each with what to do.

use std::path::PathBuf;

use crate::diagnostics::{Advice, Advise};

/// Why a build could not start, or did not finish.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// Another `forge build` holds the recipe.
    #[error("another `forge build` is running on the recipe {}", root.display())]
    Busy {
        /// The recipe folder.
        root: PathBuf,
    },
    /// SIGINT or SIGTERM arrived before the build was recorded.
    #[error("interrupted by {signal} before the build was recorded")]
    Interrupted {
        /// `SIGINT` or `SIGTERM`.
        signal: &'static str,
    },
    /// A push failed after other tags were pushed; forge.lock records those.
    #[error(
        "the push stopped part way: pushed {}; not pushed {}",
        pushed.join(", "),
        not_pushed.join(", ")
    )]
    PartlyPushed {
        /// The tags in the registry, recorded with their digests.
        pushed: Vec<String>,
        /// The tags not pushed.
        not_pushed: Vec<String>,
        /// Why the push stopped.
        source: crate::engine::EngineError,
    },
    /// The registry of the base image refused to let the daemon pull it.
    #[error(
        "cannot pull the base {base}: the registry refused the credentials for {registry} ({said})"
    )]
    BasePull {
        /// The base image.
        base: String,
        /// Its registry.
        registry: String,
        /// What the daemon said.
        said: String,
    },
    /// The registry of another image the Dockerfile names (a stage's `FROM`, a `COPY --from`)
    /// refused to let the daemon pull it.
    #[error(
        "cannot pull {image}, which the Dockerfile names: the registry refused the credentials for {registry} ({said})"
    )]
    ImagePull {
        /// The image.
        image: String,
        /// Its registry.
        registry: String,
        /// What the daemon said.
        said: String,
    },
    /// The daemon could not reach the registry of an image the Dockerfile pulls (the base, or
    /// another stage's): a name that does not resolve, a connection refused or timed out.
    #[error("the daemon could not reach {registry} to pull {image}{}: {said}", if *base { ", the base image" } else { ", which the Dockerfile names" })]
    PullUnreachable {
        /// The image.
        image: String,
        /// Its registry.
        registry: String,
        /// Whether it is the recipe's base.
        base: bool,
        /// What the daemon said.
        said: String,
    },
    /// An immutable tag on the daemon names another image than the one just built.
    #[error("tag {tag} already points at {current}, not at the image just built ({built}){}", differs.as_deref().map(|differs| format!("; {differs}")).unwrap_or_default())]
    TagHoldsAnother {
        /// The tag.
        tag: String,
        /// The image it names.
        current: crate::engine::ImageId,
        /// The image just built.
        built: crate::engine::ImageId,
        /// How the two differ, once compared (`they differ in layer 6 (RUN …): /path`).
        differs: Option<String>,
    },
    /// The recipe folder could not be locked.
    #[error("cannot lock the recipe folder {} for the build", root.display())]
    Lock {
        /// The recipe folder.
        root: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

impl Advise for BuildError {
    fn advice(&self) -> Advice {
        Advice::Hint(match self {
            BuildError::BasePull { registry, .. } | BuildError::ImagePull { registry, .. } => format!(
                "log in with `docker login {registry}`, or set FORGE_REGISTRY_USER and FORGE_REGISTRY_PASSWORD with FORGE_REGISTRY_HOST={registry}; no tag moved and forge.lock is unchanged"
            ),
            BuildError::PullUnreachable { registry, image, .. } => format!(
                "this is the network between the daemon and {registry}, not the recipe: check the daemon's DNS and its proxy (HTTPS_PROXY in the daemon's own environment), or give it a registry mirror; `docker pull {image}` on that daemon shows the same; no tag moved and forge.lock is unchanged"
            ),
            BuildError::Busy { .. } => {
                "wait for it to finish (its tags and forge.lock are moved only when it succeeds), then build again".to_owned()
            }
            BuildError::Interrupted { .. } => {
                "every tag moved was put back and forge.lock is as it was; build again to finish".to_owned()
            }
            BuildError::PartlyPushed { .. } => {
                "the tags stay on the image built and forge.lock records the digests pushed; run `forge build --push` again to push the rest".to_owned()
            }
            BuildError::Lock { .. } => "check the recipe folder's permissions".to_owned(),
            BuildError::TagHoldsAnother { differs, .. } => match differs {
                Some(_) => format!(
                    "{IMMUTABLE_HINT}; a step that writes the clock, a build path or a random name does not reproduce (docs/reproducible.md)"
                ),
                None => IMMUTABLE_HINT.to_owned(),
            },
        })
    }

    fn exit_status(&self) -> crate::diagnostics::ExitStatus {
        match self {
            // A check that ran and did not hold.
            BuildError::TagHoldsAnother { .. } => crate::diagnostics::ExitStatus::Failure,
            _ => crate::diagnostics::ExitStatus::Error,
        }
    }
}

/// What to do when an immutable tag names another image.
pub(super) const IMMUTABLE_HINT: &str =
    "dated tags are immutable; bump the date in pins.toml, or pass --force to re-point it";

crate::advised!(BuildError);
