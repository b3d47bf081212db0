//! The `CLAIM` statement.

/// Claims up to `$2` deliveries of topics `$1` (all when null) for owner `$3` for `$4` ms, oldest
/// first (the `claim` function of migration 4, last redefined by migration 11): a row is claimable once visible, unclaimed,
/// first of its `(topic, subject)` lane, and while no other row of its lane is claimed. Rows
/// another claim is taking are skipped (`SKIP LOCKED`). Each claim counts an attempt and gets a
/// fresh token. Rows are scanned in queue order on the primary key, stopping at the first
/// claimable ones: the cost of a claim does not grow with the backlog. Lapsed claims become
/// unclaimed through `REAP_CLAIMS`. For a row of an orchestrator's lane (its workflow's row was
/// written by the row's topic), the claim also returns the workflow's record and version and the
/// journal's answer to the event: the step reads them from there (see `Signals::looked`). For a
/// row whose workflow does not exist (its first event), the claim says so (`w_absent`): the step
/// starts the workflow without reading it.
///
/// A claim commits without waiting for its WAL to reach the disk (`synchronous_commit = off`
/// for its own transaction): a claim lost in a server crash only makes its rows claimable again
/// (delivered again, which every consumer tolerates); settlements and steps stay synchronous.
pub(crate) const CLAIM: &str = "SELECT c.* FROM (SELECT set_config('synchronous_commit', 'off', true)) AS relaxed, \
     {s}.claim($1, $2, $3, $4) AS c";
