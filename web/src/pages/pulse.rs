//! Pulse, the monthly count of publicly announced deals by mission domain: the `Month` that names
//! an issue, the issue file's figures, and the table and bar chart drawn from them.
//!
//! An issue file's front matter carries `month`, `published`, `headline` and one count per
//! mission domain (keyed as in [`DOMAINS`]); its body is the month's commentary in Markdown.

use super::PagesError;
use super::content::{ContentFile, Date, MONTH_NAMES};

/// A Pulse issue's month, `YYYY-MM`; built only by [`Month::parse`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Month {
    year: u16,
    month: u8,
}

impl Month {
    /// Accepts exactly `^[0-9]{4}-[0-9]{2}$` with a month from 01 to 12.
    pub fn parse(text: &str) -> Option<Month> {
        let b = text.as_bytes();
        if b.len() != 7 || b[4] != b'-' || !b[..4].iter().chain(&b[5..]).all(u8::is_ascii_digit) {
            return None;
        }
        let year = text[..4].parse().ok()?;
        let month = text[5..].parse().ok()?;
        (1..=12).contains(&month).then_some(Month { year, month })
    }

    /// `June 2026`.
    pub fn long(self) -> String {
        format!("{} {}", MONTH_NAMES[usize::from(self.month - 1)], self.year)
    }

    /// The month before this one.
    pub fn previous(self) -> Month {
        if self.month == 1 {
            Month { year: self.year - 1, month: 12 }
        } else {
            Month { month: self.month - 1, ..self }
        }
    }
}

impl std::fmt::Display for Month {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:04}-{:02}", self.year, self.month)
    }
}

/// A mission domain: its key in issue files and the name readers see.
pub struct Domain {
    pub key: &'static str,
    pub name: &'static str,
}

/// The council's mission domains, in the order tables and charts list them.
pub const DOMAINS: &[Domain] = &[
    Domain { key: "space", name: "Space and launch" },
    Domain { key: "maritime", name: "Maritime and ports" },
    Domain { key: "energy", name: "Energy resilience" },
    Domain { key: "health", name: "Health security" },
    Domain { key: "infrastructure", name: "Critical infrastructure" },
    Domain { key: "communications", name: "Secure communications" },
];

/// One published issue.
#[derive(Debug, Clone)]
pub struct PulseIssue {
    pub month: Month,
    pub published: Date,
    pub headline: String,
    /// One count per entry of [`DOMAINS`], in the same order.
    pub counts: Vec<u32>,
    pub commentary: String,
}

impl PulseIssue {
    /// Parses an issue file (`file` names it in errors; it must be `<month>.md`).
    pub fn parse(file: &str, source: &str) -> Result<PulseIssue, PagesError> {
        let content = ContentFile::parse(file, source)?;
        let bad = |reason: String| PagesError::Content { file: file.to_owned(), reason };
        let month =
            Month::parse(content.get("month")?).ok_or_else(|| bad("`month` is not YYYY-MM".into()))?;
        if file != format!("{month}.md") {
            return Err(bad(format!("an issue for {month} must be named {month}.md")));
        }
        let published = Date::parse(content.get("published")?)
            .ok_or_else(|| bad("`published` is not YYYY-MM-DD".into()))?;
        if (published.year, published.month) <= (month.year, month.month) {
            return Err(bad("an issue is published after its month ends".into()));
        }
        let headline = content.get("headline")?.to_owned();
        let mut counts = Vec::with_capacity(DOMAINS.len());
        for domain in DOMAINS {
            let text = content.get(domain.key)?;
            counts.push(text.parse().map_err(|_| bad(format!("`{}` is not a count", domain.key)))?);
        }
        for (key, _) in content.fields() {
            let known =
                ["month", "published", "headline"].contains(key) || DOMAINS.iter().any(|d| d.key == *key);
            if !known {
                return Err(bad(format!("`{key}` is not a field of a Pulse issue")));
            }
        }
        Ok(PulseIssue { month, published, headline, counts, commentary: content.body.trim().to_owned() })
    }

    pub fn total(&self) -> u32 {
        self.counts.iter().sum()
    }

    /// The issue's Markdown, in two parts: before and after the place where the HTML page puts
    /// its chart. `previous` is the issue of the month before, when there is one.
    pub fn markdown(&self, previous: Option<&PulseIssue>) -> (String, String) {
        let month = self.month.long();
        let mut head = format!(
            "# Pulse: {month}\n\n**{}**\n\nPublished {} · {} publicly announced deals across {} mission domains.\n\n",
            self.headline,
            self.published.long(),
            self.total(),
            number_word(DOMAINS.len()),
        );
        head.push_str("## Deals by mission domain\n\n");
        let mut table = String::new();
        match previous {
            Some(prev) => {
                table.push_str(&format!("Change is against {}.\n\n", prev.month.long()));
                table.push_str("| Mission domain | Deals | Change |\n|---|---|---|\n");
                for ((domain, now), before) in DOMAINS.iter().zip(&self.counts).zip(&prev.counts) {
                    table.push_str(&format!("| {} | {now} | {} |\n", domain.name, signed(*now, *before)));
                }
                table.push_str(&format!(
                    "| **All domains** | **{}** | **{}** |\n",
                    self.total(),
                    signed(self.total(), prev.total())
                ));
            }
            None => {
                table.push_str("| Mission domain | Deals |\n|---|---|\n");
                for (domain, now) in DOMAINS.iter().zip(&self.counts) {
                    table.push_str(&format!("| {} | {now} |\n", domain.name));
                }
                table.push_str(&format!("| **All domains** | **{}** |\n", self.total()));
            }
        }
        let tail = format!(
            "{table}\n## What moved\n\n{}\n\n## How Pulse counts\n\nA deal is counted once, in the month it was publicly announced and in the mission domain of its main purpose. Pulse counts contracts, grants, partnerships, financings and acquisitions that at least one member firm or its counterparty has announced in public. It never reports deal values or names, and it never draws on anything shared with the council in confidence. Figures for a month are final once its issue is published.\n\n[All Pulse issues](/pulse)\n",
            self.commentary
        );
        (head, tail)
    }

    /// A horizontal bar chart of the counts as inline SVG, labelled for screen readers. Each
    /// domain is a label line with its count and a bar below it; bar lengths are percentages of
    /// the width, so the chart fills any column while its text keeps the stylesheet's size
    /// (a `viewBox` would shrink the labels to nothing on a phone).
    pub fn chart_svg(&self) -> String {
        const ROW: usize = 46;
        const BAR: usize = 14;
        let height = ROW * DOMAINS.len();
        let max = self.counts.iter().copied().max().unwrap_or(0).max(1);
        let id = format!("chart-{}", self.month);
        let mut svg = format!(
            "<figure class=\"chart\"><svg width=\"100%\" height=\"{height}\" role=\"img\" aria-labelledby=\"{id}-title {id}-desc\" xmlns=\"http://www.w3.org/2000/svg\">\n<title id=\"{id}-title\">Deals by mission domain, {}</title>\n<desc id=\"{id}-desc\">",
            self.month.long()
        );
        let described: Vec<String> =
            DOMAINS.iter().zip(&self.counts).map(|(d, n)| format!("{}: {n}", d.name)).collect();
        svg.push_str(&escape(&described.join("; ")));
        svg.push_str("</desc>\n");
        for (i, (domain, count)) in DOMAINS.iter().zip(&self.counts).enumerate() {
            let top = ROW * i;
            // Tenths of a percent: a zero count draws no bar, any other at least a sliver.
            let tenths = (1000 * u64::from(*count)).div_ceil(u64::from(max));
            let tenths = if *count > 0 { tenths.max(5) } else { 0 };
            svg.push_str(&format!(
                "<g class=\"bar\"><text class=\"label\" x=\"0\" y=\"{}\">{} <tspan class=\"value\">{count}</tspan></text><rect x=\"0\" y=\"{}\" width=\"{}.{}%\" height=\"{BAR}\" rx=\"3\"></rect></g>\n",
                top + 16,
                escape(domain.name),
                top + 23,
                tenths / 10,
                tenths % 10,
            ));
        }
        svg.push_str("</svg><figcaption>Publicly announced deals involving member firms, by mission domain.</figcaption></figure>\n");
        svg
    }
}

/// Small numbers as words, the way the site's copy writes them.
pub fn number_word(n: usize) -> String {
    const WORDS: [&str; 13] = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
        "twelve",
    ];
    WORDS.get(n).map_or_else(|| n.to_string(), |w| (*w).to_owned())
}

/// `+3`, `-2` or `0`.
fn signed(now: u32, before: u32) -> String {
    match now.cmp(&before) {
        std::cmp::Ordering::Greater => format!("+{}", now - before),
        std::cmp::Ordering::Less => format!("−{}", before - now),
        std::cmp::Ordering::Equal => "0".to_owned(),
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    const ISSUE: &str = "---\nmonth: 2026-03\npublished: 2026-04-02\nheadline: A quiet month\nspace: 4\nmaritime: 2\nenergy: 9\nhealth: 0\ninfrastructure: 5\ncommunications: 1\n---\nEnergy led.\n";

    #[test]
    fn months_parse_only_in_the_published_pattern() {
        assert_eq!(Month::parse("2026-06").map(|m| m.to_string()), Some("2026-06".into()));
        assert_eq!(Month::parse("2026-06").map(Month::long), Some("June 2026".into()));
        for bad in
            ["2026-13", "2026-00", "2026-6", "26-06", "2026_06", "2026-06-01", "abcd-ef", "", "２０２６-06"]
        {
            assert_eq!(Month::parse(bad), None, "{bad}");
        }
        assert_eq!(Month::parse("2026-01").map(|m| m.previous().to_string()), Some("2025-12".into()));
        assert!(Month::parse("2026-01") < Month::parse("2026-02"));
    }

    #[test]
    fn an_issue_file_parses_into_counts_per_domain() {
        let issue = PulseIssue::parse("2026-03.md", ISSUE).expect("parses");
        assert_eq!(issue.counts, vec![4, 2, 9, 0, 5, 1]);
        assert_eq!(issue.total(), 21);
        assert_eq!(issue.commentary, "Energy led.");
    }

    #[test]
    fn broken_issue_files_are_refused() {
        assert!(PulseIssue::parse("2026-04.md", ISSUE).is_err(), "file name must match the month");
        assert!(PulseIssue::parse("2026-03.md", &ISSUE.replace("energy: 9", "energy: nine")).is_err());
        assert!(PulseIssue::parse("2026-03.md", &ISSUE.replace("energy: 9\n", "")).is_err());
        assert!(
            PulseIssue::parse("2026-03.md", &ISSUE.replace("energy: 9", "energy: 9\nmining: 3")).is_err()
        );
        assert!(PulseIssue::parse("2026-03.md", &ISSUE.replace("2026-04-02", "2026-03-30")).is_err());
    }

    #[test]
    fn the_table_and_chart_show_every_count() {
        let issue = PulseIssue::parse("2026-03.md", ISSUE).expect("parses");
        let prev_src = ISSUE
            .replace("2026-03", "2026-02")
            .replace("2026-04-02", "2026-03-03")
            .replace("energy: 9", "energy: 12");
        let prev = PulseIssue::parse("2026-02.md", &prev_src).expect("parses");
        let (head, tail) = issue.markdown(Some(&prev));
        assert!(head.starts_with("# Pulse: March 2026\n"));
        assert!(tail.contains("| Energy resilience | 9 | −3 |"), "{tail}");
        assert!(tail.contains("| **All domains** | **21** | **−3** |"), "{tail}");
        let svg = issue.chart_svg();
        assert_eq!(svg.matches("<rect").count(), DOMAINS.len());
        assert!(svg.contains("Energy resilience: 9"));
        assert!(svg.contains("width=\"100.0%\""), "the largest count fills the width: {svg}");
        assert!(svg.contains("width=\"0.0%\""), "a zero count draws no bar: {svg}");
        assert!(!svg.contains("style="), "inline styles would break the CSP");
    }
}
