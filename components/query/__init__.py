"""lexhay components: query."""
