//! Loading pins.toml: the raw tables of `schema` checked into the typed recipe, with every
//! error at the value's own line and column.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::path::{Path, PathBuf};

use toml::Spanned;

use crate::diagnostics::{Advice, Advise};
use crate::location::Location;
use crate::types::git::GitRev;
use crate::types::oci::Platform;
use crate::types::recipe::{PinName, RecipePath};
use crate::types::url::Url;

use super::kind::{self, GitSource, Keys, Shim};
use super::pin::{Denied, Pin, Source};
use super::recipe::{
    Base, ContextSettings, Donor, Image, Lane, Mutability, Notice, Overlay, PatchSeries, Pins,
    Script, TagSpec,
};
use super::schema;
use super::schema::{Onto, TagTemplate};
use super::schema::{RawContext, RawGroup, RawPin, RawRecipe};

mod wheels;

/// Why pins.toml could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is a special file, or leads out of the recipe folder.
    #[error(transparent)]
    Path(#[from] crate::fs::PathError),
    /// The file does not say a valid recipe.
    #[error("{location}: {message}")]
    Invalid {
        /// Where.
        location: Location,
        /// What is wrong and what was expected.
        message: String,
        /// What to do about it.
        hint: String,
    },
}

impl Advise for LoadError {
    fn advice(&self) -> Advice {
        match self {
            LoadError::Read { path, .. } => Advice::Hint(format!(
                "forge reads pins.toml in the folder -C names, else in the working folder or the nearest folder above it that has one (up to the repository root); pass -C DIR to point at the recipe (looked at {})",
                path.display()
            )),
            LoadError::Invalid { hint, .. } => Advice::Hint(hint.clone()),
            LoadError::Path(error) => error.advice(),
        }
    }
}

crate::advised!(LoadError);

/// Reads and checks the recipe at `path` (a pins.toml inside the recipe folder).
pub fn load(path: &Path) -> Result<Pins, LoadError> {
    let text = read_text(path)?;
    parse(path, &text)
}

/// The text of pins.toml at `path`, a regular file.
pub fn read_text(path: &Path) -> Result<String, LoadError> {
    let read = |source| LoadError::Read {
        path: path.to_owned(),
        source,
    };
    let mut file = crate::fs::open_regular(path).map_err(|error| match error {
        crate::fs::PathError::Read { source, .. } => read(source),
        other => LoadError::Path(other),
    })?;
    let mut text = String::new();
    std::io::Read::read_to_string(&mut file, &mut text).map_err(read)?;
    Ok(text)
}

/// Checks the recipe `text`, naming `path` in errors; folders it mentions are looked up next to
/// `path`.
pub fn parse(path: &Path, text: &str) -> Result<Pins, LoadError> {
    let root = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let loader = Loader {
        path,
        text,
        root,
        folder: Some(crate::fs::Confined::new(root)?),
        origin: None,
    };
    let raw: RawRecipe = toml::from_str(text).map_err(|error| loader.toml_error(&error))?;
    loader.recipe(raw)
}

/// Loads the lane whose pins.toml is at `path` (its `text`): laid over the recipe it varies,
/// whose folder holds the files both name; errors are placed where each value was written.
pub fn load_lane(path: &Path, text: &str, files: &Path) -> Result<(Pins, String), LoadError> {
    let layered = super::lane::layer(path, text, files)?;
    let origin = |offset| super::lane::origin(&layered, path, text, offset);
    let loader = Loader {
        path,
        text: &layered.text,
        root: files,
        folder: Some(crate::fs::Confined::new(files)?),
        origin: Some(&origin),
    };
    let raw: RawRecipe =
        toml::from_str(&layered.text).map_err(|error| loader.toml_error(&error))?;
    let pins = loader.recipe(raw)?;
    Ok((pins, layered.text.clone()))
}

/// Checks the recipe `text` away from its folder (the pins.toml a build record carries),
/// naming `origin` in errors: every value against its grammar, as `parse` does, but no path it
/// names is looked up, since the folder it names them in is not here.
pub fn parse_detached(origin: &Path, text: &str) -> Result<Pins, LoadError> {
    let loader = Loader {
        path: origin,
        text,
        root: Path::new("."),
        folder: None,
        origin: None,
    };
    let raw: RawRecipe = toml::from_str(text).map_err(|error| loader.toml_error(&error))?;
    loader.recipe(raw)
}

/// The dotted key of `text` with the most parts, when it has more than the TOML reader takes
/// (80): where it starts and how many parts it has. Read with the TOML reader's own lexer, so a
/// dot inside a quoted key or a string is not counted.
fn longest_dotted_key(text: &str) -> Option<(Range<usize>, usize)> {
    use toml_parser::lexer::TokenKind;
    let mut longest: Option<(Range<usize>, usize)> = None;
    let mut current: Option<(usize, usize)> = None;
    let mut after_dot = false;
    for token in toml_parser::Source::new(text).lex() {
        let start = token.span().start();
        match token.kind() {
            TokenKind::Atom | TokenKind::BasicString | TokenKind::LiteralString => {
                current = match current {
                    Some((first, parts)) if after_dot => Some((first, parts + 1)),
                    _ => Some((start, 1)),
                };
                after_dot = false;
                if let Some((first, parts)) = current
                    && longest.as_ref().is_none_or(|(_, most)| parts > *most)
                {
                    longest = Some((first..start, parts));
                }
            }
            TokenKind::Dot if current.is_some() => after_dot = true,
            TokenKind::Whitespace => {}
            _ => {
                current = None;
                after_dot = false;
            }
        }
    }
    longest.filter(|(_, parts)| *parts >= 80)
}

pub(super) struct Loader<'a> {
    path: &'a Path,
    text: &'a str,
    root: &'a Path,
    /// The recipe folder, which every path pins.toml names must resolve inside; `None` for a
    /// pins.toml read away from its folder, whose paths are not looked up.
    folder: Option<crate::fs::Confined>,
    /// Where a value of `text` was written, when that is not `text` itself (a lane laid over
    /// the recipe it varies).
    origin: Option<&'a dyn Fn(usize) -> Location>,
}

impl Loader<'_> {
    fn location(&self, offset: usize) -> Location {
        match self.origin {
            Some(origin) => origin(offset),
            None => Location::from_offset(self.path, self.text, offset),
        }
    }

    pub(super) fn error(
        &self,
        span: Range<usize>,
        message: impl Into<String>,
        hint: impl Into<String>,
    ) -> LoadError {
        LoadError::Invalid {
            location: self.location(span.start),
            message: message.into(),
            hint: hint.into(),
        }
    }

    /// A notice at `span`: the pin loads, and the user is told.
    pub(super) fn notice(&self, span: &Range<usize>, message: String) -> Notice {
        Notice {
            location: self.location(span.start),
            message,
        }
    }

    fn toml_error(&self, error: &toml::de::Error) -> LoadError {
        let message = error.message().trim_end().to_owned();
        let hint = if message.starts_with("unknown field") || message.starts_with("unknown variant")
        {
            "remove or rename the key; docs/pins.md lists every key forge reads"
        } else if message.starts_with("invalid ") {
            "values that reach the Dockerfile must match their grammar exactly; nothing was rendered"
        } else if message.starts_with("missing field") {
            "add the key; docs/pins.md shows the default recipe"
        } else {
            "fix the TOML at that position; nothing was rendered"
        };
        if error.span().is_none()
            && let Some((span, parts)) = longest_dotted_key(self.text)
        {
            // The TOML reader stops at a key of 80 dotted parts without saying where.
            return self.error(
                span,
                format!("a key of {parts} dotted parts: {message}"),
                "write the key with fewer parts (pins.toml's own keys have at most three); nothing was rendered",
            );
        }
        self.error(error.span().unwrap_or(0..0), message, hint)
    }

    fn recipe(&self, raw: RawRecipe) -> Result<Pins, LoadError> {
        let mut notices = Vec::new();
        let (pins, lockstep) = self.pins(raw.pins, raw.groups, &mut notices)?;

        let tags = self.tags(raw.image.tags)?;
        let cache = self.cache_tag(raw.image.cache, &tags)?;
        let platforms = self.platforms(raw.image.platform, raw.image.platforms)?;
        self.downloads_fit(&pins, &platforms, raw.base.python.as_ref())?;

        let patches = self.patch_series(raw.patches, &pins)?;
        let mut overlays = Vec::new();
        for entry in raw.overlays {
            overlays.push(Overlay {
                from: self.existing_folder(entry.from, "overlay folder")?,
                to: entry.to,
            });
        }
        let scripts = self.scripts(raw.scripts)?;
        let donors = self.donors(raw.donors)?;
        let fixes = self.fixes(raw.fixes, &pins, &overlays)?;
        Ok(Pins {
            lane: raw.lane.map(|lane| Lane {
                of: lane.of.as_str().to_owned(),
                experimental: lane.experimental,
            }),
            image: Image {
                repository: raw.image.repository,
                tags,
                date: raw.image.date,
                platform: platforms[0].clone(),
                platforms,
                source: raw.image.source,
                cache,
                labels: raw.image.labels,
            },
            base: Base {
                image: raw.base.image,
                digest: raw.base.digest,
                tags: raw.base.tags,
                python: raw.base.python,
            },
            index: raw.index.map(|index| index.url),
            env: raw.env,
            args: raw.args,
            pins,
            patches,
            overlays,
            scripts,
            donors,
            context: self.context(raw.context)?,
            committed_render: self.render_section(raw.render)?,
            fixes,
            lockstep,
            notices,
        })
    }

    /// `[[patches]]`: each series folder and what it applies onto, one series per pin.
    fn patch_series(
        &self,
        raw: Vec<schema::RawPatches>,
        pins: &BTreeMap<PinName, Pin>,
    ) -> Result<Vec<PatchSeries>, LoadError> {
        let mut patches = Vec::new();
        for entry in raw {
            let series = self.existing_folder(entry.series, "patch series folder")?;
            let span = entry.onto.span();
            let onto = entry.onto.into_inner();
            let pin = match &onto {
                Onto::Folder(folder) => {
                    self.inside(span.clone(), folder, "patch target folder")?;
                    if self.folder.is_some()
                        && !crate::fs::in_folder(self.root, folder.as_str()).is_dir()
                    {
                        return Err(self.error(
                            span,
                            format!("patch target folder `{folder}` does not exist"),
                            "create it or point `onto` at an existing folder",
                        ));
                    }
                    None
                }
                Onto::Git { git, rev } => {
                    let pin = self.patched_pin(pins, git, rev, span.clone())?;
                    // Each series is applied onto the pin's commit on its own: a second one
                    // would not stack on the first, so one folder holds a pin's whole series.
                    if patches
                        .iter()
                        .any(|series: &PatchSeries| series.pin.as_ref() == Some(&pin))
                    {
                        return Err(self.error(
                            span,
                            format!("a second series onto pin `{pin}`"),
                            "put all of a pin's patches in one series folder, in the order they apply",
                        ));
                    }
                    Some(pin)
                }
            };
            patches.push(PatchSeries { series, onto, pin });
        }
        Ok(patches)
    }

    /// `[image] cache`: a tag of its own, none of the image's.
    fn cache_tag(
        &self,
        cache: Option<Spanned<crate::types::oci::Tag>>,
        tags: &[TagSpec],
    ) -> Result<Option<crate::types::oci::Tag>, LoadError> {
        let Some(cache) = cache else {
            return Ok(None);
        };
        if tags
            .iter()
            .any(|tag| tag.template.as_str() == cache.get_ref().as_str())
        {
            return Err(self.error(
                cache.span(),
                format!(
                    "[image] cache `{}` is also a tag of the image",
                    cache.get_ref()
                ),
                "the build cache lives under a tag of its own, such as cache = \"buildcache\"",
            ));
        }
        Ok(Some(cache.into_inner()))
    }

    /// `[image.tags]`: each template checked, at least one.
    fn tags(&self, raw: schema::RawTags) -> Result<Vec<TagSpec>, LoadError> {
        let mut tags: Vec<TagSpec> = Vec::new();
        for (templates, mutability) in [
            (raw.moving, Mutability::Moving),
            (raw.immutable, Mutability::Immutable),
        ] {
            for template in templates {
                let parsed = template.get_ref().parse::<TagTemplate>().map_err(|message| {
                    self.error(
                        template.span(),
                        message,
                        "tags follow the registry grammar [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}; nothing was rendered",
                    )
                })?;
                tags.push(TagSpec {
                    template: parsed,
                    mutability,
                });
            }
        }
        if tags.is_empty() {
            return Err(self.error(
                0..0,
                "[image.tags] names no tag",
                "add `moving = [\"...\"]` or `immutable = [\"...\"]` under [image.tags]",
            ));
        }
        Ok(tags)
    }

    /// `[image] platform` (one) or `platforms` (several, each once): exactly one of the two.
    fn platforms(
        &self,
        platform: Option<Platform>,
        platforms: Option<Spanned<Vec<Platform>>>,
    ) -> Result<Vec<Platform>, LoadError> {
        match (platform, platforms) {
            (Some(platform), None) => Ok(vec![platform]),
            (None, Some(list)) => {
                let span = list.span();
                let list = list.into_inner();
                let mut seen = std::collections::BTreeSet::new();
                if list.is_empty() || !list.iter().all(|platform| seen.insert(platform.as_str())) {
                    return Err(self.error(
                        span,
                        "[image] platforms must name at least one platform, each once",
                        "list each platform the tags serve once, e.g. platforms = [\"linux/arm64\", \"linux/amd64\"]",
                    ));
                }
                Ok(list)
            }
            (Some(_), Some(list)) => Err(self.error(
                list.span(),
                "[image] names both platform and platforms",
                "keep `platform` for one platform, or list them all in `platforms`",
            )),
            (None, None) => Err(self.error(
                0..0,
                "[image] names no platform",
                "add `platform = \"linux/arm64\"` (or `platforms = [...]`) under [image]",
            )),
        }
    }

    /// The `[context]` table: each allowed secret must be one the build would refuse.
    fn context(&self, raw: Option<RawContext>) -> Result<ContextSettings, LoadError> {
        let mut settings = ContextSettings::default();
        for path in raw.map(|raw| raw.allow_secrets).unwrap_or_default() {
            if !crate::context::secrets::looks_secret(path.get_ref().as_str()) {
                return Err(self.error(
                    path.span(),
                    format!("`{}` does not look like a secret", path.get_ref()),
                    "allow_secrets names only secret-looking files the build would otherwise refuse; remove it (docs/template-and-context.md lists what looks like a secret)",
                ));
            }
            settings.allow_secrets.push(path.into_inner());
        }
        Ok(settings)
    }

    /// Refuses `path` (at `span`) unless it resolves inside the recipe folder.
    fn inside(&self, span: Range<usize>, path: &RecipePath, what: &str) -> Result<(), LoadError> {
        let Some(folder) = &self.folder else {
            return Ok(());
        };
        match folder.resolve(&crate::fs::in_folder(self.root, path.as_str())) {
            Ok(_) => Ok(()),
            Err(crate::fs::PathError::Outside {
                target,
                root,
                special,
                ..
            }) => Err(self.error(
                span,
                format!(
                    "{what} `{path}` leads to {}{}, outside the recipe folder {}",
                    target.display(),
                    special.map(|kind| format!(" (a {kind})")).unwrap_or_default(),
                    root.display()
                ),
                "forge reads only what lies inside the recipe folder: copy the files in rather than linking to them",
            )),
            Err(other) => Err(other.into()),
        }
    }

    /// `[render]`: where the committed render lives, if the recipe says.
    fn render_section(
        &self,
        render: Option<schema::RawRender>,
    ) -> Result<Option<RecipePath>, LoadError> {
        render
            .and_then(|render| render.committed)
            .map(|path| self.committed_render(path))
            .transpose()
    }

    /// `[render] committed`: a file in an existing folder of the recipe, not pins.toml.
    fn committed_render(&self, path: Spanned<RecipePath>) -> Result<RecipePath, LoadError> {
        let relative = path.get_ref().as_str();
        let folder = relative.rsplit_once('/').map_or("", |(folder, _)| folder);
        let own_name = self.path.file_name().and_then(|name| name.to_str());
        if Some(relative) == own_name {
            return Err(self.error(
                path.span(),
                format!("[render] committed names pins.toml itself (`{relative}`)"),
                "name the file the rendered Dockerfile is committed to, such as ci/Dockerfile.rendered",
            ));
        }
        if self.folder.is_some() && !self.root.join(folder).is_dir() {
            return Err(self.error(
                path.span(),
                format!(
                    "[render] committed `{relative}`: the folder `{folder}` does not exist in {}",
                    self.root.display()
                ),
                "create the folder and `forge render --out` the file there, or fix the path (relative to the folder that holds pins.toml)",
            ));
        }
        Ok(path.into_inner())
    }

    /// The git pin a series onto `url` at `rev` patches: the image builds that remote only
    /// through a git pin, so a series onto any other remote, or onto another commit than the
    /// pin's, could never reach the image.
    fn patched_pin(
        &self,
        pins: &BTreeMap<PinName, Pin>,
        url: &Url,
        rev: &GitRev,
        span: Range<usize>,
    ) -> Result<PinName, LoadError> {
        let on_remote: Vec<(&PinName, &GitRev)> = pins
            .values()
            .filter_map(|pin| match &pin.source {
                Source::Git(GitSource {
                    url: pinned_url,
                    rev: pinned,
                    ..
                }) if pinned_url.same_repository(url) => Some((&pin.name, pinned)),
                _ => None,
            })
            .collect();
        // Either may be a prefix of the other: a short pin revision, a full target one.
        let same_commit = |pinned: &GitRev| {
            let (pinned, rev) = (pinned.as_str(), rev.as_str());
            pinned.starts_with(rev) || rev.starts_with(pinned)
        };
        if let Some((name, _)) = on_remote.iter().find(|(_, pinned)| same_commit(pinned)) {
            return Ok((*name).clone());
        }
        match on_remote.first() {
            None => Err(self.error(
                span,
                format!("the series is onto {url}, which no git pin builds"),
                "point `onto` at the `url` and `rev` of the git pin it patches, or at a recipe folder",
            )),
            Some((name, pinned)) => Err(self.error(
                span,
                format!("the series is onto {url} at {rev}, but pin `{name}` builds {pinned}"),
                format!(
                    "make `onto`'s rev the pin's (`forge pin bump {name}` moves both together)"
                ),
            )),
        }
    }

    fn existing_folder(
        &self,
        path: Spanned<RecipePath>,
        what: &str,
    ) -> Result<RecipePath, LoadError> {
        self.inside(path.span(), path.get_ref(), what)?;
        if self.folder.is_none()
            || crate::fs::in_folder(self.root, path.get_ref().as_str()).is_dir()
        {
            Ok(path.into_inner())
        } else {
            Err(self.error(
                path.span(),
                format!(
                    "{what} `{}` does not exist in {}",
                    path.get_ref(),
                    self.root.display()
                ),
                "paths in pins.toml are relative to the folder that holds it",
            ))
        }
    }

    /// `[donors.NAME]`: each pinned by its digest, which a donor may not leave out.
    fn donors(
        &self,
        raw: BTreeMap<PinName, Spanned<schema::RawDonor>>,
    ) -> Result<BTreeMap<PinName, Donor>, LoadError> {
        let mut donors = BTreeMap::new();
        for (name, donor) in raw {
            let span = donor.span();
            let donor = donor.into_inner();
            let Some(digest) = donor.digest else {
                return Err(self.error(
                    span,
                    format!("donor `{name}` ({}) is not pinned by a digest", donor.image),
                    "add digest = \"sha256:...\", the manifest digest of the image the stage copies from (`crane digest IMAGE` or `docker buildx imagetools inspect IMAGE` prints it): a donor named by its tag alone could change under the build",
                ));
            };
            donors.insert(
                name,
                Donor {
                    image: donor.image,
                    digest,
                },
            );
        }
        Ok(donors)
    }

    /// `[[scripts]]`: each a `.py` file of the recipe, no two of one name (the image keeps them
    /// side by side).
    fn scripts(&self, raw: Vec<schema::RawScript>) -> Result<Vec<Script>, LoadError> {
        let mut scripts: Vec<Script> = Vec::new();
        for entry in raw {
            let span = entry.file.span();
            let file = entry.file.into_inner();
            self.inside(span.clone(), &file, "patch script")?;
            if !file.as_str().ends_with(".py") {
                return Err(self.error(
                    span,
                    format!("patch script `{file}` is not a .py file"),
                    "a patch script is a Python file, run with the image's python3 after the overlays",
                ));
            }
            if self.folder.is_some() && !crate::fs::in_folder(self.root, file.as_str()).is_file() {
                return Err(self.error(
                    span,
                    format!("patch script `{file}` does not exist"),
                    "paths in pins.toml are relative to the folder that holds it",
                ));
            }
            let script = Script {
                file,
                check: entry.check,
            };
            if let Some(other) = scripts.iter().find(|other| other.name() == script.name()) {
                return Err(self.error(
                    span,
                    format!(
                        "patch scripts `{}` and `{}` have one name",
                        other.file, script.file
                    ),
                    "the image keeps patch scripts side by side under their names: rename one",
                ));
            }
            scripts.push(script);
        }
        Ok(scripts)
    }

    /// A Python pin's `shim`: its file must lie in the recipe folder.
    pub(super) fn shim(&self, shim: schema::RawShim) -> Result<Shim, LoadError> {
        let file = shim.file.get_ref().clone();
        self.inside(shim.file.span(), &file, "shim file")?;
        if self.folder.is_some() && !crate::fs::in_folder(self.root, file.as_str()).is_file() {
            return Err(self.error(
                shim.file.span(),
                format!("shim file `{file}` does not exist"),
                "paths in pins.toml are relative to the folder that holds it",
            ));
        }
        Ok(Shim {
            file,
            module: shim.module,
            exports: shim.exports,
        })
    }

    fn pin(
        &self,
        name: PinName,
        raw: RawPin,
        span: Range<usize>,
        notices: &mut Vec<Notice>,
    ) -> Result<Pin, LoadError> {
        self.check_keys(&name, &raw, &span)?;
        let deny = self.check_version(&name, &raw, notices)?;
        let kind = raw.kind;
        if raw.module.is_none() && kind::keys(kind).module {
            return Err(self.error(
                span,
                format!(
                    "pin `{name}` needs `module`, the Python module whose import proves it landed"
                ),
                "set module = \"...\"; the smoke gate after its step imports it",
            ));
        }
        let mut raw = raw;
        let (module, group, allow) = (raw.module.take(), raw.group.take(), raw.allow.take());
        let source = kind::load(self, &name, raw, &span, notices)?;
        Ok(Pin {
            name,
            source,
            module,
            group: group.map(Spanned::into_inner),
            deny,
            allow,
        })
    }

    /// The keys of `raw` are those its kind takes, and those it needs are there.
    fn check_keys(
        &self,
        name: &PinName,
        raw: &RawPin,
        span: &Range<usize>,
    ) -> Result<(), LoadError> {
        let kind = raw.kind;
        let Keys {
            allowed, required, ..
        } = kind::keys(kind);
        let present = raw.present_keys();
        if let Some(extra) = present.iter().find(|key| !allowed.contains(key)) {
            return Err(self.error(
                span.clone(),
                format!("pin `{name}` of kind {kind} cannot have `{extra}`"),
                format!("a {kind} pin takes: {}", allowed.join(", ")),
            ));
        }
        if let Some(missing) = required.iter().find(|key| !present.contains(key)) {
            return Err(self.error(
                span.clone(),
                format!("pin `{name}` of kind {kind} needs `{missing}`"),
                format!("a {kind} pin requires: {}", required.join(", ")),
            ));
        }

        Ok(())
    }

    /// The pin's deny list; refuses a version on it and notes one outside `allow`.
    fn check_version(
        &self,
        name: &PinName,
        raw: &RawPin,
        notices: &mut Vec<Notice>,
    ) -> Result<Vec<Denied>, LoadError> {
        let deny: Vec<Denied> = raw
            .deny
            .iter()
            .map(|entry| Denied {
                version: entry.version.get_ref().clone(),
                reason: entry.reason.clone(),
            })
            .collect();
        if let Some(version) = &raw.version {
            if let Some(denied) = deny
                .iter()
                .find(|denied| &denied.version == version.get_ref())
            {
                return Err(self.error(
                    version.span(),
                    format!(
                        "pin `{name}` is at {}, which is denied: {}",
                        denied.version, denied.reason
                    ),
                    "move the pin to another version; the deny list records what broke",
                ));
            }
            // Outside the range is a warning, not an error: `forge pin bump --force` may put a
            // pin there on purpose, and the recipe must still load.
            if let Some(allow) = raw
                .allow
                .as_ref()
                .filter(|allow| !allow.contains(&version.get_ref().pep440()))
            {
                notices.push(Notice {
                    location: self.location(version.span().start),
                    message: format!(
                        "pin `{name}` is at {}, outside its allowed range {}: widen `allow`, or move the pin back inside it",
                        version.get_ref(),
                        allow.as_str()
                    ),
                });
            }
        }

        Ok(deny)
    }

    /// Every pin, checked on its own and then by group.
    fn pins(
        &self,
        raw: BTreeMap<PinName, Spanned<RawPin>>,
        groups: BTreeMap<PinName, Spanned<RawGroup>>,
        notices: &mut Vec<Notice>,
    ) -> Result<(BTreeMap<PinName, Pin>, BTreeSet<PinName>), LoadError> {
        let mut pins = BTreeMap::new();
        for (name, raw_pin) in raw {
            let span = raw_pin.span();
            let pin = self.pin(name.clone(), raw_pin.into_inner(), span, notices)?;
            pins.insert(name, pin);
        }
        let lockstep = self.lockstep_groups(groups, &pins)?;
        self.check_groups(&pins, &lockstep)?;
        Ok((pins, lockstep))
    }

    /// The groups `[groups]` declares lockstep; each must be the group of some pin.
    fn lockstep_groups(
        &self,
        groups: BTreeMap<PinName, Spanned<RawGroup>>,
        pins: &BTreeMap<PinName, Pin>,
    ) -> Result<BTreeSet<PinName>, LoadError> {
        let mut lockstep = BTreeSet::new();
        for (name, group) in groups {
            if !pins.values().any(|pin| pin.group.as_ref() == Some(&name)) {
                return Err(self.error(
                    group.span(),
                    format!("[groups.{name}] names a group no pin is in"),
                    format!("add `group = \"{name}\"` to the pins that move together, or remove [groups.{name}]"),
                ));
            }
            if group.into_inner().lockstep {
                lockstep.insert(name);
            }
        }
        Ok(lockstep)
    }

    /// Every pin of a group has a version; every member of a lockstep group the same one.
    fn check_groups(
        &self,
        pins: &BTreeMap<PinName, Pin>,
        lockstep: &BTreeSet<PinName>,
    ) -> Result<(), LoadError> {
        let mut first_of_group: BTreeMap<&PinName, &Pin> = BTreeMap::new();
        for pin in pins.values() {
            let Some(group) = &pin.group else { continue };
            let Some(version) = pin.version() else {
                return Err(self.error(
                    0..0,
                    format!(
                        "pin `{}` is in group `{group}` but has no version",
                        pin.name
                    ),
                    "only version-pinned kinds move in groups",
                ));
            };
            match first_of_group.get(group) {
                Some(first) if lockstep.contains(group) && first.version() != Some(version) => {
                    return Err(self.error(
                        self.find(&format!("[pins.{}]", pin.name)),
                        format!(
                            "group `{group}` moves in lockstep, but `{}` is at {} and `{}` at {version}",
                            first.name,
                            first.current(),
                            pin.name
                        ),
                        format!("give every pin of group `{group}` the same version (`forge pin bump` moves them together), or drop `lockstep` from [groups.{group}]"),
                    ));
                }
                Some(_) => {}
                None => {
                    first_of_group.insert(group, pin);
                }
            }
        }
        Ok(())
    }

    fn find(&self, needle: &str) -> Range<usize> {
        let start = self.text.find(needle).unwrap_or(0);
        start..start
    }
}
