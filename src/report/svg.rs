//! Inline SVG line charts, drawn by hand (no plotting crate).
