//! A command run on every member of a workspace in build order, its answers gathered into one
//! document: `{members: [{name, path, KEY: the member's document}]}`.

use anyhow::Context as _;
use serde::Serialize;

use crate::printer::{Document, Printer};
use crate::workspace::Member;

/// Runs `run` on each member of `order` with a printer that keeps the member's document, then
/// prints the family's: each member's document under `key`. The first member that fails stops
/// the rest, its error naming it.
pub fn each(
    order: &[&Member],
    verb: &str,
    key: &'static str,
    printer: &Printer,
    mut run: impl FnMut(&Member, &Printer) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut members = Vec::new();
    for member in order {
        printer.status(
            verb,
            format_args!("member {} ({})", member.name, member.path.display()),
        );
        let (kept_printer, kept) = printer.keeping();
        run(member, &kept_printer)
            .with_context(|| format!("member `{}` ({})", member.name, member.path.display()))?;
        let mut part = serde_json::Map::new();
        part.insert("name".to_owned(), member.name.as_str().into());
        part.insert("path".to_owned(), member.path.display().to_string().into());
        part.insert(key.to_owned(), kept.take().unwrap_or_default());
        members.push(serde_json::Value::Object(part));
    }
    printer.document(&Family { members });
    Ok(())
}

/// The family's answer: each member's part, in build order; each member's text was printed as
/// it came.
#[derive(Debug, Serialize)]
struct Family {
    members: Vec<serde_json::Value>,
}

impl Document for Family {
    fn text(&self) -> Option<String> {
        None
    }
}
