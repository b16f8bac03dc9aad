//! What the template sees: the recipe as plain values (the image, its tags, the base, each pin
//! with its source, shims and wheels, the patch series and the overlays).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::pins::{Around, Fix, Mutability, Pin, SourceView};
use crate::recipe::Recipe;

use crate::pins::gate;

use super::REVISION_ARG;

/// The `SOURCE_DATE_EPOCH` the steps see: 1980-01-01T00:00:00Z, the earliest time a zip file
/// (a wheel a step builds) can hold, as Nix sets it. A fixed value keeps each step's cache when
/// the recipe's date moves; the image's own timestamps are clamped to that date afterwards.
pub const STEP_SOURCE_DATE_EPOCH: u64 = 315_532_800;

/// What the template sees. Field names are the template's vocabulary; keep them stable.
#[derive(Debug, Serialize)]
pub(super) struct View {
    image: ImageView,
    base: BaseView,
    env: Vec<NameValue>,
    args: Vec<NameValue>,
    pins: BTreeMap<String, PinView>,
    overlays: Vec<OverlayView>,
    /// The patch scripts, in pins.toml's order: `COPY {{ script.file }} {{ script.to }}`, then
    /// `RUN {{ script.run }}`.
    scripts: Vec<ScriptView>,
    /// The donors by name: `FROM {{ donors.NAME.reference }} AS NAME`.
    donors: BTreeMap<String, DonorView>,
    /// The names of the recipe's fixes, in name order (each is checked by its step's gate).
    fixes: Vec<String>,
    revision_arg: &'static str,
    revisions_dir: &'static str,
    /// The `SOURCE_DATE_EPOCH` every step sees: fixed, whatever the recipe's date.
    step_source_date_epoch: u64,
}

#[derive(Debug, Serialize)]
struct ImageView {
    repository: String,
    source: Option<String>,
    platform: String,
    tags: Vec<TagView>,
    created: String,
    version: String,
    labels: Vec<NameValue>,
}

#[derive(Debug, Serialize)]
struct TagView {
    name: String,
    immutable: bool,
}

#[derive(Debug, Serialize)]
struct BaseView {
    image: String,
    digest: Option<String>,
    reference: String,
}

#[derive(Debug, Serialize)]
struct NameValue {
    name: String,
    value: String,
}

#[derive(Debug, Serialize)]
struct PinView {
    name: String,
    kind: String,
    module: Option<String>,
    gate: String,
    #[serde(flatten)]
    source: SourceView,
}

/// A donor: the image as written, its digest, and `image@digest`.
#[derive(Debug, Serialize)]
struct DonorView {
    image: String,
    digest: String,
    reference: String,
}

/// A patch script: its file in the context, where the image keeps it, and its step's command.
#[derive(Debug, Serialize)]
struct ScriptView {
    file: String,
    to: String,
    run: String,
}

#[derive(Debug, Serialize)]
struct OverlayView {
    from: String,
    to: String,
    gate: String,
}

impl View {
    pub(super) fn of(recipe: &Recipe) -> Self {
        let pins = &recipe.pins;
        let tags = recipe.tags();
        // The version label names the build for good: the first immutable tag, if there is one.
        let version = tags
            .iter()
            .find(|tag| tag.mutability == Mutability::Immutable)
            .or(tags.first())
            .map(|tag| tag.tag.to_string())
            .unwrap_or_default();
        View {
            image: ImageView {
                repository: pins.image.repository.to_string(),
                source: pins.image.source.as_ref().map(ToString::to_string),
                platform: pins.image.platform.to_string(),
                tags: tags
                    .iter()
                    .map(|tag| TagView {
                        name: tag.tag.to_string(),
                        immutable: tag.mutability == Mutability::Immutable,
                    })
                    .collect(),
                created: recipe.date.rfc3339_midnight(),
                version,
                labels: name_values(&pins.image.labels),
            },
            base: BaseView {
                image: pins.base.image.to_string(),
                digest: pins.base.digest.as_ref().map(ToString::to_string),
                reference: pins.base.reference(),
            },
            env: name_values(&pins.env),
            args: name_values(&pins.args),
            pins: pins
                .pins
                .values()
                .map(|pin| (pin.name.to_string(), PinView::of(pin, recipe)))
                .collect(),
            overlays: pins
                .overlays
                .iter()
                .map(|overlay| OverlayView {
                    from: overlay.from.to_string(),
                    to: overlay.to.to_string(),
                    gate: gate::with_fixes(
                        gate::for_overlay(overlay),
                        pins.fixes.iter().filter(|fix| fix.by_overlay(overlay)),
                    ),
                })
                .collect(),
            scripts: pins
                .scripts
                .iter()
                .map(|script| ScriptView {
                    file: script.file.to_string(),
                    to: format!("{}/{}", gate::SCRIPTS_DIR, script.name()),
                    run: gate::for_script(script),
                })
                .collect(),
            donors: pins
                .donors
                .iter()
                .map(|(name, donor)| {
                    let view = DonorView {
                        image: donor.image.to_string(),
                        digest: donor.digest.to_string(),
                        reference: donor.reference(),
                    };
                    (name.to_string(), view)
                })
                .collect(),
            fixes: pins.fixes.iter().map(|fix| fix.name.to_string()).collect(),
            revision_arg: REVISION_ARG,
            revisions_dir: gate::REVISIONS_DIR,
            step_source_date_epoch: STEP_SOURCE_DATE_EPOCH,
        }
    }
}

/// Whether a `[[patches]]` series patches `pin`.
pub(super) fn patched(recipe: &Recipe, pin: &Pin) -> bool {
    recipe
        .pins
        .patches
        .iter()
        .any(|series| series.pin.as_ref() == Some(&pin.name))
}

fn name_values<K: std::fmt::Display, V: std::fmt::Display>(map: &BTreeMap<K, V>) -> Vec<NameValue> {
    map.iter()
        .map(|(name, value)| NameValue {
            name: name.to_string(),
            value: value.to_string(),
        })
        .collect()
}

impl PinView {
    fn of(pin: &Pin, recipe: &Recipe) -> Self {
        let fixes: Vec<&Fix> = recipe
            .pins
            .fixes
            .iter()
            .filter(|fix| fix.by_pin(&pin.name))
            .collect();
        let source = pin.as_kind().view(&Around {
            name: &pin.name,
            patched: patched(recipe, pin),
            fixes: &fixes,
        });
        PinView {
            name: pin.name.to_string(),
            kind: pin.kind().to_string(),
            module: pin.module.as_ref().map(ToString::to_string),
            // A shim is its step's last command: the fixes are checked after it, by its gate.
            gate: if pin.as_kind().shim().is_some() {
                gate::for_pin(pin)
            } else {
                gate::with_fixes(gate::for_pin(pin), fixes.iter().copied())
            },
            source,
        }
    }
}
