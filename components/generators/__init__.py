"""lexhay components: generators."""
