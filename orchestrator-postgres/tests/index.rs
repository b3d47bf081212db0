//! The workflow index on PostgreSQL: real workflows run by a node over a `PgStore` leave, in
//! their rows, the orchestrator that wrote them (`source`), their status (`active` while they
//! wait for a service, `waiting` on a durable timer, then `done`, or `failed` when the failure
//! latch is set), their initiator, their parent and the root of their tree (a grandchild
//! included), and `created_at <= updated_at`. The listing queries an operator runs use the
//! indexes of schema migration 4.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use orchestrator::contract::VersionedContract;
use orchestrator::handler::EventHandler;
use orchestrator::memory::Retention;
use orchestrator::orchestration::{Orchestrator, WorkflowRecord};
use orchestrator::prelude::*;
use orchestrator::runtime::Node;
use orchestrator_examples::calculator::flows::AverageFlow;
use orchestrator_examples::calculator::{
    AddV1, AverageInput, AverageOutput, AverageV1, Operands, Sum, services,
};
use orchestrator_examples::orders::{self, OrderFlow, OrderInput, OrderV1, PaymentV1};
use orchestrator_postgres::PgStore;
use tokio::sync::watch;
use tokio_postgres::types::ToSql;

const CLIENT: &str = "com.test.index.client";

// ---------------------------------------------------------------------------------------------
// A tree of three workflows (top → mid → the averaging workflow), and one that fails.

/// Numbers to average.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Values {
    /// The numbers.
    pub values: Vec<f64>,
}

/// An average.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Mean {
    /// The average.
    pub average: f64,
}

orchestrator::orchestrator_contract! {
    /// The root workflow: runs `mid` as a child.
    pub contract TopContract {
        uri: "#/orc/index/top",
        name: "index.top",
        versions: { TopV1 = "1.0.0" { init: Values, complete: Mean } },
    }
}

orchestrator::orchestrator_contract! {
    /// The child workflow: runs the averaging workflow as its own child.
    pub contract MidContract {
        uri: "#/orc/index/mid",
        name: "index.mid",
        versions: { MidV1 = "1.0.0" { init: Values, complete: Mean } },
    }
}

orchestrator::orchestrator_contract! {
    /// A workflow whose first step panics: its failure latch is set.
    pub contract BoomContract {
        uri: "#/orc/index/boom",
        name: "index.boom",
        versions: { BoomV1 = "1.0.0" { init: Values, complete: Mean } },
    }
}

/// The context of the workflows of this test.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ctx {
    /// The numbers.
    pub values: Vec<f64>,
    /// The child's average.
    pub average: f64,
}

orchestrator::machine! {
    /// Runs `mid` as a child workflow.
    pub machine Top {
        contract: TopV1,
        services: { mid: MidV1 },
        context: Ctx,
        init: |input| Ctx { values: input.values.clone(), average: 0.0 },
        output: |ctx| Mean { average: ctx.average },
        states: {
            running: {
                entry: [|ctx, _, out| out.mid(Values { values: ctx.values.clone() })],
                on: {
                    mid::Mean => {
                        target: finished,
                        actions: [|ctx, event, _| if let TopEvent::MidMean(m) = event { ctx.average = m.average }],
                    },
                    mid::error => finished,
                },
            },
            finished: { type: final },
        },
    }
}

orchestrator::machine! {
    /// Runs the averaging workflow as a child workflow.
    pub machine Mid {
        contract: MidV1,
        services: { average: AverageV1 },
        context: Ctx,
        init: |input| Ctx { values: input.values.clone(), average: 0.0 },
        output: |ctx| Mean { average: ctx.average },
        states: {
            running: {
                entry: [|ctx, _, out| out.average(AverageInput { values: ctx.values.clone() })],
                on: {
                    average::AverageOutput => {
                        target: finished,
                        actions: [|ctx, event, _| if let MidEvent::AverageOutput(AverageOutput { average }) = event { ctx.average = *average }],
                    },
                    average::error => finished,
                },
            },
            finished: { type: final },
        },
    }
}

orchestrator::machine! {
    /// Panics in its first step.
    pub machine Boom {
        contract: BoomV1,
        services: { add: AddV1 },
        context: Ctx,
        init: |input| Ctx { values: input.values.clone(), average: 0.0 },
        output: |ctx| Mean { average: ctx.average },
        states: {
            running: {
                entry: [|ctx, _, out| {
                    assert!(ctx.values.is_empty(), "index test: this workflow fails on purpose");
                    out.add(Operands { a: 0.0, b: 0.0 });
                }],
                on: { add::Sum => finished },
            },
            finished: { type: final },
        },
    }
}

/// A handler that holds every event until its gate opens, then hands it to `inner`.
struct Gated<H> {
    inner: H,
    open: watch::Receiver<bool>,
}

impl<H: EventHandler> EventHandler for Gated<H> {
    fn source(&self) -> &str {
        self.inner.source()
    }

    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        let mut open = self.open.clone();
        open.wait_for(|open| *open).await.map_err(|_| Violation::execution("the gate is gone"))?;
        self.inner.execute(event).await
    }
}

// ---------------------------------------------------------------------------------------------

/// One row of `workflows`: what the index keeps.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    id: String,
    source: String,
    status: String,
    initiator: Option<String>,
    parent: Option<String>,
    root: Option<String>,
    /// `created_at <= updated_at`.
    ordered: bool,
}

/// A connection to the test database (its task runs until the client is dropped).
async fn connect(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.expect("connect");
    tokio::spawn(connection);
    client
}

async fn rows(client: &tokio_postgres::Client, schema: &str) -> Vec<Row> {
    let sql = format!(
        "SELECT id, source, status, initiator, parent, root, created_at <= updated_at
         FROM \"{schema}\".workflows ORDER BY seq"
    );
    let rows = client.query(&sql, &[]).await.expect("the workflows");
    rows.iter()
        .map(|r| Row {
            id: r.get(0),
            source: r.get(1),
            status: r.get(2),
            initiator: r.get(3),
            parent: r.get(4),
            root: r.get(5),
            ordered: r.get(6),
        })
        .collect()
}

/// Waits (at most 30 s) until the rows satisfy `ready`, and returns them.
async fn wait_rows(
    client: &tokio_postgres::Client,
    schema: &str,
    what: &str,
    ready: impl Fn(&[Row]) -> bool,
) -> Vec<Row> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let rows = rows(client, schema).await;
        if ready(&rows) {
            return rows;
        }
        assert!(Instant::now() < deadline, "{what}: not within 30 s; the rows: {rows:#?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn find<'a>(rows: &'a [Row], id: &str) -> &'a Row {
    rows.iter().find(|r| r.id == id).unwrap_or_else(|| panic!("no row {id} in {rows:#?}"))
}

fn child_of<'a>(rows: &'a [Row], parent: &str) -> Option<&'a Row> {
    rows.iter().find(|r| r.parent.as_deref() == Some(parent))
}

/// The orchestrator (source topic) of a workflow contract.
fn orchestrator_of(contract: &VersionedContract) -> String {
    contract.accepts().event_type().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rows_keep_what_the_workflow_index_needs() {
    let Some(url) = common::database_url() else { return };
    let schema = common::fresh_schema();
    let config = common::config(&url, &schema, Duration::from_secs(30), Retention::Keep);
    let store: Arc<PgStore<WorkflowRecord>> = Arc::new(PgStore::open(config).await.expect("open"));
    let (gate, open) = watch::channel(false);
    let node = Node::builder(Arc::clone(&store))
        .service(services::add().expect("add"))
        .service(Gated { inner: services::divide().expect("divide"), open })
        .service(orders::services::inventory().expect("inventory"))
        .service(orders::services::shipping().expect("shipping"))
        // Nobody answers the payment requests: an order waits on its 30 s timeout.
        .remote(orchestrator_of(PaymentV1::versioned()))
        .orchestrator(Orchestrator::builder(Arc::clone(&store)).machine::<Top>())
        .orchestrator(Orchestrator::builder(Arc::clone(&store)).machine::<Mid>())
        .orchestrator(Orchestrator::builder(Arc::clone(&store)).machine::<AverageFlow>())
        .orchestrator(Orchestrator::builder(Arc::clone(&store)).machine::<OrderFlow>())
        .orchestrator(Orchestrator::builder(Arc::clone(&store)).machine::<Boom>())
        .client(CLIENT)
        .build()
        .await
        .expect("a node");
    let db = connect(&url).await;
    let (top_source, mid_source, average_source) = (
        orchestrator_of(TopV1::versioned()),
        orchestrator_of(MidV1::versioned()),
        orchestrator_of(AverageV1::versioned()),
    );

    // A tree: top → mid → average, held at the divide service: all three are active.
    let init = EventFactory::<TopV1>::new()
        .init(Values { values: vec![1.0, 3.0] }, Event::builder().source(CLIENT))
        .expect("top init");
    let top = node.start(init).await.expect("started");
    let tree = wait_rows(&db, &schema, "the grandchild's row", |rows| {
        rows.iter().any(|r| r.id == top)
            && child_of(rows, &top)
                .and_then(|mid| child_of(rows, &mid.id))
                .is_some_and(|avg| avg.status == "active")
    })
    .await;
    let mid = child_of(&tree, &top).expect("the child").id.clone();
    let average = child_of(&tree, &mid).expect("the grandchild").id.clone();
    let expected = |id: &str, source: &str, status: &str, initiator: &str, parent: Option<&str>| Row {
        id: id.to_owned(),
        source: source.to_owned(),
        status: status.to_owned(),
        initiator: Some(initiator.to_owned()),
        parent: parent.map(str::to_owned),
        root: Some(top.clone()),
        ordered: true,
    };
    assert_eq!(find(&tree, &top), &expected(&top, &top_source, "active", CLIENT, None));
    assert_eq!(find(&tree, &mid), &expected(&mid, &mid_source, "active", &top_source, Some(&top)));
    assert_eq!(
        find(&tree, &average),
        &expected(&average, &average_source, "active", &mid_source, Some(&mid))
    );

    // A failing workflow, and an order waiting on its payment's timeout.
    let boom = EventFactory::<BoomV1>::new()
        .init(Values { values: vec![1.0] }, Event::builder().source(CLIENT))
        .expect("boom init");
    let boom = node.start(boom).await.expect("started");
    let order = EventFactory::<OrderV1>::new()
        .init(
            OrderInput { order_id: "o-1".into(), sku: "sku-1".into(), quantity: 1, amount_cents: 500 },
            Event::builder().source(CLIENT),
        )
        .expect("order init");
    let order = node.start(order).await.expect("started");
    let rows = wait_rows(&db, &schema, "failed and waiting", |rows| {
        rows.iter().any(|r| r.id == boom && r.status == "failed")
            && rows.iter().any(|r| r.id == order && r.status == "waiting")
    })
    .await;
    let alone = |id: &str, source: String, status: &str| Row {
        id: id.to_owned(),
        source,
        status: status.to_owned(),
        initiator: Some(CLIENT.to_owned()),
        parent: None,
        root: Some(id.to_owned()),
        ordered: true,
    };
    assert_eq!(find(&rows, &boom), &alone(&boom, orchestrator_of(BoomV1::versioned()), "failed"));
    assert_eq!(find(&rows, &order), &alone(&order, orchestrator_of(OrderV1::versioned()), "waiting"));
    let wake: Option<bool> = db
        .query_one(&format!("SELECT wake_at > now() FROM \"{schema}\".workflows WHERE id = $1"), &[&order])
        .await
        .expect("the order's wake-up")
        .get(0);
    assert_eq!(wake, Some(true), "a waiting workflow has its timer");

    // The gate opens: the tree completes, each row done, the rest unchanged.
    gate.send(true).expect("open the gate");
    let done = wait_rows(&db, &schema, "the tree done", |rows| {
        [&top, &mid, &average].iter().all(|id| rows.iter().any(|r| &r.id == *id && r.status == "done"))
    })
    .await;
    assert_eq!(find(&done, &top), &expected(&top, &top_source, "done", CLIENT, None));
    assert_eq!(find(&done, &mid), &expected(&mid, &mid_source, "done", &top_source, Some(&top)));
    assert_eq!(find(&done, &average), &expected(&average, &average_source, "done", &mid_source, Some(&mid)));
    assert_eq!(find(&done, &boom).status, "failed");
    assert_eq!(find(&done, &order).status, "waiting");
    assert_eq!(done.len(), 5, "{done:#?}");
    assert!(done.iter().all(|r| r.ordered), "created_at <= updated_at: {done:#?}");
    let later: bool = db
        .query_one(
            &format!("SELECT updated_at > created_at FROM \"{schema}\".workflows WHERE id = $1"),
            &[&top],
        )
        .await
        .expect("top's times")
        .get(0);
    assert!(later, "a workflow written twice was updated after its creation");
    // The store's status agrees with the record's.
    let status = node.status(&top).await.expect("status").expect("known");
    assert_eq!(status.state().as_str(), "done");
    node.shutdown().await;

    // The listing queries use the indexes.
    let q = |sql: &str| sql.replace("{s}", &format!("\"{schema}\""));
    db.batch_execute("SET enable_seqscan = off").await.expect("no sequential scans");
    let uses = async |sql: &str, params: &[&(dyn ToSql + Sync)], index: &str| {
        let sql = q(sql);
        let plan = db.query(&format!("EXPLAIN {sql}"), params).await.expect("explain");
        let plan: Vec<String> = plan.iter().map(|r| r.get(0)).collect();
        assert!(plan.iter().any(|line| line.contains(index)), "{sql} uses {index}: {plan:#?}");
    };
    let since = std::time::SystemTime::now() - std::time::Duration::from_secs(600);
    let by_status = "SELECT id FROM {s}.workflows w WHERE w.status = $1 \
                     AND w.touched_minute >= {s}.minute_of($2) AND w.updated_at >= $2 LIMIT 20";
    uses(by_status, &[&"active", &since], "workflows_status_touched").await;
    let by_source = "SELECT id FROM {s}.workflows WHERE source = $1 ORDER BY created_at DESC LIMIT 20";
    uses(by_source, &[&top_source], "workflows_source_created").await;
    let by_initiator = "SELECT id FROM {s}.workflows WHERE initiator = $1 ORDER BY created_at DESC LIMIT 20";
    uses(by_initiator, &[&CLIENT], "workflows_initiator_created").await;
    let by_root = "SELECT id FROM {s}.workflows WHERE root = $1 ORDER BY created_at";
    uses(by_root, &[&top], "workflows_root_created").await;
    uses("SELECT id FROM {s}.workflows ORDER BY created_at DESC LIMIT 20", &[], "workflows_created").await;
    // And they answer: the tree by its root, oldest first.
    let tree: Vec<String> = db
        .query(&q("SELECT id FROM {s}.workflows WHERE root = $1 ORDER BY created_at"), &[&top])
        .await
        .expect("the tree")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(tree, [top.clone(), mid, average]);

    // A step that changes no indexed column updates its row in place (HOT): the workflows' rows
    // were updated at each step, and some of those updates were HOT. The server's statistics
    // arrive within a second or so of the writers' commits.
    let table = format!("\"{schema}\".workflows");
    let mut stats = (0, 0);
    for _ in 0..100 {
        let row = db
            .query_one(
                "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relid = $1::text::regclass",
                &[&table],
            )
            .await
            .expect("the table's statistics");
        stats = (row.get::<_, i64>(0), row.get::<_, i64>(1));
        if stats.1 > 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(stats.1 > 0, "no HOT update among the {} updates of the workflows' rows", stats.0);
    drop(db);
    common::drop_schema(&url, &schema).await;
}
