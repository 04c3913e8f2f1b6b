//! Markdown to HTML with pulldown-cmark, inside the one layout every page shares: a skip link,
//! the header and main navigation, the content, and the footer. The stylesheet is inline (its
//! hash is in the CSP), so a page is one request and needs no JavaScript.

use pulldown_cmark::{Alignment, CowStr, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

/// The site's name as it appears in titles and the header.
pub const SITE_NAME: &str = "Meridian Council";
/// The organization's full name.
pub const ORG_NAME: &str = "Meridian Mission Industries Council";

/// The main navigation: path and label.
const NAV: &[(&str, &str)] = &[
    ("/for-clients", "For clients"),
    ("/for-members", "For members"),
    ("/pulse", "Pulse"),
    ("/about", "About"),
    ("/contact", "Contact"),
];

/// The footer's links: path and label.
const FOOTER_NAV: &[(&str, &str)] = &[
    ("/about", "About the council"),
    ("/contact", "Contact"),
    ("/privacy", "Privacy"),
    ("/developers", "Developers and agents"),
    ("/llms.txt", "llms.txt"),
    ("/sitemap.xml", "Sitemap"),
];

/// The stylesheet, inlined into every page.
pub const STYLESHEET: &str = include_str!("../../content/site.css");

/// The favicon, as a data URL so that the browser's automatic request for it needs no route.
const FAVICON: &str = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 32 32'%3E%3Crect width='32' height='32' rx='6' fill='%230b3d5c'/%3E%3Cpath d='M6 22 L16 8 L26 22' fill='none' stroke='%23f2b544' stroke-width='3.5'/%3E%3C/svg%3E";

/// Renders Markdown to an HTML fragment. Headings get an `id` from their text (so sections can be
/// linked), and raw HTML in the source is shown as text: every tag on the site comes from the
/// renderer or the layout, which keeps the output within the CSP.
pub fn markdown_to_html(markdown: &str) -> String {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_SMART_PUNCTUATION;
    let mut events: Vec<Event> = Parser::new_ext(markdown, options)
        .map(|event| match event {
            Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
            other => other,
        })
        .collect();
    let mut used: Vec<String> = Vec::new();
    let mut i = 0;
    while i < events.len() {
        if let Event::Start(Tag::Heading { level, .. }) = &events[i]
            && *level != HeadingLevel::H1
        {
            let level = *level;
            let mut text = String::new();
            for e in &events[i + 1..] {
                match e {
                    Event::End(TagEnd::Heading(_)) => break,
                    Event::Text(t) | Event::Code(t) => text.push_str(t),
                    _ => {}
                }
            }
            let mut id = slug(&text);
            let mut n = 2;
            while used.contains(&id) {
                id = format!("{}-{n}", slug(&text));
                n += 1;
            }
            used.push(id.clone());
            events[i] = Event::Start(Tag::Heading {
                level,
                id: Some(CowStr::from(id)),
                classes: Vec::new(),
                attrs: Vec::new(),
            });
        }
        i += 1;
    }
    let events = mark_numeric_columns(events);
    let mut html = String::with_capacity(markdown.len() * 3 / 2);
    pulldown_cmark::html::push_html(&mut html, events.into_iter());
    html
}

/// Gives the cells of a table column whose body cells all hold figures (`12`, `$4,800`, `+3`,
/// `−2`) the class `num`, so the stylesheet right-aligns them. A class rather than
/// pulldown-cmark's alignment, which it writes as a `style` attribute that the CSP forbids.
fn mark_numeric_columns(events: Vec<Event<'_>>) -> Vec<Event<'_>> {
    // Pass one: which columns of each table are numeric.
    let mut tables: Vec<Vec<bool>> = Vec::new();
    let (mut in_head, mut column, mut cell) = (false, 0usize, String::new());
    for event in &events {
        match event {
            Event::Start(Tag::Table(alignments)) => tables.push(vec![true; alignments.len()]),
            Event::Start(Tag::TableHead) => in_head = true,
            Event::End(TagEnd::TableHead) => in_head = false,
            Event::Start(Tag::TableRow) => column = 0,
            Event::Start(Tag::TableCell) => cell.clear(),
            Event::Text(t) | Event::Code(t) => cell.push_str(t),
            Event::End(TagEnd::TableCell) => {
                if !in_head && let Some(numeric) = tables.last_mut().and_then(|t| t.get_mut(column)) {
                    *numeric &= is_figure(&cell);
                }
                column += 1;
            }
            _ => {}
        }
    }
    // Pass two: write those columns' cells with the class.
    let mut out = Vec::with_capacity(events.len());
    let (mut table, mut in_head, mut column) = (None::<usize>, false, 0usize);
    for event in events {
        let numeric = table.and_then(|t| tables.get(t)).and_then(|t| t.get(column)).copied().unwrap_or(false);
        let tag = if in_head { "th" } else { "td" };
        match event {
            Event::Start(Tag::Table(alignments)) => {
                table = Some(table.map_or(0, |t| t + 1));
                // Alignment would be written as a `style` attribute; the classes replace it.
                out.push(Event::Start(Tag::Table(vec![Alignment::None; alignments.len()])));
            }
            Event::Start(Tag::TableHead) => {
                in_head = true;
                out.push(event);
            }
            Event::End(TagEnd::TableHead) => {
                in_head = false;
                out.push(event);
            }
            Event::Start(Tag::TableRow) => {
                column = 0;
                out.push(event);
            }
            Event::Start(Tag::TableCell) if numeric => {
                out.push(Event::Html(format!("<{tag} class=\"num\">").into()))
            }
            Event::End(TagEnd::TableCell) => {
                out.push(if numeric { Event::Html(format!("</{tag}>").into()) } else { event });
                column += 1;
            }
            other => out.push(other),
        }
    }
    out
}

/// A table cell that holds a figure: digits with an optional sign, currency or separators.
fn is_figure(cell: &str) -> bool {
    let t = cell.trim();
    t.chars().any(|c| c.is_ascii_digit())
        && t.chars().all(|c| c.is_ascii_digit() || matches!(c, '$' | ',' | '.' | '+' | '-' | '−' | '%'))
}

/// A heading's anchor: lowercase ASCII letters and digits, words joined by `-`.
pub fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') && (c.is_whitespace() || c == '-' || c == '/') {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-').to_owned();
    if out.is_empty() { "section".to_owned() } else { out }
}

/// What the layout needs to know about one page.
pub struct PageMeta<'a> {
    /// The page's own path, for the canonical link and to mark the current navigation entry.
    pub path: &'a str,
    pub title: &'a str,
    pub description: &'a str,
    pub base_url: &'a str,
}

/// Wraps a rendered fragment in the site's layout.
pub fn layout(meta: &PageMeta<'_>, content: &str) -> String {
    let title =
        if meta.path == "/" { ORG_NAME.to_owned() } else { format!("{} · {SITE_NAME}", escape(meta.title)) };
    let nav_item = |(path, label): &(&str, &str)| {
        let current = meta.path == *path || (*path == "/pulse" && meta.path.starts_with("/pulse/"));
        let aria = if current { " aria-current=\"page\"" } else { "" };
        format!("<li><a href=\"{path}\"{aria}>{label}</a></li>")
    };
    let nav: String = NAV.iter().map(nav_item).collect();
    let footer_nav: String =
        FOOTER_NAV.iter().map(|(p, l)| format!("<li><a href=\"{p}\">{l}</a></li>")).collect();
    let canonical = if meta.path.starts_with('/') && meta.path != "/404" {
        format!("<link rel=\"canonical\" href=\"{}{}\">\n", escape(meta.base_url), escape(meta.path))
    } else {
        String::new()
    };
    format!(
        r##"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<meta name="description" content="{description}">
{canonical}<link rel="icon" href="{FAVICON}">
<style>{STYLESHEET}</style>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="site-header">
<div class="wrap header-row">
<a class="brand" href="/"><svg class="mark" viewBox="0 0 32 32" aria-hidden="true" focusable="false"><rect width="32" height="32" rx="6"></rect><path d="M6 22 L16 8 L26 22"></path></svg><span>{SITE_NAME}</span></a>
<nav aria-label="Main"><ul>{nav}</ul></nav>
</div>
</header>
<main id="main" class="wrap">
{content}</main>
<footer class="site-footer">
<div class="wrap">
<nav aria-label="Footer"><ul>{footer_nav}</ul></nav>
<p>{ORG_NAME} · 1120 Harbor Point Drive, Suite 400 · Baltimore, MD 21231</p>
<p>© 2026 {ORG_NAME}. Pulse figures may be quoted with credit to the council.</p>
</div>
</footer>
</body>
</html>
"##,
        description = escape(meta.description),
    )
}

/// Escapes text for HTML content and attribute values.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_get_ids_and_raw_html_is_shown_as_text() {
        let html = markdown_to_html(
            "# Title\n\n## How we work\n\n## How we work\n\nA <b>bold</b> claim.\n\n<script>x</script>\n",
        );
        assert!(html.contains("<h1>Title</h1>"), "{html}");
        assert!(html.contains("<h2 id=\"how-we-work\">How we work</h2>"), "{html}");
        assert!(html.contains("<h2 id=\"how-we-work-2\">"), "{html}");
        assert!(!html.contains("<b>") && !html.contains("<script>"), "{html}");
    }

    #[test]
    fn tables_render_without_inline_styles() {
        let html = markdown_to_html("| a | b |\n|:--|--:|\n| x | y |\n");
        assert!(html.contains("<table>") && html.contains("<td>x</td><td>y</td>"), "{html}");
        assert!(!html.contains("style="));
    }

    #[test]
    fn columns_of_figures_are_marked_for_right_alignment() {
        let html = markdown_to_html(
            "| Tier | Dues | Change |\n|---|---|---|\n| Emerging | $4,800 | +3 |\n| Anchor | **$38,000** | −2 |\n",
        );
        assert!(
            html.contains("<th>Tier</th><th class=\"num\">Dues</th><th class=\"num\">Change</th>"),
            "{html}"
        );
        assert!(
            html.contains("<td>Emerging</td><td class=\"num\">$4,800</td><td class=\"num\">+3</td>"),
            "{html}"
        );
        assert!(html.contains("<td class=\"num\"><strong>$38,000</strong></td>"), "{html}");
        let text = markdown_to_html("| a | b |\n|---|---|\n| x | 12 and more |\n");
        assert!(!text.contains("num"), "{text}");
    }

    #[test]
    fn slugs_are_plain() {
        assert_eq!(slug("Reading the site as an agent"), "reading-the-site-as-an-agent");
        assert_eq!(slug("llms.txt & sitemap"), "llmstxt-sitemap");
        assert_eq!(slug("!!!"), "section");
    }

    #[test]
    fn the_layout_marks_the_current_page_and_escapes_its_title() {
        let meta = PageMeta {
            path: "/pulse/2026-06",
            title: "A & B",
            description: "d\"q",
            base_url: "https://x.test",
        };
        let html = layout(&meta, "<h1>A</h1>");
        assert!(html.contains("<a href=\"/pulse\" aria-current=\"page\">Pulse</a>"));
        assert!(html.contains("<title>A &amp; B · Meridian Council</title>"));
        assert!(html.contains("content=\"d&quot;q\""));
        assert!(html.contains("<link rel=\"canonical\" href=\"https://x.test/pulse/2026-06\">"));
        assert!(!html.contains("<script"));
    }
}
