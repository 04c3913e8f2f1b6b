//! Secrets: random tokens from the OS generator, stored only as SHA-256 hashes and compared in
//! constant time.

use base64::Engine as _;
use sha2::{Digest, Sha256};

/// Fills `buf` from the operating system's generator.
pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut buf = [0u8; N];
    // The OS generator failing leaves no safe way to make secrets: stop rather than make weak ones.
    #[allow(clippy::expect_used)]
    getrandom::fill(&mut buf).expect("the operating system's random generator failed");
    buf
}

/// A new token: `prefix` + 32 random bytes in base64url without padding.
pub fn new_token(prefix: &str) -> String {
    let bytes = random_bytes::<32>();
    format!("{prefix}{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

/// The SHA-256 of a token, in lowercase hex: the only form in which a token is stored.
pub fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// Constant-time equality of two byte strings.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq as _;
    a.len() == b.len() && bool::from(a.ct_eq(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_have_prefix_and_43_chars_of_base64url() {
        let t = new_token("chatbot_");
        let rest = t.strip_prefix("chatbot_").expect("prefix");
        assert_eq!(rest.len(), 43);
        assert!(rest.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
        assert_ne!(new_token("x"), new_token("x"));
    }

    #[test]
    fn hash_is_sha256_hex() {
        assert_eq!(token_hash("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn constant_time_eq_compares() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }
}
