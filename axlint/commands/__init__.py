"""One module per CLI command; heavy imports stay inside the command functions."""
