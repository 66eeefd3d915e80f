def parallel(): pass
