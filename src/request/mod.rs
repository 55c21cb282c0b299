//! A run's request settings turned into what a body is made of: the OpenAI fields of
//! `[defaults]` / the matrix (`fields`) and `body_template` (`template`). Shared by the
//! planner, which checks them at validation, and the runner, which builds bodies with
//! them. Depends on `plan` and `api` only.

pub mod fields;
pub mod template;

pub use template::TemplateError;
