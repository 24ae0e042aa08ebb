"""What things cost: the one home of prices, cache rules, the cache plan, batch prices and
the projected cost of a run. Nothing here calls a provider or runs a stage.

- ``prices.py``: money units (picodollars), price cards (``budgets/*.toml``) and their lookup,
  the card's prompt-caching rules (``CacheRules``) and service tiers, ``format_usd``.
- ``cache.py``: the cache rules at work: a template's fixed opening, what a warm call gets
  from the cache, the cache plan (which variant of each template a run sends), and how a
  task's openings fit the cache (``task check --model``).
- ``batch_prices.py``: the Batch API's price (``batch_cost``).
- ``estimate.py``: the projected cost of a generation run in each way of paying
  (``halugen estimate``).

The budget that reserves and settles this money is ``halugen/budget.py``.
"""
