//! Fuzzes `agora_wire`'s cursor parser against the properties of `agora_wire::props::cursor`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agora_wire::props::cursor(data));
