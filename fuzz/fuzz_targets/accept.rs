//! Fuzzes `agora_wire`'s accept parser against the properties of `agora_wire::props::accept`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agora_wire::props::accept(data));
