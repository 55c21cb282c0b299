//! Reads chat and completions chunks (streamed events and whole bodies) with the JSON
//! cursor: choice 0's text, reasoning, tool-call text (`tool_calls[].function.name` and
//! `.arguments`, or the older `function_call`) and finish reason, usage, and the error markers;
//! every other field is checked and skipped without being built. Choice 0 is the choice
//! whose `index` is 0 (or the first one, when it has no `index`): with `n > 1` a server
//! streams every choice's chunks, and only choice 0's are timed. This is the
//! client's per-token path, so nothing here allocates unless a string holds escapes.
//!
//! The results equal those of the plain serde shapes (kept in the tests as the reference,
//! including their strictness: wrong types and duplicate fields are errors).

use std::borrow::Cow;

use super::scan::{Cursor, Scan};
use super::wire::{non_empty, DetailsWire, UsageWire};
use super::{ChunkInfo, ToolDelta};

/// Which API's choice shape to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// A choice's `delta` / `message` with `content`, `reasoning_content`, `reasoning`.
    Chat,
    /// A choice's `text`.
    Completions,
}

/// Parses one chunk (or whole body) of `shape`.
pub fn parse(data: &[u8], shape: Shape) -> Scan<ChunkInfo<'_>> {
    let mut c = Cursor::new(data);
    let mut info = ChunkInfo::default();
    let (mut seen, mut error, mut object_error) = (Seen::default(), false, false);
    c.object(|c, key| match key {
        b"choices" => {
            seen.once(c, 0, "choices")?;
            if !c.null()? {
                let mut found = false;
                c.array(|c, n| {
                    let one = choice(c, shape)?;
                    if !found && one.index.map_or(n == 0, |i| i == 0) {
                        found = true;
                        one.apply(&mut info);
                    }
                    Ok(())
                })?;
            }
            Ok(())
        }
        b"usage" => {
            seen.once(c, 1, "usage")?;
            info.usage = usage(c)?.map(|u| u.to_usage());
            Ok(())
        }
        b"error" => {
            seen.once(c, 2, "error")?;
            error = !c.null()?;
            if error {
                c.skip()?;
            }
            Ok(())
        }
        b"object" => {
            seen.once(c, 3, "object")?;
            object_error = c.opt_string()?.as_deref() == Some("error");
            Ok(())
        }
        _ => c.skip(),
    })?;
    c.end()?;
    info.error = error || object_error;
    Ok(info)
}

/// Known fields met so far in one object: serde refuses a field given twice.
#[derive(Default)]
struct Seen(u32);

impl Seen {
    fn once(&mut self, c: &Cursor<'_>, bit: u32, name: &str) -> Scan<()> {
        if self.0 & (1 << bit) != 0 {
            return Err(c.error(&format!("duplicate field `{name}`")));
        }
        self.0 |= 1 << bit;
        Ok(())
    }
}

/// The text fields of a chat `delta` or `message`.
#[derive(Default)]
struct Message<'a> {
    role: Option<Cow<'a, str>>,
    content: Option<Cow<'a, str>>,
    reasoning_content: Option<Cow<'a, str>>,
    reasoning: Option<Cow<'a, str>>,
    /// Every tool call's name and arguments text, joined (see [`ToolText`]).
    tools: ToolText<'a>,
    /// Each tool call's pieces, by `index` (what a tool-calling run assembles).
    deltas: Vec<ToolDelta<'a>>,
}

/// The text of a delta's or message's tool calls (names and argument fragments, in order):
/// what the model generated for them. Borrowed while there is one non-empty piece.
#[derive(Default)]
pub(crate) struct ToolText<'a>(Option<Cow<'a, str>>);

impl<'a> ToolText<'a> {
    fn push(&mut self, piece: Option<Cow<'a, str>>) {
        let Some(piece) = non_empty(piece) else {
            return;
        };
        self.0 = Some(match self.0.take() {
            None => piece,
            Some(before) => Cow::Owned(before.into_owned() + &piece),
        });
    }

    pub(crate) fn into_text(self) -> Option<Cow<'a, str>> {
        self.0
    }
}

/// One choice of a chunk, read.
struct Choice<'a> {
    index: Option<u32>,
    finish: Option<Cow<'a, str>>,
    message: Option<Message<'a>>,
    text: Option<Cow<'a, str>>,
}

impl<'a> Choice<'a> {
    fn apply(self, info: &mut ChunkInfo<'a>) {
        info.has_choice = true;
        info.finish_reason = non_empty(self.finish);
        if let Some(m) = self.message {
            let slot =
                m.content.is_some() || m.reasoning_content.is_some() || m.reasoning.is_some();
            info.content = non_empty(m.content);
            info.reasoning = non_empty(m.reasoning_content).or(non_empty(m.reasoning));
            info.tool = m.tools.into_text();
            info.tool_deltas = m.deltas;
            info.token = token_slot(info, slot, m.role.is_some());
        } else {
            info.token = self.text.is_some();
            info.content = non_empty(self.text);
        }
    }
}

/// Whether a chat choice carried a token: any output, or a text field present (even
/// empty: vLLM streams a special token as `"content": ""`) in a delta that does not
/// name the role (the opening `{"role": "assistant", "content": ""}` carries none).
pub(crate) fn token_slot(info: &ChunkInfo<'_>, text_field: bool, role: bool) -> bool {
    info.has_output() || (text_field && !role)
}

fn choice<'a>(c: &mut Cursor<'a>, shape: Shape) -> Scan<Choice<'a>> {
    let mut seen = Seen::default();
    let (mut delta, mut message, mut text, mut finish, mut index) = (None, None, None, None, None);
    c.object(|c, key| match (shape, key) {
        (Shape::Chat, b"delta") => {
            seen.once(c, 0, "delta")?;
            delta = opt_message(c)?;
            Ok(())
        }
        (Shape::Chat, b"message") => {
            seen.once(c, 1, "message")?;
            message = opt_message(c)?;
            Ok(())
        }
        (Shape::Completions, b"text") => {
            seen.once(c, 2, "text")?;
            text = c.opt_string()?;
            Ok(())
        }
        (_, b"finish_reason") => {
            seen.once(c, 3, "finish_reason")?;
            finish = c.opt_string()?;
            Ok(())
        }
        (_, b"index") => {
            seen.once(c, 4, "index")?;
            index = c.opt_u32()?;
            Ok(())
        }
        _ => c.skip(),
    })?;
    Ok(Choice {
        index,
        finish,
        message: delta.or(message),
        text,
    })
}

fn opt_message<'a>(c: &mut Cursor<'a>) -> Scan<Option<Message<'a>>> {
    if c.null()? {
        return Ok(None);
    }
    let (mut m, mut seen) = (Message::default(), Seen::default());
    c.object(|c, key| {
        let (bit, slot) = match key {
            b"content" => (0, &mut m.content),
            b"reasoning_content" => (1, &mut m.reasoning_content),
            b"reasoning" => (2, &mut m.reasoning),
            b"role" => (5, &mut m.role),
            b"tool_calls" => {
                seen.once(c, 3, "tool_calls")?;
                return tool_calls(c, &mut m.tools, &mut m.deltas);
            }
            b"function_call" => {
                seen.once(c, 4, "function_call")?;
                let (name, arguments) = function(c)?;
                m.tools.push(name.clone());
                m.tools.push(arguments.clone());
                if name.is_some() || arguments.is_some() {
                    m.deltas.push(ToolDelta {
                        name,
                        arguments,
                        ..ToolDelta::default()
                    });
                }
                return Ok(());
            }
            _ => return c.skip(),
        };
        seen.once(c, bit, std::str::from_utf8(key).unwrap_or("?"))?;
        *slot = c.opt_string()?;
        Ok(())
    })?;
    Ok(Some(m))
}

/// `tool_calls`: `null` or an array of `{"index", "id", "type", "function": {...}}`. As
/// vLLM streams them: the first delta of a call carries its `index`, `id` and
/// `function.name` (and maybe an empty or first `arguments` piece), later ones only the
/// `index` and the next `arguments` piece; parallel calls differ by `index`.
fn tool_calls<'a>(
    c: &mut Cursor<'a>,
    text: &mut ToolText<'a>,
    deltas: &mut Vec<ToolDelta<'a>>,
) -> Scan<()> {
    if c.null()? {
        return Ok(());
    }
    c.array(|c, n| {
        let (mut seen, mut delta) = (Seen::default(), ToolDelta::default());
        let mut index = None;
        c.object(|c, key| match key {
            b"function" => {
                seen.once(c, 0, "function")?;
                (delta.name, delta.arguments) = function(c)?;
                text.push(delta.name.clone());
                text.push(delta.arguments.clone());
                Ok(())
            }
            b"index" => {
                seen.once(c, 1, "index")?;
                index = c.opt_u32()?;
                Ok(())
            }
            b"id" => {
                seen.once(c, 2, "id")?;
                delta.id = non_empty(c.opt_string()?);
                Ok(())
            }
            _ => c.skip(),
        })?;
        delta.index = index.unwrap_or(n as u32);
        if delta.id.is_some() || delta.name.is_some() || delta.arguments.is_some() {
            deltas.push(delta);
        }
        Ok(())
    })
}

/// `function` (or the older `function_call`): `null` or `{"name", "arguments"}`.
type NameAndArguments<'a> = (Option<Cow<'a, str>>, Option<Cow<'a, str>>);

fn function<'a>(c: &mut Cursor<'a>) -> Scan<NameAndArguments<'a>> {
    if c.null()? {
        return Ok((None, None));
    }
    let (mut name, mut arguments, mut seen) = (None, None, Seen::default());
    c.object(|c, key| {
        let (bit, slot) = match key {
            b"name" => (0, &mut name),
            b"arguments" => (1, &mut arguments),
            _ => return c.skip(),
        };
        seen.once(c, bit, std::str::from_utf8(key).unwrap_or("?"))?;
        *slot = c.opt_string()?;
        Ok(())
    })?;
    Ok((non_empty(name), non_empty(arguments)))
}

fn usage(c: &mut Cursor<'_>) -> Scan<Option<UsageWire>> {
    if c.null()? {
        return Ok(None);
    }
    let (mut u, mut seen) = (UsageWire::default(), Seen::default());
    c.object(|c, key| {
        let (bit, slot) = match key {
            b"prompt_tokens" => (0, &mut u.prompt_tokens),
            b"completion_tokens" => (1, &mut u.completion_tokens),
            b"input_tokens" => (2, &mut u.input_tokens),
            b"output_tokens" => (3, &mut u.output_tokens),
            b"total_tokens" => (4, &mut u.total_tokens),
            b"prompt_tokens_details" => {
                seen.once(c, 5, "prompt_tokens_details")?;
                u.prompt_tokens_details = details(c)?;
                return Ok(());
            }
            b"input_tokens_details" => {
                seen.once(c, 6, "input_tokens_details")?;
                u.input_tokens_details = details(c)?;
                return Ok(());
            }
            b"completion_tokens_details" => {
                seen.once(c, 7, "completion_tokens_details")?;
                u.completion_tokens_details = details(c)?;
                return Ok(());
            }
            b"output_tokens_details" => {
                seen.once(c, 8, "output_tokens_details")?;
                u.output_tokens_details = details(c)?;
                return Ok(());
            }
            _ => return c.skip(),
        };
        seen.once(c, bit, std::str::from_utf8(key).unwrap_or("?"))?;
        *slot = c.opt_u32()?;
        Ok(())
    })?;
    Ok(Some(u))
}

fn details(c: &mut Cursor<'_>) -> Scan<Option<DetailsWire>> {
    if c.null()? {
        return Ok(None);
    }
    let (mut d, mut seen) = (DetailsWire::default(), Seen::default());
    c.object(|c, key| match key {
        b"cached_tokens" => {
            seen.once(c, 0, "cached_tokens")?;
            d.cached_tokens = c.opt_u32()?;
            Ok(())
        }
        b"reasoning_tokens" => {
            seen.once(c, 1, "reasoning_tokens")?;
            d.reasoning_tokens = c.opt_u32()?;
            Ok(())
        }
        _ => c.skip(),
    })?;
    Ok(Some(d))
}

#[cfg(test)]
mod tests;
