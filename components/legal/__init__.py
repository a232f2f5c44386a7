"""lexhay components: legal."""
