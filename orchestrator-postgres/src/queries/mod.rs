//! The SQL statements, one file each. `{s}` is replaced by the quoted schema name when the
//! store opens; every value is a bound parameter.

/// Milliseconds since the Unix epoch of a `timestamptz` expression.
macro_rules! ms {
    ($e:literal) => {
        concat!("(extract(epoch from ", $e, ") * 1000)::bigint")
    };
}

mod acquire;
mod children;
mod claim_due;
mod commit;
mod entry;
mod history;
mod lock;
mod outbox_pending;
mod outbox_step;
mod parent;
mod produced;
mod read;
mod reap_leases;
mod release_node;
mod renew;
mod retain;
mod sweep;
mod unlock;

pub(crate) use acquire::ACQUIRE;
pub(crate) use children::CHILDREN;
pub(crate) use claim_due::CLAIM_DUE;
pub(crate) use commit::COMMIT;
pub(crate) use entry::ENTRY;
pub(crate) use history::HISTORY;
pub(crate) use lock::LOCK;
pub(crate) use outbox_pending::OUTBOX_PENDING;
pub(crate) use outbox_step::OUTBOX_STEP;
pub(crate) use parent::PARENT;
pub(crate) use produced::PRODUCED;
pub(crate) use read::READ;
pub(crate) use reap_leases::REAP_LEASES;
pub(crate) use release_node::RELEASE_NODE;
pub(crate) use renew::RENEW;
pub(crate) use retain::RETAIN;
pub(crate) use sweep::SWEEP;
pub(crate) use unlock::UNLOCK;
