"""lexhay components: preprocessors."""
