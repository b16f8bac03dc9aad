//! `[fixes]`: what the recipe's pins and overlays are there to fix. Each fix names the step that
//! brings it (a pin, or an overlay's folder), the symptom an image without it shows, and a
//! Python expression that is true only when it is in place. The render ends that step with the
//! check (`pins::gate::for_fix`), `verify-digest --contents` runs it again in the built image,
//! and `forge report` prints the symptom → fix → check table.

use std::collections::BTreeMap;

use toml::Spanned;

use super::load::Loader;
use super::recipe::{Fix, FixedBy};
use super::schema::RawFix;
use super::{LoadError, Overlay, Pin};
use crate::types::recipe::{FixName, PinName};

impl Loader<'_> {
    /// The `[fixes]` table, each `by` resolved to a pin or an overlay of the recipe.
    pub(super) fn fixes(
        &self,
        raw: BTreeMap<FixName, Spanned<RawFix>>,
        pins: &BTreeMap<PinName, Pin>,
        overlays: &[Overlay],
    ) -> Result<Vec<Fix>, LoadError> {
        let mut fixes = Vec::new();
        for (name, raw) in raw {
            let raw = raw.into_inner();
            let by_text = raw.by.get_ref().trim_end_matches('/');
            let by = if let Some(pin) = pins.keys().find(|pin| pin.as_str() == by_text) {
                FixedBy::Pin(pin.clone())
            } else if let Some(overlay) = overlays
                .iter()
                .find(|overlay| overlay.from.as_str().trim_end_matches('/') == by_text)
            {
                FixedBy::Overlay(overlay.from.clone())
            } else {
                let mut known: Vec<&str> = pins.keys().map(PinName::as_str).collect();
                known.extend(overlays.iter().map(|overlay| overlay.from.as_str()));
                return Err(self.error(
                    raw.by.span(),
                    format!("fix `{name}`: by = \"{by_text}\" names no pin and no overlay folder"),
                    format!(
                        "name the pin or the overlay `from` folder whose step brings the fix: one of {}",
                        known.join(", ")
                    ),
                ));
            };
            fixes.push(Fix {
                name,
                by,
                symptom: raw.symptom,
                fix: raw.fix,
                check: raw.check,
            });
        }
        Ok(fixes)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::FixedBy;

    const RECIPE: &str = "[image]\nrepository = \"r\"\nplatform = \"linux/amd64\"\n[image.tags]\nmoving = [\"latest\"]\n[base]\nimage = \"busybox:1\"\n\
        [pins.lib]\nkind = \"python\"\npackage = \"lib-py\"\nmodule = \"lib\"\nversion = \"1.2.3\"\n";

    fn parse(fixes: &str) -> Result<crate::pins::Pins, crate::pins::LoadError> {
        crate::pins::parse(Path::new("pins.toml"), &format!("{RECIPE}{fixes}"))
    }

    #[test]
    fn a_fix_names_the_pin_that_brings_it() {
        let pins = parse(
            "[fixes.kwargs]\nby = \"lib\"\nsymptom = \"it's broken\"\nfix = \"lib 1.2.3\"\ncheck = \"'k' in inspect.signature(import_module('lib').f).parameters\"\n",
        )
        .unwrap();
        assert_eq!(pins.fixes[0].by, FixedBy::Pin("lib".parse().unwrap()));
        assert_eq!(pins.fixes[0].symptom.as_str(), "it's broken");
    }

    #[test]
    fn a_fix_by_nothing_the_recipe_has_is_refused_at_its_line() {
        let error = parse(
            "[fixes.kwargs]\nby = \"libb\"\nsymptom = \"s\"\nfix = \"f\"\ncheck = \"True\"\n",
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            error,
            "pins.toml:14:6: fix `kwargs`: by = \"libb\" names no pin and no overlay folder"
        );
    }

    #[test]
    fn a_check_that_could_escape_its_quotes_is_refused() {
        for check in ["\"x\"", "$(id)", "a\\nb", "`id`", "a\nb", " "] {
            let text = format!(
                "[fixes.kwargs]\nby = \"lib\"\nsymptom = \"s\"\nfix = \"f\"\ncheck = {}\n",
                toml::Value::from(check)
            );
            let error = parse(&text).unwrap_err().to_string();
            assert!(error.contains("invalid check"), "{check:?}: {error}");
        }
    }
}
