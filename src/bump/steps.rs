//! Two renders of a Dockerfile in, the steps a rebuild must run again out: the first
//! instruction that differs and every instruction after it, since a builder's cache holds only
//! up to the first changed step.

/// One instruction of a Dockerfile (continuation lines joined, comments dropped).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Step {
    /// Its position among the instructions, 1-based, as `docker build` counts steps.
    pub number: usize,
    /// The line it starts on, 1-based.
    pub line: usize,
    /// The instruction as one line.
    pub text: String,
}

impl Step {
    /// The instruction cut to `width` characters, for one-line reports.
    pub fn summary(&self, width: usize) -> String {
        if self.text.chars().count() <= width {
            self.text.clone()
        } else {
            let cut: String = self.text.chars().take(width.saturating_sub(1)).collect();
            format!("{cut}…")
        }
    }
}

/// The instructions of `dockerfile`, in order.
pub fn steps(dockerfile: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (index, line) in dockerfile.lines().enumerate() {
        let trimmed = line.trim();
        // Comment lines are dropped, inside a continued instruction too (as the builder does).
        if trimmed.starts_with('#') || (trimmed.is_empty() && current.is_none()) {
            continue;
        }
        let (continued, body) = match trimmed.strip_suffix('\\') {
            Some(body) => (true, body.trim_end()),
            None => (false, trimmed),
        };
        let (start, mut text) = current.take().unwrap_or((index + 1, String::new()));
        if !text.is_empty() && !body.is_empty() {
            text.push(' ');
        }
        text.push_str(body);
        if continued {
            current = Some((start, text));
        } else if !text.is_empty() {
            steps.push(Step {
                number: steps.len() + 1,
                line: start,
                text,
            });
        }
    }
    if let Some((start, text)) = current {
        steps.push(Step {
            number: steps.len() + 1,
            line: start,
            text,
        });
    }
    steps
}

/// What a change of the Dockerfile costs a cached rebuild.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Invalidated {
    /// How many steps the new Dockerfile has.
    pub total: usize,
    /// The steps of the new Dockerfile that run again: the first changed one and all after it.
    pub steps: Vec<Step>,
}

/// The steps of `new` that a builder with `old` in its cache must run again; `None` when every
/// instruction is unchanged (comments may differ).
pub fn invalidated(old: &str, new: &str) -> Option<Invalidated> {
    let (old, new) = (steps(old), steps(new));
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
    fn joins_continuations_and_skips_comments() {
        let steps = steps(OLD);
        let texts: Vec<&str> = steps.iter().map(|step| step.text.as_str()).collect();
        assert_eq!(
            texts,
            ["FROM base:1", "ENV A=b", "RUN one && two", "RUN three"]
        );
        assert_eq!(steps[2].line, 5);
    }

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
