//! List every pin: kind, version or revision, group, and what to watch.

use serde_json::{Value, json};

use crate::pins::Pin;
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
    let mut summary = pin.as_kind().summary();
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
    if let (Value::Object(target), Value::Object(extra)) = (&mut value, pin.as_kind().listed()) {
        target.extend(extra);
    }
    value
}
