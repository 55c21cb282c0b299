//! The suite's `temperature = 0` consistency check of golden answers (`[checks]`): a
//! run's golden answers against those of the earlier runs of the suite with the same
//! model. Each golden case's reference is the first answer the earliest such run gave
//! it; a run with any answer other than its case's reference gets an `answers_changed`
//! warning naming that run, how many answers changed and one of them. Reads the golden
//! answers the store keeps (phase `check`, `answer_text`), so a resumed suite compares
//! against runs of an earlier process too.

use std::collections::BTreeMap;

use crate::planner::RunSpec;
use crate::record::CHECK_ITEM_BASE;
use crate::store::Store;
use crate::trust::{Code, RunWarning};

/// Longest excerpt of an answer quoted in the warning.
const QUOTE: usize = 60;

fn quote(text: &str) -> String {
    let t = text.trim();
    match t.char_indices().nth(QUOTE) {
        Some((at, _)) => format!("{}…", &t[..at]),
        None => t.to_string(),
    }
}

/// The earlier run a golden case's reference answer comes from.
pub(crate) struct Earlier<'a> {
    pub id: &'a str,
    pub ordinal: u32,
}

/// The `answers_changed` warning of `run`, from every golden answer stored so far
/// (`(run id, ordinal, case, text)` by ordinal) and the model of each earlier run.
pub(crate) fn changed(
    run: &RunSpec,
    answers: &[(String, u32, u64, String)],
    same_model: &dyn Fn(&str) -> bool,
) -> Option<RunWarning> {
    let checks = run.settings.checks.as_ref()?;
    if checks.temperature() != 0.0 {
        return None;
    }
    let mut reference: BTreeMap<u64, (Earlier<'_>, &str)> = BTreeMap::new();
    for (id, ordinal, case, text) in answers {
        if *ordinal as usize >= run.ordinal || id == &run.id || !same_model(id) {
            continue;
        }
        let earlier = Earlier {
            id,
            ordinal: *ordinal,
        };
        reference.entry(*case).or_insert((earlier, text.trim()));
    }
    let (mut compared, mut differ) = (0u64, Vec::new());
    for (_, _, case, text) in answers.iter().filter(|a| a.0 == run.id) {
        let Some((earlier, want)) = reference.get(case) else {
            continue;
        };
        compared += 1;
        if text.trim() != *want {
            differ.push((earlier, *case, *want, text.trim()));
        }
    }
    let (first, case, want, got) = differ.first()?;
    Some(RunWarning::new(
        Code::AnswersChanged,
        format!(
            "{} of {compared} golden answers at temperature 0 differ from run #{} ({}): \
             golden case {} answered `{}` there, `{}` here; the server's answers change \
             with the load or the settings between the runs",
            differ.len(),
            first.ordinal,
            first.id,
            case.saturating_sub(CHECK_ITEM_BASE) + 1,
            quote(want),
            quote(got),
        ),
    ))
}

/// The run's `answers_changed` warning, from the golden answers stored so far (none
/// when it has no `[checks]`, or the answers cannot be read: a note then).
pub(crate) fn from_store(store: &std::sync::Mutex<Store>, run: &RunSpec) -> Option<RunWarning> {
    run.settings.checks.as_ref()?;
    let store = store.lock().ok()?;
    let answers = match store.golden_answers() {
        Ok(a) => a,
        Err(e) => {
            return Some(RunWarning::note(format!(
                "[checks]: the golden answers of earlier runs could not be read ({}); \
                 answers were not compared across runs",
                crate::control::chain(&e)
            )))
        }
    };
    let model = &run.settings.model.name;
    let runs = store.runs().unwrap_or_default();
    let same_model = |id: &str| {
        runs.iter().any(|r| {
            r.id == id && r.settings.pointer("/model/name").and_then(|v| v.as_str()) == Some(model)
        })
    };
    changed(run, &answers, &same_model)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::ChecksSpec;
    use crate::planner::order::tests::runs;

    fn with_checks(temperature: Option<f64>) -> Vec<RunSpec> {
        let mut all = runs("");
        for r in &mut all {
            r.settings.checks = Some(ChecksSpec {
                share: None,
                per_run: Some(2),
                path: None,
                output_tokens: None,
                temperature,
            });
        }
        all
    }

    fn answer(run: &RunSpec, case: u64, text: &str) -> (String, u32, u64, String) {
        (
            run.id.clone(),
            run.ordinal as u32,
            CHECK_ITEM_BASE + case,
            text.to_string(),
        )
    }

    #[test]
    fn a_changed_answer_names_the_earlier_run_and_the_same_ones_say_nothing() {
        let all = with_checks(None);
        let (first, second) = (&all[0], &all[1]);
        let mut answers = vec![
            answer(first, 0, "42"),
            answer(first, 1, "{\"a\": 1}"),
            answer(second, 0, " 42\n"),
            answer(second, 1, "{\"a\": 1}"),
        ];
        let any = |_: &str| true;
        assert_eq!(changed(second, &answers, &any), None, "trimmed alike");
        assert_eq!(
            changed(first, &answers, &any),
            None,
            "nothing before the first"
        );
        answers[3].3 = "{\"a\": 2}".into();
        let w = changed(second, &answers, &any).unwrap();
        assert_eq!(w.code, Code::AnswersChanged);
        assert_eq!(
            w.text,
            format!(
                "1 of 2 golden answers at temperature 0 differ from run #1 ({}): golden case 2 \
                 answered `{{\"a\": 1}}` there, `{{\"a\": 2}}` here; the server's answers \
                 change with the load or the settings between the runs",
                first.id
            )
        );
        // Another model's answers, or answers above temperature 0, are not compared.
        assert_eq!(changed(second, &answers, &|_| false), None);
        let warm = with_checks(Some(0.7));
        assert_eq!(changed(&warm[1], &answers, &any), None);
    }
}
