//! An agent loop with a mocked LLM: a `machine!` workflow asks an `llm` service (a scripted,
//! deterministic model) what to do; when the model answers with a tool call, the workflow first
//! asks a human for approval through a domained event (contract domain `human.interaction`,
//! answered by the node's `on_domained` callback), then runs the tool as a service event (the
//! calculator's add service) and hands the result back to the model, until the model gives its
//! final answer. One [`Node`] runs it all; the example prints the conversation and the timeline
//! of events (its in-process transport logs every event it accepts).
//!
//! The model is rate limited: its first answer to each prompt is a `RateLimited` system error.
//! The `llm` service's retry policy (`retry: { attempts: 3, backoff: 50 .. 500, on: ["RateLimited"] }`)
//! sends the prompt again 50 ms later on the workflow's durable timer; the machine never sees
//! the error, and the example prints the attempts per prompt.
//!
//! Run with `cargo run --example agent_loop`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use orchestrator::domain::Domain;
use orchestrator::emit::NamedError;
use orchestrator::handler::service::{Emit, ServiceHandler, ServiceInput};
use orchestrator::memory::{InMemory, InMemoryConfig, Retention};
use orchestrator::orchestration::{Orchestrator, WorkflowRecord};
use orchestrator::prelude::*;
use orchestrator::runtime::{DomainedEvent, Node, WorkflowStatus};
use orchestrator::transport::{InProcessConfig, InProcessTransport, Transport};
use orchestrator_examples::calculator::{AddV1, Operands, Sum, services};

// ---------------------------------------------------------------------------------------------
// Contracts

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Message {
    /// `user`, `assistant`, `tool` or `human`.
    pub role: String,
    /// The text.
    pub content: String,
}

impl Message {
    fn new(role: &str, content: impl Into<String>) -> Self {
        Self { role: role.to_owned(), content: content.into() }
    }
}

/// What the model is asked: the conversation so far.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Prompt {
    /// The messages, oldest first.
    pub messages: Vec<Message>,
}

/// The model asks for a tool to be run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCall {
    /// The tool's name (only `add` exists).
    pub tool: String,
    /// Its arguments.
    pub args: Operands,
}

/// The model's final answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FinalAnswer {
    /// The answer text.
    pub answer: String,
}

orchestrator::contract! {
    /// The language model: answers a prompt with a tool call or a final answer.
    pub contract Llm {
        uri: "#/agent/llm",
        type: "com.agent.llm",
        versions: {
            LlmV1 = "1.0.0" {
                accepts: Prompt,
                emits: {
                    "evt.agent.llm.toolcall" => ToolCall,
                    "evt.agent.llm.answer" => FinalAnswer,
                },
            },
        },
    }
}

/// What the human is asked to approve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalRequest {
    /// The question shown to the human.
    pub question: String,
    /// The tool call to approve.
    pub call: ToolCall,
}

/// The human's decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Decision {
    /// Whether the tool call may run.
    pub approved: bool,
    /// Who decided.
    pub reviewer: String,
}

orchestrator::contract! {
    /// A human approves (or rejects) a tool call; served outside the node (domain
    /// `human.interaction`).
    pub contract Approval {
        uri: "#/agent/approval",
        type: "com.agent.approval",
        domain: "human.interaction",
        versions: {
            ApprovalV1 = "1.0.0" {
                accepts: ApprovalRequest,
                emits: { "evt.agent.approval.decision" => Decision },
            },
        },
    }
}

/// Starts the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Question {
    /// The user's question.
    pub question: String,
}

/// The agent's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AgentAnswer {
    /// The model's final answer (empty when the loop failed).
    pub answer: String,
    /// The whole conversation.
    pub transcript: Vec<Message>,
}

orchestrator::orchestrator_contract! {
    /// The agent loop workflow.
    pub contract AgentContract {
        uri: "#/orc/agent/loop",
        name: "agent.loop",
        versions: { AgentV1 = "1.0.0" { init: Question, complete: AgentAnswer } },
    }
}

// ---------------------------------------------------------------------------------------------
// The agent loop

/// The agent's context: the conversation and the tool call waiting for approval.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Conversation {
    /// The messages so far.
    pub messages: Vec<Message>,
    /// The tool call being approved or run.
    pub pending: Option<ToolCall>,
    /// The final answer.
    pub answer: String,
}

fn ask_llm(ctx: &mut Conversation, _: &AgentLoopEvent, out: &mut AgentLoopOutbox<'_>) {
    out.llm(Prompt { messages: ctx.messages.clone() });
}

fn record_call(ctx: &mut Conversation, event: &AgentLoopEvent, _: &mut AgentLoopOutbox<'_>) {
    if let AgentLoopEvent::LlmToolCall(call) = event {
        let (a, b) = (call.args.a, call.args.b);
        ctx.messages.push(Message::new("assistant", format!("call {}(a: {a}, b: {b})", call.tool)));
        ctx.pending = Some(call.clone());
    }
}

fn ask_approval(ctx: &mut Conversation, _: &AgentLoopEvent, out: &mut AgentLoopOutbox<'_>) {
    if let Some(call) = &ctx.pending {
        let question = format!("May the agent run {}({}, {})?", call.tool, call.args.a, call.args.b);
        out.approval(ApprovalRequest { question, call: call.clone() });
    }
}

fn is_approved(_: &Conversation, event: &AgentLoopEvent) -> bool {
    matches!(event, AgentLoopEvent::ApprovalDecision(d) if d.approved)
}

fn record_decision(ctx: &mut Conversation, event: &AgentLoopEvent, _: &mut AgentLoopOutbox<'_>) {
    if let AgentLoopEvent::ApprovalDecision(d) = event {
        let verdict = if d.approved { "approved" } else { "rejected" };
        ctx.messages.push(Message::new("human", format!("{verdict} by {}", d.reviewer)));
        if !d.approved {
            ctx.pending = None;
            ctx.messages.push(Message::new("tool", "error: the call was rejected"));
        }
    }
}

fn run_tool(ctx: &mut Conversation, _: &AgentLoopEvent, out: &mut AgentLoopOutbox<'_>) {
    match ctx.pending.take() {
        Some(call) if call.tool == "add" => out.add(call.args),
        Some(call) => ctx.messages.push(Message::new("tool", format!("error: unknown tool {}", call.tool))),
        None => {}
    }
}

fn record_result(ctx: &mut Conversation, event: &AgentLoopEvent, _: &mut AgentLoopOutbox<'_>) {
    if let AgentLoopEvent::AddSum(s) = event {
        ctx.messages.push(Message::new("tool", format!("{}", s.sum)));
    }
}

fn record_answer(ctx: &mut Conversation, event: &AgentLoopEvent, _: &mut AgentLoopOutbox<'_>) {
    if let AgentLoopEvent::LlmFinalAnswer(a) = event {
        ctx.messages.push(Message::new("assistant", a.answer.clone()));
        ctx.answer = a.answer.clone();
    }
}

orchestrator::machine! {
    /// Think (ask the model) → approve (ask a human) → act (run the tool) → think … until the
    /// model answers.
    pub machine AgentLoop {
        contract: AgentV1,
        services: {
            // A rate-limited model: its `RateLimited` errors are retried, 50 ms then 100 ms later.
            llm: LlmV1 { retry: { attempts: 3, backoff: 50 .. 500, on: ["RateLimited"] } },
            approval: ApprovalV1,
            add: AddV1,
        },
        context: Conversation,
        init: |input| Conversation {
            messages: vec![Message::new("user", input.question.clone())],
            ..Conversation::default()
        },
        output: |ctx| AgentAnswer { answer: ctx.answer.clone(), transcript: ctx.messages.clone() },
        states: {
            thinking: {
                entry: [ask_llm],
                on: {
                    llm::ToolCall => { target: approving, actions: [record_call] },
                    llm::FinalAnswer => { target: done, actions: [record_answer] },
                    llm::error => failed,
                },
            },
            approving: {
                entry: [ask_approval],
                on: {
                    approval::Decision => [
                        { target: acting, guard: is_approved, actions: [record_decision] },
                        { target: thinking, actions: [record_decision] },
                    ],
                    approval::error => failed,
                },
            },
            acting: {
                entry: [run_tool],
                on: {
                    add::Sum => { target: thinking, actions: [record_result] },
                    add::error => failed,
                },
            },
            done: { type: final },
            failed: { type: final },
        },
    }
}

// ---------------------------------------------------------------------------------------------
// The scripted model and the human

/// The numbers in a text, in order.
fn numbers(text: &str) -> Vec<f64> {
    text.split(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .filter_map(|word| word.trim_matches('.').parse().ok())
        .collect()
}

/// A deterministic "model": with no tool result yet it calls `add` on the two numbers of the
/// user's question; once the last message is a tool result it answers with it.
fn scripted_model(prompt: &Prompt) -> Result<Emit<LlmV1>, String> {
    let last = prompt.messages.last().ok_or("empty prompt")?;
    if last.role == "tool" {
        return Ok(Emit::new(FinalAnswer { answer: format!("The answer is {}.", last.content) }));
    }
    let question = prompt.messages.iter().find(|m| m.role == "user").ok_or("no user message")?;
    match numbers(&question.content)[..] {
        [a, b, ..] => Ok(Emit::new(ToolCall { tool: "add".to_owned(), args: Operands { a, b } })),
        _ => Ok(Emit::new(FinalAnswer { answer: "I need two numbers to add.".to_owned() })),
    }
}

/// The user asking the agent: the workflow's completion is addressed here.
const USER: &str = "com.example.user";

/// A domained request the human answered: the request, the id of the published reply and a note.
#[derive(Debug)]
struct Answered {
    request: Event,
    reply_id: Option<String>,
    note: String,
}

/// The human behind the `human.interaction` domain: approves every tool call and publishes the
/// decision back to the workflow, as the approval service would.
async fn human(domained: DomainedEvent, transport: Arc<InProcessTransport>, seen: Arc<Mutex<Vec<Answered>>>) {
    let request = domained.event;
    let question = request.data()["question"].as_str().unwrap_or("?").to_owned();
    let reply = EventFactory::<ApprovalV1>::new().emits(
        Decision { approved: true, reviewer: "alice".to_owned() },
        Event::builder()
            .source(request.r#type())
            .subject(request.subject())
            .parentid(request.id())
            .to(request.redirectto().unwrap_or(request.source())),
    );
    let published = match reply {
        Ok(reply) => {
            let id = reply.id().to_owned();
            transport.publish(vec![reply]).await.map(|()| id).map_err(|e| e.to_string())
        }
        Err(e) => Err(e.to_string()),
    };
    let (reply_id, note) = match published {
        Ok(id) => (Some(id), format!("[{}] {question} -> approved by alice", domained.domain)),
        Err(e) => (None, format!("[{}] {question} -> could not answer: {e}", domained.domain)),
    };
    seen.lock().unwrap_or_else(PoisonError::into_inner).push(Answered { request, reply_id, note });
}

/// One timeline line; the payload is cut to keep lines short.
fn line(i: &str, event: &Event) -> Result<String, serde_json::Error> {
    let data = serde_json::to_string(event.data())?;
    let data = if data.chars().count() > 60 {
        format!("{}…", data.chars().take(60).collect::<String>())
    } else {
        data
    };
    Ok(format!(
        "  {i:>3} {:<28} {:<19} -> {:<19} {data}",
        event.r#type(),
        event.source(),
        event.to().unwrap_or("-"),
    ))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Calls of the model per prompt (by its number of messages): the first of each is refused.
    let attempts: Arc<Mutex<BTreeMap<usize, u32>>> = Arc::default();
    let llm = ServiceHandler::<Llm>::builder()
        .version({
            let attempts = Arc::clone(&attempts);
            move |input: ServiceInput<LlmV1>| {
                let attempts = Arc::clone(&attempts);
                async move {
                    let calls = {
                        let mut attempts = attempts.lock().unwrap_or_else(PoisonError::into_inner);
                        let calls = attempts.entry(input.payload.messages.len()).or_insert(0);
                        *calls += 1;
                        *calls
                    };
                    if calls == 1 {
                        return Err(NamedError::new("RateLimited", "too many requests, try again").into());
                    }
                    scripted_model(&input.payload).map_err(|e| std::io::Error::other(e).into())
                }
            }
        })
        .build()?;
    let store = Arc::new(InMemory::<WorkflowRecord>::new(InMemoryConfig {
        retention: Retention::Keep,
        ..InMemoryConfig::default()
    }));
    // Each request takes its service contract's domain: none for llm and add (published on this
    // node), `human.interaction` for approval (handed to `on_domained`).
    let agent = Orchestrator::builder(Arc::clone(&store))
        .machine::<AgentLoop>()
        .service_domains([Domain::FromEventContract]);
    let approvals = Arc::new(Mutex::new(Vec::new()));
    // Nobody serves the approval contract on this node (its requests go to `on_domained`): it
    // is declared remote, or the build would report it missing.
    let node = Node::builder(Arc::clone(&store))
        .in_process(InProcessConfig { log: true, ..InProcessConfig::default() })?
        .orchestrator(agent)
        .service(llm)
        .service(services::add()?)
        .remote("com.agent.approval")
        .on_domained({
            let approvals = Arc::clone(&approvals);
            move |domained, transport| human(domained, transport, Arc::clone(&approvals))
        })
        .client(USER)
        .build()
        .await?;

    let init = EventFactory::<AgentV1>::new()
        .init(Question { question: "What is 17 + 25?".to_owned() }, Event::builder().source(USER))?;
    let done = node.run(init.clone()).await?;
    node.transport().wait_idle().await;
    let status = node.status(init.subject()).await?;

    let answered = std::mem::take(&mut *approvals.lock().unwrap_or_else(PoisonError::into_inner));
    println!("timeline (* = domained, handed to on_domained instead of being published):");
    for (i, event) in node.transport().take_log().iter().enumerate() {
        // A domained request is never published, so it is not in the log: show it before its reply.
        for a in answered.iter().filter(|a| a.reply_id.as_deref() == Some(event.id())) {
            println!("{}", line("*", &a.request)?);
        }
        println!("{}", line(&format!("{i}."), event)?);
    }
    println!("human approvals:");
    for a in &answered {
        println!("  {}", a.note);
    }
    let result: AgentAnswer = serde_json::from_value(done.data_value().clone())?;
    println!("conversation:");
    for message in &result.transcript {
        println!("  {:>9}: {}", message.role, message.content);
    }
    println!("final answer: {}", result.answer);
    let attempts = std::mem::take(&mut *attempts.lock().unwrap_or_else(PoisonError::into_inner));
    println!("llm attempts per prompt (the first of each was rate limited, then retried):");
    for (messages, calls) in &attempts {
        println!("  prompt of {messages} message(s): {calls} attempt(s)");
    }
    node.shutdown().await;

    if done.r#type() != "arvo.orc.agent.loop.done" || result.answer != "The answer is 42." {
        return Err(
            format!("unexpected result {}: {}", done.r#type(), serde_json::to_string(done.data())?).into()
        );
    }
    if status != Some(WorkflowStatus::Done) {
        return Err(format!("the agent's workflow is not done: {status:?}").into());
    }
    if !node.take_dead_letters().is_empty() {
        return Err("some events were dead-lettered".into());
    }
    if attempts.len() != 2 || attempts.values().any(|&calls| calls != 2) {
        return Err(format!("expected 2 prompts of 2 attempts each, got {attempts:?}").into());
    }
    let domains: Vec<_> = answered.iter().map(|a| (a.request.domain(), a.reply_id.is_some())).collect();
    if domains != [(Some("human.interaction"), true)] {
        return Err(format!("expected one answered human.interaction request, got {answered:?}").into());
    }
    Ok(())
}
