//! Lanes: a recipe that varies another one. A lane's pins.toml starts with `[lane] of = "DIR"`
//! (the folder of the recipe it varies) and holds only what it changes; forge lays it over that
//! recipe's pins.toml and loads the result as one recipe, whose files (templates, overlays,
//! patch series) are read in the other recipe's folder. The lane's folder keeps its own
//! forge.lock.
//!
//! How the lane's values are laid over the other recipe's, table by table:
//! - tables merge key by key, and any other value (a string, an array, `[[overlays]]`) is
//!   replaced whole;
//! - `[image.tags]` must be written, and is the lane's own: a lane never names an immutable tag
//!   of the recipe it varies, and an experimental lane never one of its moving tags either (a
//!   variant that does is promoted: it takes those tags over);
//! - `[pins.NAME]` with a `kind` is a pin of the lane's own (added, or replacing the other's
//!   whole); without one it changes keys of the other recipe's pin, which must have it;
//! - `[render]` stays with the recipe that commits it, and a lane of a lane is refused.
//!
//! An error in the laid-over text is placed where its value was written: in the lane's file
//! when the lane wrote it, else in the other recipe's.

use std::ops::Range;
use std::path::{Path, PathBuf};

use toml_edit::{DocumentMut, Item, TableLike};

use super::load::LoadError;
use crate::location::Location;

/// The table that makes a pins.toml a lane.
pub const LANE_TABLE: &str = "lane";

/// A lane's pins.toml laid over the recipe it varies.
#[derive(Debug)]
pub struct Layered {
    /// The folder of the recipe it varies, where the recipe's files are read.
    pub files: PathBuf,
    /// The recipe as one pins.toml: the other recipe's with the lane's values laid over it.
    pub text: String,
    /// The other recipe's pins.toml, and its text.
    pub baseline: (PathBuf, String),
}

/// The text of one pins.toml and where it was read.
struct Source<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Source<'_> {
    fn error(&self, span: Option<Range<usize>>, message: String, hint: &str) -> LoadError {
        LoadError::Invalid {
            location: Location::from_offset(
                self.path,
                self.text,
                span.map_or(0, |span| span.start),
            ),
            message,
            hint: hint.to_owned(),
        }
    }

    fn parsed(&self) -> Result<toml_edit::Document<String>, LoadError> {
        toml_edit::Document::parse(self.text.to_owned()).map_err(|error| {
            self.error(
                error.span(),
                error.message().trim_end().to_owned(),
                "fix the TOML at that position; nothing was rendered",
            )
        })
    }
}

/// When `text` (the pins.toml at `path`) is a lane: the other recipe's folder, as `of` names it
/// relative to the lane's folder.
pub fn varied_folder(path: &Path, text: &str) -> Option<PathBuf> {
    let document = text.parse::<DocumentMut>().ok()?;
    let of = document.get(LANE_TABLE)?.get("of")?.as_str()?.to_owned();
    let folder = path.parent().unwrap_or(Path::new("."));
    Some(shortened(&crate::fs::in_folder(folder, &of)))
}

/// `path` with each `NAME/..` taken out, as people write it (`lanes/dspark/../..` is `.`): the
/// folder as messages name it. `..` is taken out only after a name, so a path above the start
/// keeps its leading `..`; a link inside it is resolved by the recipe's confinement check, which
/// reads the folder itself.
fn shortened(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut kept: Vec<Component<'_>> = Vec::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir if matches!(kept.last(), Some(Component::Normal(_))) => {
                kept.pop();
            }
            other => kept.push(other),
        }
    }
    if kept.is_empty() {
        PathBuf::from(".")
    } else {
        kept.iter().collect()
    }
}

/// Lays the lane at `path` (its pins.toml `text`) over the recipe in `files`.
pub fn layer(path: &Path, text: &str, files: &Path) -> Result<Layered, LoadError> {
    let lane = Source { path, text };
    let spans = lane.parsed()?;
    let of_span = spans
        .get(LANE_TABLE)
        .and_then(|table| table.get("of"))
        .and_then(Item::span);
    let baseline_path = crate::fs::in_folder(files, crate::recipe::PINS_FILE);
    let baseline_text = read(&baseline_path).map_err(|error| {
        let problem = if baseline_path.is_file() {
            format!("cannot read {}: {error}", baseline_path.display())
        } else {
            format!("there is no recipe at {}", baseline_path.display())
        };
        lane.error(
            of_span.clone(),
            format!("[lane] of: {problem}"),
            "`of` names the folder of the recipe this lane varies, relative to the lane's own folder (such as of = \"..\")",
        )
    })?;
    let baseline = Source {
        path: &baseline_path,
        text: &baseline_text,
    };
    let mut merged = baseline_text.parse::<DocumentMut>().map_err(|error| {
        baseline.error(
            error.span(),
            error.message().trim_end().to_owned(),
            "fix the TOML at that position; nothing was rendered",
        )
    })?;
    if merged.contains_key(LANE_TABLE) {
        return Err(lane.error(
            of_span,
            format!("[lane] of: {} is itself a lane", baseline_path.display()),
            "name the recipe that lane varies: a lane varies a recipe, not another lane",
        ));
    }
    // The committed render is the other recipe's own Dockerfile, not the lane's.
    merged.remove("render");
    let values = text
        .parse::<DocumentMut>()
        .expect("the lane's text parsed above");
    lay_over(&lane, &spans, &baseline, &mut merged, &values)?;
    Ok(Layered {
        files: files.to_owned(),
        text: merged.to_string(),
        baseline: (baseline_path.clone(), baseline_text.clone()),
    })
}

fn read(path: &Path) -> std::io::Result<String> {
    let mut file = crate::fs::open_regular(path).map_err(std::io::Error::other)?;
    let mut text = String::new();
    std::io::Read::read_to_string(&mut file, &mut text)?;
    Ok(text)
}

/// The lane's top-level tables laid over the other recipe's, by the rules of the module.
fn lay_over(
    lane: &Source<'_>,
    spans: &toml_edit::Document<String>,
    baseline: &Source<'_>,
    merged: &mut DocumentMut,
    values: &DocumentMut,
) -> Result<(), LoadError> {
    let tags_span = spans.get("image").and_then(|image| image.get("tags"));
    let Some(tags) = values.get("image").and_then(|image| image.get("tags")) else {
        return Err(lane.error(
            spans.get(LANE_TABLE).and_then(Item::span),
            "a lane without [image.tags]".to_owned(),
            "give the lane tags of its own, such as moving = [\"experimental-NAME\"] and immutable = [\"{{ date }}-NAME\"]: it would otherwise re-point the tags of the recipe it varies",
        ));
    };
    let experimental = values
        .get(LANE_TABLE)
        .and_then(|table| table.get("experimental"))
        .and_then(Item::as_bool)
        .unwrap_or(false);
    let baseline_tags = merged.get("image").and_then(|image| image.get("tags"));
    for (kind, list) in ["moving", "immutable"].map(|kind| (kind, tags.get(kind))) {
        let Some(array) = list.and_then(Item::as_array) else {
            continue;
        };
        for (index, tag) in array.iter().enumerate() {
            let Some(tag) = tag.as_str() else { continue };
            let theirs = |which: &str| {
                baseline_tags
                    .and_then(|tags| tags.get(which))
                    .and_then(Item::as_array)
                    .is_some_and(|array| array.iter().any(|other| other.as_str() == Some(tag)))
            };
            let span = tags_span
                .and_then(|tags| tags.get(kind))
                .and_then(Item::as_array)
                .and_then(|array| array.get(index))
                .and_then(toml_edit::Value::span);
            if theirs("moving") && experimental {
                return Err(lane.error(
                    span,
                    format!("the experimental lane's tag `{tag}` is a moving tag of {}", baseline.path.display()),
                    "an experimental lane never takes the moving tags of the recipe it varies (testers follow them to the baseline): name one of the lane's own, such as experimental-NAME",
                ));
            }
            if theirs("immutable") {
                return Err(lane.error(
                    span,
                    format!("the lane's tag `{tag}` is an immutable tag of {}", baseline.path.display()),
                    "an immutable tag names one image forever, the one the recipe it varies builds: give the lane a dated tag of its own, such as {{ date }}-NAME",
                ));
            }
        }
    }
    for (key, item) in values.iter() {
        let span = spans.get(key).and_then(Item::span);
        match key {
            "render" => {
                return Err(lane.error(
                    spans.key(key).and_then(toml_edit::Key::span).or(span),
                    "[render] in a lane".to_owned(),
                    "the committed render belongs to the recipe that commits it; remove [render] from the lane",
                ));
            }
            "pins" => lay_pins(lane, spans, baseline, merged, item)?,
            "image" => {
                let image = merged
                    .entry("image")
                    .or_insert(toml_edit::table())
                    .as_table_like_mut()
                    .expect("[image] is a table: the recipe it varies loads");
                image.remove("tags");
                merge(
                    image,
                    item.as_table_like().into_iter().flat_map(TableLike::iter),
                );
            }
            _ => merge(merged.as_table_mut(), std::iter::once((key, item))),
        }
    }
    Ok(())
}

/// `[pins.NAME]` of the lane: with `kind`, the lane's own pin; else keys of the other's pin.
fn lay_pins(
    lane: &Source<'_>,
    spans: &toml_edit::Document<String>,
    baseline: &Source<'_>,
    merged: &mut DocumentMut,
    pins: &Item,
) -> Result<(), LoadError> {
    let Some(pins) = pins.as_table_like() else {
        merge(merged.as_table_mut(), std::iter::once(("pins", pins)));
        return Ok(());
    };
    let theirs = merged
        .entry("pins")
        .or_insert(toml_edit::table())
        .as_table_like_mut()
        .expect("[pins] is a table: the recipe it varies loads");
    for (name, pin) in pins.iter() {
        let own = pin
            .as_table_like()
            .is_none_or(|pin| pin.contains_key("kind"));
        if own {
            theirs.remove(name);
        } else if !theirs.contains_key(name) {
            let span = spans
                .get("pins")
                .and_then(|pins| pins.as_table_like())
                .and_then(|pins| pins.get_key_value(name))
                .and_then(|(key, _)| key.span());
            return Err(lane.error(
                span,
                format!(
                    "the lane changes pin `{name}`, which {} does not have",
                    baseline.path.display()
                ),
                "a lane changes the keys of a pin the recipe it varies has; to add a pin of the lane's own, give it a `kind` and every key its kind needs",
            ));
        }
        merge(theirs, std::iter::once((name, pin)));
    }
    Ok(())
}

/// Lays `items` into `into`: tables merge key by key, anything else replaces what was there.
fn merge<'a>(into: &mut dyn TableLike, items: impl Iterator<Item = (&'a str, &'a Item)>) {
    for (key, item) in items {
        match (
            into.get_mut(key).and_then(Item::as_table_like_mut),
            item.as_table_like(),
        ) {
            (Some(existing), Some(table)) if item.is_table() || item.is_inline_table() => {
                merge(existing, table.iter());
            }
            _ => {
                into.insert(key, item.clone());
            }
        }
    }
}

/// Where the value at `offset` of the laid-over text was written: in the lane's pins.toml when
/// the lane wrote the value there, else in the other recipe's.
pub fn origin(layered: &Layered, lane_path: &Path, lane_text: &str, offset: usize) -> Location {
    let (baseline_path, baseline_text) = &layered.baseline;
    let fallback = || Location::from_offset(lane_path, lane_text, 0);
    let Ok(merged) = toml_edit::Document::parse(layered.text.clone()) else {
        return fallback();
    };
    let path = key_path(merged.as_table(), offset);
    for (file, text) in [
        (lane_path, lane_text),
        (baseline_path.as_path(), baseline_text.as_str()),
    ] {
        let Ok(document) = toml_edit::Document::parse(text.to_owned()) else {
            continue;
        };
        if let Some(span) = span_of(document.as_item(), &path) {
            return Location::from_offset(file, text, span.start);
        }
    }
    fallback()
}

/// The keys (and array indexes) down to the innermost value whose span holds `offset`.
fn key_path(table: &dyn TableLike, offset: usize) -> Vec<String> {
    for (key, item) in table.iter() {
        let key_span = table
            .get_key_value(key)
            .and_then(|(key, _)| key.span())
            .is_some_and(|span| span.contains(&offset));
        let within = item.span().is_some_and(|span| span.contains(&offset));
        if key_span {
            return vec![key.to_owned()];
        }
        let mut path = vec![key.to_owned()];
        if let Some(inner) = item.as_table_like() {
            let deeper = key_path(inner, offset);
            if !deeper.is_empty() {
                path.extend(deeper);
                return path;
            }
        }
        if let Some(tables) = item.as_array_of_tables() {
            for (index, inner) in tables.iter().enumerate() {
                let deeper = key_path(inner, offset);
                if !deeper.is_empty() {
                    path.push(index.to_string());
                    path.extend(deeper);
                    return path;
                }
            }
        }
        if let Some(array) = item.as_array() {
            for (index, value) in array.iter().enumerate() {
                if value.span().is_some_and(|span| span.contains(&offset)) {
                    path.push(index.to_string());
                    return path;
                }
            }
        }
        if within {
            return path;
        }
    }
    Vec::new()
}

/// The span of the value at `path` in `item`, or of the deepest part of it that is there.
fn span_of(item: &Item, path: &[String]) -> Option<Range<usize>> {
    let Some((first, rest)) = path.split_first() else {
        return item.span();
    };
    let next = match item {
        Item::ArrayOfTables(tables) => first
            .parse::<usize>()
            .ok()
            .and_then(|index| tables.get(index))
            .map(|table| Item::Table(table.clone())),
        Item::Value(toml_edit::Value::Array(array)) => first
            .parse::<usize>()
            .ok()
            .and_then(|index| array.get(index))
            .map(|value| Item::Value(value.clone())),
        other => other.get(first.as_str()).cloned(),
    };
    span_of(&next?, rest)
}

/// `forge pin bump` in a lane: its pins move in the recipe it varies.
#[derive(Debug, thiserror::Error)]
#[error("{} is a lane of {of}: a lane's pins move in the recipe it varies", pins.display())]
pub struct BumpInLane {
    /// The lane's pins.toml.
    pub pins: PathBuf,
    /// `[lane] of`, as written.
    pub of: String,
}

impl crate::diagnostics::Advise for BumpInLane {
    fn advice(&self) -> crate::diagnostics::Advice {
        crate::diagnostics::Advice::Hint(format!(
            "bump it there (`forge -C {} pin bump NAME`), or with `forge pin bump NAME` at the workspace root, which lists the lane among the members it invalidates; nothing was changed",
            self.pins
                .parent()
                .map(|folder| crate::fs::in_folder(folder, &self.of))
                .unwrap_or_default()
                .display()
        ))
    }
}

crate::advised!(BumpInLane);
