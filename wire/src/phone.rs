//! US phone numbers as the sign-up takes them (NANP).
//!
//! Spaces, dashes, dots, parentheses and a leading `+1` or `1` are allowed and stripped. The area
//! code and the exchange start with 2-9 and are not N11; 555-0100 to 555-0199 are reserved for
//! fiction and refused.

/// The ten digits of a valid number, or `None`.
pub fn parse_us(s: &str) -> Option<String> {
    let s = s.trim();
    let s = s.strip_prefix("+1").unwrap_or(s);
    let mut digits = String::with_capacity(11);
    for c in s.chars() {
        match c {
            '0'..='9' => digits.push(c),
            ' ' | '-' | '.' | '(' | ')' => {}
            _ => return None,
        }
        if digits.len() > 11 {
            return None;
        }
    }
    if digits.len() == 11 && digits.starts_with('1') {
        digits.remove(0);
    }
    let d = digits.as_bytes();
    if d.len() != 10 {
        return None;
    }
    let nxx_ok = |x: &[u8]| x[0] >= b'2' && !(x[1] == b'1' && x[2] == b'1');
    let fictional = &d[3..6] == b"555" && &d[6..8] == b"01";
    (nxx_ok(&d[0..3]) && nxx_ok(&d[3..6]) && !fictional).then_some(digits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        for ok in ["3125550234", "(312) 555-0234", "+1 312.555.0234", "1-312-555-0234"] {
            assert_eq!(parse_us(ok).as_deref(), Some("3125550234"), "{ok}");
        }
        for bad in
            ["", "312555023", "0125550234", "3115550234", "3125550134", "312555023x", "+44 20 7946 0958"]
        {
            assert_eq!(parse_us(bad), None, "{bad}");
        }
    }
}
