//! The SQL statements, one file each. `{s}` is replaced by the quoted schema name when the
//! store opens; every value is a bound parameter.

/// Milliseconds since the Unix epoch of a `timestamptz` expression.
macro_rules! ms {
    ($e:literal) => {
        concat!("(extract(epoch from ", $e, ") * 1000)::bigint")
    };
}

/// The workflow index's filter on `workflows w` (see `orchestrator::memory::WorkflowFilter`),
/// each condition void when its parameter is NULL: `$1` the orchestrator (`source`), `$2` its
/// version, `$3` the status, `$4` the initiator, `$5` the parent, `$6` the root, `$7` a `LIKE`
/// pattern of the execution id (an escaped prefix followed by `%`), `$8`/`$9` the creation time
/// range (since, until), `$10`/`$11` the update time range, `$12` the meta the subject's must
/// contain (a JSON object, as text).
macro_rules! workflow_filter {
    () => {
        "($1::text IS NULL OR w.source = $1) \
         AND ($2::text IS NULL OR w.orchestrator_version = $2) \
         AND ($3::text IS NULL OR w.status = $3) \
         AND ($4::text IS NULL OR w.initiator = $4) \
         AND ($5::text IS NULL OR w.parent = $5) \
         AND ($6::text IS NULL OR w.root = $6) \
         AND ($7::text IS NULL OR w.execution_id LIKE $7) \
         AND ($8::timestamptz IS NULL OR w.created_at >= $8) \
         AND ($9::timestamptz IS NULL OR w.created_at < $9) \
         AND ($10::timestamptz IS NULL OR (w.touched_minute >= {s}.minute_of($10) AND w.updated_at >= $10)) \
         AND ($11::timestamptz IS NULL OR (w.touched_minute <= {s}.minute_of($11) AND w.updated_at < $11)) \
         AND ($12::text IS NULL OR (w.meta <> '{}'::jsonb AND w.meta @> $12::text::jsonb))"
    };
}

mod ack;
mod acquire;
mod answer;
mod answer_ack;
mod catalog_list;
mod catalog_record;
mod children;
mod claim;
mod claim_due;
mod commit;
mod count_workflows;
mod dead_letters;
mod depth;
mod drained;
mod enqueue;
mod entry;
mod extend;
mod history;
mod lead;
mod list_workflows;
mod lock;
mod look;
mod nack;
mod next_due;
mod outbox_pending;
mod outbox_step;
mod parent;
mod produced;
mod read;
mod reap_claims;
mod reap_leases;
mod release_claims;
mod release_node;
mod release_own;
mod renew;
mod requeue;
mod retain;
mod span;
mod sweep;
mod terminate;
mod unlock;

pub(crate) use ack::ACK;
pub(crate) use acquire::ACQUIRE;
pub(crate) use answer::ANSWER;
pub(crate) use answer_ack::ANSWER_ACK;
pub(crate) use catalog_list::CATALOG_LIST;
pub(crate) use catalog_record::CATALOG_RECORD;
pub(crate) use children::CHILDREN;
pub(crate) use claim::CLAIM;
pub(crate) use claim_due::CLAIM_DUE;
pub(crate) use commit::COMMIT;
pub(crate) use count_workflows::COUNT_WORKFLOWS;
pub(crate) use dead_letters::DEAD_LETTERS;
pub(crate) use depth::DEPTH;
pub(crate) use drained::DRAINED;
pub(crate) use enqueue::ENQUEUE;
pub(crate) use entry::ENTRY;
pub(crate) use extend::EXTEND;
pub(crate) use history::HISTORY;
pub(crate) use lead::LEAD;
pub(crate) use list_workflows::LIST_WORKFLOWS;
pub(crate) use lock::LOCK;
pub(crate) use look::LOOK;
pub(crate) use nack::NACK;
pub(crate) use next_due::NEXT_DUE;
pub(crate) use outbox_pending::OUTBOX_PENDING;
pub(crate) use outbox_step::OUTBOX_STEP;
pub(crate) use parent::PARENT;
pub(crate) use produced::PRODUCED;
pub(crate) use read::READ;
pub(crate) use reap_claims::REAP_CLAIMS;
pub(crate) use reap_leases::REAP_LEASES;
pub(crate) use release_claims::RELEASE_CLAIMS;
pub(crate) use release_node::RELEASE_NODE;
pub(crate) use release_own::RELEASE_OWN;
pub(crate) use renew::RENEW;
pub(crate) use requeue::REQUEUE;
pub(crate) use retain::RETAIN;
pub(crate) use span::SPAN;
pub(crate) use sweep::SWEEP;
pub(crate) use terminate::TERMINATE;
pub(crate) use unlock::UNLOCK;
