//! store (being built).
