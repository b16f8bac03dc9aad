//! The shape of pins.toml as serde reads it. Every field is already a checked newtype, so the
//! TOML parser reports a bad value at its own line and column; `pins::load` then turns these
//! raw tables into the typed model (`Pins`), checking what depends on more than one field.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use toml::Spanned;

use crate::types::dockerfile::{EnvName, ImagePath, LabelKey, PlainValue, Text};
use crate::types::git::{BranchName, GitRev};
use crate::types::oci::{Digest, ImageRef, Platform, Repository, Tag, TagPattern};
use crate::types::python::{
    FileSha256, Identifier, LocalLabel, ModulePath, PackageName, PythonExpr, PythonVersion,
    Specifiers, Version, WheelFile, WheelName,
};
use crate::types::recipe::{ContextPath, Date, FixName, PinName, RecipePath};
use crate::types::url::{Url, UrlTemplate};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRecipe {
    /// `[lane]`: this recipe varies another one (`pins::lane` lays it over that one first).
    pub lane: Option<RawLane>,
    pub image: RawImage,
    pub base: RawBase,
    #[serde(default)]
    pub index: Option<RawIndex>,
    #[serde(default)]
    pub env: BTreeMap<EnvName, PlainValue>,
    #[serde(default)]
    pub args: BTreeMap<EnvName, PlainValue>,
    #[serde(default)]
    pub pins: BTreeMap<PinName, Spanned<RawPin>>,
    #[serde(default)]
    pub patches: Vec<RawPatches>,
    #[serde(default)]
    pub overlays: Vec<RawOverlay>,
    #[serde(default)]
    pub scripts: Vec<RawScript>,
    #[serde(default)]
    pub donors: BTreeMap<PinName, Spanned<RawDonor>>,
    #[serde(default)]
    pub context: Option<RawContext>,
    pub render: Option<RawRender>,
    #[serde(default)]
    pub fixes: BTreeMap<FixName, Spanned<RawFix>>,
    #[serde(default)]
    pub groups: BTreeMap<PinName, Spanned<RawGroup>>,
}

/// `[lane]`: the recipe a lane varies, and whether it is experimental.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLane {
    /// The folder of the recipe it varies, relative to the lane's own.
    pub of: Text,
    #[serde(default)]
    pub experimental: bool,
}

/// `[fixes.NAME]`: what a pin or an overlay fixes, and how to tell it is in place.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFix {
    /// The pin name, or the overlay's `from` folder, whose step brings the fix.
    pub by: Spanned<String>,
    pub symptom: Text,
    pub fix: Text,
    pub check: PythonExpr,
}

/// `[groups.NAME]`: how the pins of a group move.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawGroup {
    #[serde(default)]
    pub lockstep: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRender {
    pub committed: Option<Spanned<RecipePath>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawImage {
    pub repository: Repository,
    pub tags: RawTags,
    pub date: Option<Date>,
    pub platform: Option<Platform>,
    pub platforms: Option<Spanned<Vec<Platform>>>,
    pub source: Option<Url>,
    pub cache: Option<Spanned<crate::types::oci::Tag>>,
    #[serde(default)]
    pub labels: BTreeMap<LabelKey, Text>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTags {
    // Spanned element by element: an error inside an array is otherwise placed at the array.
    #[serde(default)]
    pub moving: Vec<Spanned<String>>,
    #[serde(default)]
    pub immutable: Vec<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawBase {
    pub image: ImageRef,
    pub digest: Option<Digest>,
    pub tags: Option<TagPattern>,
    pub python: Option<PythonVersion>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawIndex {
    #[serde(deserialize_with = "crate::types::url::deserialize_http")]
    pub url: Url,
}

/// Which kind of component a pin is; decides which other keys the pin may carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PinKind {
    /// A Python distribution at an exact version.
    Python,
    /// Several wheels that always carry the same version.
    Wheels,
    /// A git repository at a commit, built from source.
    Git,
    /// Something the base image already ships: checked, never installed.
    Assert,
}

impl fmt::Display for PinKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PinKind::Python => "python",
            PinKind::Wheels => "wheels",
            PinKind::Git => "git",
            PinKind::Assert => "assert",
        })
    }
}

/// How an assert-only pin's version is read inside the image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Probe {
    /// `ncclGetVersion` from the `libnccl.so.2` the image loads.
    Nccl,
}

impl fmt::Display for Probe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Probe::Nccl => "nccl",
        })
    }
}

/// Every key any kind of pin may have; `pins::load` checks which belong to the pin's kind.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPin {
    pub kind: PinKind,
    pub package: Option<PackageName>,
    pub module: Option<ModulePath>,
    pub version: Option<Spanned<Version>>,
    pub install: Option<bool>,
    #[serde(
        default,
        deserialize_with = "crate::types::url::deserialize_http_option"
    )]
    pub index: Option<Url>,
    pub group: Option<Spanned<PinName>>,
    #[serde(default)]
    pub deny: Vec<RawDeny>,
    pub allow: Option<Specifiers>,
    pub shim: Option<RawShim>,
    pub wheels: Option<Vec<RawWheel>>,
    /// A git pin's remote, or where a wheel set's files are downloaded from (`{version}`,
    /// `{file}`).
    pub url: Option<UrlTemplate>,
    /// Where a wheel set downloaded by URL lists its versions (a GitHub releases API URL).
    #[serde(
        default,
        deserialize_with = "crate::types::url::deserialize_http_option"
    )]
    pub releases: Option<Url>,
    /// The files pip may install from the index at `version`, each with its sha256.
    pub files: Option<Vec<RawHashedFile>>,
    pub branch: Option<BranchName>,
    pub rev: Option<GitRev>,
    pub probe: Option<Probe>,
}

impl RawPin {
    /// The keys that are set, by name, to say which ones do not fit the pin's kind.
    pub fn present_keys(&self) -> Vec<&'static str> {
        let mut keys = Vec::new();
        let mut note = |set: bool, key: &'static str| {
            if set {
                keys.push(key);
            }
        };
        note(self.package.is_some(), "package");
        note(self.module.is_some(), "module");
        note(self.version.is_some(), "version");
        note(self.install.is_some(), "install");
        note(self.index.is_some(), "index");
        note(self.group.is_some(), "group");
        note(!self.deny.is_empty(), "deny");
        note(self.allow.is_some(), "allow");
        note(self.shim.is_some(), "shim");
        note(self.wheels.is_some(), "wheels");
        note(self.url.is_some(), "url");
        note(self.releases.is_some(), "releases");
        note(self.files.is_some(), "files");
        note(self.branch.is_some(), "branch");
        note(self.rev.is_some(), "rev");
        note(self.probe.is_some(), "probe");
        keys
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawDeny {
    pub version: Spanned<Version>,
    pub reason: Text,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawShim {
    pub file: Spanned<RecipePath>,
    pub module: ModulePath,
    pub exports: Vec<Identifier>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawWheel {
    pub package: PackageName,
    pub local: Option<LocalLabel>,
    #[serde(
        default,
        deserialize_with = "crate::types::url::deserialize_http_option"
    )]
    pub index: Option<Url>,
    /// Its file name at `{version}`, for a set downloaded from the pin's `url`.
    pub file: Option<WheelFile>,
    /// The sha256 of that file at the pin's version.
    pub sha256: Option<FileSha256>,
    /// From an index: the files pip may install at the set's version, each with its sha256.
    pub files: Option<Vec<RawHashedFile>>,
}

/// `{ file = "NAME-VERSION-...whl", sha256 = "HEX" }`: one file of a version on an index.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawHashedFile {
    pub file: WheelName,
    pub sha256: FileSha256,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPatches {
    pub series: Spanned<RecipePath>,
    pub onto: Spanned<Onto>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawOverlay {
    pub from: Spanned<RecipePath>,
    pub to: ImagePath,
}

/// `[donors.NAME]`: an image a stage of the template copies from, pinned by digest.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawDonor {
    pub image: ImageRef,
    pub digest: Option<Digest>,
}

/// `[[scripts]]`: an idempotent patcher run in the image after the overlays, and its check.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawScript {
    pub file: Spanned<RecipePath>,
    pub check: PythonExpr,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawContext {
    #[serde(default)]
    pub allow_secrets: Vec<Spanned<ContextPath>>,
}

/// What a patch series applies onto: a folder of the recipe, or a git repository at a commit.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(untagged)]
pub enum Onto {
    /// A folder of the recipe (its files become the base commit of a scratch repository).
    Folder(RecipePath),
    /// A remote (or `file://`) repository at a commit.
    Git {
        /// Where to fetch it from.
        git: Url,
        /// The commit the series was made against.
        rev: GitRev,
    },
}

impl<'de> Deserialize<'de> for Onto {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OntoVisitor;

        impl<'de> Visitor<'de> for OntoVisitor {
            type Value = Onto;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(r#"a recipe folder such as "overlays/vllm", or { git = "URL", rev = "COMMIT" }"#)
            }

            fn visit_str<E: de::Error>(self, value: &str) -> Result<Onto, E> {
                value.parse().map(Onto::Folder).map_err(E::custom)
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Onto, A::Error> {
                #[derive(Deserialize)]
                #[serde(deny_unknown_fields)]
                struct GitTarget {
                    git: Url,
                    rev: GitRev,
                }
                let target = GitTarget::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(Onto::Git {
                    git: target.git,
                    rev: target.rev,
                })
            }
        }

        deserializer.deserialize_any(OntoVisitor)
    }
}

/// A tag written as a small template; `{{ date }}` is the only variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagTemplate(String);

impl TagTemplate {
    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The tag this template gives for `date`.
    pub fn render(&self, date: Date) -> Result<Tag, String> {
        let environment = tag_environment();
        let rendered = environment
            .render_str(&self.0, minijinja::context! { date => date.to_string() })
            .map_err(|error| {
                format!(
                    "tag template {:?}: {}",
                    self.0,
                    error.detail().unwrap_or("invalid template")
                )
            })?;
        rendered.parse::<Tag>().map_err(|error| error.to_string())
    }
}

/// The environment tag templates render in: strict, and with the Dockerfile template's bounds,
/// so that a template that loops or recurses ends in an error instead of costing every command.
fn tag_environment() -> minijinja::Environment<'static> {
    let mut environment = minijinja::Environment::new();
    environment.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    environment.set_recursion_limit(64);
    environment.set_fuel(Some(crate::limits::TEMPLATE_FUEL));
    environment
}

impl std::str::FromStr for TagTemplate {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let template = TagTemplate(text.to_owned());
        // Any date renders to the same length and alphabet, so one sample proves the grammar.
        let sample: Date = "2000-01-01".parse().expect("a valid date");
        template.render(sample)?;
        Ok(template)
    }
}
