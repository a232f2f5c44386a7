"""lexhay components: writers."""
