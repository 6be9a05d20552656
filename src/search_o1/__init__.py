"""search-o1."""
