//! A recipe folder: its pins.toml loaded, and the build date its tags and labels use.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::diagnostics::{Advice, Advise};
use crate::fs::in_folder;
use crate::lock::{Lock, LockError, Record};
use crate::pins::{self, LoadError, Mutability, Pins};
use crate::types::oci::{Repository, Tag};
use crate::types::recipe::Date;

/// The file that holds a recipe, inside its folder.
pub const PINS_FILE: &str = "pins.toml";
/// The folder of templates, inside the recipe folder.
pub const TEMPLATES_DIR: &str = "templates";
/// The template forge renders into the Dockerfile.
pub const DOCKERFILE_TEMPLATE: &str = "Dockerfile.j2";

/// A loaded recipe.
#[derive(Debug, Clone)]
pub struct Recipe {
    /// The recipe folder (the one holding pins.toml and forge.lock).
    pub root: PathBuf,
    /// The folder the recipe's files (templates, overlays, patch series, .dockerignore) are read
    /// in: `root`, or for a lane the folder of the recipe it varies.
    pub files: PathBuf,
    /// A lane's pins.toml as laid over the recipe it varies: what its build record carries.
    laid_over: Option<Arc<str>>,
    /// What pins.toml says.
    pub pins: Pins,
    /// The date dated tags and the `created` label use.
    pub date: Date,
    /// Where that date came from.
    pub date_source: DateSource,
    /// forge.lock as this command last read it (`lock`): read once, then passed down with the
    /// recipe until forge writes it again.
    lock: LockCell,
}

/// forge.lock as a command read it: `None` until asked for, then what the file held.
#[derive(Debug, Default)]
struct LockCell(std::sync::Mutex<Option<Option<Arc<Lock>>>>);

impl LockCell {
    fn held(&self) -> std::sync::MutexGuard<'_, Option<Option<Arc<Lock>>>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Clone for LockCell {
    fn clone(&self) -> Self {
        Self(std::sync::Mutex::new(self.held().clone()))
    }
}

/// Where the build date came from, in order of precedence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DateSource {
    /// `[image] date` in pins.toml.
    PinsFile,
    /// The `SOURCE_DATE_EPOCH` environment variable.
    SourceDateEpoch,
    /// Today, in UTC.
    Today,
}

/// One tag the build applies.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ResolvedTag {
    /// The tag.
    pub tag: Tag,
    /// Whether it may move.
    pub mutability: Mutability,
}

/// Why a recipe could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum RecipeError {
    /// pins.toml is unreadable or invalid.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// `SOURCE_DATE_EPOCH` is set but is not a Unix timestamp.
    #[error("SOURCE_DATE_EPOCH={value:?} is not a number of seconds since 1970-01-01 UTC")]
    SourceDateEpoch {
        /// Its value.
        value: String,
    },
}

impl Advise for RecipeError {
    fn advice(&self) -> Advice {
        match self {
            RecipeError::Load(error) => error.advice(),
            RecipeError::SourceDateEpoch { .. } => Advice::Hint(
                "unset it, or set it to an integer such as `git log -1 --format=%ct`".to_owned(),
            ),
        }
    }
}

crate::advised!(RecipeError);

impl Recipe {
    /// The recipe with its images in `repository` instead of pins.toml's: `build --repository`,
    /// and a record of such a build.
    pub fn with_repository(mut self, repository: Repository) -> Self {
        self.pins.image.repository = repository;
        self
    }

    /// Loads the recipe in `root`, taking the date from pins.toml, else `SOURCE_DATE_EPOCH`,
    /// else today (UTC).
    pub fn open(root: &Path) -> Result<Self, RecipeError> {
        let pins_path = in_folder(root, PINS_FILE);
        // pins.toml too must be a file of the recipe, not a link out of it.
        crate::fs::Confined::new(root)
            .and_then(|folder| folder.resolve(&pins_path))
            .map_err(LoadError::from)?;
        let text = pins::read_text(&pins_path)?;
        let (pins, files, laid_over) = match pins::lane::varied_folder(&pins_path, &text) {
            Some(files) => {
                let (pins, laid_over) = pins::load_lane(&pins_path, &text, &files)?;
                (pins, files, Some(Arc::from(laid_over)))
            }
            None => (pins::parse(&pins_path, &text)?, root.to_owned(), None),
        };
        let source_date_epoch = std::env::var("SOURCE_DATE_EPOCH")
            .ok()
            .filter(|value| !value.is_empty());
        let (date, date_source) = match (pins.image.date, source_date_epoch) {
            (Some(date), _) => (date, DateSource::PinsFile),
            (None, Some(value)) => {
                let date = value
                    .trim()
                    .parse::<i64>()
                    .ok()
                    .and_then(Date::from_unix_seconds);
                (
                    date.ok_or(RecipeError::SourceDateEpoch { value })?,
                    DateSource::SourceDateEpoch,
                )
            }
            (None, None) => {
                let now = chrono::Utc::now().timestamp();
                (
                    Date::from_unix_seconds(now).expect("the clock is within chrono's range"),
                    DateSource::Today,
                )
            }
        };
        Ok(Self {
            files,
            laid_over,
            ..Self::new(root, pins, date, date_source)
        })
    }

    /// The recipe's pins.toml as one text: the file, or for a lane the file laid over the recipe
    /// it varies. A build record carries it.
    pub fn pins_text(&self) -> std::io::Result<String> {
        match &self.laid_over {
            Some(text) => Ok(text.to_string()),
            None => std::fs::read_to_string(self.pins_path()),
        }
    }

    /// A recipe of `pins` in `root`, dated `date`: what `open` makes of pins.toml, for a caller
    /// that has the pins already.
    pub fn new(root: &Path, pins: Pins, date: Date, date_source: DateSource) -> Self {
        Self {
            root: root.to_owned(),
            files: root.to_owned(),
            laid_over: None,
            pins,
            date,
            date_source,
            lock: LockCell::default(),
        }
    }

    /// The recipe with `pins` instead of pins.toml's, as a bump would write them.
    pub fn with_pins(mut self, pins: Pins) -> Self {
        self.pins = pins;
        self
    }

    /// forge.lock, read once and kept with the recipe, so that every stage of a command sees
    /// the same record under one error policy: a forge.lock forge cannot read is an error
    /// wherever it is asked for (it is read again then, never kept). A command that settles an
    /// interrupted publication does so before asking; every write of forge.lock says so
    /// (`lock_written`), and the next ask reads it again.
    pub fn lock(&self) -> Result<Option<Arc<Lock>>, LockError> {
        if let Some(lock) = self.lock.held().as_ref() {
            return Ok(lock.clone());
        }
        let lock = crate::lock::load(&self.root)?.map(Arc::new);
        *self.lock.held() = Some(lock.clone());
        Ok(lock)
    }

    /// The build forge.lock records, if it records one (`lock`).
    pub fn record(&self) -> Result<Option<Record>, LockError> {
        Ok(self.lock()?.and_then(|lock| lock.built_ref().cloned()))
    }

    /// forge.lock was written: what the recipe kept of it is forgotten.
    pub fn lock_written(&self) {
        *self.lock.held() = None;
    }

    /// The recipe's `SOURCE_DATE_EPOCH`: midnight UTC of its date. The build's steps see it, and
    /// every timestamp of the published image later than it is clamped to it.
    pub fn source_date_epoch(&self) -> u64 {
        self.date.unix_midnight()
    }

    /// The path of pins.toml.
    pub fn pins_path(&self) -> PathBuf {
        in_folder(&self.root, PINS_FILE)
    }

    /// The templates folder.
    pub fn templates_dir(&self) -> PathBuf {
        in_folder(&self.files, TEMPLATES_DIR)
    }

    /// The patch series folders, in pins.toml's order: forge.lock's `patches` input digests them.
    pub fn series_paths(&self) -> Vec<&str> {
        self.pins
            .patches
            .iter()
            .map(|entry| entry.series.as_str())
            .collect()
    }

    /// The recipe paths the Dockerfile copies into the image, as checked in: shim files, overlay
    /// folders, then patch scripts. The context carries them, and forge.lock's `overlays` input
    /// digests them.
    pub fn copied_paths(&self) -> Vec<&str> {
        let shims = self
            .pins
            .pins
            .values()
            .filter_map(|pin| Some(pin.as_kind().shim()?.file.as_str()));
        let overlays = self
            .pins
            .overlays
            .iter()
            .map(|overlay| overlay.from.as_str());
        let scripts = self.pins.scripts.iter().map(|script| script.file.as_str());
        shims.chain(overlays).chain(scripts).collect()
    }

    /// Whether the recipe folder `path` is, or lies inside, an overlay folder: only then does the
    /// Dockerfile copy it into the image.
    pub fn copies_folder(&self, path: &str) -> bool {
        self.pins.overlays.iter().any(|overlay| {
            let from = overlay.from.as_str();
            path == from
                || path
                    .strip_prefix(from)
                    .is_some_and(|rest| rest.starts_with('/'))
        })
    }

    /// The tags a build applies, in the order pins.toml lists them (moving first).
    pub fn tags(&self) -> Vec<ResolvedTag> {
        self.pins
            .image
            .tags
            .iter()
            .map(|spec| ResolvedTag {
                tag: spec
                    .template
                    .render(self.date)
                    .expect("every date renders like the sample checked at load"),
                mutability: spec.mutability,
            })
            .collect()
    }
}

/// The recipe folder for a command run without `-C`: the nearest folder at or above the working
/// folder that holds pins.toml, as a relative path (`.`, `..`, `../..`). The search stops after
/// a repository root (a folder holding `.git`) or the home folder, as cargo and git stop; when it
/// finds nothing the answer is `.`, so that the error names `pins.toml` where the user stands.
pub fn discover() -> PathBuf {
    let Ok(start) = std::env::current_dir() else {
        return PathBuf::from(".");
    };
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut relative = PathBuf::from(".");
    for (depth, folder) in start.ancestors().enumerate() {
        if folder.join(PINS_FILE).is_file() {
            return relative;
        }
        if folder.join(".git").exists() || home.as_deref() == Some(folder) {
            break;
        }
        relative = if depth == 0 {
            PathBuf::from("..")
        } else {
            relative.join("..")
        };
    }
    PathBuf::from(".")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A recipe of an image on one base and nothing else, in a folder of its own.
    fn example() -> (tempfile::TempDir, Recipe) {
        let folder = tempfile::tempdir().unwrap();
        std::fs::write(
            folder.path().join(PINS_FILE),
            "[image]\nrepository = \"forge-test/lock\"\nplatform = \"linux/amd64\"\n\
             [image.tags]\nmoving = [\"latest\"]\n[base]\nimage = \"forge-test-base:1\"\n",
        )
        .unwrap();
        let recipe = Recipe::open(folder.path()).unwrap();
        (folder, recipe)
    }

    #[test]
    fn forge_lock_is_read_once_until_forge_writes_it() {
        let (folder, recipe) = example();
        assert!(recipe.lock().unwrap().is_none());
        let record = Record::sample();
        std::fs::write(crate::lock::path(folder.path()), record.to_text()).unwrap();
        assert!(recipe.lock().unwrap().is_none(), "kept as first read");
        recipe.lock_written();
        assert_eq!(recipe.record().unwrap(), Some(record));
        // One that cannot be read is an error each time it is asked for, never kept.
        std::fs::write(crate::lock::path(folder.path()), "version = 99\n").unwrap();
        recipe.lock_written();
        assert!(recipe.lock().is_err());
        assert!(recipe.lock().is_err());
    }
}
