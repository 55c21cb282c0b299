//! Reading one `evalscope perf` command line as EvalScope's argparse does: `--flag value`,
//! `--flag=value`, lists up to the next flag, `--stream` / `--no-stream`, the last of a
//! repeated flag winning. Unknown flags are errors naming the nearest known one.

use std::collections::BTreeMap;

use super::params::{self, Arity};
use super::ImportError;

/// The flags of one command line, with their values (booleans as `true`/`false`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parsed {
    values: BTreeMap<&'static str, Vec<String>>,
}

fn is_flag(token: &str) -> bool {
    token.starts_with("--") || token == "-n"
}

/// A boolean flag's value, if the token is one.
fn bool_word(token: &str) -> Option<bool> {
    match token.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Some(true),
        "false" | "0" | "no" => Some(false),
        _ => None,
    }
}

fn unknown(flag: &str) -> ImportError {
    ImportError::UnknownFlag {
        flag: flag.to_string(),
        suggestion: params::nearest(flag).map(str::to_string),
    }
}

/// The name a flag is kept under (`-n` is `--number`).
fn canonical(param: &params::Param) -> &'static str {
    if param.flag == "-n" {
        "--number"
    } else {
        param.flag
    }
}

/// Reads the arguments after `evalscope perf`.
pub fn parse(argv: &[String]) -> Result<Parsed, ImportError> {
    let mut parsed = Parsed::default();
    let mut i = 0;
    while i < argv.len() {
        let token = &argv[i];
        i += 1;
        if !is_flag(token) {
            return Err(ImportError::StrayValue {
                value: token.clone(),
            });
        }
        let (name, inline) = match token.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (token.as_str(), None),
        };
        let negated = name.strip_prefix("--no-").map(|n| format!("--{n}"));
        let (param, negated) = match params::find(name) {
            Some(p) => (p, false),
            None => match negated.as_deref().and_then(params::find) {
                Some(p) if p.arity == Arity::Bool => (p, true),
                _ => return Err(unknown(name)),
            },
        };
        let values = values(param, inline, negated, argv, &mut i)?;
        parsed.values.insert(canonical(param), values);
    }
    Ok(parsed)
}

/// The values of one flag: `inline` (after `=`), else the tokens from `argv[*i]` on.
fn values(
    param: &params::Param,
    inline: Option<String>,
    negated: bool,
    argv: &[String],
    i: &mut usize,
) -> Result<Vec<String>, ImportError> {
    let (arity, flag) = (param.arity, canonical(param));
    let mut values = Vec::new();
    match arity {
        Arity::Switch => {
            if inline.is_some() {
                return Err(ImportError::Value {
                    flag: flag.into(),
                    value: inline.unwrap_or_default(),
                    expected: "no value",
                });
            }
            values.push("true".to_string());
        }
        Arity::Bool => {
            let word = inline.or_else(|| {
                let next = argv.get(*i).filter(|t| bool_word(t).is_some()).cloned();
                *i += usize::from(next.is_some());
                next
            });
            let value = match word.as_deref() {
                None => true,
                Some(w) => bool_word(w).ok_or_else(|| ImportError::Value {
                    flag: flag.into(),
                    value: w.to_string(),
                    expected: "true or false",
                })?,
            };
            values.push((value != negated).to_string());
        }
        Arity::One => match inline {
            Some(v) => values.push(v),
            None => match argv.get(*i).filter(|t| !is_flag(t)) {
                Some(v) => {
                    values.push(v.clone());
                    *i += 1;
                }
                None => return Err(ImportError::MissingValue { flag: flag.into() }),
            },
        },
        Arity::Many | Arity::Any => {
            values.extend(inline);
            while let Some(v) = argv.get(*i).filter(|t| !is_flag(t)) {
                values.push(v.clone());
                *i += 1;
            }
            if values.is_empty() && arity == Arity::Many {
                return Err(ImportError::MissingValue { flag: flag.into() });
            }
        }
    }
    Ok(values)
}

impl Parsed {
    /// Whether the flag was given.
    pub fn has(&self, flag: &str) -> bool {
        self.values.contains_key(flag)
    }

    /// The flags given, in the parameter table's order.
    pub fn flags(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.values.keys().copied()
    }

    /// The single value of a flag.
    pub fn one(&self, flag: &str) -> Option<&str> {
        self.values
            .get(flag)
            .and_then(|v| v.last())
            .map(String::as_str)
    }

    /// Every value of a list flag (empty when not given).
    pub fn list(&self, flag: &str) -> &[String] {
        self.values.get(flag).map_or(&[], Vec::as_slice)
    }

    /// A switch or boolean flag: `None` when not given.
    pub fn flag(&self, flag: &str) -> Option<bool> {
        self.one(flag).map(|v| v == "true")
    }

    /// A number, read as `T`; an unreadable one is an error naming the flag.
    pub fn num<T: std::str::FromStr>(&self, flag: &str) -> Result<Option<T>, ImportError> {
        self.one(flag).map(|v| parse_num(flag, v)).transpose()
    }

    /// Every value of a list flag, read as `T`.
    pub(crate) fn nums<T: std::str::FromStr>(&self, flag: &str) -> Result<Vec<T>, ImportError> {
        self.list(flag).iter().map(|v| parse_num(flag, v)).collect()
    }
}

fn parse_num<T: std::str::FromStr>(flag: &str, value: &str) -> Result<T, ImportError> {
    value.trim().parse().map_err(|_| ImportError::Value {
        flag: flag.to_string(),
        value: value.to_string(),
        expected: "a number",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(text: &str) -> Vec<String> {
        text.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn lists_stop_at_the_next_flag_and_booleans_read_both_forms() {
        let p = parse(&argv(
            "--parallel 1 4 8 -n 64 128 256 --no-stream --apply-chat-template false --model=m --logprobs",
        ))
        .unwrap_or_default();
        assert_eq!(p.list("--parallel"), ["1", "4", "8"]);
        assert_eq!(p.nums::<u32>("--number").ok(), Some(vec![64, 128, 256]));
        assert_eq!(p.flag("--stream"), Some(false));
        assert_eq!(p.flag("--apply-chat-template"), Some(false));
        assert_eq!(p.one("--model"), Some("m"));
        assert_eq!(p.flag("--logprobs"), Some(true));
    }

    #[test]
    fn unknown_flags_and_missing_values_are_named() {
        let e = parse(&argv("--paralel 4")).err().map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("unknown evalscope perf argument `--paralel` (did you mean `--parallel`?)")
        );
        let e = parse(&argv("--model")).err().map(|e| e.to_string());
        assert_eq!(e.as_deref(), Some("`--model` needs a value"));
        let e = parse(&argv("--temperature x"))
            .ok()
            .map(|p| p.num::<f64>("--temperature"));
        assert!(matches!(e, Some(Err(ImportError::Value { .. }))));
    }

    #[test]
    fn suggestions_follow_the_one_did_you_mean_rule() {
        let hint = |args: &str| match parse(&argv(args)) {
            Err(ImportError::UnknownFlag { suggestion, .. }) => suggestion,
            other => panic!("{args}: {other:?}"),
        };
        // Nothing like a known flag, though three edits from `--url`: no guess.
        assert_eq!(hint("--foo 1"), None);
        // A dropped suffix, five edits from the flag: found.
        assert_eq!(hint("--tokenizer x").as_deref(), Some("--tokenizer-path"));
    }
}
