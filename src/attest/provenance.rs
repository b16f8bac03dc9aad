//! The build's provenance: a SLSA provenance v1 predicate in an in-toto Statement v1 whose
//! subject is the pushed manifest. The build definition names forge's inputs by the digests
//! forge.lock records (pins.toml, templates, patches, overlays, the Dockerfile and the
//! context), the base by digest, the build arguments and the builder; the run details name
//! forge's version, the daemon's, when the build ran, and the SBOM by digest, so that a
//! signature over the statement covers the SBOM too.

use serde_json::{Value, json};

use super::Facts;

/// The in-toto statement type.
pub const STATEMENT: &str = "https://in-toto.io/Statement/v1";
/// The SLSA provenance v1 predicate type.
pub const PREDICATE: &str = "https://slsa.dev/provenance/v1";
/// What kind of build forge runs: the type its build definition follows.
pub const BUILD_TYPE: &str = "urn:forge:build-type:recipe:v1";
/// The name of the SBOM among the provenance's byproducts.
const SBOM_BYPRODUCT: &str = "sbom";

/// The statement for `facts`, naming the SBOM with digest `sbom`.
pub fn statement(facts: &Facts, sbom: &str) -> Value {
    let (repository, hex) = (&facts.repository, facts.manifest.hex());
    let mut dependencies = vec![json!({
        "uri": format!("oci://{}", facts.base.image),
        "digest": facts.base.digest.as_ref().map(|digest| json!({
            "sha256": digest.hex()
        })).unwrap_or_else(|| json!({})),
        "annotations": { "image_id": facts.base.id },
    })];
    dependencies.extend(facts.pins.iter().filter(|pin| !pin.in_base).map(|pin| {
        let mut dependency = json!({ "name": pin.name, "annotations": { "version": pin.version } });
        if let Some(purl) = pin.purl() {
            dependency["uri"] = json!(purl);
        }
        dependency
    }));
    json!({
        "_type": STATEMENT,
        "subject": [{ "name": repository, "digest": { "sha256": hex } }],
        "predicateType": PREDICATE,
        "predicate": {
            "buildDefinition": {
                "buildType": BUILD_TYPE,
                "externalParameters": {
                    "inputs": facts.inputs.iter().map(|(name, digest)| (name.clone(), json!(digest))).collect::<serde_json::Map<_, _>>(),
                    "platform": facts.platform,
                    "tags": facts.tags,
                    "buildArgs": facts.build_args,
                },
                "internalParameters": { "builder": facts.builder },
                "resolvedDependencies": dependencies,
            },
            "runDetails": {
                "builder": {
                    "id": format!("urn:forge:builder:{}", facts.forge_version),
                    "version": { "forge": facts.forge_version, "docker": facts.daemon_version },
                },
                "metadata": { "startedOn": facts.started, "finishedOn": facts.finished },
                "byproducts": [{
                    "name": SBOM_BYPRODUCT,
                    "digest": { "sha256": sbom.trim_start_matches("sha256:") },
                    "mediaType": super::cosign::CYCLONEDX,
                }],
            },
        },
    })
}

/// What a statement says, for verification: its subject digest, its inputs, its SBOM digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stated {
    /// `sha256:` of the subject.
    pub subject: String,
    /// The recorded inputs, by name.
    pub inputs: Vec<(String, String)>,
    /// `sha256:` of the SBOM it names.
    pub sbom: Option<String>,
}

/// Reads back what `statement` (JSON) says; `None` when it is not a provenance statement.
pub fn stated(statement: &Value) -> Option<Stated> {
    if statement["_type"] != STATEMENT || statement["predicateType"] != PREDICATE {
        return None;
    }
    let subject = statement["subject"][0]["digest"]["sha256"].as_str()?;
    let inputs = statement["predicate"]["buildDefinition"]["externalParameters"]["inputs"]
        .as_object()?
        .iter()
        .map(|(name, digest)| (name.clone(), digest.as_str().unwrap_or_default().to_owned()))
        .collect();
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
        subject: format!("sha256:{subject}"),
        inputs,
        sbom,
    })
}
