//! HTML for the owner pages: one escaping helper for everything interpolated, and the page
//! frame (navigation, the session's CSRF token for the script, stylesheet and script from
//! `/static`, no inline script so the CSP can forbid it).

use std::fmt::Write as _;

use axum::response::Html;

/// `s` safe inside HTML text and double-quoted attributes.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `at` as a `<time>` element, in UTC (the script shows it in the browser's time zone).
pub(crate) fn when(at: &chrono::DateTime<chrono::Utc>) -> String {
    format!(
        r#"<time datetime="{}">{}</time>"#,
        esc(&at.to_rfc3339()),
        esc(&at.format("%Y-%m-%d %H:%M:%S UTC").to_string())
    )
}

/// `value` as JSON safe inside a `<script type="application/json">` element.
pub(crate) fn json_island(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value)
        .unwrap_or_else(|_| "null".into())
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// The navigation entries: path and label.
const NAV: [(&str, &str); 4] = [
    ("/account", "Account"),
    ("/connections", "AI connections"),
    ("/policy", "Archive policy"),
    ("/sends", "Recent sends"),
];

/// A full page. `csrf` is `None` on the login page (no session yet).
pub(crate) fn page(title: &str, path: &str, csrf: Option<&str>, body: &str) -> Html<String> {
    let mut nav = String::new();
    if csrf.is_some() {
        nav.push_str(r#"<nav aria-label="Main"><ul>"#);
        for (href, label) in NAV {
            let current = if path.starts_with(href) {
                r#" aria-current="page""#
            } else {
                ""
            };
            let _ = write!(nav, r#"<li><a href="{href}"{current}>{label}</a></li>"#);
        }
        nav.push_str(
            r#"</ul><button type="button" id="logout" class="link">Log out</button></nav>"#,
        );
    }
    let csrf_meta = csrf.map_or_else(String::new, |c| {
        format!(r#"<meta name="csrf-token" content="{}">"#, esc(c))
    });
    Html(format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
{csrf_meta}
<title>{title} · wazap</title>
<link rel="stylesheet" href="/static/app.css">
<script src="/static/app.js" defer></script>
</head>
<body>
<header><span class="brand">wazap</span>{nav}</header>
<main id="main">
<h1>{title}</h1>
<p id="status" role="status" aria-live="polite"></p>
{banner}
{body}
</main>
</body>
</html>
"#,
        title = esc(title),
        // Filled by the script on every page of a session while an account is not live.
        banner = if csrf.is_some() {
            r#"<div id="accounts-banner" class="banner" role="alert" hidden></div>"#
        } else {
            ""
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_script_breakouts() {
        assert_eq!(
            esc(r#"<a href="x">'&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
        let island = json_island(&serde_json::json!({"name": "</script><b>"}));
        assert!(!island.contains("</script>") && !island.contains('<'));
    }
}
