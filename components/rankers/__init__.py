"""lexhay components: rankers."""
