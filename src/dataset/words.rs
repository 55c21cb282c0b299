//! Random text of a given token length for the kinds that are not token-exact prompts
//! (multi-turn turns, image captions, embedding inputs, rerank queries and documents).
//! With a tokenizer the text is cut to exactly `n` tokens (counted bare, without a chat
//! template); without one it is `n` short words, which the simulator's approximate
//! counter counts as one token each.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::DatasetError;
use crate::tokenize::Tokenizer;

/// Words of at most 8 ASCII letters: one token each for the simulator's approximate counter.
const WORDS: &[&str] = &[
    "time", "year", "people", "way", "day", "man", "thing", "woman", "life", "child", "world",
    "school", "state", "family", "student", "group", "country", "problem", "hand", "part", "place",
    "case", "week", "company", "system", "program", "question", "work", "number", "night", "point",
    "home", "water", "room", "mother", "area", "money", "story", "fact", "month", "lot", "right",
    "study", "book", "eye", "job", "word", "business", "issue", "side", "kind", "head", "house",
    "service", "friend", "father", "power", "hour", "game", "line", "end", "member", "law", "car",
    "city", "name", "team", "minute", "idea", "kid", "body", "back", "parent", "face", "others",
    "level", "office", "door", "health", "person", "art", "war", "history", "party", "result",
    "change", "morning", "reason", "research", "girl", "guy", "moment", "air", "teacher", "force",
    "order", "river", "cloud", "stone",
];

/// `n` tokens of random text (exact with a tokenizer), and the client's count of it.
pub(crate) fn random_text(
    tok: Option<&Tokenizer>,
    n: u32,
    rng: &mut ChaCha8Rng,
) -> Result<(String, Option<u32>), DatasetError> {
    let mut text = String::with_capacity(n as usize * 7);
    for i in 0..n {
        if i > 0 {
            text.push(' ');
        }
        text.push_str(WORDS[rng.gen_range(0..WORDS.len())]);
    }
    let Some(tok) = tok else {
        return Ok((text, None));
    };
    let mut ids = tok.encode(&text, false)?;
    while ids.len() < n as usize {
        text.push(' ');
        text.push_str(WORDS[rng.gen_range(0..WORDS.len())]);
        ids = tok.encode(&text, false)?;
    }
    ids.truncate(n as usize);
    let cut = tok.decode(&ids)?;
    let count = tok.count(&cut, false)?;
    Ok((cut, Some(count as u32)))
}

/// A length drawn from `min..=max`.
pub(crate) fn draw_len(range: crate::plan::spec::TokenRange, rng: &mut ChaCha8Rng) -> u32 {
    let (lo, hi) = (range.min(), range.max());
    if hi <= lo {
        lo
    } else {
        rng.gen_range(lo..=hi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn without_a_tokenizer_it_is_n_words_and_deterministic() {
        let mut a = ChaCha8Rng::seed_from_u64(1);
        let mut b = ChaCha8Rng::seed_from_u64(1);
        let (x, n) = random_text(None, 12, &mut a).unwrap();
        assert_eq!(x.split(' ').count(), 12);
        assert_eq!(n, None);
        assert_eq!(x, random_text(None, 12, &mut b).unwrap().0);
        assert!(WORDS.iter().all(|w| w.len() <= 8));
    }
}
