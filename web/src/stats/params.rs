//! Parsing the statistics service's query strings and request bodies into domain types. Every
//! mistake becomes an RFC 9457 problem that names the parameter or field and says what to send.

use std::collections::HashMap;

use agora_storage::series::{Agg, Duration, Fill, SeriesError, SparkDays, Window};
use agora_storage::stats::{
    MetricName, NewSite, SiteName, SitePatch, SiteUrl, Slug, parse_interval, parse_timeout,
};
use agora_storage::time::{parse_rfc3339, rfc3339};
use http::StatusCode;
use serde_json::{Map, Value};

/// A request mistake: its status, code, title and detail. The handler adds the base URL and path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadRequest {
    pub status: StatusCode,
    pub code: &'static str,
    pub title: &'static str,
    pub detail: String,
}

impl BadRequest {
    pub fn param(code: &'static str, detail: impl Into<String>) -> BadRequest {
        BadRequest {
            status: StatusCode::BAD_REQUEST,
            code,
            title: "Bad request parameter",
            detail: detail.into(),
        }
    }

    pub fn body(code: &'static str, detail: impl Into<String>) -> BadRequest {
        BadRequest {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            code,
            title: "Invalid request body",
            detail: detail.into(),
        }
    }
}

impl From<SeriesError> for BadRequest {
    fn from(e: SeriesError) -> BadRequest {
        let code = match &e {
            SeriesError::BadDuration(_) => "bad_duration",
            SeriesError::BadAgg(_) => "bad_agg",
            SeriesError::BadFill(_) => "bad_fill",
            SeriesError::TooManyBuckets(_) => "too_many_buckets",
            SeriesError::EmptyWindow => "bad_window",
            SeriesError::BadSpark(_) => "bad_spark",
        };
        BadRequest::param(code, e.to_string())
    }
}

/// A query string as a map, refusing parameters the endpoint does not take and parameters given
/// twice, so a typo never silently falls back to a default.
pub struct Query(HashMap<String, String>);

impl Query {
    pub fn parse(raw: Option<&str>, allowed: &[&str]) -> Result<Query, BadRequest> {
        let mut map = HashMap::new();
        for (k, v) in url::form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
            if !allowed.contains(&k.as_ref()) {
                let takes = if allowed.is_empty() { "none".to_owned() } else { allowed.join(", ") };
                return Err(BadRequest::param(
                    "unknown_parameter",
                    format!("this endpoint has no parameter {k:?}; it takes: {takes}"),
                ));
            }
            if map.insert(k.to_string(), v.to_string()).is_some() {
                return Err(BadRequest::param(
                    "repeated_parameter",
                    format!("the parameter {k:?} is given twice"),
                ));
            }
        }
        Ok(Query(map))
    }

    pub fn get(&self, k: &str) -> Option<&str> {
        self.0.get(k).map(String::as_str)
    }
}

/// The `spark` parameter of the snapshot: default 90 days.
pub fn spark(q: &Query) -> Result<SparkDays, BadRequest> {
    q.get("spark").map_or(Ok(SparkDays::default()), |s| SparkDays::parse(s).map_err(BadRequest::from))
}

/// A `site` parameter or path segment.
pub fn slug(s: &str) -> Result<Slug, BadRequest> {
    Slug::parse(s).map_err(|e| BadRequest::param("bad_slug", format!("{s:?} is not a site slug: {e}")))
}

/// What `GET /v1/series` asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesRequest {
    pub site: Slug,
    /// `None`: every metric of the site.
    pub metrics: Option<Vec<MetricName>>,
    pub window: Window,
    /// The window as shown back: `last` gives `now - d` and `now`.
    pub shown: (String, String),
    pub every: Duration,
    pub agg: Agg,
    pub fill: Fill,
}

/// The default window of a series.
pub const DEFAULT_LAST: &str = "30d";

pub fn series(q: &Query, now: i64) -> Result<SeriesRequest, BadRequest> {
    let site = slug(q.get("site").ok_or_else(|| {
        BadRequest::param("missing_parameter", "`site` is required: the slug of the site (see GET /v1/sites)")
    })?)?;
    let metrics = match q.get("metrics") {
        None => None,
        Some(list) => Some(
            list.split(',')
                .map(|m| {
                    MetricName::parse(m.trim())
                        .map_err(|e| BadRequest::param("bad_metric", format!("{m:?} in `metrics`: {e}")))
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
    };
    let (window, shown) = match (q.get("last"), q.get("from"), q.get("to")) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
            return Err(BadRequest::param(
                "conflicting_window",
                "give either `last` or both `from` and `to`, not both forms",
            ));
        }
        (None, Some(_), None) | (None, None, Some(_)) => {
            return Err(BadRequest::param(
                "incomplete_window",
                "`from` and `to` go together: give both, or `last`",
            ));
        }
        (None, Some(from), Some(to)) => {
            let time = |name: &str, s: &str| {
                parse_rfc3339(s).ok_or_else(|| {
                    BadRequest::param(
                        "bad_time",
                        format!("`{name}` {s:?} is not an RFC 3339 time such as 2024-05-01T00:00:00Z"),
                    )
                })
            };
            let (f, t) = (time("from", from)?, time("to", to)?);
            if f >= t {
                return Err(BadRequest::param("bad_window", "`from` must be before `to`"));
            }
            (Window::new(f, t)?, (rfc3339(f), rfc3339(t)))
        }
        (last, None, None) => {
            let d = Duration::parse(last.unwrap_or(DEFAULT_LAST))?;
            (Window::last(&d, now), (rfc3339(now - d.ms()), rfc3339(now)))
        }
    };
    let every = match q.get("every") {
        Some(e) => Duration::parse(e)?,
        None => agora_storage::series::auto_every(window),
    };
    let agg = q.get("agg").map_or(Ok(Agg::default()), Agg::parse)?;
    let fill = q.get("fill").map_or(Ok(Fill::default()), Fill::parse)?;
    Ok(SeriesRequest { site, metrics, window, shown, every, agg, fill })
}

/// The `last` of the fetch log: a count, default 50, from 1 to 1000.
pub fn fetch_count(q: &Query) -> Result<usize, BadRequest> {
    let Some(s) = q.get("last") else { return Ok(50) };
    match s.parse::<usize>() {
        Ok(n) if (1..=1000).contains(&n) => Ok(n),
        _ => Err(BadRequest::param(
            "bad_count",
            format!("`last` {s:?} must be a count of entries from 1 to 1000"),
        )),
    }
}

/// A JSON object body; anything else is refused.
pub fn object(body: &[u8]) -> Result<Map<String, Value>, BadRequest> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(o)) => Ok(o),
        Ok(_) => Err(BadRequest::body("bad_body", "the body must be a JSON object")),
        Err(e) => Err(BadRequest {
            status: StatusCode::BAD_REQUEST,
            code: "bad_json",
            title: "Malformed JSON",
            detail: format!("the body is not valid JSON: {e}"),
        }),
    }
}

const SITE_FIELDS: [&str; 7] = ["slug", "name", "url", "enabled", "interval", "timeout", "metrics"];

fn refuse_unknown(o: &Map<String, Value>, allowed: &[&str]) -> Result<(), BadRequest> {
    match o.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(BadRequest::body(
            "unknown_field",
            format!("unknown field {k:?}; the fields are: {}", allowed.join(", ")),
        )),
        None => Ok(()),
    }
}

fn string<'a>(o: &'a Map<String, Value>, k: &str) -> Result<Option<&'a str>, BadRequest> {
    match o.get(k) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(BadRequest::body("invalid_field", format!("`{k}` must be a string"))),
    }
}

fn invalid(k: &str, e: impl std::fmt::Display) -> BadRequest {
    BadRequest::body("invalid_field", format!("`{k}`: {e}"))
}

fn metrics_field(v: &Value) -> Result<Option<Vec<MetricName>>, BadRequest> {
    match v {
        Value::Null => Ok(None),
        Value::Array(items) if items.len() <= 1000 => items
            .iter()
            .map(|i| {
                i.as_str()
                    .and_then(|s| MetricName::parse(s).ok())
                    .ok_or_else(|| invalid("metrics", format!("{i} is not a metric name")))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|m| Some(agora_storage::stats::metric_set(m))),
        _ => Err(invalid("metrics", "must be null (every metric) or a list of up to 1000 metric names")),
    }
}

/// The body of `POST /v1/sites`.
pub fn new_site(body: &[u8]) -> Result<NewSite, BadRequest> {
    let o = object(body)?;
    refuse_unknown(&o, &SITE_FIELDS)?;
    let required = |k: &str| {
        string(&o, k)?.ok_or_else(|| BadRequest::body("missing_field", format!("`{k}` is required")))
    };
    let slug = Slug::parse(required("slug")?).map_err(|e| invalid("slug", e))?;
    let name = SiteName::parse(required("name")?).map_err(|e| invalid("name", e))?;
    let url = SiteUrl::parse(required("url")?).map_err(|e| invalid("url", e))?;
    let enabled = match o.get("enabled") {
        None => true,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(invalid("enabled", "must be true or false")),
    };
    let interval =
        parse_interval(string(&o, "interval")?.unwrap_or("15m")).map_err(|e| invalid("interval", e))?;
    let timeout =
        parse_timeout(string(&o, "timeout")?.unwrap_or("10s")).map_err(|e| invalid("timeout", e))?;
    let metrics = o.get("metrics").map_or(Ok(None), metrics_field)?;
    Ok(NewSite { slug, name, url, enabled, interval, timeout, metrics })
}

/// The body of `PATCH /v1/sites/{slug}`: any of the fields but `slug`.
pub fn site_patch(body: &[u8]) -> Result<SitePatch, BadRequest> {
    let o = object(body)?;
    if o.contains_key("slug") {
        return Err(BadRequest::body(
            "immutable_field",
            "`slug` cannot be changed; create a new site instead",
        ));
    }
    refuse_unknown(&o, &SITE_FIELDS[1..])?;
    Ok(SitePatch {
        name: string(&o, "name")?.map(|s| SiteName::parse(s).map_err(|e| invalid("name", e))).transpose()?,
        url: string(&o, "url")?.map(|s| SiteUrl::parse(s).map_err(|e| invalid("url", e))).transpose()?,
        enabled: match o.get("enabled") {
            None => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(_) => return Err(invalid("enabled", "must be true or false")),
        },
        interval: string(&o, "interval")?
            .map(|s| parse_interval(s).map_err(|e| invalid("interval", e)))
            .transpose()?,
        timeout: string(&o, "timeout")?
            .map(|s| parse_timeout(s).map_err(|e| invalid("timeout", e)))
            .transpose()?,
        metrics: o.get("metrics").map(metrics_field).transpose()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Query {
        Query::parse(Some(s), &["site", "metrics", "last", "from", "to", "every", "agg", "fill"])
            .expect("query")
    }

    const NOW: i64 = 1_714_564_800_000; // 2024-05-01T12:00:00Z

    #[test]
    fn series_defaults() {
        let r = series(&q("site=a"), NOW).expect("ok");
        assert_eq!(r.every.to_string(), "6h");
        assert_eq!((r.agg, r.fill, r.metrics), (Agg::Avg, Fill::Null, None));
        assert_eq!(r.shown, ("2024-04-01T12:00:00.000Z".to_owned(), "2024-05-01T12:00:00.000Z".to_owned()));
    }

    #[test]
    fn series_mistakes() {
        let code = |s: &str| series(&q(s), NOW).expect_err(s).code;
        assert_eq!(code("metrics=a"), "missing_parameter");
        assert_eq!(code("site=A"), "bad_slug");
        assert_eq!(code("site=a&last=3x"), "bad_duration");
        assert_eq!(
            code("site=a&last=1d&from=2024-01-01T00:00:00Z&to=2024-01-02T00:00:00Z"),
            "conflicting_window"
        );
        assert_eq!(code("site=a&from=2024-01-01T00:00:00Z"), "incomplete_window");
        assert_eq!(code("site=a&from=2024-01-02T00:00:00Z&to=2024-01-01T00:00:00Z"), "bad_window");
        assert_eq!(code("site=a&from=yesterday&to=2024-01-01T00:00:00Z"), "bad_time");
        assert_eq!(code("site=a&agg=mean"), "bad_agg");
        assert_eq!(code("site=a&fill=forward"), "bad_fill");
        assert_eq!(code("site=a&every=0m"), "bad_duration");
        assert_eq!(code("site=a&metrics=a,,b"), "bad_metric");
        let e = Query::parse(Some("site=a&sites=b"), &["site"]).err().expect("unknown");
        assert_eq!(e.code, "unknown_parameter");
        let e = Query::parse(Some("site=a&site=b"), &["site"]).err().expect("twice");
        assert_eq!(e.code, "repeated_parameter");
    }

    #[test]
    fn bodies() {
        let s = new_site(br#"{"slug":"a","name":"A","url":"https://a.example/stats"}"#).expect("ok");
        assert_eq!(
            (s.interval.to_string(), s.timeout.to_string(), s.enabled, s.metrics),
            ("15m".into(), "10s".into(), true, None)
        );
        let code = |b: &str| new_site(b.as_bytes()).expect_err(b).code;
        assert_eq!(code(r#"{"slug":"a","name":"A"}"#), "missing_field");
        assert_eq!(code(r#"{"slug":"a","name":"A","url":"https://a.example","colour":1}"#), "unknown_field");
        assert_eq!(code(r#"{"slug":"a","name":"A","url":"ftp://a.example"}"#), "invalid_field");
        assert_eq!(
            code(r#"{"slug":"a","name":"A","url":"https://a.example","interval":"0s"}"#),
            "invalid_field"
        );
        assert_eq!(
            code(r#"{"slug":"a","name":"A","url":"https://a.example","metrics":"x"}"#),
            "invalid_field"
        );
        assert_eq!(code("[1]"), "bad_body");
        assert_eq!(code("{"), "bad_json");
        let p = site_patch(br#"{"enabled":false,"metrics":null}"#).expect("patch");
        assert_eq!((p.enabled, p.metrics), (Some(false), Some(None)));
        assert_eq!(site_patch(br#"{"slug":"b"}"#).err().map(|e| e.code), Some("immutable_field"));
    }
}
