//! Names that become paths stay inside the output folder: the plan's name (the folder
//! `outputs/<name>/`) and each endpoint's (a launched server's `servers/<endpoint>.log`).
//! Such a name may not be empty, `.` or `..`, hold `/` or `\`, or a control character;
//! validation refuses it at the name with the rule.

use super::diag::Diagnostic;
use super::node::{Node, Step};
use super::spec::PlanSpec;

/// Why `name` cannot name a file or folder, if it cannot.
pub(crate) fn path_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("it is empty".into());
    }
    if name == "." || name == ".." {
        return Some(format!("`{name}` names a folder that is already there"));
    }
    if let Some(c) = name.chars().find(|c| matches!(c, '/' | '\\')) {
        return Some(format!("it holds `{c}`"));
    }
    if let Some((_, c)) = name.char_indices().find(|(_, c)| c.is_control()) {
        return Some(format!(
            "it holds a control character ({})",
            crate::text::describe_control(c)
        ));
    }
    None
}

/// The rule, as every such error states it.
const RULE: &str = "a name that becomes a path may not be empty, `.` or `..`, or hold `/`, `\\` \
                    or a control character (letters, digits, `-`, `_` and `.` are safe)";

/// Every name of `spec` that becomes a path and breaks the rule.
pub fn check(spec: &PlanSpec, tree: &Node) -> Vec<Diagnostic> {
    let key =
        |path: &[&str]| -> Vec<Step> { path.iter().map(|s| Step::Key(s.to_string())).collect() };
    let mut diags = Vec::new();
    if let Some(why) = path_name_problem(&spec.plan.name) {
        let at = tree.value_span(&key(&["plan", "name"]));
        diags.push(
            Diagnostic::error(
                format!(
                    "plan name {:?} cannot name its output folder (outputs/<name>/…): {why}",
                    spec.plan.name
                ),
                at,
            )
            .with_help(RULE),
        );
    }
    for name in spec.endpoints.keys() {
        if let Some(why) = path_name_problem(name) {
            let at = tree.locate(&key(&["endpoints", name]));
            diags.push(
                Diagnostic::error(
                    format!(
                        "endpoint name {name:?} cannot name its server log (servers/<endpoint>.log): {why}"
                    ),
                    Some(at),
                )
                .with_help(RULE),
            );
        }
    }
    diags
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_leave_the_folder_are_refused() {
        for bad in ["", ".", "..", "../../x", "a/b", "a\\b", "x\0y", "tab\there"] {
            assert!(path_name_problem(bad).is_some(), "{bad:?}");
        }
        for good in [
            "quickstart",
            "qwen3-8b.signoff",
            "..x",
            "release 2.1",
            "模型",
        ] {
            assert_eq!(path_name_problem(good), None, "{good:?}");
        }
    }
}
