//! The demo sign-up API, its confirm page and the inbound text webhook.
//!
//! # Layout
//! - this module: the state, the router and the API handlers (`/api`, `/api/signups...`).
//! - [`confirm`]: the confirm page `/signup/{public_id}`, where the person types the code.
//! - [`inbound`]: `POST /sms/inbound`, Twilio's webhook (STOP, START, HELP), and its signature.
//! - [`publish`]: what describes the API: OpenAPI (JSON and YAML), the API catalog, `/llms.txt`,
//!   `/agents.md` and the developers page.
//! - [`limits`]: the per-address and global request limits.
//! - [`errors`]: the RFC 9457 problems of this service.
//!
//! Every decision about texts and every state change goes through the [`Desk`] actor; reads of a
//! sign-up's status go to storage.

pub mod confirm;
pub mod errors;
pub mod inbound;
pub mod limits;
pub mod publish;

use std::net::SocketAddr;
use std::sync::Arc;

use agora_actors::signup::{Desk, DeskConfig, DeskError, NewSignup, SmsConfig, StartOutcome};
use agora_storage::Store;
use agora_storage::signup::{FirstName, PhoneNumber, PublicId, Reason};
use agora_storage::time::Clock;
use axum::Json;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::rejection::PathRejection;
use axum::extract::{ConnectInfo, OriginalUri, Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use serde_json::{Map, Value, json};

use crate::problem::Problem;
use limits::{Decision, Limits, Refused};

/// The largest sign-up request body read.
pub const MAX_BODY: usize = 16 * 1024;

#[derive(Clone)]
pub struct SignupState {
    pub store: Store,
    pub base_url: String,
    /// The time every rule of this service goes by (a manual clock in tests).
    pub clock: Clock,
    /// The one place that decides about texts and changes sign-ups.
    pub desk: Desk,
    pub limits: Arc<Limits>,
    /// Set when the Twilio sender is on: inbound webhooks must then carry Twilio's signature.
    pub twilio_auth_token: Option<String>,
}

/// What the sign-up service starts from.
pub struct SignupConfig {
    pub store: Store,
    pub base_url: String,
    pub clock: Clock,
    /// `AGORA_SIGNUP_KEY`.
    pub key: Option<String>,
    pub sms: SmsConfig,
    /// The supervisor to link the desk under.
    pub supervisor: Option<ractor::ActorCell>,
}

impl SignupState {
    /// Starts the desk and builds the state.
    pub async fn start(config: SignupConfig) -> Result<SignupState, DeskError> {
        let twilio_auth_token = match &config.sms {
            SmsConfig::Twilio { auth_token, .. } => Some(auth_token.clone()),
            SmsConfig::Log => None,
        };
        let desk = Desk::start(DeskConfig {
            store: config.store.clone(),
            clock: config.clock.clone(),
            key: config.key,
            sms: config.sms,
            base_url: config.base_url.clone(),
            supervisor: config.supervisor,
        })
        .await?;
        Ok(SignupState {
            store: config.store,
            base_url: config.base_url,
            clock: config.clock,
            desk,
            limits: Arc::new(Limits::default()),
            twilio_auth_token,
        })
    }
}

/// The sign-up service's router.
pub fn router(state: SignupState) -> Router {
    Router::new()
        .route("/api", get(get_api_index))
        .route("/api/signups", post(start_signup))
        .route("/api/signups/{public_id}", get(get_signup_status))
        .route("/signup/{public_id}", get(confirm::get_confirm_page).post(confirm::submit_confirm_code))
        .route("/sms/inbound", post(inbound::receive_inbound_sms))
        .route("/openapi.json", get(publish::get_openapi_json))
        .route("/openapi.yaml", get(publish::get_openapi_yaml))
        .route("/.well-known/api-catalog", get(publish::get_api_catalog))
        .route("/llms.txt", get(publish::get_llms_txt))
        .route("/agents.md", get(publish::get_agents_md))
        .route("/developers", get(publish::get_developers_page))
        // Must come after the routes: it applies to those registered before it.
        .method_not_allowed_fallback(method_not_allowed)
        .fallback(not_found)
        .with_state(state)
        .layer(crate::trace::layer("signup"))
}

async fn not_found(State(state): State<SignupState>, OriginalUri(uri): OriginalUri) -> Problem {
    errors::not_found(&state.base_url, uri.path())
}

/// A known path with a method it does not take. axum adds the `Allow` header.
async fn method_not_allowed(
    State(state): State<SignupState>,
    method: Method,
    OriginalUri(uri): OriginalUri,
) -> Problem {
    errors::method_not_allowed(&state.base_url, method.as_str(), uri.path())
}

/// # `GET /api`
/// The endpoint list, with links to the description and the documentation.
async fn get_api_index(State(state): State<SignupState>) -> Json<Value> {
    Json(publish::api_index(&state.base_url))
}

/// The `RateLimit-Policy` and `RateLimit` headers (draft-ietf-httpapi-ratelimit-headers-10).
fn rate_limit_headers(decision: &Decision) -> [(HeaderName, HeaderValue); 2] {
    let policy = format!("\"per-address\";q={};w={}", limits::PER_ADDRESS, limits::WINDOW_MS / 1000);
    let now = format!("\"per-address\";r={};t={}", decision.remaining, decision.reset_secs);
    let value = |s: String| HeaderValue::from_str(&s).unwrap_or(HeaderValue::from_static(""));
    [
        (HeaderName::from_static("ratelimit-policy"), value(policy)),
        (HeaderName::from_static("ratelimit"), value(now)),
    ]
}

/// # `POST /api/signups`
/// Starts a demo sign-up (`startDemoSignup`). JSON or form fields: `first_name`, `phone`, optional
/// `reason`. The `202` answer is the same whether or not a text went out.
async fn start_signup(
    State(state): State<SignupState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    // The peer address, never X-Forwarded-For: a client could write any address there.
    let decision = state.limits.check(peer.ip(), state.clock.now_ms());
    let mut res = match decision.refused {
        Some(refused) => {
            let detail = match refused {
                Refused::PerAddress => "This address sent 10 sign-up requests in the last hour.",
                Refused::Global => {
                    "The service took 500 sign-up requests in the last hour, its limit for everyone."
                }
            };
            errors::rate_limited(&state.base_url, detail, decision.retry_after_secs, uri.path())
                .into_response()
        }
        None => start(&state, uri.path(), &headers, body).await,
    };
    res.headers_mut().extend(rate_limit_headers(&decision));
    res
}

async fn start(state: &SignupState, path: &str, headers: &HeaderMap, body: Body) -> Response {
    let base = &state.base_url;
    let bytes = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(b) => b,
        Err(_) => return errors::payload_too_large(base, MAX_BODY, path).into_response(),
    };
    let new = match parse_signup(headers, &bytes) {
        Ok(new) => new,
        Err(BodyError::Unreadable(detail)) => return errors::bad_request(base, detail, path).into_response(),
        Err(BodyError::Invalid(detail)) => {
            return errors::invalid_request(base, detail, path).into_response();
        }
    };
    match state.desk.start_signup(new).await {
        Ok(StartOutcome::Accepted { public_id }) => {
            let status_url = format!("{base}/api/signups/{public_id}");
            let body = json!({
                "status": "pending",
                "message": "If this number can receive the preview, a text with a test code is on its way. The code must be entered within 15 minutes.",
                "person_must_confirm": "The person must type the code from the text on the confirm page at confirm_url; the caller never reads or handles the code.",
                "confirm_url": format!("{base}/signup/{public_id}"),
                "status_url": status_url,
                "expires_in_minutes": 15,
            });
            let mut res = (StatusCode::ACCEPTED, Json(body)).into_response();
            if let Ok(location) = HeaderValue::from_str(&status_url) {
                res.headers_mut().insert(header::LOCATION, location);
            }
            res.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            res
        }
        Ok(StartOutcome::DemoFull { retry_after_secs }) => {
            errors::demo_full(base, retry_after_secs, path).into_response()
        }
        Err(e) => {
            tracing::error!("sign-up start failed: {e}");
            errors::server_error(base, path).into_response()
        }
    }
}

/// # `GET /api/signups/{public_id}`
/// The state of one sign-up (`getDemoSignupStatus`): `{status}` only.
async fn get_signup_status(
    State(state): State<SignupState>,
    public_id: Result<Path<String>, PathRejection>,
    OriginalUri(uri): OriginalUri,
) -> Response {
    // A path that does not even decode names no sign-up either.
    let Some(id) = public_id.ok().and_then(|Path(p)| PublicId::parse(&p)) else {
        return errors::not_found(&state.base_url, uri.path()).into_response();
    };
    match state.store.signup(&id).await {
        Ok(Some(signup)) => {
            let status = signup.status(state.clock.now_ms());
            let mut res = Json(json!({ "status": status })).into_response();
            res.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            res
        }
        Ok(None) => errors::not_found(&state.base_url, uri.path()).into_response(),
        Err(e) => {
            tracing::error!("reading a sign-up failed: {e}");
            errors::server_error(&state.base_url, uri.path()).into_response()
        }
    }
}

/// Why a sign-up body was refused: unreadable (`400`) or a field not valid (`422`).
#[derive(Debug, PartialEq, Eq)]
enum BodyError {
    Unreadable(String),
    Invalid(String),
}

const FIELDS: [&str; 3] = ["first_name", "phone", "reason"];

/// Reads the body as JSON or form fields and parses each field into its newtype.
fn parse_signup(headers: &HeaderMap, bytes: &Bytes) -> Result<NewSignup, BodyError> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or_default().trim().to_ascii_lowercase());
    let fields: Map<String, Value> = match content_type.as_deref() {
        Some("application/x-www-form-urlencoded") => {
            let mut map = Map::new();
            for (k, v) in form_urlencoded::parse(bytes) {
                if map.insert(k.to_string(), Value::String(v.into_owned())).is_some() {
                    return Err(BodyError::Invalid(format!("{k} is given more than once")));
                }
            }
            map
        }
        // No content type at all is read as JSON, what nearly every client sends.
        None | Some("application/json") => match serde_json::from_slice::<Value>(bytes) {
            Ok(Value::Object(map)) => map,
            Ok(_) => return Err(BodyError::Unreadable("The body must be one JSON object.".into())),
            Err(e) => return Err(BodyError::Unreadable(format!("The body is not valid JSON: {e}."))),
        },
        Some(other) => {
            return Err(BodyError::Unreadable(format!(
                "The body is {other}; this endpoint reads application/json or application/x-www-form-urlencoded."
            )));
        }
    };
    if let Some(unknown) = fields.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(BodyError::Invalid(format!(
            "{unknown} is not a field of a sign-up request (first_name, phone, reason); do not send health details."
        )));
    }
    let text = |name: &str| -> Result<Option<&str>, BodyError> {
        match fields.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(BodyError::Invalid(format!("{name} must be a string."))),
        }
    };
    let required = |name: &str| text(name)?.ok_or_else(|| BodyError::Invalid(format!("{name} is missing.")));
    let invalid = |e: agora_storage::signup::FieldError| BodyError::Invalid(format!("{e}."));
    let first_name = FirstName::parse(required("first_name")?).map_err(invalid)?;
    let phone = PhoneNumber::parse(required("phone")?).map_err(invalid)?;
    let reason = text("reason")?.map(Reason::parse).transpose().map_err(invalid)?;
    Ok(NewSignup { first_name, phone, reason })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(content_type: Option<&str>, body: &str) -> Result<NewSignup, BodyError> {
        let mut headers = HeaderMap::new();
        if let Some(ct) = content_type {
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_str(ct).expect("header"));
        }
        parse_signup(&headers, &Bytes::from(body.to_owned()))
    }

    #[test]
    fn json_and_form_bodies_parse_alike() {
        let json = parse(Some("application/json"), r#"{"first_name":"Ada","phone":"(202) 555-0234"}"#)
            .expect("json");
        let form = parse(
            Some("application/x-www-form-urlencoded; charset=utf-8"),
            "first_name=Ada&phone=%28202%29+555-0234&reason=curious",
        )
        .expect("form");
        assert_eq!(json.first_name, form.first_name);
        assert_eq!(json.phone, form.phone);
        assert!(json.reason.is_none());
        assert_eq!(form.reason.map(|r| r.as_str().to_owned()).as_deref(), Some("curious"));
        assert!(parse(None, r#"{"first_name":"Ada","phone":"2025550234","reason":null}"#).is_ok());
    }

    #[test]
    fn bad_bodies_name_the_problem() {
        let unreadable = |r: Result<NewSignup, BodyError>| matches!(r, Err(BodyError::Unreadable(_)));
        assert!(unreadable(parse(Some("application/json"), "{not json")));
        assert!(unreadable(parse(Some("application/json"), "[1,2]")));
        assert!(unreadable(parse(Some("text/plain"), "first_name=Ada")));
        let invalid = |r: Result<NewSignup, BodyError>, needle: &str| match r {
            Err(BodyError::Invalid(d)) => assert!(d.contains(needle), "{d} lacks {needle}"),
            other => panic!("expected invalid {needle}, got {other:?}"),
        };
        invalid(parse(None, r#"{"phone":"2025550234"}"#), "first_name is missing");
        invalid(parse(None, r#"{"first_name":"Ada"}"#), "phone is missing");
        invalid(parse(None, r#"{"first_name":"Ada1","phone":"2025550234"}"#), "first_name must be");
        invalid(parse(None, r#"{"first_name":"Ada","phone":"555-0123"}"#), "10-digit");
        invalid(parse(None, r#"{"first_name":"Ada","phone":2025550234}"#), "phone must be a string");
        invalid(
            parse(None, r#"{"first_name":"Ada","phone":"2025550234","symptoms":"x"}"#),
            "symptoms is not a field",
        );
        let long = "a".repeat(101);
        invalid(
            parse(None, &format!(r#"{{"first_name":"Ada","phone":"2025550234","reason":"{long}"}}"#)),
            "reason",
        );
        invalid(
            parse(Some("application/x-www-form-urlencoded"), "first_name=Ada&first_name=Bo&phone=2025550234"),
            "more than once",
        );
    }
}
