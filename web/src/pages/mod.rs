//! The public pages site: Markdown content built into the binary, served as HTML or Markdown.
//!
//! # Layout
//! - [`content`]: the content files (`web/content/`) and their front matter.
//! - [`pulse`]: Pulse issues: the `Month` newtype, figures per mission domain, table and chart.
//! - [`render`]: Markdown to HTML (pulldown-cmark) inside the shared layout.
//! - [`negotiate`]: HTML or Markdown, by the request's `Accept` q-values.
//! - [`respond`]: prepared representations, ETags, conditional GET, security headers.
//! - [`machine`]: `/llms.txt`, `/sitemap.xml`, `/openapi.json`.
//!
//! Everything is rendered once, when [`PagesState::new`] builds the site; a request only picks a
//! prepared representation, so the two formats of a page can never drift apart.

pub mod content;
pub mod machine;
pub use agora_wire::accept as negotiate;
pub mod pulse;
pub mod render;
pub mod respond;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::get;
use http::{HeaderMap, HeaderValue, StatusCode, header};

use content::{ContentFile, Date, PAGES, PULSE_ISSUES};
use machine::Listed;
use negotiate::Format;
use pulse::{DOMAINS, Month, PulseIssue};
use render::{PageMeta, layout, markdown_to_html};
use respond::{Freshness, Representation};

/// What can go wrong building the site: a content file that does not parse. Content is built
/// into the binary and checked by unit tests, so this only shows up while editing content.
#[derive(Debug, thiserror::Error)]
pub enum PagesError {
    #[error("content file {file}: {reason}")]
    Content { file: String, reason: String },
}

/// The pages service's state: its base URL and the site, rendered once.
#[derive(Clone)]
pub struct PagesState {
    pub base_url: String,
    site: Arc<Site>,
}

impl PagesState {
    /// Renders every page in both formats and the machine-readable files, with absolute URLs
    /// from `base_url` (no trailing slash).
    pub fn new(base_url: impl Into<String>) -> Result<PagesState, PagesError> {
        let base_url = base_url.into().trim_end_matches('/').to_owned();
        let site = Site::build(&base_url)?;
        Ok(PagesState { base_url, site: Arc::new(site) })
    }
}

/// A page in its two formats.
struct Document {
    html: Representation,
    markdown: Representation,
}

impl Document {
    fn new(meta: &PageMeta<'_>, markdown: String, html_fragment: &str) -> Document {
        Document {
            html: Representation::new(layout(meta, html_fragment), Format::Html.content_type()),
            markdown: Representation::new(markdown, Format::Markdown.content_type()),
        }
    }

    fn answer(&self, status: StatusCode, request: &HeaderMap, freshness: Freshness) -> Response {
        let accept = request.get(header::ACCEPT).and_then(|v| v.to_str().ok());
        let chosen = match Format::negotiate(accept) {
            Format::Html => &self.html,
            Format::Markdown => &self.markdown,
        };
        chosen.answer(status, request, freshness, true)
    }
}

/// The whole site, prepared.
struct Site {
    pages: HashMap<&'static str, Document>,
    issues: BTreeMap<Month, Document>,
    not_found: Document,
    llms_txt: Representation,
    sitemap: Representation,
    openapi: Representation,
}

impl Site {
    fn build(base_url: &str) -> Result<Site, PagesError> {
        let mut issues: Vec<PulseIssue> = PULSE_ISSUES
            .iter()
            .map(|(file, source)| PulseIssue::parse(file, source))
            .collect::<Result<_, _>>()?;
        issues.sort_by_key(|i| std::cmp::Reverse(i.month));
        let by_month: HashMap<Month, &PulseIssue> = issues.iter().map(|i| (i.month, i)).collect();
        if by_month.len() != issues.len() {
            return Err(PagesError::Content {
                file: "content/pulse".into(),
                reason: "two issues for one month".into(),
            });
        }

        let mut pages = HashMap::new();
        let mut listed_pages = Vec::new();
        for page in PAGES {
            let file = ContentFile::parse(page.file, page.source)?;
            let title = file.get("title")?;
            let description = file.get("description")?;
            let mut updated = parse_date(&file, "updated")?;
            let mut markdown = file.body.to_owned();
            if page.path == "/pulse" {
                markdown.push_str(&archive_list(&issues));
                if let Some(newest) = issues.first() {
                    updated = updated.max(newest.published);
                }
            }
            let meta = PageMeta { path: page.path, title, description, base_url };
            pages.insert(page.path, Document::new(&meta, markdown.clone(), &markdown_to_html(&markdown)));
            listed_pages.push(Listed {
                path: page.path.to_owned(),
                title: title.to_owned(),
                description: description.to_owned(),
                lastmod: updated,
            });
        }

        let mut issue_docs = BTreeMap::new();
        let mut listed_issues = Vec::new();
        for issue in &issues {
            let previous = by_month.get(&issue.month.previous()).copied();
            let (head, tail) = issue.markdown(previous);
            let html = format!("{}{}{}", markdown_to_html(&head), issue.chart_svg(), markdown_to_html(&tail));
            let path = format!("/pulse/{}", issue.month);
            let title = format!("Pulse: {}", issue.month.long());
            let description = format!(
                "{} publicly announced deals in {}, counted across {} mission domains. {}.",
                issue.total(),
                issue.month.long(),
                pulse::number_word(DOMAINS.len()),
                issue.headline
            );
            let meta = PageMeta { path: &path, title: &title, description: &description, base_url };
            issue_docs.insert(issue.month, Document::new(&meta, format!("{head}{tail}"), &html));
            listed_issues.push(Listed { path, title, description, lastmod: issue.published });
        }

        let nf = ContentFile::parse(content::NOT_FOUND.file, content::NOT_FOUND.source)?;
        let nf_meta =
            PageMeta { path: "/404", title: nf.get("title")?, description: nf.get("description")?, base_url };
        let not_found = Document::new(&nf_meta, nf.body.to_owned(), &markdown_to_html(nf.body));

        let sitemap_entries: Vec<Listed> =
            listed_pages.iter().chain(&listed_issues).map(Listed::clone).collect();
        let openapi = serde_json::to_string_pretty(&machine::openapi(base_url))
            .map_err(|e| PagesError::Content { file: "openapi.json".into(), reason: e.to_string() })?;
        Ok(Site {
            llms_txt: Representation::new(
                machine::llms_txt(base_url, content::LLMS_INTRO, &listed_pages, &listed_issues),
                "text/plain; charset=utf-8",
            ),
            sitemap: Representation::new(
                machine::sitemap_xml(base_url, &sitemap_entries),
                "application/xml; charset=utf-8",
            ),
            openapi: Representation::new(openapi, "application/json"),
            pages,
            issues: issue_docs,
            not_found,
        })
    }

    fn page(&self, path: &str, request: &HeaderMap) -> Response {
        match self.pages.get(path) {
            Some(doc) => doc.answer(StatusCode::OK, request, Freshness::Page),
            None => self.missing(request),
        }
    }

    fn missing(&self, request: &HeaderMap) -> Response {
        self.not_found.answer(StatusCode::NOT_FOUND, request, Freshness::Missing)
    }
}

fn parse_date(file: &ContentFile<'_>, key: &str) -> Result<Date, PagesError> {
    Date::parse(file.get(key)?).ok_or_else(|| PagesError::Content {
        file: file.file().to_owned(),
        reason: format!("`{key}` is not YYYY-MM-DD"),
    })
}

/// The archive's list of issues, newest first.
fn archive_list(issues: &[PulseIssue]) -> String {
    let mut out = String::from("\n## Issues\n\n");
    for issue in issues {
        let (lead, lead_count) =
            DOMAINS.iter().zip(&issue.counts).max_by_key(|(_, n)| **n).map_or(("", 0), |(d, n)| (d.name, *n));
        out.push_str(&format!(
            "- [{}](/pulse/{}): {} deals, led by {} ({}). {}.\n",
            issue.month.long(),
            issue.month,
            issue.total(),
            lead.to_lowercase(),
            lead_count,
            issue.headline
        ));
    }
    out
}

/// The pages site's router: the twelve routes of pages-and-stats.md part A and a 404 page for
/// everything else, each answer with the security headers.
pub fn router(state: PagesState) -> Router {
    let csp = HeaderValue::from_str(&respond::content_security_policy())
        .unwrap_or_else(|_| HeaderValue::from_static("default-src 'none'"));
    Router::new()
        .route("/", get(get_home))
        .route("/for-clients", get(get_clients))
        .route("/for-members", get(get_for_members))
        .route("/about", get(get_about))
        .route("/contact", get(get_contact))
        .route("/privacy", get(get_privacy))
        .route("/developers", get(get_developers))
        .route("/pulse", get(get_pulse))
        .route("/pulse/{month}", get(get_pulse_issue))
        .route("/llms.txt", get(get_llms_txt))
        .route("/sitemap.xml", get(get_sitemap))
        .route("/openapi.json", get(get_openapi_json))
        .fallback(show_not_found)
        .method_not_allowed_fallback(show_method_not_allowed)
        .with_state(state)
        .layer(axum::middleware::map_response(move |r: Response| {
            let csp = csp.clone();
            async move { respond::security_headers(&csp, r) }
        }))
        .layer(crate::trace::layer("pages"))
}

/// # `GET /`
///
/// The homepage.
async fn get_home(State(s): State<PagesState>, headers: HeaderMap) -> Response {
    s.site.page("/", &headers)
}

/// # `GET /for-clients`
async fn get_clients(State(s): State<PagesState>, headers: HeaderMap) -> Response {
    s.site.page("/for-clients", &headers)
}

/// # `GET /for-members`
async fn get_for_members(State(s): State<PagesState>, headers: HeaderMap) -> Response {
    s.site.page("/for-members", &headers)
}

/// # `GET /about`
async fn get_about(State(s): State<PagesState>, headers: HeaderMap) -> Response {
    s.site.page("/about", &headers)
}

/// # `GET /contact`
async fn get_contact(State(s): State<PagesState>, headers: HeaderMap) -> Response {
    s.site.page("/contact", &headers)
}

/// # `GET /privacy`
async fn get_privacy(State(s): State<PagesState>, headers: HeaderMap) -> Response {
    s.site.page("/privacy", &headers)
}

/// # `GET /developers`
async fn get_developers(State(s): State<PagesState>, headers: HeaderMap) -> Response {
    s.site.page("/developers", &headers)
}

/// # `GET /pulse`
///
/// The archive: the introduction and every issue, newest first.
async fn get_pulse(State(s): State<PagesState>, headers: HeaderMap) -> Response {
    s.site.page("/pulse", &headers)
}

/// # `GET /pulse/{month}`
///
/// One issue. A month that is malformed, or has no published issue, gets the 404 page.
async fn get_pulse_issue(
    State(s): State<PagesState>,
    month: Result<Path<String>, axum::extract::rejection::PathRejection>,
    headers: HeaderMap,
) -> Response {
    let issue = month.ok().and_then(|Path(m)| Month::parse(&m)).and_then(|m| s.site.issues.get(&m));
    match issue {
        Some(doc) => doc.answer(StatusCode::OK, &headers, Freshness::Page),
        None => s.site.missing(&headers),
    }
}

/// # `GET /llms.txt`
async fn get_llms_txt(State(s): State<PagesState>, headers: HeaderMap) -> Response {
    s.site.llms_txt.answer(StatusCode::OK, &headers, Freshness::Machine, false)
}

/// # `GET /sitemap.xml`
async fn get_sitemap(State(s): State<PagesState>, headers: HeaderMap) -> Response {
    s.site.sitemap.answer(StatusCode::OK, &headers, Freshness::Machine, false)
}

/// # `GET /openapi.json`
async fn get_openapi_json(State(s): State<PagesState>, headers: HeaderMap) -> Response {
    s.site.openapi.answer(StatusCode::OK, &headers, Freshness::Machine, false)
}

/// Any other address: the 404 page, HTML or Markdown as asked.
async fn show_not_found(State(s): State<PagesState>, headers: HeaderMap) -> Response {
    s.site.missing(&headers)
}

/// Any method but GET (and HEAD) on a page: `405` with `Allow`, as a small HTML page.
async fn show_method_not_allowed() -> Response {
    let html = "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Method not allowed</title></head><body><h1>Method not allowed</h1><p>The pages site only answers GET.</p></body></html>";
    let mut res = axum::response::IntoResponse::into_response((StatusCode::METHOD_NOT_ALLOWED, html));
    res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    res.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site() -> Site {
        Site::build("https://council.test").expect("the built-in content is valid")
    }

    /// Words that would tell a reader the organization or its figures are invented.
    const GIVEAWAYS: &[&str] = &[
        "fictional",
        "fictitious",
        "made up",
        "made-up",
        "invented",
        "placeholder",
        "lorem",
        "ipsum",
        "example.com",
        "example.org",
        "sample data",
        "dummy",
        "not a real",
        "imaginary",
        "demo data",
        "todo",
    ];

    #[test]
    fn the_built_in_content_builds() {
        let site = site();
        assert_eq!(site.pages.len(), PAGES.len());
        assert_eq!(site.issues.len(), PULSE_ISSUES.len());
    }

    #[test]
    fn no_page_says_it_is_invented() {
        let site = site();
        let docs = site.pages.values().chain(site.issues.values()).chain([&site.not_found]);
        let bodies = docs.flat_map(|d| [d.html.body(), d.markdown.body()]).chain([site.llms_txt.body()]);
        for body in bodies {
            let lower = body.to_lowercase();
            for word in GIVEAWAYS {
                assert!(!lower.contains(word), "a page says {word:?}:\n{body}");
            }
        }
    }

    #[test]
    fn no_page_carries_inline_styles_or_scripts() {
        let site = site();
        for doc in site.pages.values().chain(site.issues.values()).chain([&site.not_found]) {
            let html = doc.html.body();
            assert!(!html.contains("style=\""), "an inline style attribute would break the CSP");
            assert!(!html.contains("<script"), "the site needs no JavaScript");
            assert_eq!(html.matches("<h1").count(), 1, "one h1 per page:\n{html}");
        }
    }

    #[test]
    fn every_issue_uses_every_domain_and_follows_the_month_before() {
        let issues: Vec<PulseIssue> =
            PULSE_ISSUES.iter().map(|(f, s)| PulseIssue::parse(f, s).expect("issue parses")).collect();
        let mut months: Vec<Month> = issues.iter().map(|i| i.month).collect();
        months.sort();
        for pair in months.windows(2) {
            assert_eq!(pair[1].previous(), pair[0], "Pulse is monthly: no gaps");
        }
    }
}
