//! The confirm page, `/signup/{public_id}`: a plain HTML form where the person types the code from
//! the text. No script, no cookies; a label tied to the field, errors announced with
//! `role="alert"`, and every state (pending, wrong code, locked, expired, confirmed, unknown) said
//! in plain words.

use agora_actors::signup::ConfirmOutcome;
use agora_storage::signup::{Code, PublicId, SignupState as State_};
use agora_storage::time::rfc3339;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::{Html, IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};

use super::SignupState;

/// Escapes text for HTML content and attribute values.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// `14:32 UTC`.
fn clock_time(ms: i64) -> String {
    let t = rfc3339(ms);
    format!("{} UTC", t.get(11..16).unwrap_or("00:00"))
}

fn minutes_until(ms: i64, now: i64) -> i64 {
    ((ms - now).max(0) + 59_999) / 60_000
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:34rem;margin:2rem auto;padding:0 1rem;line-height:1.5;color:#1a1a1a}\
h1{font-size:1.5rem}label{display:block;font-weight:600;margin-top:1rem}\
input{font-size:1.5rem;letter-spacing:.2em;width:9ch;padding:.3rem;border:2px solid #555;border-radius:4px}\
input[aria-invalid=true]{border-color:#b00020}button{font-size:1.1rem;margin-top:1rem;padding:.5rem 1.2rem}\
.error{color:#b00020;font-weight:600}.note{color:#444}:focus{outline:3px solid #1a5fb4;outline-offset:2px}";

/// The whole page around `main`.
fn page(status: StatusCode, title: &str, main: &str) -> Response {
    let html = format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta name=\"robots\" content=\"noindex\">\n<title>{title} · agora demo sign-up</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n{main}\n</main>\n<footer><p class=\"note\">A test system with made-up patients only; it gives no medical care or advice. If you need help now, call 911.</p></footer>\n</body>\n</html>\n",
        title = escape(title)
    );
    let mut res = (status, Html(html)).into_response();
    let h = res.headers_mut();
    // The public id is in the URL: keep it out of caches and of Referer headers.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
        ),
    );
    res
}

/// The form, with an optional error tied to the field.
fn form_page(status: StatusCode, id: &PublicId, expires_at: i64, error: Option<&str>) -> Response {
    let (invalid, described, error_html) = match error {
        Some(e) => (
            "true",
            "code-error code-help",
            format!("<p id=\"code-error\" class=\"error\" role=\"alert\">{}</p>\n", escape(e)),
        ),
        None => ("false", "code-help", String::new()),
    };
    let main = format!(
        "<h1>Confirm your demo sign-up</h1>\n<p>If your number can receive the preview, a text with a 6-digit test code was sent to it. Type the code here before {until}.</p>\n{error_html}<form method=\"post\" action=\"/signup/{id}\">\n<label for=\"code\">Test code</label>\n<p id=\"code-help\" class=\"note\">6 digits, from the text message.</p>\n<input id=\"code\" name=\"code\" type=\"text\" inputmode=\"numeric\" autocomplete=\"one-time-code\" maxlength=\"12\" required aria-invalid=\"{invalid}\" aria-describedby=\"{described}\">\n<button type=\"submit\">Confirm</button>\n</form>\n<p class=\"note\">No text? It may take a minute. Only numbers the demo is open to get one.</p>",
        until = clock_time(expires_at),
        id = escape(id.as_str()),
    );
    page(status, "Confirm your demo sign-up", &main)
}

fn confirmed_page() -> Response {
    page(
        StatusCode::OK,
        "Sign-up confirmed",
        "<h1>Sign-up confirmed</h1>\n<p role=\"status\">Your demo sign-up is confirmed. You can close this page.</p>",
    )
}

fn expired_page(status: StatusCode) -> Response {
    page(
        status,
        "This code has expired",
        "<h1>This code has expired</h1>\n<p role=\"status\">Codes work for 15 minutes, and this one is past that. Ask for a new sign-up to get a new code.</p>",
    )
}

fn locked_page(status: StatusCode, until: i64, now: i64) -> Response {
    let main = format!(
        "<h1>Too many wrong codes</h1>\n<p role=\"alert\">This sign-up is locked after three wrong codes. You can try again after {} (in {} minutes).</p>",
        clock_time(until),
        minutes_until(until, now)
    );
    let mut res = page(status, "Too many wrong codes", &main);
    res.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(((until - now).max(0) + 999) / 1000));
    res
}

fn not_found_page() -> Response {
    page(
        StatusCode::NOT_FOUND,
        "Sign-up not found",
        "<h1>Sign-up not found</h1>\n<p>There is no sign-up at this address. Check the link in your text, or ask for a new sign-up. Sign-ups are deleted after 7 days.</p>",
    )
}

fn error_page() -> Response {
    page(
        StatusCode::INTERNAL_SERVER_ERROR,
        "Something went wrong",
        "<h1>Something went wrong</h1>\n<p>This is on our side. Please try again in a few minutes.</p>",
    )
}

/// # `GET /signup/{public_id}`
/// The confirm page, showing the sign-up's state.
pub async fn get_confirm_page(State(state): State<SignupState>, Path(public_id): Path<String>) -> Response {
    let Some(id) = PublicId::parse(&public_id) else { return not_found_page() };
    let now = state.clock.now_ms();
    match state.store.signup(&id).await {
        Ok(Some(signup)) => match signup.state(now) {
            State_::Pending { expires_at, .. } => form_page(StatusCode::OK, &id, expires_at, None),
            State_::Locked { until } => locked_page(StatusCode::OK, until, now),
            State_::Expired => expired_page(StatusCode::OK),
            State_::Confirmed => confirmed_page(),
        },
        Ok(None) => not_found_page(),
        Err(e) => {
            tracing::error!("reading a sign-up failed: {e}");
            error_page()
        }
    }
}

/// # `POST /signup/{public_id}`
/// The person submits the code (form field `code`).
pub async fn submit_confirm_code(
    State(state): State<SignupState>,
    Path(public_id): Path<String>,
    body: Bytes,
) -> Response {
    let Some(id) = PublicId::parse(&public_id) else { return not_found_page() };
    let typed = form_urlencoded::parse(&body).find(|(k, _)| k == "code").map(|(_, v)| v.into_owned());
    let Some(code) = typed.as_deref().and_then(Code::parse) else {
        // A typo is not a wrong code: it does not count towards the lock.
        return match state.store.signup(&id).await {
            Ok(Some(s)) => match s.state(state.clock.now_ms()) {
                State_::Pending { expires_at, .. } => form_page(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    &id,
                    expires_at,
                    Some("The code is the 6 digits in the text message. Type only those digits."),
                ),
                _ => get_confirm_page(State(state), Path(public_id)).await,
            },
            Ok(None) => not_found_page(),
            Err(_) => error_page(),
        };
    };
    let now = state.clock.now_ms();
    match state.desk.confirm(id.clone(), code).await {
        Ok(ConfirmOutcome::Confirmed | ConfirmOutcome::AlreadyConfirmed) => confirmed_page(),
        Ok(ConfirmOutcome::WrongCode { tries_left }) => {
            let expires_at = match state.store.signup(&id).await {
                Ok(Some(s)) => s.expires_at(),
                _ => now,
            };
            let tries =
                if tries_left == 1 { "1 more try".to_owned() } else { format!("{tries_left} more tries") };
            form_page(
                StatusCode::UNPROCESSABLE_ENTITY,
                &id,
                expires_at,
                Some(&format!(
                    "That code is not right. You have {tries} before the sign-up is locked for 15 minutes."
                )),
            )
        }
        Ok(ConfirmOutcome::Locked { until }) => locked_page(StatusCode::TOO_MANY_REQUESTS, until, now),
        Ok(ConfirmOutcome::Expired) => expired_page(StatusCode::GONE),
        Ok(ConfirmOutcome::NotFound) => not_found_page(),
        Err(e) => {
            tracing::error!("confirming a sign-up failed: {e}");
            error_page()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(escape(r#"<a href="x">'&'</a>"#), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
    }

    #[test]
    fn times_read_as_a_person_would() {
        assert_eq!(clock_time(1_768_456_800_000 + 32 * 60_000), "06:32 UTC");
        assert_eq!(minutes_until(15 * 60_000, 0), 15);
        assert_eq!(minutes_until(60_001, 0), 2);
        assert_eq!(minutes_until(0, 10), 0);
    }
}
