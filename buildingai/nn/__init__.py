"""Neural networks: Module, Parameter, layers, losses, initialisation."""
