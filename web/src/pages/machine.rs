//! The site's machine-readable files: `/llms.txt` (llmstxt.org), `/sitemap.xml` (sitemaps.org
//! 0.9) and `/openapi.json` (OpenAPI 3.0.3). Each is built once, with absolute URLs from the
//! pages base URL.

use serde_json::{Value, json};

use super::content::Date;
use super::render::ORG_NAME;

/// A public marketing URL as the sitemap and `/llms.txt` list it.
#[derive(Debug, Clone)]
pub struct Listed {
    pub path: String,
    pub title: String,
    pub description: String,
    pub lastmod: Date,
}

/// `/llms.txt`: the H1 and summary come from `content/llms.md`, the file lists from the pages.
pub fn llms_txt(base_url: &str, intro: &str, pages: &[Listed], issues: &[Listed]) -> String {
    let mut out = intro.trim_end().to_owned();
    out.push_str("\n\n## Pages\n\n");
    for page in pages {
        out.push_str(&format!("- [{}]({base_url}{}): {}\n", page.title, page.path, page.description));
    }
    out.push_str("\n## Pulse issues\n\n");
    for issue in issues {
        out.push_str(&format!("- [{}]({base_url}{}): {}\n", issue.title, issue.path, issue.description));
    }
    out.push_str(&format!(
        "\n## Optional\n\n- [OpenAPI description]({base_url}/openapi.json): every route of this site, OpenAPI 3.0.3\n- [Sitemap]({base_url}/sitemap.xml): every public page with its last change\n"
    ));
    out
}

/// `/sitemap.xml`: every public marketing URL with its `lastmod`.
pub fn sitemap_xml(base_url: &str, entries: &[Listed]) -> String {
    let mut out = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
    );
    for entry in entries {
        out.push_str(&format!(
            "  <url>\n    <loc>{}</loc>\n    <lastmod>{}</lastmod>\n  </url>\n",
            xml_escape(&format!("{base_url}{}", entry.path)),
            entry.lastmod
        ));
    }
    out.push_str("</urlset>\n");
    out
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

/// `/openapi.json`: the twelve operations of the site.
pub fn openapi(base_url: &str) -> Value {
    let page = |id: &str, summary: &str, tag: &str| {
        json!({
            "operationId": id,
            "summary": summary,
            "tags": [tag],
            "description": "Answers HTML by default. Send `Accept: text/markdown` (preferred over `text/html` by q-value) to get the same page as Markdown. Both formats carry `Vary: Accept` and a strong `ETag`.",
            "parameters": [{"$ref": "#/components/parameters/IfNoneMatch"}],
            "responses": {
                "200": {"$ref": "#/components/responses/Page"},
                "304": {"$ref": "#/components/responses/NotModified"}
            }
        })
    };
    let file = |id: &str, summary: &str, media: &str, schema: Value| {
        json!({
            "operationId": id,
            "summary": summary,
            "tags": ["agents"],
            "parameters": [{"$ref": "#/components/parameters/IfNoneMatch"}],
            "responses": {
                "200": {
                    "description": summary,
                    "headers": {
                        "ETag": {"$ref": "#/components/headers/ETag"},
                        "Cache-Control": {"$ref": "#/components/headers/CacheControl"}
                    },
                    "content": {media: {"schema": schema}}
                },
                "304": {"$ref": "#/components/responses/NotModified"}
            }
        })
    };
    let mut issue = page(
        "getPulseIssue",
        "One monthly Pulse issue: deals by mission domain, as a table and a bar chart",
        "pulse",
    );
    issue["parameters"] = json!([
        {
            "name": "month",
            "in": "path",
            "required": true,
            "description": "The issue's month, `YYYY-MM`.",
            "schema": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}$", "example": "2026-10"}
        },
        {"$ref": "#/components/parameters/IfNoneMatch"}
    ]);
    issue["responses"]["404"] = json!({"$ref": "#/components/responses/NotFound"});
    json!({
        "openapi": "3.0.3",
        "info": {
            "title": format!("{ORG_NAME}: public site"),
            "version": "1.0.0",
            "description": "The council's public pages: marketing and trust pages, the monthly Pulse of public deal activity by mission domain, and guidance for software agents. Every page is written in Markdown and served as HTML, or as Markdown on `Accept: text/markdown`. No authentication; no member, client or deal-level data. Unknown paths and unpublished or malformed Pulse months answer a 404 page in the negotiated format."
        },
        "servers": [{"url": base_url}],
        "tags": [
            {"name": "pages", "description": "Marketing and trust pages"},
            {"name": "pulse", "description": "Monthly public deal activity by mission domain"},
            {"name": "agents", "description": "Machine-readable files for crawlers and agents"}
        ],
        "paths": {
            "/": {"get": page("getHome", "Homepage", "pages")},
            "/for-clients": {"get": page("getClients", "For clients: how agencies and operators work with the council", "pages")},
            "/for-members": {"get": page("getForMembers", "For members: joining the council", "pages")},
            "/about": {"get": page("getAbout", "Company facts and the public leadership team", "pages")},
            "/contact": {"get": page("getContact", "How to reach the council", "pages")},
            "/privacy": {"get": page("getPrivacy", "Cookies, analytics and data handling", "pages")},
            "/developers": {"get": page("getDevelopers", "How software agents should read the site", "pages")},
            "/pulse": {"get": page("getPulse", "The Pulse archive, newest issue first", "pulse")},
            "/pulse/{month}": {"get": issue},
            "/llms.txt": {"get": file("getLlmsTxt", "Guidance for AI agents (llmstxt.org): when to use this site and when not to", "text/plain", json!({"type": "string"}))},
            "/sitemap.xml": {"get": file("getSitemap", "XML sitemap (sitemaps.org 0.9) of every public page, with lastmod", "application/xml", json!({"type": "string"}))},
            "/openapi.json": {"get": file("getOpenapiJson", "This description (OpenAPI 3.0.3)", "application/json", json!({"type": "object"}))}
        },
        "components": {
            "parameters": {
                "IfNoneMatch": {
                    "name": "If-None-Match",
                    "in": "header",
                    "required": false,
                    "description": "An ETag from an earlier answer; when it still matches, the answer is `304` with no body.",
                    "schema": {"type": "string"}
                }
            },
            "headers": {
                "ETag": {"description": "Strong validator of this representation", "schema": {"type": "string"}},
                "CacheControl": {"description": "How long caches may keep the answer", "schema": {"type": "string"}},
                "Vary": {"description": "Always `Accept`: the format is negotiated", "schema": {"type": "string"}}
            },
            "responses": {
                "Page": {
                    "description": "The page, as HTML or as Markdown",
                    "headers": {
                        "ETag": {"$ref": "#/components/headers/ETag"},
                        "Cache-Control": {"$ref": "#/components/headers/CacheControl"},
                        "Vary": {"$ref": "#/components/headers/Vary"}
                    },
                    "content": {
                        "text/html": {"schema": {"type": "string"}},
                        "text/markdown": {"schema": {"type": "string"}}
                    }
                },
                "NotModified": {
                    "description": "The representation named in `If-None-Match` is still current",
                    "headers": {"ETag": {"$ref": "#/components/headers/ETag"}}
                },
                "NotFound": {
                    "description": "No issue for that month (unknown, unpublished or malformed): a 404 page as HTML, or as Markdown when asked",
                    "headers": {"Vary": {"$ref": "#/components/headers/Vary"}},
                    "content": {
                        "text/html": {"schema": {"type": "string"}},
                        "text/markdown": {"schema": {"type": "string"}}
                    }
                }
            }
        }
    })
}
