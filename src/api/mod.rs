//! api (being built).
