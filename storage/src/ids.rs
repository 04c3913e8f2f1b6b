//! Identifiers: random ids for records, and the validated [`Handle`].

use std::fmt;

use crate::secret::random_bytes;

const ALPHABET: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";

/// A new random id: `prefix` + 16 characters of lowercase Crockford base32 (80 random bits).
pub fn new_id(prefix: &str) -> String {
    let bytes = random_bytes::<10>();
    let mut out = String::with_capacity(prefix.len() + 16);
    out.push_str(prefix);
    let mut acc: u128 = 0;
    for b in bytes {
        acc = (acc << 8) | u128::from(b);
    }
    for i in (0..16).rev() {
        let idx = ((acc >> (i * 5)) & 31) as usize;
        out.push(char::from(ALPHABET[idx]));
    }
    out
}

/// True when `s` looks like an id this server made with `prefix` (so a malformed id from a
/// client never reaches a query).
pub fn is_id(s: &str, prefix: &str) -> bool {
    s.strip_prefix(prefix).is_some_and(|rest| rest.len() == 16 && rest.bytes().all(|b| ALPHABET.contains(&b)))
}

/// A handle, unique across people and bots: `^[a-z0-9][a-z0-9_.-]{0,31}$`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Handle(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a handle is 1 to 32 characters of a-z, 0-9, '_', '.' and '-', starting with a letter or digit")]
pub struct BadHandle;

impl Handle {
    pub fn parse(s: &str) -> Result<Handle, BadHandle> {
        let b = s.as_bytes();
        let first_ok = b.first().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
        let rest_ok = b[1.min(b.len())..]
            .iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'_' | b'.' | b'-'));
        if first_ok && rest_ok && b.len() <= 32 { Ok(Handle(s.to_owned())) } else { Err(BadHandle) }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_prefixed_base32() {
        let id = new_id("p_");
        assert!(is_id(&id, "p_"), "{id}");
        assert!(!is_id(&id, "c_"));
        assert!(!is_id("p_0123", "p_"));
        assert!(!is_id("p_0123456789ABCDEF", "p_"));
        assert_ne!(new_id("p_"), new_id("p_"));
    }

    #[test]
    fn handles() {
        for ok in ["ada", "a", "0", "ada.l_b-c", "abcdefghijklmnopqrstuvwxyz012345"] {
            assert!(Handle::parse(ok).is_ok(), "{ok}");
        }
        for bad in ["", "Ada", "_ada", ".a", "-a", "a b", "abcdefghijklmnopqrstuvwxyz0123456", "é", "a@b"] {
            assert!(Handle::parse(bad).is_err(), "{bad}");
        }
    }
}
