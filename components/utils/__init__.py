"""lexhay components: utils."""
