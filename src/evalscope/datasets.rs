//! EvalScope's `--dataset` modes and their length, image, multi-turn and
//! `--dataset-args` parameters → a perfplan dataset table; `--extra-args` split into the
//! request fields perfplan knows by name, the dataset keys embedding and rerank sets read,
//! and free-form body fields.

use serde_json::{json, Map, Value};

use super::args::Parsed;
use super::convert::lit;
use super::ImportError;
use crate::plan::ApiSpec;

/// Request fields `[defaults]` knows by their OpenAI names.
const REQUEST_FIELDS: [&str; 16] = [
    "ignore_eos",
    "min_tokens",
    "temperature",
    "top_p",
    "top_k",
    "stop",
    "stop_token_ids",
    "n",
    "logprobs",
    "top_logprobs",
    "frequency_penalty",
    "presence_penalty",
    "repetition_penalty",
    "seed",
    "stream",
    "max_completion_tokens",
];
/// Why EvalScope's length filter of file prompts is left out without a tokenizer.
const CHARACTER_FILTER: &str = "`--min-prompt-length` / `--max-prompt-length` without \
    `--tokenizer-path`: EvalScope filters by characters, perfplan by tokens with the model's \
    tokenizer, so the filter is left out (set `tokenizer` and `min_input_tokens` / \
    `max_input_tokens` to keep it)";
/// `--extra-args` keys that are dataset settings in perfplan.
const DATASET_EXTRA: [&str; 3] = ["batch_size", "num_documents", "document_length_ratio"];
/// `--dataset-args` keys perfplan's file and trace datasets read under the same names.
const DATASET_ARGS: [&str; 8] = [
    "target_input_len",
    "input_len_mode",
    "prefix_file",
    "prefix_role",
    "speed",
    "model_override",
    "model_mapping",
    "match_output_length",
];

/// Moves `--extra-args` into the request (known fields by name, `max_tokens` as
/// `output_tokens`, the rest under `extra`); dataset keys stay for `dataset`.
pub(super) fn split_extra(
    extra: Map<String, Value>,
    r: &mut Map<String, Value>,
    notes: &mut Vec<String>,
) {
    let mut free = Map::new();
    for (k, v) in extra {
        if REQUEST_FIELDS.contains(&k.as_str()) {
            r.insert(k, v);
        } else if k == "max_tokens" {
            r.insert("output_tokens".into(), v);
        } else if DATASET_EXTRA.contains(&k.as_str()) {
            r.insert(format!("__dataset.{k}"), v);
        } else {
            free.insert(k, v);
        }
    }
    if !free.is_empty() {
        notes.push(format!(
            "`--extra-args`: {} sent as written (`[defaults] extra`)",
            free.keys()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        r.insert("extra".into(), Value::Object(free));
    }
}

/// The perfplan kind of a dataset mode, and the JSONL field its prompts are in.
fn kind_of(
    mode: &str,
    multi_turn: bool,
) -> Result<(&'static str, Option<&'static str>), ImportError> {
    let unsupported = |why: &str| ImportError::Unsupported {
        flag: "--dataset".into(),
        value: mode.into(),
        why: why.into(),
    };
    Ok(match mode {
        "random" if multi_turn => ("random_multi_turn", None),
        "random" => ("random", None),
        "openqa" => ("jsonl", Some("question")),
        "longalpaca" => ("jsonl", Some("instruction")),
        "line_by_line" => ("lines", None),
        "share_gpt_zh" | "share_gpt_en" => ("sharegpt", None),
        "random_multi_turn" => ("random_multi_turn", None),
        "share_gpt_zh_multi_turn" | "share_gpt_en_multi_turn" | "custom_multi_turn" => ("conversations", None),
        "workload_trace" => ("trace", None),
        "flickr8k" => ("images", None),
        "random_vl" => ("random_images", None),
        "embedding" | "embedding_batch" => ("embedding", None),
        "random_embedding" | "random_embedding_batch" => ("random_embedding", None),
        "rerank" => ("rerank", None),
        "random_rerank" => ("random_rerank", None),
        "custom" => return Err(unsupported("a custom dataset is a Python parser; convert its data to JSONL (`kind = \"jsonl\"`, `field`) or one prompt per line (`kind = \"lines\"`)")),
        "kontext_bench" | "mmmu_multi_image" => return Err(unsupported("its local copy is Parquet, which perfplan does not read; export the images to a folder or JSONL for `kind = \"images\"`")),
        _ => return Err(unsupported("perfplan has no such dataset mode; see the book's \"Dataset kinds\", docs/src/loads/datasets.md")),
    })
}

fn range(lo: u32, hi: u32) -> Value {
    if lo == hi {
        json!(lo)
    } else {
        json!({"min": lo, "max": hi})
    }
}

/// The dataset table of a command line, named after its mode.
pub(super) fn dataset(
    p: &Parsed,
    api: ApiSpec,
    request: &mut Map<String, Value>,
    notes: &mut Vec<String>,
) -> Result<(String, Map<String, Value>), ImportError> {
    let mut d = Map::new();
    if let Some(text) = p
        .one("--prompt")
        .filter(|_| !p.has("--dataset") || p.one("--dataset") == Some("openqa"))
    {
        d.insert("kind".into(), "prompt".into());
        d.insert("text".into(), lit(text));
        return Ok(("prompt".into(), d));
    }
    let mode = p.one("--dataset").unwrap_or("openqa");
    let multi_turn = p.flag("--multi-turn").unwrap_or(false);
    let (kind, field) = kind_of(mode, multi_turn)?;
    d.insert("kind".into(), kind.into());
    dataset_path(p, mode, kind, &mut d, notes)?;
    if let Some(f) = field {
        d.insert("field".into(), f.into());
    }
    lengths(p, kind, &mut d, notes)?;
    if kind == "random_images" {
        images(p, &mut d, notes)?;
    } else if p.has("--image-num") && kind == "images" {
        d.insert(
            "images_per_request".into(),
            p.num::<u32>("--image-num")?.into(),
        );
    }
    if kind == "random_multi_turn" || kind == "conversations" {
        let lo = p.num::<u32>("--min-turns")?.unwrap_or(1);
        match (kind, p.num::<u32>("--max-turns")?) {
            (_, Some(hi)) => {
                d.insert("turns".into(), range(lo.min(hi), hi));
            }
            ("random_multi_turn", None) => {
                return Err(ImportError::MissingValue {
                    flag: "--max-turns (needed by random_multi_turn)".into(),
                });
            }
            _ => {}
        }
    }
    dataset_args(p, &mut d, notes)?;
    for k in DATASET_EXTRA {
        if let Some(v) = request.remove(&format!("__dataset.{k}")) {
            d.insert(k.into(), v);
        }
    }
    if kind == "random" && api == ApiSpec::Chat {
        notes.push("`random` prompts: perfplan counts `input_tokens` as the server sees them, chat template included; EvalScope's lengths leave the template out".into());
    }
    if kind == "random" {
        notes.push("`random` prompts come from the plan's seed: running the plan again against the same server sends the same prompts, which its prefix cache then holds (the run's verdict says `cache_leak`); give each suite its own seed (`--set plan.seed=N`) or reset the cache between suites".into());
    }
    Ok((mode.replace('_', "-"), d))
}

/// The dataset's `path`: `--dataset-path`, or for a hub dataset a variable naming the
/// local copy (perfplan never downloads).
fn dataset_path(
    p: &Parsed,
    mode: &str,
    kind: &str,
    d: &mut Map<String, Value>,
    notes: &mut Vec<String>,
) -> Result<(), ImportError> {
    let random = kind.starts_with("random");
    let path_required =
        matches!(kind, "lines" | "trace" | "embedding" | "rerank") || mode == "custom_multi_turn";
    match p.one("--dataset-path") {
        Some(path) => {
            d.insert("path".into(), lit(path));
        }
        None if random => {}
        None if path_required => {
            return Err(ImportError::MissingValue {
                flag: format!("--dataset-path (needed by --dataset {mode})"),
            });
        }
        None => {
            let var = format!("{}_PATH", mode.to_ascii_uppercase());
            let what = if mode == "flickr8k" {
                " (the folder of its WebDataset tar shards, test split)"
            } else {
                ""
            };
            notes.push(format!(
                "`--dataset {mode}` is downloaded by EvalScope; perfplan reads a local copy only: \
                 set ${var} to it{what}"
            ));
            d.insert("path".into(), Value::from(format!("${{{var}}}")));
        }
    }
    Ok(())
}

fn lengths(
    p: &Parsed,
    kind: &str,
    d: &mut Map<String, Value>,
    notes: &mut Vec<String>,
) -> Result<(), ImportError> {
    let min = p.num::<u32>("--min-prompt-length")?;
    let max = p.num::<u32>("--max-prompt-length")?;
    let prefix = p.num::<u32>("--prefix-length")?.unwrap_or(0);
    let lo = min.unwrap_or(0);
    let hi = max.unwrap_or(131_072).max(lo);
    match kind {
        "random" => {
            d.insert(
                "input_tokens".into(),
                range((lo + prefix).max(1), hi + prefix),
            );
            if prefix > 0 {
                d.insert("prefix_tokens".into(), prefix.into());
            }
        }
        "random_embedding" => {
            d.insert("input_tokens".into(), range(lo.max(1), hi));
        }
        "random_rerank" => {
            d.insert("query_tokens".into(), range(lo.max(1), hi));
        }
        "random_images" if min.is_some() || max.is_some() => {
            d.insert("text_tokens".into(), range(lo, hi));
        }
        "random_multi_turn" if min.is_some() || max.is_some() => {
            d.insert("user_tokens".into(), range(lo.max(1), hi));
        }
        "jsonl" | "lines" | "sharegpt"
            if !p.has("--tokenizer-path") && (min.is_some() || max.is_some()) =>
        {
            notes.push(CHARACTER_FILTER.into());
        }
        "jsonl" | "lines" | "sharegpt" if !p.has("--tokenizer-path") => {}
        "jsonl" | "lines" | "sharegpt" => {
            if let Some(v) = min.filter(|v| *v > 0) {
                d.insert("min_input_tokens".into(), v.into());
            }
            if let Some(v) = max {
                d.insert("max_input_tokens".into(), v.into());
            }
        }
        _ => {}
    }
    Ok(())
}

fn images(
    p: &Parsed,
    d: &mut Map<String, Value>,
    notes: &mut Vec<String>,
) -> Result<(), ImportError> {
    d.insert(
        "width".into(),
        p.num::<u32>("--image-width")?.unwrap_or(224).into(),
    );
    d.insert(
        "height".into(),
        p.num::<u32>("--image-height")?.unwrap_or(224).into(),
    );
    match p.one("--image-format").unwrap_or("RGB") {
        "RGB" | "png" | "PNG" => {
            d.insert("format".into(), "png".into());
        }
        "jpeg" | "JPEG" | "jpg" => {
            d.insert("format".into(), "jpeg".into());
        }
        other => {
            notes.push(format!(
                "`--image-format {other}`: perfplan draws RGB images as png or jpeg; png is used"
            ));
            d.insert("format".into(), "png".into());
        }
    }
    d.insert(
        "images_per_request".into(),
        p.num::<u32>("--image-num")?.unwrap_or(1).into(),
    );
    Ok(())
}

fn dataset_args(
    p: &Parsed,
    d: &mut Map<String, Value>,
    notes: &mut Vec<String>,
) -> Result<(), ImportError> {
    for flag in ["--multi-turn-args", "--dataset-args"] {
        let Some(text) = p.one(flag) else { continue };
        let parsed: Value = serde_json::from_str(text).map_err(|source| ImportError::Json {
            flag: flag.into(),
            source,
        })?;
        let Value::Object(args) = parsed else {
            return Err(ImportError::Value {
                flag: flag.into(),
                value: text.into(),
                expected: "a JSON object",
            });
        };
        for (k, v) in args {
            if DATASET_ARGS.contains(&k.as_str()) {
                d.insert(k, v);
            } else {
                notes.push(format!("`{flag}` key `{k}`: no equivalent, because perfplan's datasets have no such setting (see the book's \"Dataset kinds\", docs/src/loads/datasets.md)"));
            }
        }
    }
    Ok(())
}
