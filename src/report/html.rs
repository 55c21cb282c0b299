//! The self-contained HTML report (no network): the pivot table plus inline SVG plots.
