//! The operations layer: what each command does, in terms of the pipeline stages.

pub mod build;
pub mod pin_list;
pub mod render;

pub use build::build;
pub use pin_list::pin_list;
pub use render::render;
