//! Time as stored (integer milliseconds since the Unix epoch, UTC) and as shown (RFC 3339, `Z`,
//! millisecond precision).

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The time source of everything that depends on the time (expiry, limits, days). The system clock
/// in production; a manual clock that tests set and advance, so boundaries are tested exactly and
/// without sleeping. Cheap to clone: clones of a manual clock share one time.
#[derive(Debug, Clone, Default)]
pub struct Clock(Option<Arc<AtomicI64>>);

impl Clock {
    /// The system clock.
    pub fn system() -> Clock {
        Clock(None)
    }

    /// A clock that stands at `ms` until it is moved.
    pub fn manual(ms: i64) -> Clock {
        Clock(Some(Arc::new(AtomicI64::new(ms))))
    }

    /// Milliseconds since the Unix epoch, by this clock.
    pub fn now_ms(&self) -> i64 {
        match &self.0 {
            None => now_ms(),
            Some(t) => t.load(Ordering::SeqCst),
        }
    }

    /// Moves a manual clock forward by `ms` (the system clock cannot be moved: no effect).
    pub fn advance(&self, ms: i64) {
        if let Some(t) = &self.0 {
            t.fetch_add(ms, Ordering::SeqCst);
        }
    }

    /// Sets a manual clock to `ms` (no effect on the system clock).
    pub fn set(&self, ms: i64) {
        if let Some(t) = &self.0 {
            t.store(ms, Ordering::SeqCst);
        }
    }
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// `2026-11-21T23:54:14.123Z`.
pub fn rfc3339(ms: i64) -> String {
    match jiff::Timestamp::from_millisecond(ms) {
        Ok(ts) => ts.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
        Err(_) => "1970-01-01T00:00:00.000Z".to_string(),
    }
}

/// Parses an RFC 3339 time into milliseconds.
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    text.parse::<jiff::Timestamp>().ok().map(|t| t.as_millisecond())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_millis_and_z() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let clock = Clock::manual(1_000);
        let shared = clock.clone();
        assert_eq!(clock.now_ms(), 1_000);
        shared.advance(500);
        assert_eq!(clock.now_ms(), 1_500);
        clock.set(42);
        assert_eq!(shared.now_ms(), 42);
        assert!(Clock::system().now_ms() > 1_700_000_000_000);
    }

    #[test]
    fn parses_back() {
        assert_eq!(parse_rfc3339("2023-11-14T22:13:20.123Z"), Some(1_700_000_000_123));
        assert_eq!(parse_rfc3339("2023-11-14T16:13:20.123-06:00"), Some(1_700_000_000_123));
        assert_eq!(parse_rfc3339("yesterday"), None);
    }
}
