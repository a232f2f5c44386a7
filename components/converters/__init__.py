"""lexhay components: converters."""
