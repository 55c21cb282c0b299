//! The Prometheus text exposition format, read line by line: each sample's name, its
//! label set and value. Comments, blank lines and lines that do not parse are skipped;
//! values that are not finite numbers (`NaN`, `+Inf` as a value) are skipped too. Pure
//! text handling: knows no metric's meaning.

/// One sample line: `name{labels} value [timestamp]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample<'a> {
    pub name: &'a str,
    /// The text between `{` and `}` (empty without labels).
    pub labels: &'a str,
    pub value: f64,
}

impl<'a> Sample<'a> {
    /// The value of label `key`, as written (escapes left in: perfplan reads only `le`,
    /// `quantile` and the like, which hold none).
    pub fn label(&self, key: &str) -> Option<&'a str> {
        labels(self.labels).find_map(|(k, v)| (k == key).then_some(v))
    }

    /// The `le` bound of a histogram bucket line (`+Inf` as infinity).
    pub fn le(&self) -> Option<f64> {
        number(self.label("le")?)
    }
}

/// Every sample of a page, in page order.
pub fn samples(text: &str) -> impl Iterator<Item = Sample<'_>> {
    text.lines().filter_map(|line| {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            return None;
        }
        sample(line)
    })
}

fn number(text: &str) -> Option<f64> {
    match text {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        t => t.parse::<f64>().ok(),
    }
}

fn sample(line: &str) -> Option<Sample<'_>> {
    let name_end = line
        .find(|c: char| c == '{' || c.is_whitespace())
        .unwrap_or(line.len());
    let name = &line[..name_end];
    let mut rest = &line[name_end..];
    let mut label_text = "";
    if rest.starts_with('{') {
        let end = labels_end(rest)?;
        label_text = &rest[1..end - 1];
        rest = &rest[end..];
    }
    let value = number(rest.split_whitespace().next()?)?;
    (!name.is_empty() && value.is_finite()).then_some(Sample {
        name,
        labels: label_text,
        value,
    })
}

/// Byte offset just past the `}` closing a label set (quoted values may hold `}`).
fn labels_end(text: &str) -> Option<usize> {
    let mut in_quotes = false;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_quotes => escaped = true,
            '"' => in_quotes = !in_quotes,
            '}' if !in_quotes => return Some(i + 1),
            _ => {}
        }
    }
    None
}

/// `key="value"` pairs of a label set (a malformed rest ends the list).
fn labels(text: &str) -> impl Iterator<Item = (&str, &str)> {
    let mut rest = text;
    std::iter::from_fn(move || {
        rest = rest.trim_start_matches([',', ' ']);
        let eq = rest.find('=')?;
        let key = rest[..eq].trim();
        let after = rest[eq + 1..].trim_start().strip_prefix('"')?;
        let mut escaped = false;
        let close = after.char_indices().find_map(|(i, c)| match c {
            _ if escaped => {
                escaped = false;
                None
            }
            '\\' => {
                escaped = true;
                None
            }
            '"' => Some(i),
            _ => None,
        })?;
        let value = &after[..close];
        rest = &after[close + 1..];
        Some((key, value))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_labels_and_values() {
        let text = "# TYPE h histogram\n\
                    h_bucket{model=\"a,b\",le=\"0.5\"} 3\n\
                    h_bucket{le=\"+Inf\",model=\"q\\\"}\"} 4 1700000000000\n\
                    plain 2.5e1\n\
                    nan NaN\n\
                    broken{le=\"1\" 3\n\
                    \n";
        let all: Vec<Sample> = samples(text).collect();
        assert_eq!(all.len(), 3);
        assert_eq!(all[0].name, "h_bucket");
        assert_eq!(all[0].le(), Some(0.5));
        assert_eq!(all[0].label("model"), Some("a,b"));
        assert_eq!(all[1].le(), Some(f64::INFINITY));
        assert_eq!(all[1].value, 4.0);
        assert_eq!(all[2].labels, "");
        assert_eq!(all[2].value, 25.0);
        assert_eq!(all[2].le(), None);
    }
}
