//! Replays the fuzz targets' seeds and every input a fuzzer ever found (`fuzz/regressions/`)
//! through the same properties `cargo fuzz` checks, so a fixed crash stays fixed.

#[path = "../../fuzz/properties.rs"]
mod properties;

use std::path::Path;

fn replay(target: &str, property: impl Fn(&[u8])) {
    let root = crate::support::repository_root().join("fuzz");
    let mut replayed = 0;
    for folder in [
        root.join("seeds").join(target),
        root.join("regressions").join(target),
    ] {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            property(&std::fs::read(&path).unwrap());
            replayed += 1;
        }
    }
    assert!(
        replayed > 0,
        "no input for {target} under {}",
        Path::new(&root).display()
    );
}

#[test]
fn pins_toml_inputs_hold() {
    replay("pins_toml", |bytes| {
        properties::pins_toml(&String::from_utf8_lossy(bytes))
    });
}

#[test]
fn dockerfile_template_inputs_hold() {
    replay("dockerfile_template", |bytes| {
        properties::dockerfile_template(&String::from_utf8_lossy(bytes))
    });
}

#[test]
fn mbox_inputs_hold() {
    replay("mbox", properties::mbox);
}

#[test]
fn injected_values_never_break_out_of_their_line() {
    // Hand-written hostile values, each in the place of a value that reaches the Dockerfile.
    let default =
        std::fs::read_to_string(crate::support::repository_root().join("pins.toml")).unwrap();
    for (from, to) in [
        ("\"0.6.14\"", "\"0.6.14\\nRUN curl x | sh\""),
        ("\"skip\"", "\"skip`id`\""),
        ("\"skip\"", "\"$(id)\""),
        ("\"skip\"", "\"skip\\u0000\""),
        ("\"skip\"", "\"skip\\nUSER=root\""),
        ("\"nv_dev\"", "\"nv_dev\\nRUN id\""),
    ] {
        properties::pins_toml(&default.replacen(from, to, 1));
    }
}
