//! List every pin: kind, version or revision, group, and what to watch.

use serde_json::{Value, json};

use crate::pins::{AssertSource, GitSource, PythonSource, WheelSet};
use crate::pins::{Pin, Source};
use crate::printer::Printer;
use crate::recipe::Recipe;
use crate::table::table;

/// Prints the pins as a table on stdout (a commit cut to 12 hex digits), or as `{"pins": [...]}` with `--json`.
pub fn pin_list(recipe: &Recipe, printer: &Printer) {
    let pins: Vec<&Pin> = recipe.pins.pins.values().collect();
    if printer.is_json() {
        printer.json(&json!({ "pins": pins.iter().map(|pin| pin_json(pin)).collect::<Vec<_>>() }));
        return;
    }
    let rows: Vec<[String; 5]> = pins
        .iter()
        .map(|pin| {
            [
                pin.name.to_string(),
                pin.kind().to_string(),
                crate::table::short_ids(pin.current()),
                pin.group
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_else(|| "-".to_owned()),
                source_summary(pin),
            ]
        })
        .collect();
    printer.stdout(&table(
        ["NAME", "KIND", "VERSION", "GROUP", "SOURCE"],
        &rows,
    ));
}

fn source_summary(pin: &Pin) -> String {
    let unhashed = pin.unhashed().len();
    let mut summary = match &pin.source {
        Source::Python(PythonSource {
            package,
            install: true,
            ..
        }) if unhashed > 0 => format!("{package} (no sha256)"),
        Source::Python(PythonSource {
            package,
            install: true,
            ..
        }) => package.to_string(),
        Source::Python(PythonSource {
            package,
            install: false,
            ..
        }) => format!("{package} (in base, not installed)"),
        Source::Wheels(WheelSet { wheels, url, .. }) => {
            let packages = wheels
                .iter()
                .map(|wheel| wheel.package.to_string())
                .collect::<Vec<_>>()
                .join(" + ");
            let by = if url.is_some() { " by URL" } else { "" };
            match unhashed {
                0 => format!("{packages}{by}"),
                unhashed => format!("{packages}{by} ({unhashed} without sha256)"),
            }
        }
        Source::Git(GitSource { url, branch, rev }) => {
            let branch = branch
                .as_ref()
                .map(|branch| format!(" {branch}"))
                .unwrap_or_default();
            let note = if rev.is_full() {
                ""
            } else {
                " (short rev: mutable-looking)"
            };
            format!("{url}{branch}{note}")
        }
        Source::Assert(AssertSource { probe, .. }) => {
            format!("in base, asserted by the {probe} probe")
        }
    };
    if let Some(denied) = pin.deny.first() {
        summary.push_str(&format!("; never {} ({})", denied.version, denied.reason));
    }
    summary
}

fn pin_json(pin: &Pin) -> Value {
    let mut value = json!({
        "name": pin.name.as_str(),
        "kind": pin.kind(),
        "group": pin.group.as_ref().map(|group| group.as_str()),
        "module": pin.module.as_ref().map(|module| module.as_str()),
        "deny": pin.deny.iter().map(|denied| json!({ "version": denied.version.as_str(), "reason": denied.reason.as_str() })).collect::<Vec<_>>(),
        "allow": pin.allow.as_ref().map(|allow| allow.as_str()),
    });
    let fields = match &pin.source {
        Source::Python(PythonSource {
            package,
            version,
            install,
            index,
            shim,
            files,
        }) => json!({
            "package": package.as_str(),
            "version": version.as_str(),
            "install": install,
            "index": index.as_ref().map(|index| index.as_str()),
            "shim": shim.as_ref().map(|shim| json!({ "file": shim.file.as_str(), "module": shim.module.as_str() })),
            "files": files_json(files),
        }),
        Source::Wheels(WheelSet {
            version,
            wheels,
            url,
            ..
        }) => {
            let mut fields = json!({
                "version": version.as_str(),
                "wheels": wheels.iter().map(|wheel| {
                    let mut fields = json!({
                        "package": wheel.package.as_str(),
                        "version": wheel.version(version),
                        "index": wheel.index.as_ref().map(|index| index.as_str()),
                    });
                    if let Some(download) = wheel.url(url.as_ref(), version) {
                        fields["url"] = json!(download.as_str());
                        fields["sha256"] = json!(wheel.sha256.as_ref().map(|hash| hash.as_str()));
                    } else {
                        fields["files"] = files_json(&wheel.files);
                    }
                    fields
                }).collect::<Vec<_>>(),
            });
            if let Some(url) = url {
                fields["url"] = json!(url.as_str());
            }
            fields
        }
        Source::Git(GitSource { url, branch, rev }) => json!({
            "url": url.as_str(),
            "branch": branch.as_ref().map(|branch| branch.as_str()),
            "rev": rev.as_str(),
            "rev_is_full": rev.is_full(),
        }),
        Source::Assert(AssertSource { probe, version }) => {
            json!({ "probe": probe, "version": version.as_str(), "install": false })
        }
    };
    if let (Value::Object(target), Value::Object(extra)) = (&mut value, fields) {
        target.extend(extra);
    }
    value
}

/// Recorded index files as `[{ "file", "sha256" }]`.
fn files_json(files: &[crate::pins::HashedFile]) -> Value {
    files
        .iter()
        .map(|file| json!({ "file": file.file.as_str(), "sha256": file.sha256.as_str() }))
        .collect()
}
