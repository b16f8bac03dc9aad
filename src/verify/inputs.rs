//! The recipe's inputs now against the ones the record was built from.

use crate::lock::Inputs;

use super::check::{Check, Kind};

/// Each recorded input against its digest now; one that changed is stale.
pub fn inputs(recorded: &Inputs, current: &Inputs) -> Vec<Check> {
    recorded
        .named()
        .into_iter()
        .zip(current.named())
        .map(|((subject, recorded), (_, current))| {
            Check::compare(Kind::Input, subject, recorded.as_str(), current.as_str())
        })
        .collect()
}
