"""The store's views, its SQL surface (README "The store"): one current definition each,
re-created by db.py after the migrations whenever a store is opened for writing."""

from __future__ import annotations

__all__ = ["VIEWS"]


# -- views: the SQL surface (README "The store"), in the order they depend on each other ---
# Each is (name, SELECT); db.py re-creates them, in one transaction, after migrating.
VIEWS: tuple[tuple[str, str], ...] = (
    # The verify stage's latest check of each sample (a failed call or another judge model
    # may check a sample again). flagged: the hallucinated text was judged supported by the
    # knowledge, or the right text unsupported, or the judge stayed unsure.
    (
        "label_checks",
        """
SELECT run_id, task, seed_key, model AS judge_model, outcome, reason,
       hallucination_verdict, right_verdict, asked, hallucination_key, right_key,
       template_hash, hallucination_raw, right_raw, detail, created_at
FROM label_check_rows
QUALIFY row_number() OVER (PARTITION BY run_id, task, seed_key ORDER BY created_at DESC) = 1
""",
    ),
    (
        "samples",
        """
SELECT s.run_id, s.task, s.seed_id, s.seed_key, s.pattern, s.template, s.template_hash,
       s.filter_template_hash, s.selected_by, s.model, s.dataset, s.source_file,
       s.source_line, s.knowledge, s.question, s.right_answer, s.hallucinated_answer,
       s.dialogue_history, s.right_response, s.hallucinated_response,
       s.document, s.right_summary, s.hallucinated_summary, s.length_ratio,
       s.truncated_tokens, s.created_at, s.extra_json,
       -- the verify stage's word on the labels: passed | flagged | NULL (not verified)
       CASE WHEN c.outcome IN ('passed', 'flagged') THEN c.outcome END AS label_check,
       CASE WHEN c.outcome = 'flagged' THEN c.reason END AS flag_reason
FROM sample_rows s
LEFT JOIN label_checks c USING (run_id, task, seed_key)
""",
    ),
    (
        "qa_samples",
        """
SELECT run_id, seed_id, pattern, template_hash, knowledge, question, right_answer,
       hallucinated_answer, length_ratio
FROM sample_rows WHERE task = 'qa'
""",
    ),
    (
        "dialogue_samples",
        """
SELECT run_id, seed_id, pattern, template_hash, knowledge, dialogue_history, right_response,
       hallucinated_response, length_ratio
FROM sample_rows WHERE task = 'dialogue'
""",
    ),
    (
        "summarization_samples",
        """
SELECT run_id, seed_id, pattern, template_hash, document, right_summary,
       hallucinated_summary, length_ratio, truncated_tokens
FROM sample_rows WHERE task = 'summarization'
""",
    ),
    (
        "seed_progress",
        """
SELECT s.run_id, s.task, s.seed_key, s.seed_id, s.source_file, s.source_line,
       COALESCE(o.outcome, 'pending') AS outcome, o.stage, o.reason, o.detail
FROM seeds s
LEFT JOIN (
    SELECT * FROM seed_outcomes
    QUALIFY row_number() OVER (PARTITION BY run_id, task, seed_key ORDER BY created_at DESC) = 1
) o USING (run_id, task, seed_key)
""",
    ),
    # Money figures agree everywhere: a call's cost is what the ledger counts for it, every call
    # has a terminal status, and a reservation nobody settled (in flight now, or left open by a
    # crash) counts as spent at its reserved amount until it is settled — never less than the
    # provider may have billed. A batch line's reservation ('batch_reserve') is money like any
    # other call's: unsettled until its batch ends, so the views add up to the ledger in batch
    # mode too.
    (
        "call_money",
        """
WITH attempts AS (
    SELECT call_id, res_no,
           any_value(run_id) AS run_id,
           any_value(key) FILTER (WHERE event IN ('reserve', 'batch_reserve')) AS key,
           any_value(stage) FILTER (WHERE event IN ('reserve', 'batch_reserve')) AS stage,
           any_value(task) FILTER (WHERE event IN ('reserve', 'batch_reserve')) AS task,
           any_value(model) FILTER (WHERE event IN ('reserve', 'batch_reserve')) AS model,
           any_value(seed_key) FILTER (WHERE event IN ('reserve', 'batch_reserve')) AS seed_key,
           min(created_at) FILTER (WHERE event IN ('reserve', 'batch_reserve')) AS reserved_at,
           COALESCE(sum(pusd) FILTER (WHERE event IN ('reserve', 'batch_reserve')), 0) AS reserved,
           COALESCE(sum(pusd) FILTER (WHERE event IN ('settle', 'consume', 'lost')), 0)
               AS charged,
           count(*) FILTER (WHERE event IN ('reserve', 'batch_reserve')) AS reserves,
           count(*) FILTER (WHERE event NOT IN ('reserve', 'batch_reserve')) AS closes,
           bool_or(event = 'lost') AS lost,
           bool_or(event = 'consume') AS consumed
    FROM ledger
    GROUP BY call_id, res_no
)
SELECT call_id, any_value(run_id) AS run_id, any_value(key) AS key,
       any_value(stage) AS stage, any_value(task) AS task, any_value(model) AS model,
       any_value(seed_key) AS seed_key, min(reserved_at) AS created_at,
       sum(reserved) AS reserved_pusd,
       sum(CASE WHEN closes > 0 THEN charged ELSE reserved END) AS cost_pusd,
       sum(CASE WHEN closes > 0 THEN 0 ELSE reserved END) AS open_pusd,
       bool_or(lost) AS lost, bool_or(consumed) AS consumed,
       count(*) AS attempts
FROM attempts
WHERE reserves > 0
GROUP BY call_id
""",
    ),
    # Calls with their money, and the request bodies kept apart in call_requests.
    (
        "calls",
        """
SELECT l.key, l.run_id, l.stage, l.task, l.model, l.seed_key,
       -- a call we stopped after its request had left (Ctrl-C, the budget) counts as
       -- spent: 'abandoned_billed', not 'cancelled' (a cancelled call costs nothing)
       CASE WHEN m.lost THEN 'lost' WHEN m.open_pusd > 0 THEN 'unsettled'
            WHEN l.status IN ('cancelled', 'budget_exhausted') AND m.cost_pusd > 0
                THEN 'abandoned_billed'
            ELSE l.status END AS status,
       l.prompt_tokens, l.completion_tokens, l.cached_tokens, l.usage_estimated,
       COALESCE(m.cost_pusd, 0) / 1e12 AS cost_usd,
       COALESCE(m.reserved_pusd, 0) / 1e12 AS reserved_usd,
       l.latency_ms, l.attempts, l.http_status, l.error_class, l.error, l.finish_reason,
       COALESCE(l.request_json, q.request_json) AS request_json, l.response_json, l.created_at,
       l.call_id
FROM call_log l
LEFT JOIN call_money m USING (call_id)
LEFT JOIN call_requests q USING (call_id)
UNION ALL
SELECT m.key, m.run_id, m.stage, m.task, m.model, m.seed_key,
       CASE WHEN m.lost THEN 'lost' WHEN m.open_pusd > 0 THEN 'unsettled'
            WHEN m.consumed THEN 'consumed' ELSE 'released' END AS status,
       NULL, NULL, NULL, NULL, m.cost_pusd / 1e12, m.reserved_pusd / 1e12, NULL,
       m.attempts, NULL, NULL, NULL, NULL, NULL, NULL, m.created_at, m.call_id
FROM call_money m
WHERE NOT EXISTS (SELECT 1 FROM call_log l WHERE l.call_id = m.call_id)
""",
    ),
    (
        "cost_by_stage",
        """
SELECT run_id, task, stage,
       count(*) AS calls,
       count(*) FILTER (WHERE status = 'cached') AS cached_calls,
       count(*) FILTER (WHERE status IN ('failed', 'lost', 'consumed')) AS failed_calls,
       -- stopped by us, not failed: Ctrl-C, or released when the budget ran out (billed
       -- or not: cost_usd has what they cost)
       count(*) FILTER (WHERE status IN ('cancelled', 'budget_exhausted', 'abandoned_billed'))
           AS cancelled_calls,
       count(*) FILTER (WHERE status = 'unsettled') AS unsettled_calls,
       COALESCE(sum(prompt_tokens), 0) AS prompt_tokens,
       COALESCE(sum(completion_tokens), 0) AS completion_tokens,
       COALESCE(sum(cost_usd), 0) AS cost_usd
FROM calls
GROUP BY run_id, task, stage
""",
    ),
    (
        "run_spend",
        """
SELECT r.run_id, r.status, r.budget_pusd / 1e12 AS budget_usd,
       COALESCE(sum(m.cost_pusd), 0) / 1e12 AS spent_usd,
       COALESCE(sum(m.open_pusd), 0) / 1e12 AS unsettled_usd,
       (r.budget_pusd - COALESCE(sum(m.cost_pusd), 0)) / 1e12 AS remaining_usd
FROM runs r LEFT JOIN call_money m USING (run_id)
GROUP BY r.run_id, r.status, r.budget_pusd
""",
    ),
    (
        "batch_progress",
        """
SELECT b.batch_id, b.run_id, b.kind, b.state, b.status, b.provider_batch_id, b.requests,
       b.completed, b.failed, b.reserved_pusd / 1e12 AS reserved_usd,
       COALESCE((SELECT sum(l.pusd) FROM ledger l JOIN batch_lines bl ON bl.call_id = l.call_id
                 WHERE bl.batch_id = b.batch_id AND l.event IN ('settle', 'consume', 'lost')),
                0) / 1e12
           AS spent_usd,
       b.bytes, b.detail, b.created_at, b.updated_at
FROM batches b
""",
    ),
    (
        "annotations_latest",
        """
SELECT * FROM annotations
QUALIFY row_number() OVER (PARTITION BY item_id, annotator ORDER BY created_at DESC) = 1
""",
    ),
    (
        "annotation_resolved",
        """
SELECT * FROM annotation_resolutions
QUALIFY row_number() OVER (PARTITION BY item_id ORDER BY created_at DESC) = 1
""",
    ),
    (
        "preselect_ranked",
        """
SELECT s.run_id, s.query_key, q.query_id, q.query, s.score, s.n_responses, s.scorer,
       row_number() OVER (PARTITION BY s.run_id ORDER BY s.score, s.query_key) AS rank
FROM preselect_scores s JOIN preselect_queries q USING (run_id, query_key)
""",
    ),
    # More usage than reserved: a provider whose tokenizer counts more than our estimate bills
    # above the reservation. The settle row holds what it billed, the reserve row what was
    # held; one row per attempt where the first exceeds the second (in batch mode too).
    (
        "overshoots",
        """
SELECT s.run_id, s.call_id, r.key, r.stage, r.task, r.model, r.seed_key,
       r.pusd / 1e12 AS reserved_usd, s.pusd / 1e12 AS billed_usd,
       (s.pusd - r.pusd) / 1e12 AS overshoot_usd,
       l.est_prompt_tokens, l.prompt_tokens, l.completion_tokens,
       l.prompt_tokens / NULLIF(l.est_prompt_tokens, 0) AS prompt_ratio, s.created_at
FROM ledger s
JOIN ledger r ON r.call_id = s.call_id AND r.res_no = s.res_no
               AND r.event IN ('reserve', 'batch_reserve')
LEFT JOIN call_log l ON l.call_id = s.call_id
WHERE s.event = 'settle' AND s.pusd > r.pusd
""",
    ),
    # What a sample costs, and where money went without one (``halugen status``, ``halugen sql``).
    # cost_per_sample, per run, task and stage: the provider's prompt cache over the calls it
    # billed (prompt_tokens, cached_tokens, their share), what the cache saved at the run's
    # prices (cached tokens x (input - cached input), at the batch price for batch lines), the
    # stage's money (as cost_by_stage counts it) and that money per sample the task accepted.
    # seed_waste: the money of seeds that gave no sample, by cause: 'guards' (every candidate
    # turned away, at least one by a guard), 'unreadable replies' (candidates or the judge's
    # reply could not be read), 'content filter', 'call failures' (calls that failed after
    # their retries: a resume tries those seeds again), 'too long for the model', 'unfinished'
    # (seeds with money spent and no outcome yet: a resume finishes them), 'other'.
    (
        "cost_per_sample",
        """
WITH prices AS (
    SELECT run_id,
           COALESCE(TRY_CAST(json_extract(price_json, '$.usd_per_million_input') AS DOUBLE), 0)
               AS usd_in,
           COALESCE(TRY_CAST(json_extract(price_json, '$.usd_per_million_cached_input')
                             AS DOUBLE), 0) AS usd_cached,
           COALESCE(TRY_CAST(json_extract(price_json, '$.batch_discount') AS DOUBLE), 0)
               AS discount
    FROM runs
),
billed AS (
    SELECT c.run_id, c.task, c.stage, c.cost_usd,
           CASE WHEN c.status IN ('ok', 'content_filter') THEN c.prompt_tokens END AS prompt,
           CASE WHEN c.status IN ('ok', 'content_filter')
                THEN least(COALESCE(c.cached_tokens, 0), c.prompt_tokens) END AS cached,
           b.call_id IS NOT NULL AS in_batch
    FROM calls c
    LEFT JOIN (SELECT DISTINCT call_id FROM batch_lines) b USING (call_id)
),
accepted AS (
    SELECT run_id, task, count(DISTINCT seed_key) AS accepted FROM sample_rows GROUP BY ALL
)
SELECT c.run_id, c.task, c.stage,
       count(*) AS calls,
       COALESCE(sum(c.prompt), 0) AS prompt_tokens,
       COALESCE(sum(c.cached), 0) AS cached_tokens,
       sum(c.cached) / NULLIF(sum(c.prompt), 0) AS cache_share,
       COALESCE(sum(c.cached * (p.usd_in - p.usd_cached) / 1e6
                    * CASE WHEN c.in_batch THEN 1 - p.discount ELSE 1 END), 0) AS saved_usd,
       COALESCE(sum(c.cost_usd), 0) AS cost_usd,
       COALESCE(any_value(a.accepted), 0) AS accepted,
       sum(c.cost_usd) / NULLIF(any_value(a.accepted), 0) AS cost_per_sample_usd
FROM billed c
LEFT JOIN prices p USING (run_id)
LEFT JOIN accepted a USING (run_id, task)
GROUP BY c.run_id, c.task, c.stage
""",
    ),
    (
        "seed_waste",
        """
WITH seed_cost AS (
    SELECT run_id, task, seed_key, count(*) AS calls, COALESCE(sum(cost_usd), 0) AS cost_usd
    FROM calls
    WHERE seed_key IS NOT NULL AND seed_key <> ''
    GROUP BY ALL
),
turned_away AS (
    SELECT run_id, task, seed_key,
           bool_or(status NOT IN ('ok', 'unparseable', 'refusal', 'truncated',
                                  'content_filter', 'call_failed', 'context_length'))
               AS by_guard,
           bool_or(status IN ('unparseable', 'refusal', 'truncated')) AS unreadable,
           bool_or(status = 'content_filter') AS filtered
    FROM (
        SELECT * FROM candidates
        QUALIFY row_number() OVER (
            PARTITION BY run_id, task, seed_key, idx ORDER BY created_at DESC) = 1
    )
    GROUP BY ALL
)
SELECT p.run_id, p.task,
       CASE
           WHEN p.outcome = 'pending' THEN 'unfinished'
           WHEN p.reason = 'call_failed' THEN 'call failures'
           WHEN p.reason = 'context_length' THEN 'too long for the model'
           WHEN p.reason = 'judge_unparseable' THEN 'unreadable replies'
           WHEN p.reason = 'judge_content_filter' THEN 'content filter'
           WHEN p.reason = 'no_valid_candidate' AND t.by_guard THEN 'guards'
           WHEN p.reason = 'no_valid_candidate' AND t.unreadable THEN 'unreadable replies'
           WHEN p.reason = 'no_valid_candidate' AND t.filtered THEN 'content filter'
           ELSE 'other'
       END AS cause,
       p.stage, COALESCE(p.reason, 'no outcome yet') AS reason,
       count(*) AS seeds,
       COALESCE(sum(s.calls), 0) AS calls,
       COALESCE(sum(s.cost_usd), 0) AS cost_usd
FROM seed_progress p
LEFT JOIN seed_cost s USING (run_id, task, seed_key)
LEFT JOIN turned_away t USING (run_id, task, seed_key)
WHERE p.outcome IN ('rejected', 'failed') OR (p.outcome = 'pending' AND s.cost_usd > 0)
GROUP BY ALL
""",
    ),
)
