//! Shell completion that asks forge back: `source <(forge completions bash)` registers a
//! function which runs forge with `FORGE_COMPLETE` set for the words to offer, so that the
//! recipe's own names complete too: the pins of the recipe found from the working folder for
//! `pin bump`, and the image references forge.lock records for `verify-digest`, `pull` and
//! `report`. This is clap's environment-driven completion (clap_complete's `CompleteEnv`, which
//! cargo's own completion uses); a script generated ahead of time could not know the pins.

use clap_complete::engine::CompletionCandidate;

/// The environment variable that turns a run of forge into a completion request.
pub const VAR: &str = "FORGE_COMPLETE";

/// Answers a completion request and exits when `FORGE_COMPLETE` is set; otherwise returns.
pub fn answer_if_asked() {
    clap_complete::CompleteEnv::with_factory(<crate::cli::Cli as clap::CommandFactory>::command)
        .var(VAR)
        .complete();
}

/// The registration script for `shell`: what `forge completions SHELL` prints.
pub fn registration(shell: clap_complete::Shell) -> Vec<u8> {
    let name = shell.to_string();
    let mut script = Vec::new();
    if let Some(completer) = clap_complete::env::Shells::builtins().completer(&name) {
        // The shell calls `forge` from PATH, so an upgraded binary answers for itself.
        let _ = completer.write_registration(VAR, "forge", "forge", "forge", &mut script);
    }
    script
}

/// `base` and every pin of the recipe found from the working folder, quietly empty when there
/// is none or it does not load.
pub fn pin_names() -> Vec<CompletionCandidate> {
    let Ok(recipe) = crate::recipe::Recipe::open(&crate::recipe::discover()) else {
        return Vec::new();
    };
    std::iter::once(CompletionCandidate::new("base").help(Some("the base image".into())))
        .chain(
            recipe
                .pins
                .pins
                .keys()
                .map(|name| CompletionCandidate::new(name.to_string())),
        )
        .collect()
}

/// Every `repository:tag` forge.lock records, the pushed ones (those a registry holds) first.
pub fn recorded_references() -> Vec<CompletionCandidate> {
    let Ok(Some(record)) = crate::lock::read(&crate::recipe::discover()) else {
        return Vec::new();
    };
    let mut tags: Vec<_> = record.tags.iter().collect();
    tags.sort_by_key(|tag| tag.pushed.is_none());
    tags.into_iter()
        .map(|tag| CompletionCandidate::new(format!("{}:{}", record.image.repository, tag.name)))
        .collect()
}
