"""The version of halugen, on the ground floor: the package root re-exports it, and every
module that stamps a file with it imports it from here, never from the root."""

__all__ = ["__version__"]

__version__ = "0.1.0"
