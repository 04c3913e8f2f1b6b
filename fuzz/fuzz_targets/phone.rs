//! Fuzzes `agora_wire`'s phone parser against the properties of `agora_wire::props::phone`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agora_wire::props::phone(data));
