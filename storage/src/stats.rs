//! The statistics service's data: tracked sites, each metric's latest value and freshness, the
//! points, daily rollups, the fetch log and the admin tokens.
//!
//! Record ids put the site and the metric first and the time last (`point:[site, metric, t]`,
//! `rollup:[site, metric, day]`), so a window of one metric is a record-id range scan. Writes to a
//! site's points come from one writer only (its fetcher), which is what lets [`Store::record_fetch`]
//! read a day's points and write the day's rollup without a race.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::db::Store;
use crate::error::{Result, StorageError};
use crate::ids::new_id;
use crate::people::{decode, is_duplicate};
use crate::secret::{constant_time_eq, new_token, token_hash};
use crate::series::{
    Acc, Agg, Bucketer, DAY_MS, Duration, Fill, SeriesError, SparkDays, Window, bucket_start,
};

/// A site's slug: `^[a-z0-9][a-z0-9-]{0,62}$`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Slug(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a slug is 1 to 63 characters of a-z, 0-9 and '-', starting with a letter or digit")]
pub struct BadSlug;

impl Slug {
    pub fn parse(s: &str) -> std::result::Result<Slug, BadSlug> {
        let b = s.as_bytes();
        let first_ok = b.first().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
        let rest_ok = b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-');
        if first_ok && rest_ok && b.len() <= 63 { Ok(Slug(s.to_owned())) } else { Err(BadSlug) }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Slug {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A metric's name: 1 to 64 characters of letters, digits, `_`, `.`, `:` and `-`. Anything else a
/// site reports is ignored, so a name is always safe in a record id and in a `metrics=a,b` list.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MetricName(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a metric name is 1 to 64 characters of letters, digits, '_', '.', ':' and '-'")]
pub struct BadMetricName;

impl MetricName {
    pub fn parse(s: &str) -> std::result::Result<MetricName, BadMetricName> {
        let ok = !s.is_empty()
            && s.len() <= 64
            && s.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b':' | b'-'));
        if ok { Ok(MetricName(s.to_owned())) } else { Err(BadMetricName) }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A site's display name: 1 to 100 characters, no control characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteName(String);

impl SiteName {
    pub fn parse(s: &str) -> std::result::Result<SiteName, &'static str> {
        let s = s.trim();
        if s.is_empty() || s.chars().count() > 100 || s.chars().any(char::is_control) {
            Err("a name is 1 to 100 characters without control characters")
        } else {
            Ok(SiteName(s.to_owned()))
        }
    }
}

/// Where a site's numbers are fetched: an absolute `http` or `https` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteUrl(String);

impl SiteUrl {
    pub fn parse(s: &str) -> std::result::Result<SiteUrl, &'static str> {
        const BAD: &str = "url must be an absolute http or https URL with a host";
        let u = url::Url::parse(s).map_err(|_| BAD)?;
        if !matches!(u.scheme(), "http" | "https") || u.host_str().is_none_or(str::is_empty) || s.len() > 2000
        {
            return Err(BAD);
        }
        Ok(SiteUrl(u.to_string()))
    }
}

/// The shortest and longest fetch interval.
pub const INTERVAL_RANGE_MS: (i64, i64) = (1_000, 7 * DAY_MS);
/// The shortest and longest fetch timeout.
pub const TIMEOUT_RANGE_MS: (i64, i64) = (1_000, 60_000);

/// A fetch interval: a series [`Duration`] from 1 s to 7 d.
pub fn parse_interval(s: &str) -> std::result::Result<Duration, String> {
    let d = Duration::parse(s).map_err(|e| e.to_string())?;
    if d.ms() < INTERVAL_RANGE_MS.0 || d.ms() > INTERVAL_RANGE_MS.1 {
        return Err("interval must be from 1s to 7d".into());
    }
    Ok(d)
}

/// A fetch timeout: a series [`Duration`] from 1 s to 60 s.
pub fn parse_timeout(s: &str) -> std::result::Result<Duration, String> {
    let d = Duration::parse(s).map_err(|e| e.to_string())?;
    if d.ms() < TIMEOUT_RANGE_MS.0 || d.ms() > TIMEOUT_RANGE_MS.1 {
        return Err("timeout must be from 1s to 60s".into());
    }
    Ok(d)
}

/// A site to create. Every field is parsed; nothing invalid can be stored.
#[derive(Debug, Clone)]
pub struct NewSite {
    pub slug: Slug,
    pub name: SiteName,
    pub url: SiteUrl,
    pub enabled: bool,
    pub interval: Duration,
    pub timeout: Duration,
    /// `None`: every metric the site reports.
    pub metrics: Option<Vec<MetricName>>,
}

/// A change to a site; `None` leaves a field as it is. `metrics: Some(None)` means "all".
#[derive(Debug, Clone, Default)]
pub struct SitePatch {
    pub name: Option<SiteName>,
    pub url: Option<SiteUrl>,
    pub enabled: Option<bool>,
    pub interval: Option<Duration>,
    pub timeout: Option<Duration>,
    pub metrics: Option<Option<Vec<MetricName>>>,
}

/// The newest fetch of a site, in brief.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LastFetch {
    pub id: String,
    pub started_at: i64,
    pub ok: bool,
    pub http_status: Option<u16>,
    pub error: Option<String>,
}

/// A site as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Site {
    pub slug: String,
    pub name: String,
    pub url: String,
    pub enabled: bool,
    pub interval: String,
    pub interval_ms: i64,
    pub timeout: String,
    pub timeout_ms: i64,
    pub metrics: Option<Vec<String>>,
    pub created_at: i64,
    pub updated_at: i64,
    /// When the site computed the numbers of its newest successful fetch.
    pub as_of: Option<i64>,
    /// The last time a fetch confirmed the site still reports them.
    pub checked_at: Option<i64>,
    pub last_fetch: Option<LastFetch>,
}

impl Site {
    /// True when the site's configuration lets it report `name`.
    pub fn tracks(&self, name: &MetricName) -> bool {
        self.metrics.as_ref().is_none_or(|m| m.iter().any(|x| x == name.as_str()))
    }
}

/// A metric's latest value and freshness.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricState {
    pub name: String,
    pub value: f64,
    pub as_of: i64,
    pub checked_at: i64,
}

/// One entry of the fetch log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FetchEntry {
    pub id: String,
    pub site: String,
    pub started_at: i64,
    pub duration_ms: i64,
    pub ok: bool,
    pub http_status: Option<u16>,
    pub error: Option<String>,
    pub metrics_seen: u32,
    pub points_written: u32,
}

/// A site's numbers, with the time the site says it computed them, if it says.
pub type Reading = (Option<i64>, Vec<(MetricName, f64)>);

/// What one fetch found, ready to be recorded.
#[derive(Debug, Clone)]
pub struct FetchResult {
    pub started_at: i64,
    pub duration_ms: i64,
    pub http_status: Option<u16>,
    /// `Ok((as_of given by the site, readings))` or the reason the fetch failed.
    pub outcome: std::result::Result<Reading, String>,
}

/// The most fetch-log entries kept per site; older ones are deleted as new ones come.
pub const FETCH_LOG_KEEP: usize = 1000;

/// How many points one transaction writes when loading many.
const POINT_BATCH: usize = 5_000;

impl Store {
    pub async fn create_site(&self, new: NewSite, now: i64) -> Result<Site> {
        let site = Site {
            slug: new.slug.0.clone(),
            name: new.name.0,
            url: new.url.0,
            enabled: new.enabled,
            interval: new.interval.to_string(),
            interval_ms: new.interval.ms(),
            timeout: new.timeout.to_string(),
            timeout_ms: new.timeout.ms(),
            metrics: new.metrics.map(|m| m.into_iter().map(|n| n.0).collect()),
            created_at: now,
            updated_at: now,
            as_of: None,
            checked_at: None,
            last_fetch: None,
        };
        let doc = serde_json::to_value(&site).map_err(StorageError::corrupt)?;
        match self
            .execute(
                "CREATE type::record('site', $slug) CONTENT $doc",
                json!({ "slug": site.slug, "doc": doc }),
            )
            .await
        {
            Ok(_) => Ok(site),
            Err(e) if is_duplicate(&e) => Err(StorageError::Conflict(format!("site {}", new.slug))),
            Err(e) => Err(e),
        }
    }

    pub async fn site(&self, slug: &Slug) -> Result<Option<Site>> {
        let rows = self
            .query_rows("SELECT * FROM type::record('site', $slug)", json!({ "slug": slug.as_str() }))
            .await?;
        rows.into_iter().next().map(decode_site).transpose()
    }

    /// Every site, by slug.
    pub async fn sites(&self) -> Result<Vec<Site>> {
        let rows = self.query_rows("SELECT * FROM site ORDER BY slug", Value::Null).await?;
        rows.into_iter().map(decode_site).collect()
    }

    pub async fn update_site(&self, slug: &Slug, patch: SitePatch, now: i64) -> Result<Site> {
        let mut set = serde_json::Map::new();
        set.insert("updated_at".into(), json!(now));
        if let Some(n) = patch.name {
            set.insert("name".into(), json!(n.0));
        }
        if let Some(u) = patch.url {
            set.insert("url".into(), json!(u.0));
        }
        if let Some(e) = patch.enabled {
            set.insert("enabled".into(), json!(e));
        }
        if let Some(i) = patch.interval {
            set.insert("interval".into(), json!(i.to_string()));
            set.insert("interval_ms".into(), json!(i.ms()));
        }
        if let Some(t) = patch.timeout {
            set.insert("timeout".into(), json!(t.to_string()));
            set.insert("timeout_ms".into(), json!(t.ms()));
        }
        if let Some(m) = patch.metrics {
            let m: Value = m.map_or(Value::Null, |m| json!(m.into_iter().map(|n| n.0).collect::<Vec<_>>()));
            set.insert("metrics".into(), m);
        }
        let rows = self
            .query_rows(
                "UPDATE type::record('site', $slug) MERGE $set RETURN AFTER",
                json!({ "slug": slug.as_str(), "set": set }),
            )
            .await?;
        rows.into_iter()
            .next()
            .map(decode_site)
            .transpose()?
            .ok_or_else(|| StorageError::NotFound(format!("site {slug}")))
    }

    /// Deletes a site with all its metrics, points, rollups and fetch log. `false` when there was
    /// no such site.
    pub async fn delete_site(&self, slug: &Slug) -> Result<bool> {
        if self.site(slug).await?.is_none() {
            return Ok(false);
        }
        let sql = "BEGIN TRANSACTION;
            FOR $m IN (SELECT VALUE name FROM metric WHERE site = $s) {
                DELETE point:[$s, $m, $lo]..=[$s, $m, $hi];
                DELETE rollup:[$s, $m, $lo]..=[$s, $m, $hi];
            };
            DELETE metric WHERE site = $s;
            DELETE fetch WHERE site = $s;
            DELETE type::record('site', $s);
            COMMIT TRANSACTION;";
        self.execute(sql, json!({ "s": slug.as_str(), "lo": i64::MIN, "hi": i64::MAX })).await?;
        Ok(true)
    }

    /// The latest value of each metric of a site, by name.
    pub async fn metric_states(&self, slug: &Slug) -> Result<Vec<MetricState>> {
        let rows = self
            .query_rows(
                "SELECT name, value, as_of, checked_at FROM metric WHERE site = $s ORDER BY name",
                json!({ "s": slug.as_str() }),
            )
            .await?;
        rows.into_iter().map(|r| serde_json::from_value(r).map_err(StorageError::corrupt)).collect()
    }

    /// Records one fetch: for a success, the points whose value or `as_of` changed (at `as_of`,
    /// or the fetch time when the site gives none), the day rollups they touch, each metric's
    /// value and freshness and the site's; for both, the fetch-log entry. One transaction.
    pub async fn record_fetch(&self, slug: &Slug, fetch: FetchResult) -> Result<FetchEntry> {
        let mut entry = FetchEntry {
            id: new_id("f_"),
            site: slug.0.clone(),
            started_at: fetch.started_at,
            duration_ms: fetch.duration_ms,
            ok: fetch.outcome.is_ok(),
            http_status: fetch.http_status,
            error: fetch.outcome.as_ref().err().cloned(),
            metrics_seen: 0,
            points_written: 0,
        };
        let mut points: Vec<(String, i64, f64)> = Vec::new();
        let mut metric_docs = Vec::new();
        let mut site_set = serde_json::Map::new();
        if let Ok((as_of, readings)) = &fetch.outcome {
            let at = as_of.unwrap_or(fetch.started_at);
            let known: BTreeMap<String, MetricState> =
                self.metric_states(slug).await?.into_iter().map(|m| (m.name.clone(), m)).collect();
            for (name, value) in readings {
                let changed = known.get(name.as_str()).is_none_or(|m| m.value != *value || m.as_of != at);
                let (value, as_of) = if changed {
                    points.push((name.0.clone(), at, *value));
                    (*value, at)
                } else {
                    known.get(name.as_str()).map_or((*value, at), |m| (m.value, m.as_of))
                };
                metric_docs.push(json!({
                    "site": slug.as_str(), "name": name.as_str(), "value": value, "as_of": as_of,
                    "checked_at": fetch.started_at,
                }));
            }
            entry.metrics_seen = u32::try_from(readings.len()).unwrap_or(u32::MAX);
            entry.points_written = u32::try_from(points.len()).unwrap_or(u32::MAX);
            site_set.insert("as_of".into(), json!(at));
            site_set.insert("checked_at".into(), json!(fetch.started_at));
        }
        let last = LastFetch {
            id: entry.id.clone(),
            started_at: entry.started_at,
            ok: entry.ok,
            http_status: entry.http_status,
            error: entry.error.clone(),
        };
        site_set.insert("last_fetch".into(), serde_json::to_value(&last).map_err(StorageError::corrupt)?);
        let rollups = self.rollups_after(slug, &points).await?;
        let mut doc = serde_json::to_value(&entry).map_err(StorageError::corrupt)?;
        if let Some(o) = doc.as_object_mut() {
            o.remove("id");
        }
        let sql = "BEGIN TRANSACTION;
            FOR $p IN $points { UPSERT type::record('point', [$s, $p.m, $p.t]) CONTENT { t: $p.t, v: $p.v }; };
            FOR $r IN $rollups { UPSERT type::record('rollup', [$s, $r.m, $r.d]) CONTENT $r.doc; };
            FOR $x IN $metrics { UPSERT type::record('metric', [$s, $x.name]) CONTENT $x; };
            UPDATE type::record('site', $s) MERGE $site_set;
            CREATE type::record('fetch', $id) CONTENT $doc;
            COMMIT TRANSACTION;";
        let vars = json!({
            "s": slug.as_str(),
            "points": points.iter().map(|(m, t, v)| json!({ "m": m, "t": t, "v": v })).collect::<Vec<_>>(),
            "rollups": rollups,
            "metrics": metric_docs,
            "site_set": site_set,
            "id": entry.id,
            "doc": doc,
        });
        self.execute(sql, vars).await?;
        self.prune_fetch_log(slug).await?;
        Ok(entry)
    }

    /// Keeps the newest [`FETCH_LOG_KEEP`] entries of a site's fetch log.
    async fn prune_fetch_log(&self, slug: &Slug) -> Result<()> {
        let sql = "LET $cut = (SELECT VALUE started_at FROM fetch WHERE site = $s ORDER BY started_at DESC LIMIT 1 START $keep)[0];
            IF $cut != NONE { DELETE fetch WHERE site = $s AND started_at <= $cut; };";
        self.execute(sql, json!({ "s": slug.as_str(), "keep": FETCH_LOG_KEEP })).await?;
        Ok(())
    }

    /// The rollup documents of the days that `points` touch, as they will be once the points are
    /// written: each day's stored points with the new ones laid over them.
    async fn rollups_after(&self, slug: &Slug, points: &[(String, i64, f64)]) -> Result<Vec<Value>> {
        let mut days: BTreeMap<(String, i64), BTreeMap<i64, f64>> = BTreeMap::new();
        for (m, t, v) in points {
            days.entry((m.clone(), bucket_start(*t, DAY_MS))).or_default().insert(*t, *v);
        }
        let mut out = Vec::with_capacity(days.len());
        for ((m, day), new) in days {
            let mut all: BTreeMap<i64, f64> =
                self.raw_points(slug.as_str(), &m, day, day + DAY_MS).await?.into_iter().collect();
            all.extend(new);
            if let Some(acc) = Acc::of(all) {
                out.push(json!({ "m": m, "d": day, "doc": rollup_doc(&acc) }));
            }
        }
        Ok(out)
    }

    /// Loads many points of one metric at once (imports, benchmarks), `POINT_BATCH` to a
    /// transaction, with their day rollups. Points at a time already stored replace it. The
    /// metric's latest value becomes the newest point's when it is newer than what is stored.
    pub async fn load_points(&self, slug: &Slug, metric: &MetricName, points: &[(i64, f64)]) -> Result<()> {
        for batch in points.chunks(POINT_BATCH) {
            let named: Vec<(String, i64, f64)> =
                batch.iter().map(|&(t, v)| (metric.0.clone(), t, v)).collect();
            let rollups = self.rollups_after(slug, &named).await?;
            let sql = "BEGIN TRANSACTION;
                FOR $p IN $points { UPSERT type::record('point', [$s, $m, $p[0]]) CONTENT { t: $p[0], v: $p[1] }; };
                FOR $r IN $rollups { UPSERT type::record('rollup', [$s, $r.m, $r.d]) CONTENT $r.doc; };
                COMMIT TRANSACTION;";
            let pts: Vec<Value> = batch.iter().map(|&(t, v)| json!([t, v])).collect();
            self.execute(
                sql,
                json!({ "s": slug.as_str(), "m": metric.as_str(), "points": pts, "rollups": rollups }),
            )
            .await?;
        }
        if let Some(&(t, v)) = points.iter().max_by_key(|p| p.0) {
            let sql = "LET $id = type::record('metric', [$s, $m]);
                LET $cur = (SELECT VALUE as_of FROM $id)[0];
                IF $cur = NONE OR $cur < $t {
                    UPSERT $id CONTENT { site: $s, name: $m, value: $v, as_of: $t, checked_at: $t };
                };";
            self.execute(sql, json!({ "s": slug.as_str(), "m": metric.as_str(), "t": t, "v": v })).await?;
        }
        Ok(())
    }

    /// The stored points of one metric with `lo <= t < hi`, oldest first.
    async fn raw_points(&self, slug: &str, metric: &str, lo: i64, hi: i64) -> Result<Vec<(i64, f64)>> {
        let rows = self
            .query_rows(
                "SELECT VALUE [t, v] FROM point:[$s, $m, $lo]..[$s, $m, $hi]",
                json!({ "s": slug, "m": metric, "lo": lo, "hi": hi }),
            )
            .await?;
        rows.iter()
            .map(|r| {
                let t = r.get(0).and_then(Value::as_i64);
                let v = r.get(1).and_then(Value::as_f64);
                t.zip(v).ok_or_else(|| StorageError::Corrupt(format!("point {r}")))
            })
            .collect()
    }

    /// The stored day rollups of one metric with `lo <= day < hi`.
    async fn rollups(&self, slug: &str, metric: &str, lo: i64, hi: i64) -> Result<Vec<(i64, Acc)>> {
        let rows = self
            .query_rows(
                "SELECT record::id(id)[2] AS d, n, sum, min, max, ft, fv, lt, lv FROM rollup:[$s, $m, $lo]..[$s, $m, $hi]",
                json!({ "s": slug, "m": metric, "lo": lo, "hi": hi }),
            )
            .await?;
        rows.into_iter()
            .map(|r| {
                let f = |k: &str| r.get(k).and_then(Value::as_f64);
                let i = |k: &str| r.get(k).and_then(Value::as_i64);
                let acc = (|| {
                    Some(Acc {
                        n: u64::try_from(i("n")?).ok()?,
                        sum: f("sum")?,
                        min: f("min")?,
                        max: f("max")?,
                        first: (i("ft")?, f("fv")?),
                        last: (i("lt")?, f("lv")?),
                    })
                })();
                i("d").zip(acc).ok_or_else(|| StorageError::Corrupt(format!("rollup {r}")))
            })
            .collect()
    }

    /// One metric's series over `window` in buckets of `every`. When `every` is whole days, the
    /// days wholly inside the window come from the stored rollups (one record a day) and only the
    /// partial days at the edges from the points; otherwise the points are read in windows of at
    /// most a week, so memory stays one slot per bucket however many points there are.
    pub async fn series(
        &self,
        slug: &Slug,
        metric: &MetricName,
        window: Window,
        every: &Duration,
        agg: Agg,
        fill: Fill,
    ) -> std::result::Result<Vec<(i64, Option<f64>)>, SeriesQueryError> {
        let mut b = Bucketer::new(window, every)?;
        let (s, m) = (slug.as_str(), metric.as_str());
        let (lo, hi) = (window.from(), window.to());
        let mut raw_ranges = Vec::new();
        if every.ms() % DAY_MS == 0 {
            let first_day = bucket_start(lo + DAY_MS - 1, DAY_MS);
            let end_day = bucket_start(hi, DAY_MS);
            if first_day < end_day {
                for (_, acc) in self.rollups(s, m, first_day, end_day).await? {
                    b.add(&acc);
                }
                raw_ranges.push((lo, first_day));
                raw_ranges.push((end_day, hi));
            } else {
                raw_ranges.push((lo, hi));
            }
        } else {
            raw_ranges.push((lo, hi));
        }
        const CHUNK: i64 = 7 * DAY_MS;
        for (mut a, z) in raw_ranges {
            while a < z {
                let e = a.saturating_add(CHUNK).min(z);
                for (t, v) in self.raw_points(s, m, a, e).await? {
                    b.add_point(t, v);
                }
                a = e;
            }
        }
        Ok(b.finish(agg, fill))
    }

    /// One metric's sparkline: each UTC day's last value over the `days` days ending today.
    pub async fn spark(
        &self,
        slug: &Slug,
        metric: &str,
        now: i64,
        days: SparkDays,
    ) -> Result<Vec<Option<f64>>> {
        if days.days() == 0 {
            return Ok(Vec::new());
        }
        let today = bucket_start(now, DAY_MS);
        let first = today - (i64::from(days.days()) - 1) * DAY_MS;
        let daily: Vec<(i64, f64)> = self
            .rollups(slug.as_str(), metric, first, today + DAY_MS)
            .await?
            .into_iter()
            .map(|(d, acc)| (d, acc.last.1))
            .collect();
        Ok(crate::series::spark(now, days, &daily))
    }

    /// The fetch log, newest first: one site's, or every site's.
    pub async fn fetches(&self, site: Option<&Slug>, last: usize) -> Result<Vec<FetchEntry>> {
        let rows = match site {
            Some(s) => {
                self.query_rows(
                    "SELECT * FROM fetch WHERE site = $s ORDER BY started_at DESC LIMIT $n",
                    json!({ "s": s.as_str(), "n": last }),
                )
                .await?
            }
            None => {
                self.query_rows("SELECT * FROM fetch ORDER BY started_at DESC LIMIT $n", json!({ "n": last }))
                    .await?
            }
        };
        rows.into_iter().map(decode).collect()
    }

    /// Makes a statistics admin token; only its hash is kept. The token is returned once.
    pub async fn create_stats_token(&self, now: i64) -> Result<String> {
        let token = new_token("stats_");
        self.execute(
            "CREATE type::record('stats_token', $hash) CONTENT { created_at: $now }",
            json!({ "hash": token_hash(&token), "now": now }),
        )
        .await?;
        Ok(token)
    }

    /// True when `token` is the configured admin token or one made by [`Store::create_stats_token`].
    pub async fn is_stats_admin(&self, token: &str, configured: Option<&str>) -> Result<bool> {
        if configured.is_some_and(|c| constant_time_eq(c.as_bytes(), token.as_bytes())) {
            return Ok(true);
        }
        // Looked up by hash: the lookup reveals nothing about a token that is not known.
        let rows = self
            .query_rows(
                "SELECT created_at FROM type::record('stats_token', $hash)",
                json!({ "hash": token_hash(token) }),
            )
            .await?;
        Ok(!rows.is_empty())
    }
}

fn decode_site(row: Value) -> Result<Site> {
    decode(row)
}

fn rollup_doc(acc: &Acc) -> Value {
    json!({
        "n": acc.n, "sum": acc.sum, "min": acc.min, "max": acc.max,
        "ft": acc.first.0, "fv": acc.first.1, "lt": acc.last.0, "lv": acc.last.1,
    })
}

/// Why a series could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SeriesQueryError {
    #[error(transparent)]
    Series(#[from] SeriesError),
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// Metric names as a sorted, de-duplicated set (for `metrics=a,b,a`).
pub fn metric_set(names: impl IntoIterator<Item = MetricName>) -> Vec<MetricName> {
    names.into_iter().collect::<BTreeSet<_>>().into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::DbSettings;

    async fn store() -> Store {
        Store::open(&DbSettings::memory()).await.expect("open")
    }

    fn slug(s: &str) -> Slug {
        Slug::parse(s).expect("slug")
    }

    fn name(s: &str) -> MetricName {
        MetricName::parse(s).expect("name")
    }

    fn new_site(s: &str) -> NewSite {
        NewSite {
            slug: slug(s),
            name: SiteName::parse("Example").expect("name"),
            url: SiteUrl::parse("http://127.0.0.1:9/stats").expect("url"),
            enabled: true,
            interval: parse_interval("15m").expect("interval"),
            timeout: parse_timeout("10s").expect("timeout"),
            metrics: None,
        }
    }

    #[test]
    fn slugs_names_urls() {
        for ok in ["a", "0", "my-site", &"a".repeat(63)] {
            assert!(Slug::parse(ok).is_ok(), "{ok}");
        }
        for bad in ["", "-a", "A", "a_b", "a.b", &"a".repeat(64), "é"] {
            assert!(Slug::parse(bad).is_err(), "{bad}");
        }
        assert!(MetricName::parse("users.active:7d").is_ok());
        for bad in ["", "a,b", "a b", "a/b", &"x".repeat(65)] {
            assert!(MetricName::parse(bad).is_err(), "{bad}");
        }
        assert!(SiteUrl::parse("https://example.org/stats.json").is_ok());
        for bad in ["ftp://example.org", "example.org", "http://", "javascript:alert(1)"] {
            assert!(SiteUrl::parse(bad).is_err(), "{bad}");
        }
        assert!(parse_interval("1s").is_ok() && parse_interval("7d").is_ok());
        assert!(parse_interval("8d").is_err() && parse_interval("0s").is_err());
        assert!(parse_timeout("61s").is_err() && parse_timeout("1m").is_ok());
        assert!(SiteName::parse("  ").is_err() && SiteName::parse("a\u{7}").is_err());
    }

    fn ok_fetch(at: i64, as_of: Option<i64>, readings: &[(&str, f64)]) -> FetchResult {
        FetchResult {
            started_at: at,
            duration_ms: 3,
            http_status: Some(200),
            outcome: Ok((as_of, readings.iter().map(|(n, v)| (name(n), *v)).collect())),
        }
    }

    #[tokio::test]
    async fn sites_crud_and_conflicts() {
        let store = store().await;
        let site = store.create_site(new_site("one"), 1_000).await.expect("create");
        assert_eq!(site.interval, "15m");
        let err = store.create_site(new_site("one"), 1_000).await.expect_err("dup");
        assert!(matches!(err, StorageError::Conflict(_)), "{err}");
        let patch = SitePatch {
            enabled: Some(false),
            metrics: Some(Some(vec![name("a")])),
            interval: Some(parse_interval("1h").expect("1h")),
            ..SitePatch::default()
        };
        let site = store.update_site(&slug("one"), patch, 2_000).await.expect("update");
        assert!(!site.enabled);
        assert_eq!(site.metrics, Some(vec!["a".to_owned()]));
        assert_eq!((site.interval.as_str(), site.interval_ms, site.updated_at), ("1h", 3_600_000, 2_000));
        let site = store
            .update_site(&slug("one"), SitePatch { metrics: Some(None), ..SitePatch::default() }, 3_000)
            .await
            .expect("update");
        assert_eq!(site.metrics, None);
        assert_eq!(store.site(&slug("one")).await.expect("get"), Some(site));
        let err = store.update_site(&slug("nope"), SitePatch::default(), 1).await.expect_err("missing");
        assert!(matches!(err, StorageError::NotFound(_)), "{err}");
        assert_eq!(store.site(&slug("nope")).await.expect("get"), None);
    }

    #[tokio::test]
    async fn a_point_is_written_only_when_value_or_as_of_changes() {
        let store = store().await;
        let s = slug("site");
        store.create_site(new_site("site"), 0).await.expect("create");
        let day = 20_000 * DAY_MS;
        let e = store
            .record_fetch(&s, ok_fetch(day + 10, Some(day), &[("a", 1.0), ("b", 2.0)]))
            .await
            .expect("1");
        assert_eq!((e.metrics_seen, e.points_written), (2, 2));
        // Same values and as_of: confirmed, nothing written.
        let e = store
            .record_fetch(&s, ok_fetch(day + 20, Some(day), &[("a", 1.0), ("b", 2.0)]))
            .await
            .expect("2");
        assert_eq!((e.metrics_seen, e.points_written), (2, 0));
        // New as_of, same values: a point each.
        let e = store
            .record_fetch(&s, ok_fetch(day + 30, Some(day + 25), &[("a", 1.0), ("b", 2.0)]))
            .await
            .expect("3");
        assert_eq!(e.points_written, 2);
        // Same as_of, a changed value: that metric's point at that time is replaced.
        let e = store
            .record_fetch(&s, ok_fetch(day + 40, Some(day + 25), &[("a", 5.0), ("b", 2.0)]))
            .await
            .expect("4");
        assert_eq!(e.points_written, 1);
        let states = store.metric_states(&s).await.expect("states");
        assert_eq!(
            states[0],
            MetricState { name: "a".into(), value: 5.0, as_of: day + 25, checked_at: day + 40 }
        );
        assert_eq!(
            states[1],
            MetricState { name: "b".into(), value: 2.0, as_of: day + 25, checked_at: day + 40 }
        );
        // A failed fetch changes no freshness.
        let failed = FetchResult {
            started_at: day + 50,
            duration_ms: 1,
            http_status: Some(500),
            outcome: Err("HTTP 500".into()),
        };
        let e = store.record_fetch(&s, failed).await.expect("5");
        assert!(!e.ok);
        let site = store.site(&s).await.expect("site").expect("exists");
        assert_eq!((site.as_of, site.checked_at), (Some(day + 25), Some(day + 40)));
        assert_eq!(site.last_fetch.map(|l| l.ok), Some(false));

        assert_eq!(
            store.raw_points("site", "a", day, day + DAY_MS).await.expect("a"),
            vec![(day, 1.0), (day + 25, 5.0)]
        );
        let w = Window::new(day, day + DAY_MS).expect("w");
        let every = Duration::parse("1d").expect("1d");
        for (agg, want) in [(Agg::Count, 2.0), (Agg::Sum, 6.0), (Agg::Last, 5.0), (Agg::Min, 1.0)] {
            let got = store.series(&s, &name("a"), w, &every, agg, Fill::Null).await.expect("series");
            assert_eq!(got, vec![(day, Some(want))], "{agg:?}");
        }
        let log = store.fetches(Some(&s), 2).await.expect("log");
        assert_eq!(log.len(), 2);
        assert!(log[0].started_at > log[1].started_at, "newest first");
    }

    #[tokio::test]
    async fn rollups_and_points_give_the_same_series_and_delete_removes_everything() {
        let store = store().await;
        let s = slug("bulk");
        store.create_site(new_site("bulk"), 0).await.expect("create");
        let start = 19_000 * DAY_MS;
        let points: Vec<(i64, f64)> =
            (0..5 * 24 * 6).map(|i| (start + i * 600_000, (i % 13) as f64)).collect();
        store.load_points(&s, &name("m"), &points).await.expect("load");
        // A window with partial days at both edges, in 1d buckets (rollups + edges) and in 24h
        // buckets (the same buckets, but all from points).
        let w = Window::new(start + 7 * 3_600_000, start + 4 * DAY_MS + 5 * 3_600_000).expect("w");
        for agg in Agg::ALL {
            let fast = store
                .series(&s, &name("m"), w, &Duration::parse("1d").expect("d"), agg, Fill::Null)
                .await
                .expect("fast");
            let slow = store
                .series(&s, &name("m"), w, &Duration::parse("24h").expect("h"), agg, Fill::Null)
                .await
                .expect("slow");
            assert_eq!(fast.len(), 5);
            for (f, sl) in fast.iter().zip(&slow) {
                assert_eq!(f.0, sl.0);
                let (a, b) = (f.1.expect("value"), sl.1.expect("value"));
                assert!((a - b).abs() < 1e-9, "{agg:?}: {a} vs {b}");
            }
        }
        let spark = store
            .spark(&s, "m", start + 4 * DAY_MS + 1, SparkDays::parse("7d").expect("7d"))
            .await
            .expect("spark");
        let last_of_day =
            |d: i64| points.iter().rfind(|p| bucket_start(p.0, DAY_MS) == start + d * DAY_MS).map(|p| p.1);
        assert_eq!(
            spark,
            vec![None, None, last_of_day(0), last_of_day(1), last_of_day(2), last_of_day(3), last_of_day(4)]
        );

        assert!(store.delete_site(&s).await.expect("delete"));
        assert!(!store.delete_site(&s).await.expect("delete again"));
        assert!(store.raw_points("bulk", "m", i64::MIN, i64::MAX).await.expect("points").is_empty());
        assert!(store.rollups("bulk", "m", i64::MIN, i64::MAX).await.expect("rollups").is_empty());
        assert!(store.metric_states(&s).await.expect("metrics").is_empty());
    }

    #[tokio::test]
    async fn admin_tokens() {
        let store = store().await;
        let t = store.create_stats_token(1).await.expect("token");
        assert!(t.starts_with("stats_"));
        assert!(store.is_stats_admin(&t, None).await.expect("check"));
        assert!(store.is_stats_admin("configured", Some("configured")).await.expect("check"));
        assert!(!store.is_stats_admin("stats_nope", Some("configured")).await.expect("check"));
    }
}
