"""The store's schema: tables as append-only, named migrations; views as one current set.

Tables: never edit or reorder a migration that has shipped, add a new one at the end. Each
applied migration is recorded in ``schema_migrations``; opening a store for writing applies
the missing ones; the first one's SQL is in initial_tables.py. Views: ``VIEWS`` (views.py)
is their one current definition, applied after the migrations whenever a store is opened for
writing (db.py re-creates the views whose digest differs), so old stores get today's views
and a change to a view is an edit there, not a migration. (Migrations 0002 and 0006 created
only views, and others created some along with their tables; their view statements live in
``VIEWS`` now, and those two names stay recorded with nothing left to run.)
"""

from __future__ import annotations

from .initial_tables import INITIAL_TABLES

__all__ = ["MIGRATIONS"]

# How far the journal (journal.py) has been fed: its id and the byte position after the last
# group fed, replaced in the same transaction as the rows it fed (one row at most).
_JOURNAL_FED = """
CREATE TABLE journal_fed (
    journal_id VARCHAR NOT NULL,
    position BIGINT NOT NULL
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

# The way of paying a generation run's templates were first planned for (cost/cache.py):
# 'interactive' or 'batch'. Later sessions send the same variants in either mode, so the
# run's stored answers stay its answers.
_RUN_CACHE_PLAN = """
ALTER TABLE runs ADD COLUMN cache_plan VARCHAR;
"""

# The verify stage (stages/verify.py, `run --verify`): per sample, whether a judge found the
# hallucinated text supported by the knowledge (it must not be) and the right text supported
# (it must be). A sample may be checked again (a failed call, another judge model): the
# label_checks view keeps the latest check of each sample.
_LABEL_CHECKS = """
CREATE TABLE label_check_rows (
    run_id VARCHAR NOT NULL,
    task VARCHAR NOT NULL,
    seed_key VARCHAR NOT NULL,
    model VARCHAR NOT NULL,            -- the judge model that was asked
    outcome VARCHAR NOT NULL,          -- passed | flagged | call_failed
    reason VARCHAR,                    -- hallucination_supported | right_unsupported | unsure
    hallucination_verdict VARCHAR,     -- supported | unsupported | unsure | failed
    right_verdict VARCHAR,             -- the same, for the right text
    asked INTEGER,                     -- calls made for the two questions (2 to 4)
    hallucination_key VARCHAR,         -- request keys of the last call of each question
    right_key VARCHAR,
    template_hash VARCHAR,
    hallucination_raw VARCHAR,
    right_raw VARCHAR,
    detail VARCHAR,
    created_at TIMESTAMP NOT NULL
);
"""

# Which reader produced each recognition verdict: 'strict' (the reply contract only) or
# 'lenient' (the interpreting reader, eval --read lenient). Rows written before were all read
# by the interpreting reader, so they say 'lenient'.
_JUDGEMENT_READER = """
ALTER TABLE judgements ADD COLUMN reader VARCHAR;
UPDATE judgements SET reader = 'lenient' WHERE reader IS NULL;
"""

# The window a run's records were last fitted to, in words with where it came from ("a
# 2,048-token window (the server's per-slot context: -c 4096 over 2 slots)"): the card says
# it beside how many records were cut (cut_note.py). runs.context_window stays the number
# the next session compares its own window with.
_RUN_FITTED_WINDOW = """
ALTER TABLE runs ADD COLUMN fitted_window VARCHAR;
"""

# The hard split of each generation run's task: the samples the latest ``audit --balance``
# over them kept (audit/balance.py), which ``export`` writes beside the full set as split
# ``hard``. A new balance of a task replaces the rows of the runs it covered.
_HARD_SPLITS = """
CREATE TABLE hard_split_rows (
    audit_id VARCHAR NOT NULL,         -- the audit that chose them (audit_results.audit_id)
    run_id VARCHAR NOT NULL,
    task VARCHAR NOT NULL,
    seed_key VARCHAR NOT NULL,
    balanced BOOLEAN NOT NULL,         -- every audited figure within the tolerance of chance
    created_at TIMESTAMP NOT NULL
);
"""

MIGRATIONS: tuple[tuple[str, str], ...] = (
    ("0001_initial_tables", INITIAL_TABLES),
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
    ("0023_label_checks", _LABEL_CHECKS),  # and the label_checks view, samples' columns (VIEWS)
    ("0024_journal_fed", _JOURNAL_FED),
    ("0026_hard_splits", _HARD_SPLITS),
    ("0029_judgement_reader", _JUDGEMENT_READER),
    ("0031_run_fitted_window", _RUN_FITTED_WINDOW),
)
