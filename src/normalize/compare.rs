//! Two images compared layer by layer, and in each layer that differs, file by file.
