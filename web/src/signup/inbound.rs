//! `POST /sms/inbound`: Twilio's webhook for texts sent to the demo's number. STOP (and its
//! synonyms) opts the number out, START opts it back in, HELP gets the help text; the reply is
//! TwiML, which Twilio texts back. When the Twilio sender is on, the request must carry a valid
//! `X-Twilio-Signature`; with the `log` sender nothing leaves the machine, so nothing is checked.

use agora_actors::signup::Keyword;
use agora_storage::secret::constant_time_eq;
use agora_storage::signup::PhoneNumber;
use axum::body::Bytes;
use axum::extract::{OriginalUri, State};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use hmac::{Hmac, Mac};
use http::{HeaderMap, HeaderValue, header};
use sha1::Sha1;

use super::{SignupState, errors};

/// Twilio's request signature: base64 of HMAC-SHA1, keyed by the auth token, over the full URL
/// followed by every POST parameter's name and value, sorted by name.
pub fn twilio_signature(auth_token: &str, url: &str, params: &[(String, String)]) -> String {
    let mut sorted: Vec<&(String, String)> = params.iter().collect();
    sorted.sort();
    // Any key length is valid for HMAC.
    let Ok(mut mac) = Hmac::<Sha1>::new_from_slice(auth_token.as_bytes()) else { return String::new() };
    mac.update(url.as_bytes());
    for (k, v) in sorted {
        mac.update(k.as_bytes());
        mac.update(v.as_bytes());
    }
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

fn escape_xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

fn twiml(message: Option<&str>) -> Response {
    let body = match message {
        Some(m) => format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response><Message>{}</Message></Response>",
            escape_xml(m)
        ),
        None => "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response></Response>".to_owned(),
    };
    let mut res = body.into_response();
    res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/xml; charset=utf-8"));
    res
}

/// # `POST /sms/inbound`
/// A text to the demo's number, as Twilio posts it (`From`, `Body`, ...).
pub async fn receive_inbound_sms(
    State(state): State<SignupState>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let params = agora_wire::sms::parse_form(&body);
    if let Some(token) = &state.twilio_auth_token {
        // Twilio signs the URL it was given: the public base URL, the path and any query.
        let path_and_query = uri.path_and_query().map_or(uri.path(), |pq| pq.as_str());
        let url = format!("{}{path_and_query}", state.base_url);
        let expected = twilio_signature(token, &url, &params);
        let given = headers.get("x-twilio-signature").and_then(|v| v.to_str().ok()).unwrap_or_default();
        if !constant_time_eq(expected.as_bytes(), given.as_bytes()) {
            return errors::forbidden(
                &state.base_url,
                "The X-Twilio-Signature header is missing or not valid.",
                uri.path(),
            )
            .into_response();
        }
    }
    let field = |name: &str| agora_wire::sms::field(&params, name);
    let (Some(from), Some(keyword)) =
        (field("From").and_then(|f| PhoneNumber::parse(f).ok()), field("Body").and_then(Keyword::parse))
    else {
        // Not a keyword, or not a US number: nothing to do, and nothing to text back.
        return twiml(None);
    };
    match state.desk.inbound(from, keyword).await {
        Ok(()) => twiml(Some(keyword.reply())),
        Err(e) => {
            tracing::error!("inbound text failed: {e}");
            errors::server_error(&state.base_url, uri.path()).into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_matches_twilios_documented_example() {
        // The example of Twilio's "Webhooks security" page.
        let params = [
            ("CallSid", "CA1234567890ABCDE"),
            ("Caller", "+12349013030"),
            ("Digits", "1234"),
            ("From", "+12349013030"),
            ("To", "+18005551212"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()));
        let sig = twilio_signature("12345", "https://mycompany.com/myapp.php?foo=1&bar=2", &params);
        assert_eq!(sig, "0/KCTR6DLpKmkAf8muzZqo1nDgQ=");
    }
}
