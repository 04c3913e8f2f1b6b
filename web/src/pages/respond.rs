//! One prepared representation of a resource (body, type, ETag) and the answers built from it:
//! `200` with caching headers, or `304` when the client's `If-None-Match` already holds it.
//! Every answer of the site also wears the security headers of [`security_headers`].

use axum::body::Body;
use axum::response::Response;
use base64::Engine as _;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use sha2::{Digest, Sha256};

use super::render::STYLESHEET;

/// A resource's body in one format, prepared once when the site is built.
#[derive(Debug, Clone)]
pub struct Representation {
    body: axum::body::Bytes,
    content_type: &'static str,
    etag: String,
}

/// How long caches may keep an answer, by kind of resource.
#[derive(Debug, Clone, Copy)]
pub enum Freshness {
    /// Marketing pages and Pulse: five minutes, then revalidate with the ETag.
    Page,
    /// `/llms.txt`, `/sitemap.xml`, `/openapi.json`: change only with a release.
    Machine,
    /// The 404 page: briefly, so a newly published issue shows up soon.
    Missing,
}

impl Freshness {
    fn cache_control(self) -> &'static str {
        match self {
            Freshness::Page => "public, max-age=300",
            Freshness::Machine => "public, max-age=3600",
            Freshness::Missing => "public, max-age=60",
        }
    }
}

impl Representation {
    pub fn new(body: impl Into<String>, content_type: &'static str) -> Representation {
        let body = body.into();
        let digest = Sha256::digest(body.as_bytes());
        // 128 bits of the body's hash: a strong validator that changes exactly when the bytes do.
        let etag = format!("\"{}\"", digest[..16].iter().map(|b| format!("{b:02x}")).collect::<String>());
        Representation { body: body.into(), content_type, etag }
    }

    pub fn body(&self) -> &str {
        // The body was built from a String; it is valid UTF-8.
        std::str::from_utf8(&self.body).unwrap_or_default()
    }

    /// The answer to a GET: `status` with the body, or `304` when `request` already holds this
    /// exact representation (only for `200`s; a 404 is never revalidated into a 304).
    pub fn answer(
        &self,
        status: StatusCode,
        request: &HeaderMap,
        freshness: Freshness,
        negotiated: bool,
    ) -> Response {
        let not_modified = status == StatusCode::OK && if_none_match_hits(request, &self.etag);
        let mut response = if not_modified {
            Response::new(Body::empty())
        } else {
            let mut r = Response::new(Body::from(self.body.clone()));
            r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(self.content_type));
            r
        };
        *response.status_mut() = if not_modified { StatusCode::NOT_MODIFIED } else { status };
        let headers = response.headers_mut();
        if let Ok(etag) = HeaderValue::from_str(&self.etag) {
            headers.insert(header::ETAG, etag);
        }
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(freshness.cache_control()));
        if negotiated {
            headers.insert(header::VARY, HeaderValue::from_static("Accept"));
        }
        response
    }
}

/// Whether `If-None-Match` names `etag` (weak comparison, RFC 9110 §13.1.2) or is `*`.
fn if_none_match_hits(request: &HeaderMap, etag: &str) -> bool {
    request.get_all(header::IF_NONE_MATCH).iter().filter_map(|v| v.to_str().ok()).any(|value| {
        value.split(',').map(str::trim).any(|tag| tag == "*" || tag.strip_prefix("W/").unwrap_or(tag) == etag)
    })
}

/// The Content-Security-Policy: nothing loads but the inline stylesheet (allowed by its hash)
/// and `data:` images (the favicon); no scripts, no framing, no forms.
pub fn content_security_policy() -> String {
    let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(STYLESHEET.as_bytes()));
    format!(
        "default-src 'none'; style-src 'sha256-{hash}'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )
}

/// Adds the security headers to any answer of the site, the router's own 405s included.
pub fn security_headers(csp: &HeaderValue, mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, csp.clone());
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("strict-origin-when-cross-origin"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        HeaderName::from_static("permissions-policy"),
        HeaderValue::from_static("camera=(), microphone=(), geolocation=(), interest-cohort=()"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_inm(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::IF_NONE_MATCH, HeaderValue::from_str(value).expect("header"));
        h
    }

    #[test]
    fn etags_follow_the_bytes() {
        let a = Representation::new("hello", "text/plain");
        assert_eq!(a.etag, Representation::new("hello", "text/plain").etag);
        assert_ne!(a.etag, Representation::new("hello!", "text/plain").etag);
        assert!(a.etag.starts_with('"') && a.etag.ends_with('"') && a.etag.len() == 34);
    }

    #[test]
    fn if_none_match_compares_weakly_and_in_lists() {
        let etag = "\"abc\"";
        assert!(if_none_match_hits(&with_inm("\"abc\""), etag));
        assert!(if_none_match_hits(&with_inm("W/\"abc\""), etag));
        assert!(if_none_match_hits(&with_inm("\"x\", \"abc\""), etag));
        assert!(if_none_match_hits(&with_inm("*"), etag));
        assert!(!if_none_match_hits(&with_inm("\"abd\""), etag));
        assert!(!if_none_match_hits(&with_inm("abc"), etag));
        assert!(!if_none_match_hits(&HeaderMap::new(), etag));
    }

    #[test]
    fn a_matching_etag_answers_304_without_a_body() {
        let r = Representation::new("hello", "text/plain");
        let answer = r.answer(StatusCode::OK, &with_inm(&r.etag), Freshness::Page, true);
        assert_eq!(answer.status(), StatusCode::NOT_MODIFIED);
        assert_eq!(answer.headers()[header::ETAG], r.etag.as_str());
        assert_eq!(answer.headers()[header::VARY], "Accept");
        assert!(answer.headers().get(header::CONTENT_TYPE).is_none());
        let missing = r.answer(StatusCode::NOT_FOUND, &with_inm(&r.etag), Freshness::Missing, true);
        assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    }
}
