//! The request limits of `POST /api/signups`: 10 an hour per address and 500 an hour from everyone,
//! as sliding windows by the service's [`Clock`](agora_storage::time::Clock).
//!
//! A sliding log (the times of the requests still in the window) is exact at every boundary, which
//! a token bucket is not: the 11th request inside any hour is refused, and the first one to leave
//! the window lets exactly one more in. These limits guard the service, not the texts, so they live
//! in memory; the daily text counters that must survive a restart are stored by the desk.
//!
//! Memory is bounded: only requests that pass both limits are recorded, so at most 500 addresses
//! hold times at once, each at most 10; addresses whose times have left the window are dropped
//! whenever the map grows past [`MAX_TRACKED`].

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Mutex;

/// Requests per address per window.
pub const PER_ADDRESS: usize = 10;
/// Requests from everyone per window.
pub const GLOBAL: usize = 500;
/// The window, in milliseconds.
pub const WINDOW_MS: i64 = 3_600_000;
/// Entries the address map may hold before stale ones are dropped.
const MAX_TRACKED: usize = 2_048;

/// Which limit refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    PerAddress,
    Global,
}

/// The outcome of one check, with what the `RateLimit` headers report for the address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    pub refused: Option<Refused>,
    /// Requests the address has left in the window (after this one, when it was let in).
    pub remaining: usize,
    /// Seconds until the address's oldest counted request leaves the window (0 when none counts).
    pub reset_secs: i64,
    /// For a refusal: whole seconds until a request can pass.
    pub retry_after_secs: i64,
}

#[derive(Debug, Default)]
pub struct Limits {
    /// Times of the requests let in, per address; guarded by a plain mutex (held for a few
    /// operations, never across an await).
    per_address: Mutex<HashMap<IpAddr, VecDeque<i64>>>,
    global: Mutex<VecDeque<i64>>,
}

fn prune(times: &mut VecDeque<i64>, now: i64) {
    while times.front().is_some_and(|&t| t <= now - WINDOW_MS) {
        times.pop_front();
    }
}

fn secs_until_leaves(oldest: Option<&i64>, now: i64) -> i64 {
    oldest.map_or(0, |&t| (t + WINDOW_MS - now + 999).div_euclid(1000).max(1))
}

impl Limits {
    /// Checks one request from `ip` at `now` and, when it passes, counts it.
    pub fn check(&self, ip: IpAddr, now: i64) -> Decision {
        let mut map = self.per_address.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if map.len() > MAX_TRACKED {
            map.retain(|_, times| {
                prune(times, now);
                !times.is_empty()
            });
        }
        let times = map.entry(ip).or_default();
        prune(times, now);
        if times.len() >= PER_ADDRESS {
            let wait = secs_until_leaves(times.front(), now);
            return Decision {
                refused: Some(Refused::PerAddress),
                remaining: 0,
                reset_secs: wait,
                retry_after_secs: wait,
            };
        }
        let mut global = self.global.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        prune(&mut global, now);
        if global.len() >= GLOBAL {
            return Decision {
                refused: Some(Refused::Global),
                remaining: PER_ADDRESS - times.len(),
                reset_secs: secs_until_leaves(times.front(), now),
                retry_after_secs: secs_until_leaves(global.front(), now),
            };
        }
        global.push_back(now);
        times.push_back(now);
        Decision {
            refused: None,
            remaining: PER_ADDRESS - times.len(),
            reset_secs: secs_until_leaves(times.front(), now),
            retry_after_secs: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(n: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, n])
    }

    #[test]
    fn ten_an_hour_per_address_sliding() {
        let limits = Limits::default();
        let t0 = 1_000_000;
        for i in 0..10 {
            let d = limits.check(ip(1), t0 + i * 1000);
            assert_eq!(d.refused, None, "request {i}");
            assert_eq!(d.remaining, 9 - i as usize);
        }
        let d = limits.check(ip(1), t0 + 60_000);
        assert_eq!(d.refused, Some(Refused::PerAddress));
        assert_eq!(d.retry_after_secs, 3600 - 60);
        assert_eq!(limits.check(ip(2), t0 + 60_000).refused, None, "other addresses are not affected");
        // One millisecond before the first request leaves the window, then at the boundary.
        let d = limits.check(ip(1), t0 + WINDOW_MS - 1);
        assert_eq!((d.refused, d.retry_after_secs), (Some(Refused::PerAddress), 1));
        let d = limits.check(ip(1), t0 + WINDOW_MS);
        assert_eq!((d.refused, d.remaining), (None, 0));
        assert_eq!(limits.check(ip(1), t0 + WINDOW_MS).refused, Some(Refused::PerAddress));
    }

    #[test]
    fn five_hundred_an_hour_from_everyone() {
        let limits = Limits::default();
        let t0 = 5_000_000;
        for i in 0..GLOBAL {
            let addr = IpAddr::from([10, 0, (i / 250) as u8, (i % 250) as u8]);
            assert_eq!(limits.check(addr, t0).refused, None, "request {i}");
        }
        let d = limits.check(ip(9), t0 + 1000);
        assert_eq!(d.refused, Some(Refused::Global));
        assert_eq!(d.retry_after_secs, 3599);
        assert_eq!(d.remaining, PER_ADDRESS, "a refused request is not counted against the address");
        assert_eq!(limits.check(ip(9), t0 + WINDOW_MS).refused, None);
        assert!(limits.per_address.lock().expect("lock").len() <= MAX_TRACKED + 1);
    }
}
