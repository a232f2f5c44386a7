"""lexhay components: retrievers."""
