"""Records, tables, exports, figures and HTML: pure rendering of stored results."""
