//! planner (being built).
