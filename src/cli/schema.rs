//! `perfplan schema`: the plan's JSON Schema, generated from the plan types.

use super::exit;
use super::failure::{Ended, Failure};

pub fn run() -> Ended {
    let schema = crate::plan::plan_schema();
    let text = serde_json::to_string_pretty(&schema).map_err(|e| {
        Failure::new(
            exit::INTERNAL,
            format!("cannot print the schema: {}", crate::control::chain(&e)),
        )
    })?;
    println!("{text}");
    Ok(exit::OK)
}
