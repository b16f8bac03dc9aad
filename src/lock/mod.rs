//! Stage 6: a successful build in, `forge.lock` out: the record of what went into the image
//! and what came out, written atomically and only after the build, its tags and its pushes all
//! succeeded.
//!
//! The record is TOML, like pins.toml beside it: it is read in review next to the pins it
//! records, diffs line by line, and carries a comment saying what it is. `--locked` compares
//! a fresh computation of `Inputs` with the record and refuses to build when they differ.
//!
//! forge.lock holds one of two things (`Lock`): a build's whole `Record`, or only the recipe's
//! `[inputs]` (with the base's `[base]` when a build recorded one), which `forge lock` and
//! `forge pin bump` write without a build so that a fresh clone can build `--locked`. A record
//! is kept only while its inputs are the recipe's: once they move, the build it describes is
//! not of this recipe any more, and what stays is the inputs and the base.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::context::{self, BuildContext, ContextError};
use crate::diagnostics::{Advice, Advise};
use crate::fs::{Written, write_if_changed};
use crate::location::Location;
use crate::pins::Mutability;
use crate::recipe::{Recipe, TEMPLATES_DIR};
use crate::render::Dockerfile;
use crate::types::oci::{Digest, ImageRef, Platform, Repository, Tag};

/// The record's file name, in the recipe folder.
pub const LOCK_FILE: &str = "forge.lock";

/// The format version; bumped when a field changes meaning.
const FORMAT_VERSION: u32 = 1;

const HEADER: &str = "# forge.lock: the record of the last successful `forge build` of this recipe.\n\
# Written by forge after the build, its tags and its pushes succeeded; do not edit by hand.\n\
# `forge build --locked` refuses to build when the inputs no longer match [inputs].\n\n";

const INPUTS_HEADER: &str = "# forge.lock: the inputs of this recipe, as `forge lock` (or `forge pin bump`) computed them;\n\
# no build of them is recorded yet. Do not edit by hand.\n\
# `forge build --locked` refuses to build when the inputs no longer match [inputs].\n\n";

/// What forge.lock holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lock {
    /// The recipe's inputs without a build of them, and the base as the last build recorded it.
    Inputs {
        /// The inputs.
        inputs: Box<Inputs>,
        /// The base of the last build, kept for what it says the base holds.
        base: Option<Box<BaseRecord>>,
    },
    /// A build's whole record.
    Built(Box<Record>),
}

impl Lock {
    /// The inputs it records.
    pub fn inputs(&self) -> &Inputs {
        match self {
            Lock::Inputs { inputs, .. } => inputs,
            Lock::Built(record) => &record.inputs,
        }
    }

    /// The base as the last build recorded it.
    pub fn base(&self) -> Option<&BaseRecord> {
        match self {
            Lock::Inputs { base, .. } => base.as_deref(),
            Lock::Built(record) => Some(&record.base),
        }
    }

    /// The build it records, if it records one.
    pub fn built(self) -> Option<Record> {
        match self {
            Lock::Inputs { .. } => None,
            Lock::Built(record) => Some(*record),
        }
    }

    /// The build's record, when the lock is one.
    pub fn built_ref(&self) -> Option<&Record> {
        match self {
            Lock::Inputs { .. } => None,
            Lock::Built(record) => Some(record),
        }
    }

    /// The lock with `inputs` as the recipe's: unchanged when they are the recorded ones, else
    /// the inputs alone with the recorded base.
    pub fn with_inputs(self, inputs: Inputs) -> Lock {
        if *self.inputs() == inputs {
            return self;
        }
        Lock::Inputs {
            base: self.base().cloned().map(Box::new),
            inputs: Box::new(inputs),
        }
    }

    /// The file as forge writes it.
    pub fn to_text(&self) -> String {
        match self {
            Lock::Built(record) => record.to_text(),
            Lock::Inputs { inputs, base } => {
                let body = toml::to_string(&InputsFile {
                    version: FORMAT_VERSION,
                    inputs: (**inputs).clone(),
                    base: base.as_deref().cloned(),
                })
                .expect("inputs serialize");
                format!("{INPUTS_HEADER}{body}")
            }
        }
    }

    /// Writes the lock to `root`/forge.lock through a temporary file and a rename, only when
    /// its text changes.
    pub fn write(&self, root: &Path) -> Result<Written, LockError> {
        write_text(root, &self.to_text())
    }
}

/// Writes `text` to `root`/forge.lock through a temporary file and a rename, only when it
/// differs from what is there.
fn write_text(root: &Path, text: &str) -> Result<Written, LockError> {
    let path = path(root);
    write_if_changed(&path, text.as_bytes()).map_err(|source| LockError::Io {
        action: "write",
        path,
        source,
    })
}

/// forge.lock without a build: its version, the inputs, and the base when known.
#[derive(Debug, Serialize, Deserialize)]
struct InputsFile {
    version: u32,
    inputs: Inputs,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    base: Option<BaseRecord>,
}

/// Everything `forge.lock` records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// The format version.
    pub version: u32,
    /// Digests of what the build was made from.
    pub inputs: Inputs,
    /// The image built on.
    pub base: BaseRecord,
    /// The image built.
    pub image: ImageRecord,
    /// The tags applied, in pins.toml order.
    #[serde(default)]
    pub tags: Vec<TagRecord>,
    /// The patches applied to the patch targets, in order.
    #[serde(default)]
    pub patches: Vec<PatchRecord>,
    /// What `build --push --sign` attached to the pushed image in its registry; records
    /// written before forge signed leave it out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<AttachmentRecord>,
    /// For a recipe of several platforms: each platform's image, whose manifests the tags'
    /// OCI image index lists; empty for one platform.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub platforms: Vec<PlatformRecord>,
}

/// What kind of thing is attached to a pushed image, under cosign's tag scheme.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum AttachmentKind {
    /// The signature of the image.
    Signature,
    /// A signed provenance statement.
    Attestation,
    /// The SBOM.
    Sbom,
    /// The build record (`attest::record`).
    Record,
    /// The signature as cosign 3 writes it: a sigstore bundle referring to the image.
    #[serde(rename = "signature-bundle")]
    SignatureBundle,
    /// The signed provenance as cosign 3 writes it: a sigstore bundle referring to the image.
    #[serde(rename = "attestation-bundle")]
    AttestationBundle,
}

impl AttachmentKind {
    /// What it is, for people.
    pub fn noun(self) -> &'static str {
        match self {
            AttachmentKind::Signature => "signature",
            AttachmentKind::Attestation => "provenance",
            AttachmentKind::Sbom => "SBOM",
            AttachmentKind::Record => "build record",
            AttachmentKind::SignatureBundle => "signature bundle",
            AttachmentKind::AttestationBundle => "provenance bundle",
        }
    }

    /// Whether it is a referrer (a bundle found through the image's referrers) rather than a
    /// manifest under a cosign tag of its own.
    pub fn is_referrer(self) -> bool {
        matches!(
            self,
            AttachmentKind::SignatureBundle | AttachmentKind::AttestationBundle
        )
    }

    /// The tag the attachment of this kind for the manifest `digest` lives under: cosign's
    /// `sha256-HEX.sig`, `.att`, `.sbom` (and forge's `.record`); for a bundle, the referrers
    /// tag `sha256-HEX` whose index lists it where the registry has no referrers API.
    pub fn tag(self, digest: &Digest) -> String {
        let suffix = match self {
            AttachmentKind::Signature => "sig",
            AttachmentKind::Attestation => "att",
            AttachmentKind::Sbom => "sbom",
            AttachmentKind::Record => "record",
            AttachmentKind::SignatureBundle | AttachmentKind::AttestationBundle => {
                return format!("sha256-{}", digest.hex());
            }
        };
        format!("sha256-{}.{suffix}", digest.hex())
    }
}

/// One platform's image of a multi-platform build.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlatformRecord {
    /// `os/arch[/variant]`.
    pub platform: Platform,
    /// The image id the node that built it reported.
    pub id: Digest,
    /// The manifest digest the registry stored for it (an entry of the index).
    pub manifest: Digest,
    /// The daemon that built it, as `--node` named it.
    pub node: String,
}

/// One attachment of the pushed image, under its cosign tag.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachmentRecord {
    /// `signature`, `attestation` or `sbom`.
    pub kind: AttachmentKind,
    /// The manifest it is attached to.
    pub subject: Digest,
    /// The tag it lives under (`sha256-HEX.sig`, `.att`, `.sbom`); for a bundle, the
    /// referrers tag whose index lists it, empty where the registry's referrers API lists it.
    pub tag: String,
    /// The digest of the attachment's manifest.
    pub manifest: Digest,
    /// The digest of what it holds: the signed payload, the DSSE envelope, the SBOM.
    pub content: Digest,
}

/// The digests of a build's inputs; equal inputs give an equal context and Dockerfile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inputs {
    /// pins.toml.
    pub pins: Digest,
    /// The templates folder.
    pub templates: Digest,
    /// Every patch series folder.
    pub patches: Digest,
    /// Every overlay folder, as checked in (before patches).
    pub overlays: Digest,
    /// The rendered Dockerfile.
    pub dockerfile: Digest,
    /// The build context archive.
    pub context: Digest,
    /// The mtime every context entry carried (`SOURCE_DATE_EPOCH` at build time, else 0);
    /// `forge verify-digest` assembles the context with it again.
    #[serde(default)]
    pub context_mtime: u64,
}

impl Inputs {
    /// Inputs whose digests are all distinct fixtures: for tests.
    #[cfg(test)]
    pub(crate) fn sample() -> Self {
        Self {
            pins: Digest::filled('1'),
            templates: Digest::filled('2'),
            patches: Digest::filled('3'),
            overlays: Digest::filled('4'),
            dockerfile: Digest::filled('5'),
            context: Digest::filled('6'),
            context_mtime: 0,
        }
    }

    /// The inputs of `recipe` as they are now: pins.toml, the templates folder, every patch
    /// series, every overlay folder and shim file as checked in, and the Dockerfile and context
    /// made from them.
    pub fn of(
        recipe: &Recipe,
        dockerfile: &Dockerfile,
        context: &BuildContext,
        context_mtime: u64,
    ) -> Result<Inputs, LockError> {
        let pins_path = recipe.pins_path();
        let pins_bytes = std::fs::read(&pins_path).map_err(|source| LockError::Io {
            action: "read",
            path: pins_path.clone(),
            source,
        })?;
        let pins = Digest::from_sha256(&<sha2::Sha256 as sha2::Digest>::digest(&pins_bytes));
        Ok(Inputs {
            pins,
            templates: context::digest_of(&recipe.root, &[TEMPLATES_DIR])?,
            patches: context::digest_of(&recipe.root, &recipe.series_paths())?,
            overlays: context::digest_of(&recipe.root, &recipe.copied_paths())?,
            dockerfile: dockerfile.digest(),
            context: context.digest.clone(),
            context_mtime,
        })
    }

    /// The names people know the inputs by, in record order.
    pub const NAMES: [&'static str; 6] = [
        "pins.toml",
        "templates",
        "patches",
        "overlays",
        "Dockerfile",
        "context",
    ];

    /// Each digest with the name people know its input by, in record order.
    pub fn named(&self) -> [(&'static str, &Digest); 6] {
        let [pins, templates, patches, overlays, dockerfile, context] = Self::NAMES;
        [
            (pins, &self.pins),
            (templates, &self.templates),
            (patches, &self.patches),
            (overlays, &self.overlays),
            (dockerfile, &self.dockerfile),
            (context, &self.context),
        ]
    }

    /// The inputs that differ between `self` (recorded) and `current`, as
    /// `(name, recorded, current)`.
    pub fn differences(&self, current: &Inputs) -> Vec<(&'static str, Digest, Digest)> {
        self.named()
            .into_iter()
            .zip(current.named())
            .filter(|((_, recorded), (_, current))| recorded != current)
            .map(|((name, recorded), (_, current))| (name, recorded.clone(), current.clone()))
            .collect()
    }
}

/// The base image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BaseRecord {
    /// The reference pins.toml names.
    pub image: ImageRef,
    /// The digest it resolved to, when known (pinned in pins.toml, or from the local image).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<Digest>,
    /// The local image id the build started from, when the daemon had it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<Digest>,
    /// The Python distributions installed in the image (normalized name to version), as
    /// `verify-digest --contents` read them with `importlib.metadata`: what the base supplies
    /// for the requirements of the pins on packages the recipe does not pin. Records written
    /// before forge read them leave it out.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub packages: std::collections::BTreeMap<String, String>,
    /// The glibc the image runs (`2.39`), as `verify-digest --contents` read it: which
    /// manylinux wheels load there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glibc: Option<String>,
    /// The Python the image runs (`3.12`), as `verify-digest --contents` read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<String>,
}

/// The image built.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageRecord {
    /// The repository its tags live in.
    pub repository: Repository,
    /// The image id.
    pub id: Digest,
    /// The platform it was built for (`--platform`, else pins.toml's); records written before
    /// forge recorded it leave it out, and pins.toml's platform stands in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<Platform>,
    /// The recipe repository's commit the image was built from (its revision label), when the
    /// recipe is in git.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// The daemon's builder that built it, which `verify-digest --rebuild` builds with again;
    /// records written before forge recorded it leave it out, and BuildKit stands in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub builder: Option<crate::engine::Builder>,
    /// The image the engine built, which forge normalized into `id`: a build that ends on it
    /// again, with the same `normalized` format, reuses `id` instead of rewriting it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub built: Option<Digest>,
    /// The format of the normalization that made `id` of `built` (`normalize::FORMAT`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub normalized: Option<u32>,
    /// The manifest forge wrote for the image: its digest in the registry, and the image's id
    /// in a containerd image store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest: Option<Digest>,
    /// The epoch (seconds since 1970) every time of forge's layers and steps was set to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch: Option<u64>,
}

/// One tag applied to the image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TagRecord {
    /// The tag.
    pub name: Tag,
    /// Whether it may move.
    #[serde(with = "mutability")]
    pub mutability: Mutability,
    /// The manifest digest the registry stored, when the tag was pushed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pushed: Option<Digest>,
}

/// One applied patch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PatchRecord {
    /// The patch file, relative to the recipe folder.
    pub file: String,
    /// The commit the patch was made from, when its mail names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original: Option<String>,
    /// The commit it became on the patch target (absent when already applied there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied: Option<String>,
    /// `Name <email>` of its author, kept on the new commit.
    pub author: String,
    /// The first line of its commit message.
    #[serde(default)]
    pub subject: String,
}

impl PatchRecord {
    /// One line for people: `original -> applied author: subject`, ids abbreviated.
    pub fn summary(&self) -> String {
        let short = |id: &Option<String>| {
            id.as_deref()
                .map_or("-".to_owned(), |id| id.chars().take(12).collect())
        };
        format!(
            "{} -> {} {}: {}",
            short(&self.original),
            short(&self.applied),
            self.author,
            self.subject
        )
    }
}

/// `Mutability` as the record spells it; pins.toml spells it as the table a tag is listed in.
mod mutability {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::pins::Mutability;

    pub fn serialize<S: Serializer>(value: &Mutability, serializer: S) -> Result<S::Ok, S::Error> {
        value.serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Mutability, D::Error> {
        match String::deserialize(deserializer)?.as_str() {
            "moving" => Ok(Mutability::Moving),
            "immutable" => Ok(Mutability::Immutable),
            other => Err(serde::de::Error::custom(format!(
                "unknown mutability {other:?}: expected \"moving\" or \"immutable\""
            ))),
        }
    }
}

/// Why forge.lock could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// The file could not be read or written.
    #[error("cannot {action} {}", path.display())]
    Io {
        /// `read` or `write`.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not a record forge wrote.
    #[error("{at}: not a valid build record: {message}")]
    Invalid {
        /// The file, with the line and column of what is wrong when there is one.
        at: String,
        /// What is wrong.
        message: String,
    },
    /// The record is in a format this forge does not read.
    #[error("{at}: forge.lock format version {found}; this forge reads version {FORMAT_VERSION}")]
    Version {
        /// The file, line and column of the version.
        at: String,
        /// The version the file declares.
        found: i64,
    },
    /// An input could not be hashed.
    #[error(transparent)]
    Inputs(#[from] ContextError),
}

impl Advise for LockError {
    fn advice(&self) -> Advice {
        Advice::Hint(match self {
            LockError::Io { .. } => "check the recipe folder's permissions".to_owned(),
            LockError::Invalid { .. } => {
                "restore it from version control, or delete it and run `forge build` to record a fresh build"
                    .to_owned()
            }
            LockError::Version { found, .. } if *found > i64::from(FORMAT_VERSION) => {
                "a newer forge wrote it: build with that version, or delete forge.lock and run `forge build` to record a fresh build".to_owned()
            }
            LockError::Version { .. } => {
                "delete forge.lock and run `forge build` to record a fresh build".to_owned()
            }
            LockError::Inputs(error) => return error.advice(),
        })
    }
}

crate::advised!(LockError);

/// The path of forge.lock in the recipe folder `root`.
pub fn path(root: &Path) -> PathBuf {
    crate::fs::in_folder(root, LOCK_FILE)
}

/// Reads the build recorded in `root`, if forge.lock records one.
pub fn read(root: &Path) -> Result<Option<Record>, LockError> {
    Ok(load(root)?.and_then(Lock::built))
}

/// Reads forge.lock in `root`, if there is one.
pub fn load(root: &Path) -> Result<Option<Lock>, LockError> {
    let path = path(root);
    let text = match crate::fs::read_state(&path) {
        Ok(Some(text)) => text,
        Ok(None) => return Ok(None),
        Err(source) => {
            return Err(LockError::Io {
                action: "read",
                path,
                source,
            });
        }
    };
    parse(&path, &text).map(Some)
}

/// What `text` holds, checked: its format version first (a file of another version is refused
/// before its fields are read), then its fields; a build's record must record at least one
/// tag. Every refusal names `path` with the line and column of what is wrong.
fn parse(path: &Path, text: &str) -> Result<Lock, LockError> {
    let at = |span: Option<std::ops::Range<usize>>| match span {
        Some(span) => Location::from_offset(path, text, span.start).to_string(),
        None => path.display().to_string(),
    };
    let invalid = |error: toml::de::Error| LockError::Invalid {
        at: at(error.span()),
        message: error.message().trim_end().to_owned(),
    };
    /// The fields read before the others: the version, and whether a build is recorded.
    #[derive(Deserialize)]
    struct Header {
        version: toml::Spanned<i64>,
        image: Option<toml::Value>,
    }
    let header: Header = toml::from_str(text).map_err(invalid)?;
    if *header.version.get_ref() != i64::from(FORMAT_VERSION) {
        return Err(LockError::Version {
            at: at(Some(header.version.span())),
            found: *header.version.get_ref(),
        });
    }
    if header.image.is_none() {
        let file: InputsFile = toml::from_str(text).map_err(invalid)?;
        return Ok(Lock::Inputs {
            inputs: Box::new(file.inputs),
            base: file.base.map(Box::new),
        });
    }
    let record: Record = toml::from_str(text).map_err(invalid)?;
    if record.tags.is_empty() {
        return Err(LockError::Invalid {
            at: at(None),
            message: "it records no tag; every build records the tags it applied".to_owned(),
        });
    }
    Ok(Lock::Built(Box::new(record)))
}

impl Record {
    /// A record of two tags and one patch: a fixture for tests.
    #[cfg(test)]
    pub(crate) fn sample() -> Self {
        Self::new(
            Inputs::sample(),
            BaseRecord {
                image: "forge-example-base:1".parse().unwrap(),
                digest: None,
                id: Some(Digest::filled('9')),
                packages: std::collections::BTreeMap::new(),
                glibc: None,
                python: None,
            },
            ImageRecord {
                repository: "localhost:5000/forge/example".parse().unwrap(),
                id: Digest::filled('a'),
                platform: Some("linux/arm64".parse().unwrap()),
                revision: Some("e".repeat(40)),
                builder: Some(crate::engine::Builder::Buildkit),
                built: Some(Digest::filled('c')),
                normalized: Some(2),
                manifest: Some(Digest::filled('d')),
                epoch: Some(1_783_468_800),
            },
            vec![
                TagRecord {
                    name: "latest".parse().unwrap(),
                    mutability: Mutability::Moving,
                    pushed: Some(Digest::filled('b')),
                },
                TagRecord {
                    name: "2026-07-08".parse().unwrap(),
                    mutability: Mutability::Immutable,
                    pushed: None,
                },
            ],
            vec![PatchRecord {
                file: "patches/example/0001-x.patch".to_owned(),
                original: Some("c".repeat(40)),
                applied: Some("d".repeat(40)),
                author: "Ada <ada@example.org>".to_owned(),
                subject: "example: one fix".to_owned(),
            }],
        )
    }

    /// Whether a daemon's id `id` names the recorded image: its image id (a classic image
    /// store's name for it), or the manifest forge wrote or a tag was pushed as (a containerd
    /// store names an image by the manifest, or the index, it holds).
    pub fn names(&self, id: &Digest) -> bool {
        *id == self.image.id
            || self.image.manifest.as_ref() == Some(id)
            || self.tags.iter().any(|tag| tag.pushed.as_ref() == Some(id))
    }

    /// The names a daemon may hold the recorded image by, image id first.
    pub fn identities(&self) -> Vec<&Digest> {
        let mut names = vec![&self.image.id];
        names.extend(self.image.manifest.as_ref());
        names.extend(self.tags.iter().filter_map(|tag| tag.pushed.as_ref()));
        names.dedup();
        names
    }

    /// A record in the current format.
    pub fn new(
        inputs: Inputs,
        base: BaseRecord,
        image: ImageRecord,
        tags: Vec<TagRecord>,
        patches: Vec<PatchRecord>,
    ) -> Self {
        Self {
            version: FORMAT_VERSION,
            inputs,
            base,
            image,
            tags,
            patches,
            attachments: Vec::new(),
            platforms: Vec::new(),
        }
    }

    /// The record as forge writes it.
    pub fn to_text(&self) -> String {
        let body = toml::to_string(self).expect("a record serializes");
        format!("{HEADER}{body}")
    }

    /// Writes the record to `root`/forge.lock through a temporary file and a rename; a record
    /// equal to the one there leaves the file untouched.
    pub fn write(&self, root: &Path) -> Result<Written, LockError> {
        write_text(root, &self.to_text())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attachments_are_recorded_and_a_record_without_them_still_reads() {
        let unsigned = Record::sample();
        let text = unsigned.to_text();
        assert!(!text.contains("attachments"), "{text}");
        assert_eq!(
            parse(Path::new("forge.lock"), &text).unwrap(),
            Lock::Built(Box::new(unsigned))
        );
        let mut signed = Record::sample();
        signed.attachments = vec![AttachmentRecord {
            kind: AttachmentKind::Signature,
            subject: Digest::filled('b'),
            tag: format!("sha256-{}.sig", "b".repeat(64)),
            manifest: Digest::filled('c'),
            content: Digest::filled('d'),
        }];
        let text = signed.to_text();
        assert!(
            text.contains("[[attachments]]\nkind = \"signature\""),
            "{text}"
        );
        assert_eq!(
            parse(Path::new("forge.lock"), &text).unwrap(),
            Lock::Built(Box::new(signed))
        );
    }

    #[test]
    fn a_record_reads_back_as_written() {
        let folder = tempfile::tempdir().unwrap();
        assert_eq!(read(folder.path()).unwrap(), None);
        let record = Record::sample();
        assert_eq!(record.write(folder.path()).unwrap(), Written::Changed);
        assert_eq!(record.write(folder.path()).unwrap(), Written::Unchanged);
        assert_eq!(read(folder.path()).unwrap(), Some(record.clone()));
        let text = std::fs::read_to_string(path(folder.path())).unwrap();
        assert!(text.starts_with("# forge.lock"), "{text}");
        assert!(text.contains("mutability = \"immutable\""), "{text}");
    }

    #[test]
    fn inputs_alone_read_back_and_keep_the_base_the_last_build_recorded() {
        let folder = tempfile::tempdir().unwrap();
        let built = Lock::Built(Box::new(Record::sample()));
        assert_eq!(
            built.clone().with_inputs(Inputs::sample()),
            built,
            "the same inputs keep the build"
        );
        let mut moved = Inputs::sample();
        moved.pins = Digest::filled('f');
        let lock = built.with_inputs(moved.clone());
        assert_eq!(
            lock,
            Lock::Inputs {
                inputs: Box::new(moved),
                base: Some(Box::new(Record::sample().base)),
            }
        );
        lock.write(folder.path()).unwrap();
        let text = std::fs::read_to_string(path(folder.path())).unwrap();
        assert!(
            text.starts_with("# forge.lock: the inputs of this recipe"),
            "{text}"
        );
        assert!(!text.contains("[image]"), "{text}");
        assert_eq!(load(folder.path()).unwrap(), Some(lock));
        assert_eq!(read(folder.path()).unwrap(), None, "no build is recorded");
    }

    #[test]
    fn differences_name_each_changed_input() {
        let recorded = Record::sample().inputs;
        let mut current = recorded.clone();
        assert!(recorded.differences(&current).is_empty());
        current.context = Digest::filled('7');
        current.pins = Digest::filled('8');
        let fields: Vec<&str> = recorded
            .differences(&current)
            .iter()
            .map(|(field, ..)| *field)
            .collect();
        assert_eq!(fields, ["pins.toml", "context"]);
    }

    #[test]
    fn a_damaged_record_is_refused_with_its_path() {
        let folder = tempfile::tempdir().unwrap();
        std::fs::write(path(folder.path()), "version = \"one\"\n").unwrap();
        let error = read(folder.path()).unwrap_err();
        assert!(
            error
                .to_string()
                .ends_with("forge.lock:1:11: not a valid build record: invalid type: string \"one\", expected i64"),
            "{error}"
        );
    }

    #[test]
    fn a_record_of_another_format_version_is_refused_at_its_line() {
        let folder = tempfile::tempdir().unwrap();
        let text = Record::sample()
            .to_text()
            .replace("version = 1\n", "version = 99\n");
        std::fs::write(path(folder.path()), &text).unwrap();
        let line = text
            .lines()
            .position(|line| line == "version = 99")
            .unwrap()
            + 1;
        let error = read(folder.path()).unwrap_err();
        assert!(
            error.to_string().ends_with(&format!(
                "forge.lock:{line}:11: forge.lock format version 99; this forge reads version 1"
            )),
            "{error}"
        );
        let Advice::Hint(hint) = error.advice() else {
            panic!("a hint")
        };
        assert!(hint.contains("a newer forge wrote it"), "{hint}");
    }

    #[test]
    fn a_record_without_tags_is_refused() {
        let folder = tempfile::tempdir().unwrap();
        let mut record = Record::sample();
        record.tags.clear();
        std::fs::write(path(folder.path()), record.to_text()).unwrap();
        let error = read(folder.path()).unwrap_err();
        assert!(
            error
                .to_string()
                .ends_with("forge.lock: not a valid build record: it records no tag; every build records the tags it applied"),
            "{error}"
        );
    }

    #[test]
    fn a_field_of_the_wrong_type_is_refused_at_its_line() {
        let folder = tempfile::tempdir().unwrap();
        let text = Record::sample()
            .to_text()
            .replace("context_mtime = 0", "context_mtime = \"soon\"");
        std::fs::write(path(folder.path()), &text).unwrap();
        let line = text
            .lines()
            .position(|line| line.starts_with("context_mtime"))
            .unwrap()
            + 1;
        let error = read(folder.path()).unwrap_err().to_string();
        assert!(error.contains(&format!("forge.lock:{line}:")), "{error}");
    }
}
