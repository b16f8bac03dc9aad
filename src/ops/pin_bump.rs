//! `forge pin bump NAME [--to VERSION]` against the real package index, git remote and
//! registry; the bump room (`crate::bump`) plans the move and writes it.

use crate::bump::{self, Bumped, Clients, PinBumpOptions};
use crate::printer::Printer;
use crate::recipe::Recipe;

/// Bumps with the real package index, git remote and registry clients.
pub fn pin_bump(
    recipe: &Recipe,
    options: &PinBumpOptions,
    printer: &Printer,
) -> anyhow::Result<Bumped> {
    if let Some(lane) = &recipe.pins.lane {
        anyhow::bail!(crate::pins::lane::BumpInLane {
            pins: recipe.pins_path(),
            of: lane.of.clone(),
        });
    }
    let clients = Clients::new(recipe, &options.sources)?;
    bump::pin_bump_with(recipe, options, &clients.upstream(), printer)
}
