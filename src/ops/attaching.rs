//! After a push: the build record, and with `--sign` the signature, the SBOM and the
//! provenance, attached to the pushed manifest in the registry and recorded in forge.lock.

use anyhow::Context as _;

use crate::attest::attach;
use crate::pipeline::{self, Plan};
use crate::printer::Printer;
use crate::recipe::Recipe;

use super::build_request::BuildOptions;

/// What attaching to a pushed build needs besides its record.
pub(super) struct Attaching<'a> {
    pub(super) recipe: &'a Recipe,
    pub(super) options: &'a BuildOptions,
    pub(super) plan: &'a Plan,
    pub(super) started: chrono::DateTime<chrono::Utc>,
    pub(super) daemon: Option<String>,
}

/// Attaches the build record to the manifest `record`'s tags were pushed as and, with
/// `--sign`, the signature, the SBOM and the provenance, and records them in forge.lock. The
/// push stands whatever happens here: forge.lock already records it, and a failure leaves the
/// record without attachments.
pub(super) fn attach(
    attaching: &Attaching<'_>,
    record: &mut crate::lock::Record,
    printer: &Printer,
) -> anyhow::Result<()> {
    let (recipe, plan) = (attaching.recipe, attaching.plan);
    let subject = record
        .tags
        .iter()
        .find_map(|tag| tag.pushed.clone())
        .expect("a push records the digest of each tag");
    let archive = plan
        .context
        .archive()
        .expect("a build assembles its context into a file");
    let files = crate::context::overlays::overlay_files(archive, &recipe.pins.overlay_paths())
        .with_context(|| format!("cannot read the build context {}", archive.display()))?;
    let pins_text = recipe
        .pins_text()
        .with_context(|| format!("cannot read {}", recipe.pins_path().display()))?;
    let key = attaching.options.sign.as_ref();
    let mut documents = vec![(
        crate::attest::cosign::Kind::Record,
        crate::attest::record::Document::new(record, pins_text, files.clone()).attachment(key),
    )];
    let mut bundled = Vec::new();
    if let Some(key) = key {
        let facts = facts(attaching, record, &subject, &files)?;
        let signed = attach::documents(&facts, key);
        bundled = attach::bundles(&signed, &facts, key);
        documents.extend(signed);
    }
    let reference = &record.image.repository;
    let (client, _) = crate::registry::RegistryClient::for_recipe(
        reference,
        attaching.options.insecure_registries.clone(),
    )?;
    let remote = crate::registry::RemoteRepository::from(reference);
    let verifying = key.map(crate::attest::keys::SigningKey::verifying_key);
    let what = if key.is_some() {
        ", the signature and the attestations"
    } else {
        ""
    };
    let mut attached =
        attach::upload(&client, &remote, &subject, &documents, verifying.as_ref())
            .with_context(|| format!("cannot attach the build record{what} of {reference}@{subject}; the push stands and forge.lock records it without them"))?;
    if let Some(verifying) = &verifying {
        attached.extend(
            attach::upload_bundles(&client, &remote, &subject, &bundled, verifying)
                .with_context(|| format!("cannot attach the signature and the provenance bundles of {reference}@{subject}; the push stands and forge.lock records it without them"))?,
        );
    }
    for attachment in &attached {
        let place = if !attachment.kind.is_referrer() {
            format!("{reference}:{} {}", attachment.tag, attachment.manifest)
        } else if attachment.tag.is_empty() {
            format!("{reference}@{} (the referrers API)", attachment.manifest)
        } else {
            format!(
                "{reference}@{} (referrers tag {})",
                attachment.manifest, attachment.tag
            )
        };
        printer.status(
            "Attached",
            format_args!("{} {place}", attachment.kind.noun()),
        );
    }
    record.attachments = attached;
    record.write(&recipe.root)?;
    recipe.lock_written();
    Ok(())
}

/// What the SBOM and the provenance of the pushed manifest `subject` say.
fn facts(
    attaching: &Attaching<'_>,
    record: &crate::lock::Record,
    subject: &crate::types::oci::Digest,
    files: &[crate::context::overlays::ExpectedFile],
) -> anyhow::Result<crate::attest::Facts> {
    let recipe = attaching.recipe;
    let patches = record
        .patches
        .iter()
        .map(|patch| {
            let path = recipe.files.join(&patch.file);
            crate::attest::PatchFact::read(patch.clone(), &path)
                .with_context(|| format!("cannot read the patch {}", path.display()))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    // The patch files are read again from the recipe: they must still be the ones built.
    let now = crate::context::digest_of(&recipe.files, &recipe.series_paths())?;
    anyhow::ensure!(
        now == record.inputs.patches,
        "the patch series changed while forge built ({} when the build started, {now} now); the push stands and forge.lock records it; sign it with an unchanged series: `forge build --push --sign` again",
        record.inputs.patches
    );
    Ok(crate::attest::Facts {
        repository: record.image.repository.clone(),
        manifest: subject.clone(),
        image_id: record.image.id.clone(),
        platform: record.image.platform.clone(),
        tags: record.tags.iter().map(|tag| tag.name.clone()).collect(),
        base: crate::attest::BaseFact {
            image: record.base.image.clone(),
            digest: record.base.digest.clone(),
            id: record.base.id.clone(),
        },
        pins: attach::pin_facts(recipe.pins.pins.values()),
        patches,
        overlays: attach::overlay_facts(recipe, record, files),
        scripts: recipe
            .pins
            .scripts
            .iter()
            .map(|script| {
                let path = recipe.files.join(script.file.as_str());
                let bytes = std::fs::read(&path)
                    .with_context(|| format!("cannot read the patch script {}", path.display()))?;
                let sha256 = <sha2::Sha256 as sha2::Digest>::digest(&bytes);
                Ok((script.file.to_string(), hex::encode(sha256)))
            })
            .collect::<anyhow::Result<Vec<_>>>()?,
        donors: recipe
            .pins
            .donors
            .iter()
            .map(|(name, donor)| (name.to_string(), donor.image.clone(), donor.digest.clone()))
            .collect(),
        inputs: record
            .inputs
            .named()
            .iter()
            .map(|(name, digest)| ((*name).to_owned(), digest.to_string()))
            .collect(),
        build_args: pipeline::build_args(recipe, record.image.revision.as_deref()),
        builder: attaching.options.builder,
        forge_version: env!("CARGO_PKG_VERSION").to_owned(),
        daemon_version: attaching.daemon.clone(),
        started: attaching
            .started
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        finished: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        ci: crate::attest::CiRun::from_environment(),
    })
}
