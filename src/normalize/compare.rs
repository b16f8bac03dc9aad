//! Two images compared: their configs key by key, their layers by diff id, and in each layer
//! that differs, every entry by path (type, mode, owner, mtime, link target, size and sha256),
//! so that a step writing the clock or a random name is found in one comparison.

use std::collections::BTreeMap;
use std::io::{self, Read};

use serde_json::Value;

use super::NormalizeError;
use super::layer::Hashing;
use super::manifest::Descriptor;
use crate::conduit::Stored;
use crate::types::oci::Digest;

/// An image read for a comparison: its config, and each layer's diff id with, above the base,
/// its blob.
#[derive(Debug, Clone)]
pub struct Image {
    /// The config's bytes.
    pub config: Vec<u8>,
    /// Each layer, bottom first: its diff id, and its blob when the daemon sent it.
    pub layers: Vec<(Digest, Option<(Stored, Descriptor)>)>,
}

/// One entry of a layer, as far as a comparison cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// `file`, `folder`, `link`, `hardlink`, `device` or `fifo`.
    pub kind: &'static str,
    /// Permission bits.
    pub mode: u32,
    /// Owner and group, by number.
    pub owner: (u64, u64),
    /// Seconds since 1970.
    pub mtime: u64,
    /// Bytes of a file; 0 for anything else.
    pub size: u64,
    /// The sha256 of a file's bytes.
    pub sha256: Option<Digest>,
    /// A link's target.
    pub link: Option<String>,
}

impl Entry {
    /// What people read of it: `file 29 B sha256:…`, `link -> target`, and its mode, owner and
    /// mtime when `full`.
    pub fn describe(&self, full: bool) -> String {
        let mut text = match (&self.sha256, &self.link) {
            (Some(sha256), _) => format!("{} {} B {sha256}", self.kind, self.size),
            (None, Some(link)) => format!("{} -> {link}", self.kind),
            (None, None) => self.kind.to_owned(),
        };
        if full {
            text.push_str(&format!(
                ", mode {:o}, owner {}:{}, mtime {}",
                self.mode, self.owner.0, self.owner.1, self.mtime
            ));
        }
        text
    }
}

/// Every entry of the layer tar `layer`, by path (a later entry for a path replaces an earlier
/// one, as extraction does).
pub fn entries(layer: impl Read) -> io::Result<BTreeMap<String, Entry>> {
    let mut archive = tar::Archive::new(layer);
    let mut found = BTreeMap::new();
    for entry in archive.entries()? {
        let mut entry = entry?;
        let header = entry.header().clone();
        let kind = header.entry_type();
        let name = match kind {
            kind if kind.is_file() => "file",
            tar::EntryType::Directory => "folder",
            tar::EntryType::Symlink => "link",
            tar::EntryType::Link => "hardlink",
            tar::EntryType::Char | tar::EntryType::Block => "device",
            tar::EntryType::Fifo => "fifo",
            _ => "other",
        };
        let path = format!(
            "/{}",
            String::from_utf8_lossy(&entry.path_bytes()).trim_end_matches('/')
        );
        let link = entry
            .link_name_bytes()
            .map(|link| String::from_utf8_lossy(&link).into_owned());
        let sha256 = if kind.is_file() {
            let mut hashing = Hashing::new(io::sink());
            io::copy(&mut entry, &mut hashing)?;
            Some(hashing.finish().0)
        } else {
            None
        };
        found.insert(
            path,
            Entry {
                kind: name,
                mode: header.mode()?,
                owner: (header.uid()?, header.gid()?),
                mtime: header.mtime()?,
                size: if kind.is_file() { entry.size() } else { 0 },
                sha256,
                link,
            },
        );
    }
    Ok(found)
}

/// One path whose entry differs: on one side only, or on both with different contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryDifference {
    /// Its path in the image.
    pub path: String,
    /// The entry in the recorded image's layer.
    pub recorded: Option<Entry>,
    /// The entry in the rebuilt image's layer.
    pub rebuilt: Option<Entry>,
}

/// The entries of `recorded` and `rebuilt` that differ, by path.
pub fn entry_differences(
    recorded: &BTreeMap<String, Entry>,
    rebuilt: &BTreeMap<String, Entry>,
) -> Vec<EntryDifference> {
    let mut paths: Vec<&String> = recorded.keys().chain(rebuilt.keys()).collect();
    paths.sort();
    paths.dedup();
    paths
        .into_iter()
        .filter(|path| recorded.get(*path) != rebuilt.get(*path))
        .map(|path| EntryDifference {
            path: path.clone(),
            recorded: recorded.get(path).cloned(),
            rebuilt: rebuilt.get(path).cloned(),
        })
        .collect()
}

/// How one layer of two images compares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerDifference {
    /// Its place in the image, from 1.
    pub index: usize,
    /// The step that made it, from the recorded image's history, as the Dockerfile wrote it
    /// (`instruction`).
    pub step: Option<String>,
    /// The recorded diff id; `None` when the recorded image has fewer layers.
    pub recorded: Option<Digest>,
    /// The rebuilt diff id; `None` when the rebuilt image has fewer layers.
    pub rebuilt: Option<Digest>,
    /// The entries that differ.
    pub entries: Vec<EntryDifference>,
}

/// How two images compare.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Comparison {
    /// Each config field that differs (`config.Labels.NAME`, `created`): the recorded and the
    /// rebuilt value, as JSON text.
    pub config: Vec<(String, String, String)>,
    /// Each layer that differs.
    pub layers: Vec<LayerDifference>,
}

impl Comparison {
    /// Where the images differ, in one line: each layer with the step that made it and up to
    /// three of its paths (`in layer 6 (RUN …): /a, /b`), else the config fields; `None` when
    /// they do not differ.
    pub fn summary(&self) -> Option<String> {
        const SHOWN: usize = 3;
        let mut parts = Vec::new();
        for layer in &self.layers {
            let made = layer
                .step
                .as_deref()
                .map(|made| format!(" ({made})"))
                .unwrap_or_default();
            let mut paths: Vec<&str> = layer
                .entries
                .iter()
                .take(SHOWN)
                .map(|entry| entry.path.as_str())
                .collect();
            let more = layer.entries.len().saturating_sub(SHOWN);
            let more = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            if paths.is_empty() {
                paths.push("its entries' metadata");
            }
            parts.push(format!(
                "layer {}{made}: {}{more}",
                layer.index,
                paths.join(", ")
            ));
        }
        if parts.is_empty() && !self.config.is_empty() {
            let fields: Vec<&str> = self
                .config
                .iter()
                .map(|(field, ..)| field.as_str())
                .collect();
            parts.push(format!("the config: {}", fields.join(", ")));
        }
        (!parts.is_empty()).then(|| format!("they differ in {}", parts.join("; ")))
    }
}

/// Compares the images read as `recorded` and `rebuilt`, whose layers not sent (the base's) are
/// equal by diff id.
pub fn compare(recorded: &Image, rebuilt: &Image) -> Result<Comparison, NormalizeError> {
    let recorded_config = parse(&recorded.config)?;
    let rebuilt_config = parse(&rebuilt.config)?;
    let steps = layer_steps(&recorded_config);
    let mut config = Vec::new();
    let (mut left, mut right) = (recorded_config, rebuilt_config);
    // The diff ids are compared layer by layer below, not as one list.
    for side in [&mut left, &mut right] {
        if let Some(rootfs) = side.get_mut("rootfs").and_then(Value::as_object_mut) {
            rootfs.remove("diff_ids");
        }
    }
    flat_differences("", &left, &right, &mut config);
    let mut layers = Vec::new();
    let count = recorded.layers.len().max(rebuilt.layers.len());
    for index in 0..count {
        let one = recorded.layers.get(index);
        let two = rebuilt.layers.get(index);
        if one.map(|layer| &layer.0) == two.map(|layer| &layer.0) {
            continue;
        }
        type Side<'a> = Option<&'a (Digest, Option<(Stored, Descriptor)>)>;
        let listed = |side: Side<'_>| -> Result<BTreeMap<String, Entry>, NormalizeError> {
            let Some((diff_id, Some((stored, descriptor)))) = side else {
                return Ok(BTreeMap::new());
            };
            let read = |source| NormalizeError::Layer {
                what: format!("layer {} ({diff_id})", index + 1),
                source,
            };
            entries(super::blob::open(stored, descriptor).map_err(read)?).map_err(read)
        };
        layers.push(LayerDifference {
            index: index + 1,
            step: steps.get(index).cloned().flatten(),
            recorded: one.map(|layer| layer.0.clone()),
            rebuilt: two.map(|layer| layer.0.clone()),
            entries: entry_differences(&listed(one)?, &listed(two)?),
        });
    }
    Ok(Comparison { config, layers })
}

fn parse(config: &[u8]) -> Result<Value, NormalizeError> {
    serde_json::from_slice(config)
        .map_err(|error| NormalizeError::Invalid(format!("an image config: {error}")))
}

/// The step that made each layer: the `created_by` of each history entry that is not an empty
/// layer, in order.
fn layer_steps(config: &Value) -> Vec<Option<String>> {
    config["history"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|entry| entry["empty_layer"] != Value::Bool(true))
        .map(|entry| entry["created_by"].as_str().map(instruction))
        .collect()
}

/// The leaves of two JSON values that differ, as `(path, left, right)`, objects walked by key.
fn flat_differences(
    path: &str,
    left: &Value,
    right: &Value,
    out: &mut Vec<(String, String, String)>,
) {
    if let (Value::Object(left), Value::Object(right)) = (left, right) {
        let mut keys: Vec<&String> = left.keys().chain(right.keys()).collect();
        keys.sort();
        keys.dedup();
        for key in keys {
            let at = if path.is_empty() {
                key.clone()
            } else {
                format!("{path}.{key}")
            };
            flat_differences(
                &at,
                left.get(key).unwrap_or(&Value::Null),
                right.get(key).unwrap_or(&Value::Null),
                out,
            );
        }
    } else if left != right {
        out.push((path.to_owned(), left.to_string(), right.to_string()));
    }
}

/// The widest step shown in a layer's row.
const STEP_WIDTH: usize = 60;

/// The Dockerfile instruction a history entry's `created_by` records, as the Dockerfile wrote
/// it: without BuildKit's build-argument prefix (`|2 A=1 B=2 /bin/sh -c`) and `# buildkit`
/// suffix, or the classic builder's `/bin/sh -c #(nop)`; cut to `STEP_WIDTH` characters.
pub fn instruction(created_by: &str) -> String {
    let text = created_by.trim();
    let text = text.strip_suffix("# buildkit").unwrap_or(text).trim_end();
    let text = match text.split_once("/bin/sh -c ") {
        Some((_, command)) => match command.strip_prefix("#(nop) ") {
            Some(instruction) => instruction.trim().to_owned(),
            None => format!("RUN {}", command.trim()),
        },
        None => text.to_owned(),
    };
    if text.chars().count() <= STEP_WIDTH {
        return text;
    }
    let cut: String = text.chars().take(STEP_WIDTH - 1).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::instruction;

    #[test]
    fn a_step_reads_as_the_dockerfile_wrote_it() {
        assert_eq!(
            instruction(
                "RUN |2 SOURCE_DATE_EPOCH=1783468800 APP_CHANNEL=stable /bin/sh -c date > /when # buildkit"
            ),
            "RUN date > /when"
        );
        assert_eq!(instruction("/bin/sh -c date > /when"), "RUN date > /when");
        assert_eq!(
            instruction("/bin/sh -c #(nop) COPY dir:0a1b in /opt/app/ "),
            "COPY dir:0a1b in /opt/app/"
        );
        assert_eq!(
            instruction("COPY overlays/app/ /opt/app/ # buildkit"),
            "COPY overlays/app/ /opt/app/"
        );
        let long = instruction(&format!("RUN {}", "x".repeat(100)));
        assert_eq!(long.chars().count(), 60);
        assert!(long.ends_with('…'));
    }
}
