//! The sign-up service's problems: one constructor per stable `code` of signup.md's error table
//! (and the two the table does not list: `payload_too_large` and `forbidden`), each with its title
//! and resolution written once. The developers page documents every code under `#error-<code>`.

use http::{HeaderValue, StatusCode, header};

use crate::problem::Problem;

/// Every code a sign-up problem can carry, with its status and title: the developers page and the
/// OpenAPI description are checked against this list.
pub const CODES: &[(&str, u16, &str)] = &[
    ("bad_request", 400, "Bad request"),
    ("forbidden", 403, "Forbidden"),
    ("not_found", 404, "Not found"),
    ("method_not_allowed", 405, "Method not allowed"),
    ("payload_too_large", 413, "Payload too large"),
    ("request_timeout", 408, "Request timeout"),
    ("invalid_request", 422, "Invalid request"),
    ("rate_limited", 429, "Too many requests"),
    ("server_error", 500, "Server error"),
    ("demo_full", 503, "Demo full for today"),
];

fn problem(base: &str, code: &str, detail: impl Into<String>, resolution: &str, instance: &str) -> Problem {
    let (status, title) =
        CODES.iter().find(|(c, ..)| *c == code).map_or((500, "Server error"), |(_, s, t)| (*s, *t));
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    Problem::new(base, status, code, title, detail, resolution, instance)
}

pub fn bad_request(base: &str, detail: impl Into<String>, instance: &str) -> Problem {
    problem(
        base,
        "bad_request",
        detail,
        "Send Content-Type: application/json with one JSON object; form fields (application/x-www-form-urlencoded) also work.",
        instance,
    )
}

pub fn forbidden(base: &str, detail: impl Into<String>, instance: &str) -> Problem {
    problem(
        base,
        "forbidden",
        detail,
        "Only Twilio, signing with the account's auth token, may call this endpoint.",
        instance,
    )
}

pub fn not_found(base: &str, instance: &str) -> Problem {
    problem(
        base,
        "not_found",
        format!("There is no API endpoint or sign-up at {instance}."),
        "Use the published description at /openapi.json; there is no endpoint for health records.",
        instance,
    )
}

pub fn method_not_allowed(base: &str, method: &str, instance: &str) -> Problem {
    problem(
        base,
        "method_not_allowed",
        format!("{instance} does not accept {method}."),
        "Use a method from the Allow header.",
        instance,
    )
}

pub fn payload_too_large(base: &str, limit: usize, instance: &str) -> Problem {
    problem(
        base,
        "payload_too_large",
        format!("The request body is larger than {limit} bytes."),
        "Send only first_name, phone and an optional short reason.",
        instance,
    )
}

pub fn invalid_request(base: &str, detail: impl Into<String>, instance: &str) -> Problem {
    problem(base, "invalid_request", detail, "Fix the field named in detail and resend.", instance)
}

pub fn rate_limited(base: &str, detail: &str, retry_after_secs: i64, instance: &str) -> Problem {
    problem(
        base,
        "rate_limited",
        detail,
        "Wait the seconds in Retry-After, then send once; no retry loop.",
        instance,
    )
    .with_header(header::RETRY_AFTER, HeaderValue::from(retry_after_secs))
}

pub fn server_error(base: &str, instance: &str) -> Problem {
    problem(
        base,
        "server_error",
        "Something went wrong on our side; nothing you sent caused it.",
        "Try again in a few minutes.",
        instance,
    )
}

pub fn demo_full(base: &str, retry_after_secs: i64, instance: &str) -> Problem {
    problem(
        base,
        "demo_full",
        "The demo has sent all of today's test codes (the day follows Chicago time).",
        "Try again tomorrow; Retry-After gives the earliest time in seconds.",
        instance,
    )
    .with_header(header::RETRY_AFTER, HeaderValue::from(retry_after_secs))
}
