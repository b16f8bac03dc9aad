//! Stage 7: the build record (`forge.lock`) and what the world holds now in, a `Report` out.
//!
//! Each function here turns one kind of evidence into rows `{name, subject, expected, actual,
//! ok}`; none of them talks to a daemon or a registry (the ops layer fetches, this stage judges):
//!
//! 1. `tags`: what each recorded tag names on a daemon (a node), against the recorded image id,
//!    and whether the tags agree with each other.
//! 2. `base`: the base image's digest and id on the daemon, against the record.
//! 3. `inputs`: the current inputs' digests against the recorded ones; a change is `stale`.
//! 4. `registry`: each tag's manifest as the registry served it: the claimed digest against the
//!    sha256 of the bytes, against the pushed digest in the record, an index's entry for the
//!    recipe's platform, the image the manifest holds against the recorded image id, and the
//!    tags against each other (`registry`); a tag it does not hold (`unserved`); each other
//!    platform's entry of a multi-platform index (`platform_entry`).
//! 5. contents: what a run of the image reports (`probe`), against the pins and the overlay
//!    files of the recipe, or that the image is not there to run (`image_missing`); of each
//!    wheel a pin installs, which pinned file it was and whether its files are as its `RECORD`
//!    lists (`record`).

pub mod attached;
mod check;
mod daemon;
mod error;
mod inputs;
pub mod probe;
mod record;
mod registry;

pub use check::{Check, Kind, MISSING, Report, Verdict};
pub use daemon::{Resolved, base, image_missing, tags};
pub use error::{VerifyError, recorded_build};
pub use inputs::inputs;
pub use registry::{Served, platform_entry, registry, registry_image, unserved};
