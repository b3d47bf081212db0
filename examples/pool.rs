//! Worker pools: one consumer, two pools (one per topic), lifecycle events printed as they
//! come, a graceful stop on SIGINT (Ctrl-C) or SIGTERM, or once every task is done.
//!
//! `cargo run --example pool` runs 20 tasks and stops by itself; press Ctrl-C to stop it
//! earlier: the workers stop claiming, running tasks get the grace period to finish, and the
//! rest are handed back.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use orchestrator::prelude::*;
use orchestrator::runtime::pool::{ConsumerBuilder, LifecycleEvent, PoolConfig, Toolkit, handler_fn};
use orchestrator::transport::{InProcessConfig, InProcessTransport, Transport};
use orchestrator_examples::nats_order::stop_signal;

const TASKS: usize = 20;

fn task(topic: &str, n: usize) -> Result<Event, orchestrator_examples::nats_order::Error> {
    Ok(Event::builder()
        .source("com.example.client")
        .r#type(topic)
        .subject(format!("job-{n}"))
        .data_json(serde_json::json!({ "n": n }))
        .build()?)
}

#[tokio::main]
async fn main() -> Result<(), orchestrator_examples::nats_order::Error> {
    // Before anything else, so that a signal never kills the process halfway.
    let signal = stop_signal()?;
    let transport = Arc::new(InProcessTransport::new(InProcessConfig::default())?);
    let done = Arc::new(AtomicUsize::new(0));
    let (resized, thumbnails) = (Arc::clone(&done), Arc::clone(&done));
    let builder = ConsumerBuilder::on(Arc::clone(&transport))
        .pool(
            PoolConfig::new("com.example.resize").workers(2).slots(2).grace(Duration::from_secs(5)),
            handler_fn(move |event: Event, kit: Toolkit| {
                let done = Arc::clone(&resized);
                async move {
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_millis(20)) => {}
                        () = kit.cancellation().cancelled() => return, // handed back
                    }
                    let _ = event.data();
                    kit.success(Vec::new()).expect("one response");
                    done.fetch_add(1, Ordering::SeqCst);
                }
            }),
        )
        .pool(
            PoolConfig::new("com.example.thumbnail").task_timeout(Some(Duration::from_secs(1))),
            handler_fn(move |_: Event, kit: Toolkit| {
                let done = Arc::clone(&thumbnails);
                async move {
                    kit.heartbeat().await.expect("extended");
                    kit.success(Vec::new()).expect("one response");
                    done.fetch_add(1, Ordering::SeqCst);
                }
            }),
        );
    let mut events = builder.subscribe();
    let consumer = builder.start().await?;
    let printer = tokio::spawn(async move {
        while let Ok(event) = events.recv().await {
            match &event {
                LifecycleEvent::WorkerStopped { worker, reason } => {
                    println!("{worker:>22}  worker:stopped ({reason})")
                }
                LifecycleEvent::PollingStarting { .. } | LifecycleEvent::PollingSuccess { .. } => {}
                other => match other.task() {
                    Some(task) => println!("{:>22}  {:<15} {}", other.worker(), other.name(), task.event_id),
                    None => println!("{:>22}  {}", other.worker(), other.name()),
                },
            }
        }
    });
    let mut jobs = Vec::new();
    for n in 0..TASKS {
        jobs.push(task(if n % 2 == 0 { "com.example.resize" } else { "com.example.thumbnail" }, n)?);
    }
    transport.publish(jobs).await?;
    let finished = async {
        while done.load(Ordering::SeqCst) < TASKS {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::select! {
        () = finished => println!("all {TASKS} tasks done: stopping"),
        why = signal => println!("{why}: stopping gracefully"),
    }
    consumer.stop().await;
    transport.close();
    drop(consumer);
    let _ = tokio::time::timeout(Duration::from_secs(1), printer).await;
    println!("{} of {TASKS} tasks done", done.load(Ordering::SeqCst));
    Ok(())
}
