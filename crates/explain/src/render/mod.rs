//! Wording for people: the one-line headline of a run and a diagnosis as terminal
//! text, Markdown and HTML. Everything here reads conclusions; nothing concludes.

mod diagnosis;
mod run;

/// Escapes text for HTML element content and attribute values.
pub fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
