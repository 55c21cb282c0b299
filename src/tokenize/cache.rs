//! `TokenizerCache`: each tokenizer path is loaded once per suite and shared between runs
//! and threads.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use super::{TokenizeError, Tokenizer};

/// Loaded tokenizers by path. Thread-safe; clones share the same entries.
#[derive(Debug, Clone, Default)]
pub struct TokenizerCache {
    loaded: Arc<Mutex<HashMap<PathBuf, Arc<Tokenizer>>>>,
}

impl TokenizerCache {
    pub fn new() -> TokenizerCache {
        TokenizerCache::default()
    }

    /// The tokenizer at `path`, loading it on first use. Paths naming the same file
    /// (relative or absolute) share one entry. A failed load is not cached.
    pub fn load(&self, path: &Path) -> Result<Arc<Tokenizer>, TokenizeError> {
        let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        // Loading under the lock keeps a path from being parsed twice by racing threads.
        let mut loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(tok) = loaded.get(&key) {
            return Ok(Arc::clone(tok));
        }
        let tok = Tokenizer::load(path)?;
        loaded.insert(key, Arc::clone(&tok));
        Ok(tok)
    }

    /// Number of distinct tokenizers loaded so far.
    pub fn len(&self) -> usize {
        self.loaded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
