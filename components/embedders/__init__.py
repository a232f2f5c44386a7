"""lexhay components: embedders."""
