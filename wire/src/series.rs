//! The series rules of the statistics service as pure code: durations, windows, epoch-aligned
//! buckets, the aggregations (`agg`) and the fills of empty buckets (`fill`), and the daily
//! sparkline. Nothing here touches storage, so every rule is tested exactly.
//!
//! A window is half-open, `from <= t < to`. Buckets are `every` long, aligned to the Unix epoch in
//! UTC and labelled by their start; the first bucket is the one holding `from`, the last the one
//! holding `to - 1`. Points outside the window are ignored even when their bucket is in it.

use std::fmt;

/// One day in milliseconds: the size of the stored rollups and of a sparkline step.
pub const DAY_MS: i64 = 86_400_000;

/// More buckets than this in one answer is refused (DECISIONS.md).
pub const MAX_BUCKETS: i64 = 11_000;

/// Without `every`, the smallest of these giving at most [`AUTO_MAX_BUCKETS`] buckets.
pub const AUTO_STEPS: [&str; 7] = ["1m", "5m", "15m", "1h", "6h", "1d", "1w"];

/// The most buckets an automatically chosen `every` gives.
pub const AUTO_MAX_BUCKETS: i64 = 500;

/// Why a series request cannot be answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SeriesError {
    #[error("{0:?} is not a duration: use a number and a unit (w, d, h, m, s), e.g. 15m, 1h30m or 7d")]
    BadDuration(String),
    #[error("{0:?} is not an aggregation: use avg, sum, min, max, first, last or count")]
    BadAgg(String),
    #[error("{0:?} is not a fill: use null, none, zero, previous or linear")]
    BadFill(String),
    #[error(
        "the window would have {0} buckets; the most is {MAX_BUCKETS}: choose a larger `every` or a shorter window"
    )]
    TooManyBuckets(i64),
    #[error("the window is empty: `from` must be before `to`")]
    EmptyWindow,
    #[error("{0:?} is not a sparkline window: use 0 (none) or <n>d with n from 1 to 400")]
    BadSpark(String),
}

/// A duration of the series API: `^([1-9][0-9]*(w|d|h|m|s))+$`, e.g. `15m`, `1h30m`, `7d`. It keeps
/// the text it was written as, which is how it is shown back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Duration {
    ms: i64,
    text: String,
}

impl Duration {
    /// The longest duration accepted: about 100 years, far past any window worth asking for, and
    /// small enough that no sum of times overflows.
    pub const MAX_MS: i64 = 100 * 366 * DAY_MS;

    pub fn parse(text: &str) -> Result<Duration, SeriesError> {
        let bad = || SeriesError::BadDuration(text.to_owned());
        let bytes = text.as_bytes();
        if bytes.is_empty() {
            return Err(bad());
        }
        let mut total: i64 = 0;
        let mut i = 0;
        while i < bytes.len() {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            // A number must be there, must not start with 0, and must be followed by a unit.
            if i == start || bytes[start] == b'0' || i == bytes.len() {
                return Err(bad());
            }
            let n: i64 = text[start..i].parse().map_err(|_| bad())?;
            let unit = match bytes[i] {
                b'w' => 7 * DAY_MS,
                b'd' => DAY_MS,
                b'h' => 3_600_000,
                b'm' => 60_000,
                b's' => 1_000,
                _ => return Err(bad()),
            };
            i += 1;
            total = n.checked_mul(unit).and_then(|ms| total.checked_add(ms)).ok_or_else(bad)?;
            if total > Duration::MAX_MS {
                return Err(bad());
            }
        }
        Ok(Duration { ms: total, text: text.to_owned() })
    }

    pub fn ms(&self) -> i64 {
        self.ms
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn std(&self) -> std::time::Duration {
        std::time::Duration::from_millis(u64::try_from(self.ms).unwrap_or(0))
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// How the points of one bucket become its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Agg {
    #[default]
    Avg,
    Sum,
    Min,
    Max,
    First,
    Last,
    Count,
}

impl Agg {
    pub const ALL: [Agg; 7] = [Agg::Avg, Agg::Sum, Agg::Min, Agg::Max, Agg::First, Agg::Last, Agg::Count];

    pub fn parse(s: &str) -> Result<Agg, SeriesError> {
        Agg::ALL.into_iter().find(|a| a.as_str() == s).ok_or_else(|| SeriesError::BadAgg(s.to_owned()))
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Agg::Avg => "avg",
            Agg::Sum => "sum",
            Agg::Min => "min",
            Agg::Max => "max",
            Agg::First => "first",
            Agg::Last => "last",
            Agg::Count => "count",
        }
    }
}

/// What an empty bucket shows (InfluxQL's `fill`). `count` is never filled: an empty bucket
/// counts 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fill {
    /// The bucket is there with `v: null`.
    #[default]
    Null,
    /// The bucket is left out.
    None,
    /// `v: 0`.
    Zero,
    /// The value of the nearest earlier non-empty bucket in the window; null when there is none.
    Previous,
    /// The straight line between the nearest non-empty buckets on either side; null at the edges,
    /// where one side has none.
    Linear,
}

impl Fill {
    pub const ALL: [Fill; 5] = [Fill::Null, Fill::None, Fill::Zero, Fill::Previous, Fill::Linear];

    pub fn parse(s: &str) -> Result<Fill, SeriesError> {
        Fill::ALL.into_iter().find(|f| f.as_str() == s).ok_or_else(|| SeriesError::BadFill(s.to_owned()))
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Fill::Null => "null",
            Fill::None => "none",
            Fill::Zero => "zero",
            Fill::Previous => "previous",
            Fill::Linear => "linear",
        }
    }
}

/// A half-open window of time in milliseconds, `from <= t < to`, never empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    from: i64,
    to: i64,
}

impl Window {
    pub fn new(from: i64, to: i64) -> Result<Window, SeriesError> {
        if from < to { Ok(Window { from, to }) } else { Err(SeriesError::EmptyWindow) }
    }

    /// `last=<d>` at `now`: the points after `now - d`, up to and including `now`.
    pub fn last(d: &Duration, now: i64) -> Window {
        Window { from: now - d.ms() + 1, to: now + 1 }
    }

    pub fn from(&self) -> i64 {
        self.from
    }

    pub fn to(&self) -> i64 {
        self.to
    }

    pub fn contains(&self, t: i64) -> bool {
        self.from <= t && t < self.to
    }
}

/// The start of the `every`-long epoch-aligned bucket holding `t`.
pub fn bucket_start(t: i64, every: i64) -> i64 {
    t.div_euclid(every) * every
}

/// How many buckets of `every` the window spans.
pub fn bucket_count(window: Window, every: i64) -> i64 {
    (bucket_start(window.to - 1, every) - bucket_start(window.from, every)) / every + 1
}

/// The `every` used when none is given: the smallest step giving at most 500 buckets (a week when
/// even that gives more).
pub fn auto_every(window: Window) -> Duration {
    let steps = AUTO_STEPS.iter().filter_map(|s| Duration::parse(s).ok());
    let mut last = None;
    for step in steps {
        if bucket_count(window, step.ms()) <= AUTO_MAX_BUCKETS {
            return step;
        }
        last = Some(step);
    }
    last.unwrap_or(Duration { ms: 7 * DAY_MS, text: "1w".into() })
}

/// The summary of some points that fall in one bucket: everything any [`Agg`] needs, and
/// mergeable, so a stored daily rollup and raw points combine into the same answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Acc {
    pub n: u64,
    pub sum: f64,
    pub min: f64,
    pub max: f64,
    /// The earliest point: `(t, v)`.
    pub first: (i64, f64),
    /// The latest point: `(t, v)`.
    pub last: (i64, f64),
}

impl Acc {
    pub fn one(t: i64, v: f64) -> Acc {
        Acc { n: 1, sum: v, min: v, max: v, first: (t, v), last: (t, v) }
    }

    pub fn merge(&mut self, other: &Acc) {
        self.n += other.n;
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        if other.first.0 < self.first.0 {
            self.first = other.first;
        }
        if other.last.0 > self.last.0 {
            self.last = other.last;
        }
    }

    /// Folds points (any order) into one summary; `None` when there are none.
    pub fn of(points: impl IntoIterator<Item = (i64, f64)>) -> Option<Acc> {
        let mut acc: Option<Acc> = None;
        for (t, v) in points {
            let one = Acc::one(t, v);
            match &mut acc {
                Some(a) => a.merge(&one),
                None => acc = Some(one),
            }
        }
        acc
    }

    pub fn value(&self, agg: Agg) -> f64 {
        match agg {
            Agg::Avg => self.sum / self.n as f64,
            Agg::Sum => self.sum,
            Agg::Min => self.min,
            Agg::Max => self.max,
            Agg::First => self.first.1,
            Agg::Last => self.last.1,
            Agg::Count => self.n as f64,
        }
    }
}

/// Buckets points (or summaries that each lie inside one bucket) of one window. Memory is one slot
/// per bucket, at most [`MAX_BUCKETS`], however many points go in.
#[derive(Debug, Clone)]
pub struct Bucketer {
    window: Window,
    every: i64,
    first: i64,
    slots: Vec<Option<Acc>>,
}

impl Bucketer {
    pub fn new(window: Window, every: &Duration) -> Result<Bucketer, SeriesError> {
        let every = every.ms();
        let n = bucket_count(window, every);
        if n > MAX_BUCKETS {
            return Err(SeriesError::TooManyBuckets(n));
        }
        let len = usize::try_from(n).map_err(|_| SeriesError::TooManyBuckets(n))?;
        Ok(Bucketer { window, every, first: bucket_start(window.from, every), slots: vec![None; len] })
    }

    fn slot(&mut self, t: i64) -> Option<&mut Option<Acc>> {
        let i = usize::try_from((t - self.first).div_euclid(self.every)).ok()?;
        self.slots.get_mut(i)
    }

    /// Adds one point; a point outside the window is ignored.
    pub fn add_point(&mut self, t: i64, v: f64) {
        if self.window.contains(t) {
            self.add(&Acc::one(t, v));
        }
    }

    /// Adds a summary whose points all lie in the window and in one bucket (a stored daily rollup
    /// when `every` is whole days).
    pub fn add(&mut self, acc: &Acc) {
        if let Some(slot) = self.slot(acc.first.0) {
            match slot {
                Some(a) => a.merge(acc),
                None => *slot = Some(*acc),
            }
        }
    }

    /// The buckets, oldest first: `(start, value)`.
    pub fn finish(self, agg: Agg, fill: Fill) -> Vec<(i64, Option<f64>)> {
        let starts = (0..self.slots.len()).map(|i| self.first + i as i64 * self.every);
        if agg == Agg::Count {
            return starts.zip(&self.slots).map(|(t, a)| (t, Some(a.map_or(0.0, |a| a.n as f64)))).collect();
        }
        let values: Vec<Option<f64>> = self.slots.iter().map(|a| a.map(|a| a.value(agg))).collect();
        let filled: Vec<Option<Option<f64>>> = match fill {
            Fill::Null => values.iter().map(|v| Some(*v)).collect(),
            Fill::None => values.iter().map(|v| v.map(Some)).collect(),
            Fill::Zero => values.iter().map(|v| Some(Some(v.unwrap_or(0.0)))).collect(),
            Fill::Previous => {
                let mut prev = None;
                values
                    .iter()
                    .map(|v| {
                        if v.is_some() {
                            prev = *v;
                        }
                        Some(prev)
                    })
                    .collect()
            }
            Fill::Linear => linear(&values).into_iter().map(Some).collect(),
        };
        starts.zip(filled).filter_map(|(t, v)| v.map(|v| (t, v))).collect()
    }
}

/// Fills each gap between two known values with the straight line between them.
fn linear(values: &[Option<f64>]) -> Vec<Option<f64>> {
    let mut out = values.to_vec();
    let mut prev: Option<(usize, f64)> = None;
    for (i, v) in values.iter().enumerate() {
        if let Some(v) = *v {
            if let Some((j, pv)) = prev
                && i > j + 1
            {
                for (k, slot) in out.iter_mut().enumerate().take(i).skip(j + 1) {
                    *slot = Some(pv + (v - pv) * (k - j) as f64 / (i - j) as f64);
                }
            }
            prev = Some((i, v));
        }
    }
    out
}

/// The sparkline window of the snapshot: `0` (none) or `<n>d` with `n` from 1 to 400.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SparkDays(u16);

impl SparkDays {
    pub const MAX: u16 = 400;

    pub fn parse(s: &str) -> Result<SparkDays, SeriesError> {
        let bad = || SeriesError::BadSpark(s.to_owned());
        if s == "0" {
            return Ok(SparkDays(0));
        }
        let n = s.strip_suffix('d').ok_or_else(bad)?;
        if n.is_empty() || n.starts_with('0') || !n.bytes().all(|b| b.is_ascii_digit()) || n.len() > 3 {
            return Err(bad());
        }
        let n: u16 = n.parse().map_err(|_| bad())?;
        if n > SparkDays::MAX { Err(bad()) } else { Ok(SparkDays(n)) }
    }

    pub fn days(self) -> u16 {
        self.0
    }
}

impl Default for SparkDays {
    /// 90 days.
    fn default() -> SparkDays {
        SparkDays(90)
    }
}

/// The sparkline: one value per UTC day for the `days` days ending with the day of `now`, oldest
/// first; each day's last value, null where the day has none. `daily_last` holds `(day start,
/// last value)` pairs in any order.
pub fn spark(now: i64, days: SparkDays, daily_last: &[(i64, f64)]) -> Vec<Option<f64>> {
    let n = i64::from(days.days());
    let first = bucket_start(now, DAY_MS) - (n - 1) * DAY_MS;
    let mut out = vec![None; usize::from(days.days())];
    for &(day, v) in daily_last {
        let i = (day - first).div_euclid(DAY_MS);
        if let Ok(i) = usize::try_from(i)
            && let Some(slot) = out.get_mut(i)
        {
            *slot = Some(v);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn d(s: &str) -> Duration {
        Duration::parse(s).expect("duration")
    }

    const M: i64 = 60_000;

    #[test]
    fn durations() {
        assert_eq!(d("1s").ms(), 1_000);
        assert_eq!(d("15m").ms(), 15 * M);
        assert_eq!(d("1h30m").ms(), 90 * M);
        assert_eq!(d("2w1d").ms(), 15 * DAY_MS);
        assert_eq!(d("1d1d").ms(), 2 * DAY_MS, "the regex allows repeated units; they add up");
        assert_eq!(d("7d").to_string(), "7d");
        for bad in
            ["", "0d", "01d", "d", "5", "5x", "1.5h", "-1d", "1 d", "1D", "1d ", "99999999999999999999d"]
        {
            assert!(matches!(Duration::parse(bad), Err(SeriesError::BadDuration(_))), "{bad:?}");
        }
        assert!(Duration::parse("36600d").is_ok());
        assert!(Duration::parse("36601d").is_err(), "past a hundred years");
    }

    #[test]
    fn aggs_and_fills_parse_by_name_only() {
        for a in Agg::ALL {
            assert_eq!(Agg::parse(a.as_str()), Ok(a));
        }
        for f in Fill::ALL {
            assert_eq!(Fill::parse(f.as_str()), Ok(f));
        }
        assert!(Agg::parse("mean").is_err());
        assert!(Agg::parse("AVG").is_err());
        assert!(Fill::parse("").is_err());
        assert!(Fill::parse("nulls").is_err());
        assert_eq!(Agg::default(), Agg::Avg);
        assert_eq!(Fill::default(), Fill::Null);
    }

    #[test]
    fn windows_and_buckets_are_epoch_aligned() {
        assert_eq!(Window::new(5, 5), Err(SeriesError::EmptyWindow));
        assert_eq!(Window::new(6, 5), Err(SeriesError::EmptyWindow));
        let w = Window::new(90 * M + 5, 150 * M).expect("window");
        // 1h buckets: 01:00 (holds 01:30) and 02:00 (holds 02:29:59.999).
        assert_eq!(bucket_count(w, 60 * M), 2);
        let b = Bucketer::new(w, &d("1h")).expect("bucketer");
        let out = b.finish(Agg::Avg, Fill::Null);
        assert_eq!(out, vec![(60 * M, None), (120 * M, None)]);
        // `to` is exclusive: a window ending exactly on a boundary has no bucket past it.
        let w = Window::new(0, 120 * M).expect("window");
        assert_eq!(bucket_count(w, 60 * M), 2);
        // Before the epoch, buckets still align to it.
        assert_eq!(bucket_start(-1, DAY_MS), -DAY_MS);
        // `last=1h` at 02:00 covers 01:00:00.001 ..= 02:00.
        let w = Window::last(&d("1h"), 120 * M);
        assert!(w.contains(120 * M) && w.contains(60 * M + 1) && !w.contains(60 * M));
    }

    #[test]
    fn range_edges_drop_points_outside_the_window() {
        let w = Window::new(30 * M, 90 * M).expect("window");
        let mut b = Bucketer::new(w, &d("1h")).expect("bucketer");
        for (t, v) in
            [(0, 100.0), (30 * M - 1, 100.0), (30 * M, 1.0), (59 * M, 2.0), (60 * M, 3.0), (90 * M, 100.0)]
        {
            b.add_point(t, v);
        }
        assert_eq!(b.finish(Agg::Sum, Fill::Null), vec![(0, Some(3.0)), (60 * M, Some(3.0))]);
    }

    #[test]
    fn bucket_limits() {
        let w = Window::new(0, 11_000 * M).expect("window");
        assert!(Bucketer::new(w, &d("1m")).is_ok());
        let w = Window::new(0, 11_000 * M + 1).expect("window");
        assert_eq!(Bucketer::new(w, &d("1m")).err(), Some(SeriesError::TooManyBuckets(11_001)));
    }

    #[test]
    fn auto_every_picks_the_smallest_step_under_500_buckets() {
        let at = |span: i64| auto_every(Window::new(0, span).expect("window")).to_string();
        assert_eq!(at(500 * M), "1m");
        assert_eq!(at(500 * M + 1), "5m");
        assert_eq!(at(DAY_MS), "5m");
        assert_eq!(at(30 * DAY_MS), "6h");
        assert_eq!(at(365 * DAY_MS), "1d");
        assert_eq!(at(3650 * DAY_MS), "1w");
        assert_eq!(at(20 * 3650 * DAY_MS), "1w", "past 500 weeks it stays at a week");
    }

    /// Four hourly buckets; points in the first and the last only, so every fill shows.
    fn sample() -> Bucketer {
        let w = Window::new(0, 4 * 60 * M).expect("window");
        let mut b = Bucketer::new(w, &d("1h")).expect("bucketer");
        for (t, v) in [(10 * M, 4.0), (20 * M, 2.0), (5 * M, 6.0), (190 * M, 10.0), (200 * M, 20.0)] {
            b.add_point(t, v);
        }
        b
    }

    const H: i64 = 60 * M;

    #[test]
    fn every_agg_with_every_fill() {
        // Per agg: the value of bucket 0 and bucket 3 (buckets 1 and 2 are empty).
        let cases = [
            (Agg::Avg, 4.0, 15.0),
            (Agg::Sum, 12.0, 30.0),
            (Agg::Min, 2.0, 10.0),
            (Agg::Max, 6.0, 20.0),
            (Agg::First, 6.0, 10.0),
            (Agg::Last, 2.0, 20.0),
        ];
        for (agg, a, z) in cases {
            let got = |fill| sample().finish(agg, fill);
            assert_eq!(
                got(Fill::Null),
                vec![(0, Some(a)), (H, None), (2 * H, None), (3 * H, Some(z))],
                "{agg:?}"
            );
            assert_eq!(got(Fill::None), vec![(0, Some(a)), (3 * H, Some(z))], "{agg:?}");
            assert_eq!(
                got(Fill::Zero),
                vec![(0, Some(a)), (H, Some(0.0)), (2 * H, Some(0.0)), (3 * H, Some(z))],
                "{agg:?}"
            );
            assert_eq!(
                got(Fill::Previous),
                vec![(0, Some(a)), (H, Some(a)), (2 * H, Some(a)), (3 * H, Some(z))],
                "{agg:?}"
            );
            let step = (z - a) / 3.0;
            assert_eq!(
                got(Fill::Linear),
                vec![(0, Some(a)), (H, Some(a + step)), (2 * H, Some(a + 2.0 * step)), (3 * H, Some(z))],
                "{agg:?}"
            );
        }
        // count: never filled; an empty bucket counts 0 whatever the fill.
        for fill in Fill::ALL {
            assert_eq!(
                sample().finish(Agg::Count, fill),
                vec![(0, Some(3.0)), (H, Some(0.0)), (2 * H, Some(0.0)), (3 * H, Some(2.0))],
                "{fill:?}"
            );
        }
    }

    #[test]
    fn previous_and_linear_leave_the_edges_null() {
        let w = Window::new(0, 4 * H).expect("window");
        let mut b = Bucketer::new(w, &d("1h")).expect("bucketer");
        b.add_point(H + 1, 5.0);
        assert_eq!(
            b.clone().finish(Agg::Avg, Fill::Previous),
            vec![(0, None), (H, Some(5.0)), (2 * H, Some(5.0)), (3 * H, Some(5.0))]
        );
        assert_eq!(
            b.finish(Agg::Avg, Fill::Linear),
            vec![(0, None), (H, Some(5.0)), (2 * H, None), (3 * H, None)]
        );
    }

    #[test]
    fn rollups_merge_into_the_same_answer_as_raw_points() {
        let w = Window::new(0, 4 * DAY_MS).expect("window");
        let points: Vec<(i64, f64)> = (0..4 * 24).map(|i| (i * H, (i % 7) as f64)).collect();
        let mut raw = Bucketer::new(w, &d("2d")).expect("raw");
        let mut rolled = Bucketer::new(w, &d("2d")).expect("rolled");
        for &(t, v) in &points {
            raw.add_point(t, v);
        }
        for day in points.chunks(24) {
            rolled.add(&Acc::of(day.iter().copied()).expect("day"));
        }
        for agg in Agg::ALL {
            assert_eq!(
                raw.clone().finish(agg, Fill::Null),
                rolled.clone().finish(agg, Fill::Null),
                "{agg:?}"
            );
        }
    }

    #[test]
    fn spark_days() {
        assert_eq!(SparkDays::parse("0").map(SparkDays::days), Ok(0));
        assert_eq!(SparkDays::parse("90d").map(SparkDays::days), Ok(90));
        assert_eq!(SparkDays::parse("400d").map(SparkDays::days), Ok(400));
        for bad in ["401d", "0d", "090d", "90", "d", "", "1w", "-1d", "1000d", "9999999d"] {
            assert!(SparkDays::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(SparkDays::default().days(), 90);
        let now = 10 * DAY_MS + 5;
        let s = spark(
            now,
            SparkDays::parse("3d").expect("3d"),
            &[(10 * DAY_MS, 7.0), (8 * DAY_MS, 1.0), (5 * DAY_MS, 9.0)],
        );
        assert_eq!(s, vec![Some(1.0), None, Some(7.0)]);
        assert!(spark(now, SparkDays::parse("0").expect("0"), &[(10 * DAY_MS, 7.0)]).is_empty());
    }

    /// The reference: for each bucket, collect its points by scanning them all, aggregate by
    /// sorting, then fill by searching outwards. Slow and obvious.
    fn naive(points: &[(i64, f64)], w: Window, every: i64, agg: Agg, fill: Fill) -> Vec<(i64, Option<f64>)> {
        let first = w.from().div_euclid(every) * every;
        let mut starts = Vec::new();
        let mut s = first;
        while s < w.to() {
            starts.push(s);
            s += every;
        }
        let raw: Vec<Option<f64>> = starts
            .iter()
            .map(|&s| {
                let mut inb: Vec<(i64, f64)> = points
                    .iter()
                    .copied()
                    .filter(|&(t, _)| t >= s && t < s + every && w.contains(t))
                    .collect();
                inb.sort_by_key(|p| p.0);
                if agg == Agg::Count {
                    return Some(inb.len() as f64);
                }
                if inb.is_empty() {
                    return None;
                }
                let vs: Vec<f64> = inb.iter().map(|p| p.1).collect();
                Some(match agg {
                    Agg::Avg => vs.iter().sum::<f64>() / vs.len() as f64,
                    Agg::Sum => vs.iter().sum(),
                    Agg::Min => vs.iter().copied().fold(f64::INFINITY, f64::min),
                    Agg::Max => vs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                    Agg::First => vs[0],
                    Agg::Last => vs[vs.len() - 1],
                    Agg::Count => unreachable!(),
                })
            })
            .collect();
        let mut out = Vec::new();
        for (i, &s) in starts.iter().enumerate() {
            let v = raw[i];
            if agg == Agg::Count || v.is_some() {
                out.push((s, v));
                continue;
            }
            let before = (0..i).rev().find_map(|j| raw[j].map(|v| (j, v)));
            let after = (i + 1..raw.len()).find_map(|j| raw[j].map(|v| (j, v)));
            match fill {
                Fill::None => {}
                Fill::Null => out.push((s, None)),
                Fill::Zero => out.push((s, Some(0.0))),
                Fill::Previous => out.push((s, before.map(|b| b.1))),
                Fill::Linear => out.push((
                    s,
                    match (before, after) {
                        (Some((j, a)), Some((k, b))) => Some(a + (b - a) * (i - j) as f64 / (k - j) as f64),
                        _ => None,
                    },
                )),
            }
        }
        out
    }

    fn close(a: &[(i64, Option<f64>)], b: &[(i64, Option<f64>)]) -> bool {
        a.len() == b.len()
            && a.iter().zip(b).all(|(x, y)| {
                x.0 == y.0
                    && match (x.1, y.1) {
                        (Some(p), Some(q)) => (p - q).abs() <= 1e-9 * (1.0 + p.abs().max(q.abs())),
                        (None, None) => true,
                        _ => false,
                    }
            })
    }

    proptest! {
        #[test]
        fn bucketer_matches_the_naive_reference(
            // Distinct times (a metric has one point per time), small integers as values.
            raw in proptest::collection::btree_map(-5_000i64..5_000, -50i32..50, 0..60),
            from in -6_000i64..6_000,
            len in 1i64..8_000,
            every in 1i64..2_000,
            agg in proptest::sample::select(Agg::ALL.to_vec()),
            fill in proptest::sample::select(Fill::ALL.to_vec()),
        ) {
            let points: Vec<(i64, f64)> = raw.into_iter().map(|(t, v)| (t, f64::from(v))).collect();
            let w = Window::new(from, from + len).expect("window");
            let every_d = Duration { ms: every, text: format!("{every}ms") };
            let mut b = Bucketer::new(w, &every_d).expect("bucketer");
            // Points go in newest first: the order must not matter.
            for &(t, v) in points.iter().rev() {
                b.add_point(t, v);
            }
            let got = b.finish(agg, fill);
            let want = naive(&points, w, every, agg, fill);
            prop_assert!(close(&got, &want), "got {got:?}\nwant {want:?}");
        }
    }
}
