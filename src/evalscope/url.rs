//! EvalScope's `--url` is an API's full URL (`http://h:8000/v1/chat/completions`); a plan's
//! `base_url` is the server (`http://h:8000`) and the API says the route. This splits one
//! into the other: the base, the API the path names, and a `paths` override when the
//! route is not the one perfplan's URL rule would build (`…/compatible-api/v1/reranks`).
//! `perfplan run --url` reads its URL the same way.

use crate::plan::ApiSpec;

/// Route endings EvalScope's URLs use, longest first, with the API each names and the
/// route perfplan builds for it.
const ROUTES: [(&str, ApiSpec, &str); 6] = [
    ("/chat/completions", ApiSpec::Chat, "/v1/chat/completions"),
    ("/completions", ApiSpec::Completions, "/v1/completions"),
    ("/responses", ApiSpec::Responses, "/v1/responses"),
    ("/embeddings", ApiSpec::Embeddings, "/v1/embeddings"),
    ("/reranks", ApiSpec::Rerank, "/v1/rerank"),
    ("/rerank", ApiSpec::Rerank, "/v1/rerank"),
];

/// A full API URL taken apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiUrl {
    /// The plan's `base_url` (query kept).
    pub base_url: String,
    /// The API the path names; `None` when the URL names no route (a server URL).
    pub api: Option<ApiSpec>,
    /// `paths.<api>` when the route differs from the usual one (a path from the host root).
    pub path_override: Option<String>,
}

/// The `paths` key of an API.
pub(crate) fn paths_key(api: ApiSpec) -> &'static str {
    match api {
        ApiSpec::Chat => "chat",
        ApiSpec::Completions => "completions",
        ApiSpec::Responses => "responses",
        ApiSpec::Embeddings => "embeddings",
        ApiSpec::Rerank => "rerank",
    }
}

/// Splits a URL as written on a command line.
pub fn split(url: &str) -> ApiUrl {
    let (no_query, query) = match url.split_once('?') {
        Some((u, q)) => (u, Some(q)),
        None => (url, None),
    };
    let trimmed = no_query.trim_end_matches('/');
    let with_query = |base: &str| match query {
        Some(q) => format!("{base}?{q}"),
        None => base.to_string(),
    };
    let scheme_end = trimmed.find("://").map_or(0, |i| i + 3);
    let path_start = trimmed[scheme_end..]
        .find('/')
        .map_or(trimmed.len(), |i| i + scheme_end);
    let (origin, path) = trimmed.split_at(path_start);
    let Some((ending, api, usual)) = ROUTES.iter().find(|(end, ..)| path.ends_with(end)) else {
        return ApiUrl {
            base_url: with_query(trimmed),
            api: None,
            path_override: None,
        };
    };
    let prefix = &path[..path.len() - ending.len()];
    let root = prefix.strip_suffix("/v1").unwrap_or(prefix);
    let built = format!("{root}{usual}");
    ApiUrl {
        base_url: with_query(&format!("{origin}{root}")),
        api: Some(*api),
        path_override: (built != path).then(|| path.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_urls_become_a_server_and_an_api() {
        let s = split("http://127.0.0.1:18000/v1/chat/completions");
        assert_eq!(s.base_url, "http://127.0.0.1:18000");
        assert_eq!(s.api, Some(ApiSpec::Chat));
        assert_eq!(s.path_override, None);
        let s = split("http://h/v1/completions/");
        assert_eq!(
            (s.base_url.as_str(), s.api),
            ("http://h", Some(ApiSpec::Completions))
        );
        let s = split("https://dashscope.aliyuncs.com/compatible-mode/v1/embeddings");
        assert_eq!(s.base_url, "https://dashscope.aliyuncs.com/compatible-mode");
        assert_eq!(s.path_override, None);
        let s = split("https://dashscope.aliyuncs.com/compatible-api/v1/reranks");
        assert_eq!(s.api, Some(ApiSpec::Rerank));
        assert_eq!(
            s.path_override.as_deref(),
            Some("/compatible-api/v1/reranks")
        );
        let s = split("http://gw/openai/v1?api-version=2");
        assert_eq!(
            (s.base_url.as_str(), s.api),
            ("http://gw/openai/v1?api-version=2", None)
        );
    }
}
