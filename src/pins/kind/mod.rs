//! A pin's kind: one module per kind, each the one place that says what a pin of that kind is
//! and how every stage treats it. The payload of a kind (`PythonSource`, `WheelSet`,
//! `GitSource`, `AssertSource`) implements `Kind`, and `Source::as_kind` is the one place that
//! lists the kinds; everything past the pins room asks a pin through `Kind` (or `Pin`'s
//! methods that forward to it) and never matches on its kind.
//!
//! What a kind answers:
//!
//! | question | method | asked by |
//! |---|---|---|
//! | its name, version and current value | `kind`, `version`, `current` | every stage |
//! | whether the base supplies it | `in_base` | render, verify, provenance |
//! | what the layer installs, with which hashes | `installed`, `unhashed`, `distributions` | render, `pin bump`, verify |
//! | what the image must show for it | `shown` | the build's gates (`gate`), `verify::probe` |
//! | how it moves to a newer version | `moves`, `versioned_locally` | `pin bump`, `pin outdated`, render's warnings |
//! | what the template sees | `view` | `render` |
//! | what the SBOM and the provenance list | `facts` | `attest` |
//! | its words in `report` and `pin list` | `described`, `summary`, `listed` | `report`, `pin list` |
//!
//! Each kind's file also holds its load checks: the keys it takes (`KEYS`) and how its payload
//! is made from pins.toml's table (`load`).
//!
//! Adding a kind: its file here, a variant of `Source` and of `PinKind` (how pins.toml names it)
//! with their arms in this file (`Source::as_kind`, `keys`, `load`), any new key in `schema`,
//! and docs/pins.md.

mod assert;
mod git;
mod python;
mod wheels;

use std::ops::Range;

use serde::Serialize;

use crate::types::python::Version;
use crate::types::recipe::PinName;

use super::Fix;
use super::load::{LoadError, Loader};
use super::pin::{Distribution, Installed, Moves, Shown, Source};
use super::recipe::Notice;
use super::schema::{PinKind, RawPin};

pub use assert::{AssertSource, AssertView};
pub use git::{GitSource, GitView};
pub use python::{PythonSource, PythonView, Shim};
pub use wheels::{Wheel, WheelSet, WheelsView};

/// What forge knows and does about a pin of one kind.
pub trait Kind {
    /// The kind, as pins.toml writes it.
    fn kind(&self) -> PinKind;

    /// The version, for a kind pinned by version.
    fn version(&self) -> Option<&Version>;

    /// What the pin stands at: its version, or its git revision.
    fn current(&self) -> &str;

    /// Whether the base image supplies it rather than the layer.
    fn in_base(&self) -> bool;

    /// The distributions the layer installs without a hash pip checks.
    fn unhashed(&self) -> Vec<String>;

    /// Each distribution the layer installs for the pin, with what pins.toml records of its files.
    fn installed(&self) -> Vec<Installed<'_>>;

    /// The Python distributions it installs or asserts.
    fn distributions(&self) -> Vec<Distribution<'_>>;

    /// What an image built with it must show, one entry per distribution, revision or version.
    fn shown(&self) -> Vec<Shown>;

    /// How it moves to a newer version.
    fn moves(&self) -> Moves<'_>;

    /// Whether a move of its lockstep group writes the version with the local label the index
    /// gives its package (`2.9.0+cu130`) rather than the bare version the group moves to.
    fn versioned_locally(&self) -> bool {
        false
    }

    /// The shim it appends to one of its modules, for a kind that has one.
    fn shim(&self) -> Option<&Shim> {
        None
    }

    /// What the Dockerfile template sees of it, besides what every pin has.
    fn view(&self, around: &Around<'_>) -> SourceView;

    /// The pin as the SBOM and the provenance list it: one entry, or one per wheel of a set.
    fn facts(&self, name: &PinName) -> Vec<PinFact>;

    /// Where it comes from, in a few words of Markdown (`report`).
    fn described(&self) -> String;

    /// Where it comes from, for the SOURCE column of `pin list`.
    fn summary(&self) -> String;

    /// Its own fields in `pin list --json`.
    fn listed(&self) -> Listed<'_>;
}

impl Source {
    /// The pin's kind, as the capability every stage asks.
    pub fn as_kind(&self) -> &dyn Kind {
        match self {
            Source::Python(python) => python,
            Source::Wheels(set) => set,
            Source::Git(git) => git,
            Source::Assert(assert) => assert,
        }
    }
}

/// The keys of pins.toml a pin of one kind takes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Keys {
    /// Every key it may carry.
    pub allowed: &'static [&'static str],
    /// The keys it must carry.
    pub required: &'static [&'static str],
    /// Whether it must name the module whose import proves it landed.
    pub module: bool,
}

/// The keys a pin of `kind` takes.
pub(super) fn keys(kind: PinKind) -> Keys {
    match kind {
        PinKind::Python => python::KEYS,
        PinKind::Wheels => wheels::KEYS,
        PinKind::Git => git::KEYS,
        PinKind::Assert => assert::KEYS,
    }
}

/// The payload of a pin whose keys fit its kind (`keys`), checked by its kind.
pub(super) fn load(
    loader: &Loader<'_>,
    name: &PinName,
    raw: RawPin,
    span: &Range<usize>,
    notices: &mut Vec<Notice>,
) -> Result<Source, LoadError> {
    match raw.kind {
        PinKind::Python => python::load(loader, name, raw, span),
        PinKind::Wheels => wheels::load(loader, name, raw, span),
        PinKind::Git => git::load(loader, name, raw, span, notices),
        PinKind::Assert => Ok(assert::load(raw)),
    }
}

/// What a kind's template view may depend on besides the pin's own payload.
#[derive(Debug, Clone, Copy)]
pub struct Around<'a> {
    /// The pin's name.
    pub name: &'a PinName,
    /// Whether a `[[patches]]` series patches it.
    pub patched: bool,
    /// The fixes it brings, whose gates end its step.
    pub fixes: &'a [&'a Fix],
}

/// What the template sees of a pin's source: each kind's own fields, flattened into the pin's.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum SourceView {
    /// A `python` pin.
    Python(PythonView),
    /// A `wheels` pin.
    Wheels(WheelsView),
    /// A `git` pin.
    Git(GitView),
    /// An `assert` pin.
    Assert(AssertView),
}

/// A pin's own fields in `pin list --json`, flattened into what every pin has.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Listed<'a> {
    /// A `python` pin.
    Python(python::PythonListed<'a>),
    /// A `wheels` pin.
    Wheels(wheels::WheelsListed<'a>),
    /// A `git` pin.
    Git(git::GitListed<'a>),
    /// An `assert` pin.
    Assert(assert::AssertListed<'a>),
}

/// A file recorded from an index, as `pin list --json` lists it.
#[derive(Debug, Serialize)]
pub struct ListedFile<'a> {
    file: &'a str,
    sha256: &'a str,
}

/// Recorded index files as `pin list --json` lists them.
fn listed_files(files: &[super::HashedFile]) -> Vec<ListedFile<'_>> {
    files
        .iter()
        .map(|file| ListedFile {
            file: file.file.as_str(),
            sha256: file.sha256.as_str(),
        })
        .collect()
}

/// A pin as the SBOM and the provenance list it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinFact {
    /// The pin's name in pins.toml (`PIN/PACKAGE` for a wheel of a set).
    pub name: String,
    /// The package it installs, for Python pins.
    pub package: Option<String>,
    /// The version or full revision.
    pub version: String,
    /// The git remote, for git pins.
    pub url: Option<String>,
    /// The branch a git pin's revision is on.
    pub branch: Option<String>,
    /// Each file pip may install for it, with its sha256 (hex), as pins.toml records them.
    pub files: Vec<(String, String)>,
    /// Where a wheel by URL is downloaded from.
    pub download: Option<String>,
    /// Supplied by the base image rather than installed by the layer.
    pub in_base: bool,
}

impl PinFact {
    /// A fact with only a name, a version and where it comes from; the rest empty.
    fn bare(name: String, package: Option<String>, version: String, in_base: bool) -> Self {
        PinFact {
            name,
            package,
            version,
            url: None,
            branch: None,
            files: Vec::new(),
            download: None,
            in_base,
        }
    }
}

/// Recorded index files as `(file, sha256)` pairs.
fn hashed_pairs(files: &[super::HashedFile]) -> Vec<(String, String)> {
    files
        .iter()
        .map(|file| (file.file.to_string(), file.sha256.to_string()))
        .collect()
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
