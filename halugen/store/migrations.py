"""The store's schema: tables as append-only, named migrations; views as one current set.

Tables: never edit or reorder a migration that has shipped, add a new one at the end. Each
applied migration is recorded in ``schema_migrations``; opening a store for writing applies
the missing ones. Views: ``VIEWS`` is their one current definition, applied after the
migrations whenever a store is opened for writing (db.py re-creates the views whose digest
differs), so old stores get today's views and a change to a view is an edit here, not a
migration. (Migrations 0002 and 0006 created only
views, and others created some along with their tables; their view statements live in
``VIEWS`` now, and those two names stay recorded with nothing left to run.)
"""

from __future__ import annotations

# The column order of appended tables lives in rows.py (re-exported here).
from .rows import TABLE_COLUMNS

__all__ = ["MIGRATIONS", "TABLE_COLUMNS", "VIEWS"]

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

# Long documents: how many tokens were cut to fit the model's context (NULL: none).
_TRUNCATION = """
ALTER TABLE seeds ADD COLUMN truncated_tokens INTEGER;
ALTER TABLE sample_rows ADD COLUMN truncated_tokens INTEGER;
"""

# The benchmark's other halves: recognition experiments, pre-selection of user queries,
# human annotation, topic analysis.
_EVALUATION = """
CREATE TABLE judgements (
    run_id VARCHAR NOT NULL,
    task VARCHAR NOT NULL,
    item_key VARCHAR NOT NULL,         -- fingerprint of the evaluated item
    item_id VARCHAR,                   -- its id in the source (seed id, file:line, ID)
    strategy VARCHAR NOT NULL,         -- plain | knowledge | cot | contrast
    model VARCHAR NOT NULL,
    shown VARCHAR NOT NULL,            -- hallucinated | right | both (contrast)
    truth BOOLEAN NOT NULL,            -- true when the shown answer is hallucinated
    verdict VARCHAR NOT NULL,          -- yes | no | invalid (contrast: yes = picked right)
    p_yes DOUBLE,                      -- with --scoring logprobs
    shown_length INTEGER,              -- characters of the shown answer (length baseline)
    raw VARCHAR,
    call_key VARCHAR,
    template_hash VARCHAR,
    created_at TIMESTAMP NOT NULL
);

CREATE TABLE preselect_queries (
    run_id VARCHAR NOT NULL,
    query_key VARCHAR NOT NULL,
    query_id VARCHAR,
    query VARCHAR NOT NULL,
    source_file VARCHAR,
    source_line BIGINT,
    created_at TIMESTAMP NOT NULL
);

CREATE TABLE preselect_responses (
    run_id VARCHAR NOT NULL,
    query_key VARCHAR NOT NULL,
    idx INTEGER NOT NULL,
    response VARCHAR NOT NULL,
    call_key VARCHAR,
    created_at TIMESTAMP NOT NULL
);

CREATE TABLE preselect_scores (
    run_id VARCHAR NOT NULL,
    query_key VARCHAR NOT NULL,
    score DOUBLE NOT NULL,             -- mean pairwise BERTScore F1 of its responses
    n_responses INTEGER NOT NULL,
    scorer VARCHAR NOT NULL,           -- model (and layers, rescaling) that scored it
    created_at TIMESTAMP NOT NULL
);

CREATE TABLE annotation_items (
    item_id VARCHAR NOT NULL,
    source VARCHAR NOT NULL,           -- preselect | halueval | labelstudio | jsonl
    run_id VARCHAR,
    query VARCHAR NOT NULL,
    response VARCHAR NOT NULL,
    meta_json VARCHAR,
    created_at TIMESTAMP NOT NULL
);

-- append-only: an annotator's latest row for an item is their label
CREATE TABLE annotations (
    item_id VARCHAR NOT NULL,
    annotator VARCHAR NOT NULL,
    label VARCHAR NOT NULL,            -- yes | no (hallucinated?)
    spans_json VARCHAR NOT NULL,       -- [{"start", "end", "text", "kind"}], character offsets
    note VARCHAR,
    source VARCHAR NOT NULL,           -- web | import | halueval
    created_at TIMESTAMP NOT NULL
);

CREATE TABLE annotation_resolutions (
    item_id VARCHAR NOT NULL,
    label VARCHAR NOT NULL,
    spans_json VARCHAR NOT NULL,
    n_labels INTEGER NOT NULL,
    agreement DOUBLE,                  -- share of annotators agreeing with the label
    method VARCHAR NOT NULL,           -- majority | single | tie
    created_at TIMESTAMP NOT NULL
);

CREATE TABLE topic_results (
    analysis_id VARCHAR NOT NULL,
    task VARCHAR NOT NULL,
    topic_set VARCHAR NOT NULL,        -- all | failures
    topic INTEGER NOT NULL,
    top_words VARCHAR NOT NULL,
    share_samples DOUBLE,
    share_failures DOUBLE,
    coherence DOUBLE,
    created_at TIMESTAMP NOT NULL
);
"""

# Each `halugen annotate resolve` records the agreement it measured.
_AGREEMENT = """
CREATE TABLE annotation_agreement (
    items INTEGER NOT NULL,
    kappa_items INTEGER,
    kappa_raters INTEGER,
    fleiss_kappa DOUBLE,
    percent_agreement DOUBLE,
    krippendorff_alpha DOUBLE,
    span_agreement DOUBLE,
    report_json VARCHAR NOT NULL,
    created_at TIMESTAMP NOT NULL
);
"""

# What a server has told us about a model (its context window, from its own description or
# from a context-length error), and the window each run was last fitted to.
_ENDPOINT_FACTS = """
CREATE TABLE endpoint_facts (
    base_url VARCHAR NOT NULL,
    model VARCHAR NOT NULL,
    context_window INTEGER NOT NULL,
    source VARCHAR NOT NULL,           -- models | props | error | flag
    created_at TIMESTAMP NOT NULL
);
ALTER TABLE runs ADD COLUMN context_window INTEGER;
"""

# The annotation server's logins, leases and extra places, so a restart keeps them.
# Append-only like the rest: the latest row of a session (or of an annotator's lease on an
# item) is its state. Cookies and tokens are never stored, only their sha256.
_ANNOTATION_SESSIONS = """
CREATE TABLE annotation_sessions (
    session_hash VARCHAR NOT NULL,     -- sha256 of the session cookie
    annotator VARCHAR,                 -- NULL for an organiser session
    role VARCHAR NOT NULL,             -- annotator | organiser
    token_hash VARCHAR,                -- sha256 of the token used to log in (NULL: none)
    event VARCHAR NOT NULL,            -- login | logout
    created_at TIMESTAMP NOT NULL
);

CREATE TABLE annotation_leases (
    annotator VARCHAR NOT NULL,
    item_id VARCHAR NOT NULL,
    expires_at DOUBLE NOT NULL,        -- the server clock, seconds since the epoch; 0: released
    seq BIGINT NOT NULL,               -- order within one server process (a commit's rows
                                       -- share created_at)
    created_at TIMESTAMP NOT NULL
);

-- one row per extra annotator an organiser asked for on an item (to settle a tie)
CREATE TABLE annotation_extra_places (
    item_id VARCHAR NOT NULL,
    created_at TIMESTAMP NOT NULL
);
"""

# Pre-selection: a response that cannot be scored (empty, content-filtered) is kept here,
# never in preselect_responses, so it never reaches the scorer or the annotators; a query
# left with fewer than two usable responses, or whose scoring failed, is recorded unscored
# with the reason (cause 'responses' stays so; cause 'scorer' is tried again on resume).
_PRESELECT_UNSCORED = """
CREATE TABLE preselect_dropped (
    run_id VARCHAR NOT NULL,
    query_key VARCHAR NOT NULL,
    idx INTEGER NOT NULL,
    reason VARCHAR NOT NULL,           -- empty | content_filter
    response VARCHAR NOT NULL,         -- what came back (often "")
    call_key VARCHAR,
    created_at TIMESTAMP NOT NULL
);

CREATE TABLE preselect_unscored (
    run_id VARCHAR NOT NULL,
    query_key VARCHAR NOT NULL,
    n_responses INTEGER NOT NULL,      -- usable responses it had
    cause VARCHAR NOT NULL,            -- responses | scorer
    reason VARCHAR NOT NULL,
    scorer VARCHAR NOT NULL,
    created_at TIMESTAMP NOT NULL
);
"""

# Topic analysis: which eval run (model, strategy) the failures of an analysis came from.
_TOPIC_SOURCE = """
ALTER TABLE topic_results ADD COLUMN eval_run VARCHAR;
ALTER TABLE topic_results ADD COLUMN eval_model VARCHAR;
ALTER TABLE topic_results ADD COLUMN eval_strategy VARCHAR;
"""

# The request bodies of successful calls, apart from their answers: an answer must be durable
# before its call counts as done (the durable lane, waited for), its request body need not
# (the bulk lane), and bodies are most of the bytes. The calls view shows them together.
_CALL_REQUESTS = """
CREATE TABLE call_requests (
    call_id BIGINT NOT NULL,
    request_json VARCHAR NOT NULL,
    created_at TIMESTAMP NOT NULL
);
"""

# What an endpoint can do (structured outputs), learned by a run; the latest row per
# (endpoint, model, capability) is what later runs assume, and each run's row says how it asked.
_CAPABILITIES = """
CREATE TABLE endpoint_capabilities (
    endpoint VARCHAR NOT NULL,         -- the chat-completions URL
    model VARCHAR NOT NULL,
    capability VARCHAR NOT NULL,       -- json_schema
    supported BOOLEAN NOT NULL,
    detail VARCHAR,                    -- mode and how it was learned
    run_id VARCHAR,
    created_at TIMESTAMP NOT NULL
);
"""

# `halugen audit`: how far a benchmark can be solved without its knowledge, per measure.
_AUDIT = """
CREATE TABLE audit_results (
    audit_id VARCHAR NOT NULL,
    source VARCHAR NOT NULL,           -- a file, or "runs <ids>" / "store"
    task VARCHAR NOT NULL,
    pattern VARCHAR NOT NULL,          -- "all" or one pattern
    measure VARCHAR NOT NULL,          -- length_only | answer_only | overlap | picks_* | ...
    n INTEGER NOT NULL,
    value DOUBLE,
    ci_low DOUBLE,
    ci_high DOUBLE,
    chance DOUBLE,
    detail_json VARCHAR,
    created_at TIMESTAMP NOT NULL
);
"""

# Batch mode (the providers' Batch APIs) and batch files for other engines (halugen/batch/).
# A line's money is in the ledger under its call_id: 'batch_reserve' (committed with the line,
# before its file is uploaded), then 'settle' (its own usage, at the batch price), 'release'
# (failed, expired, cancelled: not billed) or 'lost' (the provider lost the batch: counted as
# spent). 'batch_reserve' is not 'reserve' on purpose: a batch outlives the session that sent
# it, so a resume must poll it, not count its lines lost the way it does calls in flight.
_BATCHES = """
CREATE TABLE batches (
    batch_id VARCHAR NOT NULL,         -- halugen's id (hb-...)
    run_id VARCHAR NOT NULL,
    kind VARCHAR NOT NULL,             -- api (sent to a Batch API) | export (a batch file)
    state VARCHAR NOT NULL,            -- submitting | submitted | collected | abandoned | lost
                                       -- | exported
    status VARCHAR,                    -- the provider's: validating | in_progress | finalizing
                                       -- | completed | failed | expired | cancelling | cancelled
    provider_batch_id VARCHAR,
    input_file_id VARCHAR,
    output_file_id VARCHAR,
    error_file_id VARCHAR,
    requests INTEGER NOT NULL,
    completed INTEGER,
    failed INTEGER,
    reserved_pusd BIGINT NOT NULL,     -- worst case of all its lines, at the batch price
    bytes BIGINT,                      -- size of its input file
    base_url VARCHAR,
    detail VARCHAR,
    updated_at TIMESTAMP,
    created_at TIMESTAMP NOT NULL
);

CREATE TABLE batch_lines (
    batch_id VARCHAR NOT NULL,
    line_no INTEGER NOT NULL,
    call_id BIGINT NOT NULL,           -- its ledger rows and its call_log row
    custom_id VARCHAR NOT NULL,        -- the request key
    run_id VARCHAR NOT NULL,
    stage VARCHAR,
    task VARCHAR,
    model VARCHAR,
    seed_key VARCHAR,
    est_prompt_tokens INTEGER,
    max_output_tokens INTEGER,
    reserved_pusd BIGINT,
    request_json VARCHAR NOT NULL,     -- the body, exactly as in the file
    created_at TIMESTAMP NOT NULL
);
"""

# The seed files a generation run read, each with its size and hash when the run started:
# a resume whose files changed under the same paths is refused (seeds/stamps.py).
_SEED_FILES = """
CREATE TABLE seed_files (
    run_id VARCHAR NOT NULL,
    path VARCHAR NOT NULL,             -- as the seed paths name it (globs and folders expanded)
    size BIGINT NOT NULL,              -- bytes
    sha256 VARCHAR NOT NULL,
    recorded_at TIMESTAMP NOT NULL
);
"""

# A recognition reply the verdict reader cannot read is asked again once: how often each item
# was asked and what the first reply said, so first-reply invalids and re-asks are counted
# apart from the final verdict. Rows written before have NULLs: asked once.
_JUDGEMENT_REASK = """
ALTER TABLE judgements ADD COLUMN asked INTEGER;          -- 1, or 2 when asked again
ALTER TABLE judgements ADD COLUMN first_verdict VARCHAR;  -- yes | no | invalid: the first reply
ALTER TABLE judgements ADD COLUMN first_raw VARCHAR;      -- the first reply, when asked again
"""

# Task folders (a user's own tasks): the declaration and templates of each folder a run used
# are kept, so exports and audits read the task back without its folder. (The fields a task
# names otherwise than HaluEval's are in sample_rows.extra_json, shown by the samples view.)
_TASK_FOLDERS = """
CREATE TABLE task_folders (
    task VARCHAR NOT NULL,
    folder VARCHAR,                    -- where it was read from
    digest VARCHAR NOT NULL,           -- sha256 of files_json
    files_json VARCHAR NOT NULL,       -- {"task.toml": ..., "prompts/<stem>.txt": ...}
    created_at TIMESTAMP NOT NULL
);
"""

# Where each capability decision came from: "probe" rows are what later runs of the endpoint
# and model assume; every row says how its run asked (flag, stored, run, probe, default).
_CAPABILITY_SOURCE = """
ALTER TABLE endpoint_capabilities ADD COLUMN source VARCHAR;
UPDATE endpoint_capabilities SET source = CASE
    WHEN detail LIKE 'auto: known%' THEN 'stored'
    WHEN detail LIKE 'auto:%' THEN 'probe'
    ELSE 'flag' END;
"""

# What bound the pace of the run's last session, and for what share of it ("limit 93%"):
# the provider's limit, the concurrency cap (-j), the server's capacity or halugen's CPU.
_RUN_BOUND_BY = """
ALTER TABLE runs ADD COLUMN bound_by VARCHAR;
"""

# The way of paying a generation run's templates were first planned for (cacheplan.py):
# 'interactive' or 'batch'. Later sessions send the same variants in either mode, so the
# run's stored answers stay its answers.
_RUN_CACHE_PLAN = """
ALTER TABLE runs ADD COLUMN cache_plan VARCHAR;
"""

MIGRATIONS: tuple[tuple[str, str], ...] = (
    ("0001_initial_tables", _INITIAL),
    ("0002_views", ""),  # views only: see VIEWS
    ("0003_long_documents", _TRUNCATION),
    ("0004_evaluation_preselection_annotation", _EVALUATION),
    ("0005_annotation_agreement", _AGREEMENT),
    ("0006_money_views", ""),  # views only: see VIEWS
    ("0007_endpoint_facts", _ENDPOINT_FACTS),
    ("0008_annotation_sessions", _ANNOTATION_SESSIONS),
    ("0009_preselect_unscored", _PRESELECT_UNSCORED),
    ("0010_topic_results_eval_source", _TOPIC_SOURCE),
    ("0011_call_requests", _CALL_REQUESTS),
    ("0012_endpoint_capabilities", _CAPABILITIES),
    ("0013_audit_results", _AUDIT),
    ("0014_batches", _BATCHES),
    ("0015_seed_files", _SEED_FILES),
    ("0016_judgement_reask", _JUDGEMENT_REASK),
    ("0017_task_folders", _TASK_FOLDERS),  # and extra_json in the samples view (VIEWS)
    ("0018_capability_source", _CAPABILITY_SOURCE),
    ("0019_usage_overshoot", ""),  # a view only: overshoots (VIEWS)
    ("0020_run_bound_by", _RUN_BOUND_BY),
    ("0021_cost_views", ""),  # views only: cost_per_sample, seed_waste (VIEWS)
    ("0022_run_cache_plan", _RUN_CACHE_PLAN),
)


# -- views: the SQL surface (README "The store"), in the order they depend on each other ---
# Each is (name, SELECT); db.py re-creates them, in one transaction, after migrating.
VIEWS: tuple[tuple[str, str], ...] = (
    (
        "samples",
        """
SELECT run_id, task, seed_id, seed_key, pattern, template, template_hash,
       filter_template_hash, selected_by, model, dataset, source_file, source_line,
       knowledge, question, right_answer, hallucinated_answer,
       dialogue_history, right_response, hallucinated_response,
       document, right_summary, hallucinated_summary, length_ratio, truncated_tokens,
       created_at, extra_json
FROM sample_rows
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
       CASE WHEN m.lost THEN 'lost' WHEN m.open_pusd > 0 THEN 'unsettled' ELSE l.status END
           AS status,
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
       -- stopped by us, not failed: Ctrl-C, or released when the budget ran out
       count(*) FILTER (WHERE status IN ('cancelled', 'budget_exhausted')) AS cancelled_calls,
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
