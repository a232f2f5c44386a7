"""lexhay components: extractors."""
