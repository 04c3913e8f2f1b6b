//! What describes the sign-up API to people and programs: the OpenAPI 3.1 description (JSON and
//! the same document in YAML), the RFC 9727 API catalog, the endpoint list at `/api`, `/llms.txt`,
//! `/agents.md`, and the developers page (HTML, or Markdown on `Accept: text/markdown`), whose
//! `#errors` and `#error-<code>` anchors the problems' `type` and `docs` point to.
//!
//! Every document is built from the service's base URL, so its links are absolute and right behind
//! a proxy that sets `AGORA_SIGNUP_BASE_URL`.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::{Value, json};

use super::{SignupState, errors};

const DEVELOPERS_MD: &str = include_str!("developers.md");

/// The API routes of signup.md, with their operationIds: the index at `/api` lists these.
const API_ENDPOINTS: &[(&str, &str, &str, &str)] = &[
    ("GET", "/api", "getApiIndex", "This list of endpoints."),
    (
        "POST",
        "/api/signups",
        "startDemoSignup",
        "Start a demo sign-up; the person gets a code text and confirms on the confirm page.",
    ),
    (
        "GET",
        "/api/signups/{public_id}",
        "getDemoSignupStatus",
        "Read a sign-up's state: pending, confirmed or expired.",
    ),
];

fn problem_response(description: &str) -> Value {
    json!({ "description": description, "content": { "application/problem+json": { "schema": { "$ref": "#/components/schemas/Problem" } } } })
}

fn rate_limit_headers() -> Value {
    json!({
        "RateLimit-Policy": { "$ref": "#/components/headers/RateLimitPolicy" },
        "RateLimit": { "$ref": "#/components/headers/RateLimit" }
    })
}

fn text_op(id: &str, summary: &str, media: &str) -> Value {
    json!({ "get": { "operationId": id, "summary": summary, "tags": ["publication"],
        "responses": { "200": { "description": summary, "content": { media: { "schema": { "type": "string" } } } } } } })
}

/// The OpenAPI 3.1 description of everything this service answers.
pub fn openapi(base: &str) -> Value {
    let public_id = json!({ "name": "public_id", "in": "path", "required": true,
        "description": "The sign-up's identifier: 128 random bits in base64url (22 characters).",
        "schema": { "type": "string", "pattern": "^[A-Za-z0-9_-]{22}$" } });
    let signup_body = json!({
        "required": true,
        "content": {
            "application/json": { "schema": { "$ref": "#/components/schemas/SignupRequest" } },
            "application/x-www-form-urlencoded": { "schema": { "$ref": "#/components/schemas/SignupRequest" } }
        }
    });
    json!({
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://spec.openapis.org/oas/3.1/dialect/base",
        "info": {
            "title": "agora demo sign-up API",
            "version": "1.0.0",
            "summary": "Start a demo sign-up for a person and read its state.",
            "description": "A small public API of a test electronic-health-record preview system, which holds made-up patients only and gives no medical care or advice. No operation reads a health record or a chart. Before starting a sign-up, tell the person: one text with a test code will be sent; message and data rates may apply; replying STOP opts out and HELP gives help; a person who needs help now should call 911. Choices where the spec was silent: the phone number may carry spaces, dashes, dots, parentheses and a leading +1 or 1; unknown request fields are refused with 422; while locked after three wrong codes the status stays pending; the per-address limit keys on the connection's peer address (X-Forwarded-For is not trusted); the global limit of 500 requests an hour answers 429; the per-number limit of 3 texts a day follows the Chicago day, like the demo's 50.",
            "license": { "name": "MIT", "identifier": "MIT" }
        },
        "servers": [ { "url": base } ],
        "externalDocs": { "description": "Developer documentation", "url": format!("{base}/developers") },
        "tags": [
            { "name": "signup", "description": "The sign-up API." },
            { "name": "person", "description": "Pages for the person, in a browser." },
            { "name": "sms", "description": "The SMS provider's webhook." },
            { "name": "publication", "description": "Descriptions of this API." }
        ],
        "paths": {
            "/api": { "get": {
                "operationId": "getApiIndex", "summary": "List the endpoints, with links to the description and the docs.", "tags": ["signup"],
                "responses": { "200": { "description": "The endpoint list.", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/ApiIndex" } } } } }
            } },
            "/api/signups": { "post": {
                "operationId": "startDemoSignup", "summary": "Start a demo sign-up.", "tags": ["signup"],
                "description": "The answer is the same for every number, whether or not a text went out. Give confirm_url to the person; never handle the code.",
                "requestBody": signup_body,
                "responses": {
                    "202": { "description": "Accepted: pending until the person confirms.", "headers": {
                            "Location": { "description": "The status_url.", "schema": { "type": "string", "format": "uri" } },
                            "RateLimit-Policy": { "$ref": "#/components/headers/RateLimitPolicy" },
                            "RateLimit": { "$ref": "#/components/headers/RateLimit" } },
                        "content": { "application/json": { "schema": { "$ref": "#/components/schemas/SignupAccepted" } } } },
                    "400": { "$ref": "#/components/responses/BadRequest" },
                    "413": { "$ref": "#/components/responses/PayloadTooLarge" },
                    "422": { "$ref": "#/components/responses/InvalidRequest" },
                    "429": { "$ref": "#/components/responses/RateLimited" },
                    "500": { "$ref": "#/components/responses/ServerError" },
                    "503": { "$ref": "#/components/responses/DemoFull" }
                }
            } },
            "/api/signups/{public_id}": { "get": {
                "operationId": "getDemoSignupStatus", "summary": "Read a sign-up's state. Read at most once every 10 seconds.", "tags": ["signup"],
                "parameters": [ public_id.clone() ],
                "responses": {
                    "200": { "description": "The state.", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/SignupStatus" } } } },
                    "404": { "$ref": "#/components/responses/NotFound" },
                    "500": { "$ref": "#/components/responses/ServerError" }
                }
            } },
            "/signup/{public_id}": {
                "get": { "operationId": "getConfirmPage", "summary": "The confirm page, for the person.", "tags": ["person"],
                    "parameters": [ public_id.clone() ],
                    "responses": { "200": { "description": "The page, saying the sign-up's state.", "content": { "text/html": { "schema": { "type": "string" } } } },
                                   "404": { "description": "No such sign-up (an HTML page).", "content": { "text/html": { "schema": { "type": "string" } } } } } },
                "post": { "operationId": "submitConfirmCode", "summary": "The person submits the code from the text.", "tags": ["person"],
                    "parameters": [ public_id ],
                    "requestBody": { "required": true, "content": { "application/x-www-form-urlencoded": { "schema": {
                        "type": "object", "required": ["code"], "properties": { "code": { "type": "string", "description": "The 6 digits of the text." } } } } } },
                    "responses": {
                        "200": { "description": "Confirmed.", "content": { "text/html": { "schema": { "type": "string" } } } },
                        "410": { "description": "Expired.", "content": { "text/html": { "schema": { "type": "string" } } } },
                        "422": { "description": "Wrong or malformed code; the form again.", "content": { "text/html": { "schema": { "type": "string" } } } },
                        "429": { "description": "Locked after three wrong codes.", "content": { "text/html": { "schema": { "type": "string" } } } },
                        "404": { "description": "No such sign-up.", "content": { "text/html": { "schema": { "type": "string" } } } } } }
            },
            "/sms/inbound": { "post": {
                "operationId": "receiveInboundSms", "summary": "Twilio's webhook for texts to the demo's number: STOP, START, HELP.", "tags": ["sms"],
                "parameters": [ { "name": "X-Twilio-Signature", "in": "header", "required": false, "schema": { "type": "string" },
                    "description": "Required when the Twilio sender is on." } ],
                "requestBody": { "required": true, "content": { "application/x-www-form-urlencoded": { "schema": {
                    "type": "object", "properties": { "From": { "type": "string" }, "Body": { "type": "string" } } } } } },
                "responses": {
                    "200": { "description": "TwiML with the reply text, if any.", "content": { "text/xml": { "schema": { "type": "string" } } } },
                    "403": { "$ref": "#/components/responses/Forbidden" }
                }
            } },
            "/openapi.json": text_op("getOpenApiJson", "This description, in JSON.", "application/json"),
            // The YAML text is this same document: a client that parses it gets an object.
            "/openapi.yaml": { "get": { "operationId": "getOpenApiYaml", "summary": "This description, in YAML.", "tags": ["publication"],
                "responses": { "200": { "description": "This description, in YAML.",
                    "content": { "application/yaml": { "schema": { "type": "object" } } } } } } },
            "/.well-known/api-catalog": {
                "get": { "operationId": "getApiCatalog", "summary": "The API catalog (RFC 9727).", "tags": ["publication"],
                    "responses": { "200": { "description": "A linkset.", "headers": { "Link": { "schema": { "type": "string" } } },
                        "content": { "application/linkset+json": { "schema": { "type": "object" } } } } } },
                "head": { "operationId": "headApiCatalog", "summary": "The API catalog's Link header.", "tags": ["publication"],
                    "responses": { "200": { "description": "The Link header, rel=api-catalog.", "headers": { "Link": { "schema": { "type": "string" } } } } } }
            },
            "/llms.txt": text_op("getLlmsTxt", "A summary for language models (llmstxt.org).", "text/plain"),
            "/agents.md": text_op("getAgentsMd", "Rules for agents that use this API.", "text/markdown"),
            "/developers": { "get": {
                "operationId": "getDevelopersPage", "summary": "The documentation page: HTML, or Markdown with Accept: text/markdown.", "tags": ["publication"],
                "responses": { "200": { "description": "The page.", "content": {
                    "text/html": { "schema": { "type": "string" } }, "text/markdown": { "schema": { "type": "string" } } } } }
            } }
        },
        "components": {
            "schemas": {
                "SignupRequest": {
                    "type": "object", "additionalProperties": false, "required": ["first_name", "phone"],
                    "properties": {
                        "first_name": { "type": "string", "minLength": 1, "maxLength": 40, "description": "Letters only.", "examples": ["Ada"] },
                        "phone": { "type": "string", "description": "The person's own 10-digit US mobile number; spaces, dashes, dots, parentheses and a leading +1 or 1 are allowed.", "examples": ["(312) 555-0123"] },
                        "reason": { "type": "string", "maxLength": 100, "description": "Optional. No symptoms or health details. Checked and not kept." }
                    }
                },
                "SignupAccepted": {
                    "type": "object",
                    "required": ["status", "message", "person_must_confirm", "confirm_url", "status_url", "expires_in_minutes"],
                    "properties": {
                        "status": { "const": "pending" },
                        "message": { "type": "string" },
                        "person_must_confirm": { "type": "string" },
                        "confirm_url": { "type": "string", "format": "uri" },
                        "status_url": { "type": "string", "format": "uri" },
                        "expires_in_minutes": { "const": 15 }
                    }
                },
                "SignupStatus": {
                    "type": "object", "required": ["status"], "additionalProperties": false,
                    "properties": { "status": { "enum": ["pending", "confirmed", "expired"] } }
                },
                "ApiIndex": {
                    "type": "object", "required": ["endpoints", "links"],
                    "properties": {
                        "name": { "type": "string" }, "version": { "type": "string" },
                        "endpoints": { "type": "array", "items": { "type": "object",
                            "properties": { "method": { "type": "string" }, "path": { "type": "string" }, "operationId": { "type": "string" }, "summary": { "type": "string" } } } },
                        "links": { "type": "object", "additionalProperties": { "type": "string", "format": "uri" } }
                    }
                },
                "Problem": {
                    "type": "object",
                    "required": ["type", "title", "status", "detail", "instance", "code", "resolution", "docs", "error", "message"],
                    "properties": {
                        "type": { "type": "string", "format": "uri", "description": "{base_url}/developers#error-<code>" },
                        "title": { "type": "string" },
                        "status": { "type": "integer" },
                        "detail": { "type": "string" },
                        "instance": { "type": "string", "description": "The request path." },
                        "code": { "enum": errors::CODES.iter().map(|(c, ..)| *c).collect::<Vec<_>>() },
                        "resolution": { "type": "string" },
                        "docs": { "type": "string", "format": "uri" },
                        "error": { "type": "string", "description": "Repeats code." },
                        "message": { "type": "string", "description": "Repeats detail." }
                    }
                }
            },
            "headers": {
                "RateLimitPolicy": { "description": "\"per-address\";q=10;w=3600", "schema": { "type": "string" } },
                "RateLimit": { "description": "\"per-address\";r=<left>;t=<seconds until the oldest counted request leaves the window>", "schema": { "type": "string" } },
                "RetryAfter": { "description": "Seconds to wait.", "schema": { "type": "integer" } }
            },
            "responses": {
                "BadRequest": problem_response("bad_request: the body cannot be read as JSON or form fields."),
                "Forbidden": problem_response("forbidden: the Twilio signature is missing or wrong."),
                "NotFound": problem_response("not_found: no endpoint or no sign-up here."),
                "PayloadTooLarge": problem_response("payload_too_large: the body is over 16 KiB."),
                "InvalidRequest": problem_response("invalid_request: a field is missing or not valid."),
                "RateLimited": {
                    "description": "rate_limited: 10 requests an hour per address, or 500 an hour from everyone.",
                    "headers": { "Retry-After": { "$ref": "#/components/headers/RetryAfter" },
                        "RateLimit-Policy": rate_limit_headers()["RateLimit-Policy"].clone(),
                        "RateLimit": rate_limit_headers()["RateLimit"].clone() },
                    "content": { "application/problem+json": { "schema": { "$ref": "#/components/schemas/Problem" } } }
                },
                "ServerError": problem_response("server_error: a fault on the service side."),
                "DemoFull": {
                    "description": "demo_full: the demo's 50 texts for the Chicago day are sent.",
                    "headers": { "Retry-After": { "$ref": "#/components/headers/RetryAfter" } },
                    "content": { "application/problem+json": { "schema": { "$ref": "#/components/schemas/Problem" } } }
                }
            }
        }
    })
}

/// The endpoint list at `/api`.
pub fn api_index(base: &str) -> Value {
    json!({
        "name": "agora demo sign-up API",
        "version": "1.0.0",
        "endpoints": API_ENDPOINTS.iter().map(|(method, path, id, summary)| json!({
            "method": method, "path": path, "operationId": id, "summary": summary, "href": format!("{base}{path}")
        })).collect::<Vec<_>>(),
        "links": {
            "openapi": format!("{base}/openapi.json"),
            "openapi_yaml": format!("{base}/openapi.yaml"),
            "docs": format!("{base}/developers"),
            "api_catalog": format!("{base}/.well-known/api-catalog"),
            "llms_txt": format!("{base}/llms.txt"),
            "agents_md": format!("{base}/agents.md")
        }
    })
}

fn with_type(body: impl Into<axum::body::Body>, content_type: &'static str) -> Response {
    let mut res = Response::new(body.into());
    res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    res
}

/// # `GET /openapi.json`
pub async fn get_openapi_json(State(state): State<SignupState>) -> Response {
    let body = serde_json::to_vec_pretty(&openapi(&state.base_url)).unwrap_or_default();
    with_type(body, "application/json")
}

/// # `GET /openapi.yaml`
/// The same document as `/openapi.json`, in YAML.
pub async fn get_openapi_yaml(State(state): State<SignupState>) -> Response {
    match serde_norway::to_string(&openapi(&state.base_url)) {
        Ok(yaml) => with_type(yaml, "application/yaml"),
        Err(e) => {
            tracing::error!("the OpenAPI document did not render as YAML: {e}");
            errors::server_error(&state.base_url, "/openapi.yaml").into_response()
        }
    }
}

/// # `GET /.well-known/api-catalog` (and `HEAD`)
/// The RFC 9727 API catalog: a linkset naming this API's description and documentation. `HEAD`
/// answers with the same `Link` header and no body.
pub async fn get_api_catalog(State(state): State<SignupState>) -> Response {
    let base = &state.base_url;
    let catalog = json!({ "linkset": [ {
        "anchor": format!("{base}/api"),
        "service-desc": [
            { "href": format!("{base}/openapi.json"), "type": "application/vnd.oai.openapi+json;version=3.1" },
            { "href": format!("{base}/openapi.yaml"), "type": "application/vnd.oai.openapi;version=3.1" }
        ],
        "service-doc": [ { "href": format!("{base}/developers"), "type": "text/html" } ],
        "service-meta": [ { "href": format!("{base}/llms.txt"), "type": "text/plain" } ]
    } ] });
    let mut res = with_type(
        serde_json::to_vec(&catalog).unwrap_or_default(),
        "application/linkset+json; profile=\"https://www.rfc-editor.org/info/rfc9727\"",
    );
    if let Ok(link) = HeaderValue::from_str(&format!("<{base}/.well-known/api-catalog>; rel=\"api-catalog\""))
    {
        res.headers_mut().insert(header::LINK, link);
    }
    res
}

/// # `GET /llms.txt`
/// A summary for language models, in the llmstxt.org format.
pub async fn get_llms_txt(State(state): State<SignupState>) -> Response {
    let base = &state.base_url;
    let text = format!(
        "# agora demo sign-up API\n\n\
> Starts a demo sign-up for a person of a test health-record preview system (made-up patients only; no medical care or advice) and reads its state. The person confirms with a texted code on a web page; the caller never handles the code.\n\n\
Before starting a sign-up, tell the person: one text with a test code will be sent; message and data rates may apply; replying STOP opts out and HELP gives help; a person who needs help now should call 911. Never send symptoms or health details. Read status at most once every 10 seconds. On 429 or 503, wait the seconds in Retry-After and send once.\n\n\
## Docs\n\n\
- [Developer documentation]({base}/developers): endpoints, limits, every error code (Markdown with Accept: text/markdown)\n\
- [OpenAPI 3.1 description]({base}/openapi.json): the machine-readable contract (also [YAML]({base}/openapi.yaml))\n\
- [Agent rules]({base}/agents.md): what an agent must and must not do with this API\n\n\
## API\n\n\
- [Endpoint list]({base}/api): GET /api, POST /api/signups, GET /api/signups/{{public_id}}\n\n\
## Optional\n\n\
- [API catalog]({base}/.well-known/api-catalog): RFC 9727 linkset\n"
    );
    with_type(text, "text/plain; charset=utf-8")
}

/// # `GET /agents.md`
/// Rules for agents that use this API.
pub async fn get_agents_md(State(state): State<SignupState>) -> Response {
    let base = &state.base_url;
    let text = format!(
        "# Rules for agents: agora demo sign-up API\n\n\
This API starts a demo sign-up for a person and reads its state. It is a test system with made-up patients only; it gives no medical care or advice and no operation reads a health record or a chart. The contract is {base}/openapi.json.\n\n\
## Must\n\n\
- Before calling `POST {base}/api/signups`, tell the person: one text with a test code will be sent to their phone; message and data rates may apply; replying STOP opts out and HELP gives help. If they need help now, tell them to call 911.\n\
- Send only the person's own US mobile number, with their consent, and their first name.\n\
- Give the person `confirm_url`. They type the code themselves.\n\
- Read `status_url` at most once every 10 seconds, and stop at `confirmed` or `expired`.\n\
- On `429` or `503`, wait the seconds in `Retry-After`, then send once. No retry loops.\n\n\
## Must not\n\n\
- Never ask for, read, relay or type the code. The caller never handles it.\n\
- Never send symptoms or real health details, in `reason` or anywhere else.\n\
- Never start sign-ups for numbers that are not the person's own.\n\
- Do not infer from the `202` answer whether a text was sent: it is the same for every number.\n\n\
## Errors\n\n\
Errors are RFC 9457 problems with a stable `code` and a `resolution`; see {base}/developers#errors.\n"
    );
    with_type(text, "text/markdown; charset=utf-8")
}

/// True when the `Accept` header prefers Markdown to HTML (by q-value; HTML wins ties).
fn prefers_markdown(headers: &HeaderMap) -> bool {
    let Some(accept) = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()) else { return false };
    let q_of = |wanted: &str| {
        accept
            .split(',')
            .filter_map(|item| {
                let mut parts = item.split(';').map(str::trim);
                let media = parts.next()?.to_ascii_lowercase();
                let q = parts
                    .find_map(|p| p.strip_prefix("q=").and_then(|q| q.parse::<f32>().ok()))
                    .unwrap_or(1.0);
                let matches = media == wanted || media == "text/*" || media == "*/*";
                // An exact match outranks a wildcard at the same q.
                matches.then_some((q, media == wanted))
            })
            .fold(None::<(f32, bool)>, |best, cur| match best {
                Some(b) if (b.1 && !cur.1) || (b.1 == cur.1 && b.0 >= cur.0) => Some(b),
                _ => Some(cur),
            })
            .map_or(0.0, |(q, _)| q)
    };
    let md = q_of("text/markdown");
    md > 0.0 && md > q_of("text/html")
}

/// The developers page as Markdown, links made absolute.
pub fn developers_markdown(base: &str) -> String {
    DEVELOPERS_MD.replace("{base}", base)
}

/// # `GET /developers`
/// The documentation page: HTML, or Markdown with `Accept: text/markdown`. Both come from one
/// Markdown source, so they cannot drift apart.
pub async fn get_developers_page(State(state): State<SignupState>, headers: HeaderMap) -> Response {
    let markdown = developers_markdown(&state.base_url);
    let mut res = if prefers_markdown(&headers) {
        with_type(markdown, "text/markdown; charset=utf-8")
    } else {
        let options =
            pulldown_cmark::Options::ENABLE_TABLES | pulldown_cmark::Options::ENABLE_HEADING_ATTRIBUTES;
        let mut body = String::new();
        pulldown_cmark::html::push_html(&mut body, pulldown_cmark::Parser::new_ext(&markdown, options));
        let html = format!(
            "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>agora demo sign-up API · developers</title>\n<link rel=\"alternate\" type=\"text/markdown\" href=\"{base}/developers\">\n<link rel=\"service-desc\" type=\"application/vnd.oai.openapi+json;version=3.1\" href=\"{base}/openapi.json\">\n<style>body{{font-family:system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;line-height:1.5}}table{{border-collapse:collapse}}td,th{{border:1px solid #999;padding:.25rem .5rem;text-align:left}}code{{background:#f2f2f2}}</style>\n</head>\n<body>\n<main>\n{body}</main>\n</body>\n</html>\n",
            base = state.base_url
        );
        with_type(html, "text/html; charset=utf-8")
    };
    res.headers_mut().insert(header::VARY, HeaderValue::from_static("Accept"));
    *res.status_mut() = StatusCode::OK;
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT, HeaderValue::from_str(v).expect("header"));
        h
    }

    #[test]
    fn markdown_only_when_preferred() {
        assert!(prefers_markdown(&accept("text/markdown")));
        assert!(prefers_markdown(&accept("text/markdown, text/html;q=0.5")));
        assert!(prefers_markdown(&accept("text/html;q=0.4, text/markdown;q=0.9")));
        assert!(!prefers_markdown(&accept("text/html, text/markdown")));
        assert!(!prefers_markdown(&accept("text/html,application/xhtml+xml,*/*;q=0.8")));
        assert!(!prefers_markdown(&accept("text/markdown;q=0")));
        assert!(!prefers_markdown(&HeaderMap::new()));
    }

    #[test]
    fn every_problem_code_has_its_anchor() {
        let md = developers_markdown("http://x");
        assert!(md.contains("{#errors}"));
        for (code, status, _) in errors::CODES {
            assert!(md.contains(&format!("### {code} {{#error-{code}}}")), "{code}");
            assert!(md.contains(&format!("`{status}`")), "{code} {status}");
        }
    }
}
