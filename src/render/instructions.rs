//! A Dockerfile's text in, its instructions out, read as Docker reads them: a line that ends
//! in `\\` (spaces after it allowed) continues on the next, comment lines are dropped even
//! inside a continued instruction, and blank lines end nothing.

/// One instruction of a Dockerfile (continuation lines joined, comments dropped).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Instruction {
    /// Its position among the instructions, 1-based, as `docker build` counts steps.
    pub number: usize,
    /// The line it starts on, 1-based.
    pub line: usize,
    /// The instruction as one line.
    pub text: String,
}

impl Instruction {
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
pub fn instructions(dockerfile: &str) -> Vec<Instruction> {
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
            steps.push(Instruction {
                number: steps.len() + 1,
                line: start,
                text,
            });
        }
    }
    if let Some((start, text)) = current {
        steps.push(Instruction {
            number: steps.len() + 1,
            line: start,
            text,
        });
    }
    steps
}

impl Instruction {
    /// Whether the instruction's keyword is `keyword`, in any case (as the builder reads it).
    pub fn is(&self, keyword: &str) -> bool {
        self.text
            .split_whitespace()
            .next()
            .is_some_and(|word| word.eq_ignore_ascii_case(keyword))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_continuations_with_trailing_spaces_and_skips_comments() {
        let text = "# header\nFROM base:1\n\nENV A=b\nrun one \\  \n # inner comment\n && two\nRUN three\n";
        let found = instructions(text);
        let texts: Vec<&str> = found.iter().map(|step| step.text.as_str()).collect();
        assert_eq!(
            texts,
            ["FROM base:1", "ENV A=b", "run one && two", "RUN three"]
        );
        assert_eq!(found[2].line, 5);
        assert!(found[2].is("RUN") && found[2].is("run"));
    }
}
