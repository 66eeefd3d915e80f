"""Op-table cases of volumes records."""
