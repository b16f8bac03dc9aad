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
//! A pin's kind is its `Source` variant, whose payload (`kind/`, one file per kind) holds what
//! only that kind has and implements `Kind`: everything a stage asks of a pin (what it installs,
//! what the image must show for it, how it moves, what the template, the SBOM, `report` and `pin
//! list` see of it) is answered there, and no code outside this room matches on a kind.
//! `gate` turns what a pin must show, and the fixes and overlays, into the build's smoke gates.

mod fixes;
pub mod gate;
mod kind;
pub mod lane;
mod load;
mod pin;
mod recipe;
mod schema;

pub use kind::{
    Around, AssertSource, GitSource, Kind, Listed, PinFact, PythonSource, Shim, SourceView, Wheel,
    WheelSet,
};
pub use load::{LoadError, load, load_lane, parse, parse_detached, read_text};
pub use pin::{Denied, Distribution, HashedFile, Installed, Moves, Pin, Shown, Source};
pub use recipe::{
    Base, ContextSettings, Donor, Fix, FixedBy, Image, Lane, Mutability, Notice, Overlay,
    PatchSeries, Pins, Script, TagSpec,
};
pub use schema::{Onto, PinKind, Probe, TagTemplate};
