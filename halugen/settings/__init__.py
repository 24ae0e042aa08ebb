"""What is done with the declared settings (``halugen/options/``): halugen.toml read against
them (``file.py``, the fleet's tables in ``endpoints.py``), a command line's values resolved
flag > environment > file > default (``resolve.py``), and the run objects made of the
resolved values (``build.py``). The flags themselves are made in ``cli/flags.py``.

Nothing is imported by this file.
"""

__all__: list[str] = []
