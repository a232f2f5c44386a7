"""lexhay components: routers."""
