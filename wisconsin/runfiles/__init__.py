"""Run files: one versioned schema, load (with migrations) and save."""
