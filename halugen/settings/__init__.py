"""Settings: one declaration per setting (``spec.py``), made into a command's flags
(``cli/flags.py``), read from halugen.toml (``file.py``), resolved flag > environment > file
> default (``resolve.py``) and made into the run objects (``build.py``).

The declarations, by area: ``run_inputs.py`` (seeds, prompts, sampling, label check),
``run_calls.py`` (the model endpoint), ``run_control.py`` (store, budget, resuming, batch
mode), ``recognition.py`` (eval, the label rule), ``preselection.py`` (preselect); all of
them in ``table.py``.

Nothing is imported here: ``config.py`` reads ``table.py`` alone.
"""

__all__: list[str] = []
