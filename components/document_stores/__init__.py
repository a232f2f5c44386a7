"""lexhay components: document_stores."""
