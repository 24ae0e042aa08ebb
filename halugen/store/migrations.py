"""The store's schema as append-only, named migrations.

Never edit or reorder a migration that has shipped: add a new one at the end. Each applied
migration is recorded in ``schema_migrations``; opening a store applies the missing ones.
Views are (re)created by the last migration that touches them, so their names stay stable.
"""

from __future__ import annotations

__all__ = ["MIGRATIONS", "TABLE_COLUMNS"]

# Column order of the tables the group-commit writer appends to.
TABLE_COLUMNS: dict[str, tuple[str, ...]] = {
    "ledger": (
        "call_id", "res_no", "run_id", "event", "pusd", "key", "stage", "task", "model",
        "seed_key", "created_at",
    ),
    "call_log": (
        "call_id", "key", "key_prefix", "run_id", "stage", "task", "model", "seed_key",
        "status", "prompt_tokens", "completion_tokens", "cached_tokens", "usage_estimated",
        "est_prompt_tokens", "cost_pusd", "reserved_pusd", "latency_ms", "attempts",
        "http_status", "error_class", "error", "finish_reason", "request_json",
        "response_json", "created_at",
    ),
    "seeds": (
        "run_id", "task", "seed_key", "seed_id", "dataset", "source_file", "source_line",
        "fields_json", "truncated_tokens", "created_at",
    ),
    "seed_outcomes": (
        "run_id", "task", "seed_key", "outcome", "stage", "reason", "detail", "created_at",
    ),
    "bad_records": ("run_id", "task", "source_file", "source_line", "reason", "created_at"),
    "candidates": (
        "run_id", "task", "seed_key", "idx", "template", "template_hash", "call_key", "text",
        "pattern", "status", "detail", "raw", "created_at",
    ),
    "filter_decisions": (
        "run_id", "task", "seed_key", "shown_order", "chosen", "method", "call_key",
        "template_hash", "raw", "detail", "created_at",
    ),
    "sample_rows": (
        "run_id", "task", "seed_key", "seed_id", "dataset", "source_file", "source_line",
        "pattern", "template", "template_hash", "filter_template_hash", "selected_by", "model",
        "knowledge", "question", "right_answer", "hallucinated_answer",
        "dialogue_history", "right_response", "hallucinated_response",
        "document", "right_summary", "hallucinated_summary",
        "length_ratio", "extra_json", "truncated_tokens", "created_at",
    ),
}

_INITIAL = """
CREATE TABLE runs (
    run_id VARCHAR PRIMARY KEY,
    kind VARCHAR NOT NULL,             -- generate | eval | preselect
    config_hash VARCHAR NOT NULL,
    config_json VARCHAR NOT NULL,
    tasks VARCHAR NOT NULL,
    model VARCHAR NOT NULL,
    base_url VARCHAR NOT NULL,
    price_json VARCHAR,
    budget_pusd BIGINT,                -- NULL: no budget
    status VARCHAR NOT NULL,           -- running | done | budget_exhausted | interrupted | failed
    status_detail VARCHAR,
    halugen_version VARCHAR,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL
);

-- The money ledger: append-only events. A 'reserve' row is committed before its request
-- leaves; 'settle' / 'release' / 'consume' / 'lost' close it. Spent = settle + consume + lost.
CREATE TABLE ledger (
    call_id BIGINT NOT NULL,
    res_no INTEGER NOT NULL,
    run_id VARCHAR NOT NULL,
    event VARCHAR NOT NULL,
    pusd BIGINT NOT NULL,              -- picodollars (1e-12 USD)
    key VARCHAR,
    stage VARCHAR,
    task VARCHAR,
    model VARCHAR,
    seed_key VARCHAR,
    created_at TIMESTAMP NOT NULL
);

-- One row per finished logical LLM call; status 'ok' rows are the request-key cache.
CREATE TABLE call_log (
    call_id BIGINT NOT NULL,
    key VARCHAR NOT NULL,
    key_prefix BIGINT NOT NULL,        -- first 8 bytes of the key, for an in-memory index
    run_id VARCHAR NOT NULL,
    stage VARCHAR NOT NULL,
    task VARCHAR,
    model VARCHAR NOT NULL,
    seed_key VARCHAR,
    status VARCHAR NOT NULL,           -- ok | cached | content_filter | failed | budget
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    cached_tokens INTEGER,
    usage_estimated BOOLEAN,
    est_prompt_tokens INTEGER,
    cost_pusd BIGINT NOT NULL,
    reserved_pusd BIGINT NOT NULL,
    latency_ms DOUBLE,
    attempts INTEGER,
    http_status INTEGER,
    error_class VARCHAR,
    error VARCHAR,
    finish_reason VARCHAR,
    request_json VARCHAR,
    response_json VARCHAR,
    created_at TIMESTAMP NOT NULL
);

CREATE TABLE seeds (
    run_id VARCHAR NOT NULL,
    task VARCHAR NOT NULL,
    seed_key VARCHAR NOT NULL,
    seed_id VARCHAR,
    dataset VARCHAR,
    source_file VARCHAR,
    source_line BIGINT,
    fields_json VARCHAR NOT NULL,
    created_at TIMESTAMP NOT NULL
);

CREATE TABLE seed_outcomes (
    run_id VARCHAR NOT NULL,
    task VARCHAR NOT NULL,
    seed_key VARCHAR NOT NULL,
    outcome VARCHAR NOT NULL,          -- sampled | rejected | failed
    stage VARCHAR,
    reason VARCHAR,
    detail VARCHAR,
    created_at TIMESTAMP NOT NULL
);

CREATE TABLE bad_records (
    run_id VARCHAR NOT NULL,
    task VARCHAR,
    source_file VARCHAR,
    source_line BIGINT,
    reason VARCHAR,
    created_at TIMESTAMP NOT NULL
);

CREATE TABLE candidates (
    run_id VARCHAR NOT NULL,
    task VARCHAR NOT NULL,
    seed_key VARCHAR NOT NULL,
    idx INTEGER NOT NULL,
    template VARCHAR,
    template_hash VARCHAR,
    call_key VARCHAR,
    text VARCHAR,
    pattern VARCHAR,
    status VARCHAR NOT NULL,
    detail VARCHAR,
    raw VARCHAR,
    created_at TIMESTAMP NOT NULL
);

CREATE TABLE filter_decisions (
    run_id VARCHAR NOT NULL,
    task VARCHAR NOT NULL,
    seed_key VARCHAR NOT NULL,
    shown_order VARCHAR,
    chosen INTEGER,
    method VARCHAR NOT NULL,
    call_key VARCHAR,
    template_hash VARCHAR,
    raw VARCHAR,
    detail VARCHAR,
    created_at TIMESTAMP NOT NULL
);

CREATE TABLE sample_rows (
    run_id VARCHAR NOT NULL,
    task VARCHAR NOT NULL,
    seed_key VARCHAR NOT NULL,
    seed_id VARCHAR,
    dataset VARCHAR,
    source_file VARCHAR,
    source_line BIGINT,
    pattern VARCHAR,
    template VARCHAR,
    template_hash VARCHAR,
    filter_template_hash VARCHAR,
    selected_by VARCHAR,
    model VARCHAR,
    knowledge VARCHAR,
    question VARCHAR,
    right_answer VARCHAR,
    hallucinated_answer VARCHAR,
    dialogue_history VARCHAR,
    right_response VARCHAR,
    hallucinated_response VARCHAR,
    document VARCHAR,
    right_summary VARCHAR,
    hallucinated_summary VARCHAR,
    length_ratio DOUBLE,
    extra_json VARCHAR,
    created_at TIMESTAMP NOT NULL
);
"""

_VIEWS_V1 = """
CREATE OR REPLACE VIEW samples AS
SELECT run_id, task, seed_id, seed_key, pattern, template, template_hash,
       filter_template_hash, selected_by, model, dataset, source_file, source_line,
       knowledge, question, right_answer, hallucinated_answer,
       dialogue_history, right_response, hallucinated_response,
       document, right_summary, hallucinated_summary, length_ratio, created_at
FROM sample_rows;

CREATE OR REPLACE VIEW qa_samples AS
SELECT run_id, seed_id, pattern, template_hash, knowledge, question, right_answer,
       hallucinated_answer, length_ratio
FROM sample_rows WHERE task = 'qa';

CREATE OR REPLACE VIEW calls AS
SELECT key, run_id, stage, task, model, seed_key, status, prompt_tokens, completion_tokens,
       cached_tokens, usage_estimated, cost_pusd / 1e12 AS cost_usd,
       reserved_pusd / 1e12 AS reserved_usd, latency_ms, attempts, http_status, error_class,
       error, finish_reason, request_json, response_json, created_at, call_id
FROM call_log
UNION ALL
SELECT r.key, r.run_id, r.stage, r.task, r.model, r.seed_key,
       CASE WHEN c.call_id IS NULL THEN 'reserved' ELSE 'lost' END AS status,
       NULL, NULL, NULL, NULL, COALESCE(c.pusd, 0) / 1e12, r.pusd / 1e12, NULL, NULL, NULL,
       NULL, NULL, NULL, NULL, NULL, r.created_at, r.call_id
FROM ledger r
LEFT JOIN ledger c
       ON c.call_id = r.call_id AND c.res_no = r.res_no AND c.event = 'lost'
WHERE r.event = 'reserve'
  AND NOT EXISTS (SELECT 1 FROM call_log l WHERE l.call_id = r.call_id);

CREATE OR REPLACE VIEW cost_by_stage AS
SELECT run_id, task, stage,
       count(*) FILTER (WHERE status NOT IN ('reserved')) AS calls,
       count(*) FILTER (WHERE status = 'cached') AS cached_calls,
       count(*) FILTER (WHERE status IN ('failed', 'lost')) AS failed_calls,
       COALESCE(sum(prompt_tokens), 0) AS prompt_tokens,
       COALESCE(sum(completion_tokens), 0) AS completion_tokens,
       COALESCE(sum(cost_usd), 0) AS cost_usd
FROM calls
GROUP BY run_id, task, stage;

CREATE OR REPLACE VIEW run_spend AS
SELECT r.run_id, r.status, r.budget_pusd / 1e12 AS budget_usd,
       COALESCE(sum(l.pusd) FILTER (WHERE l.event IN ('settle', 'consume', 'lost')), 0) / 1e12
           AS spent_usd
FROM runs r LEFT JOIN ledger l USING (run_id)
GROUP BY r.run_id, r.status, r.budget_pusd;

CREATE OR REPLACE VIEW seed_progress AS
SELECT s.run_id, s.task, s.seed_key, s.seed_id, s.source_file, s.source_line,
       COALESCE(o.outcome, 'pending') AS outcome, o.stage, o.reason, o.detail
FROM seeds s
LEFT JOIN (
    SELECT * FROM seed_outcomes
    QUALIFY row_number() OVER (PARTITION BY run_id, task, seed_key ORDER BY created_at DESC) = 1
) o USING (run_id, task, seed_key);
"""

# Long documents: how many tokens were cut to fit the model's context (NULL: none).
_TRUNCATION = """
ALTER TABLE seeds ADD COLUMN truncated_tokens INTEGER;
ALTER TABLE sample_rows ADD COLUMN truncated_tokens INTEGER;

CREATE OR REPLACE VIEW samples AS
SELECT run_id, task, seed_id, seed_key, pattern, template, template_hash,
       filter_template_hash, selected_by, model, dataset, source_file, source_line,
       knowledge, question, right_answer, hallucinated_answer,
       dialogue_history, right_response, hallucinated_response,
       document, right_summary, hallucinated_summary, length_ratio, truncated_tokens,
       created_at
FROM sample_rows;

CREATE OR REPLACE VIEW dialogue_samples AS
SELECT run_id, seed_id, pattern, template_hash, knowledge, dialogue_history, right_response,
       hallucinated_response, length_ratio
FROM sample_rows WHERE task = 'dialogue';

CREATE OR REPLACE VIEW summarization_samples AS
SELECT run_id, seed_id, pattern, template_hash, document, right_summary,
       hallucinated_summary, length_ratio, truncated_tokens
FROM sample_rows WHERE task = 'summarization';
"""

MIGRATIONS: tuple[tuple[str, str], ...] = (
    ("0001_initial_tables", _INITIAL),
    ("0002_views", _VIEWS_V1),
    ("0003_long_documents", _TRUNCATION),
)
