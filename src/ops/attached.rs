//! The build record of an image named by reference, for the commands a tester runs with nothing
//! but that reference (and the lab's public key): `verify-digest REF`, `pull REF`, `report REF`.
//!
//! 1. Ask the image's registry for the manifest REF names now.
//! 2. Read the build record attached to that manifest (`attest::record`, under
//!    `sha256-HEX.record`): with a key, only one signed by it; without, whatever is there,
//!    trusted only as far as the registry is (said once).
//! 3. Check that the record is of that manifest and of REF's repository, and load the
//!    pins.toml it carries.
//!
//! Nothing is read from or written to the working folder.

use crate::attest::keys::VerifyingKey;
use crate::attest::record::{self, Document, FoundLayer, Signed};
use crate::attest::{attach, cosign};
use crate::diagnostics::CheckFailed;
use crate::lock::Record;
use crate::pins::Pins;
use crate::printer::Printer;
use crate::registry::{Registry as _, RegistryClient, RegistryError, RemoteRepository};
use crate::types::oci::RegistryHost;
use crate::types::oci::{Digest, ImageRef};

/// What the registry holds for a reference: the manifest it names and the record attached.
pub struct Attached {
    /// The reference as given.
    pub reference: ImageRef,
    /// Its repository on its registry.
    pub repository: RemoteRepository,
    /// A client for that registry, with the credentials `docker login` stored for it.
    pub client: RegistryClient,
    /// The manifest (or index) digest the reference names now.
    pub manifest: Digest,
    /// The record attached to it.
    pub document: Document,
    /// The pins.toml it carries, loaded.
    pub pins: Pins,
    /// Whether its signature was checked.
    pub signed: Signed,
}

impl Attached {
    /// The build record.
    pub fn record(&self) -> &Record {
        &self.document.record
    }

    /// Where the record came from, for messages: `the record attached to REF`.
    pub fn origin(&self) -> String {
        format!("the record attached to {}", self.reference)
    }
}

/// Reads the record attached to the manifest `reference` names; with `key`, one it signed.
/// `recipe_registry` is the registry of the recipe the command runs in, if it reads one:
/// `FORGE_REGISTRY_USER` and `FORGE_REGISTRY_PASSWORD` go to it (or to `FORGE_REGISTRY_HOST`)
/// only, never to `reference`'s registry because it is named.
pub fn fetch(
    reference: &ImageRef,
    key: Option<&VerifyingKey>,
    insecure_registries: &[RegistryHost],
    recipe_registry: Option<&str>,
    printer: &Printer,
) -> anyhow::Result<Attached> {
    let repository = RemoteRepository::of(reference);
    let client = RegistryClient::new(insecure_registries.to_vec())
        .with_credentials_for(&repository.registry, recipe_registry);
    let asked = reference
        .digest()
        .map(|digest| digest.as_str().to_owned())
        .or_else(|| reference.tag().map(ToOwned::to_owned))
        .unwrap_or_else(|| "latest".to_owned());
    printer.status("Asking", format_args!("{reference} of its registry"));
    let served = client
        .manifest(&repository, &asked)
        .map_err(|error| match error {
            RegistryError::NotFound { .. } => anyhow::Error::from(CheckFailed::new(
                format!("{reference}: the registry holds no such image"),
                "check the reference (repository and tag) against what was published",
            )),
            error => anyhow::Error::from(error).context(format!("cannot ask for {reference}")),
        })?;
    let manifest = served.claimed.clone().unwrap_or(served.received.clone());
    let layers = record_layers(&client, &repository, &manifest)
        .map_err(|error| anyhow::Error::from(error).context(format!("cannot read what is attached to {reference}")))?
        .ok_or_else(|| {
            CheckFailed::new(
                format!(
                    "{reference} names {manifest}, which has no build record attached ({repository}:{} does not exist)",
                    cosign::Kind::Record.tag(&manifest)
                ),
                "the tag names an image `forge build --push` did not publish (re-pointed by hand, or pushed by another tool): pull and verify the image the lab published, or ask for its reference",
            )
        })?;
    let (document, signed) = record::read(&layers, &manifest, key)
        .map_err(|refused| refused_record(reference, &manifest, &refused, key.is_some()))?;
    let pins = checked(reference, &manifest, &repository, &document)?;
    match signed {
        Signed::ByKey => printer.status(
            "Trusted",
            format_args!(
                "the build record of {reference}: signed by {}",
                key.map_or("", |key| key.origin.as_str())
            ),
        ),
        Signed::NotChecked => printer.warn(format_args!(
            "the build record of {reference} is trusted only as far as {} is: pass --key PUB.pem to require the lab's signature",
            repository.registry
        )),
    }
    Ok(Attached {
        reference: reference.clone(),
        repository,
        client,
        manifest,
        document,
        pins,
        signed,
    })
}

/// Why the record attached to `reference`'s manifest is not taken, with what to do.
fn refused_record(
    reference: &ImageRef,
    manifest: &Digest,
    refused: &record::RecordRefused,
    keyed: bool,
) -> CheckFailed {
    let hint = match refused {
        record::RecordRefused::Unsigned | record::RecordRefused::OtherKey { .. } if keyed => {
            "the image was not published with the lab's key: do not run it; ask the maintainer which key signs the lab's pushes"
        }
        _ => {
            "the record attached to the image is not one forge wrote for it: do not trust it; ask the maintainer to push again"
        }
    };
    CheckFailed::new(format!("{reference} ({manifest}): {refused}"), hint)
}

/// The pins of `document`, once it is known to be of `reference`'s repository.
fn checked(
    reference: &ImageRef,
    manifest: &Digest,
    repository: &RemoteRepository,
    document: &Document,
) -> anyhow::Result<Pins> {
    if RemoteRepository::from(&document.record.image.repository) != *repository {
        return Err(CheckFailed::new(
            format!(
                "{reference} ({manifest}) carries the record of an image published to {}, not to {repository}",
                document.record.image.repository
            ),
            "name the image in the repository it was published to",
        )
        .into());
    }
    let origin = format!("pins.toml in the record attached to {reference}");
    document.pins(&origin).map_err(|error| {
        CheckFailed::new(
            format!("{reference} ({manifest}): {error}"),
            "the record was written by a forge whose pins.toml this forge does not read: use the maintainer's forge version",
        )
        .into()
    })
}

/// The layers under the record tag of `manifest`, with their blobs; `None` when the tag does
/// not exist.
fn record_layers(
    client: &RegistryClient,
    repository: &RemoteRepository,
    manifest: &Digest,
) -> Result<Option<Vec<FoundLayer>>, RegistryError> {
    let Some(listed) = attach::listed(client, repository, cosign::Kind::Record, manifest)? else {
        return Ok(None);
    };
    let mut found = Vec::new();
    let mut budget = attach::Budget::new();
    for (index, layer) in listed.layers.into_iter().enumerate() {
        // A layer past the bounds is not fetched: the record is among the others or nowhere.
        if budget.take(index, layer.size).is_err() {
            continue;
        }
        found.push(FoundLayer {
            bytes: client.blob(repository, &layer.digest)?,
            media_type: layer.media_type,
        });
    }
    Ok(Some(found))
}

impl Attached {
    /// What the registry holds under each attachment tag of the manifest, in the order forge
    /// uploads them: the record, the SBOM, the provenance, the signature.
    pub fn listed(&self) -> anyhow::Result<Vec<crate::lock::AttachmentRecord>> {
        let mut listed = Vec::new();
        for kind in [
            cosign::Kind::Record,
            cosign::Kind::Sbom,
            cosign::Kind::Attestation,
            cosign::Kind::Signature,
        ] {
            let found = attach::listed(&self.client, &self.repository, kind, &self.manifest)
                .map_err(|error| {
                    anyhow::Error::from(error).context(format!(
                        "cannot ask for {}:{}",
                        self.repository,
                        kind.tag(&self.manifest)
                    ))
                })?;
            let Some(found) = found else { continue };
            let Some(first) = found.layers.first() else {
                continue;
            };
            listed.push(crate::lock::AttachmentRecord {
                kind,
                subject: self.manifest.clone(),
                tag: kind.tag(&self.manifest),
                manifest: found.manifest,
                content: first.digest.clone(),
            });
        }
        Ok(listed)
    }
}
