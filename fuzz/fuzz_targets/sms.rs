//! Fuzzes `agora_wire`'s sms parser against the properties of `agora_wire::props::sms`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agora_wire::props::sms(data));
