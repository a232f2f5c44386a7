"""lexhay components: validators."""
