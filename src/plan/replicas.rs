//! Checks of an endpoint's replicas and sessions: exactly one of `base_url` and `urls`,
//! at least two distinct http(s) replicas, `balance` only where there are replicas, and a
//! `session_header` that is a valid header name.

use super::diag::Diagnostic;
use super::node::{Node, Step};
use super::spec::EndpointSpec;

fn at(tree: &Node, path: &[&str]) -> super::diag::Span {
    let steps: Vec<Step> = path.iter().map(|s| Step::Key(s.to_string())).collect();
    tree.locate(&steps)
}

/// The problems of endpoint `name`'s `base_url`/`urls`, `balance` and `session_header`.
pub fn check(name: &str, ep: &EndpointSpec, tree: &Node) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    let err = |msg: String, path: &[&str]| Diagnostic::error(msg, Some(at(tree, path)));
    match (ep.base_url.is_empty(), ep.urls.is_empty()) {
        (true, true) => diags.push(
            err(
                format!("endpoint `{name}` has neither `base_url` nor `urls`"),
                &["endpoints", name],
            )
            .with_help("add base_url = \"http://127.0.0.1:8000\", or urls = [...] for replicas"),
        ),
        (false, false) => diags.push(
            err(
                format!("endpoint `{name}` sets both `base_url` and `urls`"),
                &["endpoints", name, "urls"],
            )
            .with_help("keep one: `urls` lists every replica, the first included"),
        ),
        _ => {}
    }
    diags.extend(url_problems(name, ep, tree));
    let sim_replicas = ep.sim.as_ref().map_or(1, |s| s.replicas);
    if ep.balance.is_some() && ep.urls.is_empty() && sim_replicas < 2 {
        diags.push(
            err(
                format!("endpoint `{name}`: `balance` has no replicas to spread over"),
                &["endpoints", name, "balance"],
            )
            .with_help("list the replicas in `urls` (or set `sim.replicas` of a sim:// endpoint)"),
        );
    }
    diags.extend(session_problems(name, ep, tree));
    diags
}

fn url_problems(name: &str, ep: &EndpointSpec, tree: &Node) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    let err = |msg: String, path: &[&str]| Diagnostic::error(msg, Some(at(tree, path)));
    let url = &ep.base_url;
    let schemes = ["http://", "https://", "sim://"];
    if !url.is_empty() && !schemes.iter().any(|s| url.starts_with(s)) {
        diags.push(
            err(
                format!("endpoint `{name}`: base_url `{url}` is not http://, https:// or sim://"),
                &["endpoints", name, "base_url"],
            )
            .with_help("write e.g. \"http://127.0.0.1:8000/v1\" or \"sim://NAME\""),
        );
    }
    if ep.urls.len() == 1 {
        diags.push(
            err(
                format!("endpoint `{name}`: `urls` lists one replica"),
                &["endpoints", name, "urls"],
            )
            .with_help("list at least two, or write base_url = \"...\""),
        );
    }
    for (i, url) in ep.urls.iter().enumerate() {
        let mut steps: Vec<Step> = ["endpoints", name, "urls"]
            .iter()
            .map(|s| Step::Key(s.to_string()))
            .collect();
        steps.push(Step::Index(i));
        let item = |msg: String| {
            let at = tree
                .value_span(&steps)
                .unwrap_or_else(|| tree.locate(&steps));
            Diagnostic::error(msg, Some(at))
        };
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            let help = match url.starts_with("sim://") {
                true => "simulated replicas: base_url = \"sim://NAME\" with [endpoints.NAME.sim] replicas = N",
                false => "write e.g. \"http://10.0.0.1:8000/v1\"",
            };
            diags.push(
                item(format!(
                    "endpoint `{name}`: urls[{i}] `{url}` is not http:// or https://"
                ))
                .with_help(help),
            );
        }
        if ep.urls[..i].contains(url) {
            diags.push(item(format!(
                "endpoint `{name}`: urls[{i}] `{url}` is listed twice"
            )));
        }
    }
    diags
}

/// Whether `h` is a valid HTTP header name (an RFC 9110 token).
pub(crate) fn is_header_name(h: &str) -> bool {
    !h.is_empty()
        && h.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn session_problems(name: &str, ep: &EndpointSpec, tree: &Node) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    let err = |msg: String, path: &[&str]| Diagnostic::error(msg, Some(at(tree, path)));
    if let Some(h) = &ep.session_header {
        let token = is_header_name(h);
        let taken = h.eq_ignore_ascii_case("x-request-id")
            || ep.headers.keys().any(|k| k.eq_ignore_ascii_case(h));
        if !token || taken {
            let why = match token {
                false => "is not a valid HTTP header name",
                true => "is a header perfplan or `headers` already sends",
            };
            diags.push(
                err(
                    format!("endpoint `{name}`: session_header `{h}` {why}"),
                    &["endpoints", name, "session_header"],
                )
                .with_help("use a name such as \"x-session-id\""),
            );
        }
        // A simulator that routes its workers by session reads one header name: an
        // endpoint sending its id under another would be routed round robin, unawares.
        let routes = ep
            .sim
            .as_ref()
            .filter(|s| s.workers > 1 && s.route.unwrap_or_default().reads_session());
        if let Some(sim) = routes.filter(|s| !s.session_header().eq_ignore_ascii_case(h)) {
            let reads = sim.session_header();
            diags.push(
                err(
                    format!(
                        "endpoint `{name}`: session_header `{h}` is not the header its \
                         simulator routes by (`{reads}`)"
                    ),
                    &["endpoints", name, "session_header"],
                )
                .with_help(format!(
                    "send `{reads}`, or set the simulator's `session_header = \"{h}\"`"
                )),
            );
        }
    }
    diags
}
