//! The public traces' files, read into length records: Mooncake's JSONL (`timestamp` in
//! ms since the trace's start, `input_length`, `output_length`, `hash_ids`), BurstGPT's
//! CSV (`Timestamp` in seconds since its start, `Model`, `Request tokens`, `Response
//! tokens`, …) and Azure's LLM inference CSVs (`TIMESTAMP` as a date and time,
//! `ContextTokens`, `GeneratedTokens`). Each line is read by one function, shared with
//! `check`; a bad line is an error naming it. Knows nothing of tokenizers or HTTP.

use serde_json::Value;

use super::source::{json_line, numbered_lines, LineError};
use crate::plan::TraceFormat;

/// One request of a public trace: when, how long in and out, and what it shares.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LengthRecord {
    /// Microseconds on the trace's own clock (only differences matter).
    pub at_us: i128,
    /// 1-based line of the file.
    pub line: usize,
    pub input: u32,
    pub output: u32,
    /// Mooncake: the ids of the prompt's blocks, in order (empty elsewhere).
    pub hash_ids: Vec<u64>,
    /// BurstGPT: the recorded model (`Model`).
    pub model: Option<String>,
}

/// A CSV format's columns: (timestamp, input, output, model), as published.
fn columns(
    format: TraceFormat,
) -> (
    &'static str,
    &'static str,
    &'static str,
    Option<&'static str>,
) {
    match format {
        TraceFormat::Burstgpt => (
            "Timestamp",
            "Request tokens",
            "Response tokens",
            Some("Model"),
        ),
        _ => ("TIMESTAMP", "ContextTokens", "GeneratedTokens", None),
    }
}

/// Every line of a file of `format`, each a record or the reason it is not one, with
/// its line. A CSV's header is line 1 (a header without a needed column is an error
/// there, and no row is read).
pub(crate) fn records(
    text: &str,
    format: TraceFormat,
) -> Vec<Result<LengthRecord, (usize, LineError)>> {
    let mut lines = numbered_lines(text);
    if format == TraceFormat::Mooncake {
        return lines
            .map(|(line, raw)| mooncake(raw, line).map_err(|e| (line, e)))
            .collect();
    }
    let Some((head_line, head)) = lines.next() else {
        return Vec::new();
    };
    let header = match Header::new(head, format) {
        Ok(h) => h,
        Err(e) => return vec![Err((head_line, e))],
    };
    lines
        .map(|(line, raw)| header.row(raw, line, format).map_err(|e| (line, e)))
        .collect()
}

/// One Mooncake line.
fn mooncake(raw: &str, line: usize) -> Result<LengthRecord, LineError> {
    let v = json_line(raw)?;
    let ms = v
        .get("timestamp")
        .ok_or("no `timestamp` (ms since the trace's start)")?;
    let at_us = offset_us(ms, 1e3, "timestamp")?;
    let count = |key: &str| -> Result<u32, LineError> {
        let n = v.get(key).ok_or_else(|| format!("no `{key}`"))?;
        tokens(n.as_u64(), key, &n.to_string())
    };
    let hash_ids = match v.get("hash_ids") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(ids)) => ids
            .iter()
            .map(|id| {
                id.as_u64()
                    .ok_or("`hash_ids` must be non-negative integers")
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("`hash_ids` must be a list of integers".into()),
    };
    Ok(LengthRecord {
        at_us,
        line,
        input: count("input_length")?,
        output: count("output_length")?,
        hash_ids,
        model: None,
    })
}

/// A count of tokens: a non-negative integer that fits in 32 bits.
fn tokens(n: Option<u64>, key: &str, text: &str) -> Result<u32, LineError> {
    n.and_then(|n| u32::try_from(n).ok()).ok_or_else(|| {
        format!("`{key}` {text} is not a token count (a non-negative integer)").into()
    })
}

/// A non-negative offset in `unit`s (ms: 1e3, s: 1e6 µs per unit), in µs.
fn offset_us(v: &Value, per_unit: f64, key: &str) -> Result<i128, LineError> {
    let x = v
        .as_f64()
        .filter(|x| x.is_finite() && *x >= 0.0 && *x < 1e15)
        .ok_or_else(|| format!("`{key}` {v} is not a non-negative number"))?;
    Ok((x * per_unit).round() as i128)
}

/// A CSV header: where each needed column is.
struct Header {
    at: usize,
    input: usize,
    output: usize,
    model: Option<usize>,
    width: usize,
}

impl Header {
    fn new(raw: &str, format: TraceFormat) -> Result<Header, LineError> {
        let names = split_csv(raw);
        let (at, input, output, model) = columns(format);
        let find = |name: &str| -> Result<usize, LineError> {
            names
                .iter()
                .position(|n| n.trim().eq_ignore_ascii_case(name))
                .ok_or_else(|| {
                    format!(
                        "the header has no `{name}` column (it has: {})",
                        names.join(", ")
                    )
                    .into()
                })
        };
        Ok(Header {
            at: find(at)?,
            input: find(input)?,
            output: find(output)?,
            model: model.map(find).transpose()?,
            width: names.len(),
        })
    }

    fn row(&self, raw: &str, line: usize, format: TraceFormat) -> Result<LengthRecord, LineError> {
        let cells = split_csv(raw);
        if cells.len() < self.width {
            return Err(
                format!("{} fields where the header has {}", cells.len(), self.width).into(),
            );
        }
        let (at_name, in_name, out_name, _) = columns(format);
        let cell = |i: usize| cells[i].trim();
        let at_us = match format {
            TraceFormat::Azure => super::trace::timestamp_us(&Value::from(cell(self.at)))
                .map_err(|e| e.replace("`timestamp`", &format!("`{at_name}`")))?,
            _ => {
                let v = cell(self.at)
                    .parse::<f64>()
                    .map(Value::from)
                    .unwrap_or_else(|_| Value::from(cell(self.at)));
                offset_us(&v, 1e6, at_name)?
            }
        };
        let count = |i: usize, name: &str| {
            let text = cell(i);
            // BurstGPT writes counts as integers; a `.0` is tolerated.
            let n = text.parse::<u64>().ok().or_else(|| {
                text.parse::<f64>()
                    .ok()
                    .filter(|x| x.fract() == 0.0 && *x >= 0.0)
                    .map(|x| x as u64)
            });
            tokens(n, name, &format!("{text:?}"))
        };
        Ok(LengthRecord {
            at_us,
            line,
            input: count(self.input, in_name)?,
            output: count(self.output, out_name)?,
            hash_ids: Vec::new(),
            model: self
                .model
                .map(|i| cell(i).to_string())
                .filter(|m| !m.is_empty()),
        })
    }
}

/// The fields of one CSV line: commas split, double quotes group (`""` is a quote).
fn split_csv(raw: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut field)),
            _ => field.push(c),
        }
    }
    out.push(field);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str, format: TraceFormat) -> Vec<LengthRecord> {
        records(text, format)
            .into_iter()
            .map(|r| {
                r.map_err(|(l, e)| format!("{l}: {}", e.describe()))
                    .unwrap()
            })
            .collect()
    }

    fn errors(text: &str, format: TraceFormat) -> Vec<(usize, String)> {
        records(text, format)
            .into_iter()
            .filter_map(|r| r.err().map(|(l, e)| (l, e.describe())))
            .collect()
    }

    #[test]
    fn mooncake_lines_read_and_bad_ones_are_located() {
        let text = "{\"timestamp\": 0, \"input_length\": 700, \"output_length\": 5, \"hash_ids\": [0, 1]}\n\
                    {\"timestamp\": 1500, \"input_length\": 10, \"output_length\": 2, \"hash_ids\": [0]}\n";
        let r = ok(text, TraceFormat::Mooncake);
        assert_eq!((r[1].at_us, r[1].input, r[1].output), (1_500_000, 10, 2));
        assert_eq!(r[0].hash_ids, [0, 1]);
        let bad = "{\"timestamp\": 0, \"input_length\": 7, \"output_length\": 5}\n\
                   {\"timestamp\": -1, \"input_length\": 7, \"output_length\": 5}\n\
                   {\"timestamp\": 3, \"input_length\": \"x\", \"output_length\": 5}\n\
                   {\"timestamp\": 3, \"input_length\": 7, \"output_length\": 5, \"hash_ids\": [\"a\"]}\n\
                   not json\n";
        let e = errors(bad, TraceFormat::Mooncake);
        assert_eq!(
            e.iter().map(|(l, _)| *l).collect::<Vec<_>>(),
            [2, 3, 4, 5],
            "{e:?}"
        );
        assert!(e[0].1.contains("`timestamp` -1"), "{e:?}");
        assert!(e[1].1.contains("`input_length` \"x\""), "{e:?}");
    }

    #[test]
    fn burstgpt_and_azure_rows_read_by_their_headers() {
        let burst = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n\
                     5,ChatGPT,472,18,490,Conversation log\n\
                     7.5,GPT-4,1087,0,1087,API log\n\
                     8,GPT-4,abc,1,1,API log\n";
        let e = errors(burst, TraceFormat::Burstgpt);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].0, 4);
        assert!(e[0].1.contains("`Request tokens` \"abc\""), "{e:?}");
        let r: Vec<_> = records(burst, TraceFormat::Burstgpt)
            .into_iter()
            .filter_map(Result::ok)
            .collect();
        assert_eq!((r[1].at_us, r[1].input, r[1].output), (7_500_000, 1087, 0));
        assert_eq!(r[0].model.as_deref(), Some("ChatGPT"));
        let azure = "TIMESTAMP,ContextTokens,GeneratedTokens\n\
                     2023-11-16 18:15:46.6805900,374,44\n\
                     2023-11-16 18:15:50.9951690,396,109\n";
        let r = ok(azure, TraceFormat::Azure);
        assert_eq!(r[1].at_us - r[0].at_us, 4_314_579);
        assert_eq!((r[0].input, r[0].output), (374, 44));
        let e = errors(
            "TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,1,2\n",
            TraceFormat::Azure,
        );
        assert_eq!(e[0].0, 2);
        assert!(e[0].1.contains("`TIMESTAMP` \"yesterday\""), "{e:?}");
        let e = errors(
            "time,ContextTokens,GeneratedTokens\n1,2,3\n",
            TraceFormat::Azure,
        );
        assert_eq!(e.len(), 1);
        assert!(
            e[0].0 == 1 && e[0].1.contains("no `TIMESTAMP` column"),
            "{e:?}"
        );
        assert_eq!(split_csv("a,\"b,\"\"c\"\"\",d"), ["a", "b,\"c\"", "d"]);
    }
}
