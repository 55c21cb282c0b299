//! "Did you mean …?": the one rule for the nearest valid name to a misspelt one, used by
//! every message that offers one (plan keys and references, `--only` and `--set` keys,
//! metric names in gates, SLOs and reports, EvalScope flags on `import`). A leaf: knows
//! nothing of the crate.
//!
//! The rule: the candidate with the highest Jaro–Winkler similarity to the misspelt name,
//! if it is at least [`MIN_SIMILARITY`]; of equal scores the candidate listed last wins
//! (callers list in a fixed order: the metric vocabulary's, a table's sorted keys), so
//! `ttft_p98` gets `ttft_p99` rather than `ttft_p90`.
//! Jaro–Winkler rewards a shared beginning, which is how names are misspelt (a missing
//! plural, a dropped suffix: `input_token`, `--tokenizer`), and unlike an edit-distance
//! cut-off it does not offer a short unrelated name for a short wrong one (`--foo` is not
//! `--url`, though they are three edits apart).

/// The least similarity (0..=1) at which a name is offered.
pub(crate) const MIN_SIMILARITY: f64 = 0.8;

/// The nearest of `candidates` to `wrong`, if any is close enough.
pub fn nearest<'a>(wrong: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut best: Option<(f64, &'a str)> = None;
    for c in candidates {
        let score = strsim::jaro_winkler(wrong, c);
        if score < MIN_SIMILARITY {
            continue;
        }
        best = match best {
            Some((s, b)) if s > score => Some((s, b)),
            _ => Some((score, c)),
        };
    }
    best.map(|(_, c)| c)
}

/// `nearest`, where case does not tell names apart (a server's model names): a candidate
/// equal to `wrong` but for case is the one; else the nearest by the same rule, the names
/// compared in lower case.
pub(crate) fn nearest_ignoring_case<'a>(
    wrong: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let candidates: Vec<&'a str> = candidates.into_iter().collect();
    let lower = wrong.to_lowercase();
    if let Some(same) = candidates.iter().find(|c| c.to_lowercase() == lower) {
        return Some(same);
    }
    let lowered: Vec<String> = candidates.iter().map(|c| c.to_lowercase()).collect();
    let near = nearest(&lower, lowered.iter().map(String::as_str))?;
    let i = lowered.iter().position(|l| l == near)?;
    candidates.get(i).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_does_not_tell_model_names_apart() {
        let served = ["Qwen3-8B", "Llama-3.1-8B-Instruct"];
        assert_eq!(nearest_ignoring_case("qwen3-8b", served), Some("Qwen3-8B"));
        assert_eq!(nearest_ignoring_case("QWEN3-8", served), Some("Qwen3-8B"));
        assert_eq!(nearest_ignoring_case("gpt-4", served), None);
    }

    #[test]
    fn near_names_only() {
        let keys = ["input_tokens", "prefix_tokens", "kind"];
        assert_eq!(nearest("input_token", keys), Some("input_tokens"));
        assert_eq!(nearest("zzz", keys), None);
        assert_eq!(nearest("kind", keys), Some("kind"));
        assert_eq!(nearest("x", std::iter::empty()), None);
    }

    #[test]
    fn short_unrelated_names_are_not_offered() {
        // Three edits apart, nothing alike: an edit-distance cut-off of 3 offered `--url`.
        let flags = ["--url", "--model", "-n", "--tokenizer-path"];
        assert_eq!(nearest("--foo", flags), None);
        assert_eq!(nearest("-x", flags), None);
        // A dropped suffix, five edits away, is still found.
        assert_eq!(nearest("--tokenizer", flags), Some("--tokenizer-path"));
    }

    #[test]
    fn ties_go_to_the_candidate_listed_last() {
        let stats = ["ttft_p50", "ttft_p90", "ttft_p95", "ttft_p99", "ttft_p999"];
        assert_eq!(
            strsim::jaro_winkler("ttft_p98", "ttft_p90"),
            strsim::jaro_winkler("ttft_p98", "ttft_p99")
        );
        assert_eq!(nearest("ttft_p98", stats), Some("ttft_p99"));
        assert_eq!(nearest("abcdx", ["abcdy", "abcdz"]), Some("abcdz"));
    }
}
