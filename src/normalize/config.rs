//! The image config as a function of the image's content: the engine's config in, the config
//! forge publishes out.
//!
//! Kept: what the image specification defines (`architecture`, `os`, `os.version`,
//! `os.features`, `variant`, `author`, `config`, `rootfs`, `history`, `created`), with the new
//! diff ids. Dropped: what says where or how it was built rather than what it is (`container`,
//! `container_config`, `docker_version`, BuildKit's cache and build-info metadata, and anything
//! else an engine adds), in `config` the builder's `Hostname`, `Domainname` and `Image` (the
//! classic builder's intermediate image), and every field that holds nothing (`null`, `false`,
//! `""`, `[]`, `{}`), which one engine writes and another leaves out (`"OnBuild": null`, the
//! classic builder's `"AttachStdin": false`). Times: the image's `created` and every history
//! entry of forge's steps (those after the base's own) are the epoch, whatever run or cache
//! made them; the base's entries keep theirs, clamped to the epoch. The bytes are compact JSON
//! with keys in byte order, so equal configs are equal bytes.

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

/// Keys of `config` that name the machine or the builder, dropped.
const BUILDER_FIELDS: [&str; 3] = ["Hostname", "Domainname", "Image"];

fn invalid(what: String) -> NormalizeError {
    NormalizeError::Invalid(format!("the image's config: {what}"))
}

/// The diff ids `config` names, bottom first.
pub fn diff_ids(config: &[u8]) -> Result<Vec<Digest>, NormalizeError> {
    #[derive(serde::Deserialize)]
    struct RootFs {
        diff_ids: Vec<Digest>,
    }
    #[derive(serde::Deserialize)]
    struct Config {
        rootfs: RootFs,
    }
    serde_json::from_slice::<Config>(config)
        .map(|config| config.rootfs.diff_ids)
        .map_err(|error| invalid(error.to_string()))
}

/// The normalized config of `config`, whose layers are now `diff_ids`, with the times of the
/// history entries after the base's `base_history` ones, and the image's own, `epoch` (seconds
/// since 1970).
pub fn normalize(
    config: &[u8],
    diff_ids: &[Digest],
    (epoch, base_history): (u64, usize),
) -> Result<Vec<u8>, NormalizeError> {
    let value: Value =
        serde_json::from_slice(config).map_err(|error| invalid(error.to_string()))?;
    let Value::Object(mut fields) = value else {
        return Err(invalid("not a JSON object".to_owned()));
    };
    fields.retain(|key, _| SPECIFIED.contains(&key.as_str()));
    let at_epoch = format_epoch(epoch)?;
    fields.insert("created".to_owned(), Value::String(at_epoch.clone()));
    if let Some(Value::Array(history)) = fields.get_mut("history") {
        for (index, entry) in history.iter_mut().enumerate() {
            let Value::Object(entry) = entry else {
                continue;
            };
            if index < base_history {
                clamp_field(entry, "created", epoch);
            } else {
                entry.insert("created".to_owned(), Value::String(at_epoch.clone()));
            }
            entry.retain(|_, value| !is_empty(value));
        }
    }
    if let Some(Value::Object(run)) = fields.get_mut("config") {
        for key in BUILDER_FIELDS {
            run.remove(key);
        }
        run.retain(|_, value| !is_empty(value));
    }
    fields.retain(|key, value| key == "config" || !is_empty(value));
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

/// Whether a value holds nothing: `null`, `false`, `""`, `[]` or `{}`.
fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null | Value::Bool(false) => true,
        Value::String(text) => text.is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(fields) => fields.is_empty(),
        _ => false,
    }
}

/// The epoch as `YYYY-MM-DDTHH:MM:SSZ`.
fn format_epoch(epoch: u64) -> Result<String, NormalizeError> {
    i64::try_from(epoch)
        .ok()
        .and_then(|seconds| chrono::DateTime::from_timestamp(seconds, 0))
        .map(|time| time.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .ok_or_else(|| invalid(format!("the epoch {epoch} is not a time")))
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
    fn only_what_the_image_is_stays_and_forge_steps_are_at_the_epoch() {
        let ids = [Digest::filled('1'), Digest::filled('3')];
        let out = normalize(CLASSIC.as_bytes(), &ids, (EPOCH, 1)).unwrap();
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
            "the base's times stay"
        );
        assert_eq!(value["history"][1]["created"], "2026-07-08T00:00:00Z");
        let run = value["config"].as_object().unwrap();
        assert_eq!(
            run.keys().collect::<Vec<_>>(),
            ["Env", "Labels"],
            "the builder's fields and the empty ones are gone"
        );
        assert_eq!(value["rootfs"]["diff_ids"][1], Digest::filled('3').as_str());
        // Compact, keys in byte order: the same config is the same bytes.
        assert_eq!(out, serde_json::to_vec(&value).unwrap());
        let text = String::from_utf8(out).unwrap();
        assert!(!text.contains('\n') && !text.contains("\": "), "{text}");
    }

    #[test]
    fn a_step_cached_from_another_day_gets_the_epoch_all_the_same() {
        let ids = [Digest::filled('1'), Digest::filled('2')];
        let earlier = CLASSIC.replace("2026-12-02T16:22:28.1Z", "2026-01-01T00:00:00Z");
        assert_eq!(
            normalize(CLASSIC.as_bytes(), &ids, (EPOCH, 1)).unwrap(),
            normalize(earlier.as_bytes(), &ids, (EPOCH, 1)).unwrap()
        );
    }

    /// The same BuildKit build's config as Docker 20.10 and as Docker 28.5's containerd store
    /// wrote it (trimmed): 20.10 adds `"OnBuild": null`, the classic builder of the containerd
    /// store leaves out every field the classic store writes empty.
    #[test]
    fn what_engines_write_empty_or_leave_out_gives_one_config() {
        let ids = [Digest::filled('1')];
        let twenty = r#"{"architecture":"amd64","config":{"Env":["PATH=/bin"],"Labels":{"a":"b"},"OnBuild":null,"AttachStdin":false,"Cmd":null,"Volumes":null,"WorkingDir":"","Entrypoint":null,"User":""},"created":"2026-12-07T02:08:09.4Z","history":[{"created":"2026-12-07T02:08:08.6Z","created_by":"COPY a /a # buildkit","comment":"buildkit.dockerfile.v0"}],"os":"linux","rootfs":{"type":"layers","diff_ids":[]}}"#;
        let containerd = r#"{"architecture":"amd64","config":{"Env":["PATH=/bin"],"Labels":{"a":"b"}},"created":"2026-12-07T02:08:26.9Z","history":[{"created":"2026-12-07T02:08:26.2Z","created_by":"COPY a /a # buildkit","comment":"buildkit.dockerfile.v0","empty_layer":false}],"os":"linux","rootfs":{"type":"layers","diff_ids":[]}}"#;
        assert_eq!(
            normalize(twenty.as_bytes(), &ids, (EPOCH, 0)).unwrap(),
            normalize(containerd.as_bytes(), &ids, (EPOCH, 0)).unwrap()
        );
    }

    #[test]
    fn key_order_and_spacing_of_the_input_do_not_matter() {
        let ids = [Digest::filled('1'), Digest::filled('2')];
        let spaced =
            serde_json::to_string_pretty(&serde_json::from_str::<Value>(CLASSIC).unwrap()).unwrap();
        assert_eq!(
            normalize(CLASSIC.as_bytes(), &ids, (EPOCH, 1)).unwrap(),
            normalize(spaced.as_bytes(), &ids, (EPOCH, 1)).unwrap()
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
