//! The public pages site (pages-and-stats.md part A), black-box over real HTTP: every route in
//! both formats, content negotiation, the 404 pages, caching and security headers, the machine
//! files (`/llms.txt`, `/sitemap.xml`, `/openapi.json`), a crawl of every link, and headless
//! Chromium rendering every page at phone and desktop width.

use std::collections::{BTreeSet, HashSet, VecDeque};

use reqwest::header::{ACCEPT, IF_NONE_MATCH};
use serde_json::Value;

use crate::support::{ServiceClient, spawn_app, spawn_app_with, test_args};

/// The marketing pages of the spec's table (Pulse issues are found through the archive).
const PAGES: &[&str] =
    &["/", "/for-clients", "/for-members", "/about", "/contact", "/privacy", "/developers", "/pulse"];

const MARKDOWN: &str = "text/markdown; charset=utf-8";
const HTML: &str = "text/html; charset=utf-8";

fn header(response: &reqwest::Response, name: &str) -> String {
    response.headers().get(name).map(|v| v.to_str().expect("ascii header").to_owned()).unwrap_or_default()
}

/// Every value of `attr="..."` in an HTML document, entity `&amp;` decoded.
fn attr_values(html: &str, attr: &str) -> Vec<String> {
    let needle = format!(" {attr}=\"");
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(at) = rest.find(&needle) {
        rest = &rest[at + needle.len()..];
        let end = rest.find('"').expect("attribute closes");
        out.push(rest[..end].replace("&amp;", "&"));
        rest = &rest[end..];
    }
    out
}

/// The text of the first `<h1>` of an HTML page.
fn h1_text(html: &str) -> String {
    let start = html.find("<h1").expect("page has an h1");
    let open_end = start + html[start..].find('>').expect("h1 opens");
    let close = html[open_end..].find("</h1>").expect("h1 closes") + open_end;
    html[open_end + 1..close].to_owned()
}

/// The Pulse issue paths the archive links to, in the archive's order.
async fn issue_paths(pages: &ServiceClient) -> Vec<String> {
    let archive = pages.get("/pulse").send().await.expect("archive").text().await.expect("body");
    let mut paths: Vec<String> = Vec::new();
    for href in attr_values(&archive, "href") {
        let is_issue = href.strip_prefix("/pulse/").is_some_and(|m| m.len() == 7 && m.as_bytes()[4] == b'-');
        if is_issue && !paths.contains(&href) {
            paths.push(href);
        }
    }
    paths
}

fn assert_security_headers(response: &reqwest::Response, what: &str) {
    let csp = header(response, "content-security-policy");
    assert!(csp.contains("default-src 'none'"), "{what}: CSP {csp:?}");
    assert!(csp.contains("frame-ancestors 'none'"), "{what}: CSP {csp:?}");
    assert!(!csp.contains("unsafe-inline") && !csp.contains("script-src"), "{what}: CSP {csp:?}");
    assert_eq!(header(response, "x-content-type-options"), "nosniff", "{what}");
    assert_eq!(header(response, "x-frame-options"), "DENY", "{what}");
    assert_eq!(header(response, "referrer-policy"), "strict-origin-when-cross-origin", "{what}");
}

#[tokio::test]
async fn every_page_answers_html_and_markdown_from_the_same_source() {
    let app = spawn_app().await;
    let issues = issue_paths(&app.pages).await;
    assert!(!issues.is_empty(), "the archive lists issues");
    let all: Vec<String> = PAGES.iter().map(|p| p.to_string()).chain(issues).collect();

    for path in &all {
        let html = app.pages.get(path).send().await.expect("html");
        assert_eq!(html.status(), 200, "{path}");
        assert_eq!(header(&html, "content-type"), HTML, "{path}");
        assert_eq!(header(&html, "vary"), "Accept", "{path}");
        assert_eq!(header(&html, "cache-control"), "public, max-age=300", "{path}");
        assert_security_headers(&html, path);
        let html_etag = header(&html, "etag");
        assert!(html_etag.starts_with('"') && html_etag.len() > 2, "{path}: strong ETag {html_etag:?}");
        let html_body = html.text().await.expect("html body");
        assert!(html_body.starts_with("<!doctype html>\n<html lang=\"en\">"), "{path}");
        assert!(html_body.contains("<meta name=\"viewport\""), "{path}");
        assert!(html_body.contains("<nav aria-label=\"Main\">") && html_body.contains("<footer"), "{path}");
        assert!(html_body.contains("<main id=\"main\""), "{path}");
        assert_eq!(html_body.matches("<h1").count(), 1, "{path}: one h1");
        assert!(!html_body.contains("<script"), "{path}: no JavaScript");

        let md = app.pages.get(path).header(ACCEPT, "text/markdown").send().await.expect("markdown");
        assert_eq!(md.status(), 200, "{path}");
        assert_eq!(header(&md, "content-type"), MARKDOWN, "{path}");
        assert_eq!(header(&md, "vary"), "Accept", "{path}");
        assert_security_headers(&md, path);
        assert_ne!(header(&md, "etag"), html_etag, "{path}: each format has its own ETag");
        let md_body = md.text().await.expect("markdown body");
        let heading =
            md_body.lines().next().and_then(|l| l.strip_prefix("# ")).expect("markdown opens with an h1");
        assert_eq!(
            h1_text(&html_body),
            heading.replace('&', "&amp;"),
            "{path}: the formats share their heading"
        );
        assert!(!md_body.contains("<html") && !md_body.contains("<svg"), "{path}: Markdown is not HTML");
        // Every paragraph's opening words appear in the HTML too: one source, two renderings.
        for paragraph in md_body.split("\n\n").filter(|p| p.starts_with(|c: char| c.is_ascii_uppercase())) {
            let words: String = paragraph.split_whitespace().take(3).collect::<Vec<_>>().join(" ");
            if !words.contains(['*', '[', '`', '\'', '"', '&']) {
                assert!(html_body.contains(&words), "{path}: {words:?} is in the Markdown but not the HTML");
            }
        }
    }
    app.shutdown().await;
}

#[tokio::test]
async fn the_format_follows_accept_q_values() {
    let app = spawn_app().await;
    let cases = [
        (None, HTML),
        (Some("*/*"), HTML),
        (Some("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"), HTML),
        (Some("application/json"), HTML),
        (Some("text/markdown"), MARKDOWN),
        (Some("text/markdown, text/html;q=0.5"), MARKDOWN),
        (Some("text/html;q=0.4, text/markdown;q=0.8"), MARKDOWN),
        (Some("text/markdown, */*;q=0.1"), MARKDOWN),
        (Some("text/html, text/markdown;q=0.9"), HTML),
        (Some("text/markdown;q=0"), HTML),
    ];
    for (accept, expected) in cases {
        let mut request = app.pages.get("/about");
        if let Some(accept) = accept {
            request = request.header(ACCEPT, accept);
        }
        let response = request.send().await.expect("about");
        assert_eq!(response.status(), 200);
        assert_eq!(header(&response, "content-type"), expected, "Accept: {accept:?}");
        assert_eq!(header(&response, "vary"), "Accept");
    }
    app.shutdown().await;
}

#[tokio::test]
async fn unknown_and_malformed_months_answer_a_404_page_in_the_asked_format() {
    let app = spawn_app().await;
    let published: HashSet<String> = issue_paths(&app.pages).await.into_iter().collect();
    let newest = published.iter().max().expect("an issue").clone();
    let year: u32 = newest["/pulse/".len()..][..4].parse().expect("year");
    let unpublished = format!("/pulse/{}-01", year + 5);
    assert!(!published.contains(&unpublished));
    for path in [
        unpublished.as_str(),
        "/pulse/1999-12",
        "/pulse/2026-13",
        "/pulse/2026-00",
        "/pulse/2026-1",
        "/pulse/june",
        "/pulse/2026-10-01",
        "/pulse/2026-10/extra",
        "/pulse/",
        "/no-such-page",
        "/about/",
    ] {
        let html = app.pages.get(path).send().await.expect("html");
        assert_eq!(html.status(), 404, "{path}");
        assert_eq!(header(&html, "content-type"), HTML, "{path}");
        assert_eq!(header(&html, "vary"), "Accept", "{path}");
        assert_security_headers(&html, path);
        let body = html.text().await.expect("body");
        assert_eq!(h1_text(&body), "Page not found", "{path}");
        assert!(body.contains("href=\"/pulse\""), "{path}: the 404 page leads back to the archive");

        let md = app.pages.get(path).header(ACCEPT, "text/markdown").send().await.expect("markdown");
        assert_eq!(md.status(), 404, "{path}");
        assert_eq!(header(&md, "content-type"), MARKDOWN, "{path}");
        assert!(md.text().await.expect("body").starts_with("# Page not found\n"), "{path}");
    }
    // A request with a stale ETag for a missing page still gets the page, never a 304.
    let missing = app.pages.get("/pulse/2026-13").send().await.expect("404");
    let etag = header(&missing, "etag");
    let again = app.pages.get("/pulse/2026-13").header(IF_NONE_MATCH, etag).send().await.expect("404 again");
    assert_eq!(again.status(), 404);
    app.shutdown().await;
}

#[tokio::test]
async fn conditional_get_answers_304_for_the_same_representation_only() {
    let app = spawn_app().await;
    for (path, accept) in [
        ("/", "text/html"),
        ("/pulse", "text/markdown"),
        ("/llms.txt", "*/*"),
        ("/sitemap.xml", "*/*"),
        ("/openapi.json", "*/*"),
    ] {
        let first = app.pages.get(path).header(ACCEPT, accept).send().await.expect("first");
        assert_eq!(first.status(), 200);
        let etag = header(&first, "etag");
        let cache = header(&first, "cache-control");
        assert!(cache.starts_with("public, max-age="), "{path}: {cache}");

        let again = app
            .pages
            .get(path)
            .header(ACCEPT, accept)
            .header(IF_NONE_MATCH, &etag)
            .send()
            .await
            .expect("again");
        assert_eq!(again.status(), 304, "{path}");
        assert_eq!(header(&again, "etag"), etag, "{path}");
        assert_eq!(header(&again, "cache-control"), cache, "{path}");
        assert_security_headers(&again, path);
        assert!(again.bytes().await.expect("body").is_empty(), "{path}: a 304 has no body");

        let listed = format!("\"nope\", W/{etag}");
        let weak = app
            .pages
            .get(path)
            .header(ACCEPT, accept)
            .header(IF_NONE_MATCH, listed)
            .send()
            .await
            .expect("weak");
        assert_eq!(weak.status(), 304, "{path}: If-None-Match compares weakly and takes a list");

        let other = app
            .pages
            .get(path)
            .header(ACCEPT, accept)
            .header(IF_NONE_MATCH, "\"stale\"")
            .send()
            .await
            .expect("stale");
        assert_eq!(other.status(), 200, "{path}");
        assert_eq!(header(&other, "etag"), etag, "{path}: the ETag is stable between requests");
    }
    // The HTML's ETag does not validate the Markdown: they are different representations.
    let html = app.pages.get("/about").send().await.expect("html");
    let md =
        app.pages.get("/about").header(ACCEPT, "text/markdown").header(IF_NONE_MATCH, header(&html, "etag"));
    let md = md.send().await.expect("markdown");
    assert_eq!(md.status(), 200);
    assert_eq!(header(&md, "content-type"), MARKDOWN);
    app.shutdown().await;
}

#[tokio::test]
async fn llms_txt_follows_the_llmstxt_structure() {
    let app = spawn_app().await;
    let response = app.pages.get("/llms.txt").header(ACCEPT, "text/markdown").send().await.expect("llms.txt");
    assert_eq!(response.status(), 200);
    assert_eq!(header(&response, "content-type"), "text/plain; charset=utf-8", "Accept does not change it");
    assert_eq!(header(&response, "vary"), "", "llms.txt is not negotiated");
    assert_security_headers(&response, "/llms.txt");
    let text = response.text().await.expect("body");
    let lines: Vec<&str> = text.lines().collect();

    // llmstxt.org: an H1 with the name, then a blockquote summary, then prose without headings,
    // then H2 sections whose bodies are lists of `- [name](url): notes`.
    assert!(lines[0].starts_with("# ") && lines[0].len() > 2, "{}", lines[0]);
    assert_eq!(lines[1], "");
    assert!(lines[2].starts_with("> "), "the summary blockquote follows the title");
    assert_eq!(text.matches("\n# ").count(), 0, "one H1");
    let first_h2 = text.find("\n## ").expect("file lists");
    let prose = &text[..first_h2];
    assert!(prose.contains("Use this site"), "says when to use the site");
    assert!(prose.contains("Do not use this site"), "says when not to");
    let mut sections = Vec::new();
    let mut links = Vec::new();
    for line in text[first_h2 + 1..].lines().filter(|l| !l.is_empty()) {
        if let Some(name) = line.strip_prefix("## ") {
            sections.push(name.to_owned());
            continue;
        }
        let item = line.strip_prefix("- [").unwrap_or_else(|| panic!("not a file-list item: {line}"));
        let (_, rest) = item.split_once("](").expect("a link");
        let (url, _notes) = rest.split_once(')').expect("link closes");
        assert!(url.starts_with(&app.pages.base), "absolute URL from the base: {url}");
        links.push(url.to_owned());
    }
    assert_eq!(sections.last().map(String::as_str), Some("Optional"), "Optional comes last: {sections:?}");
    for page in PAGES {
        assert!(links.contains(&format!("{}{page}", app.pages.base)), "llms.txt lists {page}");
    }
    for url in links {
        let answer = app.pages.http.get(&url).send().await.expect("listed url");
        assert_eq!(answer.status(), 200, "{url}");
    }
    app.shutdown().await;
}

/// A sitemap's `<url>` entries as (loc, lastmod), checked to hold exactly one of each.
fn sitemap_entries(xml: &str) -> Vec<(String, String)> {
    assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"), "XML declaration first");
    assert!(
        xml.contains("<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">"),
        "sitemaps.org 0.9 namespace"
    );
    assert!(xml.trim_end().ends_with("</urlset>"));
    let inner = |block: &str, tag: &str| -> String {
        let open = format!("<{tag}>");
        assert_eq!(block.matches(&open).count(), 1, "one <{tag}> in {block}");
        let start = block.find(&open).expect("open") + open.len();
        let end = block.find(&format!("</{tag}>")).expect("close");
        block[start..end].to_owned()
    };
    xml.split("<url>").skip(1).map(|block| (inner(block, "loc"), inner(block, "lastmod"))).collect()
}

#[tokio::test]
async fn the_sitemap_lists_every_public_page_with_absolute_urls_and_lastmod() {
    let mut args = test_args();
    args.pages_base_url = Some("https://www.council.test/".into());
    let app = spawn_app_with(agora_storage::DbSettings::memory(), None, args).await;
    let addr = app.running().pages.as_ref().expect("pages runs").addr;
    let pages = ServiceClient { base: format!("http://{addr}"), http: app.pages.http.clone() };

    let response = pages.get("/sitemap.xml").header(ACCEPT, "text/markdown").send().await.expect("sitemap");
    assert_eq!(response.status(), 200);
    assert_eq!(header(&response, "content-type"), "application/xml; charset=utf-8");
    let xml = response.text().await.expect("body");
    let entries = sitemap_entries(&xml);
    assert!(!entries.is_empty() && entries.len() <= 50_000, "sitemaps hold 1 to 50,000 URLs");
    assert!(xml.len() <= 50 * 1024 * 1024);

    let base = "https://www.council.test";
    let mut seen = BTreeSet::new();
    for (loc, lastmod) in &entries {
        assert!(loc.starts_with(&format!("{base}/")), "absolute URL from the configured base: {loc}");
        assert!(!loc[base.len() + 1..].starts_with('/'), "no doubled slash: {loc}");
        assert!(seen.insert(loc.clone()), "listed once: {loc}");
        assert!(!loc.contains(['<', '>', '"', '\'']) && !loc.contains("& "), "escaped: {loc}");
        let b = lastmod.as_bytes();
        assert!(b.len() == 10 && b[4] == b'-' && b[7] == b'-', "W3C date: {lastmod}");
        assert!(lastmod.as_str() >= "2014-01-01" && lastmod.as_str() <= "2100-01-01", "{lastmod}");
        // Every listed URL is a page that answers.
        let path = &loc[base.len()..];
        let page = pages.get(path).send().await.expect("listed page");
        assert_eq!(page.status(), 200, "{loc}");
        assert_eq!(header(&page, "content-type"), HTML, "{loc} is a page");
    }
    for page in PAGES {
        assert!(seen.contains(&format!("{base}{page}")), "the sitemap lists {page}");
    }
    let issues = issue_paths(&pages).await;
    for issue in &issues {
        assert!(seen.contains(&format!("{base}{issue}")), "the sitemap lists {issue}");
    }
    for machine in ["/llms.txt", "/sitemap.xml", "/openapi.json"] {
        assert!(!seen.contains(&format!("{base}{machine}")), "{machine} is not a marketing page");
    }
    let lastmod =
        |path: &str| entries.iter().find(|(l, _)| *l == format!("{base}{path}")).map(|(_, m)| m.clone());
    let newest_issue = issues.iter().filter_map(|i| lastmod(i)).max().expect("issue dates");
    assert!(
        lastmod("/pulse").expect("archive") >= newest_issue,
        "the archive changes when an issue is published"
    );

    // The canonical links of the pages use the same base.
    let home = pages.get("/").send().await.expect("home").text().await.expect("body");
    assert!(home.contains("<link rel=\"canonical\" href=\"https://www.council.test/\">"));
    app.shutdown().await;
}

/// Follows a local `$ref` (`#/components/...`) until it reaches an object that is not one.
fn resolve<'a>(doc: &'a Value, mut value: &'a Value) -> &'a Value {
    while let Some(reference) = value.get("$ref").and_then(Value::as_str) {
        let pointer = reference.strip_prefix('#').expect("local $ref");
        value = doc.pointer(pointer).unwrap_or_else(|| panic!("$ref {reference} resolves"));
    }
    value
}

#[tokio::test]
async fn openapi_describes_exactly_the_twelve_operations_and_the_site_keeps_to_it() {
    let app = spawn_app().await;
    let response = app.pages.get("/openapi.json").send().await.expect("openapi");
    assert_eq!(response.status(), 200);
    assert_eq!(header(&response, "content-type"), "application/json");
    let doc: Value = response.json().await.expect("JSON");

    assert_eq!(doc["openapi"], "3.0.3");
    assert_eq!(doc["info"]["version"], "1.0.0");
    assert!(doc["info"]["title"].as_str().is_some_and(|t| !t.is_empty()));
    assert_eq!(doc["servers"][0]["url"], app.pages.base.as_str());
    let allowed_top: BTreeSet<&str> =
        ["openapi", "info", "servers", "paths", "components", "security", "tags", "externalDocs"].into();
    for key in doc.as_object().expect("object").keys() {
        assert!(allowed_top.contains(key.as_str()), "OpenAPI 3.0 has no top-level {key}");
    }

    let mut ids = Vec::new();
    let paths = doc["paths"].as_object().expect("paths");
    for (path, item) in paths {
        assert!(path.starts_with('/'), "{path}");
        let item = item.as_object().expect("path item");
        assert_eq!(item.keys().collect::<Vec<_>>(), vec!["get"], "{path}: GET only");
        let op = &item["get"];
        ids.push(op["operationId"].as_str().expect("operationId").to_owned());

        // Path templates and path parameters agree, and parameters are well formed.
        let params: Vec<&Value> = op["parameters"]
            .as_array()
            .map(|a| a.iter().map(|p| resolve(&doc, p)).collect())
            .unwrap_or_default();
        for p in &params {
            assert!(p["name"].is_string() && p["schema"].is_object(), "{path}: parameter {p}");
            let place = p["in"].as_str().expect("in");
            assert!(["path", "query", "header", "cookie"].contains(&place), "{path}: in {place}");
            if place == "path" {
                assert_eq!(p["required"], true, "{path}: path parameters are required");
                assert!(path.contains(&format!("{{{}}}", p["name"].as_str().expect("name"))), "{path}");
            }
        }
        let template_params = path.matches('{').count();
        assert_eq!(params.iter().filter(|p| p["in"] == "path").count(), template_params, "{path}");

        // Every response has a description, and the live answer matches one of them.
        let responses = op["responses"].as_object().expect("responses");
        for (status, r) in responses {
            assert!(
                resolve(&doc, r)["description"].as_str().is_some_and(|d| !d.is_empty()),
                "{path} {status}"
            );
        }
        let live_path = match params.iter().find(|p| p["in"] == "path") {
            Some(p) => path.replace("{month}", p["schema"]["example"].as_str().expect("example month")),
            None => path.clone(),
        };
        for accept in ["text/html", "text/markdown"] {
            let live = app.pages.get(&live_path).header(ACCEPT, accept).send().await.expect("live");
            let status = live.status().as_u16().to_string();
            let documented = resolve(
                &doc,
                responses.get(&status).unwrap_or_else(|| panic!("{path}: {status} documented")),
            );
            let media = header(&live, "content-type");
            let media = media.split(';').next().expect("media type");
            assert!(documented["content"].get(media).is_some(), "{path}: {media} documented for {status}");
        }
    }
    ids.sort();
    let mut expected = vec![
        "getHome",
        "getClients",
        "getForMembers",
        "getAbout",
        "getContact",
        "getPrivacy",
        "getDevelopers",
        "getPulse",
        "getPulseIssue",
        "getLlmsTxt",
        "getSitemap",
        "getOpenapiJson",
    ];
    expected.sort();
    assert_eq!(ids, expected, "exactly the twelve operationIds of the spec");

    // The month parameter carries the spec's pattern.
    let month = &doc["paths"]["/pulse/{month}"]["get"]["parameters"][0];
    assert_eq!(month["schema"]["pattern"], "^[0-9]{4}-[0-9]{2}$");
    assert!(doc["paths"]["/pulse/{month}"]["get"]["responses"].get("404").is_some());
    app.shutdown().await;
}

#[tokio::test]
async fn the_pulse_archive_lists_issues_newest_first_and_each_issue_adds_up() {
    let app = spawn_app().await;
    let issues = issue_paths(&app.pages).await;
    assert!(issues.len() >= 2, "{issues:?}");
    let mut sorted = issues.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(issues, sorted, "newest first");

    let archive_md = app.pages.get("/pulse").header(ACCEPT, "text/markdown").send().await.expect("archive");
    let archive_md = archive_md.text().await.expect("body");
    for issue in &issues {
        assert!(archive_md.contains(&format!("]({issue})")), "the Markdown archive links {issue} too");
    }

    for issue in &issues {
        let md = app.pages.get(issue).header(ACCEPT, "text/markdown").send().await.expect("issue");
        let md = md.text().await.expect("body");
        // The table: one row per mission domain, then the total.
        let rows: Vec<Vec<String>> = md
            .lines()
            .filter(|l| l.starts_with("| ") && !l.starts_with("| Mission domain"))
            .map(|l| l.trim_matches('|').split('|').map(|c| c.trim().trim_matches('*').to_owned()).collect())
            .collect();
        let (total_row, domain_rows) = rows.split_last().expect("a table");
        assert_eq!(total_row[0], "All domains", "{issue}");
        assert!(domain_rows.len() >= 3, "{issue}: counts per mission domain");
        let counts: Vec<u32> = domain_rows.iter().map(|r| r[1].parse().expect("a count")).collect();
        let total: u32 = total_row[1].parse().expect("total");
        assert_eq!(counts.iter().sum::<u32>(), total, "{issue}: the rows add up to the total");
        assert!(
            md.contains(&format!("{total} publicly announced deals")),
            "{issue}: the summary states the total"
        );

        // The HTML has the same table and a bar chart drawn from the same counts.
        let html = app.pages.get(issue).send().await.expect("issue html").text().await.expect("body");
        assert!(html.contains("<table>"), "{issue}");
        let svg_start = html.find("<svg width").expect("an inline SVG chart");
        let svg = &html[svg_start..html[svg_start..].find("</svg>").expect("svg closes") + svg_start];
        assert!(
            svg.contains("role=\"img\"") && svg.contains("<title") && svg.contains("<desc"),
            "{issue}: accessible chart"
        );
        assert_eq!(svg.matches("<rect").count(), counts.len(), "{issue}: one bar per domain");
        for (row, count) in domain_rows.iter().zip(&counts) {
            assert!(
                html.contains(&format!("<td>{}</td><td class=\"num\">{count}</td>", row[0])),
                "{issue}: row {row:?}"
            );
            assert!(svg.contains(&format!("{}: {count}", row[0])), "{issue}: the chart describes {row:?}");
            assert!(
                svg.contains(&format!(">{} <tspan class=\"value\">{count}</tspan>", row[0])),
                "{issue}: the chart labels {row:?}"
            );
        }
        // Bars are drawn to scale: the longest bar belongs to the largest count.
        let widths: Vec<f64> = svg
            .split("<rect")
            .skip(1)
            .map(|rect| attr_values(rect, "width")[0].trim_end_matches('%').parse().expect("a width in %"))
            .collect();
        assert!(widths.iter().all(|w| (0.0..=100.0).contains(w)), "{issue}: {widths:?}");
        let widest =
            widths.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).map(|(i, _)| i).expect("bars");
        assert_eq!(counts[widest], *counts.iter().max().expect("counts"), "{issue}: bars follow the counts");
    }
    app.shutdown().await;
}

#[tokio::test]
async fn every_link_in_the_site_resolves() {
    let app = spawn_app().await;
    let base = app.pages.base.clone();
    let mut queue: VecDeque<String> = VecDeque::from(vec!["/".to_owned()]);
    let mut visited: HashSet<String> = HashSet::new();
    let mut checked_fragments = 0;
    let mut pages_crawled = 0;
    while let Some(path) = queue.pop_front() {
        if !visited.insert(path.clone()) {
            continue;
        }
        let response = app.pages.get(&path).send().await.expect("page");
        assert_eq!(response.status(), 200, "{path} is linked but does not answer");
        let is_html = header(&response, "content-type") == HTML;
        let body = response.text().await.expect("body");
        if !is_html {
            continue;
        }
        pages_crawled += 1;
        for link in attr_values(&body, "href").into_iter().chain(attr_values(&body, "src")) {
            if link.starts_with("mailto:") || link.starts_with("data:") {
                continue;
            }
            let local = match link.strip_prefix(&base) {
                Some("") => "/".to_owned(),
                Some(rest) => rest.to_owned(),
                None => link.clone(),
            };
            assert!(
                local.starts_with('/') || local.starts_with('#'),
                "{path} links outside the site: {link}"
            );
            let (target, fragment) = local.split_once('#').unwrap_or((&local, ""));
            let target = if target.is_empty() { path.clone() } else { target.to_owned() };
            if !fragment.is_empty() {
                let page =
                    app.pages.get(&target).send().await.expect("fragment target").text().await.expect("body");
                assert!(
                    page.contains(&format!("id=\"{fragment}\"")),
                    "{path} links to {target}#{fragment}, which has no such id"
                );
                checked_fragments += 1;
            }
            if !visited.contains(&target) {
                queue.push_back(target);
            }
        }
    }
    assert!(checked_fragments > 0, "the skip link was followed");
    // Every page of the sitemap was reached by following links from the homepage.
    let xml = app.pages.get("/sitemap.xml").send().await.expect("sitemap").text().await.expect("body");
    for (loc, _) in sitemap_entries(&xml) {
        let path = loc.strip_prefix(&base).expect("local loc");
        assert!(visited.contains(path), "{path} is in the sitemap but no page links to it");
    }
    assert!(pages_crawled >= PAGES.len(), "crawled {pages_crawled} pages");
    app.shutdown().await;
}

#[tokio::test]
async fn other_methods_are_refused_with_the_security_headers() {
    let app = spawn_app().await;
    let response = app.pages.post("/about").body("x").send().await.expect("post");
    assert_eq!(response.status(), 405);
    assert_security_headers(&response, "POST /about");
    let head = app.pages.http.head(app.pages.url("/about")).send().await.expect("head");
    assert_eq!(head.status(), 200);
    assert_eq!(header(&head, "content-type"), HTML);
    app.shutdown().await;
}

#[tokio::test]
async fn chromium_renders_every_page_at_phone_and_desktop_width_without_errors() {
    let app = spawn_app().await;
    let mut paths: Vec<String> = PAGES.iter().map(|p| p.to_string()).collect();
    paths.extend(issue_paths(&app.pages).await);
    paths.push("404:/pulse/2026-13".to_owned());
    let out_dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("pages-screenshots");
    std::fs::create_dir_all(&out_dir).expect("screenshot dir");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/js/pages.mjs");

    let output = tokio::process::Command::new("node")
        .arg(script)
        .arg(&app.pages.base)
        .arg(&out_dir)
        .args(&paths)
        .output()
        .await
        .expect("node runs (tests/js has playwright-core; Chromium is at /usr/bin/chromium)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the browser check failed:\n{stdout}\n{stderr}");

    let report: Value = serde_json::from_str(stdout.lines().last().expect("a report")).expect("JSON report");
    assert_eq!(report["problems"], serde_json::json!([]), "{stdout}");
    let shots = report["screenshots"].as_array().expect("screenshots");
    assert_eq!(shots.len(), paths.len() * 2, "every page at two widths");
    for shot in shots {
        let file = shot.as_str().expect("path");
        let png = std::fs::read(file).expect("screenshot written");
        assert!(png.starts_with(b"\x89PNG") && png.len() > 5_000, "{file} is a real PNG");
    }
    app.shutdown().await;
}
