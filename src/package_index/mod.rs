//! Package indexes: a package name and an index URL in, the versions the index offers out.
//!
//! 1. `select` decides which index each package is asked on: a mirror given with `--index-url`
//!    or `FORGE_INDEX_URL` replaces every index; otherwise a pin's own `index`, else pip's
//!    configuration (with its extra indexes), else pins.toml `[index] url`, else PyPI. `auth`
//!    finds each index's credentials (its URL, else netrc) and sends them to its host only.
//! 2. `PackageIndex` asks one index for one package. `SimpleIndex`, the real one, speaks the
//!    simple repository API: PEP 691 JSON when the server offers it, the PEP 503 HTML page when
//!    it does not (static wheel folders such as FlashInfer's serve only HTML), and the PyPI JSON
//!    API for an index URL that ends in `/pypi`.
//! 3. Versions are read from file names (wheels and sdists), ordered by PEP 440; a version whose
//!    every file is yanked is not offered. `wheel` says which files fit the image.
//! 4. A wheel's METADATA comes from its PEP 658 metadata file, else out of the wheel by range
//!    requests (`zip_range`), kept by the wheel's sha256 (`metadata_cache`).
//! 5. A wheel set downloaded by URL instead: `releases` lists the versions a project's GitHub
//!    releases offer and the files each holds; `download` fetches a file to learn its sha256.

pub mod auth;
pub mod download;
pub mod metadata_cache;
pub mod releases;
pub mod select;
mod simple;
pub mod wheel;
pub mod zip_range;

pub use simple::{SimpleIndex, version_of_file};

use std::collections::BTreeSet;

use crate::diagnostics::{Advice, Advise};
use crate::types::python::PackageName;
use crate::types::url::Url;

/// What an index offers for one package.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Releases {
    /// Every version with at least one file that is not yanked, oldest first.
    pub versions: BTreeSet<pep440_rs::Version>,
    /// Every file of the package, yanked ones too.
    pub files: Vec<IndexFile>,
}

/// One distribution file on the index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexFile {
    /// The file name.
    pub name: String,
    /// The version its name carries.
    pub version: pep440_rs::Version,
    /// PEP 592: the reason it was yanked (empty when none was given), `None` when it was not.
    pub yanked: Option<String>,
    /// PEP 691's `requires-python`, when the index gives it.
    pub requires_python: Option<String>,
    /// Where the file is, as the page gives it (relative to the page or absolute).
    pub url: Option<String>,
    /// PEP 658/714: the index serves the file's METADATA at `<url>.metadata`.
    pub metadata: bool,
    /// The file's sha256 (lowercase hex), as the page gives it: what its METADATA is cached by.
    pub sha256: Option<String>,
}

/// A file as an index page lists it: its name, whether (and why) it was yanked, and its
/// `requires-python`.
pub type Listed<'a> = (&'a str, Option<&'a str>, Option<&'a str>);

/// Whether the files of a version give the image a wheel to install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fit {
    /// A wheel that is not yanked fits.
    Fits,
    /// Only yanked wheels fit (PEP 592: an exact pin may still use them).
    OnlyYanked,
    /// No wheel fits; the tags of the wheels there are, and why others were left out.
    None {
        /// `python-abi-platform` of every wheel of the version.
        offered: Vec<String>,
    },
}

impl Releases {
    /// Whether the index offers `version`, local label included (`0.6.15+cu130`).
    pub fn has(&self, version: &pep440_rs::Version) -> bool {
        self.versions.contains(version)
    }

    /// Why `version` is yanked, when every file of it is (an empty reason when none was given).
    pub fn yanked(&self, version: &pep440_rs::Version) -> Option<String> {
        let mut files = self.files.iter().filter(|file| &file.version == version);
        let first = files.next()?;
        let reason = first.yanked.clone()?;
        files.all(|file| file.yanked.is_some()).then_some(reason)
    }

    /// Whether `version` has a wheel for `target`: tags that fit and a `requires-python`
    /// that holds.
    pub fn fit(&self, version: &pep440_rs::Version, target: &wheel::WheelTarget) -> Fit {
        let files: Vec<&IndexFile> = self
            .files
            .iter()
            .filter(|file| &file.version == version)
            .collect();
        let fits = |file: &&IndexFile| {
            target.fits_wheel(&file.name)
                && file
                    .requires_python
                    .as_deref()
                    .is_none_or(|requires| target.requires_python_holds(requires))
        };
        if files.iter().filter(|file| file.yanked.is_none()).any(fits) {
            Fit::Fits
        } else if files.iter().any(fits) {
            Fit::OnlyYanked
        } else {
            Fit::None {
                offered: files
                    .iter()
                    .filter_map(|file| {
                        let tags = wheel::tag_triple(&file.name)?;
                        Some(match &file.requires_python {
                            Some(requires) => format!("{tags} (requires-python {requires})"),
                            None => tags,
                        })
                    })
                    .collect(),
            }
        }
    }

    /// Reads the versions from file names, skipping names that are not a wheel or sdist of
    /// `package`; a version is offered when one of its files is not yanked.
    pub fn from_files<'a>(
        package: &PackageName,
        files: impl IntoIterator<Item = Listed<'a>>,
    ) -> Self {
        let files: Vec<IndexFile> = files
            .into_iter()
            .filter_map(|(name, yanked, requires_python)| {
                Some(IndexFile {
                    url: None,
                    metadata: false,
                    sha256: None,
                    version: version_of_file(package, name)?,
                    name: name.to_owned(),
                    yanked: yanked.map(ToOwned::to_owned),
                    requires_python: requires_python
                        .map(str::trim)
                        .filter(|text| !text.is_empty())
                        .map(ToOwned::to_owned),
                })
            })
            .collect();
        let versions = files
            .iter()
            .filter(|file| file.yanked.is_none())
            .map(|file| file.version.clone())
            .collect();
        Self { versions, files }
    }
}

/// One package index, asked for one package at a time.
pub trait PackageIndex {
    /// The releases of `package` on the index at `index`.
    fn releases(&self, index: &Url, package: &PackageName) -> Result<Releases, IndexError>;

    /// The METADATA of the file at `url` (absolute), from its PEP 658 metadata file.
    fn metadata(&self, url: &str) -> Result<String, IndexError>;

    /// The METADATA of the wheel at `url` (absolute), read out of the wheel by range requests.
    fn metadata_in_wheel(&self, url: &str) -> Result<String, IndexError>;
}

/// Why an index could not say what it offers.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// No HTTP answer at all.
    #[error(
        "cannot reach the package index at {}: {message}",
        crate::redact::Redacted(url)
    )]
    Unreachable {
        /// The URL asked.
        url: String,
        /// What the connection said.
        message: String,
    },
    /// The index does not know the package.
    #[error(
        "{} has no package `{package}` (HTTP 404)",
        crate::redact::Redacted(url)
    )]
    NotFound {
        /// The URL asked.
        url: String,
        /// The package.
        package: String,
    },
    /// The index answered with an error status.
    #[error(
        "the package index at {} answered HTTP {status}",
        crate::redact::Redacted(url)
    )]
    Status {
        /// The URL asked.
        url: String,
        /// The status code.
        status: u16,
    },
    /// The answer was not a page or document of the simple API.
    #[error(
        "the package index at {} sent an answer forge cannot read: {message}",
        crate::redact::Redacted(url)
    )]
    Invalid {
        /// The URL asked.
        url: String,
        /// What was wrong with it.
        message: String,
    },
}

impl Advise for IndexError {
    fn advice(&self) -> Advice {
        Advice::Hint(match self {
            IndexError::Unreachable { .. } | IndexError::Status { .. } => "check the URL and the network; on an air-gapped machine point forge at a mirror with --index-url URL or FORGE_INDEX_URL".to_owned(),
            IndexError::NotFound { .. } => "check the package name in pins.toml, and that this index (or the pin's own `index`) serves it".to_owned(),
            IndexError::Invalid { .. } => "forge reads the simple repository API (PEP 691 JSON or PEP 503 HTML); point --index-url at such an index, such as https://pypi.org/simple".to_owned(),
        })
    }
}

crate::advised!(IndexError);
