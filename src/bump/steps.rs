//! Two renders of a Dockerfile in, the steps a rebuild must run again out: the first
//! instruction that differs and every instruction after it, since a builder's cache holds only
//! up to the first changed step.

use crate::render::instructions::{Instruction, instructions};

/// What a change of the Dockerfile costs a cached rebuild.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Invalidated {
    /// How many steps the new Dockerfile has.
    pub total: usize,
    /// The steps of the new Dockerfile that run again: the first changed one and all after it.
    pub steps: Vec<Instruction>,
}

/// The steps of `new` that a builder with `old` in its cache must run again; `None` when every
/// instruction is unchanged (comments may differ).
pub fn invalidated(old: &str, new: &str) -> Option<Invalidated> {
    let (old, new) = (instructions(old), instructions(new));
    let first = old
        .iter()
        .zip(&new)
        .position(|(old, new)| old.text != new.text)
        .or_else(|| (old.len() != new.len()).then(|| old.len().min(new.len())))?;
    if first >= new.len() {
        // Only removals at the end: nothing runs again.
        return None;
    }
    Some(Invalidated {
        total: new.len(),
        steps: new[first..].to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str =
        "# header\nFROM base:1\n\nENV A=b\nRUN one \\\n # inner comment\n && two\nRUN three\n";

    #[test]
    fn the_first_changed_step_and_all_after_it_are_invalidated() {
        let new = OLD.replace("&& two", "&& 2");
        let cost = invalidated(OLD, &new).unwrap();
        assert_eq!(cost.total, 4);
        let numbers: Vec<usize> = cost.steps.iter().map(|step| step.number).collect();
        assert_eq!(numbers, [3, 4]);
        assert!(invalidated(OLD, &OLD.replace("# header", "# other")).is_none());
    }
}
