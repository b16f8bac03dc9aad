//! `kind = "python"`: one distribution from a package index, installed by the layer or, with
//! `install = false`, shipped by the base and only checked.

use std::ops::Range;

use serde::Serialize;

use crate::types::python::{Identifier, ModulePath, PackageName, Version};
use crate::types::recipe::{PinName, RecipePath};
use crate::types::url::Url;

use super::super::gate;
use super::super::load::{LoadError, Loader};
use super::super::pin::{Distribution, HashedFile, Installed, Moves, Shown, Source};
use super::super::schema::{PinKind, RawPin};
use super::{
    Around, Keys, Kind, Listed, ListedFile, PinFact, SourceView, hashed_pairs, listed_files,
    requirements_line,
};

/// The keys a `python` pin takes.
pub(super) const KEYS: Keys = Keys {
    allowed: &[
        "package", "module", "version", "install", "index", "group", "deny", "allow", "shim",
        "files",
    ],
    required: &["package", "version"],
    module: true,
};

/// A `python` pin's payload: files are recorded only for what the layer installs.
pub(super) fn load(
    loader: &Loader<'_>,
    name: &PinName,
    raw: RawPin,
    span: &Range<usize>,
) -> Result<Source, LoadError> {
    let package = raw.package.expect("required");
    let version = raw.version.expect("required").into_inner();
    let install = raw.install.unwrap_or(true);
    if !install && raw.files.is_some() {
        return Err(loader.error(
            span.clone(),
            format!("pin `{name}` installs nothing (install = false) but records `files`"),
            "drop `files`: the base supplies the package, and nothing is downloaded",
        ));
    }
    let owner = format!("pin `{name}`");
    let files = loader.hashed_files(&owner, name, &package, version.as_str(), raw.files, span)?;
    Ok(Source::Python(PythonSource {
        package,
        version,
        install,
        index: raw.index,
        shim: raw.shim.map(|shim| loader.shim(shim)).transpose()?,
        files,
    }))
}

/// One distribution from a package index.
#[derive(Debug, Clone)]
pub struct PythonSource {
    /// Its name on the index.
    pub package: PackageName,
    /// The exact version.
    pub version: Version,
    /// False when the base already ships it and the layer only asserts it.
    pub install: bool,
    /// An index of its own, if it is not on the default one.
    pub index: Option<Url>,
    /// A re-export shim appended to one of its modules.
    pub shim: Option<Shim>,
    /// Every file of `version` pip may install on the image, with its sha256 (empty until
    /// `forge pin bump` records them).
    pub files: Vec<HashedFile>,
}

/// A module shim: a file appended to an installed module to restore names it lost.
#[derive(Debug, Clone)]
pub struct Shim {
    /// The shim's source, in the recipe.
    pub file: RecipePath,
    /// The module it is appended to.
    pub module: ModulePath,
    /// The names it must make importable again.
    pub exports: Vec<Identifier>,
}

/// What the template sees of a `python` pin.
#[derive(Debug, Serialize)]
pub struct PythonView {
    package: String,
    version: String,
    requirement: String,
    /// Its line of a requirements file, quoted for the shell: the requirement with a `--hash`
    /// for every recorded file (`printf '%s\n' LINE... | pip install -r /dev/stdin`).
    line: String,
    /// Whether every file pip may take has a recorded sha256 (`--require-hashes` holds).
    hashed: bool,
    install: bool,
    index: Option<String>,
    shim: Option<ShimView>,
}

/// What the template sees of a shim: where it comes from, where it goes, and its gate.
#[derive(Debug, Serialize)]
pub struct ShimView {
    file: String,
    module: String,
    exports: Vec<String>,
    gate: String,
}

/// A `python` pin's own fields in `pin list --json`.
#[derive(Debug, Serialize)]
pub struct PythonListed<'a> {
    package: &'a str,
    version: &'a str,
    install: bool,
    index: Option<&'a str>,
    shim: Option<ListedShim<'a>>,
    files: Vec<ListedFile<'a>>,
}

/// A shim in `pin list --json`.
#[derive(Debug, Serialize)]
pub struct ListedShim<'a> {
    file: &'a str,
    module: &'a str,
}

impl Kind for PythonSource {
    fn kind(&self) -> PinKind {
        PinKind::Python
    }

    fn version(&self) -> Option<&Version> {
        Some(&self.version)
    }

    fn current(&self) -> &str {
        self.version.as_str()
    }

    fn in_base(&self) -> bool {
        !self.install
    }

    fn unhashed(&self) -> Vec<String> {
        if self.install && self.files.is_empty() {
            vec![self.package.to_string()]
        } else {
            Vec::new()
        }
    }

    fn installed(&self) -> Vec<Installed<'_>> {
        if !self.install {
            return Vec::new();
        }
        vec![Installed::Indexed {
            wheel: None,
            package: &self.package,
            files: &self.files,
        }]
    }

    fn distributions(&self) -> Vec<Distribution<'_>> {
        vec![Distribution {
            package: &self.package,
            version: self.version.to_string(),
            local: self
                .version
                .as_str()
                .split_once('+')
                .and_then(|(_, local)| local.parse().ok()),
            index: self.index.as_ref(),
        }]
    }

    fn shown(&self) -> Vec<Shown> {
        vec![Shown::Distribution {
            package: self.package.to_string(),
            version: self.version.to_string(),
        }]
    }

    fn moves(&self) -> Moves<'_> {
        if self.install {
            Moves::ByIndex
        } else {
            Moves::WithTheBase { asserted: false }
        }
    }

    fn versioned_locally(&self) -> bool {
        true
    }

    fn shim(&self) -> Option<&Shim> {
        self.shim.as_ref()
    }

    fn view(&self, around: &Around<'_>) -> SourceView {
        let requirement = format!("{}=={}", self.package, self.version);
        let hashes: Vec<&str> = self.files.iter().map(|file| file.sha256.as_str()).collect();
        SourceView::Python(PythonView {
            package: self.package.to_string(),
            version: self.version.to_string(),
            line: requirements_line(&requirement, &hashes),
            requirement,
            hashed: !self.files.is_empty(),
            install: self.install,
            index: self.index.as_ref().map(ToString::to_string),
            shim: self.shim.as_ref().map(|shim| ShimView {
                file: shim.file.to_string(),
                module: shim.module.to_string(),
                exports: shim.exports.iter().map(ToString::to_string).collect(),
                // The shim is the step's last command: what the pin fixes is checked after it.
                gate: gate::with_fixes(gate::for_shim(shim), around.fixes.iter().copied()),
            }),
        })
    }

    fn facts(&self, name: &PinName) -> Vec<PinFact> {
        vec![PinFact {
            files: hashed_pairs(&self.files),
            ..PinFact::bare(
                name.to_string(),
                Some(self.package.to_string()),
                self.version.to_string(),
                self.in_base(),
            )
        }]
    }

    fn described(&self) -> String {
        if self.install {
            format!("`{}`", self.package)
        } else {
            format!("`{}` (in the base)", self.package)
        }
    }

    fn summary(&self) -> String {
        match (self.install, self.unhashed().is_empty()) {
            (false, _) => format!("{} (in base, not installed)", self.package),
            (true, true) => self.package.to_string(),
            (true, false) => format!("{} (no sha256)", self.package),
        }
    }

    fn listed(&self) -> Listed<'_> {
        Listed::Python(PythonListed {
            package: self.package.as_str(),
            version: self.version.as_str(),
            install: self.install,
            index: self.index.as_ref().map(Url::as_str),
            shim: self.shim.as_ref().map(|shim| ListedShim {
                file: shim.file.as_str(),
                module: shim.module.as_str(),
            }),
            files: listed_files(&self.files),
        })
    }
}
