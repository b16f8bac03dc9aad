//! `pin bump base`: the base image to the newest tag matching `[base] tags` (or the tag `--to`
//! names), with its manifest digest recorded.

use std::str::FromStr;

use anyhow::Context as _;

use super::{BASE, Move, PinBumpOptions};
use crate::bump::edit::Assignment;
use crate::bump::{self, BumpError, Upstream};
use crate::printer::Printer;
use crate::recipe::Recipe;
use crate::types::oci::Tag;

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
