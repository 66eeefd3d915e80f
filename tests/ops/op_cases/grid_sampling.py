"""Op-table cases of grid_sampling records."""
