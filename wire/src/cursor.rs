//! Opaque cursors: a kind tag and a payload, `<kind>:<payload>` in base64url without padding. Only
//! what this server made decodes.

use base64::Engine as _;

/// A cursor this server did not issue (for this list).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadCursor;

pub fn encode(kind: &str, payload: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{kind}:{payload}"))
}

/// The payload of a cursor of `kind`.
pub fn decode(kind: &str, cursor: &str) -> Result<String, BadCursor> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(cursor).map_err(|_| BadCursor)?;
    let text = String::from_utf8(bytes).map_err(|_| BadCursor)?;
    let payload = text.strip_prefix(kind).and_then(|r| r.strip_prefix(':')).ok_or(BadCursor)?;
    Ok(payload.to_owned())
}

/// A cursor whose payload is a non-negative number written as this server writes it: plain
/// digits, no sign, no leading zero (fuzzing found `m1:038118` accepted as 38118).
pub fn decode_number(kind: &str, cursor: &str) -> Result<i64, BadCursor> {
    let payload = decode(kind, cursor)?;
    payload.parse::<i64>().ok().filter(|n| *n >= 0 && n.to_string() == payload).ok_or(BadCursor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_refuse_strangers() {
        let c = encode("m1", "c_x:42");
        assert_eq!(decode("m1", &c), Ok("c_x:42".to_owned()));
        assert!(decode("s1", &c).is_err(), "a cursor of another list");
        assert!(decode("m1", "not base64!").is_err());
        assert!(decode("m1", "").is_err());
        assert_eq!(decode_number("n", &encode("n", "7")), Ok(7));
        assert!(decode_number("n", &encode("n", "-7")).is_err());
        assert!(decode_number("n", &encode("n", "+7")).is_err());
        assert!(decode_number("n", &encode("n", "99999999999999999999")).is_err());
        assert!(decode_number("n", &encode("n", "07")).is_err(), "not how this server writes 7");
        assert_eq!(decode_number("n", &encode("n", "0")), Ok(0));
    }
}
