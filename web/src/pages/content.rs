//! The site's content, built into the binary: one Markdown file per page and one per Pulse issue,
//! each opening with a small front matter block of `key: value` lines between `---` fences.
//!
//! Adding a page or a Pulse issue means adding its file under `web/content/` and a line to
//! [`PAGES`] or [`PULSE_ISSUES`]; a unit test fails when a file is present but not listed.

use super::PagesError;

/// A marketing page: its path and its source.
pub struct PageSource {
    pub path: &'static str,
    pub file: &'static str,
    pub source: &'static str,
}

macro_rules! page {
    ($path:literal, $file:literal) => {
        PageSource { path: $path, file: $file, source: include_str!(concat!("../../content/pages/", $file)) }
    };
}

/// The marketing pages, in the order the sitemap lists them. `/pulse` is here for its
/// introduction; the list of issues is added below it when it is served.
pub const PAGES: &[PageSource] = &[
    page!("/", "home.md"),
    page!("/for-clients", "for-clients.md"),
    page!("/for-members", "for-members.md"),
    page!("/about", "about.md"),
    page!("/contact", "contact.md"),
    page!("/privacy", "privacy.md"),
    page!("/developers", "developers.md"),
    page!("/pulse", "pulse.md"),
];

/// The page answered, with status 404, for any address that has none.
pub const NOT_FOUND: PageSource = page!("/404", "not-found.md");

/// The introduction and guidance that `/llms.txt` is built around.
pub const LLMS_INTRO: &str = include_str!("../../content/llms.md");

macro_rules! issue {
    ($file:literal) => {
        (concat!($file), include_str!(concat!("../../content/pulse/", $file)))
    };
}

/// Every published Pulse issue, one file a month (file name and source); order does not matter.
pub const PULSE_ISSUES: &[(&str, &str)] = &[
    issue!("2026-05.md"),
    issue!("2026-06.md"),
    issue!("2026-07.md"),
    issue!("2026-08.md"),
    issue!("2026-09.md"),
    issue!("2026-10.md"),
];

/// A content file split into its front matter and its Markdown body.
#[derive(Debug)]
pub struct ContentFile<'a> {
    fields: Vec<(&'a str, &'a str)>,
    pub body: &'a str,
    file: &'a str,
}

impl<'a> ContentFile<'a> {
    /// Splits `source` (named `file` in errors) into front matter and body.
    pub fn parse(file: &'a str, source: &'a str) -> Result<ContentFile<'a>, PagesError> {
        let bad = |reason: &str| PagesError::Content { file: file.to_owned(), reason: reason.to_owned() };
        let rest = source.strip_prefix("---\n").ok_or_else(|| bad("does not open with a `---` line"))?;
        let (matter, body) = rest.split_once("\n---\n").ok_or_else(|| bad("front matter is not closed"))?;
        let mut fields: Vec<(&str, &str)> = Vec::new();
        for line in matter.lines().filter(|l| !l.trim().is_empty()) {
            let (key, value) = line.split_once(':').ok_or_else(|| bad("a front matter line has no `:`"))?;
            let (key, value) = (key.trim(), value.trim());
            if key.is_empty() || value.is_empty() {
                return Err(bad("a front matter line has an empty key or value"));
            }
            if fields.iter().any(|(k, _)| *k == key) {
                return Err(bad(&format!("`{key}` appears twice")));
            }
            fields.push((key, value));
        }
        Ok(ContentFile { fields, body: body.trim_start_matches('\n'), file })
    }

    /// A required field.
    pub fn get(&self, key: &str) -> Result<&'a str, PagesError> {
        self.fields.iter().find(|(k, _)| *k == key).map(|(_, v)| *v).ok_or_else(|| PagesError::Content {
            file: self.file.to_owned(),
            reason: format!("`{key}` is missing"),
        })
    }

    /// Every field, in file order.
    pub fn fields(&self) -> &[(&'a str, &'a str)] {
        &self.fields
    }

    /// The file's name, for error messages.
    pub fn file(&self) -> &'a str {
        self.file
    }
}

/// A calendar date, `YYYY-MM-DD`: a page's last update or an issue's publication.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Date {
    pub year: u16,
    pub month: u8,
    pub day: u8,
}

impl Date {
    pub fn parse(text: &str) -> Option<Date> {
        let b = text.as_bytes();
        let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
        if b.len() != 10 || b[4] != b'-' || b[7] != b'-' || !digits(0..4) || !digits(5..7) || !digits(8..10) {
            return None;
        }
        let year: u16 = text[0..4].parse().ok()?;
        let month: u8 = text[5..7].parse().ok()?;
        let day: u8 = text[8..10].parse().ok()?;
        let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
        let days = match month {
            1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
            4 | 6 | 9 | 11 => 30,
            2 if leap => 29,
            2 => 28,
            _ => return None,
        };
        (1..=days).contains(&day).then_some(Date { year, month, day })
    }

    /// Reads as people write it on the site: `3 July 2026`.
    pub fn long(self) -> String {
        format!("{} {} {}", self.day, MONTH_NAMES[usize::from(self.month - 1)], self.year)
    }
}

impl std::fmt::Display for Date {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }
}

pub const MONTH_NAMES: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_splits_from_the_body() {
        let file = ContentFile::parse("t.md", "---\ntitle: About us\nupdated: 2026-01-02\n---\n\n# About\n")
            .expect("parses");
        assert_eq!(file.get("title").expect("title"), "About us");
        assert_eq!(file.get("updated").expect("updated"), "2026-01-02");
        assert_eq!(file.body, "# About\n");
        assert!(file.get("missing").is_err());
    }

    #[test]
    fn broken_front_matter_is_refused() {
        assert!(ContentFile::parse("t.md", "# no front matter").is_err());
        assert!(ContentFile::parse("t.md", "---\ntitle: x\n# never closed").is_err());
        assert!(ContentFile::parse("t.md", "---\ntitle x\n---\nbody").is_err());
        assert!(ContentFile::parse("t.md", "---\ntitle:\n---\nbody").is_err());
        assert!(ContentFile::parse("t.md", "---\na: 1\na: 2\n---\nbody").is_err());
    }

    #[test]
    fn dates_are_real_calendar_days() {
        assert_eq!(Date::parse("2026-07-03"), Some(Date { year: 2026, month: 7, day: 3 }));
        assert_eq!(Date::parse("2024-02-29").map(|d| d.to_string()), Some("2024-02-29".into()));
        assert_eq!(Date::parse("2026-07-03").map(Date::long), Some("3 July 2026".into()));
        for bad in
            ["2026-02-29", "2026-13-01", "2026-00-10", "2026-04-31", "2026-7-3", "20260703", "2026-07-03x"]
        {
            assert_eq!(Date::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn every_content_file_is_listed() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/content");
        let listed_pages: Vec<&str> = PAGES.iter().chain([&NOT_FOUND]).map(|p| p.file).collect();
        for entry in std::fs::read_dir(format!("{root}/pages")).expect("pages dir") {
            let name = entry.expect("entry").file_name().into_string().expect("utf-8 name");
            assert!(listed_pages.contains(&name.as_str()), "content/pages/{name} is not in PAGES");
        }
        for entry in std::fs::read_dir(format!("{root}/pulse")).expect("pulse dir") {
            let name = entry.expect("entry").file_name().into_string().expect("utf-8 name");
            assert!(
                PULSE_ISSUES.iter().any(|(f, _)| *f == name),
                "content/pulse/{name} is not in PULSE_ISSUES"
            );
        }
    }
}
