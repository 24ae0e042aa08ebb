The harbour of Sollen reopened on Monday after a month of repairs.

Ships queued all day to enter.

The town council said the work cost less than planned.

Fishermen welcomed the news and returned to sea the same evening.

@highlight

Harbour of Sollen reopened on Monday

@highlight

Ships queued all day

@highlight

Repairs cost less than planned

