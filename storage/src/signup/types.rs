//! The sign-up demo's domain values, each built only by parsing (or, for the secrets, by the OS
//! generator): [`FirstName`], [`PhoneNumber`], [`Reason`], [`PublicId`], [`Code`], the keyed
//! hashes of [`SignupKey`] and the America/Chicago [`DemoDay`].

use std::fmt;

use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::secret::random_bytes;

/// Why a field of a sign-up request was refused. The message names the field and the rule, so it
/// can be shown to the caller as it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldError {
    #[error("first_name must be 1 to 40 letters")]
    FirstName,
    #[error(
        "phone must be a 10-digit US mobile number (area code and exchange start with 2-9, are not N11, and 555-01XX is fictional)"
    )]
    Phone,
    #[error("reason must be at most 100 characters with no control characters")]
    Reason,
}

/// A first name: 1 to 40 Unicode letters (surrounding spaces are trimmed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FirstName(String);

impl FirstName {
    pub const MAX_CHARS: usize = 40;

    pub fn parse(s: &str) -> Result<FirstName, FieldError> {
        let s = s.trim();
        let n = s.chars().count();
        if (1..=Self::MAX_CHARS).contains(&n) && s.chars().all(char::is_alphabetic) {
            Ok(FirstName(s.to_owned()))
        } else {
            Err(FieldError::FirstName)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A US number of the North American Numbering Plan, kept as its ten digits.
///
/// Spaces, dashes, dots, parentheses and a leading `+1` or `1` are allowed and stripped. The area
/// code and the exchange start with 2-9 and are not N11; 555-0100 to 555-0199 are reserved for
/// fiction and refused.
#[derive(Clone, PartialEq, Eq)]
pub struct PhoneNumber(String);

impl PhoneNumber {
    /// Parsed by `agora_wire::phone` (which is fuzzed).
    pub fn parse(s: &str) -> Result<PhoneNumber, FieldError> {
        agora_wire::phone::parse_us(s).map(PhoneNumber).ok_or(FieldError::Phone)
    }

    /// `+12025550234`: the form the SMS provider takes.
    pub fn e164(&self) -> String {
        format!("+1{}", self.0)
    }

    /// The last four digits, the only part of a number that is ever shown or logged.
    pub fn last4(&self) -> &str {
        &self.0[6..]
    }
}

impl fmt::Debug for PhoneNumber {
    // A number is personal data: debug output (and so any log line) shows only the last four digits.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PhoneNumber(***-***-{})", self.last4())
    }
}

/// Why the person wants the demo: optional, up to 100 characters, no control characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reason(String);

impl Reason {
    pub const MAX_CHARS: usize = 100;

    pub fn parse(s: &str) -> Result<Reason, FieldError> {
        if s.chars().count() <= Self::MAX_CHARS && !s.chars().any(char::is_control) {
            Ok(Reason(s.trim().to_owned()))
        } else {
            Err(FieldError::Reason)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The identifier of one sign-up in its URLs: 128 random bits in base64url without padding.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PublicId(String);

impl PublicId {
    pub fn random() -> PublicId {
        PublicId(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(random_bytes::<16>()))
    }

    /// Accepts exactly what [`PublicId::random`] makes, so a malformed id never reaches a query.
    pub fn parse(s: &str) -> Option<PublicId> {
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(s).ok()?;
        (bytes.len() == 16 && s.len() == 22).then(|| PublicId(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PublicId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A six-digit test code. Its `Debug` hides the digits, so it cannot reach a log by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct Code(String);

impl Code {
    /// A uniformly random code from the OS generator.
    pub fn random() -> Code {
        loop {
            let n = u32::from_le_bytes(random_bytes::<4>());
            // Rejection sampling: the top sliver of u32 would make low codes more likely.
            if n < 4_294_000_000 {
                return Code(format!("{:06}", n % 1_000_000));
            }
        }
    }

    /// What a person typed: six digits, spaces around them and between them ignored.
    pub fn parse(s: &str) -> Option<Code> {
        let digits: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        (digits.len() == 6 && digits.bytes().all(|b| b.is_ascii_digit())).then_some(Code(digits))
    }

    /// The digits, for the text message only.
    pub fn reveal(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Code(******)")
    }
}

/// The server key for the keyed hashes (HMAC-SHA256) of phone numbers and codes.
#[derive(Clone)]
pub struct SignupKey(Vec<u8>);

impl fmt::Debug for SignupKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SignupKey(..)")
    }
}

impl SignupKey {
    pub fn new(bytes: impl Into<Vec<u8>>) -> SignupKey {
        SignupKey(bytes.into())
    }

    fn mac(&self, domain: &str, parts: &[&str]) -> String {
        // Any key length is valid for HMAC, so this cannot fail.
        let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(&self.0) else { return String::new() };
        mac.update(domain.as_bytes());
        for p in parts {
            mac.update(&[0]);
            mac.update(p.as_bytes());
        }
        hex::encode(mac.finalize().into_bytes())
    }

    /// The keyed hash a number is known by: the number itself is never stored.
    pub fn phone_hash(&self, phone: &PhoneNumber) -> String {
        self.mac("phone", &[&phone.0])
    }

    /// The keyed hash of a code, bound to its sign-up so equal codes of two sign-ups differ.
    pub fn code_mac(&self, id: &PublicId, code: &Code) -> String {
        self.mac("code", &[&id.0, &code.0])
    }
}

/// A demo day: the calendar day in America/Chicago, which the daily text limits follow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoDay {
    /// `2026-03-08`.
    pub date: String,
    /// When the next Chicago day starts, in milliseconds since the epoch.
    pub next_start_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the America/Chicago time zone is not available: {0}")]
pub struct TzError(String);

impl DemoDay {
    pub const ZONE: &'static str = "America/Chicago";

    /// The Chicago day that `ms` falls in. Midnight always exists in Chicago (its changes happen
    /// at 2 a.m.), so a day is 23, 24 or 25 hours long and its start is never ambiguous.
    pub fn at(ms: i64) -> Result<DemoDay, TzError> {
        let tz = jiff::tz::db().get(Self::ZONE).map_err(|e| TzError(e.to_string()))?;
        let ts = jiff::Timestamp::from_millisecond(ms).map_err(|e| TzError(e.to_string()))?;
        let date = ts.to_zoned(tz.clone()).date();
        let next = date.tomorrow().and_then(|d| d.to_zoned(tz)).map_err(|e| TzError(e.to_string()))?;
        Ok(DemoDay { date: date.to_string(), next_start_ms: next.timestamp().as_millisecond() })
    }

    /// Whole seconds from `ms` to the start of the next Chicago day, rounded up.
    pub fn seconds_left(&self, ms: i64) -> i64 {
        (self.next_start_ms - ms + 999).div_euclid(1000).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_names_are_letters_only() {
        for ok in ["Ada", "José", "Zoë", "Łukasz", "Ñ", "李", &"a".repeat(40), "  Ada "] {
            assert!(FirstName::parse(ok).is_ok(), "{ok}");
        }
        assert_eq!(FirstName::parse(" Ada ").map(|n| n.0), Ok("Ada".into()));
        for bad in ["", "   ", "Ada Lovelace", "Ada1", "O'Brien", "Anne-Marie", "<b>", &"a".repeat(41)] {
            assert_eq!(FirstName::parse(bad), Err(FieldError::FirstName), "{bad}");
        }
    }

    #[test]
    fn phone_numbers_follow_nanp() {
        for (ok, digits) in [
            ("2025550234", "2025550234"),
            ("(202) 555-0234", "2025550234"),
            ("202.555.0234", "2025550234"),
            ("+1 202-555-0234", "2025550234"),
            ("1-202-555-0234", "2025550234"),
            ("+12125551234", "2125551234"),
            ("312 555 0200", "3125550200"),
        ] {
            assert_eq!(PhoneNumber::parse(ok).map(|p| p.0), Ok(digits.to_owned()), "{ok}");
        }
        for bad in [
            "",
            "202555023",       // 9 digits
            "20255502344",     // 11 digits not starting with 1
            "1202555023",      // 1 + 9 digits
            "0125550234",      // area code starts with 0
            "1125550234",      // area code starts with 1
            "2115550234",      // N11 area code
            "2020550234",      // exchange starts with 0
            "2021550234",      // exchange starts with 1
            "2024110234",      // N11 exchange
            "2025550100",      // 555-01XX is fictional
            "2025550199",      // 555-01XX is fictional
            "(202) 555-0123",  // 555-01XX is fictional
            "202-555-0234 x1", // letters
            "+44 20 7946 0018",
            "202/555/0123",
        ] {
            assert_eq!(PhoneNumber::parse(bad), Err(FieldError::Phone), "{bad}");
        }
        let p = PhoneNumber::parse("(202) 555-0234").expect("valid");
        assert_eq!(p.e164(), "+12025550234");
        assert_eq!(p.last4(), "0234");
        assert_eq!(format!("{p:?}"), "PhoneNumber(***-***-0234)");
    }

    #[test]
    fn reasons_are_short_and_printable() {
        assert!(Reason::parse("").is_ok());
        assert!(Reason::parse(&"é".repeat(100)).is_ok());
        assert_eq!(Reason::parse(&"a".repeat(101)), Err(FieldError::Reason));
        assert_eq!(Reason::parse("line\nbreak"), Err(FieldError::Reason));
        assert_eq!(Reason::parse("nul\0"), Err(FieldError::Reason));
    }

    #[test]
    fn public_ids_are_128_bits_of_base64url() {
        let id = PublicId::random();
        assert_eq!(id.as_str().len(), 22);
        assert_eq!(PublicId::parse(id.as_str()), Some(id.clone()));
        assert_ne!(PublicId::random(), id);
        for bad in ["", "abc", "AAAAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAA+/", "AAAAAAAAAAAAAAAAAAAAA="]
        {
            assert_eq!(PublicId::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn codes_are_six_digits_and_hidden_from_debug() {
        for _ in 0..100 {
            let c = Code::random();
            assert_eq!(c.reveal().len(), 6);
            assert!(c.reveal().bytes().all(|b| b.is_ascii_digit()));
        }
        assert_eq!(Code::parse(" 012 345 ").map(|c| c.0), Some("012345".into()));
        for bad in ["", "12345", "1234567", "12345a", "١٢٣٤٥٦"] {
            assert!(Code::parse(bad).is_none(), "{bad}");
        }
        assert_eq!(format!("{:?}", Code::parse("123456").expect("code")), "Code(******)");
    }

    #[test]
    fn keyed_hashes_depend_on_the_key_and_the_sign_up() {
        let a = SignupKey::new(b"key one".to_vec());
        let b = SignupKey::new(b"key two".to_vec());
        let p = PhoneNumber::parse("2025550234").expect("valid");
        assert_eq!(a.phone_hash(&p).len(), 64);
        assert_eq!(a.phone_hash(&p), a.phone_hash(&PhoneNumber::parse("+1 (202) 555-0234").expect("valid")));
        assert_ne!(a.phone_hash(&p), b.phone_hash(&p));
        let code = Code::parse("123456").expect("code");
        let (x, y) = (PublicId::random(), PublicId::random());
        assert_ne!(a.code_mac(&x, &code), a.code_mac(&y, &code));
        assert_ne!(a.code_mac(&x, &code), a.code_mac(&x, &Code::parse("123457").expect("code")));
    }

    const HOUR: i64 = 3_600_000;

    #[test]
    fn demo_days_follow_chicago_midnight() {
        // 2026-01-15 00:00 CST is 06:00Z: a plain 24-hour day.
        let jan15 = 1_768_456_800_000;
        let day = DemoDay::at(jan15).expect("tz");
        assert_eq!(day.date, "2026-01-15");
        assert_eq!(day.next_start_ms, jan15 + 24 * HOUR);
        assert_eq!(day.seconds_left(jan15), 86_400);
        assert_eq!(DemoDay::at(jan15 - 1).expect("tz").date, "2026-01-14");
        assert_eq!(day.seconds_left(jan15 + 24 * HOUR - 1), 1);
        assert_eq!(day.seconds_left(jan15 + 24 * HOUR - 1001), 2);
    }

    #[test]
    fn demo_days_are_23_or_25_hours_across_daylight_saving() {
        // Spring forward: 2026-03-08 starts at 06:00Z (CST) and ends at 05:00Z (CDT).
        let mar8 = 1_772_949_600_000;
        let day = DemoDay::at(mar8).expect("tz");
        assert_eq!(day.date, "2026-03-08");
        assert_eq!(day.seconds_left(mar8), 23 * 3600);
        assert_eq!(DemoDay::at(mar8 + 23 * HOUR).expect("tz").date, "2026-03-09");
        // Fall back: 2026-11-01 starts at 05:00Z (CDT) and ends at 06:00Z (CST).
        let nov1 = 1_793_509_200_000;
        let day = DemoDay::at(nov1).expect("tz");
        assert_eq!(day.date, "2026-11-01");
        assert_eq!(day.seconds_left(nov1), 25 * 3600);
        assert_eq!(DemoDay::at(nov1 + 25 * HOUR - 1).expect("tz").date, "2026-11-01");
        assert_eq!(DemoDay::at(nov1 + 25 * HOUR).expect("tz").date, "2026-11-02");
    }
}
