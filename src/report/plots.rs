//! Which plots the HTML report draws, from runs and their request rows.
