//! `forge report`: the record of the last build (forge.lock) and the pins in, the tester report
//! out, as Markdown or JSON.
//!
//! The report names the exact image a tester ran (image id, and the registry digest of each
//! pushed tag), what it was made from (commit, base digest, every pin, the patch series with
//! its authors), and leaves blank the fields only the tester can fill in: the rig, the settings
//! and the results.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::diagnostics::{Advice, Advise};
use crate::lock::{self, Record};
use crate::pins::{Fix, Mutability, Pin};
use crate::printer::{Document, Printer};
use crate::recipe::Recipe;
use crate::types::oci::Digest;
use crate::types::oci::RegistryHost;

/// The fields a tester fills in, in the order the report asks for them: (key, label).
const RIG_FIELDS: [(&str, &str); 6] = [
    ("hardware", "Hardware (nodes, GPU, memory)"),
    ("driver", "Driver and CUDA"),
    ("fabric", "Fabric (link, NICs)"),
    (
        "serve",
        "Serve settings (graph mode or eager, --max-num-seqs, KV cache dtype)",
    ),
    ("model", "Model and its revision (the checkpoint's commit)"),
    ("nccl", "NCCL settings"),
];

/// The concurrency levels a tester measures.
const CONCURRENCY: [u32; 4] = [1, 2, 4, 8];

/// The free-text result fields after the throughput table: (key, label).
const RESULT_FIELDS: [(&str, &str); 4] = [
    ("long_context", "Long-context"),
    ("soak", "Soak"),
    ("errors", "Errors"),
    ("thermals", "Thermals"),
];

/// Why there is no report to print.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The recipe has no forge.lock.
    #[error("{} does not exist: there is no recorded build to report on", path.display())]
    NoRecord {
        /// Where the record would be.
        path: std::path::PathBuf,
    },
    /// forge.lock records the recipe's inputs, but no build of them.
    #[error("{} records the recipe's inputs but no build of them: there is no recorded build to report on", path.display())]
    NoBuild {
        /// forge.lock.
        path: std::path::PathBuf,
    },
}

impl Advise for ReportError {
    fn advice(&self) -> Advice {
        match self {
            ReportError::NoRecord { .. } | ReportError::NoBuild { .. } => Advice::Hint(
                "run `forge build` (with --push to record registry digests) first; the report describes the build forge.lock records"
                    .to_owned(),
            ),
        }
    }
}

crate::advised!(ReportError);

/// Prints the tester report for the build recorded in the recipe's forge.lock.
pub fn report(recipe: &Recipe, printer: &Printer) -> anyhow::Result<()> {
    let record = match recipe.lock()?.map(std::sync::Arc::unwrap_or_clone) {
        Some(lock::Lock::Built(record)) => record,
        Some(lock::Lock::Inputs { .. }) => {
            return Err(ReportError::NoBuild {
                path: lock::path(&recipe.root),
            }
            .into());
        }
        None => {
            return Err(ReportError::NoRecord {
                path: lock::path(&recipe.root),
            }
            .into());
        }
    };
    let pins_changed = pins_digest(recipe)? != record.inputs.pins;
    if pins_changed {
        printer.warn(format_args!(
            "{} has changed since the recorded build; the pins listed are today's, the rest is the record's",
            recipe.pins_path().display()
        ));
    }
    let report = Report {
        record: &record,
        lane: recipe.pins.lane.as_ref(),
        pins: recipe.pins.pins.values().collect(),
        fixes: &recipe.pins.fixes,
        scripts: &recipe.pins.scripts,
        donors: &recipe.pins.donors,
        pins_changed,
        attachments: &record.attachments,
        from: From::Lock,
    };
    print(&report, printer);
    Ok(())
}

/// Prints the tester report for the image `reference` names, from the build record attached
/// to it in its registry; nothing is read from or written to the working folder.
pub fn report_reference(
    reference: &crate::types::oci::ImageRef,
    key: Option<&crate::attest::keys::VerifyingKey>,
    insecure_registries: &[RegistryHost],
    printer: &Printer,
) -> anyhow::Result<()> {
    let attached = super::attached::fetch(reference, key, insecure_registries, None, printer)?;
    let listed = attached.listed()?;
    let report = Report {
        record: attached.record(),
        lane: attached.pins.lane.as_ref(),
        pins: attached.pins.pins.values().collect(),
        fixes: &attached.pins.fixes,
        scripts: &attached.pins.scripts,
        donors: &attached.pins.donors,
        pins_changed: false,
        attachments: &listed,
        from: From::Reference {
            reference: reference.to_string(),
            signed_by: key
                .filter(|_| attached.signed == crate::attest::record::Signed::ByKey)
                .map(|key| key.origin.clone()),
        },
    };
    print(&report, printer);
    Ok(())
}

fn print(report: &Report<'_>, printer: &Printer) {
    printer.document(report);
}

/// Where the report's record came from.
enum From {
    /// The recipe's forge.lock.
    Lock,
    /// The record attached to an image in its registry.
    Reference {
        /// The image reference the tester gave.
        reference: String,
        /// The key whose signature the record carries, when one was asked for.
        signed_by: Option<String>,
    },
}

fn pins_digest(recipe: &Recipe) -> anyhow::Result<Digest> {
    let path = recipe.pins_path();
    let text = recipe
        .pins_text()
        .map_err(|source| anyhow::anyhow!("cannot read {}: {source}", path.display()))?;
    Ok(Digest::from_sha256(
        &<sha2::Sha256 as sha2::Digest>::digest(text.as_bytes()),
    ))
}

/// The report's facts: the record, and the pins it was built from.
struct Report<'a> {
    record: &'a Record,
    /// The lane the recipe was, when it varies another (`[lane]`).
    lane: Option<&'a crate::pins::Lane>,
    pins: Vec<&'a Pin>,
    /// What the pins and overlays fix.
    fixes: &'a [Fix],
    /// The patch scripts run in the image.
    scripts: &'a [crate::pins::Script],
    /// The images a stage copied from.
    donors: &'a BTreeMap<crate::types::recipe::PinName, crate::pins::Donor>,
    /// pins.toml no longer hashes to the recorded digest.
    pins_changed: bool,
    /// What is attached to the pushed image.
    attachments: &'a [crate::lock::AttachmentRecord],
    /// Where the record came from.
    from: From,
}

impl Report<'_> {
    fn to_markdown(&self) -> String {
        let record = self.record;
        let repository = record.image.repository.as_str();
        let mut text = format!("# Tester report: {repository}\n\n");
        text.push_str("## Image\n\n| | |\n|---|---|\n");
        text.push_str(&format!("| repository | `{repository}` |\n"));
        text.push_str(&format!("| image id (local) | `{}` |\n", record.image.id));
        let commit = record
            .image
            .revision
            .as_deref()
            .map_or_else(|| "not recorded".to_owned(), |commit| format!("`{commit}`"));
        text.push_str(&format!("| commit | {commit} |\n"));
        text.push_str(&format!("| lane | {} |\n", lane_text(self.lane)));
        text.push_str(&format!("| base image | `{}` |\n", record.base.image));
        let base_digest = record
            .base
            .digest
            .as_ref()
            .map_or_else(|| "not recorded".to_owned(), |digest| format!("`{digest}`"));
        text.push_str(&format!("| base digest | {base_digest} |\n"));
        let base_id = record
            .base
            .id
            .as_ref()
            .map_or_else(|| "not recorded".to_owned(), |id| format!("`{id}`"));
        text.push_str(&format!("| base image id (local) | {base_id} |\n"));
        for (name, donor) in self.donors {
            text.push_str(&format!("| donor {name} | `{}` |\n", donor.reference()));
        }
        text.push_str(&format!("| context | `{}` |\n", record.inputs.context));
        text.push_str(&format!(
            "| Dockerfile | `{}` |\n",
            record.inputs.dockerfile
        ));

        text.push_str("\n## Tags\n\n| tag | kind | registry digest |\n|---|---|---|\n");
        for tag in &record.tags {
            let pushed = tag
                .pushed
                .as_ref()
                .map_or_else(|| "not pushed".to_owned(), |digest| format!("`{digest}`"));
            text.push_str(&format!(
                "| `{repository}:{}` | {} | {pushed} |\n",
                tag.name,
                mutability(tag.mutability)
            ));
        }
        if let Some(digest) = record.tags.iter().find_map(|tag| tag.pushed.as_ref()) {
            text.push_str(&format!(
                "\nRun exactly this image: `docker pull {repository}@{digest}`\n"
            ));
        }

        text.push_str(&self.attachments_markdown());
        text.push_str(&self.pins_markdown());
        text.push_str(&patches_markdown(record));
        text.push_str(&self.fixes_markdown());
        text.push_str(&self.scripts_markdown());
        text.push_str(&tester_markdown());
        text
    }

    /// The pins the image was built from.
    fn pins_markdown(&self) -> String {
        let mut text = String::from("\n## Pins\n\n");
        if self.pins_changed {
            text.push_str("> pins.toml has changed since this build; these are its pins now.\n\n");
        }
        text.push_str("| pin | kind | version | source |\n|---|---|---|---|\n");
        for pin in &self.pins {
            text.push_str(&format!(
                "| {} | {} | `{}` | {} |\n",
                pin.name,
                pin.kind(),
                pin.current(),
                pin.as_kind().described()
            ));
        }
        text
    }

    /// The symptom → fix → check table, one row per fix pins.toml declares.
    fn script_documents(&self) -> Vec<ScriptDocument<'_>> {
        self.scripts
            .iter()
            .map(|script| ScriptDocument {
                file: script.file.as_str(),
                check: script.check.as_str(),
            })
            .collect()
    }

    fn donor_documents(&self) -> Vec<DonorDocument<'_>> {
        self.donors
            .iter()
            .map(|(name, donor)| DonorDocument {
                name: name.as_str(),
                image: donor.image.to_string(),
                digest: donor.digest.as_str(),
            })
            .collect()
    }

    /// The patch scripts and their checks, when there are any.
    fn scripts_markdown(&self) -> String {
        if self.scripts.is_empty() {
            return String::new();
        }
        let mut text = String::from(
            "\n## Patch scripts\n\nRun in the image after the overlays, twice, then checked:\n\n| script | check |\n|---|---|\n",
        );
        for script in self.scripts {
            text.push_str(&format!(
                "| `{}` | `{}` |\n",
                script.file,
                script.check.as_str().replace('|', "\\|")
            ));
        }
        text
    }

    fn fixes_markdown(&self) -> String {
        if self.fixes.is_empty() {
            return String::new();
        }
        let cell = |text: &str| text.replace('|', "\\|");
        let mut text =
            String::from("\n## Fixes\n\n| symptom | fix | by | check |\n|---|---|---|---|\n");
        for fix in self.fixes {
            text.push_str(&format!(
                "| {} | {} | {} | `{}` |\n",
                cell(fix.symptom.as_str()),
                cell(fix.fix.as_str()),
                fix.by,
                cell(fix.check.as_str())
            ));
        }
        text
    }
}

impl Serialize for Report<'_> {
    /// The report for programs: what the Markdown shows, and the rig and results fields a tester
    /// fills in, blank (`null`).
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let record = self.record;
        let repository = record.image.repository.as_str();
        ReportDocument {
            image: ImageDocument {
                repository,
                id: record.image.id.as_str(),
                revision: record.image.revision.as_deref(),
                lane: self.lane,
            },
            base: BaseDocument {
                image: record.base.image.as_str(),
                digest: record.base.digest.as_ref().map(Digest::as_str),
                id: record.base.id.as_ref().map(Digest::as_str),
            },
            tags: record
                .tags
                .iter()
                .map(|tag| TagDocument {
                    tag: format!("{repository}:{}", tag.name),
                    mutability: mutability(tag.mutability),
                    digest: tag.pushed.as_ref().map(Digest::as_str),
                })
                .collect(),
            attachments: self
                .attachments
                .iter()
                .map(|attachment| AttachmentDocument {
                    kind: &attachment.kind,
                    subject: attachment.subject.as_str(),
                    reference: format!("{repository}:{}", attachment.tag),
                    manifest: attachment.manifest.as_str(),
                    content: attachment.content.as_str(),
                })
                .collect(),
            inputs: &record.inputs,
            pins_changed: self.pins_changed,
            pins: self
                .pins
                .iter()
                .map(|pin| PinDocument {
                    name: pin.name.as_str(),
                    kind: pin.kind().to_string(),
                    version: pin.current(),
                    source: pin.as_kind().described(),
                })
                .collect(),
            fixes: self
                .fixes
                .iter()
                .map(|fix| FixDocument {
                    name: fix.name.as_str(),
                    by: fix.by.to_string(),
                    symptom: fix.symptom.as_str(),
                    fix: fix.fix.as_str(),
                    check: fix.check.as_str(),
                })
                .collect(),
            scripts: self.script_documents(),
            donors: self.donor_documents(),
            patches: record
                .patches
                .iter()
                .map(|patch| PatchDocument {
                    file: &patch.file,
                    author: &patch.author,
                    original: patch.original.as_deref(),
                    applied: patch.applied.as_deref(),
                })
                .collect(),
            rig: RIG_FIELDS.iter().map(|(key, _)| (*key, None)).collect(),
            results: ResultsDocument::blank(),
        }
        .serialize(serializer)
    }
}

impl Document for Report<'_> {
    fn text(&self) -> Option<String> {
        Some(self.to_markdown())
    }
}

/// `forge report --json`.
#[derive(Serialize)]
struct ReportDocument<'a> {
    image: ImageDocument<'a>,
    base: BaseDocument<'a>,
    tags: Vec<TagDocument<'a>>,
    attachments: Vec<AttachmentDocument<'a>>,
    inputs: &'a crate::lock::Inputs,
    pins_changed: bool,
    pins: Vec<PinDocument<'a>>,
    fixes: Vec<FixDocument<'a>>,
    scripts: Vec<ScriptDocument<'a>>,
    donors: Vec<DonorDocument<'a>>,
    patches: Vec<PatchDocument<'a>>,
    rig: BTreeMap<&'static str, Option<()>>,
    results: ResultsDocument,
}

#[derive(Serialize)]
struct ImageDocument<'a> {
    repository: &'a str,
    id: &'a str,
    revision: Option<&'a str>,
    /// `null` for a baseline recipe.
    lane: Option<&'a crate::pins::Lane>,
}

/// Which lane an image is, as the report's and `verify-digest`'s text say it.
pub fn lane_text(lane: Option<&crate::pins::Lane>) -> String {
    match lane {
        None => "baseline".to_owned(),
        Some(lane) => format!("{}, a lane of the recipe in `{}`", lane.kind(), lane.of),
    }
}

#[derive(Serialize)]
struct BaseDocument<'a> {
    image: &'a str,
    digest: Option<&'a str>,
    id: Option<&'a str>,
}

#[derive(Serialize)]
struct TagDocument<'a> {
    tag: String,
    mutability: &'static str,
    digest: Option<&'a str>,
}

#[derive(Serialize)]
struct AttachmentDocument<'a> {
    kind: &'a crate::lock::AttachmentKind,
    subject: &'a str,
    reference: String,
    manifest: &'a str,
    content: &'a str,
}

#[derive(Serialize)]
struct PinDocument<'a> {
    name: &'a str,
    kind: String,
    version: &'a str,
    source: String,
}

#[derive(Serialize)]
struct ScriptDocument<'a> {
    file: &'a str,
    check: &'a str,
}

#[derive(Serialize)]
struct DonorDocument<'a> {
    name: &'a str,
    image: String,
    digest: &'a str,
}

#[derive(Serialize)]
struct FixDocument<'a> {
    name: &'a str,
    by: String,
    symptom: &'a str,
    fix: &'a str,
    check: &'a str,
}

#[derive(Serialize)]
struct PatchDocument<'a> {
    file: &'a str,
    author: &'a str,
    original: Option<&'a str>,
    applied: Option<&'a str>,
}

/// The results a tester fills in: the free-text fields, and a row per concurrency level.
#[derive(Serialize)]
struct ResultsDocument {
    #[serde(flatten)]
    fields: BTreeMap<&'static str, Option<()>>,
    concurrency: Vec<ConcurrencyDocument>,
}

impl ResultsDocument {
    /// Every field blank (`null`), for the tester to fill in.
    fn blank() -> Self {
        ResultsDocument {
            fields: RESULT_FIELDS.iter().map(|(key, _)| (*key, None)).collect(),
            concurrency: CONCURRENCY
                .iter()
                .map(|&c| ConcurrencyDocument {
                    c,
                    tokens_per_second: None,
                    ttft_p50: None,
                    ttft_p99: None,
                    notes: None,
                })
                .collect(),
        }
    }
}

#[derive(Serialize)]
struct ConcurrencyDocument {
    c: u32,
    tokens_per_second: Option<f64>,
    ttft_p50: Option<f64>,
    ttft_p99: Option<f64>,
    notes: Option<String>,
}

impl Report<'_> {
    /// The build record, signature, provenance and SBOM attached to the pushed image.
    fn attachments_markdown(&self) -> String {
        let repository = self.record.image.repository.as_str();
        let mut text = String::from("\n## Signature and attestations\n\n");
        if let From::Reference {
            reference,
            signed_by,
        } = &self.from
        {
            text.push_str(&match signed_by {
                Some(key) => format!(
                    "This report was read from the build record attached to `{reference}`, signed by {key}.\n\n"
                ),
                None => format!(
                    "This report was read from the build record attached to `{reference}`, trusted only as far as its registry is (no key was given).\n\n"
                ),
            });
        }
        let Some(subject) = self
            .attachments
            .first()
            .map(|attachment| &attachment.subject)
        else {
            let pushed = self.record.tags.iter().any(|tag| tag.pushed.is_some());
            text.push_str(if pushed {
                "None recorded for the pushed image (`forge build --push` attaches the build record; with `--sign` also the SBOM, the provenance and the signature).\n"
            } else {
                "None: the build was not pushed (`forge build --push` attaches the build record; with `--sign` also the SBOM, the provenance and the signature).\n"
            });
            return text;
        };
        text.push_str(&format!(
            "Attached to `{repository}@{subject}`:\n\n| what | tag | manifest | content |\n|---|---|---|---|\n"
        ));
        for attachment in self.attachments {
            let place = if attachment.tag.is_empty() {
                "the referrers API".to_owned()
            } else {
                format!("`{}`", attachment.tag)
            };
            text.push_str(&format!(
                "| {} | {place} | `{}` | `{}` |\n",
                attachment.kind.noun(),
                attachment.manifest,
                attachment.content
            ));
        }
        if !self
            .attachments
            .iter()
            .any(|attachment| attachment.kind == crate::lock::AttachmentKind::Signature)
        {
            text.push_str(match &self.from {
                From::Lock => "\nNot signed: the build was pushed without `--sign`.\n",
                // A record signed by the key was pushed with `--sign`: its signature is gone.
                From::Reference {
                    signed_by: Some(_), ..
                } => "\nThe signature is missing from the registry: the build record is signed, so the build was pushed with `--sign`, and its `.sig` tag is gone (removed, or hidden by the registry). Ask the lab to sign the image again.\n",
                From::Reference { signed_by: None, .. } => "\nNo signature in the registry (`forge build --push --sign` attaches one; without a key, the report cannot tell whether one was removed).\n",
            });
            return text;
        }
        let command = match &self.from {
            From::Lock => "forge verify-digest --remote --key PUB.pem".to_owned(),
            From::Reference { reference, .. } => {
                format!("forge verify-digest {reference} --key PUB.pem")
            }
        };
        text.push_str(&format!("\nCheck them with the public key: `{command}`\n"));
        text
    }
}

/// The patch series with its authors, as the record lists it.
fn patches_markdown(record: &Record) -> String {
    let mut text = String::from("\n## Patches\n\n");
    if record.patches.is_empty() {
        text.push_str("None.\n");
        return text;
    }
    text.push_str("| patch | author | from commit | applied as |\n|---|---|---|---|\n");
    for patch in &record.patches {
        text.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            patch.file,
            patch.author,
            short(patch.original.as_deref()),
            patch.applied.as_deref().map_or_else(
                || "already there".to_owned(),
                |id| format!("`{}`", &id[..id.len().min(12)])
            )
        ));
    }
    text
}

/// The fields the tester fills in: the rig, then the results.
fn tester_markdown() -> String {
    let mut text = String::from("\n## Rig (tester)\n\n");
    for (_, label) in RIG_FIELDS {
        text.push_str(&format!("- {label}:\n"));
    }
    text.push_str("\n## Results (tester)\n\n");
    text.push_str("| concurrency | output tokens/s | TTFT p50 | TTFT p99 | notes |\n");
    text.push_str("|---|---|---|---|---|\n");
    for level in CONCURRENCY {
        text.push_str(&format!("| c={level} | | | | |\n"));
    }
    text.push('\n');
    for (_, label) in RESULT_FIELDS {
        text.push_str(&format!("- {label}:\n"));
    }
    text
}

fn mutability(mutability: Mutability) -> &'static str {
    match mutability {
        Mutability::Moving => "moving",
        Mutability::Immutable => "immutable",
    }
}

fn short(id: Option<&str>) -> String {
    id.map_or_else(
        || "-".to_owned(),
        |id| format!("`{}`", &id[..id.len().min(12)]),
    )
}
