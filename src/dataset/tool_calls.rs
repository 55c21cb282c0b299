//! `tool_calls`: the tools a tool-calling run offers (a JSON file of tool schemas, or the
//! built-in set) and the mocked results its tool messages send: the tool's own `result`
//! text from the file, or random text of `tool_result_tokens` tokens (token-exact with
//! the model's tokenizer, as every synthetic prompt), drawn per conversation, turn,
//! round and call from the run seed, so a result does not depend on the order answers
//! arrive in. The conversations themselves are `random_multi_turn`'s (`multi_turn`).

use std::sync::Arc;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::source::{read_text, resolve};
use super::words::{draw_len, random_text};
use super::{DatasetContext, DatasetError};
use crate::api::tools::{ToolDef, ToolSet};
use crate::plan::spec::TokenRange;
use crate::plan::ToolLoop;
use crate::tokenize::Tokenizer;

/// The tools of `plan`: its file's, or the built-in ones.
pub(crate) fn tool_set(plan: &ToolLoop, ctx: &DatasetContext) -> Result<ToolSet, DatasetError> {
    let Some(path) = &plan.tools else {
        return Ok(ToolSet::builtin());
    };
    let path = resolve(ctx, path);
    let text = read_text(&path)?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|source| DatasetError::Json {
            path: path.clone(),
            line: 1,
            source,
        })?;
    ToolSet::from_json(&value).map_err(|message| DatasetError::Line {
        path,
        line: 1,
        message,
    })
}

/// Where one mocked result belongs: conversation, turn, round, call.
#[derive(Debug, Clone, Copy)]
pub struct ResultKey {
    pub conversation: u64,
    pub turn: u32,
    pub round: u32,
    pub call: u32,
}

/// Makes the mocked tool results of a run.
#[derive(Debug, Clone)]
pub struct ToolResults {
    seed: u64,
    tokens: TokenRange,
    tokenizer: Option<Arc<Tokenizer>>,
}

impl ToolResults {
    pub fn new(plan: &ToolLoop, ctx: &DatasetContext) -> ToolResults {
        ToolResults {
            seed: ctx.seed ^ 0x7265_7375_6c74,
            tokens: plan.tool_result_tokens,
            tokenizer: ctx.tokenizer.clone(),
        }
    }

    /// The result text of a call of `tool` (`None`: a tool nobody offered).
    pub fn result(&self, tool: Option<&ToolDef>, at: ResultKey) -> Result<String, DatasetError> {
        if let Some(text) = tool.and_then(|t| t.result.clone()) {
            return Ok(text);
        }
        let key = at.conversation.wrapping_mul(0x9e37_79b9_7f4a_7c15)
            ^ u64::from(at.turn).wrapping_mul(0xbf58_476d_1ce4_e5b9)
            ^ u64::from(at.round).wrapping_mul(0x94d0_49bb_1331_11eb)
            ^ u64::from(at.call);
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed ^ key);
        let n = draw_len(self.tokens, &mut rng).max(1);
        Ok(random_text(self.tokenizer.as_deref(), n, &mut rng)?.0)
    }
}
