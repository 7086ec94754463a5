"""A tiny app the example loop lints."""
