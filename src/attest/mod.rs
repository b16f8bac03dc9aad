//! Provenance a tester can check: for a pushed image, its SBOM (`sbom`), a SLSA provenance
//! statement (`provenance`) in a signed DSSE envelope (`dsse`), and a cosign-style signature of
//! its manifest (`cosign`), made with an ECDSA P-256 key (`keys`). `Facts` is what forge knows
//! of the build; the documents are made from it alone.

pub mod attach;
pub mod cosign;
pub mod dsse;
pub mod keys;
pub mod provenance;
pub mod record;
pub mod sbom;
pub mod sealed;

use std::collections::BTreeMap;

use crate::engine::Builder;
use crate::lock::PatchRecord;
use crate::types::oci::{Digest, ImageRef, Platform, Repository, Tag};

/// What forge knows of a pushed build.
#[derive(Debug, Clone)]
pub struct Facts {
    /// The repository pushed to.
    pub repository: Repository,
    /// The manifest digest the registry holds for the image.
    pub manifest: Digest,
    /// The image id.
    pub image_id: Digest,
    /// The platform built for, when the record names one.
    pub platform: Option<Platform>,
    /// The tags applied.
    pub tags: Vec<Tag>,
    /// The base image.
    pub base: BaseFact,
    /// Every pin.
    pub pins: Vec<PinFact>,
    /// Every patch applied, as forge.lock records it.
    pub patches: Vec<PatchRecord>,
    /// Every overlay, its files as the image holds them.
    pub overlays: Vec<OverlayFact>,
    /// The input digests, as forge.lock records them.
    pub inputs: Vec<(String, String)>,
    /// The build arguments.
    pub build_args: BTreeMap<String, String>,
    /// The daemon's builder that ran the build.
    pub builder: Builder,
    /// forge's version.
    pub forge_version: String,
    /// The daemon's version.
    pub daemon_version: Option<String>,
    /// When the build started (RFC 3339).
    pub started: String,
    /// When the push finished (RFC 3339).
    pub finished: String,
}

/// The base image.
#[derive(Debug, Clone)]
pub struct BaseFact {
    /// Its reference.
    pub image: ImageRef,
    /// Its registry digest, when known.
    pub digest: Option<Digest>,
    /// Its image id, when known.
    pub id: Option<Digest>,
}

/// A pin.
#[derive(Debug, Clone)]
pub struct PinFact {
    /// The pin's name in pins.toml.
    pub name: String,
    /// The package it installs, for Python pins.
    pub package: Option<String>,
    /// The version or full revision.
    pub version: String,
    /// The git remote, for git pins.
    pub url: Option<String>,
    /// Supplied by the base image rather than installed by the layer.
    pub in_base: bool,
}

impl PinFact {
    /// Its package URL: `pkg:pypi/NAME@VERSION`, `pkg:github/OWNER/REPO@REV`, or a generic
    /// one for other git remotes; `None` for a pin that names no package.
    pub fn purl(&self) -> Option<String> {
        if let Some(url) = &self.url {
            let trimmed = url.trim_end_matches('/').trim_end_matches(".git");
            if let Some(path) = trimmed.strip_prefix("https://github.com/") {
                return Some(format!("pkg:github/{path}@{}", self.version));
            }
            return Some(format!(
                "pkg:generic/{}@{}?vcs_url=git%2B{}",
                self.name,
                self.version,
                trimmed.replace(':', "%3A")
            ));
        }
        let package = self.package.as_ref()?;
        let name: String = package
            .to_ascii_lowercase()
            .chars()
            .map(|c| if c == '_' || c == '.' { '-' } else { c })
            .collect();
        Some(format!(
            "pkg:pypi/{name}@{}",
            self.version.replace('+', "%2B")
        ))
    }
}

/// An overlay folder and its files as the image holds them.
#[derive(Debug, Clone)]
pub struct OverlayFact {
    /// The recipe folder.
    pub from: String,
    /// Where it lands in the image.
    pub to: String,
    /// Each file: its path in the image and its sha256 (hex).
    pub files: Vec<FileFact>,
    /// The patch files applied to this folder (as forge.lock names them).
    pub patches: Vec<String>,
}

/// A file in the image.
#[derive(Debug, Clone)]
pub struct FileFact {
    /// Its absolute path in the image.
    pub path: String,
    /// Its sha256, hex.
    pub sha256: String,
}
