"""halugen's version, recorded with every run and written into what it exports."""

__all__ = ["__version__"]

__version__ = "0.1.0"
