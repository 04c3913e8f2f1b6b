//! Every input saved under `wire/regressions/<target>/` (crashes found by fuzzing, and a few
//! hand-made edge cases) still keeps its target's properties.

use std::path::Path;

#[test]
fn every_saved_input_keeps_its_targets_properties() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions");
    let mut ran = 0;
    for (name, check) in agora_wire::props::TARGETS {
        let dir = root.join(name);
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries {
            let path = entry.expect("entry").path();
            let data = std::fs::read(&path).expect("saved input");
            let outcome = std::panic::catch_unwind(|| check(&data));
            assert!(outcome.is_ok(), "{} fails {name}'s properties again", path.display());
            ran += 1;
        }
    }
    assert!(ran > 0, "no saved inputs under {}", root.display());
}

#[test]
fn the_properties_hold_for_plain_inputs() {
    for (_, check) in agora_wire::props::TARGETS {
        for input in [
            "",
            "a",
            "text/markdown",
            "(312) 555-0234",
            "From=%2B1&Body=STOP",
            "{\"command\":\"x\",\"identifier\":\"y\"}",
        ] {
            check(input.as_bytes());
        }
    }
}
