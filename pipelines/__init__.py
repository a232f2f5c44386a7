"""lexhay settings, YAML loading, Python SDK and CLI."""
