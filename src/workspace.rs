//! A workspace: one repository holding a family of recipes. `forge-workspace.toml` at its root
//! names each member and its folder (a recipe folder of its own: pins.toml, templates,
//! overlays, forge.lock), and which member's image another builds `FROM`:
//!
//! ```toml
//! [members.universal]
//! path = "universal"
//!
//! [members.deepseek]
//! path = "deepseek"
//! from = "universal"     # its [base] image is universal's repository
//! ```
//!
//! Opening a workspace opens every member's recipe and checks the family as one: each `from`
//! names a member, no member builds from itself through others, a member built from another
//! names that member's repository as its base, and no two members claim the same tag. Each
//! refusal is located in the file that says it. `order` is the order they build in: a member
//! after the one it builds from, members otherwise in the order the file lists them.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::diagnostics::{Advice, Advise};
use crate::location::Location;
use crate::recipe::{Recipe, RecipeError};
use crate::types::recipe::PinName;

/// The file that makes a folder a workspace root.
pub const WORKSPACE_FILE: &str = "forge-workspace.toml";

/// A member's name: the grammar of a pin's name (lowercase letters, digits and `-`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct MemberName(String);

impl MemberName {
    /// The name as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for MemberName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One member: its name, its recipe, and the member it builds from.
#[derive(Debug)]
pub struct Member {
    /// Its name in forge-workspace.toml.
    pub name: MemberName,
    /// Its folder, as forge-workspace.toml names it (relative to the root).
    pub path: PathBuf,
    /// The member whose image it builds `FROM`, if any (a lane's is that of the member it
    /// varies, unless it names one).
    pub from: Option<MemberName>,
    /// The member it varies, when it is a lane of one (`[lane] of` in its pins.toml).
    pub varies: Option<MemberName>,
    /// Its recipe, opened.
    pub recipe: Recipe,
}

/// An opened workspace: its members in the order forge-workspace.toml lists them.
#[derive(Debug)]
pub struct Workspace {
    /// The root folder.
    pub root: PathBuf,
    /// Every member, in file order.
    pub members: Vec<Member>,
}

/// Why a workspace could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    /// forge-workspace.toml could not be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// forge-workspace.toml is a special file, or cannot be opened.
    #[error(transparent)]
    Path(crate::fs::PathError),
    /// forge-workspace.toml, or what it says of its members, is wrong.
    #[error("{location}: {message}")]
    Invalid {
        /// Where.
        location: Location,
        /// What is wrong.
        message: String,
        /// What to do about it.
        hint: String,
    },
    /// A member's recipe could not be opened.
    #[error("member `{name}` ({}) is not a recipe forge can open", path.display())]
    Member {
        /// The member.
        name: MemberName,
        /// Its folder.
        path: PathBuf,
        /// Why.
        source: Box<RecipeError>,
    },
    /// `--recipe` given where there is no workspace.
    #[error("--recipe names a member of a workspace, and there is no forge-workspace.toml here")]
    NotARoot,
    /// A flag that names one recipe's file or repository, given at a workspace root.
    #[error("{flag} applies to one recipe, and this is a workspace root of several")]
    OneRecipeFlag {
        /// The flag.
        flag: &'static str,
    },
    /// `pin bump NAME` at a root where no member has the pin.
    #[error("no member of the workspace pins `{target}`")]
    NoMemberPins {
        /// The pin, or `base`.
        target: String,
        /// The members' pin nearest to it by spelling, if one is near.
        suggestion: Option<String>,
    },
    /// `--recipe` names no member.
    #[error("no member is called `{name}`")]
    UnknownSelected {
        /// The name given.
        name: String,
        /// The members there are.
        members: Vec<MemberName>,
    },
}

impl Advise for WorkspaceError {
    fn advice(&self) -> Advice {
        match self {
            WorkspaceError::Read { .. } => Advice::Hint(format!(
                "a workspace root holds {WORKSPACE_FILE}; docs/workspace.md says what it holds"
            )),
            WorkspaceError::Invalid { hint, .. } => Advice::Hint(hint.clone()),
            WorkspaceError::Path(error) => error.advice(),
            WorkspaceError::NoMemberPins {
                suggestion: Some(suggestion),
                ..
            } => Advice::Hint(format!(
                "did you mean `{suggestion}`? (`forge pin list` at the root lists every member's pins); nothing was changed"
            )),
            WorkspaceError::NoMemberPins { .. } => Advice::Hint(
                "`forge pin list` at the root lists every member's pins; nothing was changed"
                    .to_owned(),
            ),
            WorkspaceError::NotARoot => Advice::Hint(
                "run forge at the workspace root (or -C ROOT), or leave --recipe out to build the recipe here".to_owned(),
            ),
            WorkspaceError::OneRecipeFlag { flag } => Advice::Hint(format!(
                "build the one member with `forge -C MEMBER build {flag}`; nothing was built"
            )),
            WorkspaceError::Member { source, .. } => source.advice(),
            WorkspaceError::UnknownSelected { members, .. } => Advice::Hint(format!(
                "--recipe takes a member's name: {}",
                names(members.iter())
            )),
        }
    }
}

crate::advised!(WorkspaceError);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkspace {
    #[serde(default)]
    members: BTreeMap<Spanned<String>, Spanned<RawMember>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMember {
    path: Spanned<String>,
    #[serde(default)]
    from: Option<Spanned<String>>,
}

/// Whether `folder` is a workspace root.
pub fn is_root(folder: &Path) -> bool {
    folder.join(WORKSPACE_FILE).is_file()
}

/// Each lane's `varies` (the member whose folder its recipe's files are read in), and its `from`
/// taken from that member when it names none.
fn lanes_varied(members: &mut [Member], folders: &BTreeMap<PathBuf, String>) {
    for index in 0..members.len() {
        if members[index].recipe.pins.lane.is_none() {
            continue;
        }
        let files = &members[index].recipe.files;
        let resolved = files.canonicalize().unwrap_or_else(|_| files.clone());
        let Some(name) = folders.get(&resolved) else {
            continue;
        };
        let Some(varied) = members.iter().find(|other| other.name.as_str() == name) else {
            continue;
        };
        let (varies, from) = (varied.name.clone(), varied.from.clone());
        let member = &mut members[index];
        member.varies = Some(varies);
        if member.from.is_none() {
            member.from = from;
        }
    }
}

impl Workspace {
    /// Opens the workspace at `root`: forge-workspace.toml, then every member's recipe, then
    /// the checks across members.
    pub fn open(root: &Path) -> Result<Self, WorkspaceError> {
        let path = crate::fs::in_folder(root, WORKSPACE_FILE);
        let text = read(&path)?;
        let file = File {
            path: &path,
            text: &text,
        };
        let raw: RawWorkspace = toml::from_str(&text).map_err(|error| {
            file.invalid(
                error.span().unwrap_or(0..0),
                error.message().to_owned(),
                "docs/workspace.md lists the keys forge-workspace.toml takes",
            )
        })?;
        let mut raw: Vec<_> = raw.members.into_iter().collect();
        raw.sort_by_key(|(name, _)| name.span().start);
        if raw.is_empty() {
            return Err(file.invalid(
                0..0,
                "the workspace names no member".to_owned(),
                "add a [members.NAME] table with the path of each recipe folder",
            ));
        }
        let named: BTreeSet<&str> = raw
            .iter()
            .map(|(name, _)| name.get_ref().as_str())
            .collect();
        let mut members = Vec::new();
        let mut folders: BTreeMap<PathBuf, String> = BTreeMap::new();
        for (name, member) in &raw {
            let member = member.get_ref();
            let member_name = file.member_name(name)?;
            let folder = file.member_folder(root, &member.path)?;
            let resolved = folder.canonicalize().unwrap_or_else(|_| folder.clone());
            if let Some(other) = folders.insert(resolved, member_name.0.clone()) {
                return Err(file.invalid(
                    member.path.span(),
                    format!("members `{other}` and `{member_name}` are the same folder"),
                    "give each member a recipe folder of its own",
                ));
            }
            let from = match &member.from {
                Some(from) if !named.contains(from.get_ref().as_str()) => {
                    return Err(file.invalid(
                        from.span(),
                        format!(
                            "member `{member_name}` builds from `{}`, which is not a member",
                            from.get_ref()
                        ),
                        &format!(
                            "name one of the members ({}), or build from an image in [base] and leave `from` out",
                            names(named.iter())
                        ),
                    ));
                }
                Some(from) => Some(MemberName(from.get_ref().clone())),
                None => None,
            };
            let recipe = Recipe::open(&folder).map_err(|source| WorkspaceError::Member {
                name: member_name.clone(),
                path: folder.clone(),
                source: Box::new(source),
            })?;
            members.push(Member {
                name: member_name,
                path: PathBuf::from(member.path.get_ref()),
                from,
                varies: None,
                recipe,
            });
        }
        lanes_varied(&mut members, &folders);
        let workspace = Workspace {
            root: root.to_owned(),
            members,
        };
        workspace.check_cycles(&file, &raw)?;
        workspace.check_bases(&file, &raw)?;
        workspace.check_tags(&file, &raw)?;
        Ok(workspace)
    }

    /// The member called `name`.
    pub fn member(&self, name: &str) -> Option<&Member> {
        self.members
            .iter()
            .find(|member| member.name.as_str() == name)
    }

    /// The members in build order: each after the member it builds from, the rest in file
    /// order; with `selected`, only those and the members they build from.
    pub fn order(&self, selected: &[String]) -> Result<Vec<&Member>, WorkspaceError> {
        let mut wanted: BTreeSet<&str> = BTreeSet::new();
        for name in selected {
            let mut next =
                Some(
                    self.member(name)
                        .ok_or_else(|| WorkspaceError::UnknownSelected {
                            name: name.clone(),
                            members: self.members.iter().map(|m| m.name.clone()).collect(),
                        })?,
                );
            while let Some(member) = next {
                wanted.insert(member.name.as_str());
                next = member
                    .from
                    .as_ref()
                    .and_then(|from| self.member(from.as_str()));
            }
        }
        let mut ordered: Vec<&Member> = Vec::new();
        while ordered.len() < self.members.len() {
            let placed: BTreeSet<&str> = ordered.iter().map(|m| m.name.as_str()).collect();
            let next = self
                .members
                .iter()
                .find(|member| {
                    !placed.contains(member.name.as_str())
                        && member
                            .from
                            .as_ref()
                            .is_none_or(|from| placed.contains(from.as_str()))
                })
                .expect("a workspace without cycles has a member to place next");
            ordered.push(next);
        }
        if !selected.is_empty() {
            ordered.retain(|member| wanted.contains(member.name.as_str()));
        }
        Ok(ordered)
    }

    /// Refuses a member that builds from itself through others, at the `from` that closes the
    /// circle.
    fn check_cycles(&self, file: &File<'_>, raw: &[RawEntry]) -> Result<(), WorkspaceError> {
        for (start, (_, entry)) in self.members.iter().zip(raw) {
            let mut path = vec![start.name.as_str()];
            let mut next = start.from.as_ref();
            while let Some(from) = next {
                path.push(from.as_str());
                if from == &start.name {
                    let span = entry
                        .get_ref()
                        .from
                        .as_ref()
                        .expect("it builds from one")
                        .span();
                    return Err(file.invalid(
                        span,
                        format!(
                            "members build from each other in a circle: {}",
                            path.join(" → ")
                        ),
                        "one member of the circle must build from an image in its [base], not from another member",
                    ));
                }
                if path.len() > self.members.len() {
                    break;
                }
                next = self.member(from.as_str()).and_then(|m| m.from.as_ref());
            }
        }
        Ok(())
    }

    /// Refuses a member built from another whose [base] names another repository.
    fn check_bases(&self, file: &File<'_>, raw: &[RawEntry]) -> Result<(), WorkspaceError> {
        for (member, (_, entry)) in self.members.iter().zip(raw) {
            let Some(from) = &member.from else { continue };
            let parent = self.member(from.as_str()).expect("checked at load");
            let base = &member.recipe.pins.base.image;
            let built = &parent.recipe.pins.image.repository;
            let written = base.to_string();
            if crate::types::oci::repository_name(&written) != built.as_str() {
                let span = entry
                    .get_ref()
                    .from
                    .as_ref()
                    .expect("it builds from one")
                    .span();
                return Err(file.invalid(
                    span,
                    format!(
                        "member `{}` builds from `{from}`, but its [base] image is {base}, not an image of {built}",
                        member.name
                    ),
                    &format!(
                        "set [base] image in {} to a tag of {built}, or leave `from` out",
                        member.path.join(crate::recipe::PINS_FILE).display()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Refuses two members that apply the same tag to the same repository, at the second.
    fn check_tags(&self, file: &File<'_>, raw: &[RawEntry]) -> Result<(), WorkspaceError> {
        let mut claimed: BTreeMap<String, &MemberName> = BTreeMap::new();
        for (member, (name, _)) in self.members.iter().zip(raw) {
            let repository = &member.recipe.pins.image.repository;
            for tag in member.recipe.tags() {
                let reference = format!("{repository}:{}", tag.tag);
                if let Some(first) = claimed.insert(reference.clone(), &member.name) {
                    return Err(file.invalid(
                        name.span(),
                        format!(
                            "members `{first}` and `{}` both tag {reference}",
                            member.name
                        ),
                        "a tag names one image: give one of them its own repository or its own tags",
                    ));
                }
            }
        }
        Ok(())
    }
}

type RawEntry = (Spanned<String>, Spanned<RawMember>);

/// The text of forge-workspace.toml at `path`, a regular file.
fn read(path: &Path) -> Result<String, WorkspaceError> {
    let mut file = crate::fs::open_regular(path).map_err(WorkspaceError::Path)?;
    let mut text = String::new();
    std::io::Read::read_to_string(&mut file, &mut text).map_err(|source| WorkspaceError::Read {
        path: path.to_owned(),
        source,
    })?;
    Ok(text)
}

/// forge-workspace.toml as read, for locating what is wrong in it.
struct File<'a> {
    path: &'a Path,
    text: &'a str,
}

impl File<'_> {
    fn invalid(&self, span: Range<usize>, message: String, hint: &str) -> WorkspaceError {
        WorkspaceError::Invalid {
            location: Location::from_offset(self.path, self.text, span.start),
            message,
            hint: hint.to_owned(),
        }
    }

    fn member_name(&self, name: &Spanned<String>) -> Result<MemberName, WorkspaceError> {
        name.get_ref()
            .parse::<PinName>()
            .map(|_| MemberName(name.get_ref().clone()))
            .map_err(|error| {
                self.invalid(
                    name.span(),
                    format!("invalid member name: {error}"),
                    "a member's name is lowercase letters, digits and `-`, starting with a letter or digit",
                )
            })
    }

    fn member_folder(
        &self,
        root: &Path,
        path: &Spanned<String>,
    ) -> Result<PathBuf, WorkspaceError> {
        let written = path.get_ref();
        let relative = Path::new(written);
        let inside = !relative.is_absolute()
            && relative.components().all(|part| {
                matches!(
                    part,
                    std::path::Component::Normal(_) | std::path::Component::CurDir
                )
            });
        if !inside {
            return Err(self.invalid(
                path.span(),
                format!("member folder `{written}` is not inside the workspace"),
                "name the member's folder relative to the workspace root, without `..`",
            ));
        }
        let folder = crate::fs::in_folder(root, written);
        // A link may not lead a member out of the workspace.
        let escapes = match (root.canonicalize(), folder.canonicalize()) {
            (Ok(root), Ok(resolved)) => !resolved.starts_with(root),
            _ => false,
        };
        if escapes {
            return Err(self.invalid(
                path.span(),
                format!("member folder `{written}` leads out of the workspace through a link"),
                "keep each member's recipe folder inside the workspace root",
            ));
        }
        if !folder.join(crate::recipe::PINS_FILE).is_file() {
            return Err(self.invalid(
                path.span(),
                format!("member folder `{written}` holds no pins.toml"),
                "a member is a recipe folder: point `path` at the folder that holds its pins.toml",
            ));
        }
        Ok(folder)
    }
}

/// `names` as a list for a hint.
fn names<T: std::fmt::Display>(names: impl Iterator<Item = T>) -> String {
    names
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
