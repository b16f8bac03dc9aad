//! A workspace's members, in build order: planned and built (each re-pointed at the image of
//! the member it builds from, a fresh one left as it is), and any other command run on each,
//! its answers gathered into one document (`{members: [{name, path, KEY: the member's
//! document}]}`).

use anyhow::Context as _;
use serde::Serialize;

use super::build::{BuildOptions, Planned, build, checked_plan, planned};
use crate::context::Output;
use crate::engine::{Docker, Engine as _};
use crate::pipeline;
use crate::printer::{Document, Printer};
use crate::recipe::Recipe;
use crate::types::recipe::PinName;
use crate::workspace::Member;

/// Runs `run` on each member of `order` with a printer that keeps the member's document, then
/// prints the family's: each member's document under `key`. The first member that fails stops
/// the rest, its error naming it.
pub fn each(
    order: &[&Member],
    verb: &str,
    key: &'static str,
    printer: &Printer,
    mut run: impl FnMut(&Member, &Printer) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut members = Vec::new();
    for member in order {
        printer.status(
            verb,
            format_args!("member {} ({})", member.name, member.path.display()),
        );
        let (kept_printer, kept) = printer.keeping();
        run(member, &kept_printer)
            .with_context(|| format!("member `{}` ({})", member.name, member.path.display()))?;
        let mut part = serde_json::Map::new();
        part.insert("name".to_owned(), member.name.as_str().into());
        part.insert("path".to_owned(), member.path.display().to_string().into());
        part.insert(key.to_owned(), kept.take().unwrap_or_default());
        members.push(serde_json::Value::Object(part));
    }
    printer.document(&Family { members });
    Ok(())
}

/// The family's answer: each member's part, in build order; each member's text was printed as
/// it came.
#[derive(Debug, Serialize)]
struct Family {
    members: Vec<serde_json::Value>,
}

impl Document for Family {
    fn text(&self) -> Option<String> {
        None
    }
}

/// `forge build --dry-run` at a workspace root: the plan of each member of `order`, in that
/// order, each named with the member it builds from and the manifest that member's record says
/// was pushed.
pub fn plan(order: &[&Member], options: &BuildOptions, printer: &Printer) -> anyhow::Result<()> {
    let mut plans = Vec::new();
    for member in order {
        printer.status("Planning", format_args!("member {}", member.name));
        let plan = checked_plan(&member.recipe, options, Output::Discard, printer)
            .with_context(|| format!("member `{}` ({})", member.name, member.path.display()))?;
        plans.push(plan);
    }
    let mut members = Vec::new();
    for (member, plan) in order.iter().zip(&plans) {
        let from = match &member.from {
            None => None,
            Some(name) => {
                let parent = order
                    .iter()
                    .find(|other| &other.name == name)
                    .expect("a member is planned after the member it builds from");
                let record = parent.recipe.record()?;
                Some(FromMember {
                    member: name,
                    image: record
                        .and_then(|record| record.tags.iter().find_map(|tag| tag.pushed.clone())),
                })
            }
        };
        members.push(MemberPlanned {
            name: &member.name,
            path: &member.path,
            from,
            lane: LaneOf::of(member),
            planned: planned(&member.recipe, plan),
        });
    }
    printer.document(&WorkspacePlanned { members });
    Ok(())
}

/// `forge build` at a workspace root: each member of `order` built in that order, as `forge -C
/// PATH build` builds it, a member built from another re-pointed at that member's image first:
/// with `--push`, at the manifest its forge.lock now says was pushed (`FROM repo:tag@digest`);
/// without, at the tag its build just applied here. With `--json`, one document of every
/// member's build document.
pub fn build_all(
    order: &[&Member],
    options: &BuildOptions,
    printer: &Printer,
) -> anyhow::Result<()> {
    let mut members = Vec::new();
    let mut built: Vec<&crate::workspace::MemberName> = Vec::new();
    for member in order {
        let mut recipe = member.recipe.clone();
        let from = match &member.from {
            None => None,
            Some(name) => {
                let parent = order
                    .iter()
                    .find(|other| &other.name == name)
                    .expect("a member is built after the member it builds from");
                let record = Recipe::open(&parent.recipe.root)?.record()?;
                let pushed = record
                    .and_then(|record| record.tags.iter().find_map(|tag| tag.pushed.clone()))
                    .filter(|_| options.push);
                recipe.pins.base.digest = pushed.clone();
                Some(FromMember {
                    member: name,
                    image: pushed,
                })
            }
        };
        let named = || format!("member `{}` ({})", member.name, member.path.display());
        let after_rebuilt = (member.from.as_ref()).is_some_and(|from| built.contains(&from));
        if !after_rebuilt && fresh(&recipe, options).with_context(named)? {
            printer.status(
                "Fresh",
                format_args!(
                    "member {} ({}): built from these inputs already, as forge.lock records",
                    member.name,
                    member.path.display()
                ),
            );
            members.push(MemberBuilt {
                name: &member.name,
                path: &member.path,
                from,
                fresh: true,
                build: None,
            });
            continue;
        }
        printer.status(
            "Building",
            format_args!("member {} ({})", member.name, member.path.display()),
        );
        let (kept_printer, kept) = printer.keeping();
        build(&recipe, options, &kept_printer).with_context(named)?;
        built.push(&member.name);
        members.push(MemberBuilt {
            name: &member.name,
            path: &member.path,
            from,
            fresh: false,
            build: kept.take(),
        });
    }
    printer.document(&WorkspaceBuilt { members });
    Ok(())
}

/// Whether a workspace member need not be built again: its forge.lock records a build made from
/// the inputs it has now (the rendered Dockerfile, so the image it builds FROM too, the context,
/// the patches), of every tag pushed when `--push` asks for it and signed when `--sign` does, and
/// the daemon still holds that image under its first tag. `--no-cache` and `--platform` always
/// build.
fn fresh(recipe: &Recipe, options: &BuildOptions) -> anyhow::Result<bool> {
    let Some(record) = recipe.record()? else {
        return Ok(false);
    };
    let unpushed = options.push && record.tags.iter().any(|tag| tag.pushed.is_none());
    let unsigned = options.sign.is_some() && record.attachments.is_empty();
    if options.no_cache || options.platform.is_some() || unpushed || unsigned {
        return Ok(false);
    }
    let quiet = Printer::new(
        crate::printer::Verbosity::Quiet,
        crate::printer::OutputFormat::Human,
        crate::printer::ColorChoice::Never,
    );
    let plan = pipeline::plan(recipe, Output::Discard, true, None, &quiet)?;
    let inputs = plan.inputs.as_ref().expect("the plan computes the inputs");
    if !record.inputs.differences(inputs).is_empty() {
        return Ok(false);
    }
    let Some(tag) = record.tags.first() else {
        return Ok(false);
    };
    let reference = format!("{}:{}", record.image.repository, tag.name);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let held = runtime.block_on(async {
        let engine = Docker::connect().await?;
        anyhow::Ok(engine.image(&reference).await?)
    })?;
    Ok(held.is_some_and(|info| info.id.0 == record.image.id))
}

/// One member's build in a workspace's.
#[derive(Debug, Serialize)]
struct MemberBuilt<'a> {
    name: &'a crate::workspace::MemberName,
    path: &'a std::path::Path,
    #[serde(skip_serializing_if = "Option::is_none")]
    from: Option<FromMember<'a>>,
    /// Not built: forge.lock records a build from the inputs it has now (`fresh`).
    fresh: bool,
    /// Its build document; `null` when it was fresh.
    build: Option<serde_json::Value>,
}

/// `forge build` at a workspace root: each member's build document, in build order (each
/// member's image id was printed as it was built).
#[derive(Debug, Serialize)]
struct WorkspaceBuilt<'a> {
    members: Vec<MemberBuilt<'a>>,
}

impl Document for WorkspaceBuilt<'_> {
    fn text(&self) -> Option<String> {
        None
    }
}

/// A member built from another: that member, and the manifest its record says was pushed (the
/// digest its dependents build `FROM`; none before its first push).
#[derive(Debug, Serialize)]
struct FromMember<'a> {
    member: &'a crate::workspace::MemberName,
    image: Option<crate::types::oci::Digest>,
}

/// A lane's kind and the member it varies.
#[derive(Debug, Serialize)]
struct LaneOf<'a> {
    kind: &'static str,
    varies: &'a crate::workspace::MemberName,
}

impl<'a> LaneOf<'a> {
    fn of(member: &'a Member) -> Option<Self> {
        Some(LaneOf {
            kind: member.recipe.pins.lane.as_ref()?.kind(),
            varies: member.varies.as_ref()?,
        })
    }
}

/// One member's plan in a workspace's.
#[derive(Debug, Serialize)]
struct MemberPlanned<'a> {
    name: &'a crate::workspace::MemberName,
    path: &'a std::path::Path,
    #[serde(skip_serializing_if = "Option::is_none")]
    from: Option<FromMember<'a>>,
    /// The lane it is, when it varies another member.
    #[serde(skip_serializing_if = "Option::is_none")]
    lane: Option<LaneOf<'a>>,
    #[serde(rename = "plan")]
    planned: Planned<'a>,
}

/// `forge build --dry-run` at a workspace root: each member's plan, in build order.
#[derive(Debug, Serialize)]
struct WorkspacePlanned<'a> {
    members: Vec<MemberPlanned<'a>>,
}

impl Document for WorkspacePlanned<'_> {
    fn text(&self) -> Option<String> {
        let parts: Vec<String> = self
            .members
            .iter()
            .map(|member| {
                let from = match &member.from {
                    None => String::new(),
                    Some(FromMember { member, image }) => match image {
                        Some(image) => format!(", from member {member} ({image})"),
                        None => format!(", from member {member} (not pushed yet)"),
                    },
                };
                let lane = match &member.lane {
                    Some(LaneOf { kind, varies }) => format!(", {kind} lane of {varies}"),
                    None => String::new(),
                };
                format!(
                    "member {} ({}){lane}{from}\n{}",
                    member.name,
                    member.path.display(),
                    member.planned.text
                )
            })
            .collect();
        Some(parts.join("\n"))
    }
}

/// `forge pin bump NAME` at a workspace root: the pin moved in every member that has it (the
/// base in every member not built from another), each first in a dry run so that a move one
/// member refuses moves none; then the members the moves invalidate named, in build order: each
/// member that moved and each member built from one of them.
pub fn pin_bump(
    workspace: &crate::workspace::Workspace,
    options: &crate::bump::PinBumpOptions,
    printer: &Printer,
) -> anyhow::Result<()> {
    use crate::bump::{BumpMode, BumpTarget, Bumped};
    let order = workspace.order(&[])?;
    let using: Vec<&Member> = order
        .iter()
        .copied()
        .filter(|member| match &options.target {
            // A lane moves with the member it varies, whose pins.toml holds the pin.
            _ if member.recipe.pins.lane.is_some() => false,
            BumpTarget::Base => member.from.is_none(),
            BumpTarget::Pin(name) => member.recipe.pins.pins.contains_key(name),
        })
        .collect();
    if using.is_empty() {
        let target = options.target.to_string();
        let suggestion = crate::bump::closest_name(
            &target,
            order
                .iter()
                .flat_map(|member| member.recipe.pins.pins.keys().map(PinName::as_str)),
        )
        .map(str::to_owned);
        anyhow::bail!(crate::workspace::WorkspaceError::NoMemberPins { target, suggestion });
    }
    // The trial's answers are kept from stdout; its refusal is the command's.
    let (quiet, _answers) = Printer::new(
        crate::printer::Verbosity::Quiet,
        crate::printer::OutputFormat::Json,
        crate::printer::ColorChoice::Never,
    )
    .keeping();
    let mut trial = options.clone();
    trial.mode = BumpMode::DryRun;
    for member in &using {
        super::pin_bump(&member.recipe, &trial, &quiet)
            .with_context(|| format!("member `{}` ({})", member.name, member.path.display()))?;
    }
    let mut moved: Vec<crate::workspace::MemberName> = Vec::new();
    each(&using, "Bumping", "bump", printer, |member, printer| {
        if let Bumped::Moved { .. } = super::pin_bump(&member.recipe, options, printer)? {
            moved.push(member.name.clone());
        }
        Ok(())
    })?;
    if options.mode == BumpMode::Write {
        for member in invalidated(&order, &moved) {
            printer.status(
                "Invalidated",
                format_args!("member {} ({})", member.name, member.path.display()),
            );
        }
    }
    Ok(())
}

/// The members of `order` that `moved` invalidates, in build order: those that moved, each lane
/// of one, and each member built from an invalidated one.
fn invalidated<'a>(
    order: &[&'a Member],
    moved: &[crate::workspace::MemberName],
) -> Vec<&'a Member> {
    let mut stale: Vec<&Member> = Vec::new();
    for member in order {
        let stale_one = |name: Option<&crate::workspace::MemberName>| {
            name.is_some_and(|name| {
                moved.contains(name) || stale.iter().any(|other| &other.name == name)
            })
        };
        if moved.contains(&member.name)
            || stale_one(member.from.as_ref())
            || stale_one(member.varies.as_ref())
        {
            stale.push(member);
        }
    }
    stale
}
