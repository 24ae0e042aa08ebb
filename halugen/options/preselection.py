"""The settings of a pre-selection run (``preselect``): the query files' layout, how many
responses, how many queries kept, and the BERTScore that ranks them.

They are the command's own flags, not keys of halugen.toml.
"""

from __future__ import annotations

from .spec import Setting

__all__ = ["PRESELECT"]

PRESELECT: tuple[Setting, ...] = (
    Setting(
        name="query_format",
        kind=str,
        group="preselect",
        toml=None,
        choices=("alpaca", "jsonl", "csv"),
        help="the format of every query file",
        default_text="detected from each file",
    ),
    Setting(
        name="query_field",
        kind=str,
        group="preselect",
        toml=None,
        metavar="NAME",
        help="field holding the query",
        default_text="instruction in Alpaca files; query, else instruction, in the others",
    ),
    Setting(
        name="input_field",
        kind=str,
        group="preselect",
        toml=None,
        metavar="NAME",
        help="field appended to the query after a blank line",
        default_text="input, when present",
    ),
    Setting(
        name="id_field",
        kind=str,
        group="preselect",
        toml=None,
        metavar="NAME",
        help="field holding the query's id",
        default_text="id when present, else FILE:LINE",
    ),
    Setting(
        name="responses",
        kind=int,
        group="preselect",
        toml=None,
        default=3,
        help="responses sampled per query",
    ),
    Setting(
        name="keep",
        kind=int,
        group="preselect",
        toml=None,
        default=5000,
        help="queries kept, those whose responses agree least",
    ),
    Setting(
        name="use_n",
        kind=str,
        group="preselect",
        toml=None,
        choices=("auto", "always", "never"),
        default="auto",
        help="ask for n choices in one call: auto (when the server honours it), always, never",
    ),
    Setting(
        name="bertscore_model",
        kind=str,
        group="preselect",
        toml=None,
        metavar="NAME|DIR",
        to=("scorer.model",),
        help="BERTScore model: a Hugging Face name or a local directory",
        default_text="bert-score's default for English, roberta-large",
    ),
    Setting(
        name="bertscore_layers",
        kind=int,
        group="preselect",
        toml=None,
        metavar="N",
        to=("scorer.num_layers",),
        help="the model's layer to use; needed for a local directory",
        default_text="bert-score's tuned layer for a hub model",
    ),
    Setting(
        name="bertscore_baseline",
        kind=str,
        group="preselect",
        toml=None,
        metavar="FILE",
        to=("scorer.baseline_path",),
        help="baseline CSV for rescaling F1",
        default_text="no rescaling",
    ),
    Setting(
        name="bertscore_batch",
        kind=int,
        group="preselect",
        toml=None,
        metavar="N",
        to=("scorer.batch_size",),
        help="pairs per forward pass",
        default_text="16 on a CPU, 64 on a GPU",
    ),
    Setting(
        name="device",
        kind=str,
        group="preselect",
        toml=None,
        to=("scorer.device",),
        help="cpu, cuda, cuda:1 ...",
        default_text="cuda when available, else cpu",
    ),
)
