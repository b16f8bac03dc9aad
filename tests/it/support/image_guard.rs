//! The images a test makes, removed when the test ends, passing or failing.
//!
//! A recipe a test builds carries the label `dev.forge.test` with a value of the test's own (its
//! image repository). Every image of the daemon with that label is the test's: the images forge
//! tagged, those a refused, failed or interrupted build left untagged, and those the test
//! committed from them (a committed image keeps its parent's labels). `ImageGuard` removes them
//! all when dropped. The shared base images carry no such label and stay.

use std::process::Command;

/// The label that marks an image as made by one test.
pub(crate) const LABEL: &str = "dev.forge.test";

/// Removes, when dropped, every image labelled `LABEL=value`.
#[derive(Debug)]
pub(crate) struct ImageGuard {
    value: String,
}

impl ImageGuard {
    /// A guard over the images labelled with `value`, which no other test may use.
    pub(crate) fn new(value: &str) -> Self {
        Self {
            value: value.to_owned(),
        }
    }

    /// The `[image.labels]` entry of pins.toml that puts a recipe's images under this guard.
    pub(crate) fn label_entry(&self) -> String {
        format!("\"{LABEL}\" = \"{}\"", self.value)
    }

    /// The ids of the images labelled for this guard, each once.
    pub(crate) fn images(&self) -> Vec<String> {
        let filter = format!("label={LABEL}={}", self.value);
        let Ok(output) = Command::new("docker")
            .args([
                "images",
                "--all",
                "--quiet",
                "--no-trunc",
                "--filter",
                &filter,
            ])
            .output()
        else {
            return Vec::new();
        };
        let mut ids: Vec<String> = String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(str::to_owned)
            .collect();
        ids.sort();
        ids.dedup();
        ids
    }
}

impl Drop for ImageGuard {
    fn drop(&mut self) {
        // An image with a child (one committed from it) goes only once the child has gone, so
        // each round removes what it can until nothing is left.
        for _ in 0..4 {
            let images = self.images();
            if images.is_empty() {
                return;
            }
            let _ = Command::new("docker")
                .args(["image", "rm", "--force"])
                .args(&images)
                .output();
        }
    }
}
