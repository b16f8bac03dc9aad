//! Stage 1: `pins.toml` text in, a typed `Pins` out.
//!
//! 1. TOML is parsed into the raw tables of `schema`, whose fields are checked newtypes
//!    (`crate::types`): a value that breaks its grammar is refused with the value's own line
//!    and column.
//! 2. Each pin is checked against its kind (which keys it may carry, which it needs).
//! 3. Rules that span several values are checked: lockstep groups carry one version, no pin sits
//!    on a denied version, referenced folders exist. A pin outside its allowed range loads with
//!    a notice (a forced bump puts it there).
//!
//! Nothing past this module sees a bare `String` from the file.
//!
//! `load` does steps 2 and 3 (`fixes` checks the `[fixes]` tables); what comes out is the
//! `recipe` (`Pins` and its sections) and its `pin`s.
//!
//! A pin's kind is its `Source` variant, whose payload struct holds what only that kind has;
//! code that needs one kind asks for its payload (`Pin::git`, `Pin::wheel_set`, `Pin::python`)
//! or for what every kind installs (`Pin::distributions`, `Pin::installed` with the files
//! recorded for each). Adding a kind touches `pin` (its
//! payload), `schema` and `load` (its keys), `Pin::shown` (what the image must show for it,
//! which the build's gates, `render::gate`, and the image's read-back, `verify::probe`, both
//! ask), `Pin::moves` (how it moves to a newer version, which `pin bump`, `pin outdated` and the
//! render's warnings ask), and then the files the compiler names, the only ones that match on every kind: the
//! template's view (`render::view`), the SBOM and provenance facts (`attest::attach`), `pin
//! list` and `report`.

mod fixes;
mod load;
mod pin;
mod recipe;
mod schema;

pub use load::{LoadError, load, parse, parse_detached};
pub use pin::{
    AssertSource, Denied, Distribution, GitSource, HashedFile, Installed, Moves, Pin, PythonSource,
    Shim, Shown, Source, Wheel, WheelSet,
};
pub use recipe::{
    Base, ContextSettings, Fix, FixedBy, Image, Mutability, Notice, Overlay, PatchSeries, Pins,
    TagSpec,
};
pub use schema::{Onto, PinKind, Probe, TagTemplate};
