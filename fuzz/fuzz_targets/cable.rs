//! Fuzzes `agora_wire`'s cable parser against the properties of `agora_wire::props::cable`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agora_wire::props::cable(data));
