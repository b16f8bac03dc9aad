//! Stage 7: the build record (`forge.lock`) and what the world holds now in, a `Report` out.
//!
//! Each function here turns one kind of evidence into rows `{name, subject, expected, actual,
//! ok}`; none of them talks to a daemon or a registry (the ops layer fetches, this stage judges):
//!
//! 1. `tags`: what each recorded tag names on a daemon (a node), against the recorded image id,
//!    and whether the tags agree with each other.
//! 2. `base`: the base image's digest and id on the daemon, against the record.
//! 3. `inputs`: the current inputs' digests against the recorded ones; a change is `stale`.
//! 4. `registry`: each tag's manifest as the registry served it: the claimed digest against the
//!    sha256 of the bytes, against the pushed digest in the record, an index's entry for the
//!    recipe's platform, the image the manifest holds against the recorded image id, and the
//!    tags against each other.
//! 5. `contents`: what a run of the image reports (`probe`), against the pins and the overlay
//!    files of the recipe.

pub mod attached;
pub mod probe;

use std::path::PathBuf;

use serde::Serialize;
use serde_json::json;

use crate::diagnostics::{Advice, Advise};
use crate::engine::ImageInfo;
use crate::lock::{BaseRecord, Inputs, Record};
use crate::registry::{Held, Manifest};
use crate::types::oci::Digest;

/// What a check looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Kind {
    /// `input`.
    #[serde(rename = "input")]
    Input,
    /// `tag`.
    #[serde(rename = "tag")]
    Tag,
    /// `tags agree`.
    #[serde(rename = "tags agree")]
    TagsAgree,
    /// `base id`.
    #[serde(rename = "base id")]
    BaseId,
    /// `base digest`.
    #[serde(rename = "base digest")]
    BaseDigest,
    /// `served digest`.
    #[serde(rename = "served digest")]
    ServedDigest,
    /// `registry`.
    #[serde(rename = "registry")]
    Registry,
    /// `registry image`.
    #[serde(rename = "registry image")]
    RegistryImage,
    /// `registry tags agree`.
    #[serde(rename = "registry tags agree")]
    RegistryTagsAgree,
    /// `platform`.
    #[serde(rename = "platform")]
    Platform,
    /// `contents`.
    #[serde(rename = "contents")]
    Contents,
    /// `pin`.
    #[serde(rename = "pin")]
    Pin,
    /// `file`.
    #[serde(rename = "file")]
    File,
    /// `fix`.
    #[serde(rename = "fix")]
    Fix,
    /// `signature`.
    #[serde(rename = "signature")]
    Signature,
    /// `provenance subject`.
    #[serde(rename = "provenance subject")]
    ProvenanceSubject,
    /// `provenance inputs`.
    #[serde(rename = "provenance inputs")]
    ProvenanceInputs,
    /// `sbom`.
    #[serde(rename = "sbom")]
    Sbom,
}

impl Kind {
    /// The name the table and `--json` use.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Input => "input",
            Kind::Tag => "tag",
            Kind::TagsAgree => "tags agree",
            Kind::BaseId => "base id",
            Kind::BaseDigest => "base digest",
            Kind::ServedDigest => "served digest",
            Kind::Registry => "registry",
            Kind::RegistryImage => "registry image",
            Kind::RegistryTagsAgree => "registry tags agree",
            Kind::Platform => "platform",
            Kind::Contents => "contents",
            Kind::Pin => "pin",
            Kind::File => "file",
            Kind::Fix => "fix",
            Kind::Signature => "signature",
            Kind::ProvenanceSubject => "provenance subject",
            Kind::ProvenanceInputs => "provenance inputs",
            Kind::Sbom => "sbom",
        }
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One check: what was looked at, what the record or recipe says, what was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// The kind of check.
    pub name: Kind,
    /// What was checked (`node: repository:tag`, an input, a pin, a path in the image).
    pub subject: String,
    /// What the record or the recipe says.
    pub expected: String,
    /// What was found.
    pub actual: String,
    /// Whether they agree.
    pub ok: bool,
}

impl Check {
    /// A check that holds when `expected == actual`.
    pub fn compare(
        name: Kind,
        subject: impl Into<String>,
        expected: impl Into<String>,
        actual: impl Into<String>,
    ) -> Self {
        let (expected, actual) = (expected.into(), actual.into());
        Self {
            name,
            subject: subject.into(),
            ok: expected == actual,
            expected,
            actual,
        }
    }

    /// A check whose outcome is decided by the caller.
    pub fn new(
        name: Kind,
        subject: impl Into<String>,
        expected: impl Into<String>,
        actual: impl Into<String>,
        ok: bool,
    ) -> Self {
        Self {
            name,
            subject: subject.into(),
            expected: expected.into(),
            actual: actual.into(),
            ok,
        }
    }
}

/// Every check of one verification, in the order they ran.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// The checks.
    pub checks: Vec<Check>,
}

/// What `found` is written as when nothing was found.
pub const MISSING: &str = "missing";

impl Report {
    /// Adds checks.
    pub fn extend(&mut self, checks: impl IntoIterator<Item = Check>) {
        self.checks.extend(checks);
    }

    /// Whether every check holds.
    pub fn ok(&self) -> bool {
        self.checks.iter().all(|check| check.ok)
    }

    /// The checks that do not hold.
    pub fn failed(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|check| !check.ok)
    }

    /// `{"ok": bool, "checks": [{"name", "subject", "expected", "actual", "ok"}]}`; with
    /// `unreached`, the things that could not be asked, so that `ok` is false.
    pub fn to_json(&self, unreached: &[String]) -> serde_json::Value {
        json!({
            "ok": self.ok() && unreached.is_empty(),
            "checks": self.checks,
            "unreached": unreached,
        })
    }

    /// The table people read: one row per check, columns aligned. Unless `wide`, digests are
    /// cut to 12 hex digits and a row that holds shows its value once (`=` for the actual);
    /// `wide` shows every value whole.
    pub fn table(&self, wide: bool) -> String {
        let cell = |text: &str| {
            if wide {
                text.to_owned()
            } else {
                short_digests(text)
            }
        };
        let rows: Vec<[String; 5]> = self
            .checks
            .iter()
            .map(|check| {
                let verdict = match (check.ok, check.name) {
                    (true, _) => "ok",
                    (false, Kind::Input) => "STALE",
                    (false, _) => "FAIL",
                };
                let actual = if !wide && check.ok && check.expected == check.actual {
                    "=".to_owned()
                } else {
                    cell(&check.actual)
                };
                [
                    check.name.to_string(),
                    cell(&check.subject),
                    cell(&check.expected),
                    actual,
                    verdict.to_owned(),
                ]
            })
            .collect();
        crate::table::table(["CHECK", "SUBJECT", "EXPECTED", "ACTUAL", "OK"], &rows)
    }
}

/// `text` with every `sha256:` digest cut to its first 12 hex digits.
fn short_digests(text: &str) -> String {
    const PREFIX: &str = "sha256:";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(PREFIX) {
        let after = &rest[start + PREFIX.len()..];
        let hex = after.bytes().take_while(u8::is_ascii_hexdigit).count();
        out.push_str(&rest[..start + PREFIX.len()]);
        if hex == 64 {
            out.push_str(&after[..12]);
        } else {
            out.push_str(&after[..hex]);
        }
        rest = &after[hex..];
    }
    out.push_str(rest);
    out
}

/// Why verification could not start.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// There is no build record to verify.
    #[error("there is no build record to verify: {} does not exist", path.display())]
    NoRecord {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// forge.lock records the recipe's inputs, but no build of them.
    #[error("there is no build record to verify: {} records the recipe's inputs but no build of them", path.display())]
    NoBuild {
        /// forge.lock.
        path: PathBuf,
    },
    /// Something a check needed could not be reached.
    #[error("could not verify {subject}")]
    Unreached {
        /// What the check was about (a node, a registry tag).
        subject: String,
    },
}

impl Advise for VerifyError {
    fn advice(&self) -> Advice {
        match self {
            VerifyError::NoRecord { .. } | VerifyError::NoBuild { .. } => Advice::Hint(
                "run `forge build` (with --push for --remote) to record a build here, or name the image (`forge verify-digest REF`) to verify the record attached to it in its registry".to_owned(),
            ),
            VerifyError::Unreached { .. } => Advice::Nothing("the checks that could not run are listed above"),
        }
    }
}

crate::advised!(VerifyError);

/// The build forge.lock in `root` records, or why there is none to check.
pub fn recorded_build(root: &std::path::Path) -> anyhow::Result<crate::lock::Record> {
    let path = crate::lock::path(root);
    match crate::lock::load(root)? {
        Some(crate::lock::Lock::Built(record)) => Ok(record),
        Some(crate::lock::Lock::Inputs { .. }) => Err(VerifyError::NoBuild { path }.into()),
        None => Err(VerifyError::NoRecord { path }.into()),
    }
}

/// What one recorded tag names on a node: the image id, or nothing.
pub type Resolved = Vec<(String, Option<Digest>)>;

/// Each recorded tag on `node` against the recorded image id, then whether the tags agree.
/// `resolved` pairs each `repository:tag` with the id it names on the node.
pub fn tags(record: &Record, node: &str, resolved: &Resolved) -> Vec<Check> {
    let mut checks: Vec<Check> = resolved
        .iter()
        .map(|(reference, found)| {
            Check::compare(
                Kind::Tag,
                format!("{node}: {reference}"),
                record.image.id.as_str(),
                found.as_ref().map_or(MISSING, Digest::as_str),
            )
        })
        .collect();
    if resolved.len() > 1 {
        checks.push(agreement(
            Kind::TagsAgree,
            node,
            resolved
                .iter()
                .map(|(reference, found)| (reference.as_str(), found.as_ref())),
        ));
    }
    checks
}

/// One row saying whether every subject named the same digest.
fn agreement<'a>(
    name: Kind,
    place: &str,
    found: impl Iterator<Item = (&'a str, Option<&'a Digest>)>,
) -> Check {
    let found: Vec<(&str, Option<&Digest>)> = found.collect();
    // Each image once, in the order its first tag comes in the record: the same row on every
    // machine, whatever ids the images got.
    let mut distinct: Vec<(Option<&Digest>, Vec<&str>)> = Vec::new();
    for (what, digest) in &found {
        match distinct.iter_mut().find(|(known, _)| known == digest) {
            Some((_, whats)) => whats.push(what),
            None => distinct.push((*digest, vec![what])),
        }
    }
    let subjects: Vec<&str> = found
        .iter()
        .map(|(what, _)| what.rsplit(':').next().unwrap_or(what))
        .collect();
    let ok = distinct.len() == 1 && distinct[0].0.is_some();
    let actual = if ok {
        "one image".to_owned()
    } else {
        distinct
            .iter()
            .map(|(digest, whats)| {
                let tags: Vec<&str> = whats
                    .iter()
                    .map(|what| what.rsplit(':').next().unwrap_or(what))
                    .collect();
                format!(
                    "{} → {}",
                    tags.join(", "),
                    digest.map_or(MISSING, |digest| digest.as_str())
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    Check::new(
        name,
        format!("{place}: {}", subjects.join(", ")),
        "one image",
        actual,
        ok,
    )
}

/// The base image on `node` against the record: its digest in the base's repository (when
/// recorded) and its local id (when recorded). `found` is what the base reference names on the
/// node now.
pub fn base(recorded: &BaseRecord, node: &str, found: Option<&ImageInfo>) -> Vec<Check> {
    let subject = format!("{node}: {}", recorded.image);
    let mut checks = Vec::new();
    if let Some(digest) = &recorded.digest {
        let actual = found.and_then(|info| info.digest_in(recorded.image.as_str()));
        checks.push(Check::compare(
            Kind::BaseDigest,
            subject.clone(),
            digest.as_str(),
            actual.as_ref().map_or(MISSING, Digest::as_str),
        ));
    }
    if let Some(id) = &recorded.id {
        checks.push(Check::compare(
            Kind::BaseId,
            subject,
            id.as_str(),
            found.map_or(MISSING, |info| info.id.0.as_str()),
        ));
    }
    checks
}

/// Each recorded input against its digest now; one that changed is stale.
pub fn inputs(recorded: &Inputs, current: &Inputs) -> Vec<Check> {
    recorded
        .named()
        .into_iter()
        .zip(current.named())
        .map(|((subject, recorded), (_, current))| {
            Check::compare(Kind::Input, subject, recorded.as_str(), current.as_str())
        })
        .collect()
}

/// What the registry served for one recorded tag.
#[derive(Debug, Clone)]
pub struct Served {
    /// `registry/repository:tag`.
    pub reference: String,
    /// The digest forge.lock recorded for the push, if the tag was pushed.
    pub pushed: Option<Digest>,
    /// The manifest as served.
    pub manifest: Manifest,
    /// The image id the manifest holds (its configuration's digest, or for an index that of
    /// the entry for the recipe's platform); `None` when it holds none for that platform.
    pub image: Option<Digest>,
}

/// Each tag's manifest: the registry's claimed digest against the bytes, the bytes against the
/// pushed digest, an index's entry for `platform`, the image it holds against the recorded
/// `image` id; then whether the tags agree.
pub fn registry(served: &[Served], platform: &str, image: &Digest) -> Vec<Check> {
    let mut checks = Vec::new();
    for tag in served {
        let manifest = &tag.manifest;
        checks.push(Check::compare(
            Kind::ServedDigest,
            tag.reference.clone(),
            manifest
                .claimed
                .as_ref()
                .map_or("no Docker-Content-Digest", Digest::as_str),
            manifest.received.as_str(),
        ));
        checks.push(Check::compare(
            Kind::Registry,
            tag.reference.clone(),
            tag.pushed
                .as_ref()
                .map_or("a pushed digest (never pushed)", Digest::as_str),
            manifest.received.as_str(),
        ));
        if manifest.is_index() {
            let entry = manifest.platform_entry(platform);
            checks.push(Check::new(
                Kind::Platform,
                format!("{}@{platform}", tag.reference),
                format!("an entry for {platform}"),
                entry.as_ref().map_or(MISSING, Digest::as_str),
                entry.is_some(),
            ));
        }
        // Bytes that match the pushed digest prove the manifest, not the image: an index
        // recorded after a multi-platform push can hold any image for this platform.
        let held = if Held::new(manifest, platform, tag.image.clone()).holds(image) {
            Some(image)
        } else {
            tag.image.as_ref()
        };
        checks.push(registry_image(&tag.reference, image, held));
    }
    if served.len() > 1 {
        let place = served[0]
            .reference
            .rsplit_once(':')
            .map_or(served[0].reference.as_str(), |(name, _)| name);
        checks.push(agreement(
            Kind::RegistryTagsAgree,
            place,
            // The image each tag holds: a tag kept from an earlier push may hold it under
            // another manifest (another compression, or a multi-platform index).
            served
                .iter()
                .map(|tag| (tag.reference.as_str(), tag.image.as_ref())),
        ));
    }
    checks
}

/// The image a registry tag holds (`None`: none, or the tag is missing) against the recorded id.
pub fn registry_image(reference: &str, recorded: &Digest, held: Option<&Digest>) -> Check {
    Check::compare(
        Kind::RegistryImage,
        reference,
        recorded.as_str(),
        held.map_or(MISSING, Digest::as_str),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(body: &[u8], claimed: Option<Digest>, media_type: &str) -> Manifest {
        Manifest {
            claimed,
            received: Digest::from_sha256(&<sha2::Sha256 as sha2::Digest>::digest(body)),
            media_type: crate::registry::ManifestMediaType::parse(media_type),
            body: body.to_vec(),
        }
    }

    #[test]
    fn tags_that_part_ways_name_each_image() {
        let check = agreement(
            Kind::TagsAgree,
            "node",
            [
                ("r:latest", Some(&Digest::filled('a'))),
                ("r:dated", Some(&Digest::filled('b'))),
            ]
            .into_iter(),
        );
        assert!(!check.ok);
        assert_eq!(check.subject, "node: latest, dated");
        assert_eq!(
            check.actual,
            format!(
                "latest → {}; dated → {}",
                Digest::filled('a'),
                Digest::filled('b')
            )
        );
        let same = agreement(
            Kind::TagsAgree,
            "node",
            [
                ("r:a", Some(&Digest::filled('a'))),
                ("r:b", Some(&Digest::filled('a'))),
            ]
            .into_iter(),
        );
        assert!(same.ok, "{same:?}");
        let missing = agreement(
            Kind::TagsAgree,
            "node",
            [("r:a", None), ("r:b", None)].into_iter(),
        );
        assert!(!missing.ok, "two missing tags do not agree on an image");
    }

    #[test]
    fn served_bytes_must_match_the_claimed_and_the_pushed_digest() {
        let body = br#"{"schemaVersion":2}"#;
        let good = manifest(
            body,
            None,
            "application/vnd.docker.distribution.manifest.v2+json",
        );
        let received = good.received.clone();
        let image = Digest::filled('a');
        let served = |claimed: Option<Digest>, pushed: Option<Digest>| Served {
            reference: "127.0.0.1:5000/r:t".to_owned(),
            pushed,
            manifest: Manifest {
                claimed,
                ..good.clone()
            },
            image: Some(image.clone()),
        };
        let checks = registry(
            &[served(Some(received.clone()), Some(received.clone()))],
            "linux/amd64",
            &image,
        );
        assert!(checks.iter().all(|check| check.ok), "{checks:?}");
        let checks = registry(
            &[served(Some(Digest::filled('c')), Some(received.clone()))],
            "linux/amd64",
            &image,
        );
        assert!(!checks[0].ok && checks[1].ok, "{checks:?}");
        let checks = registry(
            &[served(Some(received.clone()), None)],
            "linux/amd64",
            &image,
        );
        assert!(checks[0].ok && !checks[1].ok, "{checks:?}");
    }

    #[test]
    fn the_manifest_pushed_must_hold_the_recorded_image() {
        let body = br#"{"schemaVersion":2}"#;
        let held = manifest(
            body,
            None,
            "application/vnd.docker.distribution.manifest.v2+json",
        );
        let served = Served {
            reference: "r:t".to_owned(),
            pushed: Some(held.received.clone()),
            manifest: Manifest {
                claimed: Some(held.received.clone()),
                ..held
            },
            image: Some(Digest::filled('b')),
        };
        let checks = registry(&[served], "linux/amd64", &Digest::filled('a'));
        let failed: Vec<&Check> = checks.iter().filter(|check| !check.ok).collect();
        assert_eq!(failed.len(), 1, "{checks:?}");
        assert_eq!(
            (
                failed[0].name.as_str(),
                failed[0].expected.clone(),
                failed[0].actual.clone()
            ),
            (
                "registry image",
                Digest::filled('a').to_string(),
                Digest::filled('b').to_string()
            )
        );
    }

    #[test]
    fn an_index_needs_an_entry_for_the_platform() {
        let body = format!(
            r#"{{"schemaVersion":2,"manifests":[{{"digest":"{}","platform":{{"os":"linux","architecture":"arm64"}}}}]}}"#,
            Digest::filled('e')
        );
        let index = manifest(
            body.as_bytes(),
            None,
            "application/vnd.oci.image.index.v1+json",
        );
        assert_eq!(
            index.platform_entry("linux/arm64"),
            Some(Digest::filled('e'))
        );
        assert_eq!(index.platform_entry("linux/amd64"), None);
        let served = Served {
            reference: "r:t".to_owned(),
            pushed: Some(index.received.clone()),
            manifest: index,
            image: None,
        };
        let checks = registry(&[served], "linux/amd64", &Digest::filled('a'));
        for name in [Kind::Platform, Kind::RegistryImage] {
            let check = checks.iter().find(|check| check.name == name).unwrap();
            assert!(!check.ok, "{check:?}");
            assert_eq!(check.actual, MISSING);
        }
    }

    #[test]
    fn the_table_aligns_columns_and_says_stale_for_inputs() {
        let report = Report {
            checks: vec![
                Check::compare(Kind::Input, "pins.toml", "sha256:1", "sha256:2"),
                Check::compare(Kind::Tag, "node: r:latest", "sha256:1", "sha256:1"),
            ],
        };
        let table = report.table(true);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines[0], "CHECK  SUBJECT         EXPECTED  ACTUAL    OK");
        assert_eq!(lines[1], "input  pins.toml       sha256:1  sha256:2  STALE");
        assert_eq!(lines[2], "tag    node: r:latest  sha256:1  sha256:1  ok");
        assert!(!report.ok());
        assert_eq!(report.to_json(&[])["ok"], false);
    }

    #[test]
    fn the_narrow_table_cuts_digests_and_shows_a_holding_value_once() {
        let (one, two) = (Digest::filled('1'), Digest::filled('2'));
        let report = Report {
            checks: vec![
                Check::compare(Kind::Input, "pins.toml", one.as_str(), two.as_str()),
                Check::compare(
                    Kind::Tag,
                    format!("unix:///var/run/docker.sock: r@{one}"),
                    one.as_str(),
                    one.as_str(),
                ),
            ],
        };
        let table = report.table(false);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(
            lines[1],
            "input  pins.toml                                           sha256:111111111111  sha256:222222222222  STALE"
        );
        assert_eq!(
            lines[2],
            "tag    unix:///var/run/docker.sock: r@sha256:111111111111  sha256:111111111111  =                    ok"
        );
        assert!(lines.iter().all(|line| line.chars().count() <= 120));
    }
}
