//! tokenize (being built).
