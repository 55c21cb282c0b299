//! A run's request settings turned into what a body is made of: the OpenAI fields of
//! `[defaults]` / the matrix (`fields`) and `body_template` (`template`). Shared by the
//! planner, which checks them at validation, and the runner, which builds bodies with
//! them. Depends on `plan` and `api` only.

pub mod fields;
pub mod template;

pub use template::TemplateError;

use crate::api::ApiKind;
use crate::plan::ApiSpec;

/// The API a plan's `api` names.
pub fn api_kind(api: ApiSpec) -> ApiKind {
    match api {
        ApiSpec::Chat => ApiKind::Chat,
        ApiSpec::Completions => ApiKind::Completions,
        ApiSpec::Responses => ApiKind::Responses,
        ApiSpec::Embeddings => ApiKind::Embeddings,
        ApiSpec::Rerank => ApiKind::Rerank,
    }
}
