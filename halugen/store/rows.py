"""The rows appended to the store: one typed record per appended table (inserting.py puts them in).

Each table that rows are appended to has a record here (a ``NamedTuple``): its fields are the
table's columns in order, without ``created_at``, which whoever commits stamps. A test checks
every record against its table after the migrations. Records are plain tuples underneath, so
they go to DuckDB exactly as the positional tuples of before did (the writer now takes only
records and ``Statement``): as a dict of NumPy object columns, which DuckDB scans directly
and casts to the table's types (inserting.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

__all__ = [
    "RECORDS",
    "TABLE_COLUMNS",
    "AnnotationAgreementRow",
    "AnnotationExtraPlaceRow",
    "AnnotationItemRow",
    "AnnotationLeaseRow",
    "AnnotationResolutionRow",
    "AnnotationRow",
    "AnnotationSessionRow",
    "AuditResultRow",
    "BadRecordRow",
    "BatchLineRow",
    "BatchRow",
    "CallLogRow",
    "CallRequestRow",
    "CandidateRow",
    "EndpointCapabilityRow",
    "EndpointFactRow",
    "FilterDecisionRow",
    "JudgementRow",
    "LabelCheckRow",
    "LedgerRow",
    "PreselectDroppedRow",
    "PreselectQueryRow",
    "PreselectResponseRow",
    "PreselectScoreRow",
    "PreselectUnscoredRow",
    "Record",
    "SampleRow",
    "SeedOutcomeRow",
    "SeedRow",
    "Statement",
    "TaskFolderRow",
    "TopicResultRow",
    "table_of",
]


class LedgerRow(NamedTuple):
    """A row of ``ledger``."""

    call_id: int
    res_no: int
    run_id: str
    event: str
    pusd: int
    key: str | None
    stage: str | None
    task: str | None
    model: str | None
    seed_key: str | None


class CallLogRow(NamedTuple):
    """A row of ``call_log``."""

    call_id: int
    key: str
    key_prefix: int
    run_id: str
    stage: str
    task: str | None
    model: str
    seed_key: str | None
    status: str
    prompt_tokens: int | None
    completion_tokens: int | None
    cached_tokens: int | None
    usage_estimated: bool | None
    est_prompt_tokens: int | None
    cost_pusd: int
    reserved_pusd: int
    latency_ms: float | None
    attempts: int | None
    http_status: int | None
    error_class: str | None
    error: str | None
    finish_reason: str | None
    request_json: str | None
    response_json: str | None


class SeedRow(NamedTuple):
    """A row of ``seeds``."""

    run_id: str
    task: str
    seed_key: str
    seed_id: str | None
    dataset: str | None
    source_file: str | None
    source_line: int | None
    fields_json: str
    truncated_tokens: int | None


class SeedOutcomeRow(NamedTuple):
    """A row of ``seed_outcomes``."""

    run_id: str
    task: str
    seed_key: str
    outcome: str
    stage: str | None
    reason: str | None
    detail: str | None


class BadRecordRow(NamedTuple):
    """A row of ``bad_records``."""

    run_id: str
    task: str | None
    source_file: str | None
    source_line: int | None
    reason: str | None


class CallRequestRow(NamedTuple):
    """A row of ``call_requests``."""

    call_id: int
    request_json: str


class CandidateRow(NamedTuple):
    """A row of ``candidates``."""

    run_id: str
    task: str
    seed_key: str
    idx: int
    template: str | None
    template_hash: str | None
    call_key: str | None
    text: str | None
    pattern: str | None
    status: str
    detail: str | None
    raw: str | None


class FilterDecisionRow(NamedTuple):
    """A row of ``filter_decisions``."""

    run_id: str
    task: str
    seed_key: str
    shown_order: str | None
    chosen: int | None
    method: str
    call_key: str | None
    template_hash: str | None
    raw: str | None
    detail: str | None


class LabelCheckRow(NamedTuple):
    """A row of ``label_check_rows`` (the verify stage's check of one sample)."""

    run_id: str
    task: str
    seed_key: str
    model: str
    outcome: str
    reason: str | None
    hallucination_verdict: str | None
    right_verdict: str | None
    asked: int | None
    hallucination_key: str | None
    right_key: str | None
    template_hash: str | None
    hallucination_raw: str | None
    right_raw: str | None
    detail: str | None


class JudgementRow(NamedTuple):
    """A row of ``judgements``."""

    run_id: str
    task: str
    item_key: str
    item_id: str | None
    strategy: str
    model: str
    shown: str
    truth: bool
    verdict: str
    p_yes: float | None
    shown_length: int | None
    raw: str | None
    call_key: str | None
    template_hash: str | None
    asked: int | None  # 2: the first reply was unreadable and the judge was asked again
    first_verdict: str | None  # the first reply's reading, when asked again
    first_raw: str | None  # the first reply, when asked again
    reader: str | None = None  # strict | lenient: which reader read the verdict (None: lenient)


class PreselectQueryRow(NamedTuple):
    """A row of ``preselect_queries``."""

    run_id: str
    query_key: str
    query_id: str | None
    query: str
    source_file: str | None
    source_line: int | None


class PreselectResponseRow(NamedTuple):
    """A row of ``preselect_responses``."""

    run_id: str
    query_key: str
    idx: int
    response: str
    call_key: str | None


class PreselectScoreRow(NamedTuple):
    """A row of ``preselect_scores``."""

    run_id: str
    query_key: str
    score: float
    n_responses: int
    scorer: str


class PreselectDroppedRow(NamedTuple):
    """A row of ``preselect_dropped``."""

    run_id: str
    query_key: str
    idx: int
    reason: str
    response: str
    call_key: str | None


class PreselectUnscoredRow(NamedTuple):
    """A row of ``preselect_unscored``."""

    run_id: str
    query_key: str
    n_responses: int
    cause: str
    reason: str
    scorer: str


class AnnotationItemRow(NamedTuple):
    """A row of ``annotation_items``."""

    item_id: str
    source: str
    run_id: str | None
    query: str
    response: str
    meta_json: str | None


class AnnotationRow(NamedTuple):
    """A row of ``annotations``."""

    item_id: str
    annotator: str
    label: str
    spans_json: str
    note: str | None
    source: str


class AnnotationResolutionRow(NamedTuple):
    """A row of ``annotation_resolutions``."""

    item_id: str
    label: str
    spans_json: str
    n_labels: int
    agreement: float | None
    method: str


class AnnotationAgreementRow(NamedTuple):
    """A row of ``annotation_agreement``."""

    items: int
    kappa_items: int | None
    kappa_raters: int | None
    fleiss_kappa: float | None
    percent_agreement: float | None
    krippendorff_alpha: float | None
    span_agreement: float | None
    report_json: str


class AnnotationSessionRow(NamedTuple):
    """A row of ``annotation_sessions``."""

    session_hash: str
    annotator: str | None
    role: str
    token_hash: str | None
    event: str


class AnnotationLeaseRow(NamedTuple):
    """A row of ``annotation_leases``."""

    annotator: str
    item_id: str
    expires_at: float
    seq: int


class AnnotationExtraPlaceRow(NamedTuple):
    """A row of ``annotation_extra_places``."""

    item_id: str


class TopicResultRow(NamedTuple):
    """A row of ``topic_results``."""

    analysis_id: str
    task: str
    topic_set: str
    topic: int
    top_words: str
    share_samples: float | None
    share_failures: float | None
    coherence: float | None
    eval_run: str | None
    eval_model: str | None
    eval_strategy: str | None


class EndpointCapabilityRow(NamedTuple):
    """A row of ``endpoint_capabilities``."""

    endpoint: str
    model: str
    capability: str
    supported: bool
    detail: str | None
    run_id: str | None
    source: str | None  # flag | stored | run | probe | default (llm/capabilities.py)


class AuditResultRow(NamedTuple):
    """A row of ``audit_results``."""

    audit_id: str
    source: str
    task: str
    pattern: str
    measure: str
    n: int
    value: float | None
    ci_low: float | None
    ci_high: float | None
    chance: float | None
    detail_json: str | None


class BatchRow(NamedTuple):
    """A row of ``batches``."""

    batch_id: str
    run_id: str
    kind: str
    state: str
    status: str | None
    provider_batch_id: str | None
    input_file_id: str | None
    output_file_id: str | None
    error_file_id: str | None
    requests: int
    completed: int | None
    failed: int | None
    reserved_pusd: int
    bytes: int | None
    base_url: str | None
    detail: str | None
    updated_at: datetime | None


class BatchLineRow(NamedTuple):
    """A row of ``batch_lines``."""

    batch_id: str
    line_no: int
    call_id: int
    custom_id: str
    run_id: str
    stage: str | None
    task: str | None
    model: str | None
    seed_key: str | None
    est_prompt_tokens: int | None
    max_output_tokens: int | None
    reserved_pusd: int | None
    request_json: str


class SampleRow(NamedTuple):
    """A row of ``sample_rows``."""

    run_id: str
    task: str
    seed_key: str
    seed_id: str | None
    dataset: str | None
    source_file: str | None
    source_line: int | None
    pattern: str | None
    template: str | None
    template_hash: str | None
    filter_template_hash: str | None
    selected_by: str | None
    model: str | None
    knowledge: str | None
    question: str | None
    right_answer: str | None
    hallucinated_answer: str | None
    dialogue_history: str | None
    right_response: str | None
    hallucinated_response: str | None
    document: str | None
    right_summary: str | None
    hallucinated_summary: str | None
    length_ratio: float | None
    extra_json: str | None
    truncated_tokens: int | None


class TaskFolderRow(NamedTuple):
    """A row of ``task_folders``: a user's task folder a run used, files and all."""

    task: str
    folder: str | None
    digest: str
    files_json: str


class EndpointFactRow(NamedTuple):
    """A row of ``endpoint_facts``."""

    base_url: str
    model: str
    context_window: int
    source: str


# Any record the writer appends.
Record = (
    LedgerRow
    | CallLogRow
    | SeedRow
    | SeedOutcomeRow
    | BadRecordRow
    | CallRequestRow
    | CandidateRow
    | FilterDecisionRow
    | LabelCheckRow
    | JudgementRow
    | PreselectQueryRow
    | PreselectResponseRow
    | PreselectScoreRow
    | PreselectDroppedRow
    | PreselectUnscoredRow
    | AnnotationItemRow
    | AnnotationRow
    | AnnotationResolutionRow
    | AnnotationAgreementRow
    | AnnotationSessionRow
    | AnnotationLeaseRow
    | AnnotationExtraPlaceRow
    | TopicResultRow
    | EndpointCapabilityRow
    | AuditResultRow
    | BatchRow
    | BatchLineRow
    | SampleRow
    | EndpointFactRow
    | TaskFolderRow
)


# The table each record is appended to.
RECORDS: dict[type[NamedTuple], str] = {
    LedgerRow: "ledger",
    CallLogRow: "call_log",
    SeedRow: "seeds",
    SeedOutcomeRow: "seed_outcomes",
    BadRecordRow: "bad_records",
    CallRequestRow: "call_requests",
    CandidateRow: "candidates",
    FilterDecisionRow: "filter_decisions",
    LabelCheckRow: "label_check_rows",
    JudgementRow: "judgements",
    PreselectQueryRow: "preselect_queries",
    PreselectResponseRow: "preselect_responses",
    PreselectScoreRow: "preselect_scores",
    PreselectDroppedRow: "preselect_dropped",
    PreselectUnscoredRow: "preselect_unscored",
    AnnotationItemRow: "annotation_items",
    AnnotationRow: "annotations",
    AnnotationResolutionRow: "annotation_resolutions",
    AnnotationAgreementRow: "annotation_agreement",
    AnnotationSessionRow: "annotation_sessions",
    AnnotationLeaseRow: "annotation_leases",
    AnnotationExtraPlaceRow: "annotation_extra_places",
    TopicResultRow: "topic_results",
    EndpointCapabilityRow: "endpoint_capabilities",
    AuditResultRow: "audit_results",
    BatchRow: "batches",
    BatchLineRow: "batch_lines",
    SampleRow: "sample_rows",
    EndpointFactRow: "endpoint_facts",
    TaskFolderRow: "task_folders",
}

# Column order of the appended tables, ``created_at`` last (the order rows are built in).
TABLE_COLUMNS: dict[str, tuple[str, ...]] = {
    table: (*record._fields, "created_at") for record, table in RECORDS.items()
}


class Statement(NamedTuple):
    """A statement for the writer to run in its transaction, for what is not an append
    (``UPDATE batches ...``)."""

    sql: str
    params: Sequence[Any]


_TABLE_OF: dict[type, str] = {record: table for record, table in RECORDS.items()}


def table_of(row: object) -> str | None:
    """The table a record is appended to; None for anything else (a Statement, a mistake)."""
    return _TABLE_OF.get(type(row))
