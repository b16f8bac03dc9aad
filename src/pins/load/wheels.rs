//! Loading a pin's wheels: a wheel set's wheels (from an index, or downloaded by URL with each
//! file's name and sha256), the files recorded for an index distribution, and the downloaded
//! files' fit to every platform the image is built for.

use std::collections::BTreeMap;
use std::ops::Range;
use std::str::FromStr;

use crate::types::oci::Platform;
use crate::types::python::{PackageName, PythonVersion, Version};
use crate::types::recipe::PinName;
use crate::types::url::{Url, UrlTemplate};

use super::super::kind::{Wheel, WheelSet};
use super::super::pin::{HashedFile, Pin, Source};
use super::super::schema;
use super::{LoadError, Loader};

impl Loader<'_> {
    /// Every file a wheel set downloads by URL fits each platform the image is built for (by its
    /// tags, and the base's Python when pins.toml declares it): the one file is installed on
    /// every platform, and pip would refuse it at build time on one it does not fit.
    pub(super) fn downloads_fit(
        &self,
        pins: &BTreeMap<PinName, Pin>,
        platforms: &[Platform],
        python: Option<&PythonVersion>,
    ) -> Result<(), LoadError> {
        for pin in pins.values() {
            let Source::Wheels(WheelSet {
                version, wheels, ..
            }) = &pin.source
            else {
                continue;
            };
            for (wheel, file) in wheels
                .iter()
                .filter_map(|wheel| Some((wheel, wheel.file.as_ref()?.expand(version))))
            {
                let target = platforms
                    .iter()
                    .filter_map(|platform| {
                        crate::package_index::wheel::WheelTarget::new(platform, python)
                    })
                    .find(|target| !target.fits_wheel(&file));
                if let Some(target) = target {
                    return Err(self.error(
                        self.find(&format!("[pins.{}]", pin.name)),
                        format!(
                            "wheel `{}` of set `{}`: its file {file} does not fit {}",
                            wheel.package,
                            pin.name,
                            target.describe()
                        ),
                        "name the file built for the image's platform and Python (`[image] platform`, `[base] python`)",
                    ));
                }
            }
        }
        Ok(())
    }

    /// A wheel set: its wheels, where they come from, and where its versions are listed.
    pub(in crate::pins) fn wheel_set(
        &self,
        name: &PinName,
        version: Version,
        raw_wheels: Vec<schema::RawWheel>,
        url: Option<UrlTemplate>,
        releases: Option<Url>,
        span: &Range<usize>,
    ) -> Result<Source, LoadError> {
        if raw_wheels.is_empty() {
            return Err(self.error(
                span.clone(),
                format!("wheel set `{name}` lists no wheel"),
                "list at least one { package = \"...\" }",
            ));
        }
        // A login in the URL would be written into the Dockerfile, the image's history and the
        // record, and sent with every download. (A git pin's URL may hold one: it is cloned by
        // the build and redacted wherever it is shown.)
        // forge downloads each file to hash it, and pip downloads it again in the build: a
        // `file://` URL would name a file of neither machine's.
        if let Some(url) = url.as_ref().filter(|url| !url.is_http()) {
            return Err(self.error(
                span.clone(),
                format!(
                    "wheel set `{name}`: its url must be an https:// or http:// URL, not {url}"
                ),
                "forge downloads each file over HTTP to hash it, and pip downloads it again in the build: serve the files (a folder can be served with `python3 -m http.server`), or install them from an index",
            ));
        }
        if url.as_ref().is_some_and(UrlTemplate::has_user_information) {
            return Err(self.error(
                span.clone(),
                format!(
                    "wheel set `{name}`: its url must not hold a user name or token (it is written into the Dockerfile and the image's history)"
                ),
                "serve the files without a login, or install them from an index whose login is in a netrc file (NETRC, else ~/.netrc)",
            ));
        }
        let wheels = self.wheels(name, &version, url.as_ref(), raw_wheels, span)?;
        if releases.is_some() && url.is_none() {
            return Err(self.error(
                span.clone(),
                format!("wheel set `{name}` has `releases` but no `url`"),
                "`releases` lists the versions of files downloaded from the pin's `url`; an index lists its own",
            ));
        }
        let releases = releases.or_else(|| url.as_ref().and_then(UrlTemplate::github_releases));
        Ok(Source::Wheels(WheelSet {
            version,
            wheels,
            url,
            releases,
        }))
    }

    /// The wheels of set `name`: from an index each (`package`, `local`, `index`), or, when the
    /// set has a `url`, each a `file` of the named package with its `sha256`.
    pub(super) fn wheels(
        &self,
        name: &PinName,
        version: &Version,
        url: Option<&UrlTemplate>,
        raw: Vec<schema::RawWheel>,
        span: &Range<usize>,
    ) -> Result<Vec<Wheel>, LoadError> {
        let refuse = |message: String, hint: &str| Err(self.error(span.clone(), message, hint));
        let mut wheels = Vec::new();
        for wheel in raw {
            let package = wheel.package;
            let mut local = wheel.local;
            match (url, &wheel.file) {
                (None, Some(_)) => {
                    return refuse(
                        format!(
                            "wheel `{package}` of set `{name}` has a `file`, but the set has no `url`"
                        ),
                        "set the pin's url = \"https://.../{file}\" to download the files, or drop `file` and `sha256` to install from the index",
                    );
                }
                (None, None) if wheel.sha256.is_some() => {
                    return refuse(
                        format!(
                            "wheel `{package}` of set `{name}` has a `sha256`, but the set has no `url`"
                        ),
                        "a hash pins a downloaded file: set the pin's `url` and the wheel's `file`",
                    );
                }
                (Some(_), None) => {
                    return refuse(
                        format!(
                            "wheel `{package}` of set `{name}` needs `file`: the set is downloaded from its `url`"
                        ),
                        "name the wheel's file with {version} for the version, such as file = \"name-{version}-py3-none-any.whl\"",
                    );
                }
                (Some(_), Some(file)) => {
                    self.downloaded_file(
                        name,
                        &package,
                        wheel.index.is_some(),
                        file,
                        &mut local,
                        span,
                    )?;
                }
                (None, None) => {}
            }
            if url.is_some() && wheel.files.is_some() {
                return refuse(
                    format!(
                        "wheel `{package}` of set `{name}` has `files`, but the set is downloaded from its `url`"
                    ),
                    "a downloaded file's hash is its `sha256`; `files` records what an index offers",
                );
            }
            let owner = format!("wheel `{package}` of set `{name}`");
            let at = match &local {
                Some(local) => format!("{version}+{local}"),
                None => version.to_string(),
            };
            let files = self.hashed_files(&owner, name, &package, &at, wheel.files, span)?;
            wheels.push(Wheel {
                package,
                local,
                index: wheel.index,
                file: wheel.file,
                sha256: wheel.sha256,
                files,
            });
        }
        Ok(wheels)
    }

    /// A wheel of set `name` downloaded from its `url`: a `file` of `package` (its `local` label
    /// read from the file when pins.toml leaves it out), with no `index` of its own.
    pub(super) fn downloaded_file(
        &self,
        name: &PinName,
        package: &PackageName,
        has_index: bool,
        file: &crate::types::python::WheelFile,
        local: &mut Option<crate::types::python::LocalLabel>,
        span: &Range<usize>,
    ) -> Result<(), LoadError> {
        if has_index {
            return Err(self.error(
                    span.clone(),
                    format!(
                        "wheel `{package}` of set `{name}` has an `index`, but the set is downloaded from its `url`"
                    ),
                    "drop the wheel's `index`, or the pin's `url` to install from indexes",
                ));
        }
        let spelled: PackageName = file
            .distribution()
            .parse()
            .expect("a wheel file's name part is a package name");
        if spelled.normalized() != package.normalized() {
            return Err(self.error(
                span.clone(),
                format!(
                    "wheel `{package}` of set `{name}`: its file `{file}` is a wheel of `{}`",
                    file.distribution()
                ),
                "the file name starts with the package's name, with _ for -",
            ));
        }
        match (&*local, file.local()) {
            (Some(label), Some(in_file)) if label.as_str() != in_file => {
                return Err(self.error(
                    span.clone(),
                        format!(
                            "wheel `{package}` of set `{name}`: `local` is {label} but its file carries +{in_file}"
                        ),
                        "drop `local`: a file's +LOCAL label says it",
                    ));
            }
            (None, Some(in_file)) => {
                *local = Some(in_file.parse().expect("a wheel file's label is checked"));
            }
            _ => {}
        }
        Ok(())
    }

    /// The `files` recorded for `package` at `version` (the version its files carry, local
    /// label included): each a wheel of that package and version, each named once.
    pub(in crate::pins) fn hashed_files(
        &self,
        owner: &str,
        pin: &PinName,
        package: &PackageName,
        version: &str,
        raw: Option<Vec<schema::RawHashedFile>>,
        span: &Range<usize>,
    ) -> Result<Vec<HashedFile>, LoadError> {
        let wanted = pep440_rs::Version::from_str(version).ok();
        let mut files: Vec<HashedFile> = Vec::new();
        for raw in raw.unwrap_or_default() {
            let found = crate::package_index::version_of_file(package, raw.file.as_str());
            if found.is_none() || found != wanted {
                return Err(self.error(
                    span.clone(),
                    format!(
                        "{owner}: recorded file {} is not a wheel of {package} {version}",
                        raw.file
                    ),
                    format!(
                        "`forge pin bump {pin} --to VERSION` records the files of the version it moves to; drop `files` to install the pin unchecked"
                    ),
                ));
            }
            if files.iter().any(|file| file.file == raw.file) {
                return Err(self.error(
                    span.clone(),
                    format!("{owner}: file {} is recorded twice", raw.file),
                    "keep one entry per file",
                ));
            }
            files.push(HashedFile {
                file: raw.file,
                sha256: raw.sha256,
            });
        }
        Ok(files)
    }
}
