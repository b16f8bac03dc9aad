//! Offers for what no package index serves: a git pin's branch head and the base image's tags.

use crate::pins::GitSource;
use crate::pins::Pins;
use crate::registry::{RegistryError, RemoteRepository};
use crate::types::git::GitRev;
use crate::types::oci::Tag;

use super::offer::OfferError;
use super::upstream::Upstream;

/// What a git remote offers a git pin.
#[derive(Debug, Clone)]
pub struct GitOffer {
    /// Where the pin stands.
    pub current: GitRev,
    /// The head of its branch (or the remote's HEAD), full 40-hex.
    pub head: GitRev,
}

impl GitOffer {
    /// Whether the pin already names the head (a short revision that prefixes it counts as
    /// behind, since it is not yet the full id).
    pub fn is_current(&self) -> bool {
        self.current == self.head
    }
}

/// What the remote offers a git pin.
pub fn git_offer(git: &GitSource, upstream: &Upstream<'_>) -> Result<GitOffer, OfferError> {
    Ok(GitOffer {
        current: git.rev.clone(),
        head: upstream.git.head(&git.url, git.branch.as_ref())?,
    })
}

/// What the registry offers the base image.
#[derive(Debug, Clone)]
pub struct BaseOffer {
    /// The tag the base names now, if any.
    pub current: Option<String>,
    /// The newest tag matching `[base] tags` (the current tag when there is no pattern).
    pub newest: String,
    /// The digest of the newest tag's manifest.
    pub digest: crate::types::oci::Digest,
    /// Tags newer than the current one that match the pattern, newest first.
    pub newer: Vec<String>,
}

/// Asks the registry for the base image's tags and the digest of the one to move to; `to`
/// names a tag instead of the newest.
pub fn base_offer(
    pins: &Pins,
    upstream: &Upstream<'_>,
    to: Option<&Tag>,
) -> Result<BaseOffer, OfferError> {
    let base = &pins.base;
    let repository = RemoteRepository::of(&base.image);
    let current = base.image.tag().map(ToOwned::to_owned);
    let (newest, newer) = match (to, &base.tags) {
        (Some(tag), _) => (tag.to_string(), Vec::new()),
        (None, Some(pattern)) => {
            let matcher = pattern.compile();
            let mut matching: Vec<String> = upstream
                .registry
                .tags(&repository)?
                .into_iter()
                .filter(|tag| matcher.matches(tag))
                .collect();
            matching.sort_by(|a, b| crate::registry::natural_order(b, a));
            let newer: Vec<String> = matching
                .iter()
                .filter(|tag| {
                    current
                        .as_deref()
                        .is_none_or(|current| crate::registry::natural_order(tag, current).is_gt())
                })
                .cloned()
                .collect();
            let newest = newer
                .first()
                .cloned()
                .or_else(|| current.clone())
                .or_else(|| matching.first().cloned())
                .ok_or_else(|| RegistryError::NotFound {
                    url: repository.to_string(),
                    what: format!("a tag matching {pattern}"),
                })?;
            (newest, newer)
        }
        (None, None) => (
            current.clone().unwrap_or_else(|| "latest".to_owned()),
            Vec::new(),
        ),
    };
    let digest = upstream.registry.manifest_digest(&repository, &newest)?;
    Ok(BaseOffer {
        current,
        newest,
        digest,
        newer,
    })
}
