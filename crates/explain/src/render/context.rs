//! A page's header ([`PageContext`]) as Markdown and HTML.

use crate::context::PageContext;

impl PageContext {
    /// As Markdown lines (`**Machine:** ...`), escaped.
    pub fn markdown(&self) -> String {
        self.lines()
            .into_iter()
            .map(|(k, v)| format!("**{k}:** {}\n\n", super::markdown_escape(&v)))
            .collect()
    }

    /// As an HTML block (escaped); the emulated parts stand out.
    pub fn html(&self) -> String {
        let mut out = String::from("<div class=\"machine\" id=\"machine\">");
        for (k, v) in self.lines() {
            let class = if k == "Emulated" && !self.emulated.is_empty() {
                " class=\"emulated\""
            } else {
                ""
            };
            out.push_str(&format!(
                "<p{class}><b>{k}:</b> {}</p>",
                super::html_escape(&v)
            ));
        }
        out.push_str("</div>\n");
        out
    }
}
