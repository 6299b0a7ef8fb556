//! Wording for people: the one-line headline of a run and a diagnosis as terminal
//! text, Markdown and HTML. Everything here reads conclusions; nothing concludes.

mod answer;
mod context;
mod diagnosis;
pub mod reproducer;
mod run;

/// Control characters, bidirectional ones included (U+202E turns the rest of a line
/// around), written as `<U+202E>`: a name from a file or a driver cannot reorder or
/// hide what a page says around it. Line breaks and tabs stay.
pub fn visible_controls(s: &str) -> String {
    s.chars()
        .map(|c| {
            let bidi = matches!(c, '\u{200e}' | '\u{200f}' | '\u{061c}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
            if bidi || (c.is_control() && c != '\n' && c != '\t') {
                format!("<U+{:04X}>", u32::from(c))
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Escapes text for HTML element content and attribute values (controls made
/// visible first, see [`visible_controls`]).
pub fn html_escape(s: &str) -> String {
    visible_controls(s)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// Escapes text for Markdown so that it reads as written in any CommonMark or
/// GitHub renderer: no emphasis, code, links, HTML, strikethrough or table cell
/// breaks from a name; `_` inside a word (`CL_OUT_OF_HOST_MEMORY`) stays as it is.
/// Controls are made visible (see [`visible_controls`]).
///
/// ```
/// use clmulti_explain::render::markdown_escape;
/// assert_eq!(markdown_escape("<b>*x*</b> | a_b _c_"), r"\<b\>\*x\*\</b\> \| a_b \_c\_");
/// assert_eq!(markdown_escape("CL_OUT_OF_HOST_MEMORY (-6)"), "CL_OUT_OF_HOST_MEMORY (-6)");
/// ```
pub fn markdown_escape(s: &str) -> String {
    let chars: Vec<char> = visible_controls(s).chars().collect();
    let mut out = String::with_capacity(chars.len());
    for (i, &c) in chars.iter().enumerate() {
        let inside_word = |c: char| {
            i > 0
                && chars[i - 1].is_alphanumeric()
                && chars.get(i + 1).is_some_and(|n| n.is_alphanumeric())
                && c == '_'
        };
        if matches!(
            c,
            '\\' | '`' | '*' | '[' | ']' | '<' | '>' | '|' | '~' | '&' | '_'
        ) && !inside_word(c)
        {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_that_reorder_text_are_shown_not_obeyed() {
        assert_eq!(visible_controls("run\u{202e}gpj.exe"), "run<U+202E>gpj.exe");
        assert_eq!(html_escape("a\u{2066}<b>"), "a&lt;U+2066&gt;&lt;b&gt;");
        assert_eq!(visible_controls("two\nlines\ttab"), "two\nlines\ttab");
        assert_eq!(markdown_escape("x\u{7}"), r"x\<U+0007\>");
    }
}
