//! The versioned schema: migrations applied on open, inside the configured PostgreSQL schema.

use tokio_postgres::Client;

use crate::error::OpenError;

/// The schema version this crate writes and reads. A database at a newer version is refused
/// with [`OpenError::NewerSchema`].
pub const SCHEMA_VERSION: i32 = 11;

/// The migrations, in order: entry `i` brings the schema from version `i` to `i + 1`. `{s}` is
/// replaced by the quoted schema name.
const MIGRATIONS: &[&str] = &[
    // 1: workflows, leases, journal, outbox, archive.
    "CREATE SEQUENCE {s}.lease_tokens;
     CREATE TABLE {s}.workflows (
         id TEXT PRIMARY KEY,
         seq BIGSERIAL NOT NULL,
         record JSONB NOT NULL,
         version BIGINT NOT NULL,
         parent TEXT,
         initiator TEXT,
         source TEXT NOT NULL,
         wake_at TIMESTAMPTZ,
         claimed_until TIMESTAMPTZ,
         finished_at TIMESTAMPTZ,
         created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
         updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
     );
     CREATE INDEX workflows_wake_at ON {s}.workflows (wake_at) WHERE wake_at IS NOT NULL;
     CREATE INDEX workflows_parent ON {s}.workflows (parent, seq) WHERE parent IS NOT NULL;
     CREATE INDEX workflows_finished_at ON {s}.workflows (finished_at) WHERE finished_at IS NOT NULL;
     CREATE TABLE {s}.leases (
         id TEXT PRIMARY KEY,
         owner TEXT NOT NULL,
         token BIGINT NOT NULL,
         expires_at TIMESTAMPTZ NOT NULL
     );
     CREATE TABLE {s}.journal (
         wf TEXT NOT NULL,
         version BIGINT NOT NULL,
         at_ms BIGINT NOT NULL,
         consumed_source TEXT,
         consumed_id TEXT,
         consumed TEXT,
         produced TEXT NOT NULL,
         record JSONB NOT NULL,
         PRIMARY KEY (wf, version)
     );
     CREATE INDEX journal_consumed ON {s}.journal (wf, consumed_source, consumed_id)
         WHERE consumed_id IS NOT NULL;
     CREATE TABLE {s}.outbox (
         seq BIGSERIAL PRIMARY KEY,
         event_id TEXT NOT NULL UNIQUE,
         event TEXT NOT NULL
     );
     CREATE TABLE {s}.archive_workflows (LIKE {s}.workflows);
     CREATE TABLE {s}.archive_journal (LIKE {s}.journal);",
    // 2: the retention, the outbox step and the commit as functions, so that a commit (and an
    // outbox step alone) is one round trip.
    "CREATE FUNCTION {s}.retain(p_id TEXT, p_mode INTEGER, p_after_ms BIGINT) RETURNS VOID
     LANGUAGE plpgsql AS $fn$
     BEGIN
         IF p_mode = 0 THEN
             UPDATE {s}.workflows w SET finished_at = COALESCE(w.finished_at, now()) WHERE w.id = p_id;
         ELSIF p_mode = 1 THEN
             DELETE FROM {s}.journal j WHERE j.wf = p_id;
             DELETE FROM {s}.workflows w WHERE w.id = p_id;
         ELSIF p_mode = 2 THEN
             UPDATE {s}.workflows w SET finished_at = COALESCE(w.finished_at, now()) WHERE w.id = p_id;
             WITH gone AS (
                 DELETE FROM {s}.workflows w
                 WHERE w.finished_at <= now() - p_after_ms * interval '1 millisecond' RETURNING w.id)
             DELETE FROM {s}.journal j USING gone WHERE j.wf = gone.id;
         ELSE
             INSERT INTO {s}.archive_workflows SELECT * FROM {s}.workflows w WHERE w.id = p_id;
             INSERT INTO {s}.archive_journal SELECT * FROM {s}.journal j WHERE j.wf = p_id;
             DELETE FROM {s}.journal j WHERE j.wf = p_id;
             DELETE FROM {s}.workflows w WHERE w.id = p_id;
         END IF;
     END $fn$;
     CREATE FUNCTION {s}.outbox_step(p_consumed TEXT, p_ids TEXT[], p_events TEXT[]) RETURNS VOID
     LANGUAGE plpgsql AS $fn$
     BEGIN
         IF p_consumed IS NOT NULL THEN
             DELETE FROM {s}.outbox o WHERE o.event_id = p_consumed;
         END IF;
         INSERT INTO {s}.outbox (event_id, event)
         SELECT t.id, t.ev FROM unnest(p_ids, p_events) WITH ORDINALITY AS t(id, ev, ord)
         ORDER BY t.ord
         ON CONFLICT (event_id) DO NOTHING;
     END $fn$;
     CREATE FUNCTION {s}.commit_step(
         p_id TEXT, p_prev BIGINT, p_token BIGINT, p_record TEXT,
         p_parent_known BOOLEAN, p_parent TEXT, p_initiator_known BOOLEAN, p_initiator TEXT,
         p_source TEXT, p_wake_ms BIGINT,
         p_has_entry BOOLEAN, p_at_ms BIGINT, p_c_source TEXT, p_c_id TEXT, p_consumed TEXT,
         p_produced TEXT,
         p_outbox BOOLEAN, p_ob_consumed TEXT, p_ob_ids TEXT[], p_ob_events TEXT[],
         p_finished BOOLEAN, p_mode INTEGER, p_after_ms BIGINT, p_release BOOLEAN,
         OUT o_status INTEGER, OUT o_version BIGINT)
     LANGUAGE plpgsql AS $fn$
     DECLARE
         v_version BIGINT;
     BEGIN
         IF p_token IS NOT NULL THEN
             PERFORM 1 FROM {s}.leases l
             WHERE l.id = p_id AND l.token = p_token AND l.expires_at > now() FOR SHARE;
             IF NOT FOUND THEN
                 o_status := 1;
                 RETURN;
             END IF;
         END IF;
         IF p_prev IS NULL THEN
             INSERT INTO {s}.workflows AS w (id, record, version, parent, initiator, source, wake_at)
             VALUES (p_id, p_record::jsonb, 1, p_parent, p_initiator, p_source,
                     to_timestamp(p_wake_ms / 1000.0))
             ON CONFLICT (id) DO NOTHING RETURNING w.version INTO v_version;
         ELSE
             UPDATE {s}.workflows w SET record = p_record::jsonb, version = p_prev + 1,
                 parent = CASE WHEN p_parent_known THEN p_parent ELSE w.parent END,
                 initiator = CASE WHEN p_initiator_known THEN p_initiator ELSE w.initiator END,
                 source = p_source, wake_at = to_timestamp(p_wake_ms / 1000.0),
                 claimed_until = NULL, updated_at = now()
             WHERE w.id = p_id AND w.version = p_prev RETURNING w.version INTO v_version;
         END IF;
         IF v_version IS NULL THEN
             SELECT w.version INTO v_version FROM {s}.workflows w WHERE w.id = p_id;
             o_status := 2;
             o_version := v_version;
             RETURN;
         END IF;
         IF p_has_entry THEN
             INSERT INTO {s}.journal
                 (wf, version, at_ms, consumed_source, consumed_id, consumed, produced, record)
             VALUES (p_id, v_version, p_at_ms, p_c_source, p_c_id, p_consumed, p_produced,
                     p_record::jsonb);
         END IF;
         IF p_outbox THEN
             PERFORM {s}.outbox_step(p_ob_consumed, p_ob_ids, p_ob_events);
         END IF;
         IF p_finished THEN
             PERFORM {s}.retain(p_id, p_mode, p_after_ms);
         END IF;
         IF p_release AND p_token IS NOT NULL THEN
             DELETE FROM {s}.leases l WHERE l.id = p_id AND l.token = p_token;
         END IF;
         o_status := 0;
         o_version := v_version;
     END $fn$;",
    // 3: the outbox becomes the event queue (a row per event, with its lane, its claim and its
    // visibility), the transport's dead letters get a table, claims and settlements are
    // functions.
    "CREATE SEQUENCE {s}.claim_tokens;
     CREATE TABLE {s}.queue (
         seq BIGSERIAL PRIMARY KEY,
         topic TEXT NOT NULL,
         subject TEXT NOT NULL,
         event_id TEXT NOT NULL UNIQUE,
         event TEXT NOT NULL,
         attempt INTEGER NOT NULL DEFAULT 0,
         visible_at TIMESTAMPTZ NOT NULL DEFAULT now(),
         claimed_by TEXT,
         token BIGINT,
         claimed_until TIMESTAMPTZ,
         enqueued_at TIMESTAMPTZ NOT NULL DEFAULT now()
     );
     ALTER TABLE {s}.queue SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000);
     CREATE INDEX queue_lane ON {s}.queue (topic, subject, seq);
     CREATE INDEX queue_ready ON {s}.queue (seq) WHERE claimed_by IS NULL;
     CREATE INDEX queue_claims ON {s}.queue (claimed_until) WHERE claimed_by IS NOT NULL;
     CREATE TABLE {s}.dead_letters (
         seq BIGSERIAL PRIMARY KEY,
         topic TEXT NOT NULL,
         subject TEXT NOT NULL,
         event_id TEXT NOT NULL,
         event TEXT NOT NULL,
         attempt INTEGER NOT NULL,
         reason TEXT NOT NULL,
         at TIMESTAMPTZ NOT NULL DEFAULT now()
     );
     INSERT INTO {s}.queue (topic, subject, event_id, event)
     SELECT COALESCE(o.event::jsonb->>'to', ''), COALESCE(o.event::jsonb->>'subject', ''),
            o.event_id, o.event
     FROM {s}.outbox o ORDER BY o.seq;
     DROP TABLE {s}.outbox;
     CREATE FUNCTION {s}.enqueue(p_topics TEXT[], p_subjects TEXT[], p_ids TEXT[], p_events TEXT[])
     RETURNS VOID LANGUAGE plpgsql AS $fn$
     BEGIN
         INSERT INTO {s}.queue (topic, subject, event_id, event)
         SELECT t.topic, t.subject, t.id, t.ev
         FROM unnest(p_topics, p_subjects, p_ids, p_events) WITH ORDINALITY AS t(topic, subject, id, ev, ord)
         ORDER BY t.ord
         ON CONFLICT (event_id) DO NOTHING;
     END $fn$;
     DROP FUNCTION {s}.commit_step(TEXT, BIGINT, BIGINT, TEXT, BOOLEAN, TEXT, BOOLEAN, TEXT, TEXT,
         BIGINT, BOOLEAN, BIGINT, TEXT, TEXT, TEXT, TEXT, BOOLEAN, TEXT, TEXT[], TEXT[], BOOLEAN,
         INTEGER, BIGINT, BOOLEAN);
     DROP FUNCTION {s}.outbox_step(TEXT, TEXT[], TEXT[]);
     -- Journal records are kept as written (text): they are read back whole, never queried.
     ALTER TABLE {s}.journal ALTER COLUMN record TYPE TEXT USING record::text;
     ALTER TABLE {s}.archive_journal ALTER COLUMN record TYPE TEXT USING record::text;
     CREATE FUNCTION {s}.outbox_step(p_consumed TEXT, p_topics TEXT[], p_subjects TEXT[],
                                     p_ids TEXT[], p_events TEXT[])
     RETURNS VOID LANGUAGE plpgsql AS $fn$
     BEGIN
         IF p_consumed IS NOT NULL THEN
             DELETE FROM {s}.queue q WHERE q.event_id = p_consumed;
         END IF;
         IF cardinality(p_ids) > 0 THEN
             PERFORM {s}.enqueue(p_topics, p_subjects, p_ids, p_events);
         END IF;
     END $fn$;
     CREATE FUNCTION {s}.commit_step(
         p_id TEXT, p_prev BIGINT, p_token BIGINT, p_record TEXT,
         p_parent_known BOOLEAN, p_parent TEXT, p_initiator_known BOOLEAN, p_initiator TEXT,
         p_source TEXT, p_wake_ms BIGINT,
         p_has_entry BOOLEAN, p_at_ms BIGINT, p_c_source TEXT, p_c_id TEXT, p_consumed TEXT,
         p_produced TEXT,
         p_outbox BOOLEAN, p_ob_consumed TEXT, p_ob_topics TEXT[], p_ob_subjects TEXT[],
         p_ob_ids TEXT[], p_ob_events TEXT[],
         p_finished BOOLEAN, p_mode INTEGER, p_after_ms BIGINT, p_release BOOLEAN,
         OUT o_status INTEGER, OUT o_version BIGINT)
     LANGUAGE plpgsql AS $fn$
     DECLARE
         v_version BIGINT;
         v_record JSONB := p_record::jsonb;
     BEGIN
         IF p_token IS NOT NULL THEN
             PERFORM 1 FROM {s}.leases l
             WHERE l.id = p_id AND l.token = p_token AND l.expires_at > now() FOR SHARE;
             IF NOT FOUND THEN
                 o_status := 1;
                 RETURN;
             END IF;
         END IF;
         IF p_prev IS NULL THEN
             INSERT INTO {s}.workflows AS w (id, record, version, parent, initiator, source, wake_at)
             VALUES (p_id, v_record, 1, p_parent, p_initiator, p_source,
                     to_timestamp(p_wake_ms / 1000.0))
             ON CONFLICT (id) DO NOTHING RETURNING w.version INTO v_version;
         ELSE
             UPDATE {s}.workflows w SET record = v_record, version = p_prev + 1,
                 parent = CASE WHEN p_parent_known THEN p_parent ELSE w.parent END,
                 initiator = CASE WHEN p_initiator_known THEN p_initiator ELSE w.initiator END,
                 source = p_source, wake_at = to_timestamp(p_wake_ms / 1000.0),
                 claimed_until = NULL, updated_at = now()
             WHERE w.id = p_id AND w.version = p_prev RETURNING w.version INTO v_version;
         END IF;
         IF v_version IS NULL THEN
             SELECT w.version INTO v_version FROM {s}.workflows w WHERE w.id = p_id;
             o_status := 2;
             o_version := v_version;
             RETURN;
         END IF;
         IF p_has_entry THEN
             INSERT INTO {s}.journal
                 (wf, version, at_ms, consumed_source, consumed_id, consumed, produced, record)
             VALUES (p_id, v_version, p_at_ms, p_c_source, p_c_id, p_consumed, p_produced,
                     p_record);
         END IF;
         IF p_outbox THEN
             PERFORM {s}.outbox_step(p_ob_consumed, p_ob_topics, p_ob_subjects, p_ob_ids, p_ob_events);
         END IF;
         IF p_finished THEN
             PERFORM {s}.retain(p_id, p_mode, p_after_ms);
         END IF;
         IF p_release AND p_token IS NOT NULL THEN
             DELETE FROM {s}.leases l WHERE l.id = p_id AND l.token = p_token;
         END IF;
         o_status := 0;
         o_version := v_version;
     END $fn$;
     -- Claims walk the unclaimed rows in queue order and stop at the first claimable ones: a
     -- plan that collects and sorts every candidate (which stale statistics on a young, busy
     -- table invite) costs a claim as much as the whole backlog.
     CREATE FUNCTION {s}.claim(p_topics TEXT[], p_limit BIGINT, p_owner TEXT, p_ms BIGINT)
     RETURNS TABLE (seq BIGINT, token BIGINT, attempt INTEGER, topic TEXT, subject TEXT,
                    event_id TEXT, event TEXT)
     LANGUAGE sql SET enable_bitmapscan = off SET enable_sort = off AS $fn$
         WITH picked AS (
             SELECT q.seq FROM {s}.queue q
             WHERE q.claimed_by IS NULL AND (p_topics IS NULL OR q.topic = ANY (p_topics))
               AND q.visible_at <= now()
               AND NOT EXISTS (SELECT 1 FROM {s}.queue p
                               WHERE p.topic = q.topic AND p.subject = q.subject
                                 AND (p.seq < q.seq OR p.claimed_by IS NOT NULL))
             ORDER BY q.seq LIMIT p_limit FOR UPDATE SKIP LOCKED)
         UPDATE {s}.queue q SET attempt = q.attempt + 1, token = nextval('{s}.claim_tokens'),
             claimed_by = p_owner, claimed_until = now() + p_ms * interval '1 millisecond'
         FROM picked WHERE q.seq = picked.seq
         RETURNING q.seq, q.token, q.attempt, q.topic, q.subject, q.event_id, q.event
     $fn$;
     CREATE FUNCTION {s}.ack(p_seq BIGINT, p_token BIGINT, p_topics TEXT[], p_subjects TEXT[],
                             p_ids TEXT[], p_events TEXT[])
     RETURNS BOOLEAN LANGUAGE plpgsql AS $fn$
     BEGIN
         DELETE FROM {s}.queue q WHERE q.seq = p_seq AND q.token = p_token;
         IF NOT FOUND THEN
             RETURN FALSE;
         END IF;
         IF cardinality(p_ids) > 0 THEN
             PERFORM {s}.enqueue(p_topics, p_subjects, p_ids, p_events);
         END IF;
         RETURN TRUE;
     END $fn$;",
    // 4: the claim in PL/pgSQL, whose plan is prepared once per connection (an SQL function
    // with `SET` clauses is planned again at every call, which cost a claim more than running it);
    // it also reads, for each row of an orchestrator's lane, the workflow's record and the
    // journal's answer to the event, so that the step needs no read of its own.
    "DROP FUNCTION {s}.claim(TEXT[], BIGINT, TEXT, BIGINT);
     CREATE FUNCTION {s}.claim(p_topics TEXT[], p_limit BIGINT, p_owner TEXT, p_ms BIGINT)
     RETURNS TABLE (seq BIGINT, token BIGINT, attempt INTEGER, topic TEXT, subject TEXT,
                    event_id TEXT, event TEXT, w_record TEXT, w_version BIGINT, j_source TEXT,
                    j_produced TEXT)
     LANGUAGE plpgsql SET enable_bitmapscan = off SET enable_sort = off AS $fn$
     #variable_conflict use_column
     BEGIN
         RETURN QUERY
         WITH picked AS (
             SELECT q.seq FROM {s}.queue q
             WHERE q.claimed_by IS NULL AND (p_topics IS NULL OR q.topic = ANY (p_topics))
               AND q.visible_at <= now()
               AND NOT EXISTS (SELECT 1 FROM {s}.queue p
                               WHERE p.topic = q.topic AND p.subject = q.subject
                                 AND (p.seq < q.seq OR p.claimed_by IS NOT NULL))
             ORDER BY q.seq LIMIT p_limit FOR UPDATE SKIP LOCKED),
         claimed AS (
             UPDATE {s}.queue q SET attempt = q.attempt + 1, token = nextval('{s}.claim_tokens'),
                 claimed_by = p_owner, claimed_until = now() + p_ms * interval '1 millisecond'
             FROM picked WHERE q.seq = picked.seq
             RETURNING q.seq, q.token, q.attempt, q.topic, q.subject, q.event_id, q.event)
         -- The journal's entry for the event's id (its source is compared by the caller: the
         -- event's text is not parsed here, a row that is not JSON must not fail the claim).
         SELECT c.seq, c.token, c.attempt, c.topic, c.subject, c.event_id, c.event,
                w.record::text, w.version, j.consumed_source, j.produced
         FROM claimed c
         LEFT JOIN {s}.workflows w ON w.id = c.subject AND w.source = c.topic
         LEFT JOIN LATERAL (
             SELECT e.consumed_source, e.produced FROM {s}.journal e
             WHERE w.id IS NOT NULL AND e.wf = c.subject AND e.consumed_id = c.event_id
             ORDER BY e.version LIMIT 1) j ON true;
     END $fn$;
     -- A journal row (a record, the event consumed and those produced) is a little over the 2 kB
     -- past which PostgreSQL tries to compress a row at every insert: keep rows of up to a page
     -- as written.
     ALTER TABLE {s}.journal SET (toast_tuple_target = 8160);
     ALTER TABLE {s}.archive_journal SET (toast_tuple_target = 8160);
     -- Claims update no indexed column, so that PostgreSQL can update the row in place (a HOT
     -- update: no new index entries): the claimable rows are found in queue order on the
     -- primary key, where the claimed ones are few (at most the consumers, plus lapsed claims).
     DROP INDEX {s}.queue_ready;
     DROP INDEX {s}.queue_claims;
     ALTER TABLE {s}.queue SET (fillfactor = 50);
     -- The rows a nack delayed, for an idle poller's wait (a new row is visible when enqueued).
     CREATE INDEX queue_delayed ON {s}.queue (visible_at) WHERE visible_at > enqueued_at;
     -- An ack's queue writes run in its own function rather than in a nested one (each
     -- nesting level costs a statement's overhead).
     CREATE OR REPLACE FUNCTION {s}.ack(p_seq BIGINT, p_token BIGINT, p_topics TEXT[],
                                        p_subjects TEXT[], p_ids TEXT[], p_events TEXT[])
     RETURNS BOOLEAN LANGUAGE plpgsql AS $fn$
     BEGIN
         DELETE FROM {s}.queue q WHERE q.seq = p_seq AND q.token = p_token;
         IF NOT FOUND THEN
             RETURN FALSE;
         END IF;
         IF cardinality(p_ids) > 0 THEN
             INSERT INTO {s}.queue (topic, subject, event_id, event)
             SELECT t.topic, t.subject, t.id, t.ev
             FROM unnest(p_topics, p_subjects, p_ids, p_events)
                 WITH ORDINALITY AS t(topic, subject, id, ev, ord)
             ORDER BY t.ord
             ON CONFLICT (event_id) DO NOTHING;
         END IF;
         RETURN TRUE;
     END $fn$;",
    // 5: what the workflow index needs: each workflow's status (written by every commit, not
    // guessed from the record) and its root workflow, in both the live and the archive tables
    // (added in the same order, so that the archive's `SELECT *` still lines up); existing rows
    // are backfilled; indexes list workflows newest first by orchestrator, status, initiator,
    // root and creation time. The commit takes the status and sets the root; its queue writes
    // run in the function itself (no nested functions: each level costs a statement's
    // overhead), and a kept workflow's end is written by the step's own write.
    "ALTER TABLE {s}.workflows ADD COLUMN status TEXT NOT NULL DEFAULT 'active', ADD COLUMN root TEXT;
     ALTER TABLE {s}.archive_workflows
         ADD COLUMN status TEXT NOT NULL DEFAULT 'active', ADD COLUMN root TEXT;
     -- The status the record describes (WorkflowRecord::workflow_state): the failure latch,
     -- then the end, then a durable timer.
     UPDATE {s}.workflows w SET status = CASE
             WHEN w.record->>'executionStatus' = 'failure' THEN 'failed'
             WHEN w.record->'done' = 'true'::jsonb THEN 'done'
             ELSE 'waiting' END
     WHERE w.record->>'executionStatus' = 'failure' OR w.record->'done' = 'true'::jsonb
        OR w.wake_at IS NOT NULL;
     UPDATE {s}.archive_workflows w SET status = CASE
             WHEN w.record->>'executionStatus' = 'failure' THEN 'failed'
             WHEN w.record->'done' = 'true'::jsonb THEN 'done'
             ELSE 'waiting' END
     WHERE w.record->>'executionStatus' = 'failure' OR w.record->'done' = 'true'::jsonb
        OR w.wake_at IS NOT NULL;
     -- The root: a workflow without a parent is its own root; a child's is found by walking up
     -- its parents (live or archived) to the last one known.
     UPDATE {s}.workflows w SET root = w.id WHERE w.parent IS NULL;
     UPDATE {s}.archive_workflows w SET root = w.id WHERE w.parent IS NULL;
     WITH RECURSIVE nodes AS (
         SELECT n.id, n.parent FROM {s}.workflows n
         UNION SELECT n.id, n.parent FROM {s}.archive_workflows n),
     up (id, cur, depth) AS (
         SELECT n.id, n.parent, 1 FROM nodes n WHERE n.parent IS NOT NULL
         UNION ALL
         SELECT up.id, n.parent, up.depth + 1 FROM up JOIN nodes n ON n.id = up.cur
         WHERE n.parent IS NOT NULL AND up.depth < 1000),
     roots AS (SELECT DISTINCT ON (up.id) up.id, up.cur FROM up ORDER BY up.id, up.depth DESC)
     UPDATE {s}.workflows w SET root = roots.cur FROM roots WHERE w.id = roots.id;
     WITH RECURSIVE nodes AS (
         SELECT n.id, n.parent FROM {s}.workflows n
         UNION SELECT n.id, n.parent FROM {s}.archive_workflows n),
     up (id, cur, depth) AS (
         SELECT n.id, n.parent, 1 FROM nodes n WHERE n.parent IS NOT NULL
         UNION ALL
         SELECT up.id, n.parent, up.depth + 1 FROM up JOIN nodes n ON n.id = up.cur
         WHERE n.parent IS NOT NULL AND up.depth < 1000),
     roots AS (SELECT DISTINCT ON (up.id) up.id, up.cur FROM up ORDER BY up.id, up.depth DESC)
     UPDATE {s}.archive_workflows w SET root = roots.cur FROM roots WHERE w.id = roots.id;
     CREATE INDEX workflows_source_created ON {s}.workflows (source, created_at DESC);
     CREATE INDEX workflows_status_updated ON {s}.workflows (status, updated_at DESC);
     CREATE INDEX workflows_initiator_created ON {s}.workflows (initiator, created_at DESC)
         WHERE initiator IS NOT NULL;
     CREATE INDEX workflows_root_created ON {s}.workflows (root, created_at);
     CREATE INDEX workflows_created ON {s}.workflows (created_at DESC);
     DROP FUNCTION {s}.commit_step(TEXT, BIGINT, BIGINT, TEXT, BOOLEAN, TEXT, BOOLEAN, TEXT, TEXT,
         BIGINT, BOOLEAN, BIGINT, TEXT, TEXT, TEXT, TEXT, BOOLEAN, TEXT, TEXT[], TEXT[], TEXT[],
         TEXT[], BOOLEAN, INTEGER, BIGINT, BOOLEAN);
     CREATE FUNCTION {s}.commit_step(
         p_id TEXT, p_prev BIGINT, p_token BIGINT, p_record TEXT,
         p_parent_known BOOLEAN, p_parent TEXT, p_initiator_known BOOLEAN, p_initiator TEXT,
         p_source TEXT, p_wake_ms BIGINT, p_status TEXT,
         p_has_entry BOOLEAN, p_at_ms BIGINT, p_c_source TEXT, p_c_id TEXT, p_consumed TEXT,
         p_produced TEXT,
         p_outbox BOOLEAN, p_ob_consumed TEXT, p_ob_topics TEXT[], p_ob_subjects TEXT[],
         p_ob_ids TEXT[], p_ob_events TEXT[],
         p_finished BOOLEAN, p_mode INTEGER, p_after_ms BIGINT, p_release BOOLEAN,
         OUT o_status INTEGER, OUT o_version BIGINT)
     LANGUAGE plpgsql AS $fn$
     DECLARE
         v_version BIGINT;
         v_record JSONB := p_record::jsonb;
         v_root TEXT;
     BEGIN
         IF p_token IS NOT NULL THEN
             PERFORM 1 FROM {s}.leases l
             WHERE l.id = p_id AND l.token = p_token AND l.expires_at > now() FOR SHARE;
             IF NOT FOUND THEN
                 o_status := 1;
                 RETURN;
             END IF;
         END IF;
         IF p_prev IS NULL THEN
             -- The root: the parent's, else the parent itself (its row is gone or not written
             -- yet), else this workflow.
             IF p_parent IS NOT NULL THEN
                 SELECT w.root INTO v_root FROM {s}.workflows w WHERE w.id = p_parent;
             END IF;
             v_root := COALESCE(v_root, p_parent, p_id);
             INSERT INTO {s}.workflows AS w
                 (id, record, version, parent, initiator, source, wake_at, status, root, finished_at)
             VALUES (p_id, v_record, 1, p_parent, p_initiator, p_source,
                     to_timestamp(p_wake_ms / 1000.0), p_status, v_root,
                     CASE WHEN p_finished AND p_mode IN (0, 2) THEN now() END)
             ON CONFLICT (id) DO NOTHING RETURNING w.version INTO v_version;
         ELSE
             UPDATE {s}.workflows w SET record = v_record, version = p_prev + 1,
                 parent = CASE WHEN p_parent_known THEN p_parent ELSE w.parent END,
                 initiator = CASE WHEN p_initiator_known THEN p_initiator ELSE w.initiator END,
                 source = p_source, wake_at = to_timestamp(p_wake_ms / 1000.0),
                 status = p_status,
                 -- A parent learnt (or changed) after the first write moves the root with it.
                 root = CASE WHEN p_parent_known AND p_parent IS DISTINCT FROM w.parent
                             THEN COALESCE((SELECT p.root FROM {s}.workflows p WHERE p.id = p_parent),
                                           p_parent, p_id)
                             ELSE w.root END,
                 claimed_until = NULL, updated_at = now(),
                 finished_at = CASE WHEN p_finished AND p_mode IN (0, 2)
                                    THEN COALESCE(w.finished_at, now()) ELSE w.finished_at END
             WHERE w.id = p_id AND w.version = p_prev RETURNING w.version INTO v_version;
         END IF;
         IF v_version IS NULL THEN
             SELECT w.version INTO v_version FROM {s}.workflows w WHERE w.id = p_id;
             o_status := 2;
             o_version := v_version;
             RETURN;
         END IF;
         IF p_has_entry THEN
             INSERT INTO {s}.journal
                 (wf, version, at_ms, consumed_source, consumed_id, consumed, produced, record)
             VALUES (p_id, v_version, p_at_ms, p_c_source, p_c_id, p_consumed, p_produced,
                     p_record);
         END IF;
         IF p_outbox THEN
             IF p_ob_consumed IS NOT NULL THEN
                 DELETE FROM {s}.queue q WHERE q.event_id = p_ob_consumed;
             END IF;
             IF cardinality(p_ob_ids) > 0 THEN
                 INSERT INTO {s}.queue (topic, subject, event_id, event)
                 SELECT t.topic, t.subject, t.id, t.ev
                 FROM unnest(p_ob_topics, p_ob_subjects, p_ob_ids, p_ob_events)
                     WITH ORDINALITY AS t(topic, subject, id, ev, ord)
                 ORDER BY t.ord
                 ON CONFLICT (event_id) DO NOTHING;
             END IF;
         END IF;
         -- Keep (0) is done: the write above set `finished_at`.
         IF p_finished AND p_mode <> 0 THEN
             PERFORM {s}.retain(p_id, p_mode, p_after_ms);
         END IF;
         IF p_release AND p_token IS NOT NULL THEN
             DELETE FROM {s}.leases l WHERE l.id = p_id AND l.token = p_token;
         END IF;
         o_status := 0;
         o_version := v_version;
     END $fn$;",
    // 6: what the workflow index reads from a workflow's subject, kept in columns when its row
    // is created (the store parses the subject once; ids that are not orchestration subjects
    // leave them NULL): the orchestrator's version, the execution id and the meta (JSONB). The
    // meta is indexed for containment (`meta @> '{"k":"v"}'`), the execution id for prefix
    // lookups (short ids), and the status with the creation time (listings are newest first).
    // Existing rows keep NULLs: their subjects are zlib-deflated base64, which SQL cannot read.
    // The archive gets the same columns in the same order (its `SELECT *` still lines up). The
    // commit takes the three values (its body is migration 5's, plus them).
    "ALTER TABLE {s}.workflows ADD COLUMN orchestrator_version TEXT, ADD COLUMN execution_id TEXT,
         ADD COLUMN meta JSONB;
     ALTER TABLE {s}.archive_workflows ADD COLUMN orchestrator_version TEXT,
         ADD COLUMN execution_id TEXT, ADD COLUMN meta JSONB;
     -- Only workflows with meta are indexed: a GIN entry per workflow (even for `{}`) cost the
     -- step that creates one more than the rest of its write.
     CREATE INDEX workflows_meta ON {s}.workflows USING GIN (meta jsonb_path_ops)
         WHERE meta <> '{}'::jsonb;
     CREATE INDEX workflows_execution ON {s}.workflows (execution_id text_pattern_ops)
         WHERE execution_id IS NOT NULL;
     CREATE INDEX workflows_status_created ON {s}.workflows (status, created_at DESC);
     DROP FUNCTION {s}.commit_step(TEXT, BIGINT, BIGINT, TEXT, BOOLEAN, TEXT, BOOLEAN, TEXT, TEXT,
         BIGINT, TEXT, BOOLEAN, BIGINT, TEXT, TEXT, TEXT, TEXT, BOOLEAN, TEXT, TEXT[], TEXT[], TEXT[],
         TEXT[], BOOLEAN, INTEGER, BIGINT, BOOLEAN);
     CREATE FUNCTION {s}.commit_step(
         p_id TEXT, p_prev BIGINT, p_token BIGINT, p_record TEXT,
         p_parent_known BOOLEAN, p_parent TEXT, p_initiator_known BOOLEAN, p_initiator TEXT,
         p_source TEXT, p_wake_ms BIGINT, p_status TEXT,
         p_has_entry BOOLEAN, p_at_ms BIGINT, p_c_source TEXT, p_c_id TEXT, p_consumed TEXT,
         p_produced TEXT,
         p_outbox BOOLEAN, p_ob_consumed TEXT, p_ob_topics TEXT[], p_ob_subjects TEXT[],
         p_ob_ids TEXT[], p_ob_events TEXT[],
         p_finished BOOLEAN, p_mode INTEGER, p_after_ms BIGINT, p_release BOOLEAN,
         p_orchestrator_version TEXT, p_execution_id TEXT, p_meta TEXT,
         OUT o_status INTEGER, OUT o_version BIGINT)
     LANGUAGE plpgsql AS $fn$
     DECLARE
         v_version BIGINT;
         v_record JSONB := p_record::jsonb;
         v_root TEXT;
     BEGIN
         IF p_token IS NOT NULL THEN
             PERFORM 1 FROM {s}.leases l
             WHERE l.id = p_id AND l.token = p_token AND l.expires_at > now() FOR SHARE;
             IF NOT FOUND THEN
                 o_status := 1;
                 RETURN;
             END IF;
         END IF;
         IF p_prev IS NULL THEN
             -- The root: the parent's, else the parent itself (its row is gone or not written
             -- yet), else this workflow.
             IF p_parent IS NOT NULL THEN
                 SELECT w.root INTO v_root FROM {s}.workflows w WHERE w.id = p_parent;
             END IF;
             v_root := COALESCE(v_root, p_parent, p_id);
             INSERT INTO {s}.workflows AS w
                 (id, record, version, parent, initiator, source, wake_at, status, root, finished_at,
                  orchestrator_version, execution_id, meta)
             VALUES (p_id, v_record, 1, p_parent, p_initiator, p_source,
                     to_timestamp(p_wake_ms / 1000.0), p_status, v_root,
                     CASE WHEN p_finished AND p_mode IN (0, 2) THEN now() END,
                     p_orchestrator_version, p_execution_id, p_meta::jsonb)
             ON CONFLICT (id) DO NOTHING RETURNING w.version INTO v_version;
         ELSE
             UPDATE {s}.workflows w SET record = v_record, version = p_prev + 1,
                 parent = CASE WHEN p_parent_known THEN p_parent ELSE w.parent END,
                 initiator = CASE WHEN p_initiator_known THEN p_initiator ELSE w.initiator END,
                 source = p_source, wake_at = to_timestamp(p_wake_ms / 1000.0),
                 status = p_status,
                 -- A parent learnt (or changed) after the first write moves the root with it.
                 root = CASE WHEN p_parent_known AND p_parent IS DISTINCT FROM w.parent
                             THEN COALESCE((SELECT p.root FROM {s}.workflows p WHERE p.id = p_parent),
                                           p_parent, p_id)
                             ELSE w.root END,
                 claimed_until = NULL, updated_at = now(),
                 finished_at = CASE WHEN p_finished AND p_mode IN (0, 2)
                                    THEN COALESCE(w.finished_at, now()) ELSE w.finished_at END
             WHERE w.id = p_id AND w.version = p_prev RETURNING w.version INTO v_version;
         END IF;
         IF v_version IS NULL THEN
             SELECT w.version INTO v_version FROM {s}.workflows w WHERE w.id = p_id;
             o_status := 2;
             o_version := v_version;
             RETURN;
         END IF;
         IF p_has_entry THEN
             INSERT INTO {s}.journal
                 (wf, version, at_ms, consumed_source, consumed_id, consumed, produced, record)
             VALUES (p_id, v_version, p_at_ms, p_c_source, p_c_id, p_consumed, p_produced,
                     p_record);
         END IF;
         IF p_outbox THEN
             IF p_ob_consumed IS NOT NULL THEN
                 DELETE FROM {s}.queue q WHERE q.event_id = p_ob_consumed;
             END IF;
             IF cardinality(p_ob_ids) > 0 THEN
                 INSERT INTO {s}.queue (topic, subject, event_id, event)
                 SELECT t.topic, t.subject, t.id, t.ev
                 FROM unnest(p_ob_topics, p_ob_subjects, p_ob_ids, p_ob_events)
                     WITH ORDINALITY AS t(topic, subject, id, ev, ord)
                 ORDER BY t.ord
                 ON CONFLICT (event_id) DO NOTHING;
             END IF;
         END IF;
         -- Keep (0) is done: the write above set `finished_at`.
         IF p_finished AND p_mode <> 0 THEN
             PERFORM {s}.retain(p_id, p_mode, p_after_ms);
         END IF;
         IF p_release AND p_token IS NOT NULL THEN
             DELETE FROM {s}.leases l WHERE l.id = p_id AND l.token = p_token;
         END IF;
         o_status := 0;
         o_version := v_version;
     END $fn$;",
    // 7: the catalog, what nodes recorded of the workflows they run (definitions of
    // orchestrators and contracts, `orchestrator::memory::Catalog`).
    "CREATE TABLE {s}.catalog (
         kind text NOT NULL,
         name text NOT NULL,
         version text NOT NULL,
         document text NOT NULL,
         recorded_at timestamptz NOT NULL DEFAULT now(),
         PRIMARY KEY (kind, name, version)
     );",
    // 8: recorded answers (`orchestrator::memory::Answers`): what a service answered to each
    // request, by the service's topic and the request's source and id; the first record wins.
    // `answer_ack` records an answer and, given the claim of the request's delivery, settles it
    // with the products, in one transaction (the caller's: a transactional handler's, with its
    // own writes; or the statement's own). It returns 0 when the answer was recorded (and the
    // delivery settled, given a claim), 1 when it was recorded but the claim is lost (nothing
    // settled), 2 when an answer was recorded already (nothing changed).
    "CREATE TABLE {s}.answers (
         service text NOT NULL,
         source text NOT NULL,
         id text NOT NULL,
         produced text NOT NULL,
         recorded_at timestamptz NOT NULL DEFAULT now(),
         PRIMARY KEY (service, source, id)
     );
     CREATE FUNCTION {s}.answer_ack(p_service TEXT, p_source TEXT, p_id TEXT, p_produced TEXT,
                                    p_seq BIGINT, p_token BIGINT, p_topics TEXT[],
                                    p_subjects TEXT[], p_ids TEXT[], p_events TEXT[])
     RETURNS INTEGER LANGUAGE plpgsql AS $fn$
     BEGIN
         INSERT INTO {s}.answers (service, source, id, produced)
         VALUES (p_service, p_source, p_id, p_produced) ON CONFLICT DO NOTHING;
         IF NOT FOUND THEN
             RETURN 2;
         END IF;
         IF p_seq IS NULL THEN
             RETURN 0;
         END IF;
         DELETE FROM {s}.queue q WHERE q.seq = p_seq AND q.token = p_token;
         IF NOT FOUND THEN
             RETURN 1;
         END IF;
         IF cardinality(p_ids) > 0 THEN
             INSERT INTO {s}.queue (topic, subject, event_id, event)
             SELECT t.topic, t.subject, t.id, t.ev
             FROM unnest(p_topics, p_subjects, p_ids, p_events)
                 WITH ORDINALITY AS t(topic, subject, id, ev, ord)
             ORDER BY t.ord
             ON CONFLICT (event_id) DO NOTHING;
         END IF;
         RETURN 0;
     END $fn$;",
    // 9: a step's update of its workflow's row is a HOT update (in place, no new index
    // entries) when it changes no indexed column. `updated_at` changes at every step, so the
    // index that served "updated since" (status, updated_at) made every step's update write a
    // new entry in each of the row's ten indexes. It is indexed by the minute instead
    // (`touched_minute`, generated from `updated_at`): the steps of a workflow within one
    // minute change no indexed column. Pages keep room for the new versions (fillfactor 70).
    // The archive gets the column as a plain one, last as in `workflows` (its `SELECT *`
    // still lines up). Adding the generated column rewrites the table once.
    "CREATE FUNCTION {s}.minute_of(t TIMESTAMPTZ) RETURNS BIGINT
         LANGUAGE sql IMMUTABLE PARALLEL SAFE
         AS $fn$ SELECT floor(extract(epoch FROM t) / 60)::bigint $fn$;
     ALTER TABLE {s}.workflows
         ADD COLUMN touched_minute BIGINT GENERATED ALWAYS AS ({s}.minute_of(updated_at)) STORED;
     ALTER TABLE {s}.archive_workflows ADD COLUMN touched_minute BIGINT;
     DROP INDEX {s}.workflows_status_updated;
     CREATE INDEX workflows_status_touched ON {s}.workflows (status, touched_minute DESC);
     ALTER TABLE {s}.workflows SET (fillfactor = 70);",
    // 10: the compact journal (`orchestrator::memory::journal_codec`, as on SQLite): a row keeps
    // its consumed and produced events as one encoded value (`events`) and its record as a
    // snapshot or as a JSON Patch against the row before (`record_bytes`); each workflow keeps
    // the version of its last journal row and the delta bytes written since its last snapshot
    // (`journal_tail`, `journal_since`), so that the next commit knows whether it may write a
    // delta. Records are stored as the text written (JSONB parsed every record at every commit,
    // twice, and printed it back at every read; nothing queries inside a record). The old
    // columns are re-encoded by `crate::journal::migrate`, then dropped, in the same transaction.
    "ALTER TABLE {s}.journal ADD COLUMN events BYTEA, ADD COLUMN record_bytes BYTEA;
     ALTER TABLE {s}.archive_journal ADD COLUMN events BYTEA, ADD COLUMN record_bytes BYTEA;
     ALTER TABLE {s}.workflows ALTER COLUMN record TYPE TEXT USING record::text,
         ADD COLUMN journal_tail BIGINT, ADD COLUMN journal_since BIGINT;
     ALTER TABLE {s}.archive_workflows ALTER COLUMN record TYPE TEXT USING record::text,
         ADD COLUMN journal_tail BIGINT, ADD COLUMN journal_since BIGINT;
     DROP FUNCTION {s}.commit_step(TEXT, BIGINT, BIGINT, TEXT, BOOLEAN, TEXT, BOOLEAN, TEXT, TEXT,
         BIGINT, TEXT, BOOLEAN, BIGINT, TEXT, TEXT, TEXT, TEXT, BOOLEAN, TEXT, TEXT[], TEXT[], TEXT[],
         TEXT[], BOOLEAN, INTEGER, BIGINT, BOOLEAN, TEXT, TEXT, TEXT);
     CREATE FUNCTION {s}.commit_step(
         p_id TEXT, p_prev BIGINT, p_token BIGINT, p_record TEXT,
         p_parent_known BOOLEAN, p_parent TEXT, p_initiator_known BOOLEAN, p_initiator TEXT,
         p_source TEXT, p_wake_ms BIGINT, p_status TEXT,
         p_has_entry BOOLEAN, p_at_ms BIGINT, p_c_source TEXT, p_c_id TEXT, p_events BYTEA,
         p_record_bytes BYTEA, p_since BIGINT,
         p_outbox BOOLEAN, p_ob_consumed TEXT, p_ob_topics TEXT[], p_ob_subjects TEXT[],
         p_ob_ids TEXT[], p_ob_events TEXT[],
         p_finished BOOLEAN, p_mode INTEGER, p_after_ms BIGINT, p_release BOOLEAN,
         p_orchestrator_version TEXT, p_execution_id TEXT, p_meta TEXT,
         OUT o_status INTEGER, OUT o_version BIGINT)
     LANGUAGE plpgsql AS $fn$
     DECLARE
         v_version BIGINT;
         v_root TEXT;
     BEGIN
         IF p_token IS NOT NULL THEN
             PERFORM 1 FROM {s}.leases l
             WHERE l.id = p_id AND l.token = p_token AND l.expires_at > now() FOR SHARE;
             IF NOT FOUND THEN
                 o_status := 1;
                 RETURN;
             END IF;
         END IF;
         IF p_prev IS NULL THEN
             -- The root: the parent's, else the parent itself (its row is gone or not written
             -- yet), else this workflow.
             IF p_parent IS NOT NULL THEN
                 SELECT w.root INTO v_root FROM {s}.workflows w WHERE w.id = p_parent;
             END IF;
             v_root := COALESCE(v_root, p_parent, p_id);
             INSERT INTO {s}.workflows AS w
                 (id, record, version, parent, initiator, source, wake_at, status, root, finished_at,
                  orchestrator_version, execution_id, meta, journal_tail, journal_since)
             VALUES (p_id, p_record, 1, p_parent, p_initiator, p_source,
                     to_timestamp(p_wake_ms / 1000.0), p_status, v_root,
                     CASE WHEN p_finished AND p_mode IN (0, 2) THEN now() END,
                     p_orchestrator_version, p_execution_id, p_meta::jsonb,
                     CASE WHEN p_has_entry THEN 1 END, CASE WHEN p_has_entry THEN p_since END)
             ON CONFLICT (id) DO NOTHING RETURNING w.version INTO v_version;
         ELSE
             UPDATE {s}.workflows w SET record = p_record, version = p_prev + 1,
                 parent = CASE WHEN p_parent_known THEN p_parent ELSE w.parent END,
                 initiator = CASE WHEN p_initiator_known THEN p_initiator ELSE w.initiator END,
                 source = p_source, wake_at = to_timestamp(p_wake_ms / 1000.0),
                 status = p_status,
                 -- A parent learnt (or changed) after the first write moves the root with it.
                 root = CASE WHEN p_parent_known AND p_parent IS DISTINCT FROM w.parent
                             THEN COALESCE((SELECT p.root FROM {s}.workflows p WHERE p.id = p_parent),
                                           p_parent, p_id)
                             ELSE w.root END,
                 claimed_until = NULL, updated_at = now(),
                 finished_at = CASE WHEN p_finished AND p_mode IN (0, 2)
                                    THEN COALESCE(w.finished_at, now()) ELSE w.finished_at END,
                 journal_tail = CASE WHEN p_has_entry THEN p_prev + 1 ELSE w.journal_tail END,
                 journal_since = CASE WHEN p_has_entry THEN p_since ELSE w.journal_since END
             WHERE w.id = p_id AND w.version = p_prev RETURNING w.version INTO v_version;
         END IF;
         IF v_version IS NULL THEN
             SELECT w.version INTO v_version FROM {s}.workflows w WHERE w.id = p_id;
             o_status := 2;
             o_version := v_version;
             RETURN;
         END IF;
         IF p_has_entry THEN
             INSERT INTO {s}.journal
                 (wf, version, at_ms, consumed_source, consumed_id, events, record_bytes)
             VALUES (p_id, v_version, p_at_ms, p_c_source, p_c_id, p_events, p_record_bytes);
         END IF;
         IF p_outbox THEN
             IF p_ob_consumed IS NOT NULL THEN
                 DELETE FROM {s}.queue q WHERE q.event_id = p_ob_consumed;
             END IF;
             IF cardinality(p_ob_ids) > 0 THEN
                 INSERT INTO {s}.queue (topic, subject, event_id, event)
                 SELECT t.topic, t.subject, t.id, t.ev
                 FROM unnest(p_ob_topics, p_ob_subjects, p_ob_ids, p_ob_events)
                     WITH ORDINALITY AS t(topic, subject, id, ev, ord)
                 ORDER BY t.ord
                 ON CONFLICT (event_id) DO NOTHING;
             END IF;
         END IF;
         -- Keep (0) is done: the write above set `finished_at`.
         IF p_finished AND p_mode <> 0 THEN
             PERFORM {s}.retain(p_id, p_mode, p_after_ms);
         END IF;
         IF p_release AND p_token IS NOT NULL THEN
             DELETE FROM {s}.leases l WHERE l.id = p_id AND l.token = p_token;
         END IF;
         o_status := 0;
         o_version := v_version;
     END $fn$;
     DROP FUNCTION {s}.claim(TEXT[], BIGINT, TEXT, BIGINT);
     CREATE FUNCTION {s}.claim(p_topics TEXT[], p_limit BIGINT, p_owner TEXT, p_ms BIGINT)
     RETURNS TABLE (seq BIGINT, token BIGINT, attempt INTEGER, topic TEXT, subject TEXT,
                    event_id TEXT, event TEXT, w_record TEXT, w_version BIGINT, j_source TEXT,
                    j_events BYTEA, w_tail BIGINT, w_since BIGINT)
     LANGUAGE plpgsql SET enable_bitmapscan = off SET enable_sort = off AS $fn$
     #variable_conflict use_column
     BEGIN
         RETURN QUERY
         WITH picked AS (
             SELECT q.seq FROM {s}.queue q
             WHERE q.claimed_by IS NULL AND (p_topics IS NULL OR q.topic = ANY (p_topics))
               AND q.visible_at <= now()
               AND NOT EXISTS (SELECT 1 FROM {s}.queue p
                               WHERE p.topic = q.topic AND p.subject = q.subject
                                 AND (p.seq < q.seq OR p.claimed_by IS NOT NULL))
             ORDER BY q.seq LIMIT p_limit FOR UPDATE SKIP LOCKED),
         claimed AS (
             UPDATE {s}.queue q SET attempt = q.attempt + 1, token = nextval('{s}.claim_tokens'),
                 claimed_by = p_owner, claimed_until = now() + p_ms * interval '1 millisecond'
             FROM picked WHERE q.seq = picked.seq
             RETURNING q.seq, q.token, q.attempt, q.topic, q.subject, q.event_id, q.event)
         -- The journal's entry for the event's id (its source is compared by the caller: the
         -- event's text is not parsed here, a row that is not JSON must not fail the claim).
         SELECT c.seq, c.token, c.attempt, c.topic, c.subject, c.event_id, c.event,
                w.record, w.version, j.consumed_source, j.events, w.journal_tail, w.journal_since
         FROM claimed c
         LEFT JOIN {s}.workflows w ON w.id = c.subject AND w.source = c.topic
         LEFT JOIN LATERAL (
             SELECT e.consumed_source, e.events FROM {s}.journal e
             WHERE w.id IS NOT NULL AND e.wf = c.subject AND e.consumed_id = c.event_id
             ORDER BY e.version LIMIT 1) j ON true;
     END $fn$;",
    // 11: the claim also says when a row's workflow does not exist at all (`w_absent`): the
    // step of a workflow's first event then needs no read of its own before it commits. A dead
    // letter keeps the queue position it came from, once: a terminate retried after its answer
    // was lost finds it recorded. The statements inside `commit_step` and `claim` run on
    // generic plans: with custom ones (the planner's choice for these) PostgreSQL planned the
    // workflow's update and the claim's query again at every call, which took as long as
    // running them (BENCHMARKS.md, session 12). `touched_minute` is no longer a generated
    // column, whose expression PostgreSQL prepared anew at every write of a workflow: the
    // insert's default and the step's update set it. `minute_of` gets a body of immutable
    // functions only, so that PostgreSQL inlines it (`extract` from a `timestamptz` is only
    // stable; from an interval it is immutable, with the same result).
    "CREATE OR REPLACE FUNCTION {s}.minute_of(t TIMESTAMPTZ) RETURNS BIGINT
         LANGUAGE sql IMMUTABLE PARALLEL SAFE
         AS $fn$ SELECT floor(extract(epoch FROM (t - '1970-01-01 00:00:00+00'::timestamptz)) / 60)::bigint $fn$;
     ALTER TABLE {s}.dead_letters ADD COLUMN queue_seq BIGINT;
     CREATE UNIQUE INDEX dead_letters_queue_seq ON {s}.dead_letters (queue_seq);
     DROP FUNCTION {s}.claim(TEXT[], BIGINT, TEXT, BIGINT);
     CREATE FUNCTION {s}.claim(p_topics TEXT[], p_limit BIGINT, p_owner TEXT, p_ms BIGINT)
     RETURNS TABLE (seq BIGINT, token BIGINT, attempt INTEGER, topic TEXT, subject TEXT,
                    event_id TEXT, event TEXT, w_record TEXT, w_version BIGINT, j_source TEXT,
                    j_events BYTEA, w_tail BIGINT, w_since BIGINT, w_absent BOOLEAN)
     LANGUAGE plpgsql SET enable_bitmapscan = off SET enable_sort = off
     SET plan_cache_mode = force_generic_plan AS $fn$
     #variable_conflict use_column
     BEGIN
         RETURN QUERY
         WITH picked AS (
             SELECT q.seq FROM {s}.queue q
             WHERE q.claimed_by IS NULL AND (p_topics IS NULL OR q.topic = ANY (p_topics))
               AND q.visible_at <= now()
               AND NOT EXISTS (SELECT 1 FROM {s}.queue p
                               WHERE p.topic = q.topic AND p.subject = q.subject
                                 AND (p.seq < q.seq OR p.claimed_by IS NOT NULL))
             ORDER BY q.seq LIMIT p_limit FOR UPDATE SKIP LOCKED),
         claimed AS (
             UPDATE {s}.queue q SET attempt = q.attempt + 1, token = nextval('{s}.claim_tokens'),
                 claimed_by = p_owner, claimed_until = now() + p_ms * interval '1 millisecond'
             FROM picked WHERE q.seq = picked.seq
             RETURNING q.seq, q.token, q.attempt, q.topic, q.subject, q.event_id, q.event)
         -- The workflow is read for a row of its own orchestrator's lane (its source is the
         -- row's topic), with the journal's entry for the event's id (its source is compared by
         -- the caller: the event's text is not parsed here, a row that is not JSON must not fail
         -- the claim).
         SELECT c.seq, c.token, c.attempt, c.topic, c.subject, c.event_id, c.event,
                CASE WHEN w.source = c.topic THEN w.record END,
                CASE WHEN w.source = c.topic THEN w.version END,
                j.consumed_source, j.events,
                CASE WHEN w.source = c.topic THEN w.journal_tail END,
                CASE WHEN w.source = c.topic THEN w.journal_since END,
                w.id IS NULL
         FROM claimed c
         LEFT JOIN {s}.workflows w ON w.id = c.subject
         LEFT JOIN LATERAL (
             SELECT e.consumed_source, e.events FROM {s}.journal e
             WHERE w.source = c.topic AND e.wf = c.subject AND e.consumed_id = c.event_id
             ORDER BY e.version LIMIT 1) j ON true;
     END $fn$;
     ALTER TABLE {s}.workflows ALTER COLUMN touched_minute DROP EXPRESSION;
     ALTER TABLE {s}.workflows ALTER COLUMN touched_minute SET DEFAULT {s}.minute_of(now());
     CREATE OR REPLACE FUNCTION {s}.commit_step(
         p_id TEXT, p_prev BIGINT, p_token BIGINT, p_record TEXT,
         p_parent_known BOOLEAN, p_parent TEXT, p_initiator_known BOOLEAN, p_initiator TEXT,
         p_source TEXT, p_wake_ms BIGINT, p_status TEXT,
         p_has_entry BOOLEAN, p_at_ms BIGINT, p_c_source TEXT, p_c_id TEXT, p_events BYTEA,
         p_record_bytes BYTEA, p_since BIGINT,
         p_outbox BOOLEAN, p_ob_consumed TEXT, p_ob_topics TEXT[], p_ob_subjects TEXT[],
         p_ob_ids TEXT[], p_ob_events TEXT[],
         p_finished BOOLEAN, p_mode INTEGER, p_after_ms BIGINT, p_release BOOLEAN,
         p_orchestrator_version TEXT, p_execution_id TEXT, p_meta TEXT,
         OUT o_status INTEGER, OUT o_version BIGINT)
     LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $fn$
     DECLARE
         v_version BIGINT;
         v_root TEXT;
     BEGIN
         IF p_token IS NOT NULL THEN
             PERFORM 1 FROM {s}.leases l
             WHERE l.id = p_id AND l.token = p_token AND l.expires_at > now() FOR SHARE;
             IF NOT FOUND THEN
                 o_status := 1;
                 RETURN;
             END IF;
         END IF;
         IF p_prev IS NULL THEN
             -- The root: the parent's, else the parent itself (its row is gone or not written
             -- yet), else this workflow.
             IF p_parent IS NOT NULL THEN
                 SELECT w.root INTO v_root FROM {s}.workflows w WHERE w.id = p_parent;
             END IF;
             v_root := COALESCE(v_root, p_parent, p_id);
             INSERT INTO {s}.workflows AS w
                 (id, record, version, parent, initiator, source, wake_at, status, root, finished_at,
                  orchestrator_version, execution_id, meta, journal_tail, journal_since)
             VALUES (p_id, p_record, 1, p_parent, p_initiator, p_source,
                     to_timestamp(p_wake_ms / 1000.0), p_status, v_root,
                     CASE WHEN p_finished AND p_mode IN (0, 2) THEN now() END,
                     p_orchestrator_version, p_execution_id, p_meta::jsonb,
                     CASE WHEN p_has_entry THEN 1 END, CASE WHEN p_has_entry THEN p_since END)
             ON CONFLICT (id) DO NOTHING RETURNING w.version INTO v_version;
         ELSE
             UPDATE {s}.workflows w SET record = p_record, version = p_prev + 1,
                 parent = CASE WHEN p_parent_known THEN p_parent ELSE w.parent END,
                 initiator = CASE WHEN p_initiator_known THEN p_initiator ELSE w.initiator END,
                 source = p_source, wake_at = to_timestamp(p_wake_ms / 1000.0),
                 status = p_status,
                 -- A parent learnt (or changed) after the first write moves the root with it.
                 root = CASE WHEN p_parent_known AND p_parent IS DISTINCT FROM w.parent
                             THEN COALESCE((SELECT p.root FROM {s}.workflows p WHERE p.id = p_parent),
                                           p_parent, p_id)
                             ELSE w.root END,
                 claimed_until = NULL, updated_at = now(), touched_minute = {s}.minute_of(now()),
                 finished_at = CASE WHEN p_finished AND p_mode IN (0, 2)
                                    THEN COALESCE(w.finished_at, now()) ELSE w.finished_at END,
                 journal_tail = CASE WHEN p_has_entry THEN p_prev + 1 ELSE w.journal_tail END,
                 journal_since = CASE WHEN p_has_entry THEN p_since ELSE w.journal_since END
             WHERE w.id = p_id AND w.version = p_prev RETURNING w.version INTO v_version;
         END IF;
         IF v_version IS NULL THEN
             SELECT w.version INTO v_version FROM {s}.workflows w WHERE w.id = p_id;
             o_status := 2;
             o_version := v_version;
             RETURN;
         END IF;
         IF p_has_entry THEN
             INSERT INTO {s}.journal
                 (wf, version, at_ms, consumed_source, consumed_id, events, record_bytes)
             VALUES (p_id, v_version, p_at_ms, p_c_source, p_c_id, p_events, p_record_bytes);
         END IF;
         IF p_outbox THEN
             IF p_ob_consumed IS NOT NULL THEN
                 DELETE FROM {s}.queue q WHERE q.event_id = p_ob_consumed;
             END IF;
             IF cardinality(p_ob_ids) > 0 THEN
                 INSERT INTO {s}.queue (topic, subject, event_id, event)
                 SELECT t.topic, t.subject, t.id, t.ev
                 FROM unnest(p_ob_topics, p_ob_subjects, p_ob_ids, p_ob_events)
                     WITH ORDINALITY AS t(topic, subject, id, ev, ord)
                 ORDER BY t.ord
                 ON CONFLICT (event_id) DO NOTHING;
             END IF;
         END IF;
         -- Keep (0) is done: the write above set `finished_at`.
         IF p_finished AND p_mode <> 0 THEN
             PERFORM {s}.retain(p_id, p_mode, p_after_ms);
         END IF;
         IF p_release AND p_token IS NOT NULL THEN
             DELETE FROM {s}.leases l WHERE l.id = p_id AND l.token = p_token;
         END IF;
         o_status := 0;
         o_version := v_version;
     END $fn$;",
];

// One migration per version: a migration appended without bumping the version (or the
// reverse) does not compile.
const _: () = assert!(MIGRATIONS.len() == SCHEMA_VERSION as usize);

/// `name` quoted as an SQL identifier.
pub(crate) fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Creates the schema if missing and applies the migrations it lacks, under an advisory lock
/// (several processes may open the same database at once).
pub(crate) async fn migrate(client: &mut Client, schema: &str) -> Result<(), OpenError> {
    let s = quote_ident(schema);
    let tx = client.transaction().await.map_err(OpenError::Migration)?;
    tx.execute("SELECT pg_advisory_xact_lock(hashtext('orchestrator-postgres:' || $1::text))", &[&schema])
        .await
        .map_err(OpenError::Migration)?;
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS {s};
         CREATE TABLE IF NOT EXISTS {s}.schema_version (version INTEGER NOT NULL);"
    ))
    .await
    .map_err(OpenError::Migration)?;
    let row = tx
        .query_one(&format!("SELECT COALESCE(max(version), 0) FROM {s}.schema_version"), &[])
        .await
        .map_err(OpenError::Migration)?;
    let found: i32 = row.get(0);
    if found > SCHEMA_VERSION {
        return Err(OpenError::NewerSchema { found, supported: SCHEMA_VERSION });
    }
    let start = usize::try_from(found).unwrap_or(0);
    for (index, migration) in MIGRATIONS.iter().enumerate().skip(start) {
        tx.batch_execute(&migration.replace("{s}", &s)).await.map_err(OpenError::Migration)?;
        if index + 1 == 10 {
            // The rows of the old journal, re-encoded in Rust (SQL cannot deflate).
            crate::journal::migrate(&tx, &s).await?;
        }
    }
    if found < SCHEMA_VERSION {
        tx.batch_execute(&format!(
            "DELETE FROM {s}.schema_version; INSERT INTO {s}.schema_version (version) VALUES ({SCHEMA_VERSION});"
        ))
        .await
        .map_err(OpenError::Migration)?;
    }
    tx.commit().await.map_err(OpenError::Migration)
}
