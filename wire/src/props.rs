//! The properties each parser keeps, for any input. Each function panics when a property fails:
//! the fuzz targets call them with generated input, and `tests/regressions.rs` with every input
//! saved under `wire/regressions/<target>/`.

use crate::{accept, cable, cursor, phone, series, sms};

/// Input bytes as text, the way a server sees a header or a query value (lossy for non-UTF-8).
fn text(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

/// A cursor that decodes re-encodes to itself; every payload round-trips; a cursor of one kind
/// never decodes as another.
pub fn cursor(data: &[u8]) {
    let s = text(data);
    for kind in ["m1", "ev1", "c1"] {
        if let Ok(payload) = cursor::decode(kind, &s) {
            assert_eq!(cursor::encode(kind, &payload), s, "a decoded cursor re-encodes to itself");
        }
        if let Ok(n) = cursor::decode_number(kind, &s) {
            assert!(n >= 0);
            assert_eq!(cursor::encode(kind, &n.to_string()), s, "a number cursor is canonical");
        }
        let made = cursor::encode(kind, &s);
        assert_eq!(cursor::decode(kind, &made), Ok(s.clone()), "every payload round-trips");
        assert!(made.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'), "URL-safe");
    }
    let made = cursor::encode("m1", &s);
    assert!(cursor::decode("ev1", &made).is_err(), "a cursor of another list is refused");
}

/// A parsed command says exactly what the frame's JSON says; writing it back parses the same.
pub fn cable(data: &[u8]) {
    let s = text(data);
    let Ok(c) = cable::parse_command(&s) else { return };
    let v: serde_json::Value = serde_json::from_str(&s).expect("a command is JSON");
    assert_eq!(v["command"].as_str(), Some(c.verb.as_str()));
    assert_eq!(v["identifier"].as_str(), Some(c.identifier.as_str()));
    let again = serde_json::json!({ "command": c.verb, "identifier": c.identifier }).to_string();
    assert_eq!(cable::parse_command(&again), Ok(c));
}

/// Markdown is chosen only when the header could name it; the choice does not depend on the
/// case of the media types or on spaces around the list's commas.
pub fn accept(data: &[u8]) {
    let s = text(data);
    let format = accept::Format::negotiate(Some(&s));
    let lower = s.to_ascii_lowercase();
    if !lower.contains("markdown") && !lower.contains('*') {
        assert_eq!(format, accept::Format::Html, "Markdown without naming it: {s:?}");
    }
    if !s.contains('"') {
        let spaced = s.split(',').map(str::trim).collect::<Vec<_>>().join(" , ");
        assert_eq!(accept::Format::negotiate(Some(&spaced)), format, "spaces changed the choice: {s:?}");
    }
}

/// A valid number is ten digits whose every written form parses back to it.
pub fn phone(data: &[u8]) {
    let s = text(data);
    let Some(d) = phone::parse_us(&s) else { return };
    assert_eq!(d.len(), 10);
    assert!(d.bytes().all(|b| b.is_ascii_digit()));
    assert!(d.as_bytes()[0] >= b'2' && d.as_bytes()[3] >= b'2');
    for form in [
        d.clone(),
        format!("+1{d}"),
        format!("1{d}"),
        format!("({}) {}-{}", &d[0..3], &d[3..6], &d[6..]),
        format!("{}.{}.{}", &d[0..3], &d[3..6], &d[6..]),
    ] {
        assert_eq!(phone::parse_us(&form).as_deref(), Some(d.as_str()), "{form}");
    }
}

/// Re-encoding the parsed fields and parsing again gives the same fields.
pub fn sms(data: &[u8]) {
    let params = sms::parse_form(data);
    let again = sms::parse_form(sms::encode_form(&params).as_bytes());
    assert_eq!(again, params);
    if let Some((k, v)) = params.first() {
        assert_eq!(sms::field(&params, k), Some(v.as_str()), "the first value of a name");
    }
}

/// A duration that parses is positive, bounded, shown as written, and adds up unit by unit; the
/// other series parameters parse only to their own names; a window's bucket count matches its
/// buckets.
pub fn series(data: &[u8]) {
    let s = text(data);
    if let Ok(d) = series::Duration::parse(&s) {
        assert!(d.ms() > 0 && d.ms() <= series::Duration::MAX_MS, "{s:?} is {} ms", d.ms());
        assert_eq!(d.as_str(), s);
        // Each `<n><unit>` term: the sum of the terms parsed alone is the whole.
        let mut sum = 0;
        let mut start = 0;
        for (i, c) in s.char_indices() {
            if c.is_ascii_alphabetic() {
                sum += series::Duration::parse(&s[start..=i]).expect("each term parses").ms();
                start = i + 1;
            }
        }
        assert_eq!(sum, d.ms(), "{s:?}");
        let window = series::Window::last(&d, 1_800_000_000_000);
        for every in series::AUTO_STEPS {
            let every = series::Duration::parse(every).expect("an auto step").ms();
            let n = series::bucket_count(window, every);
            let span = window.to() - window.from();
            assert!(n >= 1, "a non-empty window has a bucket");
            assert!(n * every >= span, "the buckets cover the window");
            assert!(n * every < span + 2 * every, "no bucket lies wholly outside the window");
            assert!(series::bucket_start(window.from(), every) <= window.from());
        }
    }
    if let Ok(agg) = series::Agg::parse(&s) {
        assert_eq!(agg.as_str(), s);
    }
    if let Ok(fill) = series::Fill::parse(&s) {
        assert_eq!(fill.as_str(), s);
    }
}

/// A property check: panics when the input breaks a property.
pub type Check = fn(&[u8]);

/// Every target, by the name the fuzz crate and `wire/regressions/` use.
pub const TARGETS: &[(&str, Check)] = &[
    ("cursor", cursor),
    ("cable", cable),
    ("accept", accept),
    ("phone", phone),
    ("sms", sms),
    ("series", series),
];
