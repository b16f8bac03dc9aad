//! List every pin: kind, version or revision, group, and what to watch.

use serde::Serialize;

use crate::pins::{Listed, Pin, PinKind};
use crate::printer::{Document, Printer};
use crate::recipe::Recipe;
use crate::table::table;

/// Prints the pins as a table on stdout (a commit cut to 12 hex digits), or as `{"pins": [...]}` with `--json`.
pub fn pin_list(recipe: &Recipe, printer: &Printer) {
    printer.document(&PinList {
        pins: recipe.pins.pins.values().map(ListedPin::of).collect(),
    });
}

/// `forge pin list` at a workspace root: every member's pins, the members in build order.
pub fn pin_list_workspace(order: &[&crate::workspace::Member], printer: &Printer) {
    printer.document(&FamilyPinList {
        members: order
            .iter()
            .map(|member| MemberPins {
                name: &member.name,
                path: &member.path,
                pins: member
                    .recipe
                    .pins
                    .pins
                    .values()
                    .map(ListedPin::of)
                    .collect(),
            })
            .collect(),
    });
}

/// `forge pin list`'s answer at a workspace root.
#[derive(Debug, Serialize)]
struct FamilyPinList<'a> {
    members: Vec<MemberPins<'a>>,
}

/// One member's pins.
#[derive(Debug, Serialize)]
struct MemberPins<'a> {
    name: &'a crate::workspace::MemberName,
    path: &'a std::path::Path,
    pins: Vec<ListedPin<'a>>,
}

impl Document for FamilyPinList<'_> {
    fn text(&self) -> Option<String> {
        let rows: Vec<[String; 6]> = self
            .members
            .iter()
            .flat_map(|member| {
                member.pins.iter().map(|pin| {
                    let [name, kind, version, group, source] = pin.row.clone();
                    [member.name.to_string(), name, kind, version, group, source]
                })
            })
            .collect();
        Some(table(
            ["MEMBER", "NAME", "KIND", "VERSION", "GROUP", "SOURCE"],
            &rows,
        ))
    }
}

/// `forge pin list`'s answer.
#[derive(Debug, Serialize)]
struct PinList<'a> {
    pins: Vec<ListedPin<'a>>,
}

/// One pin: what every pin has, then its kind's own fields.
#[derive(Debug, Serialize)]
struct ListedPin<'a> {
    name: &'a str,
    kind: PinKind,
    group: Option<&'a str>,
    module: Option<&'a str>,
    deny: Vec<ListedDenial<'a>>,
    allow: Option<&'a str>,
    #[serde(flatten)]
    source: Listed<'a>,
    /// The table's row, not printed with `--json`.
    #[serde(skip)]
    row: [String; 5],
}

/// A version the pin never moves to, and why.
#[derive(Debug, Serialize)]
struct ListedDenial<'a> {
    version: &'a str,
    reason: &'a str,
}

impl<'a> ListedPin<'a> {
    fn of(pin: &'a Pin) -> Self {
        ListedPin {
            name: pin.name.as_str(),
            kind: pin.kind(),
            group: pin.group.as_ref().map(|group| group.as_str()),
            module: pin.module.as_ref().map(|module| module.as_str()),
            deny: pin
                .deny
                .iter()
                .map(|denied| ListedDenial {
                    version: denied.version.as_str(),
                    reason: denied.reason.as_str(),
                })
                .collect(),
            allow: pin.allow.as_ref().map(|allow| allow.as_str()),
            source: pin.as_kind().listed(),
            row: [
                pin.name.to_string(),
                pin.kind().to_string(),
                crate::table::short_ids(pin.current()),
                pin.group
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_else(|| "-".to_owned()),
                source_summary(pin),
            ],
        }
    }
}

impl Document for PinList<'_> {
    fn text(&self) -> Option<String> {
        let rows: Vec<[String; 5]> = self.pins.iter().map(|pin| pin.row.clone()).collect();
        Some(table(["NAME", "KIND", "VERSION", "GROUP", "SOURCE"], &rows))
    }
}

fn source_summary(pin: &Pin) -> String {
    let mut summary = pin.as_kind().summary();
    if let Some(denied) = pin.deny.first() {
        summary.push_str(&format!("; never {} ({})", denied.version, denied.reason));
    }
    summary
}
