"""lexhay custom Haystack components (loaded through the `components.*` deserialization allowlist)."""
