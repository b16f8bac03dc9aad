//! What each wheel declares of the others: the `Requires-Dist` lines of its METADATA (read from
//! the PEP 658 metadata file the index offers next to the wheel), the markers evaluated for the
//! image (linux, its architecture, its Python, no extras), and checked across the pinned set.
//! The Dockerfile installs with `--no-deps`, so this is the only check that the pins fit together.

use std::collections::BTreeMap;
use std::str::FromStr;

use pep508_rs::{MarkerEnvironment, MarkerEnvironmentBuilder, Requirement, VersionOrUrl};

use crate::package_index::wheel::WheelTarget;

/// One `Requires-Dist`: its text without the marker (`apache-tvm-ffi<0.1.13,>=0.1.11`, as the
/// wheel spells it) and the parsed requirement.
pub type Declared = (String, Requirement);

/// The requirements in a METADATA text: every `Requires-Dist` header that parses (one that does
/// not is skipped, as it could not name a pinned package anyway).
pub fn requirements(metadata: &str) -> Vec<Declared> {
    metadata
        .lines()
        .take_while(|line| !line.trim().is_empty())
        .filter_map(|line| line.strip_prefix("Requires-Dist:"))
        .filter_map(|text| {
            let requirement = Requirement::from_str(text.trim()).ok()?;
            let written = text.split(';').next().unwrap_or_default().trim().to_owned();
            Some((written, requirement))
        })
        .collect()
}

/// The `Requires-Python` range a METADATA text declares, if it does.
pub fn requires_python(metadata: &str) -> Option<String> {
    metadata
        .lines()
        .take_while(|line| !line.trim().is_empty())
        .find_map(|line| line.strip_prefix("Requires-Python:"))
        .map(|range| range.trim().to_owned())
        .filter(|range| !range.is_empty())
}

/// The marker environment of the image: CPython on Linux, the target's architecture and Python;
/// `None` when pins.toml declares no Python (then only extras decide, and there are none).
pub fn environment(target: &WheelTarget) -> Option<MarkerEnvironment> {
    let python = target.python.as_ref()?;
    MarkerEnvironment::try_from(MarkerEnvironmentBuilder {
        implementation_name: "cpython",
        implementation_version: python.as_str(),
        os_name: "posix",
        platform_machine: &target.arch,
        platform_python_implementation: "CPython",
        platform_release: "",
        platform_system: "Linux",
        platform_version: "",
        python_full_version: python.as_str(),
        python_version: python.as_str(),
        sys_platform: "linux",
    })
    .ok()
}

/// A requirement of one pinned package that another pinned package does not meet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unmet {
    /// The package that declares it, and the version that does.
    pub package: String,
    /// Its version.
    pub version: String,
    /// The requirement, `name` and specifiers (`nvidia-cutlass-dsl>=4.8.0`).
    pub requirement: String,
    /// The package it requires (normalized).
    pub dependency: String,
    /// The version the required package would be at.
    pub found: String,
}

/// The requirements of `package` at `version` that the pinned set `pinned` (normalized name to
/// version) does not meet in `environment`; requirements on packages the recipe does not pin
/// are the base's business and are not checked here.
pub fn unmet(
    package: &str,
    version: &str,
    requirements: &[Declared],
    environment: Option<&MarkerEnvironment>,
    pinned: &BTreeMap<String, pep440_rs::Version>,
) -> Vec<Unmet> {
    requirements
        .iter()
        .filter(|(_, requirement)| match environment {
            Some(environment) => requirement.evaluate_markers(environment, &[]),
            None => requirement.marker.evaluate_extras(&[]),
        })
        .filter_map(|(written, requirement)| {
            let found = pinned.get(requirement.name.as_ref())?;
            let Some(VersionOrUrl::VersionSpecifier(specifiers)) = &requirement.version_or_url
            else {
                return None;
            };
            // A local label (`+cu130`) is the pin's build, not part of what is required.
            let bare = found.clone().without_local();
            (!specifiers.contains(&bare)).then(|| Unmet {
                package: package.to_owned(),
                version: version.to_owned(),
                requirement: written.replace(' ', ""),
                dependency: requirement.name.to_string(),
                found: found.to_string(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const FLASHINFER_0_7_4: &str = "Name: flashinfer-python\nVersion: 0.7.4\nRequires-Dist: apache-tvm-ffi<0.2,>=0.1.11\nRequires-Dist: nvidia-cutlass-dsl>=4.8.0\nRequires-Dist: nvidia-cutlass-dsl[cu13]>=4.8.0; extra == \"b12x\"\nRequires-Dist: torch>=2.4; platform_system == \"Darwin\"\n\nlong description: Requires-Dist: nothing\n";

    #[test]
    fn requirements_are_checked_against_the_pinned_set_for_the_image() {
        let target = WheelTarget::new(
            &"linux/arm64".parse().unwrap(),
            Some(&"3.12".parse().unwrap()),
        )
        .unwrap();
        let environment = environment(&target);
        let requirements = requirements(FLASHINFER_0_7_4);
        assert_eq!(requirements.len(), 4);
        let pinned: BTreeMap<String, pep440_rs::Version> = [
            ("apache-tvm-ffi", "0.1.11"),
            ("nvidia-cutlass-dsl", "4.6.0"),
            ("torch", "2.0.0"),
        ]
        .into_iter()
        .map(|(name, version)| (name.to_owned(), version.parse().unwrap()))
        .collect();
        let unmet = unmet(
            "flashinfer-python",
            "0.7.4",
            &requirements,
            environment.as_ref(),
            &pinned,
        );
        // The extra and the Darwin-only requirement do not apply to the image.
        assert_eq!(
            unmet,
            [Unmet {
                package: "flashinfer-python".to_owned(),
                version: "0.7.4".to_owned(),
                requirement: "nvidia-cutlass-dsl>=4.8.0".to_owned(),
                dependency: "nvidia-cutlass-dsl".to_owned(),
                found: "4.6.0".to_owned(),
            }]
        );
    }
}
