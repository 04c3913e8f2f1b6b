//! What a tracked site answers, parsed: either `{"as_of": "<RFC 3339>", "metrics": {name: number}}`
//! or a flat object of numbers. Values that are not finite numbers, and names that are not
//! [`MetricName`]s, are ignored; anything that is not a JSON object fails the fetch.

use agora_storage::stats::MetricName;
use agora_storage::time::parse_rfc3339;
use serde_json::Value;

/// The most metrics taken from one answer (by name order); the rest are ignored, so one site
/// cannot grow the store without bound.
pub const MAX_METRICS: usize = 1_000;

pub use agora_storage::stats::Reading;

/// Parses an answer body; the error is the fetch log's `error` text.
pub fn parse_reading(body: &[u8]) -> Result<Reading, String> {
    let value: Value = serde_json::from_slice(body).map_err(|_| "the answer is not JSON".to_owned())?;
    let Value::Object(obj) = value else { return Err("the answer is not a JSON object".into()) };
    let (as_of, metrics) = match obj.get("metrics") {
        Some(Value::Object(metrics)) => {
            let as_of = match obj.get("as_of") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => {
                    Some(parse_rfc3339(s).ok_or_else(|| format!("as_of {s:?} is not an RFC 3339 time"))?)
                }
                Some(_) => return Err("as_of is not an RFC 3339 time".into()),
            };
            (as_of, metrics)
        }
        _ => (None, &obj),
    };
    let readings = metrics
        .iter()
        .filter_map(|(k, v)| {
            let v = v.as_f64().filter(|v| v.is_finite())?;
            Some((MetricName::parse(k).ok()?, v))
        })
        .take(MAX_METRICS)
        .collect();
    Ok((as_of, readings))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(r: &Reading) -> Vec<(&str, f64)> {
        r.1.iter().map(|(n, v)| (n.as_str(), *v)).collect()
    }

    #[test]
    fn wrapped_form_with_as_of() {
        let r = parse_reading(br#"{"as_of":"2024-05-01T12:00:00Z","metrics":{"users":10,"ratio":0.5,"label":"x","bad name":1}}"#)
            .expect("ok");
        assert_eq!(r.0, Some(1_714_564_800_000));
        assert_eq!(names(&r), vec![("ratio", 0.5), ("users", 10.0)]);
    }

    #[test]
    fn flat_form_and_missing_as_of() {
        let r = parse_reading(br#"{"a":1,"b":null,"c":[1],"d":-2.5}"#).expect("ok");
        assert_eq!(r.0, None);
        assert_eq!(names(&r), vec![("a", 1.0), ("d", -2.5)]);
        let r = parse_reading(br#"{"metrics":{"a":1}}"#).expect("ok");
        assert_eq!((r.0, names(&r)), (None, vec![("a", 1.0)]));
        // `metrics` that is not an object: the flat form, where it is just a non-number.
        let r = parse_reading(br#"{"metrics":3,"x":4}"#).expect("ok");
        assert_eq!(names(&r), vec![("metrics", 3.0), ("x", 4.0)]);
    }

    #[test]
    fn garbage_fails() {
        assert_eq!(parse_reading(b"<html>").err().as_deref(), Some("the answer is not JSON"));
        assert_eq!(parse_reading(b"[1,2]").err().as_deref(), Some("the answer is not a JSON object"));
        assert!(parse_reading(br#"{"as_of":"yesterday","metrics":{"a":1}}"#).is_err());
        assert!(parse_reading(br#"{"as_of":5,"metrics":{"a":1}}"#).is_err());
    }

    #[test]
    fn at_most_max_metrics() {
        let body: serde_json::Map<String, Value> =
            (0..MAX_METRICS + 5).map(|i| (format!("m{i:05}"), Value::from(i))).collect();
        let r = parse_reading(&serde_json::to_vec(&body).expect("json")).expect("ok");
        assert_eq!(r.1.len(), MAX_METRICS);
    }
}
