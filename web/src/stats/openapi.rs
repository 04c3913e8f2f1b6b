//! The OpenAPI 3.1 description of the statistics service, served at `/openapi.json`.

use serde_json::{Value, json};

fn problem_responses(codes: &[(&str, &str)]) -> Value {
    let mut out = serde_json::Map::new();
    for (status, text) in codes {
        out.insert(
            (*status).to_owned(),
            json!({ "description": text, "content": { "application/problem+json": { "schema": { "$ref": "#/components/schemas/Problem" } } } }),
        );
    }
    Value::Object(out)
}

fn ok(description: &str, schema: &str) -> Value {
    json!({ "description": description, "content": { "application/json": { "schema": { "$ref": format!("#/components/schemas/{schema}") } } } })
}

fn with(mut base: Value, extra: Value) -> Value {
    if let (Some(b), Value::Object(e)) = (base.as_object_mut(), extra) {
        b.extend(e);
    }
    base
}

fn param(name: &str, location: &str, required: bool, description: &str, schema: Value) -> Value {
    json!({ "name": name, "in": location, "required": required, "description": description, "schema": schema })
}

const DURATION: &str = "^([1-9][0-9]*(w|d|h|m|s))+$";

fn schemas() -> Value {
    let time = json!({ "type": ["string", "null"], "format": "date-time" });
    let site = json!({
        "type": "object",
        "required": ["slug", "name", "url", "enabled", "interval", "timeout", "metrics", "created_at", "updated_at", "as_of", "checked_at", "last_fetch"],
        "properties": {
            "slug": { "type": "string", "pattern": "^[a-z0-9][a-z0-9-]{0,62}$" },
            "name": { "type": "string" },
            "url": { "type": "string", "format": "uri" },
            "enabled": { "type": "boolean" },
            "interval": { "type": "string", "pattern": DURATION },
            "timeout": { "type": "string", "pattern": DURATION },
            "metrics": { "type": ["array", "null"], "items": { "type": "string" }, "description": "null: every metric the site reports" },
            "created_at": { "type": "string", "format": "date-time" },
            "updated_at": { "type": "string", "format": "date-time" },
            "as_of": time.clone(),
            "checked_at": time.clone(),
            "last_fetch": { "type": ["object", "null"], "properties": {
                "id": { "type": "string" }, "started_at": { "type": "string", "format": "date-time" }, "ok": { "type": "boolean" },
                "http_status": { "type": ["integer", "null"] }, "error": { "type": ["string", "null"] } } },
        },
    });
    let site_input = json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "slug": { "type": "string", "pattern": "^[a-z0-9][a-z0-9-]{0,62}$" },
            "name": { "type": "string", "minLength": 1, "maxLength": 100 },
            "url": { "type": "string", "format": "uri", "description": "http or https; answers {\"as_of\", \"metrics\": {name: number}} or a flat object of numbers" },
            "enabled": { "type": "boolean", "default": true },
            "interval": { "type": "string", "pattern": DURATION, "default": "15m", "description": "1s to 7d" },
            "timeout": { "type": "string", "pattern": DURATION, "default": "10s", "description": "1s to 60s" },
            "metrics": { "type": ["array", "null"], "items": { "type": "string", "pattern": "^[A-Za-z0-9_.:-]{1,64}$" }, "default": null },
        },
    });
    let fetch = json!({
        "type": "object",
        "required": ["id", "site", "started_at", "duration_ms", "ok", "http_status", "error", "metrics_seen", "points_written"],
        "properties": {
            "id": { "type": "string" }, "site": { "type": "string" },
            "started_at": { "type": "string", "format": "date-time" }, "duration_ms": { "type": "integer" },
            "ok": { "type": "boolean" }, "http_status": { "type": ["integer", "null"] }, "error": { "type": ["string", "null"] },
            "metrics_seen": { "type": "integer" }, "points_written": { "type": "integer" },
        },
    });
    let snapshot = json!({
        "type": "object",
        "properties": {
            "generated_at": { "type": "string", "format": "date-time" },
            "sites": { "type": "array", "items": { "type": "object", "properties": {
                "slug": { "type": "string" }, "name": { "type": "string" }, "as_of": time.clone(), "checked_at": time.clone(),
                "metrics": { "type": "object", "additionalProperties": { "type": "object", "properties": {
                    "value": { "type": "number" }, "as_of": { "type": "string", "format": "date-time" },
                    "checked_at": { "type": "string", "format": "date-time" },
                    "spark": { "type": "array", "items": { "type": ["number", "null"] }, "description": "one value per UTC day (its last), oldest first; absent when spark=0" },
                } } },
            } } },
        },
    });
    let series = json!({
        "type": "object",
        "properties": {
            "site": { "type": "string" }, "from": { "type": "string", "format": "date-time" }, "to": { "type": "string", "format": "date-time" },
            "every": { "type": "string" }, "agg": { "type": "string" }, "fill": { "type": "string" },
            "series": { "type": "array", "items": { "type": "object", "properties": {
                "metric": { "type": "string" },
                "points": { "type": "array", "items": { "type": "object", "properties": {
                    "t": { "type": "string", "format": "date-time", "description": "the bucket's start" },
                    "v": { "type": ["number", "null"] } } } },
            } } },
        },
    });
    let problem = json!({
        "type": "object",
        "description": "RFC 9457 problem document",
        "properties": {
            "type": { "type": "string" }, "title": { "type": "string" }, "status": { "type": "integer" },
            "detail": { "type": "string" }, "instance": { "type": "string" }, "code": { "type": "string" },
            "resolution": { "type": "string" }, "docs": { "type": "string" }, "error": { "type": "string" }, "message": { "type": "string" },
        },
    });
    json!({
        "Site": site, "SiteInput": site_input, "FetchEntry": fetch, "Snapshot": snapshot, "Series": series, "Problem": problem,
        "SiteList": { "type": "object", "properties": { "sites": { "type": "array", "items": { "$ref": "#/components/schemas/Site" } } } },
        "FetchLog": { "type": "object", "properties": { "fetches": { "type": "array", "items": { "$ref": "#/components/schemas/FetchEntry" } } } },
        "Description": { "type": "object", "properties": { "name": { "type": "string" }, "endpoints": { "type": "object", "additionalProperties": { "type": "string" } }, "freshness": { "type": "string" } } },
    })
}

fn paths() -> Value {
    let admin = json!([{ "bearerAuth": [] }]);
    let slug = param(
        "slug",
        "path",
        true,
        "the site's slug",
        json!({ "type": "string", "pattern": "^[a-z0-9][a-z0-9-]{0,62}$" }),
    );
    let site_body = json!({ "required": true, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/SiteInput" } } } });
    let description = json!({ "summary": "The description document", "operationId": "getDescription", "responses": { "200": ok("name, endpoints, freshness", "Description") } });
    let series_params = json!([
        param("site", "query", true, "the site's slug", json!({ "type": "string" })),
        param(
            "metrics",
            "query",
            false,
            "comma-separated metric names; default: every metric of the site",
            json!({ "type": "string" })
        ),
        param(
            "last",
            "query",
            false,
            "the window ending now (default 30d); not with from/to",
            json!({ "type": "string", "pattern": DURATION })
        ),
        param(
            "from",
            "query",
            false,
            "window start, inclusive (RFC 3339); with to",
            json!({ "type": "string", "format": "date-time" })
        ),
        param(
            "to",
            "query",
            false,
            "window end, exclusive (RFC 3339); with from",
            json!({ "type": "string", "format": "date-time" })
        ),
        param(
            "every",
            "query",
            false,
            "bucket size, aligned to the Unix epoch; default: the smallest of 1m, 5m, 15m, 1h, 6h, 1d, 1w giving at most 500 buckets; at most 11000 buckets",
            json!({ "type": "string", "pattern": DURATION })
        ),
        param(
            "agg",
            "query",
            false,
            "how a bucket's points combine",
            json!({ "type": "string", "enum": ["avg", "sum", "min", "max", "first", "last", "count"], "default": "avg" })
        ),
        param(
            "fill",
            "query",
            false,
            "what empty buckets show (never applied to count, whose empty buckets are 0)",
            json!({ "type": "string", "enum": ["null", "none", "zero", "previous", "linear"], "default": "null" })
        ),
    ]);
    json!({
        "/": { "get": description.clone() },
        "/v1": { "get": with(description, json!({ "operationId": "getDescriptionV1" })) },
        "/up": { "get": { "summary": "Health check", "operationId": "getUp", "responses": { "200": { "description": "ok", "content": { "text/plain": { "schema": { "type": "string", "const": "ok" } } } } } } },
        "/openapi.json": { "get": { "summary": "This description", "operationId": "getOpenapiJson", "responses": { "200": { "description": "OpenAPI 3.1", "content": { "application/json": {} } } } } },
        "/v1/sites": {
            "get": { "summary": "Every site with its freshness, enabled or not", "operationId": "listSites", "responses": with(json!({ "200": ok("the sites, by slug", "SiteList") }), problem_responses(&[("400", "an unknown parameter")])) },
            "post": { "summary": "Create a site (admin)", "operationId": "createSite", "security": admin.clone(), "requestBody": site_body.clone(),
                "responses": with(json!({ "201": ok("the new site", "Site") }), problem_responses(&[("400", "malformed JSON"), ("401", "no or wrong admin token"), ("409", "the slug is taken"), ("422", "a missing, unknown or invalid field")])) },
        },
        "/v1/sites/{slug}": {
            "patch": { "summary": "Change a site (admin)", "operationId": "updateSite", "security": admin.clone(), "parameters": [slug.clone()], "requestBody": site_body,
                "responses": with(json!({ "200": ok("the changed site", "Site") }), problem_responses(&[("401", "no or wrong admin token"), ("404", "no such site"), ("422", "an unknown or invalid field")])) },
            "delete": { "summary": "Delete a site with its points and fetch log (admin)", "operationId": "deleteSite", "security": admin.clone(),
                "parameters": [slug.clone(), param("confirm", "query", true, "the slug again", json!({ "type": "string" }))],
                "responses": with(json!({ "204": { "description": "deleted" } }), problem_responses(&[("400", "confirm missing or not the slug"), ("401", "no or wrong admin token"), ("404", "no such site")])) },
        },
        "/v1/sites/{slug}/fetch": {
            "post": { "summary": "Fetch the site now (admin)", "operationId": "fetchSite", "security": admin, "parameters": [slug],
                "responses": with(json!({ "200": ok("the fetch-log entry (ok false when the fetch failed)", "FetchEntry") }), problem_responses(&[("401", "no or wrong admin token"), ("404", "no such site"), ("409", "the site is disabled")])) },
        },
        "/v1/snapshot": {
            "get": { "summary": "Live snapshot of all enabled sites", "operationId": "getSnapshot",
                "parameters": [param("spark", "query", false, "sparkline window: 0 omits it, <n>d with n up to 400", json!({ "type": "string", "default": "90d", "pattern": "^(0|[1-9][0-9]{0,2}d)$" }))],
                "responses": with(json!({ "200": ok("the snapshot", "Snapshot") }), problem_responses(&[("400", "a bad spark")])) },
        },
        "/v1/series": {
            "get": { "summary": "Time series of one site", "operationId": "getSeries", "parameters": series_params,
                "responses": with(json!({ "200": ok("the series", "Series") }), problem_responses(&[("400", "a bad parameter: duration, both window forms, from not before to, agg, fill, too many buckets, unknown metric"), ("404", "no such site")])) },
        },
        "/v1/fetches": {
            "get": { "summary": "The fetch log, newest first", "operationId": "listFetches",
                "parameters": [param("site", "query", false, "only this site", json!({ "type": "string" })), param("last", "query", false, "how many entries", json!({ "type": "integer", "minimum": 1, "maximum": 1000, "default": 50 }))],
                "responses": with(json!({ "200": ok("the entries", "FetchLog") }), problem_responses(&[("400", "a bad parameter"), ("404", "no such site")])) },
        },
    })
}

/// The document, with `servers` pointing at `base_url`.
pub fn document(base_url: &str) -> Value {
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "agora statistics service",
            "version": "1.0.0",
            "description": "Tracked sites, their metrics with freshness (as_of: when the site computed a number; checked_at: when a fetch last confirmed it), a live snapshot, time series and the fetch log. Reads need no credential; admin operations need the admin bearer token. Errors are RFC 9457 problems.",
        },
        "servers": [{ "url": base_url }],
        "components": {
            "securitySchemes": { "bearerAuth": { "type": "http", "scheme": "bearer", "description": "AGORA_STATS_ADMIN_TOKEN or a token from `agora admin stats-token`" } },
            "schemas": schemas(),
        },
        "paths": paths(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_is_described_and_refs_resolve() {
        let doc = document("http://127.0.0.1:4002");
        assert_eq!(doc["openapi"], "3.1.0");
        let mut ops = Vec::new();
        for (path, item) in doc["paths"].as_object().expect("paths") {
            for (method, op) in item.as_object().expect("item") {
                ops.push(format!("{} {path}", method.to_uppercase()));
                assert!(op["operationId"].is_string(), "{method} {path}");
            }
        }
        for want in
            ["GET /v1/series", "DELETE /v1/sites/{slug}", "POST /v1/sites/{slug}/fetch", "GET /v1/snapshot"]
        {
            assert!(ops.iter().any(|o| o == want), "{want} in {ops:?}");
        }
        let text = doc.to_string();
        for part in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
            let name = part.split('"').next().expect("name");
            assert!(doc["components"]["schemas"].get(name).is_some(), "{name}");
        }
    }
}
