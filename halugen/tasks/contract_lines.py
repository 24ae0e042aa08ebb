"""Does a judge or filter template ask for the reply contract's line?

Every judge prompt (the filter's pick, the recognition strategies, their re-asks) must ask
for the one reply contract (``reply_contract``): ``Choice: n`` for a pick among numbered
texts (the filter, contrast), ``Verdict: Yes|No`` otherwise. The strict reader reads nothing
else, so a task whose prompt asks for another shape ("Hallucinated: 2", "Answer: yes")
would have every reply unsure; ``task check`` refuses it instead, naming the file and the
line to add. The line must be in the template's last user message: a reply-format line such
as ``Verdict: <Yes or No>`` (the record may follow it, as the built-in filter lays out its
prompt for caching), or the contract's lines quoted (``"Verdict: Yes" or "Verdict: No"``).
"""

from __future__ import annotations

import re

from ..prompts import Template
from ..reply_contract import VERDICT, Contract, choice_contract

__all__ = ["contract_of", "missing_contract"]


def contract_of(what: str) -> Contract | None:
    """The contract a template for ``what`` (``template_fields``' words: "filter",
    "filter re-ask", "plain judge", "contrast re-ask judge", ...) must ask for; None for
    a sampling template. A choice's range does not matter here: ``Choice: 2`` is checked
    as the label."""
    if what.startswith("filter") or what.startswith("contrast"):
        return choice_contract(2)
    if what.endswith("judge"):
        return VERDICT
    return None


def _last_user_text(template: Template) -> str:
    for role, segments in reversed(template.parts):
        if role == "user":
            return "".join(s for s in segments if isinstance(s, str))
    return ""


def missing_contract(template: Template, what: str) -> str:
    """ "" when the template asks for its contract's line, else the one-line problem."""
    contract = contract_of(what)
    if contract is None:
        return ""
    label = re.escape(contract.label)
    asks = re.compile(rf"^[ \t>*_#-]*{label}[ \t*_]*:|[\"'“`]{label}:", re.MULTILINE)
    if asks.search(_last_user_text(template)):
        return ""
    if contract.label == VERDICT.label:
        example = f"{contract.label}: <Yes or No>"
    elif what.startswith("contrast"):
        example = f"{contract.label}: <1 or 2, the one that contains hallucination>"
    else:
        example = f"{contract.label}: <the number of the one you pick>"
    return (
        f"the {what} template does not ask for the reply contract: end its last user "
        f'message with the line "{example}" (replies are read from that line only; see '
        "docs/verdicts.md)"
    )
