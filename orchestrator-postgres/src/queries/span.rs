//! The `SPAN` statement.

/// An upper bound of the queue's length, from the two ends of its primary key (no scan): the
/// number of sequence numbers between its oldest and its newest row, 0 when it is empty.
pub(crate) const SPAN: &str = "SELECT COALESCE(max(q.seq) - min(q.seq) + 1, 0) FROM {s}.queue q";
