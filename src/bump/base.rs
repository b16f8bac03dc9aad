//! `pin bump base`: what the registry offers the base image (its tags matching `[base] tags`,
//! and the digest of the one to move to), and the move to the newest of them (or the tag `--to`
//! names), with its manifest digest recorded.

use std::str::FromStr;

use anyhow::Context as _;

use crate::bump::{self, BumpError};
use crate::pins::Pins;
use crate::printer::Printer;
use crate::recipe::Recipe;
use crate::registry::{RegistryError, RemoteRepository};
use crate::types::oci::Tag;

use super::edit::Assignment;
use super::offer::OfferError;
use super::upstream::Upstream;
use super::{BASE, Move, PinBumpOptions};

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

pub(super) fn plan_base(
    recipe: &Recipe,
    options: &PinBumpOptions,
    upstream: &Upstream<'_>,
    printer: &Printer,
) -> anyhow::Result<Option<Move>> {
    let base = &recipe.pins.base;
    let to = options
        .to
        .as_deref()
        .map(|text| {
            Tag::from_str(text).map_err(|error| BumpError::InvalidTarget {
                value: text.to_owned(),
                message: error.to_string(),
            })
        })
        .transpose()?;
    let offer = bump::base_offer(&recipe.pins, upstream, to.as_ref()).with_context(|| {
        format!(
            "cannot look up the base image {}; pins.toml was not changed",
            base.image
        )
    })?;
    let text = base.image.as_str();
    let repository = match &offer.current {
        Some(tag) => text.strip_suffix(&format!(":{tag}")).unwrap_or(text),
        None => text,
    };
    let image = format!("{repository}:{}", offer.newest);
    let mut assignments = Vec::new();
    if image != text {
        assignments.push(Assignment::new(&["base"], "image", image.as_str()));
    }
    if base.digest.as_ref() != Some(&offer.digest) {
        assignments.push(Assignment::new(&["base"], "digest", offer.digest.as_str()));
    }
    if assignments.is_empty() {
        printer.status("Fresh", format_args!("base is at {image}@{}", offer.digest));
        return Ok(None);
    }
    Ok(Some(Move {
        subject: BASE.to_owned(),
        from: base.reference(),
        to: format!("{image}@{}", offer.digest),
        detail: match (&options.to, &base.tags) {
            (Some(_), _) => "the tag given with --to".to_owned(),
            (None, Some(pattern)) => format!("the newest tag matching {pattern}"),
            (None, None) => {
                "the digest of its tag; declare [base] tags to follow newer tags".to_owned()
            }
        },
        assignments,
        patches: Vec::new(),
    }))
}
