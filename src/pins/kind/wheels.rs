//! `kind = "wheels"`: wheels that always share one version, each from an index or, with the
//! set's `url`, downloaded by URL.

use std::ops::Range;

use serde::Serialize;

use crate::types::python::{FileSha256, LocalLabel, PackageName, Version, WheelFile};
use crate::types::recipe::PinName;
use crate::types::url::{Url, UrlTemplate};

use super::super::load::{LoadError, Loader};
use super::super::pin::{Distribution, HashedFile, Installed, Moves, Shown, Source};
use super::super::schema::{PinKind, RawPin};
use super::{
    Around, Keys, Kind, Listed, ListedFile, PinFact, SourceView, hashed_pairs, listed_files,
    requirements_line,
};

/// The keys a `wheels` pin takes.
pub(super) const KEYS: Keys = Keys {
    allowed: &[
        "module", "version", "group", "deny", "allow", "wheels", "url", "releases",
    ],
    required: &["version", "wheels"],
    module: true,
};

/// A `wheels` pin's payload: each wheel checked against the set's version and `url`
/// (`load/wheels.rs`).
pub(super) fn load(
    loader: &Loader<'_>,
    name: &PinName,
    raw: RawPin,
    span: &Range<usize>,
) -> Result<Source, LoadError> {
    loader.wheel_set(
        name,
        raw.version.expect("required").into_inner(),
        raw.wheels.expect("required"),
        raw.url,
        raw.releases,
        span,
    )
}

/// Wheels that always share one version.
#[derive(Debug, Clone)]
pub struct WheelSet {
    /// The shared version.
    pub version: Version,
    /// The wheels.
    pub wheels: Vec<Wheel>,
    /// Where the files are downloaded from instead of an index: `{version}` and each
    /// wheel's `{file}` filled in.
    pub url: Option<UrlTemplate>,
    /// Where the versions of a set with a `url` are listed: a GitHub releases API URL
    /// (`releases`, else derived from a `https://github.com/OWNER/REPO/releases/download/`
    /// url).
    pub releases: Option<Url>,
}

/// One wheel of a wheel set.
#[derive(Debug, Clone)]
pub struct Wheel {
    /// Its distribution name.
    pub package: PackageName,
    /// A local version label (`cu130`) appended to the shared version.
    pub local: Option<LocalLabel>,
    /// An index of its own.
    pub index: Option<Url>,
    /// Its file name at `{version}`, when the set is downloaded from a URL.
    pub file: Option<WheelFile>,
    /// The sha256 of that file at the set's version, once recorded.
    pub sha256: Option<FileSha256>,
    /// From an index: every file of its version pip may install on the image, with its sha256
    /// (empty until `forge pin bump` records them).
    pub files: Vec<HashedFile>,
}

/// What the template sees of a `wheels` pin.
#[derive(Debug, Serialize)]
pub struct WheelsView {
    version: String,
    wheels: Vec<WheelView>,
    /// The packages without a recorded sha256 (pip installs them unchecked): the template says
    /// so where it installs them.
    unhashed: Vec<String>,
    /// Whether every wheel has its hashes (`--require-hashes` holds).
    hashed: bool,
    /// Where the files are downloaded from (`{version}`, `{file}`), if not from an index.
    url: Option<String>,
}

/// What the template sees of one wheel of a set.
#[derive(Debug, Serialize)]
pub struct WheelView {
    package: String,
    version: String,
    /// What pip installs: `package==version` from an index, or the file's URL when the set has
    /// a `url`.
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

/// A `wheels` pin's own fields in `pin list --json`.
#[derive(Debug, Serialize)]
pub struct WheelsListed<'a> {
    version: &'a str,
    wheels: Vec<WheelListed<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    url: Option<&'a str>,
}

/// One wheel of a set in `pin list --json`: its download's `url` and `sha256`, or the `files`
/// recorded from its index.
#[derive(Debug, Serialize)]
pub struct WheelListed<'a> {
    package: &'a str,
    version: String,
    index: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sha256: Option<Option<&'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    files: Option<Vec<ListedFile<'a>>>,
}

impl Wheel {
    /// Whether pip checks what it installs for this wheel: a downloaded file's `sha256`, or the
    /// files recorded from its index.
    pub fn hashed(&self) -> bool {
        match self.file {
            Some(_) => self.sha256.is_some(),
            None => !self.files.is_empty(),
        }
    }

    /// Where this wheel's file is at `version`, for a set downloaded from `url`.
    pub fn url(&self, url: Option<&UrlTemplate>, version: &Version) -> Option<Url> {
        let file = self.file.as_ref()?;
        Some(url?.expand(version.as_str(), &file.expand(version)))
    }

    /// The version this wheel carries for the set's `version`: `0.6.14+cu130`.
    pub fn version(&self, version: &Version) -> String {
        match &self.local {
            Some(local) => format!("{version}+{local}"),
            None => version.to_string(),
        }
    }

    /// The start of its wheel file name for `version` (`flashinfer_jit_cache-0.6.14+cu130-`),
    /// as the wheel spec escapes the distribution name.
    pub fn file_prefix(&self, version: &Version) -> String {
        format!(
            "{}-{}-",
            self.package.normalized().replace('-', "_"),
            self.version(version)
        )
    }

    /// What the template sees of it at the set's `version`.
    fn view(&self, version: &Version, url: Option<&UrlTemplate>) -> WheelView {
        let download = self.url(url, version);
        let requirement = match &download {
            Some(download) => download.to_string(),
            None => format!("{}=={}", self.package, self.version(version)),
        };
        let hashes: Vec<&str> = match &download {
            Some(_) => self.sha256.iter().map(|sha256| sha256.as_str()).collect(),
            None => self.files.iter().map(|file| file.sha256.as_str()).collect(),
        };
        WheelView {
            package: self.package.to_string(),
            version: self.version(version),
            line: requirements_line(&requirement, &hashes),
            hashed: self.hashed(),
            requirement,
            index: self.index.as_ref().map(ToString::to_string),
            url: download.as_ref().map(ToString::to_string),
            sha256: self.sha256.as_ref().map(ToString::to_string),
        }
    }

    /// Its entry in the SBOM and the provenance, as a member `name/PACKAGE` of the set.
    fn fact(&self, name: &PinName, version: &Version, url: Option<&UrlTemplate>) -> PinFact {
        let download = self.url(url, version);
        let files = match (&download, &self.file, &self.sha256) {
            (Some(_), Some(file), Some(sha256)) => vec![(file.expand(version), sha256.to_string())],
            (Some(_), _, _) => Vec::new(),
            (None, _, _) => hashed_pairs(&self.files),
        };
        PinFact {
            files,
            download: download.map(|download| download.to_string()),
            ..PinFact::bare(
                format!("{name}/{}", self.package),
                Some(self.package.to_string()),
                self.version(version),
                false,
            )
        }
    }
}

impl WheelSet {
    /// The packages of the set pip installs without a hash to check: a downloaded file with no
    /// `sha256`, a wheel from an index with no recorded `files`.
    pub fn unhashed(&self) -> Vec<String> {
        self.wheels
            .iter()
            .filter(|wheel| !wheel.hashed())
            .map(|wheel| wheel.package.to_string())
            .collect()
    }

    /// The set's packages, joined by `separator`.
    fn packages(&self, separator: &str, quoted: bool) -> String {
        self.wheels
            .iter()
            .map(|wheel| match quoted {
                true => format!("`{}`", wheel.package),
                false => wheel.package.to_string(),
            })
            .collect::<Vec<_>>()
            .join(separator)
    }
}

impl Kind for WheelSet {
    fn kind(&self) -> PinKind {
        PinKind::Wheels
    }

    fn version(&self) -> Option<&Version> {
        Some(&self.version)
    }

    fn current(&self) -> &str {
        self.version.as_str()
    }

    fn in_base(&self) -> bool {
        false
    }

    fn unhashed(&self) -> Vec<String> {
        WheelSet::unhashed(self)
    }

    fn installed(&self) -> Vec<Installed<'_>> {
        self.wheels
            .iter()
            .enumerate()
            .map(|(index, wheel)| match &wheel.file {
                Some(file) => Installed::Downloaded {
                    package: &wheel.package,
                    file: file.expand(&self.version),
                },
                None => Installed::Indexed {
                    wheel: Some(index),
                    package: &wheel.package,
                    files: &wheel.files,
                },
            })
            .collect()
    }

    fn distributions(&self) -> Vec<Distribution<'_>> {
        self.wheels
            .iter()
            .map(|wheel| Distribution {
                package: &wheel.package,
                version: wheel.version(&self.version),
                local: wheel.local.clone(),
                index: wheel.index.as_ref(),
            })
            .collect()
    }

    fn shown(&self) -> Vec<Shown> {
        self.wheels
            .iter()
            .map(|wheel| Shown::Distribution {
                package: wheel.package.to_string(),
                version: wheel.version(&self.version),
            })
            .collect()
    }

    fn moves(&self) -> Moves<'_> {
        match &self.url {
            Some(url) => Moves::ByDownload(self, url),
            None => Moves::ByIndex,
        }
    }

    fn view(&self, _around: &Around<'_>) -> SourceView {
        SourceView::Wheels(WheelsView {
            version: self.version.to_string(),
            wheels: self
                .wheels
                .iter()
                .map(|wheel| wheel.view(&self.version, self.url.as_ref()))
                .collect(),
            unhashed: self.unhashed(),
            hashed: self.unhashed().is_empty(),
            url: self.url.as_ref().map(ToString::to_string),
        })
    }

    fn facts(&self, name: &PinName) -> Vec<PinFact> {
        self.wheels
            .iter()
            .map(|wheel| wheel.fact(name, &self.version, self.url.as_ref()))
            .collect()
    }

    fn described(&self) -> String {
        self.packages(" + ", true)
    }

    fn summary(&self) -> String {
        let by = if self.url.is_some() { " by URL" } else { "" };
        match self.unhashed().len() {
            0 => format!("{}{by}", self.packages(" + ", false)),
            unhashed => format!(
                "{}{by} ({unhashed} without sha256)",
                self.packages(" + ", false)
            ),
        }
    }

    fn listed(&self) -> Listed<'_> {
        let version = &self.version;
        Listed::Wheels(WheelsListed {
            version: version.as_str(),
            wheels: self
                .wheels
                .iter()
                .map(|wheel| {
                    let download = wheel.url(self.url.as_ref(), version);
                    WheelListed {
                        package: wheel.package.as_str(),
                        version: wheel.version(version),
                        index: wheel.index.as_ref().map(Url::as_str),
                        sha256: download
                            .is_some()
                            .then(|| wheel.sha256.as_ref().map(FileSha256::as_str)),
                        files: download.is_none().then(|| listed_files(&wheel.files)),
                        url: download.map(|download| download.to_string()),
                    }
                })
                .collect(),
            url: self.url.as_ref().map(UrlTemplate::as_str),
        })
    }
}
