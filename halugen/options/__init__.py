"""Every setting of every command, declared once (``spec.py``: name, type, default, flag(s),
halugen.toml key, environment variable, help, check, the run object's field it fills).

The declarations, by area: ``run_inputs.py`` (seeds, prompts, sampling, label check),
``run_calls.py`` (the model endpoint), ``run_control.py`` (store, budget, resuming, batch
mode), ``recognition.py`` (eval, the label rule), ``preselection.py`` (preselect),
``topics.py`` (topics); all of them in ``table.py``. What is done with them is
``halugen/settings/``.

A ground floor: nothing from halugen is imported here (``config.py`` and ``--help`` read it),
and nothing is imported by this file.
"""

__all__: list[str] = []
