//! What the template sees: the recipe as plain values (the image, its tags, the base, each pin
//! with its source, shims and wheels, the patch series and the overlays).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::pins::{AssertSource, GitSource, PythonSource};
use crate::pins::{Fix, Mutability, Pin, Source};
use crate::recipe::Recipe;

use super::{REVISION_ARG, gate};

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

#[derive(Debug, Serialize)]
#[serde(untagged)]
enum SourceView {
    Python {
        package: String,
        version: String,
        requirement: String,
        /// Its line of a requirements file, quoted for the shell: the requirement with a
        /// `--hash` for every recorded file (`printf '%s\n' LINE... | pip install -r /dev/stdin`).
        line: String,
        /// Whether every file pip may take has a recorded sha256 (`--require-hashes` holds).
        hashed: bool,
        install: bool,
        index: Option<String>,
        shim: Option<ShimView>,
    },
    Wheels {
        version: String,
        wheels: Vec<WheelView>,
        /// The packages without a recorded sha256 (pip installs them unchecked): the
        /// template says so where it installs them.
        unhashed: Vec<String>,
        /// Whether every wheel has its hashes (`--require-hashes` holds).
        hashed: bool,
        /// Where the files are downloaded from (`{version}`, `{file}`), if not from an index.
        url: Option<String>,
    },
    Git {
        url: String,
        branch: Option<String>,
        rev: String,
        revision_file: String,
        /// The series forge applied to it, when one patches it: the build step applies it.
        series: Option<SeriesView>,
    },
    Assert {
        version: String,
    },
}

#[derive(Debug, Serialize)]
struct ShimView {
    file: String,
    module: String,
    exports: Vec<String>,
    gate: String,
}

#[derive(Debug, Serialize)]
struct WheelView {
    package: String,
    version: String,
    /// What pip installs: `package==version` from an index, or the file's URL when the set
    /// has a `url`.
    requirement: String,
    /// Its line of a requirements file, quoted for the shell: the requirement with a `--hash`
    /// for each recorded sha256.
    line: String,
    /// Whether it has a recorded sha256.
    hashed: bool,
    index: Option<String>,
    /// The file's URL, for a set downloaded from a `url`.
    url: Option<String>,
    sha256: Option<String>,
}

/// A git pin's patch series: `COPY {{ from }}/ {{ to }}`, then apply `{{ to }}*.patch` in
/// name order onto the checkout.
#[derive(Debug, Serialize)]
struct SeriesView {
    from: String,
    to: String,
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

/// What the template sees of one wheel of a set at `version`.
fn wheel_view(
    wheel: &crate::pins::Wheel,
    version: &crate::types::python::Version,
    url: Option<&crate::types::url::UrlTemplate>,
) -> WheelView {
    let download = wheel.url(url, version);
    let requirement = match &download {
        Some(download) => download.to_string(),
        None => format!("{}=={}", wheel.package, wheel.version(version)),
    };
    let hashes: Vec<&str> = match &download {
        Some(_) => wheel.sha256.iter().map(|sha256| sha256.as_str()).collect(),
        None => wheel
            .files
            .iter()
            .map(|file| file.sha256.as_str())
            .collect(),
    };
    WheelView {
        package: wheel.package.to_string(),
        version: wheel.version(version),
        line: requirements_line(&requirement, &hashes),
        hashed: wheel.hashed(),
        requirement,
        index: wheel.index.as_ref().map(ToString::to_string),
        url: download.as_ref().map(ToString::to_string),
        sha256: wheel.sha256.as_ref().map(ToString::to_string),
    }
}

/// `requirement --hash=sha256:HEX ...` in single quotes: one line of a requirements file as a
/// shell word. Requirements, URLs and hashes have passed grammars without quotes.
fn requirements_line(requirement: &str, hashes: &[&str]) -> String {
    let mut line = requirement.to_owned();
    for hash in hashes {
        line.push_str(&format!(" --hash=sha256:{hash}"));
    }
    format!("'{line}'")
}

impl PinView {
    fn of(pin: &Pin, recipe: &Recipe) -> Self {
        let fixes: Vec<&Fix> = recipe
            .pins
            .fixes
            .iter()
            .filter(|fix| fix.by_pin(&pin.name))
            .collect();
        let shimmed = matches!(
            &pin.source,
            Source::Python(PythonSource { shim: Some(_), .. })
        );
        let source = match &pin.source {
            Source::Python(PythonSource {
                package,
                version,
                install,
                index,
                shim,
                files,
            }) => SourceView::Python {
                package: package.to_string(),
                version: version.to_string(),
                requirement: format!("{package}=={version}"),
                line: requirements_line(
                    &format!("{package}=={version}"),
                    &files
                        .iter()
                        .map(|file| file.sha256.as_str())
                        .collect::<Vec<_>>(),
                ),
                hashed: !files.is_empty(),
                install: *install,
                index: index.as_ref().map(ToString::to_string),
                shim: shim.as_ref().map(|shim| ShimView {
                    file: shim.file.to_string(),
                    module: shim.module.to_string(),
                    exports: shim.exports.iter().map(ToString::to_string).collect(),
                    // The shim is the step's last command: what the pin fixes is checked after it.
                    gate: gate::with_fixes(gate::for_shim(shim), fixes.iter().copied()),
                }),
            },
            Source::Wheels(set) => SourceView::Wheels {
                version: set.version.to_string(),
                wheels: set
                    .wheels
                    .iter()
                    .map(|wheel| wheel_view(wheel, &set.version, set.url.as_ref()))
                    .collect(),
                unhashed: set.unhashed(),
                hashed: set.unhashed().is_empty(),
                url: set.url.as_ref().map(ToString::to_string),
            },
            Source::Git(GitSource { url, branch, rev }) => SourceView::Git {
                url: url.to_string(),
                branch: branch.as_ref().map(ToString::to_string),
                rev: rev.to_string(),
                revision_file: gate::revision_file(pin),
                series: patched(recipe, pin).then(|| SeriesView {
                    from: gate::series_context_folder(pin.name.as_str()),
                    to: gate::series_image_folder(pin.name.as_str()),
                }),
            },
            Source::Assert(AssertSource { version, .. }) => SourceView::Assert {
                version: version.to_string(),
            },
        };
        PinView {
            name: pin.name.to_string(),
            kind: pin.kind().to_string(),
            module: pin.module.as_ref().map(ToString::to_string),
            gate: if shimmed {
                gate::for_pin(pin)
            } else {
                gate::with_fixes(gate::for_pin(pin), fixes.iter().copied())
            },
            source,
        }
    }
}
