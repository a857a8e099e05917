//! A heatmap's cells as drawn, read back from its SVG: each a filled rectangle that holds
//! exactly one text, its value. Shared by core's heatmap tests and the cli's (which include
//! this file by its path), so that both read a drawing the same way.

/// A cell as drawn: where its rectangle is, the text written in it, and its fill.
#[derive(Debug)]
pub struct Cell {
    pub x: f64,
    pub y: f64,
    pub text: String,
    pub fill: String,
}

impl Cell {
    /// The fill's channels (`#RRGGBB`).
    pub fn rgb(&self) -> (u8, u8, u8) {
        let channel = |i: usize| u8::from_str_radix(&self.fill[i..i + 2], 16).unwrap();
        (channel(1), channel(3), channel(5))
    }
}

/// Every cell of an SVG, panel after panel (one under the other), each row left to right.
/// The panels' backgrounds hold many texts and the legends' steps none, so neither counts.
pub fn cells(svg: &str) -> Vec<Cell> {
    let doc = roxmltree::Document::parse(svg).expect("a heatmap is well-formed SVG");
    let number = |n: roxmltree::Node<'_, '_>, a: &str| -> f64 {
        n.attribute(a).and_then(|v| v.parse().ok()).unwrap_or(f64::NAN)
    };
    let texts: Vec<(f64, f64, String)> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| (number(n, "x"), number(n, "y"), n.text().unwrap_or("").trim().to_owned()))
        .collect();
    let mut out: Vec<Cell> = doc
        .descendants()
        .filter(|n| n.has_tag_name("rect") && n.attribute("fill").is_some_and(|f| f != "none"))
        .filter_map(|n| {
            let (x, y) = (number(n, "x"), number(n, "y"));
            let (w, h) = (number(n, "width"), number(n, "height"));
            let inside: Vec<&String> = texts
                .iter()
                .filter(|(tx, ty, _)| *tx > x && *tx < x + w && *ty > y && *ty < y + h)
                .map(|(_, _, t)| t)
                .collect();
            let fill = n.attribute("fill").unwrap_or("").to_owned();
            (inside.len() == 1).then(|| Cell { x, y, text: inside[0].clone(), fill })
        })
        .collect();
    out.sort_by(|a, b| a.y.total_cmp(&b.y).then(a.x.total_cmp(&b.x)));
    out
}

/// A cell's text as a number: thousands separators, sign and `%` dropped.
pub fn value(text: &str) -> f64 {
    text.replace([',', '%', '+'], "").parse().unwrap_or_else(|_| panic!("{text:?} is not a number"))
}
