//! The typed recipe: the image, its tags and platforms, the base, the patch series, overlays and
//! context settings; the pins themselves are in `pin`.

use std::collections::{BTreeMap, BTreeSet};

use crate::location::Location;
use crate::types::dockerfile::{EnvName, ImagePath, LabelKey, PlainValue, Text};
use crate::types::oci::{Digest, ImageRef, Platform, Repository, TagPattern};
use crate::types::python::{PythonExpr, PythonVersion};
use crate::types::recipe::{ContextPath, Date, FixName, PinName, RecipePath};
use crate::types::url::Url;

use super::pin::Pin;
use super::schema::{Onto, TagTemplate};

/// The recipe: everything pins.toml says, typed and checked.
#[derive(Debug, Clone)]
pub struct Pins {
    /// The recipe this one varies, when it is a lane (`[lane]`).
    pub lane: Option<Lane>,
    /// The image this recipe builds.
    pub image: Image,
    /// The image it builds on.
    pub base: Base,
    /// The package index named in pins.toml, if any (pip's own configuration wins over it).
    pub index: Option<Url>,
    /// `ENV` lines of the image, in name order.
    pub env: BTreeMap<EnvName, PlainValue>,
    /// Build arguments passed to the engine, in name order.
    pub args: BTreeMap<EnvName, PlainValue>,
    /// Every pin, by name.
    pub pins: BTreeMap<PinName, Pin>,
    /// Patch series and what they apply onto.
    pub patches: Vec<PatchSeries>,
    /// Folders copied into the image.
    pub overlays: Vec<Overlay>,
    /// Patch scripts run in the image after the overlays (`[[scripts]]`), in file order.
    pub scripts: Vec<Script>,
    /// Images a stage of the template copies from (`[donors.NAME]`), by name.
    pub donors: BTreeMap<PinName, Donor>,
    /// What the build context may hold.
    pub context: ContextSettings,
    /// Where the recipe keeps its committed render (`[render] committed`), which `pin bump`
    /// rewrites together with pins.toml.
    pub committed_render: Option<RecipePath>,
    /// What the pins and overlays fix, in name order.
    pub fixes: Vec<Fix>,
    /// The groups that move in lockstep (`[groups.NAME] lockstep = true`): one version for
    /// every member. Other groups move together, each member at its own version.
    pub lockstep: BTreeSet<PinName>,
    /// Things that load but deserve a look (a short git revision, say).
    pub notices: Vec<Notice>,
}

impl Pins {
    /// Each overlay as (folder in the recipe, where it lands in the image).
    pub fn overlay_paths(&self) -> Vec<(&RecipePath, &ImagePath)> {
        self.overlays
            .iter()
            .map(|overlay| (&overlay.from, &overlay.to))
            .collect()
    }
}

/// `[lane]`: a recipe that varies another one.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Lane {
    /// The folder of the recipe it varies, as written (relative to the lane's folder).
    pub of: String,
    /// Whether the lane is experimental: its tags never take the other recipe's moving tags.
    pub experimental: bool,
}

impl Lane {
    /// The lane's kind as `verify-digest` and `report` name it.
    pub fn kind(&self) -> &'static str {
        if self.experimental {
            "experimental"
        } else {
            "variant"
        }
    }
}

/// The image section.
#[derive(Debug, Clone)]
pub struct Image {
    /// Where the tags are pushed.
    pub repository: Repository,
    /// Tag templates with whether each may move.
    pub tags: Vec<TagSpec>,
    /// The date fixed in the file, if any.
    pub date: Option<Date>,
    /// The platform built for; with `platforms`, the first of them, whose image forge.lock
    /// names as the image.
    pub platform: Platform,
    /// Every platform the tags name an image for (one OCI image index when there are several),
    /// `platform` first.
    pub platforms: Vec<Platform>,
    /// `org.opencontainers.image.source`.
    pub source: Option<Url>,
    /// The tag of the build cache beside the image in its repository (`[image] cache`): a push
    /// reads it with `--cache-from` and writes the build's own there, so that a runner with an
    /// empty daemon reuses the last build's steps.
    pub cache: Option<crate::types::oci::Tag>,
    /// The recipe's own labels.
    pub labels: BTreeMap<LabelKey, Text>,
}

/// Whether a tag may be re-pointed at another image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mutability {
    /// Follows every build.
    Moving,
    /// Names one image forever; re-pointing it is refused unless forced.
    Immutable,
}

/// One tag template of the image.
#[derive(Debug, Clone)]
pub struct TagSpec {
    /// The template, such as `{{ date }}-pr4-experimental`.
    pub template: TagTemplate,
    /// Whether it may move.
    pub mutability: Mutability,
}

/// The base image.
#[derive(Debug, Clone)]
pub struct Base {
    /// The reference as written.
    pub image: ImageRef,
    /// The digest it resolved to, once known.
    pub digest: Option<Digest>,
    /// The tags `forge pin bump base` may move the image to; the newest match wins.
    pub tags: Option<TagPattern>,
    /// The Python the base image runs (`[base] python`): which wheels fit the image.
    pub python: Option<PythonVersion>,
}

impl Base {
    /// What `FROM` names: `image@digest` when the digest is known, so the base cannot move.
    pub fn reference(&self) -> String {
        match &self.digest {
            Some(digest) => format!("{}@{}", self.image, digest),
            None => self.image.to_string(),
        }
    }
}

/// A patch series and its target.
#[derive(Debug, Clone)]
pub struct PatchSeries {
    /// The folder of mbox files, applied in name order.
    pub series: RecipePath,
    /// What it applies onto.
    pub onto: Onto,
    /// For a series onto a git remote, the git pin the image builds from that remote: the
    /// series reaches the image through that pin's build step.
    pub pin: Option<PinName>,
}

/// A folder copied into the image.
#[derive(Debug, Clone)]
pub struct Overlay {
    /// The folder in the recipe.
    pub from: RecipePath,
    /// Where it lands in the image.
    pub to: ImagePath,
}

/// A donor: an image a stage of the template copies from (`FROM REFERENCE AS NAME`, then
/// `COPY --from=NAME`), always pinned by its manifest digest.
#[derive(Debug, Clone)]
pub struct Donor {
    /// The reference as written.
    pub image: ImageRef,
    /// Its manifest digest.
    pub digest: Digest,
}

impl Donor {
    /// What the stage's `FROM` names: `image@digest`.
    pub fn reference(&self) -> String {
        format!("{}@{}", self.image, self.digest)
    }
}

/// A patch script: a Python file of the recipe that patches what the image holds in place,
/// run in the image after the overlays, twice (it must be idempotent), then its check.
#[derive(Debug, Clone)]
pub struct Script {
    /// The file in the recipe.
    pub file: RecipePath,
    /// A Python expression that holds only once the patch is in place (the names a fix's check
    /// may use: `source`, `inspect`, `import_module`, `glob`).
    pub check: PythonExpr,
}

impl Script {
    /// Its file's name, which names it (unique within a recipe).
    pub fn name(&self) -> &str {
        self.file
            .as_str()
            .rsplit('/')
            .next()
            .unwrap_or(self.file.as_str())
    }
}

/// The `[context]` table.
#[derive(Debug, Clone, Default)]
pub struct ContextSettings {
    /// Secret-looking files that may go into the build context, by their path in it.
    pub allow_secrets: Vec<ContextPath>,
}

/// Something that loaded but deserves the user's attention.
#[derive(Debug, Clone)]
pub struct Notice {
    /// Where in pins.toml.
    pub location: Location,
    /// What to look at.
    pub message: String,
}

/// One fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fix {
    /// Its name, the key under `[fixes]`.
    pub name: FixName,
    /// The step that brings it.
    pub by: FixedBy,
    /// What an image without it shows.
    pub symptom: Text,
    /// What the pin or overlay changes.
    pub fix: Text,
    /// True in an image where the fix is in place.
    pub check: PythonExpr,
}

/// The step a fix comes with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FixedBy {
    /// The step of this pin.
    Pin(PinName),
    /// The step that copies this overlay folder.
    Overlay(RecipePath),
}

impl std::fmt::Display for FixedBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FixedBy::Pin(pin) => write!(f, "pin {pin}"),
            FixedBy::Overlay(folder) => write!(f, "overlay {folder}"),
        }
    }
}

impl Fix {
    /// Whether the fix comes with `pin`'s step.
    pub fn by_pin(&self, pin: &PinName) -> bool {
        matches!(&self.by, FixedBy::Pin(name) if name == pin)
    }

    /// Whether the fix comes with the step that copies `overlay`.
    pub fn by_overlay(&self, overlay: &Overlay) -> bool {
        matches!(&self.by, FixedBy::Overlay(folder) if *folder == overlay.from)
    }
}

impl Pins {
    /// The wheels that cannot load on a base running `glibc` (`2.39`): each URL wheel whose file
    /// needs a newer one, and each index distribution none of whose recorded files loads there,
    /// in words (`tilelang: tilelang-0.1.11-cp38-abi3-manylinux_2_34_aarch64.whl needs glibc 2.34`).
    pub fn needing_newer_glibc(&self, glibc: &str) -> Vec<String> {
        use crate::package_index::wheel::glibc_needed;
        let Some(base) = glibc.split_once('.').and_then(|(major, minor)| {
            Some((
                major.parse::<u64>().ok()?,
                minor.split('.').next()?.parse::<u64>().ok()?,
            ))
        }) else {
            return Vec::new();
        };
        let too_new = |file: &str| glibc_needed(file).filter(|needs| *needs > base);
        let said = |pin: &PinName, file: &str, (major, minor): (u64, u64)| {
            format!("{pin}: {file} needs glibc {major}.{minor}")
        };
        let mut found = Vec::new();
        for pin in self.pins.values() {
            for installed in pin.installed() {
                let files: Vec<String> = match installed {
                    super::Installed::Indexed { files, .. } => {
                        files.iter().map(|file| file.file.to_string()).collect()
                    }
                    super::Installed::Downloaded { file, .. } => vec![file],
                };
                // pip takes any recorded file that loads: only a distribution none of whose
                // files loads cannot install.
                if let Some(file) = files.first()
                    && files.iter().all(|file| too_new(file).is_some())
                {
                    found.push(said(
                        &pin.name,
                        file,
                        too_new(file).expect("needs a newer one"),
                    ));
                }
            }
        }
        found
    }
}
