"""What things cost: the one home of prices, cache rules, the cache plan, batch prices and
the projected cost of a run. It stands on the ground floor's files alone (config, errors,
prompts, records, resources, tokens): what it needs of a task is a Protocol the caller fills.

- ``prices.py``: money units (picodollars), price cards (``budgets/*.toml``) and their lookup,
  the card's prompt-caching rules (``CacheRules``) and service tiers, ``format_usd``.
- ``cache.py``: the cache rules at work: a template's fixed opening, what a warm call gets
  from the cache, the cache plan (which variant of a template a run sends; applied to a
  loaded task by ``tasks.loaded.plan_task``), and how a task's openings fit the cache
  (``task check --model``).
- ``batch_prices.py``: the Batch API's price (``batch_cost``).
- ``estimate.py``: the projected cost of a generation run in each way of paying, counted
  over the seeds it is handed (``halugen estimate`` reads them: ``stages/estimate.py``).

The budget that reserves and settles this money is ``halugen/budget.py``.
"""
