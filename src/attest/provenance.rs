//! The build's provenance: a SLSA provenance v1 predicate in an in-toto Statement v1 whose
//! subject is the pushed manifest.
//!
//! Every input is a ResourceDescriptor in `resolvedDependencies` with its digest: the base (by
//! `pkg:docker` URL, its manifest digest or else its image id), each input forge.lock records
//! (pins.toml, the templates, patches and overlays folders, the Dockerfile, the context), each
//! patch file (sha256 and git blob id, its author), each pin (its package URL, every file pip
//! may install with its sha256; a git pin's commit as `gitCommit`), and in CI the commit the
//! workflow ran on. `externalParameters` holds what the maintainer chose (platform, tags,
//! build arguments, and in CI the workflow and the runner), `runDetails` the builder (in CI the
//! workflow, its run as `invocationId`, as GitHub's workflow build type names them), the run
//! and the SBOM by digest, so that a signature over the statement covers the SBOM too.
//! Annotation keys are `dev.forge.*`.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::{CiRun, Facts};

/// The in-toto statement type.
pub const STATEMENT: &str = "https://in-toto.io/Statement/v1";
/// The in-toto Statement type cosign 2 writes (`cosign attest`), read as v1 is: the two differ
/// in nothing forge reads.
pub const STATEMENT_V01: &str = "https://in-toto.io/Statement/v0.1";
/// The SLSA provenance v1 predicate type.
pub const PREDICATE: &str = "https://slsa.dev/provenance/v1";
/// The name of the SBOM among the provenance's byproducts.
const SBOM_BYPRODUCT: &str = "sbom";

/// Where forge's own description lives: the repository's documentation of its provenance.
const DESCRIPTION: &str = concat!(
    env!("CARGO_PKG_REPOSITORY"),
    "/blob/main/docs/provenance.md"
);

/// What kind of build forge runs: the type its build definition follows, described where it
/// resolves.
pub fn build_type() -> String {
    format!("{DESCRIPTION}#build-type")
}

/// The builder outside CI: forge on the maintainer's machine, described where it resolves.
fn local_builder() -> String {
    format!("{DESCRIPTION}#builder")
}

/// The media type of an input forge digests as a folder: the archive it makes of it.
const FOLDER_ARCHIVE: &str = "application/x-tar";

/// An in-toto Statement of SLSA provenance v1, as forge writes it: the fields its
/// specifications define that forge fills, each optional one left out when empty.
#[derive(Debug, Serialize)]
struct Statement<'a> {
    #[serde(rename = "_type")]
    statement_type: &'static str,
    subject: Vec<ResourceDescriptor>,
    #[serde(rename = "predicateType")]
    predicate_type: &'static str,
    predicate: Predicate<'a>,
}

/// The SLSA provenance predicate.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Predicate<'a> {
    build_definition: BuildDefinition<'a>,
    run_details: RunDetails<'a>,
}

/// What the build was asked to do and what it read.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct BuildDefinition<'a> {
    build_type: String,
    external_parameters: External<'a>,
    internal_parameters: Internal<'a>,
    resolved_dependencies: Vec<ResourceDescriptor>,
}

/// What the maintainer chose: platform, tags, build arguments; in CI the workflow and runner.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct External<'a> {
    platform: &'a Option<crate::types::oci::Platform>,
    tags: &'a [crate::types::oci::Tag],
    build_args: &'a BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    workflow: Option<Workflow<'a>>,
    #[serde(rename = "runner_environment", skip_serializing_if = "Option::is_none")]
    runner_environment: Option<&'a str>,
}

/// A CI run's workflow, as GitHub's workflow build type names it.
#[derive(Debug, Serialize)]
struct Workflow<'a> {
    #[serde(rename = "ref")]
    git_ref: &'a str,
    repository: String,
    path: &'a str,
}

/// What forge chose itself: the builder, and in CI the event and the repository's ids.
#[derive(Debug, Serialize)]
struct Internal<'a> {
    builder: &'a crate::engine::Builder,
    #[serde(skip_serializing_if = "Option::is_none")]
    github: Option<Github<'a>>,
}

/// The CI run's event and repository ids.
#[derive(Debug, Serialize)]
struct Github<'a> {
    event_name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    repository_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    repository_owner_id: Option<&'a str>,
}

/// Who ran the build, when, and what else it made.
#[derive(Debug, Serialize)]
struct RunDetails<'a> {
    builder: RunBuilder<'a>,
    metadata: Metadata<'a>,
    byproducts: Vec<ResourceDescriptor>,
}

/// The builder: its id, and the versions of forge and the daemon.
#[derive(Debug, Serialize)]
struct RunBuilder<'a> {
    id: String,
    version: BTreeMap<&'static str, &'a str>,
}

/// When the build ran, and in CI the run's id.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Metadata<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    invocation_id: Option<String>,
    started_on: &'a str,
    finished_on: &'a str,
}

/// A ResourceDescriptor: `name`, `uri` (when known), `digest` and `annotations` (when any), the
/// archive's `mediaType` for a folder, and where a download comes from.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
struct ResourceDescriptor {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    uri: Option<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    digest: BTreeMap<&'static str, String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    annotations: BTreeMap<&'static str, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    media_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    download_location: Option<String>,
}

impl ResourceDescriptor {
    fn named(name: &str) -> Self {
        ResourceDescriptor {
            name: name.to_owned(),
            ..ResourceDescriptor::default()
        }
    }

    fn digest(mut self, algorithm: &'static str, value: impl Into<String>) -> Self {
        self.digest.insert(algorithm, value.into());
        self
    }

    fn annotated(mut self, key: &'static str, value: impl Into<String>) -> Self {
        self.annotations.insert(key, value.into());
        self
    }
}

/// The statement for `facts`, naming the SBOM with digest `sbom`.
pub fn statement(facts: &Facts, sbom: &str) -> Value {
    let mut version = BTreeMap::from([("forge", facts.forge_version.as_str())]);
    if let Some(docker) = &facts.daemon_version {
        version.insert("docker", docker);
    }
    let ci = facts.ci.as_ref();
    let statement = Statement {
        statement_type: STATEMENT,
        subject: vec![
            ResourceDescriptor::named(facts.repository.as_str())
                .digest("sha256", facts.manifest.hex()),
        ],
        predicate_type: PREDICATE,
        predicate: Predicate {
            build_definition: BuildDefinition {
                build_type: build_type(),
                external_parameters: External {
                    platform: &facts.platform,
                    tags: &facts.tags,
                    build_args: &facts.build_args,
                    workflow: ci.map(workflow),
                    runner_environment: ci.and_then(|ci| ci.runner_environment.as_deref()),
                },
                internal_parameters: internal(facts),
                resolved_dependencies: dependencies(facts),
            },
            run_details: RunDetails {
                builder: RunBuilder {
                    id: ci.map_or_else(local_builder, |ci| {
                        format!("{}/{}", ci.server, ci.workflow_ref)
                    }),
                    version,
                },
                metadata: Metadata {
                    invocation_id: ci.map(|ci| {
                        format!(
                            "{}/actions/runs/{}/attempts/{}",
                            ci.repository_url(),
                            ci.run_id,
                            ci.run_attempt
                        )
                    }),
                    started_on: &facts.started,
                    finished_on: &facts.finished,
                },
                byproducts: vec![ResourceDescriptor {
                    media_type: Some(super::cosign::CYCLONEDX),
                    ..ResourceDescriptor::named(SBOM_BYPRODUCT)
                        .digest("sha256", sbom.trim_start_matches("sha256:"))
                }],
            },
        },
    };
    serde_json::to_value(statement).expect("a statement serializes")
}

/// The workflow of a CI run, as GitHub's workflow build type names it: its ref, repository
/// and path (the workflow ref without the repository before it and the ref after it; either
/// may hold an `@`).
fn workflow(ci: &CiRun) -> Workflow<'_> {
    let path = ci
        .workflow_ref
        .strip_prefix(&format!("{}/", ci.repository))
        .and_then(|rest| rest.strip_suffix(&format!("@{}", ci.git_ref)))
        .unwrap_or(ci.workflow_ref.as_str());
    Workflow {
        git_ref: &ci.git_ref,
        repository: ci.repository_url(),
        path,
    }
}

fn internal(facts: &Facts) -> Internal<'_> {
    Internal {
        builder: &facts.builder,
        github: facts.ci.as_ref().map(|ci| Github {
            event_name: &ci.event,
            repository_id: ci.repository_ids.as_ref().map(|(id, _)| id.as_str()),
            repository_owner_id: ci.repository_ids.as_ref().map(|(_, id)| id.as_str()),
        }),
    }
}

/// Every input, each with its digest.
fn dependencies(facts: &Facts) -> Vec<ResourceDescriptor> {
    let mut dependencies = vec![base(facts)];
    for (name, digest) in &facts.inputs {
        let folder = matches!(
            name.as_str(),
            "templates" | "patches" | "overlays" | "context"
        );
        dependencies.push(ResourceDescriptor {
            media_type: folder.then_some(FOLDER_ARCHIVE),
            ..ResourceDescriptor::named(name).digest("sha256", digest.trim_start_matches("sha256:"))
        });
    }
    for patch in &facts.patches {
        let mut descriptor = ResourceDescriptor::named(&patch.record.file)
            .digest("sha256", &patch.sha256)
            .digest("gitBlob", &patch.git_blob)
            .annotated("dev.forge.author", &patch.record.author)
            .annotated("dev.forge.subject", &patch.record.subject);
        if let Some(original) = &patch.record.original {
            descriptor = descriptor.annotated("dev.forge.commit", original);
        }
        dependencies.push(descriptor);
    }
    for (name, image, digest) in &facts.donors {
        dependencies.push(
            ResourceDescriptor {
                uri: Some(super::sbom::docker_purl(image, None)),
                ..ResourceDescriptor::named(&format!("donor:{name}"))
            }
            .digest("sha256", digest.hex())
            .annotated("dev.forge.kind", "donor"),
        );
    }
    for (file, sha256) in &facts.scripts {
        dependencies.push(
            ResourceDescriptor::named(file)
                .digest("sha256", sha256)
                .annotated("dev.forge.kind", "patch-script"),
        );
    }
    for pin in facts.pins.iter().filter(|pin| !pin.in_base) {
        dependencies.extend(pin_dependencies(pin));
    }
    if let Some(ci) = &facts.ci {
        dependencies.push(ResourceDescriptor {
            uri: Some(format!("git+{}@{}", ci.repository_url(), ci.git_ref)),
            ..ResourceDescriptor::named("source").digest("gitCommit", &ci.sha)
        });
    }
    dependencies
}

/// The base: by its `pkg:docker` URL, its manifest digest (else its image id) as the digest.
fn base(facts: &Facts) -> ResourceDescriptor {
    let base = &facts.base;
    let mut descriptor = ResourceDescriptor {
        uri: Some(super::sbom::docker_purl(
            &base.image,
            facts.platform.as_ref().map(ToString::to_string).as_deref(),
        )),
        ..ResourceDescriptor::named("base")
    };
    if let Some(id) = &base.id {
        descriptor = descriptor.annotated("dev.forge.imageId", id.as_str());
    }
    if let Some(digest) = base.digest.as_ref().or(base.id.as_ref()) {
        let of = if base.digest.is_some() {
            "manifest"
        } else {
            "image id"
        };
        descriptor = descriptor
            .digest("sha256", digest.hex())
            .annotated("dev.forge.digestOf", of);
    }
    descriptor
}

/// A pin's descriptors: one per file pip may install (its sha256, where a wheel by URL is
/// downloaded from), else one for the pin; a git pin by its commit.
fn pin_dependencies(pin: &super::PinFact) -> Vec<ResourceDescriptor> {
    let named = |name: &str| {
        ResourceDescriptor::named(name)
            .annotated("dev.forge.pin", &pin.name)
            .annotated("dev.forge.version", &pin.version)
    };
    if let Some(url) = &pin.url {
        let uri = match &pin.branch {
            Some(branch) => format!("git+{url}@refs/heads/{branch}"),
            None => format!("git+{url}"),
        };
        let full = pin.version.len() == 40 && pin.version.bytes().all(|b| b.is_ascii_hexdigit());
        let mut descriptor = ResourceDescriptor {
            uri: Some(uri),
            ..named(&pin.name)
        };
        if full {
            descriptor = descriptor.digest("gitCommit", pin.version.to_ascii_lowercase());
        }
        return vec![descriptor];
    }
    let described = |name: &str| ResourceDescriptor {
        uri: pin.purl(),
        download_location: pin.download.clone(),
        ..named(name)
    };
    if pin.files.is_empty() {
        return vec![described(&pin.name)];
    }
    pin.files
        .iter()
        .map(|(file, sha256)| described(file).digest("sha256", sha256))
        .collect()
}

/// What a statement says, for verification: its subject digest, its inputs, its SBOM digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stated {
    /// `sha256:` of each subject.
    pub subjects: Vec<String>,
    /// The recorded inputs, by name.
    pub inputs: Vec<(String, String)>,
    /// `sha256:` of the SBOM it names.
    pub sbom: Option<String>,
}

/// Reads back what `statement` (JSON) says; `None` when it is not a provenance statement. The
/// inputs are the descriptors of `resolvedDependencies` named as forge.lock names them (a
/// statement of an earlier forge held them in `externalParameters.inputs`).
pub fn stated(statement: &Value) -> Option<Stated> {
    let statement_type = statement["_type"].as_str().unwrap_or_default();
    if ![STATEMENT, STATEMENT_V01].contains(&statement_type)
        || statement["predicateType"] != PREDICATE
    {
        return None;
    }
    let subjects: Vec<String> = statement["subject"]
        .as_array()?
        .iter()
        .filter_map(|subject| subject["digest"]["sha256"].as_str())
        .map(|hex| format!("sha256:{hex}"))
        .collect();
    let definition = &statement["predicate"]["buildDefinition"];
    let inputs = match definition["externalParameters"]["inputs"].as_object() {
        Some(inputs) => inputs
            .iter()
            .map(|(name, digest)| (name.clone(), digest.as_str().unwrap_or_default().to_owned()))
            .collect(),
        None => definition["resolvedDependencies"]
            .as_array()?
            .iter()
            .filter_map(|dependency| {
                let name = dependency["name"].as_str()?;
                let hex = dependency["digest"]["sha256"].as_str()?;
                crate::lock::Inputs::NAMES
                    .contains(&name)
                    .then(|| (name.to_owned(), format!("sha256:{hex}")))
            })
            .collect(),
    };
    let sbom = statement["predicate"]["runDetails"]["byproducts"]
        .as_array()
        .and_then(|products| {
            products
                .iter()
                .find(|product| product["name"] == SBOM_BYPRODUCT)
        })
        .and_then(|product| product["digest"]["sha256"].as_str())
        .map(|hex| format!("sha256:{hex}"));
    Some(Stated {
        subjects,
        inputs,
        sbom,
    })
}

/// Why a DSSE envelope is not a provenance statement signed by a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotSigned {
    /// Not a DSSE envelope.
    Unreadable,
    /// No signature of it is the key's.
    ByKey,
    /// Signed by the key, but not an in-toto statement of SLSA provenance.
    NotProvenance,
}

/// What the DSSE envelope `bytes` states, when `key` signed it and it is provenance.
pub fn signed_by(bytes: &[u8], key: &super::keys::VerifyingKey) -> Result<Stated, NotSigned> {
    let envelope: super::dsse::Envelope =
        serde_json::from_slice(bytes).map_err(|_| NotSigned::Unreadable)?;
    signed_in(&envelope, key)
}

/// What `envelope` states, when `key` signed it and it is provenance.
pub fn signed_in(
    envelope: &super::dsse::Envelope,
    key: &super::keys::VerifyingKey,
) -> Result<Stated, NotSigned> {
    let payload = envelope.verified_payload(key).ok_or(NotSigned::ByKey)?;
    serde_json::from_slice(&payload)
        .ok()
        .and_then(|statement| stated(&statement))
        .ok_or(NotSigned::NotProvenance)
}

impl Stated {
    /// Whether `digest` is one of the statement's subjects (as cosign matches an attestation to
    /// an image: any subject will do).
    pub fn names(&self, digest: &crate::types::oci::Digest) -> bool {
        self.subjects
            .iter()
            .any(|subject| subject == digest.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_without_a_registry_is_a_uri_and_an_unknown_daemon_version_is_left_out() {
        let facts = Facts::sample();
        let statement = statement(&facts, "sha256:00");
        let run = &statement["predicate"]["runDetails"];
        assert_eq!(
            run["builder"]["version"],
            serde_json::json!({ "forge": "0.1.0" })
        );
        let base = &statement["predicate"]["buildDefinition"]["resolvedDependencies"][0];
        assert_eq!(
            base["uri"],
            "pkg:docker/forge-example-base@busybox?platform=linux/amd64"
        );
        assert_eq!(base["digest"]["sha256"], "c".repeat(64));
    }

    #[test]
    fn the_workflow_path_is_its_ref_without_repository_and_ref_even_with_at_signs() {
        let ci = CiRun {
            server: "https://github.com".to_owned(),
            repository: "o/r".to_owned(),
            workflow_ref: "o/r/.github/workflows/a@b.yml@refs/heads/x@y".to_owned(),
            git_ref: "refs/heads/x@y".to_owned(),
            sha: "0".repeat(40),
            run_id: "1".to_owned(),
            run_attempt: "1".to_owned(),
            event: "push".to_owned(),
            runner_environment: None,
            repository_ids: None,
        };
        assert_eq!(workflow(&ci).path, ".github/workflows/a@b.yml");
    }
}
