//! Request bodies: at most 64 KiB of JSON holding one object, every field known.
//!
//! Each operation names the fields it takes; any other field (`source`, `author`, `from`, `as`,
//! `bot` among them) is refused with `422 unknown_field` naming it, so a caller can never choose
//! what the server sets. Fields are then read one by one, so a wrong type names its field too.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use serde_json::{Map, Value};

use super::error::{ApiError, ErrorCode};

/// The largest request body, in bytes.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// A JSON object body, not yet checked against the fields of an operation.
pub struct JsonObject(pub Map<String, Value>);

impl<S: Send + Sync> FromRequest<S> for JsonObject {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            if rejection.status() == http::StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(
                    ErrorCode::PayloadTooLarge,
                    format!("The request body is larger than {} KiB.", MAX_BODY_BYTES / 1024),
                )
            } else {
                ApiError::bad_request("The request body could not be read.")
            }
        })?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(JsonObject(Map::new()));
        }
        let value: Value = serde_json::from_slice(&bytes)
            .map_err(|e| ApiError::bad_request(format!("The body is not valid JSON: {e}.")))?;
        match value {
            Value::Object(map) => Ok(JsonObject(map)),
            _ => Err(ApiError::bad_request("The body must be one JSON object.")),
        }
    }
}

impl JsonObject {
    /// Refuses any field not in `allowed`.
    pub fn only(self, allowed: &[&str]) -> Result<Fields, ApiError> {
        let mut unknown: Vec<&String> = self.0.keys().filter(|k| !allowed.contains(&k.as_str())).collect();
        unknown.sort();
        if let Some(field) = unknown.first() {
            return Err(ApiError::unprocessable(
                field,
                "unknown_field",
                format!("Unknown field `{field}`: this operation takes {}.", allowed.join(", ")),
            ));
        }
        Ok(Fields(self.0))
    }
}

/// The fields of a body, all known.
pub struct Fields(Map<String, Value>);

impl Fields {
    fn wrong(field: &str, what: &str) -> ApiError {
        ApiError::unprocessable(field, "invalid_type", format!("`{field}` must be {what}."))
    }

    fn missing(field: &str) -> ApiError {
        ApiError::unprocessable(field, "missing", format!("`{field}` is required."))
    }

    /// A string field that must be there.
    pub fn string(&self, field: &str) -> Result<String, ApiError> {
        self.opt_string(field)?.ok_or_else(|| Self::missing(field))
    }

    /// A string field that may be absent (or null).
    pub fn opt_string(&self, field: &str) -> Result<Option<String>, ApiError> {
        match self.0.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(Self::wrong(field, "a string")),
        }
    }

    /// A field that may be absent, null (`Some(None)`), or a string.
    pub fn nullable_string(&self, field: &str) -> Result<Option<Option<String>>, ApiError> {
        match self.0.get(field) {
            None => Ok(None),
            Some(Value::Null) => Ok(Some(None)),
            Some(Value::String(s)) => Ok(Some(Some(s.clone()))),
            Some(_) => Err(Self::wrong(field, "a string or null")),
        }
    }

    pub fn opt_bool(&self, field: &str) -> Result<Option<bool>, ApiError> {
        match self.0.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(Self::wrong(field, "true or false")),
        }
    }

    pub fn opt_string_list(&self, field: &str) -> Result<Option<Vec<String>>, ApiError> {
        match self.0.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().map(str::to_owned).ok_or_else(|| Self::wrong(field, "a list of strings")))
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(_) => Err(Self::wrong(field, "a list of strings")),
        }
    }
}
