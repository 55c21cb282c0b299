//! runner (being built).
