//! The builder's stream in; steps and progress `Event`s out: which steps ran, which came from
//! the cache, which failed, and the last lines each printed. BuildKit reports vertexes and logs;
//! the classic builder prints `Step N/M : INSTRUCTION` and the step's output as text. Each change
//! is handed on as an `Event` (as is a push's progress, from `Docker::push`) to whoever shows it.

use std::collections::{HashMap, VecDeque};

use bollard::moby::buildkit::v1::StatusResponse;

/// How many lines of a step's output are kept for the error report.
const TAIL_LINES: usize = 12;

/// The line the classic builder prints under a step it took from its cache.
const CLASSIC_CACHED: &str = "---> Using cache";

/// Where a step is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepState {
    /// Running now.
    Running,
    /// Taken from the build cache.
    Cached,
    /// Ran and succeeded.
    Done,
    /// Ran and failed.
    Failed,
}

/// Something the builder or a push reported, for whoever shows progress.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// A step started or changed state.
    Step {
        /// The builder's id for it.
        id: &'a str,
        /// Its name, such as `[3/7] RUN python3 -c ...`.
        name: &'a str,
        /// Its new state.
        state: StepState,
    },
    /// A line of a step's output.
    Output {
        /// The step's id.
        id: &'a str,
        /// The step's name.
        name: &'a str,
        /// The line, without its newline.
        line: &'a str,
    },
    /// A push's progress: a layer state, or the digest the registry stored.
    Push {
        /// `repository:tag`.
        reference: &'a str,
        /// What the daemon said (`Pushed`, `Layer already exists`, `pushed sha256:…`).
        status: &'a str,
    },
    /// One layer of a pull moving: its bytes downloaded or extracted so far (`current` of
    /// `total`), or the state that ends it (`Pull complete`, `Already exists`, with no bytes).
    /// A live display draws them; a log keeps to the `Pull` lines.
    Layer {
        /// `repository@digest`, or the node that pulls it.
        reference: &'a str,
        /// The layer's short id, as the daemon names it.
        layer: &'a str,
        /// `Downloading`, `Extracting`, `Pull complete`, ...
        status: &'a str,
        /// Bytes done.
        current: u64,
        /// Bytes in all, when the daemon knows.
        total: Option<u64>,
    },
    /// A pull's progress: a layer state, or the daemon's summary.
    Pull {
        /// `repository@digest`.
        reference: &'a str,
        /// What the daemon said (`Pull complete`, `Status: Downloaded newer image ...`).
        status: &'a str,
    },
}

#[derive(Debug)]
struct Step {
    name: String,
    state: StepState,
    tail: VecDeque<String>,
    partial: String,
}

/// The steps of one build, as far as the stream has told.
#[derive(Debug, Default)]
pub struct Steps {
    order: Vec<String>,
    steps: HashMap<String, Step>,
    classic_text: String,
    classic_current: Option<String>,
}

impl Steps {
    /// Takes in one BuildKit status message.
    pub fn buildkit(&mut self, status: &StatusResponse, events: &mut dyn FnMut(Event<'_>)) {
        for vertex in &status.vertexes {
            let state = if !vertex.error.is_empty() {
                StepState::Failed
            } else if vertex.cached {
                StepState::Cached
            } else if vertex.completed.is_some() {
                StepState::Done
            } else if vertex.started.is_some() {
                StepState::Running
            } else {
                continue;
            };
            self.set_state(&vertex.digest, &vertex.name, state, events);
        }
        for log in &status.logs {
            let text = String::from_utf8_lossy(&log.msg);
            self.output(&log.vertex, &text, events);
        }
    }

    /// Takes in a chunk of the classic builder's text stream.
    pub fn classic(&mut self, text: &str, events: &mut dyn FnMut(Event<'_>)) {
        self.classic_text.push_str(text);
        while let Some(newline) = self.classic_text.find('\n') {
            let line: String = self.classic_text.drain(..=newline).collect();
            self.classic_line(line.trim_end_matches(['\n', '\r']), events);
        }
    }

    fn classic_line(&mut self, line: &str, events: &mut dyn FnMut(Event<'_>)) {
        if let Some((number, instruction)) = line
            .strip_prefix("Step ")
            .and_then(|rest| rest.split_once(" : "))
        {
            self.finish_classic_step(events);
            let id = format!("step-{number}");
            let name = format!("[{number}] {instruction}");
            self.set_state(&id, &name, StepState::Running, events);
            self.classic_current = Some(id);
            return;
        }
        let Some(current) = self.classic_current.clone() else {
            return;
        };
        if line.trim() == CLASSIC_CACHED {
            let name = self.steps[&current].name.clone();
            self.set_state(&current, &name, StepState::Cached, events);
        } else if line.starts_with(" ---> ")
            || line.starts_with("Removing intermediate container")
            || line.starts_with("Successfully built")
            || line.starts_with("Successfully tagged")
        {
            // The builder's own bookkeeping, not the step's output.
        } else {
            self.output(&current, &format!("{line}\n"), events);
        }
    }

    /// Marks the classic builder's running step as done once the stream moves past it.
    pub fn finish_classic_step(&mut self, events: &mut dyn FnMut(Event<'_>)) {
        if let Some(current) = self.classic_current.take() {
            let step = &self.steps[&current];
            if step.state == StepState::Running {
                let name = step.name.clone();
                self.set_state(&current, &name, StepState::Done, events);
            }
        }
    }

    /// The step that failed (or, when the builder named none, the last one still running),
    /// with the last lines it printed.
    pub fn failed(&self) -> Option<(String, Vec<String>)> {
        let failed = self
            .order
            .iter()
            .find(|id| self.steps[*id].state == StepState::Failed)
            .or_else(|| {
                self.order
                    .iter()
                    .rev()
                    .find(|id| self.steps[*id].state == StepState::Running)
            })?;
        let step = &self.steps[failed];
        let mut tail: Vec<String> = step.tail.iter().cloned().collect();
        if !step.partial.is_empty() {
            tail.push(step.partial.clone());
        }
        Some((step.name.clone(), tail))
    }

    /// How many steps came from the cache and how many ran.
    pub fn counts(&self) -> (usize, usize) {
        let cached = self
            .steps
            .values()
            .filter(|step| step.state == StepState::Cached)
            .count();
        let done = self
            .steps
            .values()
            .filter(|step| step.state == StepState::Done)
            .count();
        (cached, done)
    }

    fn set_state(
        &mut self,
        id: &str,
        name: &str,
        state: StepState,
        events: &mut dyn FnMut(Event<'_>),
    ) {
        match self.steps.get_mut(id) {
            // BuildKit repeats vertexes in later messages, and may report a finished one as
            // started again: a finished step stays finished.
            Some(step) if step.state == state || step.state != StepState::Running => return,
            Some(step) => step.state = state,
            None => {
                self.order.push(id.to_owned());
                self.steps.insert(
                    id.to_owned(),
                    Step {
                        name: name.to_owned(),
                        state,
                        tail: VecDeque::new(),
                        partial: String::new(),
                    },
                );
            }
        }
        events(Event::Step { id, name, state });
    }

    fn output(&mut self, id: &str, text: &str, events: &mut dyn FnMut(Event<'_>)) {
        let Some(step) = self.steps.get_mut(id) else {
            return;
        };
        step.partial.push_str(text);
        while let Some(newline) = step.partial.find('\n') {
            let line: String = step.partial.drain(..=newline).collect();
            let line = line.trim_end_matches(['\n', '\r']).to_owned();
            events(Event::Output {
                id,
                name: &step.name,
                line: &line,
            });
            if step.tail.len() == TAIL_LINES {
                step.tail.pop_front();
            }
            step.tail.push_back(line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classic_text_becomes_steps_with_their_output() {
        let mut steps = Steps::default();
        let mut lines = Vec::new();
        for chunk in [
            "Step 1/3 : FROM forge-base\n ---> 1a2b3c\n",
            "Step 2/3 : RUN echo one\n ---> Using cache\n ---> 4d5e6f\n",
            "Step 3/3 : RUN echo two && exit 3\n ---> Running in 789\n",
            "tw",
            "o\nlast words\n",
        ] {
            steps.classic(chunk, &mut |event| {
                if let Event::Output { line, .. } = event {
                    lines.push(line.to_owned());
                }
            });
        }
        let (name, tail) = steps.failed().expect("a running step");
        assert_eq!(name, "[3/3] RUN echo two && exit 3");
        assert_eq!(tail, ["two", "last words"]);
        assert_eq!(steps.counts(), (1, 1));
        assert_eq!(lines, ["two", "last words"]);
    }
}
