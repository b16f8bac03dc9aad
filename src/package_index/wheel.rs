//! Which distribution files fit the image: a wheel's tags (PEP 425, with the PEP 600 and PEP 656
//! Linux platform tags) against the image's platform and Python, and a file's `Requires-Python`
//! (PEP 691's `requires-python`) against that Python. An sdist never fits: the layer installs
//! wheels with `--no-deps` and builds nothing.

use std::collections::BTreeSet;
use std::str::FromStr;

use crate::types::oci::Platform;
use crate::types::python::PythonVersion;

/// What a wheel must fit: the image's CPU architecture and, when pins.toml declares it, its
/// Python.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WheelTarget {
    /// The architecture as wheel tags spell it: `aarch64`, `x86_64`.
    pub arch: String,
    /// The image's Python (`[base] python`); without it only the platform is checked.
    pub python: Option<PythonVersion>,
    /// The base's glibc (`major`, `minor`), as `verify-digest --contents` recorded it; without
    /// it every manylinux tag counts as fitting.
    pub glibc: Option<(u64, u64)>,
}

impl WheelTarget {
    /// The target of an image built for `platform` (`linux/arm64`) running `python`; `None` for
    /// an operating system other than Linux, where forge checks no tags.
    pub fn new(platform: &Platform, python: Option<&PythonVersion>) -> Option<Self> {
        let mut parts = platform.as_str().split('/');
        if parts.next() != Some("linux") {
            return None;
        }
        let arch = match parts.next()? {
            "arm64" => "aarch64",
            "amd64" => "x86_64",
            "386" => "i686",
            other => other,
        };
        Some(Self {
            arch: arch.to_owned(),
            python: python.cloned(),
            glibc: None,
        })
    }

    /// The target on a base whose glibc is `glibc` (`2.39`), when it is known.
    pub fn with_glibc(mut self, glibc: Option<&str>) -> Self {
        self.glibc = glibc.and_then(glibc_version);
        self
    }

    /// The target in words: `linux/aarch64, Python 3.12, glibc 2.39`.
    pub fn describe(&self) -> String {
        let mut words = format!("linux/{}", self.arch);
        if let Some(python) = &self.python {
            words.push_str(&format!(", Python {python}"));
        }
        if let Some((major, minor)) = self.glibc {
            words.push_str(&format!(", glibc {major}.{minor}"));
        }
        words
    }

    /// Whether the wheel named `file` can be installed on the target (by its tags only).
    pub fn fits_wheel(&self, file: &str) -> bool {
        let Some(tags) = wheel_tags(file) else {
            return false;
        };
        tags.platforms
            .iter()
            .any(|platform| self.fits_platform(platform))
            && tags.pythons.iter().any(|python| {
                tags.abis
                    .iter()
                    .any(|abi| self.fits_interpreter(python, abi))
            })
    }

    /// Whether a `Requires-Python` range holds for the target's Python; a range that does not
    /// parse, or a target without a declared Python, holds (as pip ignores what it cannot read).
    pub fn requires_python_holds(&self, requires: &str) -> bool {
        let Some(python) = &self.python else {
            return true;
        };
        pep440_rs::VersionSpecifiers::from_str(requires)
            .map_or(true, |specifiers| specifiers.contains(&python.pep440()))
    }

    fn fits_platform(&self, platform: &str) -> bool {
        let family = match platform {
            "any" => return true,
            platform => match platform.strip_suffix(&format!("_{}", self.arch)) {
                Some(family) => family,
                None => return false,
            },
        };
        // PEP 600: manylinux_X_Y needs glibc X.Y; the older names are aliases of it.
        let needs = match family {
            "linux" => return true,
            // A base whose glibc is known is not a musl one.
            family if family.starts_with("musllinux_") => return self.glibc.is_none(),
            "manylinux1" => Some((2, 5)),
            "manylinux2010" => Some((2, 12)),
            "manylinux2014" => Some((2, 17)),
            _ => family.strip_prefix("manylinux_").and_then(|version| {
                let (major, minor) = version.split_once('_')?;
                Some((major.parse().ok()?, minor.parse().ok()?))
            }),
        };
        needs.is_some_and(|needs| self.glibc.is_none_or(|glibc| needs <= glibc))
    }

    fn fits_interpreter(&self, python: &str, abi: &str) -> bool {
        let Some(target) = &self.python else {
            return true;
        };
        let (major, minor) = target.parts();
        let exact = format!("cp{major}{minor}");
        // `py3`, `py312`, `cp312`, ... with the major and minor they name.
        let named = |tag: &str, prefix: &str| -> Option<(u64, Option<u64>)> {
            let digits = tag.strip_prefix(prefix)?;
            let (first, rest) = digits.split_at_checked(1)?;
            let major = first.parse().ok()?;
            let minor = if rest.is_empty() {
                None
            } else {
                Some(rest.parse().ok()?)
            };
            Some((major, minor))
        };
        match abi {
            "none" => {
                python == exact
                    || named(python, "py").is_some_and(|(tag_major, tag_minor)| {
                        tag_major == major && tag_minor.is_none_or(|tag_minor| tag_minor <= minor)
                    })
            }
            "abi3" => named(python, "cp").is_some_and(|(tag_major, tag_minor)| {
                tag_major == major && tag_minor.is_some_and(|tag_minor| tag_minor <= minor)
            }),
            abi => python == exact && abi == exact,
        }
    }
}

/// `2.39` as (2, 39).
fn glibc_version(text: &str) -> Option<(u64, u64)> {
    let (major, minor) = text.trim().split_once('.')?;
    let minor = minor.split('.').next()?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// The glibc a wheel file needs at least, by its newest-needing manylinux tag that names one
/// (`None` for a wheel that needs none, or a name that is not a wheel's).
pub fn glibc_needed(file: &str) -> Option<(u64, u64)> {
    let tags = wheel_tags(file)?;
    tags.platforms
        .iter()
        .filter_map(|platform| {
            for (alias, needs) in [
                ("manylinux1_", (2, 5)),
                ("manylinux2010_", (2, 12)),
                ("manylinux2014_", (2, 17)),
            ] {
                if platform.starts_with(alias) {
                    return Some(needs);
                }
            }
            let mut parts = platform.strip_prefix("manylinux_")?.split('_');
            Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
        })
        .min()
}

/// The tag sets of a wheel file name.
struct WheelTags<'a> {
    pythons: Vec<&'a str>,
    abis: Vec<&'a str>,
    platforms: Vec<&'a str>,
}

/// `name-version[-build]-python-abi-platform.whl`, each tag a `.`-separated set.
fn wheel_tags(file: &str) -> Option<WheelTags<'_>> {
    let stem = file.strip_suffix(".whl")?;
    let parts: Vec<&str> = stem.split('-').collect();
    if !(5..=6).contains(&parts.len()) {
        return None;
    }
    let [python, abi, platform] = parts[parts.len() - 3..] else {
        return None;
    };
    Some(WheelTags {
        pythons: python.split('.').collect(),
        abis: abi.split('.').collect(),
        platforms: platform.split('.').collect(),
    })
}

/// The `python-abi-platform` part of a wheel file name, to say what a version offers.
pub fn tag_triple(file: &str) -> Option<String> {
    let stem = file.strip_suffix(".whl")?;
    let parts: Vec<&str> = stem.split('-').collect();
    (parts.len() >= 5).then(|| parts[parts.len() - 3..].join("-"))
}

/// Every `python-abi-platform` tag a wheel file name stands for (a compressed set such as
/// `py2.py3-none-any` is two), as an installed wheel's `WHEEL` file lists them in `Tag:` lines.
pub fn expanded_tags(file: &str) -> Option<BTreeSet<String>> {
    let tags = wheel_tags(file)?;
    let mut expanded = BTreeSet::new();
    for python in &tags.pythons {
        for abi in &tags.abis {
            for platform in &tags.platforms {
                expanded.insert(format!("{python}-{abi}-{platform}"));
            }
        }
    }
    Some(expanded)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(platform: &str, python: Option<&str>) -> WheelTarget {
        WheelTarget::new(
            &platform.parse().unwrap(),
            python.map(|python| python.parse().unwrap()).as_ref(),
        )
        .unwrap()
    }

    #[test]
    fn wheels_fit_by_platform_python_and_abi() {
        let arm = target("linux/arm64", Some("3.12"));
        for file in [
            "tilelang-0.1.15-cp38-abi3-manylinux_2_28_aarch64.whl",
            "tilelang-0.1.15-cp312-cp312-manylinux2014_aarch64.manylinux_2_17_aarch64.whl",
            "apache_tvm_ffi-0.1.11-cp312-cp312-musllinux_1_2_aarch64.whl",
            "flashinfer_python-0.6.14-py3-none-any.whl",
            "flashinfer_jit_cache-0.6.14+cu130-cp39-abi3-linux_aarch64.whl",
            "x-1.0-1build-py2.py3-none-any.whl",
        ] {
            assert!(arm.fits_wheel(file), "{file} fits {}", arm.describe());
        }
        for file in [
            "tilelang-0.1.15-cp38-abi3-manylinux_2_28_x86_64.whl",
            "tilelang-0.1.15-cp313-cp313-manylinux_2_28_aarch64.whl",
            "tilelang-0.1.15-cp313-abi3-manylinux_2_28_aarch64.whl",
            "tilelang-0.1.15-cp311-cp311-manylinux_2_28_aarch64.whl",
            "tilelang-0.1.15-cp38-abi3-macosx_11_0_arm64.whl",
            "tilelang-0.1.15-cp38-abi3-win_amd64.whl",
            "tilelang-0.1.15.tar.gz",
        ] {
            assert!(
                !arm.fits_wheel(file),
                "{file} does not fit {}",
                arm.describe()
            );
        }
        // Without a declared Python only the platform counts.
        let any_python = target("linux/amd64", None);
        assert!(any_python.fits_wheel("tilelang-0.1.15-cp313-cp313-manylinux_2_28_x86_64.whl"));
        assert!(!any_python.fits_wheel("tilelang-0.1.15-cp313-cp313-manylinux_2_28_aarch64.whl"));
    }

    #[test]
    fn manylinux_tags_fit_a_base_with_that_glibc_or_newer() {
        let old = target("linux/arm64", Some("3.12")).with_glibc(Some("2.28"));
        assert!(
            old.fits_wheel("a-1.0-cp312-abi3-manylinux2014_aarch64.manylinux_2_17_aarch64.whl")
        );
        assert!(
            old.fits_wheel("a-1.0-cp312-abi3-manylinux_2_24_aarch64.manylinux_2_28_aarch64.whl")
        );
        assert!(!old.fits_wheel("tilelang-0.1.11-cp38-abi3-manylinux_2_34_aarch64.whl"));
        assert!(!old.fits_wheel("a-1.0-cp312-cp312-musllinux_1_2_aarch64.whl"));
        assert!(old.fits_wheel("a-1.0-cp39-abi3-linux_aarch64.whl"));
        assert_eq!(old.describe(), "linux/aarch64, Python 3.12, glibc 2.28");
        let new = old.clone().with_glibc(Some("2.39"));
        assert!(new.fits_wheel("tilelang-0.1.11-cp38-abi3-manylinux_2_34_aarch64.whl"));
        assert_eq!(
            glibc_needed("a-1.0-cp312-abi3-manylinux_2_24_aarch64.manylinux_2_28_aarch64.whl"),
            Some((2, 24))
        );
        assert_eq!(glibc_needed("a-1.0-py3-none-any.whl"), None);
        assert_eq!(
            glibc_needed("a-1.0-cp312-abi3-manylinux_2_28_x86_64.whl"),
            Some((2, 28))
        );
    }

    #[test]
    fn requires_python_is_checked_against_the_image_python() {
        let arm = target("linux/arm64", Some("3.12"));
        assert!(arm.requires_python_holds(">=3.9"));
        assert!(arm.requires_python_holds(">=3.9,<3.13"));
        assert!(!arm.requires_python_holds(">=3.13"));
        assert!(!arm.requires_python_holds("<3.12"));
        assert!(arm.requires_python_holds("not a range"));
        assert!(target("linux/arm64", None).requires_python_holds(">=3.13"));
    }

    #[test]
    fn a_compressed_tag_set_stands_for_each_of_its_tags() {
        let tags = |file| expanded_tags(file).unwrap().into_iter().collect::<Vec<_>>();
        assert_eq!(
            tags("a-1.0-cp312-cp312-manylinux2014_aarch64.manylinux_2_17_aarch64.whl"),
            [
                "cp312-cp312-manylinux2014_aarch64",
                "cp312-cp312-manylinux_2_17_aarch64"
            ]
        );
        assert_eq!(
            tags("x-1.0-1build-py2.py3-none-any.whl"),
            ["py2-none-any", "py3-none-any"]
        );
        assert_eq!(expanded_tags("x-1.0.tar.gz"), None);
    }
}
