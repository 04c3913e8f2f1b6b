//! Content negotiation between the two formats of a page: HTML (the default) and Markdown.
//!
//! A page answers Markdown only when the request prefers it over HTML by q-value (RFC 9110
//! §12.5.1). For each format the most specific matching range counts (`text/markdown` beats
//! `text/*` beats `*/*`). When the two q-values tie, Markdown wins only if it was named more
//! specifically than HTML: `Accept: text/markdown, */*` is a client asking for Markdown, while a
//! browser's `text/html, */*;q=0.8` and a bare `*/*` get HTML.

/// The representation a page is answered in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Html,
    Markdown,
}

/// How well one media range matched a format: its q-value in thousandths and how specific the
/// range was (2 exact type, 1 `type/*`, 0 `*/*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Match {
    q: u16,
    specificity: u8,
}

impl Format {
    /// Picks the format for an `Accept` header value (`None` when the request has none).
    pub fn negotiate(accept: Option<&str>) -> Format {
        let Some(accept) = accept else { return Format::Html };
        let markdown = best_match(accept, "text", "markdown");
        let html = best_match(accept, "text", "html");
        match (markdown, html) {
            (Some(md), None) if md.q > 0 => Format::Markdown,
            (Some(md), Some(h)) if md.q > h.q => Format::Markdown,
            (Some(md), Some(h)) if md.q > 0 && md.q == h.q && md.specificity > h.specificity => {
                Format::Markdown
            }
            _ => Format::Html,
        }
    }

    /// The `Content-Type` of this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Html => "text/html; charset=utf-8",
            Format::Markdown => "text/markdown; charset=utf-8",
        }
    }
}

/// The most specific range in `accept` matching `kind/sub`, if any does.
fn best_match(accept: &str, kind: &str, sub: &str) -> Option<Match> {
    let mut best: Option<Match> = None;
    for range in accept.split(',') {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or_default().trim();
        let Some((range_kind, range_sub)) = media.split_once('/') else { continue };
        let (range_kind, range_sub) = (range_kind.trim(), range_sub.trim());
        let specificity = if range_kind == "*" && range_sub == "*" {
            0
        } else if range_kind.eq_ignore_ascii_case(kind) && range_sub == "*" {
            1
        } else if range_kind.eq_ignore_ascii_case(kind) && range_sub.eq_ignore_ascii_case(sub) {
            2
        } else {
            continue;
        };
        let mut q = Some(1000);
        for param in parts {
            if let Some((name, value)) = param.split_once('=')
                && name.trim().eq_ignore_ascii_case("q")
            {
                q = parse_q(value.trim());
            }
        }
        // A range with a malformed q-value is ignored rather than guessed at.
        let Some(q) = q else { continue };
        if best.is_none_or(|b| specificity > b.specificity) {
            best = Some(Match { q, specificity });
        }
    }
    best
}

/// Parses a q-value (`0`, `0.5`, `1.000`; at most three decimals) into thousandths.
fn parse_q(value: &str) -> Option<u16> {
    let (whole, frac) = value.split_once('.').unwrap_or((value, ""));
    if frac.len() > 3 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let whole: u16 = match whole {
        "0" => 0,
        "1" => 1000,
        _ => return None,
    };
    let mut thousandths = 0u16;
    for (i, digit) in frac.bytes().chain(std::iter::repeat(b'0')).take(3).enumerate() {
        thousandths += u16::from(digit - b'0') * [100, 10, 1][i];
    }
    if whole == 1000 && thousandths > 0 {
        return None;
    }
    Some(whole + thousandths)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_accept_or_browser_accept_is_html() {
        assert_eq!(Format::negotiate(None), Format::Html);
        assert_eq!(Format::negotiate(Some("*/*")), Format::Html);
        assert_eq!(
            Format::negotiate(Some(
                "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,*/*;q=0.8"
            )),
            Format::Html
        );
        assert_eq!(Format::negotiate(Some("application/json")), Format::Html);
        assert_eq!(Format::negotiate(Some("")), Format::Html);
    }

    #[test]
    fn markdown_when_preferred_by_q_value() {
        assert_eq!(Format::negotiate(Some("text/markdown")), Format::Markdown);
        assert_eq!(Format::negotiate(Some("TEXT/Markdown; charset=utf-8")), Format::Markdown);
        assert_eq!(Format::negotiate(Some("text/markdown, text/html;q=0.9")), Format::Markdown);
        assert_eq!(Format::negotiate(Some("text/html;q=0.5, text/markdown;q=0.6")), Format::Markdown);
        assert_eq!(Format::negotiate(Some("text/markdown, */*")), Format::Markdown);
        assert_eq!(Format::negotiate(Some("text/markdown;q=0.9, */*;q=0.1")), Format::Markdown);
    }

    #[test]
    fn html_when_it_is_preferred_or_ties_as_specifically() {
        assert_eq!(Format::negotiate(Some("text/html, text/markdown;q=0.9")), Format::Html);
        assert_eq!(Format::negotiate(Some("text/html, text/markdown")), Format::Html);
        assert_eq!(Format::negotiate(Some("text/markdown;q=0")), Format::Html);
        assert_eq!(Format::negotiate(Some("text/markdown;q=0.5, text/*")), Format::Html);
        assert_eq!(Format::negotiate(Some("text/*, text/markdown;q=0.2")), Format::Html);
    }

    #[test]
    fn the_most_specific_range_decides_a_formats_q() {
        // text/html is excluded explicitly even though text/* would accept it.
        assert_eq!(Format::negotiate(Some("text/*, text/html;q=0")), Format::Markdown);
    }

    #[test]
    fn malformed_q_values_are_ignored() {
        assert_eq!(Format::negotiate(Some("text/markdown;q=2")), Format::Html);
        assert_eq!(Format::negotiate(Some("text/markdown;q=0.1234")), Format::Html);
        assert_eq!(Format::negotiate(Some("text/markdown;q=abc")), Format::Html);
        assert_eq!(parse_q("0.5"), Some(500));
        assert_eq!(parse_q("1.000"), Some(1000));
        assert_eq!(parse_q("0.05"), Some(50));
        assert_eq!(parse_q("1.5"), None);
    }
}
