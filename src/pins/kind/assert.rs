//! `kind = "assert"`: a component the base image ships, only checked (NCCL's version, asked of
//! the library torch loads).

use serde::Serialize;

use crate::types::python::Version;
use crate::types::recipe::PinName;

use super::super::pin::{Distribution, Installed, Moves, Shown, Source};
use super::super::schema::{PinKind, Probe, RawPin};
use super::{Around, Keys, Kind, Listed, PinFact, SourceView};

/// The keys an `assert` pin takes.
pub(super) const KEYS: Keys = Keys {
    allowed: &["probe", "version"],
    required: &["probe", "version"],
    module: false,
};

/// An `assert` pin's payload.
pub(super) fn load(raw: RawPin) -> Source {
    Source::Assert(AssertSource {
        probe: raw.probe.expect("required"),
        version: raw.version.expect("required").into_inner(),
    })
}

/// A component of the base image, only checked.
#[derive(Debug, Clone)]
pub struct AssertSource {
    /// How the image reports its version.
    pub probe: Probe,
    /// The version it must report.
    pub version: Version,
}

/// What the template sees of an `assert` pin.
#[derive(Debug, Serialize)]
pub struct AssertView {
    version: String,
}

/// An `assert` pin's own fields in `pin list --json`.
#[derive(Debug, Serialize)]
pub struct AssertListed<'a> {
    probe: Probe,
    version: &'a str,
    /// Always false: the base ships it.
    install: bool,
}

impl Kind for AssertSource {
    fn kind(&self) -> PinKind {
        PinKind::Assert
    }

    fn version(&self) -> Option<&Version> {
        Some(&self.version)
    }

    fn current(&self) -> &str {
        self.version.as_str()
    }

    fn in_base(&self) -> bool {
        true
    }

    fn unhashed(&self) -> Vec<String> {
        Vec::new()
    }

    fn installed(&self) -> Vec<Installed<'_>> {
        Vec::new()
    }

    fn distributions(&self) -> Vec<Distribution<'_>> {
        Vec::new()
    }

    fn shown(&self) -> Vec<Shown> {
        vec![Shown::Reported {
            probe: self.probe,
            version: self.version.to_string(),
        }]
    }

    fn moves(&self) -> Moves<'_> {
        Moves::WithTheBase { asserted: true }
    }

    fn view(&self, _around: &Around<'_>) -> SourceView {
        SourceView::Assert(AssertView {
            version: self.version.to_string(),
        })
    }

    fn facts(&self, name: &PinName) -> Vec<PinFact> {
        vec![PinFact::bare(
            name.to_string(),
            None,
            self.version.to_string(),
            true,
        )]
    }

    fn described(&self) -> String {
        format!("asserted in the base ({})", self.probe)
    }

    fn summary(&self) -> String {
        format!("in base, asserted by the {} probe", self.probe)
    }

    fn listed(&self) -> Listed<'_> {
        Listed::Assert(AssertListed {
            probe: self.probe,
            version: self.version.as_str(),
            install: false,
        })
    }
}
