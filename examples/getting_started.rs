//! A durable workflow end to end, the crate docs' getting-started page (`orchestrator::guide`):
//! a service, a workflow calling it, and a durable node over SQLite running one workflow.
//! Run it with `cargo run --example getting_started`.
#![allow(missing_docs)]
use std::sync::Arc;

use orchestrator::prelude::*;

#[derive(Clone, Serialize, Deserialize, JsonSchema)]
pub struct Greeting {
    pub name: String,
}
#[derive(Clone, Serialize, Deserialize, JsonSchema)]
pub struct Greeted {
    pub text: String,
}

orchestrator::simple_contract! { // the service: accepts `com.demo.greet`, emits `evt.demo.greet.success`
    pub contract Greet { uri: "#/demo/greet", type: "demo.greet", versions: { GreetV1 = "1.0.0" { accepts: Greeting, emits: Greeted } } }
}
orchestrator::orchestrator_contract! { // the workflow: started by `arvo.orc.welcome`, done with `arvo.orc.welcome.done`
    pub contract Welcome { uri: "#/orc/welcome", name: "welcome", versions: { WelcomeV1 = "1.0.0" { init: Greeting, complete: Greeted } } }
}

orchestrator::machine! {
    pub machine WelcomeFlow { // asks the greeter, then completes with its answer
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
    println!(
        "{} -> {} ({})",
        done.r#type(),
        done.data_value()["text"],
        node.status(init.subject()).await?.ok_or("no record")?
    );
    node.shutdown().await;
    Ok(())
}
