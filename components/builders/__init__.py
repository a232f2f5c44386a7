"""lexhay components: builders."""
