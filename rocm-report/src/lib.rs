//! The HTML/SVG layer of cargo rocm's reports (`cargo rocm bench report`, `cargo rocm tune`'s
//! `report.html`, `cargo rocm profile --html`): one escape, one page shell with its CSS, table
//! rows, and plotters charts drawn to SVG text. Pages are single files opened from disk: no
//! server, no script.
//!
//! ```
//! let mut page = rocm_report::Page::new("demo", "");
//! page.push_str("<h1>demo</h1>\n");
//! page.push_str(&rocm_report::table_head(&["kernel", "ms"]));
//! page.push_str(&rocm_report::table_row([rocm_report::escape("a<b>"), "1.5".into()]));
//! page.push_str(rocm_report::TABLE_END);
//! let html = page.finish();
//! assert!(html.contains("<td>a&lt;b&gt;</td><td>1.5</td>"));
//! ```

use std::fmt::Write as _;

pub use plotters;
use plotters::coord::Shift;
use plotters::prelude::*;

/// Text made safe for HTML element content and attribute values.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The CSS every page starts with; a page adds its own after it.
pub(crate) const BASE_CSS: &str = "body{font-family:sans-serif;margin:2em;color:#222}\
     table{border-collapse:collapse}\
     td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}\
     td.n{text-align:right;font-variant-numeric:tabular-nums}\
     .err{color:#b00}";

/// An HTML page being written: [`Page::new`] writes the head, [`Page::finish`] closes it.
#[derive(Debug, Clone)]
pub struct Page {
    html: String,
}

impl Page {
    /// A page titled `title` (escaped here) whose style is the shared base (sans-serif text,
    /// bordered tables, right-aligned `td.n` numbers, red `.err`) followed by `css`.
    pub fn new(title: &str, css: &str) -> Page {
        Page {
            html: format!(
                "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title>\n\
                 <style>{BASE_CSS}{css}</style></head><body>\n",
                escape(title)
            ),
        }
    }

    /// Appends HTML as it is.
    pub fn push_str(&mut self, html: &str) {
        self.html.push_str(html);
    }

    /// The whole page.
    pub fn finish(mut self) -> String {
        self.html.push_str("</body></html>\n");
        self.html
    }
}

impl std::fmt::Write for Page {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.html.push_str(s);
        Ok(())
    }
}

/// `<table><tr><th>…</th>…</tr>` and a newline; the headers are escaped.
pub fn table_head(headers: &[&str]) -> String {
    let mut h = String::from("<table><tr>");
    for c in headers {
        let _ = write!(h, "<th>{}</th>", escape(c));
    }
    h.push_str("</tr>\n");
    h
}

/// What closes [`table_head`].
pub const TABLE_END: &str = "</table>\n";

/// A table cell: its HTML (escape text first) and an optional class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Td {
    html: String,
    class: Option<&'static str>,
}

impl Td {
    /// A cell of class `class` (`n` right-aligns numbers).
    pub fn with_class(class: &'static str, html: impl Into<String>) -> Td {
        Td {
            html: html.into(),
            class: Some(class),
        }
    }

    /// A number, right-aligned.
    pub fn num(html: impl ToString) -> Td {
        Td::with_class("n", html.to_string())
    }
}

impl From<String> for Td {
    fn from(html: String) -> Td {
        Td { html, class: None }
    }
}

impl From<&str> for Td {
    fn from(html: &str) -> Td {
        Td::from(html.to_owned())
    }
}

/// `<tr><td>…</td>…</tr>` and a newline. Cells are HTML: escape text before.
pub fn table_row<C: Into<Td>>(cells: impl IntoIterator<Item = C>) -> String {
    let mut h = String::from("<tr>");
    for c in cells {
        let c = c.into();
        match c.class {
            Some(class) => {
                let _ = write!(h, "<td class=\"{class}\">{}</td>", c.html);
            }
            None => {
                let _ = write!(h, "<td>{}</td>", c.html);
            }
        }
    }
    h.push_str("</tr>\n");
    h
}

/// The colours of series, in order (matplotlib's tab10 without its last two).
pub(crate) const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

/// The colour of series `i`: matplotlib's tab10 without its last two, repeating after eight.
pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// The drawing area [`svg`] hands its closure.
pub type SvgArea<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// A chart of `size` pixels as SVG text: `draw` draws on a white area (plotters' errors pass
/// through `?`), then the SVG is finished. Errors are the drawing's, in words.
pub fn svg(
    size: (u32, u32),
    draw: impl FnOnce(&SvgArea<'_>) -> Result<(), Box<dyn std::error::Error>>,
) -> Result<String, String> {
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, size).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        draw(&root).map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            escape(r#"<a href="x">&</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&lt;/a&gt;"
        );
    }

    #[test]
    fn a_page_is_closed_and_has_its_title_and_style() {
        let mut p = Page::new("a & b", "h1{color:red}");
        let _ = write!(p, "<p>{}</p>", 1);
        let h = p.finish();
        assert!(h.starts_with("<!DOCTYPE html>\n"));
        assert!(h.contains("<title>a &amp; b</title>"));
        assert!(h.contains(&format!("<style>{BASE_CSS}h1{{color:red}}</style>")));
        assert!(h.ends_with("<p>1</p></body></html>\n"));
    }

    #[test]
    fn tables_have_escaped_headers_and_classed_cells() {
        assert_eq!(
            table_head(&["a<b", "c"]),
            "<table><tr><th>a&lt;b</th><th>c</th></tr>\n"
        );
        assert_eq!(
            table_row([Td::from("x"), Td::num(3), Td::with_class("noisy", "y")]),
            "<tr><td>x</td><td class=\"n\">3</td><td class=\"noisy\">y</td></tr>\n"
        );
    }

    #[test]
    fn charts_are_svg_text() {
        let s = svg((200, 100), |root| {
            let mut chart = ChartBuilder::on(root).build_cartesian_2d(0.0..1.0, 0.0..1.0)?;
            chart.draw_series(LineSeries::new([(0.0, 0.0), (1.0, 1.0)], color(0)))?;
            Ok(())
        })
        .unwrap();
        assert!(s.starts_with("<svg") && s.contains("<polyline"), "{s}");
    }
}
