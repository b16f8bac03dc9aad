//! The bounds forge puts on work an input can make it do, in one place: a template that loops
//! or a server that never stops sending ends in an error naming the bound, not in a hang.

/// How much work a template may do (minijinja's fuel): far more than a recipe's templates
/// need, far less than a loop that would hold every command up.
pub const TEMPLATE_FUEL: u64 = 1_000_000;
