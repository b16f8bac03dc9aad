//! The image config as a function of the image's content: the engine's config in, the config
//! forge publishes out.
//!
//! Kept: what the image specification defines (`architecture`, `os`, `os.version`,
//! `os.features`, `variant`, `author`, `config`, `rootfs`, `history`, `created`), with the new
//! diff ids. Dropped: what says where or how it was built rather than what it is (`container`,
//! `container_config`, `docker_version`, BuildKit's cache and build-info metadata, and anything
//! else an engine adds), and in `config` the builder's `Hostname`, `Domainname` and `Image`
//! (the classic builder's intermediate image). Every timestamp later than the epoch becomes the
//! epoch. The bytes are compact JSON with keys in byte order, so equal configs are equal bytes.

use serde_json::{Map, Value};

use super::NormalizeError;
use crate::types::oci::Digest;

/// The top-level keys the image specification defines; every other key is dropped.
const SPECIFIED: [&str; 10] = [
    "architecture",
    "author",
    "config",
    "created",
    "history",
    "os",
    "os.features",
    "os.version",
    "rootfs",
    "variant",
];

/// Keys of `config` that name the machine or the builder, emptied.
const BUILDER_FIELDS: [&str; 3] = ["Hostname", "Domainname", "Image"];

/// The normalized config of `config`, whose layers are now `diff_ids`, with timestamps clamped
/// to `epoch` (seconds since 1970).
pub fn normalize(
    config: &[u8],
    diff_ids: &[Digest],
    epoch: u64,
) -> Result<Vec<u8>, NormalizeError> {
    let invalid = |what: String| NormalizeError::Invalid(format!("the image's config: {what}"));
    let value: Value =
        serde_json::from_slice(config).map_err(|error| invalid(error.to_string()))?;
    let Value::Object(mut fields) = value else {
        return Err(invalid("not a JSON object".to_owned()));
    };
    fields.retain(|key, _| SPECIFIED.contains(&key.as_str()));
    clamp_field(&mut fields, "created", epoch);
    if let Some(Value::Array(history)) = fields.get_mut("history") {
        for entry in history {
            if let Value::Object(entry) = entry {
                clamp_field(entry, "created", epoch);
            }
        }
    }
    if let Some(Value::Object(run)) = fields.get_mut("config") {
        for key in BUILDER_FIELDS {
            if let Some(field) = run.get_mut(key) {
                *field = Value::String(String::new());
            }
        }
    }
    let Some(Value::Object(rootfs)) = fields.get_mut("rootfs") else {
        return Err(invalid("no rootfs".to_owned()));
    };
    rootfs.insert(
        "diff_ids".to_owned(),
        Value::Array(
            diff_ids
                .iter()
                .map(|digest| Value::String(digest.to_string()))
                .collect(),
        ),
    );
    Ok(serde_json::to_vec(&Value::Object(fields)).expect("JSON serializes"))
}

/// Clamps the RFC 3339 timestamp at `key` to `epoch`; a value that does not read as one is
/// left as it is.
fn clamp_field(fields: &mut Map<String, Value>, key: &str, epoch: u64) {
    let Some(Value::String(text)) = fields.get_mut(key) else {
        return;
    };
    if let Some(clamped) = clamp(text, epoch) {
        *text = clamped;
    }
}

/// `text` clamped to `epoch`: `None` when it is at or before the epoch (or is no timestamp),
/// else the epoch as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn clamp(text: &str, epoch: u64) -> Option<String> {
    let time = chrono::DateTime::parse_from_rfc3339(text).ok()?;
    let limit = chrono::DateTime::from_timestamp(i64::try_from(epoch).ok()?, 0)?;
    (time > limit).then(|| limit.format("%Y-%m-%dT%H:%M:%SZ").to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-07-08T00:00:00Z.
    const EPOCH: u64 = 1_783_468_800;

    /// A config as the classic builder writes it, trimmed.
    const CLASSIC: &str = r#"{"architecture":"amd64","config":{"Hostname":"","Domainname":"","Env":["PATH=/bin"],"Image":"sha256:f22fc1973c91f73f99ff97d3a8d0a30821ce30ad9bdbd873bab218e90253db4d","Labels":{"a":"b"}},"container":"aa11c803a75c","container_config":{"Hostname":"aa11c803a75c"},"created":"2026-12-02T16:22:29.5Z","docker_version":"20.10.24+dfsg1","history":[{"created":"2026-07-01T10:00:00Z","comment":"base"},{"created":"2026-12-02T16:22:28.1Z","created_by":"/bin/sh -c x"}],"moby.buildkit.cache.v0":"e30=","os":"linux","rootfs":{"type":"layers","diff_ids":["sha256:1111111111111111111111111111111111111111111111111111111111111111","sha256:2222222222222222222222222222222222222222222222222222222222222222"]}}"#;

    #[test]
    fn only_what_the_image_is_stays_and_times_are_clamped() {
        let ids = [Digest::filled('1'), Digest::filled('3')];
        let out = normalize(CLASSIC.as_bytes(), &ids, EPOCH).unwrap();
        let value: Value = serde_json::from_slice(&out).unwrap();
        let keys: Vec<&String> = value.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "architecture",
                "config",
                "created",
                "history",
                "os",
                "rootfs"
            ]
        );
        assert_eq!(value["created"], "2026-07-08T00:00:00Z");
        assert_eq!(
            value["history"][0]["created"], "2026-07-01T10:00:00Z",
            "earlier times stay"
        );
        assert_eq!(value["history"][1]["created"], "2026-07-08T00:00:00Z");
        assert_eq!(value["config"]["Image"], "");
        assert_eq!(value["config"]["Labels"]["a"], "b");
        assert_eq!(value["rootfs"]["diff_ids"][1], Digest::filled('3').as_str());
        // Compact, keys in byte order: the same config is the same bytes.
        assert_eq!(out, serde_json::to_vec(&value).unwrap());
        let text = String::from_utf8(out).unwrap();
        assert!(!text.contains('\n') && !text.contains("\": "), "{text}");
    }

    #[test]
    fn key_order_and_spacing_of_the_input_do_not_matter() {
        let ids = [Digest::filled('1'), Digest::filled('2')];
        let spaced =
            serde_json::to_string_pretty(&serde_json::from_str::<Value>(CLASSIC).unwrap()).unwrap();
        assert_eq!(
            normalize(CLASSIC.as_bytes(), &ids, EPOCH).unwrap(),
            normalize(spaced.as_bytes(), &ids, EPOCH).unwrap()
        );
    }

    #[test]
    fn clamping_reads_any_offset_and_keeps_what_is_not_a_time() {
        assert_eq!(clamp("2026-07-08T02:00:00+03:00", EPOCH), None);
        assert_eq!(
            clamp("2026-07-08T02:00:00+01:00", EPOCH).as_deref(),
            Some("2026-07-08T00:00:00Z")
        );
        assert_eq!(clamp("yesterday", EPOCH), None);
    }
}
