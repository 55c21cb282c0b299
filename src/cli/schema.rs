//! `perfplan schema`: the plan's JSON Schema, generated from the plan types.

use super::exit;

pub fn run() -> u8 {
    let schema = crate::plan::plan_schema();
    match serde_json::to_string_pretty(&schema) {
        Ok(text) => {
            println!("{text}");
            exit::OK
        }
        Err(e) => {
            eprintln!(
                "error: cannot print the schema: {}",
                crate::control::chain(&e)
            );
            exit::INTERNAL
        }
    }
}
