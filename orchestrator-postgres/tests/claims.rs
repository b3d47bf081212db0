//! Two nodes claiming due wake-ups at once never get the same workflow (`SKIP LOCKED`).

mod common;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use orchestrator::memory::{Memory, MemoryExt, NodeId, Retention, WriteMeta};
use orchestrator_postgres::PgStore;

use common::{config, database_url, drop_schema, fresh_schema};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_claims_hand_out_each_wake_up_once() {
    let Some(url) = database_url() else { return };
    let schema = fresh_schema();
    let open = |name: &str| {
        let mut cfg = config(&url, &schema, Duration::from_secs(60), Retention::Keep);
        cfg.node = NodeId::new(name);
        PgStore::<String>::open(cfg)
    };
    let a = Arc::new(open("node-a").await.expect("open"));
    let b = Arc::new(open("node-b").await.expect("open"));
    let due = SystemTime::now() - Duration::from_secs(5);
    for i in 0..60 {
        let id = format!("wf-{i:02}");
        let meta = WriteMeta { wake_at: Some(due + Duration::from_millis(i)), ..WriteMeta::new(&id, "test") };
        a.write(&id, &"x".to_owned(), None, None, &meta).await.expect("write");
    }
    let claimers: Vec<_> = [a, b]
        .into_iter()
        .flat_map(|store| (0..3).map(move |_| Arc::clone(&store)))
        .map(|store| {
            tokio::spawn(async move {
                let mut got = Vec::new();
                loop {
                    let batch = store.claim_due(7, Duration::from_secs(60)).await.expect("claim");
                    if batch.is_empty() {
                        return got;
                    }
                    let ats: Vec<_> = batch.iter().map(|w| w.at).collect();
                    assert!(ats.windows(2).all(|w| w[0] <= w[1]), "a batch is earliest first");
                    got.extend(batch.into_iter().map(|w| w.id));
                }
            })
        })
        .collect();
    let mut all = Vec::new();
    for claimer in claimers {
        all.extend(claimer.await.expect("claimer"));
    }
    let unique: HashSet<_> = all.iter().cloned().collect();
    assert_eq!(all.len(), 60, "every due wake-up is handed out once: {} handed out", all.len());
    assert_eq!(unique.len(), 60, "no wake-up is handed out twice");
    drop_schema(&url, &schema).await;
}
