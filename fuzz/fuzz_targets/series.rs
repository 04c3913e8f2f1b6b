//! Fuzzes `agora_wire`'s series parameters (durations, `agg`, `fill`) against the properties of
//! `agora_wire::props::series`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agora_wire::props::series(data));
