//! Recovery: a kill or a stop at any request of a publication, and the intent the next forge
//! settles or refuses.

use super::*;

/// A stop at any request leaves everything as it was, unless a push had reached the registry:
/// then the tags stay on the new image and forge.lock records exactly what the registry holds,
/// though forge never saw the daemon answer.
#[tokio::test]
async fn a_stop_at_any_request_leaves_all_old_or_what_the_registry_holds() {
    let before = [(MOVING, image('a'))];
    let requests = {
        let bench = Bench::new();
        let engine = MemoryEngine::with(&before);
        let registry = MemoryRegistry::of(&engine);
        let (outcome, _) = bench
            .publish(bench.publication(true, false), &engine, registry)
            .await;
        outcome.unwrap();
        engine.calls().len()
    };
    let mut forward = 0;
    for position in 0..requests {
        let bench = Bench::new();
        let engine = MemoryEngine {
            hang_at: Some(position),
            ..MemoryEngine::with(&before)
        };
        let registry = MemoryRegistry::of(&engine);
        let (outcome, _) = bench
            .publish(bench.publication(true, false), &engine, registry)
            .await;
        let error = outcome.unwrap_err();
        assert!(
            matches!(
                error.downcast_ref::<BuildError>(),
                Some(BuildError::Interrupted { signal: "SIGINT" })
            ),
            "at request {position}: {error:#}"
        );
        assert!(
            !intent::path(bench.folder.path()).exists(),
            "at request {position}"
        );
        let landed = engine.landed.lock().unwrap().clone();
        if landed.is_empty() {
            assert_eq!(engine.tags(), tags(&before), "at request {position}");
            assert_eq!(bench.lock_bytes(), None, "at request {position}");
            continue;
        }
        forward += 1;
        assert_eq!(
            engine.tags(),
            tags(&[(MOVING, built()), (DATED, built())]),
            "at request {position}"
        );
        let record = lock::read(bench.folder.path()).unwrap().unwrap();
        assert_eq!(
            recorded_pushes(&record)
                .into_iter()
                .filter_map(|(tag, pushed)| Some((tag, pushed?)))
                .collect::<BTreeMap<_, _>>(),
            landed
                .into_iter()
                .map(|(tag, held)| (tag, held.digest))
                .collect::<BTreeMap<_, _>>(),
            "at request {position}"
        );
    }
    // The stops after the registry stored a push, before the daemon answered, among them.
    assert!(forward > 0);
}

#[tokio::test]
async fn a_stop_while_the_registry_does_not_answer_ends_at_once_with_nothing_moved() {
    let bench = Bench::new();
    let engine = MemoryEngine::with(&[(MOVING, image('a'))]);
    let (answer, waiting) = mpsc::channel();
    let registry = MemoryRegistry {
        blocked: Some((engine.stop.clone(), waiting)),
        ..MemoryRegistry::default()
    };
    let (outcome, _) = bench
        .publish(bench.publication(true, false), &engine, registry)
        .await;
    drop(answer);
    assert!(matches!(
        outcome.unwrap_err().downcast_ref::<BuildError>(),
        Some(BuildError::Interrupted { .. })
    ));
    assert_eq!(engine.calls().len(), 3, "only the look-ups");
    assert_eq!(engine.tags(), tags(&[(MOVING, image('a'))]));
    assert_eq!(bench.lock_bytes(), None);
}

#[tokio::test]
async fn a_kill_at_any_request_is_settled_by_the_next_forge_to_all_old_or_all_new() {
    let before = [(MOVING, image('a'))];
    let printer = Printer::new(Verbosity::Quiet, OutputFormat::Human, ColorChoice::Never);
    let mut outcomes = BTreeMap::new();
    for position in 0.. {
        let bench = Bench::new();
        let engine = MemoryEngine {
            hang_at: Some(position),
            ..MemoryEngine::with(&before)
        };
        if !bench.killed(&engine).await {
            break;
        }
        let registry = MemoryRegistry::of(&engine);
        let settled = intent::settle(
            &bench.recipe,
            &engine,
            move |_, _| Ok(registry),
            intent::Choice::Rule,
            &printer,
        )
        .await
        .unwrap();
        let record = lock::read(bench.folder.path()).unwrap();
        assert!(
            !intent::path(bench.folder.path()).exists(),
            "at request {position}"
        );
        let landed: BTreeMap<String, Digest> = (engine.landed.lock().unwrap().iter())
            .map(|(tag, held)| (tag.clone(), held.digest.clone()))
            .collect();
        match &record {
            None => {
                assert_eq!(engine.tags(), tags(&before), "at request {position}");
                assert!(landed.is_empty(), "at request {position}: {landed:?}");
            }
            Some(record) => {
                assert_eq!(
                    engine.tags(),
                    tags(&[(MOVING, built()), (DATED, built())]),
                    "at request {position}"
                );
                assert_eq!(record.image.id, built().0, "at request {position}");
                let recorded: BTreeMap<String, Digest> = recorded_pushes(record)
                    .into_iter()
                    .filter_map(|(tag, pushed)| Some((tag, pushed?)))
                    .collect();
                assert_eq!(recorded, landed, "at request {position}");
            }
        }
        // A kill once the registry held the first push, before forge saw it: all new.
        if engine.calls()[position] == Call::Pushed(DATED.to_owned()) {
            assert_eq!(settled, intent::Settled::RolledForward);
        }
        outcomes.insert(position, settled);
    }
    // The kills landed before any tag moved, between the moves, and between the pushes.
    let seen: std::collections::BTreeSet<_> = outcomes.values().copied().collect();
    assert!(seen.contains(&intent::Settled::Nothing), "{outcomes:?}");
    assert!(seen.contains(&intent::Settled::RolledBack), "{outcomes:?}");
    assert!(
        seen.contains(&intent::Settled::RolledForward),
        "{outcomes:?}"
    );
}

/// The position of `call` in what a full publication with a push over `before` asks the
/// daemon.
async fn position_of(before: &[(&str, ImageId)], call: &Call) -> usize {
    let bench = Bench::new();
    let engine = MemoryEngine::with(before);
    assert!(!bench.killed(&engine).await);
    (engine.calls().iter().position(|made| made == call)).unwrap()
}

#[tokio::test]
async fn an_intent_naming_another_repository_or_tag_is_refused_and_nothing_moves() {
    let before = [(MOVING, image('a'))];
    let at = position_of(&before, &Call::Tag(DATED.to_owned(), built())).await;
    for (name, foreign, named) in [
        (
            REPOSITORY,
            "elsewhere/images",
            "repository elsewhere/images",
        ),
        (DATED, "2026-01-01-test", "tag 2026-01-01-test"),
    ] {
        let bench = Bench::new();
        let engine = bench.killed_at(&before, at).await;
        let text = bench.intent_text().unwrap();
        assert!(text.contains(name), "{text}");
        let edited = text.replace(name, foreign);
        std::fs::write(intent::path(bench.folder.path()), &edited).unwrap();
        let tags_then = engine.tags();
        let calls_then = engine.calls().len();
        let error = (bench.settle(
            &engine,
            Ok(MemoryRegistry::of(&engine)),
            intent::Choice::Rule,
        ))
        .await
        .unwrap_err();
        let message = format!("{error:#}");
        assert!(
            matches!(
                error.downcast_ref::<intent::IntentError>(),
                Some(intent::IntentError::Foreign { .. })
            ),
            "{message}"
        );
        assert!(
            message.contains(&format!("names {named}, which is not the recipe's")),
            "{message}"
        );
        assert_eq!(engine.tags(), tags_then);
        assert_eq!(
            engine.calls().len(),
            calls_then,
            "nothing asked of the daemon"
        );
        assert_eq!(bench.intent_text().unwrap(), edited, "the intent stays");
        assert_eq!(bench.lock_bytes(), None);
    }
}

#[tokio::test]
async fn a_tag_whose_image_is_gone_stays_until_a_choice_is_made() {
    let before = [(MOVING, image('a'))];
    let at = position_of(&before, &Call::Push(DATED.to_owned())).await;
    for choice in [intent::Choice::RollForward, intent::Choice::Drop] {
        let bench = Bench::new();
        let engine = bench.killed_at(&before, at).await;
        engine.store.borrow_mut().remove(&image('a'));
        let moved = engine.tags();
        assert_eq!(moved, tags(&[(MOVING, built()), (DATED, built())]));
        let error = (bench.settle(
            &engine,
            Ok(MemoryRegistry::of(&engine)),
            intent::Choice::Rule,
        ))
        .await
        .unwrap_err();
        assert!(matches!(
            error.downcast_ref::<intent::IntentError>(),
            Some(intent::IntentError::BeforeGone(_))
        ));
        let hint = intent_hint(&error);
        assert!(hint.contains("`forge recover --roll-forward`"), "{hint}");
        assert!(hint.contains("`forge recover --drop`"), "{hint}");
        assert_eq!(engine.tags(), moved, "nothing moved");
        assert!(bench.intent_text().is_some(), "the intent stays");
        assert_eq!(bench.lock_bytes(), None);
        let settled = (bench.settle(&engine, Err(anyhow::anyhow!("not asked")), choice))
            .await
            .unwrap();
        assert!(bench.intent_text().is_none());
        assert_eq!(engine.tags(), moved);
        match choice {
            intent::Choice::RollForward => {
                assert_eq!(settled, intent::Settled::RolledForward);
                let record = lock::read(bench.folder.path()).unwrap().unwrap();
                assert_eq!(record.image.id, built().0);
                assert_eq!(
                    recorded_pushes(&record),
                    [(MOVING.to_owned(), None), (DATED.to_owned(), None)]
                );
            }
            _ => {
                assert_eq!(settled, intent::Settled::Dropped);
                assert_eq!(bench.lock_bytes(), None);
            }
        }
    }
}

#[tokio::test]
async fn a_registry_that_cannot_be_asked_leaves_the_intent_and_moves_nothing() {
    let before = [(MOVING, image('a'))];
    let at = position_of(&before, &Call::Push(DATED.to_owned())).await;
    let bench = Bench::new();
    let engine = bench.killed_at(&before, at).await;
    let moved = engine.tags();
    let refused = Err(anyhow::anyhow!("connection refused"));
    let error = (bench.settle(&engine, refused, intent::Choice::Rule))
        .await
        .unwrap_err();
    let message = format!("{error:#}");
    assert!(
        message.starts_with(&format!(
            "cannot ask {REPOSITORY} which tags the interrupted publication of"
        )),
        "{message}"
    );
    assert!(message.ends_with("connection refused"), "{message}");
    let hint = intent_hint(&error);
    assert!(hint.contains("`forge recover --roll-back`"), "{hint}");
    assert_eq!(engine.tags(), moved);
    assert!(bench.intent_text().is_some());
    // Asked again once it answers, the registry holds nothing of it: all old.
    let settled = (bench.settle(
        &engine,
        Ok(MemoryRegistry::of(&engine)),
        intent::Choice::Rule,
    ))
    .await
    .unwrap();
    assert_eq!(settled, intent::Settled::RolledBack);
    assert_eq!(engine.tags(), tags(&before));
    assert!(bench.intent_text().is_none());
}

/// The hint of an intent error.
fn intent_hint(error: &anyhow::Error) -> String {
    use crate::diagnostics::{Advice, Advise as _};
    match error
        .downcast_ref::<intent::IntentError>()
        .map(|error| error.advice())
    {
        Some(Advice::Hint(hint)) => hint,
        other => panic!("no hint: {other:?} for {error:#}"),
    }
}

/// An intent left behind and brought back later (`git stash -u`, then `pop`) after the recipe
/// was published again: settling it by the rule would re-point the tags at the old image and
/// write its record over the new one. It is refused, naming what moved, with nothing moved:
/// when forge.lock changed since the publication began, and when a push forge noted is no
/// longer the image's in the registry.
#[tokio::test]
async fn a_stale_intent_is_refused_not_settled_over_a_newer_publication() {
    let before = [(MOVING, image('a'))];
    let at = position_of(&before, &Call::Push(MOVING.to_owned())).await;
    let bench = Bench::new();
    let engine = bench.killed_at(&before, at).await;
    let moved = engine.tags();
    let left = intent::Intent::read(bench.folder.path()).unwrap().unwrap();
    assert!(!left.pushed.is_empty(), "a push was noted: {left:?}");

    // Published again meanwhile: forge.lock records another image.
    let mut newer = left.record.clone();
    newer.image.id = Digest::filled('9');
    newer.write(bench.folder.path()).unwrap();
    let lock = bench.lock_bytes();
    let error = (bench.settle(
        &engine,
        Ok(MemoryRegistry::of(&engine)),
        intent::Choice::Rule,
    ))
    .await
    .unwrap_err();
    let message = format!("{error:#}");
    assert!(
        message.contains("is stale: forge.lock has changed since it began"),
        "{message}"
    );
    assert!(intent_hint(&error).contains("`forge recover --drop`"));
    assert_eq!((engine.tags(), bench.lock_bytes()), (moved.clone(), lock));
    assert!(bench.intent_text().is_some());

    // forge.lock as it was, but the registry's dated tag now holds another image.
    std::fs::remove_file(bench.folder.path().join(lock::LOCK_FILE)).unwrap();
    let other = MemoryRegistry::holding(DATED, held('8', None, Some(Digest::filled('7'))));
    let error = (bench.settle(&engine, Ok(other), intent::Choice::Rule))
        .await
        .unwrap_err();
    let message = format!("{error:#}");
    assert!(
        message.contains(&format!(
            "forge saw :{DATED} pushed, and the registry no longer holds it"
        )),
        "{message}"
    );
    assert_eq!((engine.tags(), bench.lock_bytes()), (moved, None));
    assert!(bench.intent_text().is_some());
}
