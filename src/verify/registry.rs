//! What the registry serves: each tag's manifest against the pushed digest and the recorded
//! image, an index's entry for each platform, and tags the registry does not hold.

use crate::lock::PlatformRecord;
use crate::registry::{Held, Manifest};
use crate::types::oci::Digest;

use super::check::{Check, Kind, MISSING, agreement};

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
            Some(place),
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

/// A recorded tag the registry does not hold (drift, not an unreachable registry): its
/// manifest and its image are both missing.
pub fn unserved(reference: &str, pushed: Option<&Digest>, recorded: &Digest) -> [Check; 2] {
    [
        Check::new(
            Kind::Registry,
            reference,
            pushed.map_or("a pushed digest (never pushed)", Digest::as_str),
            MISSING,
            false,
        ),
        registry_image(reference, recorded, None),
    ]
}

/// A multi-platform tag's index entry for one recorded platform other than the first (whose
/// entry `registry` checks): the manifest it names and the image that manifest holds, against
/// forge.lock's record of that platform. `manifest` and `image` are what the registry serves
/// (`None`: no entry, or a manifest it does not hold).
pub fn platform_entry(
    reference: &str,
    entry: &PlatformRecord,
    manifest: Option<&Digest>,
    image: Option<&Digest>,
) -> [Check; 2] {
    let subject = format!("{reference} ({})", entry.platform);
    [
        Check::compare(
            Kind::Platform,
            subject.clone(),
            entry.manifest.as_str(),
            manifest.map_or(MISSING, Digest::as_str),
        ),
        registry_image(&subject, &entry.id, image),
    ]
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
}
