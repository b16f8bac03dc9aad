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

use serde_json::{Map, Value, json};

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

/// The statement for `facts`, naming the SBOM with digest `sbom`.
pub fn statement(facts: &Facts, sbom: &str) -> Value {
    let (repository, hex) = (&facts.repository, facts.manifest.hex());
    let mut external = json!({
        "platform": facts.platform,
        "tags": facts.tags,
        "buildArgs": facts.build_args,
    });
    let mut metadata = json!({ "startedOn": facts.started, "finishedOn": facts.finished });
    let mut version = json!({ "forge": facts.forge_version });
    if let Some(docker) = &facts.daemon_version {
        version["docker"] = json!(docker);
    }
    let mut builder = json!({ "id": local_builder(), "version": version });
    if let Some(ci) = &facts.ci {
        external["workflow"] = workflow(ci);
        if let Some(runner) = &ci.runner_environment {
            external["runner_environment"] = json!(runner);
        }
        metadata["invocationId"] = json!(format!(
            "{}/actions/runs/{}/attempts/{}",
            ci.repository_url(),
            ci.run_id,
            ci.run_attempt
        ));
        builder["id"] = json!(format!("{}/{}", ci.server, ci.workflow_ref));
    }
    json!({
        "_type": STATEMENT,
        "subject": [{ "name": repository, "digest": { "sha256": hex } }],
        "predicateType": PREDICATE,
        "predicate": {
            "buildDefinition": {
                "buildType": build_type(),
                "externalParameters": external,
                "internalParameters": internal(facts),
                "resolvedDependencies": dependencies(facts),
            },
            "runDetails": {
                "builder": builder,
                "metadata": metadata,
                "byproducts": [{
                    "name": SBOM_BYPRODUCT,
                    "digest": { "sha256": sbom.trim_start_matches("sha256:") },
                    "mediaType": super::cosign::CYCLONEDX,
                }],
            },
        },
    })
}

/// The workflow of a CI run, as GitHub's workflow build type names it: its ref, repository
/// and path (the workflow ref without the repository before it and the ref after it; either
/// may hold an `@`).
fn workflow(ci: &CiRun) -> Value {
    let path = ci
        .workflow_ref
        .strip_prefix(&format!("{}/", ci.repository))
        .and_then(|rest| rest.strip_suffix(&format!("@{}", ci.git_ref)))
        .unwrap_or(ci.workflow_ref.as_str());
    json!({ "ref": ci.git_ref, "repository": ci.repository_url(), "path": path })
}

fn internal(facts: &Facts) -> Value {
    let mut internal = json!({ "builder": facts.builder });
    if let Some(ci) = &facts.ci {
        let mut github = json!({ "event_name": ci.event });
        if let Some((repository, owner)) = &ci.repository_ids {
            github["repository_id"] = json!(repository);
            github["repository_owner_id"] = json!(owner);
        }
        internal["github"] = github;
    }
    internal
}

/// A ResourceDescriptor: `name`, `uri` (when known), `digest`, and `annotations` (when any).
fn descriptor(name: &str, uri: Option<String>, digest: Value, annotations: Value) -> Value {
    let mut value = json!({ "name": name });
    if let Some(uri) = uri {
        value["uri"] = json!(uri);
    }
    if digest.as_object().is_some_and(|digest| !digest.is_empty()) {
        value["digest"] = digest;
    }
    if annotations
        .as_object()
        .is_some_and(|annotations| !annotations.is_empty())
    {
        value["annotations"] = annotations;
    }
    value
}

/// Every input, each with its digest.
fn dependencies(facts: &Facts) -> Vec<Value> {
    let mut dependencies = vec![base(facts)];
    for (name, digest) in &facts.inputs {
        let mut input = descriptor(
            name,
            None,
            json!({ "sha256": digest.trim_start_matches("sha256:") }),
            json!({}),
        );
        if matches!(
            name.as_str(),
            "templates" | "patches" | "overlays" | "context"
        ) {
            input["mediaType"] = json!(FOLDER_ARCHIVE);
        }
        dependencies.push(input);
    }
    for patch in &facts.patches {
        let mut annotations = Map::new();
        annotations.insert("dev.forge.author".to_owned(), json!(patch.record.author));
        annotations.insert("dev.forge.subject".to_owned(), json!(patch.record.subject));
        if let Some(original) = &patch.record.original {
            annotations.insert("dev.forge.commit".to_owned(), json!(original));
        }
        dependencies.push(descriptor(
            &patch.record.file,
            None,
            json!({ "sha256": patch.sha256, "gitBlob": patch.git_blob }),
            Value::Object(annotations),
        ));
    }
    for pin in facts.pins.iter().filter(|pin| !pin.in_base) {
        dependencies.extend(pin_dependencies(pin));
    }
    if let Some(ci) = &facts.ci {
        dependencies.push(descriptor(
            "source",
            Some(format!("git+{}@{}", ci.repository_url(), ci.git_ref)),
            json!({ "gitCommit": ci.sha }),
            json!({}),
        ));
    }
    dependencies
}

/// The base: by its `pkg:docker` URL, its manifest digest (else its image id) as the digest.
fn base(facts: &Facts) -> Value {
    let base = &facts.base;
    let digest = base.digest.as_ref().or(base.id.as_ref());
    let mut annotations = Map::new();
    if let Some(id) = &base.id {
        annotations.insert("dev.forge.imageId".to_owned(), json!(id));
    }
    if digest.is_some() {
        let of = if base.digest.is_some() {
            "manifest"
        } else {
            "image id"
        };
        annotations.insert("dev.forge.digestOf".to_owned(), json!(of));
    }
    descriptor(
        "base",
        Some(super::sbom::docker_purl(
            &base.image,
            facts.platform.as_ref().map(ToString::to_string).as_deref(),
        )),
        digest.map_or_else(|| json!({}), |digest| json!({ "sha256": digest.hex() })),
        Value::Object(annotations),
    )
}

/// A pin's descriptors: one per file pip may install (its sha256, where a wheel by URL is
/// downloaded from), else one for the pin; a git pin by its commit.
fn pin_dependencies(pin: &super::PinFact) -> Vec<Value> {
    let mut annotations = Map::new();
    annotations.insert("dev.forge.pin".to_owned(), json!(pin.name));
    annotations.insert("dev.forge.version".to_owned(), json!(pin.version));
    if let Some(url) = &pin.url {
        let uri = match &pin.branch {
            Some(branch) => format!("git+{url}@refs/heads/{branch}"),
            None => format!("git+{url}"),
        };
        let full = pin.version.len() == 40 && pin.version.bytes().all(|b| b.is_ascii_hexdigit());
        let digest = if full {
            json!({ "gitCommit": pin.version.to_ascii_lowercase() })
        } else {
            json!({})
        };
        return vec![descriptor(
            &pin.name,
            Some(uri),
            digest,
            Value::Object(annotations),
        )];
    }
    if pin.files.is_empty() {
        let mut value = descriptor(&pin.name, pin.purl(), json!({}), Value::Object(annotations));
        if let Some(download) = &pin.download {
            value["downloadLocation"] = json!(download);
        }
        return vec![value];
    }
    pin.files
        .iter()
        .map(|(file, sha256)| {
            let mut value = descriptor(
                file,
                pin.purl(),
                json!({ "sha256": sha256 }),
                Value::Object(annotations.clone()),
            );
            if let Some(download) = &pin.download {
                value["downloadLocation"] = json!(download);
            }
            value
        })
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
        assert_eq!(run["builder"]["version"], json!({ "forge": "0.1.0" }));
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
        assert_eq!(workflow(&ci)["path"], ".github/workflows/a@b.yml");
    }
}
