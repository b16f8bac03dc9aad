//! How a refused move is said: the reasons of a version on one line, and the failed check
//! (exit 1) with the hint its first reason calls for.

use crate::bump::VersionRefusal;
use crate::diagnostics::CheckFailed;
use crate::types::python::Version;
use crate::types::recipe::PinName;

/// The refusal of a move as a failed check (exit 1), with the hint the reasons call for.
pub(crate) fn refused(
    pin: &PinName,
    version: &Version,
    refusals: &[&VersionRefusal],
) -> CheckFailed {
    let message = format!(
        "refusing to move {pin} to {version}: {}",
        join(refusals.iter().copied())
    );
    let hint = match refusals.first() {
        Some(VersionRefusal::Denied { .. }) => "the deny list in pins.toml records what broke; neither --to nor --force moves past it".to_owned(),
        Some(VersionRefusal::WheelMissing { package, version, .. }) => format!("every wheel of a set moves together: wait until {package} {version} is published on its index, or check the wheel's `index` in pins.toml"),
        Some(VersionRefusal::PartnerMissing { pin: partner, version, .. }) => format!("a lockstep group moves together: wait for {partner} {version}, or pick a version every member has with --to"),
        Some(VersionRefusal::Requires { requirement, .. }) => format!("the Dockerfile installs with --no-deps, so forge checks what each wheel declares: move the pin that provides {requirement} first (for a pin in the base, move the base), or pick a version whose requirements the pinned set meets"),
        Some(VersionRefusal::Base { requirement, .. }) => format!("the base must supply {requirement}: move the base (`forge pin bump base`, then `forge build` and `forge verify-digest --contents` to record what it holds), or pick another version"),
        Some(VersionRefusal::NoFit { package, .. }) => format!("the image needs a wheel of {package} for its platform and Python (`[image] platform`, `[base] python` in pins.toml); wait until one is published, or pick a version that has one"),
        Some(VersionRefusal::OutsideRange { .. }) => "pass --force to move outside the allowed range (a denied version can never be forced), or widen `allow` in pins.toml".to_owned(),
        None => "see `forge pin outdated`".to_owned(),
    };
    CheckFailed::new(message, hint)
}

/// The refusals of a version, as one line.
pub(super) fn join<'a>(refusals: impl IntoIterator<Item = &'a VersionRefusal>) -> String {
    refusals
        .into_iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}
