//! A durable workflow end to end: a contract for a service, a contract and a `machine!` for the
//! workflow, the service's handler, and a durable node over SQLite that runs one workflow and
//! prints its outcome. The crate docs' getting-started page (`orchestrator::guide`) shows this
//! file. Run it with `cargo run --example getting_started`.

use std::sync::Arc;

use orchestrator::handler::service::{Emit, ServiceHandler, ServiceInput};
use orchestrator::orchestration::{Orchestrator, WorkflowRecord};
use orchestrator::prelude::*;
use orchestrator::runtime::Node;

/// Whom to greet.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Greeting {
    /// Their name.
    pub name: String,
}
/// A greeting.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Greeted {
    /// Its text.
    pub text: String,
}

orchestrator::simple_contract! {
    /// The greeter service: accepts `com.demo.greet`, emits `evt.demo.greet.success`.
    pub contract Greet { uri: "#/demo/greet", type: "demo.greet", versions: { GreetV1 = "1.0.0" { accepts: Greeting, emits: Greeted } } }
}
orchestrator::orchestrator_contract! {
    /// The workflow: started by `arvo.orc.welcome`, completes with `arvo.orc.welcome.done`.
    pub contract Welcome { uri: "#/orc/welcome", name: "welcome", versions: { WelcomeV1 = "1.0.0" { init: Greeting, complete: Greeted } } }
}

orchestrator::machine! {
    /// Asks the greeter, then completes with its answer.
    pub machine WelcomeFlow {
        contract: WelcomeV1,
        services: { greet: GreetV1 },
        context: Greeted,
        init: |_input| Greeted { text: String::new() },
        output: |ctx| ctx.clone(),
        states: {
            asking: {
                entry: [ask = |_, event, out| if let WelcomeFlowEvent::Init(g) = event { out.greet(g.clone()) }],
                on: { greet::Greeted => { target: done, actions: [keep = |ctx, event, _| if let WelcomeFlowEvent::GreetGreeted(g) = event { *ctx = g.clone() }] } },
            },
            done: { type: final },
        },
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    std::fs::create_dir_all("orchestrator-data")?;
    let store = Arc::new(orchestrator_sqlite::SqliteMemory::<WorkflowRecord>::open_path(
        "orchestrator-data/getting-started.sqlite",
    )?);
    let greeter = ServiceHandler::<Greet>::builder()
        .version(|input: ServiceInput<GreetV1>| async move {
            Ok(Emit::new(Greeted { text: format!("Hello, {}!", input.payload.name) }))
        })
        .build()?;
    let node = Node::builder(Arc::clone(&store))
        .durable() // the events in flight are kept in the same file: a crash loses none
        .service(greeter)
        .orchestrator(Orchestrator::builder(Arc::clone(&store)).machine::<WelcomeFlow>())
        .client("com.demo.app")
        .build()
        .await?;
    let init = EventFactory::<WelcomeV1>::new()
        .init(Greeting { name: "Ada".into() }, Event::builder().source("com.demo.app"))?;
    let done = node.run(init.clone()).await?; // starts the workflow and waits for its completion
    println!("{} -> {}", done.r#type(), done.data_value()["text"]);
    println!("status: {}", node.status(init.subject()).await?.ok_or("no record")?);
    node.shutdown().await;
    Ok(())
}
