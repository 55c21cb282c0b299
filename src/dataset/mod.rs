//! dataset (being built).
