//! The pure parsers of outside input, with no I/O and few dependencies, so that `fuzz/` can fuzz
//! them without building the server:
//!
//! - [`cursor`]: the opaque cursors of the chat lists and the feed.
//! - [`cable`]: ActionCable commands a client sends on `/cable`.
//! - [`accept`]: the pages site's `Accept` negotiation (HTML or Markdown).
//! - [`phone`]: US phone numbers as the sign-up takes them.
//! - [`sms`]: the inbound SMS webhook's form.
//! - [`series`]: the statistics series rules: durations, windows, buckets, `agg`, `fill`.
//! - [`props`]: the properties each parser keeps, checked by the fuzz targets and by the
//!   regression test that replays every input saved under `wire/regressions/`.

pub mod accept;
pub mod cable;
pub mod cursor;
pub mod phone;
pub mod props;
pub mod series;
pub mod sms;
