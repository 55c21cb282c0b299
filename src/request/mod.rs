//! A run's request settings turned into what a body is made of: the OpenAI fields of
//! `[defaults]` / the matrix (`fields`) and `body_template` (`template`), resolved once
//! per run into a `RequestPlan`. Shared by the planner, which checks them at validation
//! and makes each run's `RequestPlan`, and the stages that build bodies with it.
//! Depends on `plan` and `api` only.

pub mod fields;
mod resolved;
pub mod template;

pub use resolved::{OutputLen, RequestPlan};
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
