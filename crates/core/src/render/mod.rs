//! Renderers: turn reports into text, JSON and markdown.
