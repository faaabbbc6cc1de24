"""Rendering: the document model, figures and timelines handed to it."""
