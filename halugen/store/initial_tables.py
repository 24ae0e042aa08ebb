"""The SQL of the store's first migration (0001_initial_tables): the generation run's
tables (runs, the money ledger, calls, seeds, samples). Shipped: never edit it."""

from __future__ import annotations

__all__ = ["INITIAL_TABLES"]

INITIAL_TABLES = """
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
