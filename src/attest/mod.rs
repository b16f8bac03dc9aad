//! Provenance a tester can check: for a pushed image, its SBOM (`sbom`), a SLSA provenance
//! statement (`provenance`) in a signed DSSE envelope (`dsse`), and a cosign-style signature of
//! its manifest (`cosign`), made with an ECDSA P-256 key (`keys`); the signature and the
//! provenance also as cosign 3 writes them, sigstore bundles referring to the image (`bundle`). `Facts` is what forge knows
//! of the build; the documents are made from it alone.

pub mod attach;
pub mod bundle;
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
pub use crate::pins::PinFact;
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
    /// Every patch applied, as forge.lock records it, with its file's digests.
    pub patches: Vec<PatchFact>,
    /// Every overlay, its files as the image holds them.
    pub overlays: Vec<OverlayFact>,
    /// Every patch script run in the image (`[[scripts]]`): its file in the recipe and the
    /// file's sha256, hex.
    pub scripts: Vec<(String, String)>,
    /// Every donor a stage copied from (`[donors.NAME]`): its name, image and manifest digest.
    pub donors: Vec<(String, ImageRef, Digest)>,
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
    /// The CI run that built it, when one did.
    pub ci: Option<CiRun>,
}

/// A patch applied, and the file it was applied from.
#[derive(Debug, Clone)]
pub struct PatchFact {
    /// What forge.lock records of it.
    pub record: PatchRecord,
    /// The sha256 of the patch file, hex.
    pub sha256: String,
    /// Its git blob id (what `git hash-object` names it by), hex.
    pub git_blob: String,
    /// The patch itself, when it is small enough to carry in the SBOM.
    pub text: Option<Vec<u8>>,
}

impl PatchFact {
    /// The largest patch the SBOM carries whole.
    pub const CARRIED: usize = 1024 * 1024;

    /// The fact of `record`, whose file is at `path`: read through once, kept only when small.
    pub fn read(record: PatchRecord, path: &std::path::Path) -> std::io::Result<Self> {
        use sha1::Digest as _;
        use std::io::Read as _;
        let mut file = std::fs::File::open(path)?;
        let length = file.metadata()?.len();
        let mut blob = sha1::Sha1::new();
        blob.update(format!("blob {length}\0").as_bytes());
        let mut sha256 = <sha2::Sha256 as sha2::Digest>::new();
        let mut text = Vec::new();
        let mut buffer = vec![0u8; 64 * 1024];
        let mut read = 0u64;
        loop {
            let count = file.read(&mut buffer)?;
            if count == 0 {
                break;
            }
            let chunk = &buffer[..count];
            blob.update(chunk);
            sha2::Digest::update(&mut sha256, chunk);
            read += count as u64;
            if read <= Self::CARRIED as u64 {
                text.extend_from_slice(chunk);
            }
        }
        if read != length {
            return Err(std::io::Error::other(format!(
                "{} changed while it was read",
                path.display()
            )));
        }
        Ok(Self {
            record,
            sha256: hex::encode(sha2::Digest::finalize(sha256)),
            git_blob: hex::encode(blob.finalize()),
            text: (read <= Self::CARRIED as u64).then_some(text),
        })
    }
}

/// The GitHub Actions run a build ran in, from the variables the runner sets; the provenance
/// names it as GitHub's workflow build type (github.com/actions/buildtypes, `workflow/v1`)
/// describes a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CiRun {
    /// `GITHUB_SERVER_URL`: `https://github.com`.
    pub server: String,
    /// `GITHUB_REPOSITORY`: `OWNER/REPO`.
    pub repository: String,
    /// `GITHUB_WORKFLOW_REF`: `OWNER/REPO/.github/workflows/FILE@REF`.
    pub workflow_ref: String,
    /// `GITHUB_REF`: the branch or tag the run is for.
    pub git_ref: String,
    /// `GITHUB_SHA`: the commit.
    pub sha: String,
    /// `GITHUB_RUN_ID`.
    pub run_id: String,
    /// `GITHUB_RUN_ATTEMPT`.
    pub run_attempt: String,
    /// `GITHUB_EVENT_NAME`.
    pub event: String,
    /// `RUNNER_ENVIRONMENT`: `github-hosted` or `self-hosted`, when the runner says.
    pub runner_environment: Option<String>,
    /// `GITHUB_REPOSITORY_ID` and `GITHUB_REPOSITORY_OWNER_ID`, when the runner says.
    pub repository_ids: Option<(String, String)>,
}

impl CiRun {
    /// The run `lookup` describes (`GITHUB_ACTIONS` is `true` and every variable is set), or
    /// none.
    pub fn from(lookup: impl Fn(&str) -> Option<String>) -> Option<Self> {
        if lookup("GITHUB_ACTIONS").as_deref() != Some("true") {
            return None;
        }
        let setting = |name: &str| lookup(name).filter(|value| !value.is_empty());
        Some(Self {
            server: setting("GITHUB_SERVER_URL")?,
            repository: setting("GITHUB_REPOSITORY")?,
            workflow_ref: setting("GITHUB_WORKFLOW_REF")?,
            git_ref: setting("GITHUB_REF")?,
            sha: setting("GITHUB_SHA")?,
            run_id: setting("GITHUB_RUN_ID")?,
            run_attempt: setting("GITHUB_RUN_ATTEMPT").unwrap_or_else(|| "1".to_owned()),
            event: setting("GITHUB_EVENT_NAME").unwrap_or_default(),
            runner_environment: setting("RUNNER_ENVIRONMENT"),
            repository_ids: setting("GITHUB_REPOSITORY_ID")
                .zip(setting("GITHUB_REPOSITORY_OWNER_ID")),
        })
    }

    /// The run from the environment.
    pub fn from_environment() -> Option<Self> {
        Self::from(|name| std::env::var(name).ok())
    }

    /// `SERVER/OWNER/REPO`.
    pub fn repository_url(&self) -> String {
        format!("{}/{}", self.server, self.repository)
    }
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

impl PinFact {
    /// Its package URL: `pkg:pypi/NAME@VERSION`; for a git pin `pkg:github/OWNER/REPO@REV`
    /// (GitHub) or `pkg:generic/NAME@REV`, with the remote exactly as pins.toml gives it (its
    /// `.git` kept) and the revision as `vcs_url=git+URL@REV`; `None` for a pin that names no
    /// package.
    pub fn purl(&self) -> Option<String> {
        let encoded = sbom::purl_encoded;
        if let Some(url) = &self.url {
            let vcs = encoded(&format!("git+{url}@{}", self.version));
            let github = url
                .strip_prefix("https://github.com/")
                .map(|path| path.trim_end_matches('/').trim_end_matches(".git"))
                .filter(|path| path.split('/').count() == 2);
            return Some(match github {
                Some(path) => format!(
                    "pkg:github/{}@{}?vcs_url={vcs}",
                    path.to_ascii_lowercase(),
                    self.version
                ),
                None => format!(
                    "pkg:generic/{}@{}?vcs_url={vcs}",
                    encoded(&self.name),
                    self.version
                ),
            });
        }
        // The pypi type's name: lowercase, `_` as `-` (as packageurl-python writes it).
        let name = self
            .package
            .as_ref()?
            .to_ascii_lowercase()
            .replace('_', "-");
        Some(format!("pkg:pypi/{name}@{}", encoded(&self.version)))
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

#[cfg(test)]
impl Facts {
    /// The facts of a push of the offline example: for tests.
    pub(crate) fn sample() -> Self {
        let digest = Digest::filled;
        Self {
            repository: "127.0.0.1:5000/forge/offline".parse().unwrap(),
            manifest: digest('a'),
            image_id: digest('b'),
            platform: Some("linux/amd64".parse().unwrap()),
            tags: vec!["latest".parse().unwrap()],
            base: BaseFact {
                image: "forge-example-base:busybox".parse().unwrap(),
                digest: None,
                id: Some(digest('c')),
            },
            pins: Vec::new(),
            patches: Vec::new(),
            scripts: Vec::new(),
            donors: Vec::new(),
            overlays: Vec::new(),
            inputs: vec![("pins.toml".to_owned(), digest('1').to_string())],
            build_args: BTreeMap::new(),
            builder: Builder::Buildkit,
            forge_version: "0.1.0".to_owned(),
            daemon_version: None,
            started: "2026-07-08T00:00:00Z".to_owned(),
            finished: "2026-07-08T00:01:00Z".to_owned(),
            ci: None,
        }
    }
}
