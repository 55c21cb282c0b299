//! Every parameter of `evalscope perf` (the reference's parameter list, plus the aliases
//! and newer flags its parser accepts), how many values it takes, and where it lands in
//! a plan — or why it has no equivalent. The book's import table (guide/evalscope.md) is
//! this table.

/// How many values a flag takes (as EvalScope's argparse reads them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arity {
    /// `--flag` alone.
    Switch,
    /// `--flag VALUE`.
    One,
    /// `--flag V1 V2 …` (one or more).
    Many,
    /// `--flag [V1 …]` (zero or more).
    Any,
    /// `--flag` / `--no-flag`, or `--flag true|false`.
    Bool,
}

/// Where a parameter goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mapping {
    /// The plan keys it becomes.
    Key(&'static str),
    /// No plan key: why, and what to do instead.
    None(&'static str),
}

/// One `evalscope perf` parameter.
#[derive(Debug, Clone, Copy)]
pub struct Param {
    pub flag: &'static str,
    pub arity: Arity,
    pub mapping: Mapping,
}

const fn key(flag: &'static str, arity: Arity, to: &'static str) -> Param {
    Param {
        flag,
        arity,
        mapping: Mapping::Key(to),
    }
}

const fn none(flag: &'static str, arity: Arity, because: &'static str) -> Param {
    Param {
        flag,
        arity,
        mapping: Mapping::None(because),
    }
}

use Arity::{Any, Bool, Many, One, Switch};

/// Every parameter, in the reference's order.
pub(crate) const PARAMS: &[Param] = &[
    key("--model", One, "`models.NAME.served_name` (NAME from its last path part); optional with `--dataset workload_trace`, as in EvalScope: every record keeps its own model, and the plan's model (`trace`) only names the runs"),
    key("--url", One, "endpoint `base_url`; its path sets `api` (and `paths` when it is not the usual route)"),
    key("--name", One, "`[plan] name` (names the output folder)"),
    key("--api", One, "endpoint `api` (`openai` → chat or completions by the URL, `openai_responses` → responses, `openai_embedding` → embeddings, `openai_rerank` → rerank); `local_vllm` → endpoint `launch = \"vllm serve MODEL --port {port}\"`; `local` (transformers in EvalScope's own process) → the same `launch`, with a note: perfplan benchmarks a server"),
    key("--port", One, "with `--api local_vllm`: the port in `launch` and `base_url`"),
    none("--attn-implementation", One, "it configures EvalScope's in-process transformers inference; perfplan benchmarks servers over HTTP (start one with `launch`)"),
    key("--api-key", One, "endpoint `api_key_env = \"API_KEY\"`: the plan names the variable, never the key; export API_KEY before `perfplan run`"),
    none("--debug", Switch, "it is a run option, not a plan setting: `perfplan run PLAN --debug` logs every body and response"),
    key("--total-timeout", One, "endpoint `timeouts.total`"),
    key("--connect-timeout", One, "endpoint `timeouts.connect`"),
    key("--read-timeout", One, "endpoint `timeouts.read`"),
    key("--headers", Many, "endpoint `headers` (secret-looking values become `${PERFPLAN_HEADER_NAME}` references)"),
    key("--no-test-connection", Switch, "endpoint `connection_test = false`"),
    key("--parallel", Many, "`load` entries' `concurrency`, paired with `--number` position by position"),
    key("-n", Many, "as `--number`"),
    key("--number", Many, "`load` entries' `requests`"),
    key("--rate", Many, "`load` entries' `rate` (closed loop: `rate` with `max_in_flight` = `--parallel`; `-1`: no pacing)"),
    none("--log-every-n-query", One, "it is a run option, and by time rather than by count: `perfplan run PLAN --progress-every 10s` writes a progress line every interval (on by default where stderr is not a terminal, so a stalled server still gets lines)"),
    key("--stream", Bool, "`[defaults] stream`"),
    key("--sleep-interval", One, "`[plan] pause_between_runs`"),
    key("--open-loop", Switch, "`load` entries with `rate` (open loop, no `max_in_flight`)"),
    key("--warmup-num", One, "`load` entries' `warmup` (a ratio becomes each tier's count, max(1, ⌊ratio × number⌋))"),
    key("--duration", One, "`load` entries' `duration`"),
    key("--sla-auto-tune", Switch, "`load = { search = … }`, one search per `--sla-params` criterion, each also needing `success_ratio >= 1` (as EvalScope tunes each criterion on its own)"),
    key("--sla-variable", One, "the search's `search` (`parallel` → `concurrency`, `rate` → `rate`)"),
    key("--sla-params", One, "the search's `slo` (`avg_ttft` → `ttft_mean`, `p99_latency` → `latency_p99`, … seconds become `s`; `max`/`min` objectives kept)"),
    key("--sla-upper-bound", One, "the search's `max`"),
    key("--sla-lower-bound", One, "the search's `min`"),
    key("--sla-fixed-parallel", One, "a rate search's `max_in_flight`"),
    key("--sla-num-runs", One, "the search's `trials` (EvalScope's default 3 is written out; perfplan pools the trials' requests instead of averaging)"),
    key("--sla-number-multiplier", One, "the search's `requests_per_step = \"Nx\"` (EvalScope's default 2 is written out)"),
    key("--dataset", One, "`datasets.NAME.kind` (`random`, `line_by_line` → `lines`, `openqa`/`longalpaca` → `jsonl` with `field`, `share_gpt_*` → `sharegpt`, `flickr8k` → `images`, `random_vl` → `random_images`, `*_multi_turn` → `random_multi_turn`/`conversations`, `workload_trace` → `trace`, embedding and rerank kinds)"),
    key("--dataset-path", One, "the dataset's `path` (hub datasets without it get `path = \"${NAME_PATH}\"`: perfplan never downloads)"),
    none("--data-source", One, "perfplan never downloads from ModelScope or Hugging Face; it reads local files (`local` needs nothing)"),
    key("--dataset-args", One, "the dataset's keys of the same names (`target_input_len`, `input_len_mode`, `prefix_file`, `prefix_role`, `speed`, `model_override`, `model_mapping`, `match_output_length`)"),
    key("--multi-turn-args", One, "as `--dataset-args` (EvalScope's deprecated name)"),
    key("--max-prompt-length", One, "`random`: `input_tokens` max (plus `--prefix-length`); file datasets: `max_input_tokens` (with `--tokenizer-path`; EvalScope's character filter without one is left out, with a note); image, embedding and rerank kinds: their text length"),
    key("--min-prompt-length", One, "`random`: `input_tokens` min (plus `--prefix-length`); file datasets: `min_input_tokens` (as `--max-prompt-length`)"),
    key("--prefix-length", One, "`random`: `prefix_tokens` (counted inside `input_tokens`, so the total stays as EvalScope's)"),
    key("--image-width", One, "`random_images` `width`"),
    key("--image-height", One, "`random_images` `height`"),
    key("--image-format", One, "`random_images` `format` (`RGB`, EvalScope's default colour mode, is perfplan's `png`)"),
    key("--image-num", One, "`images_per_request`"),
    none("--image-patch-size", One, "it estimates image tokens client-side; perfplan takes visual tokens from the server's usage"),
    key("--prompt", One, "a `prompt` dataset's `text` (`@file` kept)"),
    key("--query-template", One, "`[defaults] body_template` (`%m`, `%p` and the messages become `{{ model }}`, `{{ prompt }}`, `{{ messages }}`; the command line's request fields are added over it, as EvalScope does)"),
    key("--apply-chat-template", Bool, "`models.NAME.chat_template` (`on` / `off`: whether prompt lengths count the chat template)"),
    key("--tokenize-prompt", Switch, "`[matrix] tokenize_prompt = true` (token ids to `/v1/completions`)"),
    key("--multi-turn", Switch, "a multi-turn dataset kind (`random_multi_turn` or `conversations`)"),
    key("--min-turns", One, "`turns` min"),
    key("--max-turns", One, "`turns` max"),
    none("--num-workers", One, "perfplan builds prompts in its own process before a run starts; there is no worker pool to size"),
    none("--dataset-offset", One, "perfplan's cold runs never share prompts (the seed is mixed with each run's id), so no offset is needed"),
    key("--tokenizer-path", One, "`models.NAME.tokenizer` (a local folder; EvalScope's hub ids are not downloaded)"),
    key("--frequency-penalty", One, "`[defaults] frequency_penalty`"),
    key("--repetition-penalty", One, "`[defaults] repetition_penalty`"),
    key("--logprobs", Switch, "`[defaults] logprobs = true`"),
    key("--max-tokens", Many, "`[defaults] output_tokens` (two values: `{ min, max }`; EvalScope's default 2048 is written out)"),
    key("--min-tokens", One, "`[defaults] min_tokens`"),
    key("--n-choices", One, "`[defaults] n`"),
    key("--seed", One, "`[plan] seed` and `[defaults] seed` (EvalScope also sends it to the server)"),
    key("--stop", Any, "`[defaults] stop`"),
    key("--stop-token-ids", Any, "`[defaults] stop_token_ids`"),
    key("--temperature", One, "`[defaults] temperature` (EvalScope's default 0 is written out)"),
    key("--top-p", One, "`[defaults] top_p`"),
    key("--top-k", One, "`[defaults] top_k`"),
    key("--extra-args", One, "request fields perfplan knows by name (`ignore_eos`, `min_tokens`, …), the embedding and rerank datasets' `batch_size`, `num_documents`, `document_length_ratio`, the rest `[defaults] extra`"),
    none("--visualizer", One, "perfplan writes a self-contained `report.html` and CSV / JSON exports (`perfplan report DB --format csv|json`) for any dashboard"),
    none("--enable-progress-tracker", Switch, "it is a run option: `perfplan run PLAN --progress-json FILE` writes progress as JSON lines"),
    none("--wandb-api-key", One, "no visualizer upload (and no secret in a plan); see `--visualizer`"),
    none("--swanlab-api-key", One, "no visualizer upload (and no secret in a plan); see `--visualizer`"),
    none("--swanlab-host", One, "no visualizer upload; see `--visualizer`"),
    none("--outputs-dir", One, "it is a run option: `perfplan run PLAN --out DIR` (default `outputs/<plan name>/<UTC time>/`)"),
    none("--no-timestamp", Switch, "it is a run option: `perfplan run PLAN --out DIR` names the exact folder"),
    none("--db-commit-interval", One, "perfplan writes records in batches (512 rows or 200 ms) on a thread of its own; nothing to tune"),
    none("--queue-size-multiplier", One, "perfplan builds a run's requests before sending; there is no request queue to size"),
    none("--in-flight-task-multiplier", One, "one driver task keeps exactly `concurrency` (or `max_in_flight`) requests in flight; there are no extra tasks to size"),
];

/// The parameter of a flag as written (`-n` and `--number` are one).
pub fn find(flag: &str) -> Option<&'static Param> {
    PARAMS.iter().find(|p| p.flag == flag)
}

/// The known flag nearest to a misspelt one (the one rule: `crate::suggest`).
pub fn nearest(flag: &str) -> Option<&'static str> {
    crate::suggest::nearest(flag, PARAMS.iter().map(|p| p.flag))
}
