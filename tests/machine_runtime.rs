//! Machines declared with `machine!`, run with `MachineInstance`: the averaging workflow over
//! typed and wire events, nested / parallel / history states, guards, `after` timers, internal
//! events, done events, snapshots and the validation of incoming and outgoing payloads.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use orchestrator::machine::{Machine, MachineError, MachineInstance, Snapshot};
use orchestrator::prelude::*;
use orchestrator_examples::calculator::*;

// ---------------------------------------------------------------------------------------------
// The averaging workflow.

/// The context of [`Average`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AverageContext {
    /// The numbers.
    pub values: Vec<f64>,
    /// Their sum, once known.
    pub sum: Option<f64>,
    /// Their mean, once known.
    pub average: Option<f64>,
    /// How often `add` was requested.
    pub attempts: u32,
}

fn init_context(input: &AverageInput) -> AverageContext {
    AverageContext { values: input.values.clone(), sum: None, average: None, attempts: 0 }
}

fn make_output(ctx: &AverageContext) -> AverageOutput {
    AverageOutput { average: ctx.average.unwrap_or(f64::NAN) }
}

fn request_add(ctx: &mut AverageContext, _: &AverageEvent, out: &mut AverageOutbox<'_>) {
    ctx.attempts += 1;
    let a = ctx.values.first().copied().unwrap_or(0.0);
    let b = ctx.values.iter().skip(1).sum();
    out.add(Operands { a, b });
}

fn sum_ok(_: &AverageContext, event: &AverageEvent) -> bool {
    matches!(event, AverageEvent::AddSum(s) if s.sum.is_finite())
}

fn store_sum(ctx: &mut AverageContext, event: &AverageEvent, out: &mut AverageOutbox<'_>) {
    if let AverageEvent::AddSum(s) = event {
        ctx.sum = Some(s.sum);
        out.divide(DivideRequest { numerator: s.sum, denominator: ctx.values.len() as f64 });
    }
}

fn store_avg(ctx: &mut AverageContext, event: &AverageEvent, _: &mut AverageOutbox<'_>) {
    if let AverageEvent::DivideQuotient(q) = event {
        ctx.average = Some(q.quotient);
    }
}

orchestrator::machine! {
    /// Averages numbers with the add and divide services.
    pub machine Average {
        version: "1.0.0",
        contract: AverageV1,
        services: { add: AddV1, divide: DivideV1 },
        context: AverageContext,
        init: init_context,
        output: make_output,
        initial: adding,
        states: {
            adding: {
                entry: [request_add],
                on: {
                    add::Sum => { target: dividing, guard: sum_ok, actions: [store_sum] },
                    add::Sum => failed,
                    add::error => failed,
                    "retry" => { target: adding, reenter: true },
                },
            },
            dividing: {
                on: { divide::Quotient => { target: done, actions: [store_avg] } },
                after: { 5000 => failed },
            },
            done: { type: final },
            failed: { type: final },
        },
    }
}

fn start_average(values: &[f64]) -> (MachineInstance<Average>, Vec<orchestrator::machine::ServiceRequest>) {
    MachineInstance::<Average>::start(AverageInput { values: values.to_vec() }).unwrap()
}

#[test]
fn average_typed_run() {
    let (mut m, requests) = start_average(&[1.0, 2.0, 3.0]);
    assert_eq!(m.state(), AverageState::Adding);
    assert_eq!(requests.len(), 1);
    let add = &requests[0];
    assert_eq!((add.service, add.event_type, add.dataschema), ("add", "com.calc.add", "#/calc/add/1.0.0"));
    assert_eq!(add.data, serde_json::json!({"a": 1.0, "b": 5.0}));

    let requests = m.send(AverageEvent::AddSum(Sum { sum: 6.0 })).unwrap();
    assert_eq!(m.state(), AverageState::Dividing);
    assert_eq!(m.context().sum, Some(6.0));
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].event_type, "com.calc.divide");
    assert_eq!(requests[0].data, serde_json::json!({"numerator": 6.0, "denominator": 3.0}));
    assert_eq!(m.output(), None);

    let requests = m.send(AverageEvent::DivideQuotient(Quotient { quotient: 2.0 })).unwrap();
    assert!(requests.is_empty());
    assert_eq!(m.state(), AverageState::Done);
    assert!(m.is_done());
    assert_eq!(m.output(), Some(AverageOutput { average: 2.0 }));
    // Done: later events change nothing.
    m.send(AverageEvent::AddSum(Sum { sum: 1.0 })).unwrap();
    assert_eq!(m.state(), AverageState::Done);
}

#[test]
fn guard_falls_through_to_the_next_candidate() {
    let (mut m, _) = start_average(&[1.0, 2.0]);
    m.send(AverageEvent::AddSum(Sum { sum: f64::INFINITY })).unwrap();
    assert_eq!(m.state(), AverageState::Failed);
    assert!(m.is_done());
}

#[test]
fn system_error_and_internal_events() {
    let (mut m, _) = start_average(&[1.0, 2.0]);
    // An internal event by name: re-enters `adding`, which requests `add` again.
    let requests = m.send_named("retry").unwrap();
    assert_eq!(requests.len(), 1);
    assert_eq!(m.context().attempts, 2);
    // Unknown names are ignored.
    assert!(m.send_named("nothing.listens").unwrap().is_empty());
    m.send(AverageEvent::AddError(SystemErrorPayload::new("Error", "boom"))).unwrap();
    assert_eq!(m.state(), AverageState::Failed);
}

#[test]
fn after_timer_fires_with_the_clock() {
    let (mut m, _) = start_average(&[1.0, 2.0]);
    m.advance(10_000).unwrap();
    assert_eq!(m.state(), AverageState::Adding, "no timer in `adding`");
    m.send(AverageEvent::AddSum(Sum { sum: 3.0 })).unwrap();
    assert_eq!(m.next_due(), Some(15_000));
    m.advance(4_999).unwrap();
    assert_eq!(m.state(), AverageState::Dividing);
    m.advance(1).unwrap();
    assert_eq!(m.state(), AverageState::Failed);
}

#[test]
fn invalid_request_fails_the_step_and_changes_nothing() {
    // Zero values: `divide` would get denominator 0, which its schema forbids.
    let (mut m, _) = start_average(&[]);
    let before = m.snapshot();
    let err = m.send(AverageEvent::AddSum(Sum { sum: 0.0 })).unwrap_err();
    match err {
        MachineError::Violation(Violation::Contract { message, .. }) => {
            assert!(message.contains("divide"), "{message}");
        }
        other => panic!("expected a contract violation, got {other:?}"),
    }
    assert_eq!(m.snapshot(), before, "the failed step was rolled back");
    assert_eq!(m.state(), AverageState::Adding);
}

// ---------------------------------------------------------------------------------------------
// Wire events.

fn client() -> EventBuilder {
    Event::builder().source("com.test.client")
}

#[test]
fn average_over_wire_events() {
    let init =
        EventFactory::<AverageV1>::new().init(AverageInput { values: vec![2.0, 4.0] }, client()).unwrap();
    let (mut m, requests) = MachineInstance::<Average>::start_wire(&init).unwrap();
    assert_eq!(m.subject(), Some(init.subject()));
    let request =
        requests[0].to_event(Event::builder().source("arvo.orc.calc.average").subject(init.subject()));
    let request = request.unwrap();
    assert_eq!(request.r#type(), "com.calc.add");
    assert_eq!(AddV1::parse_accepts(&request).unwrap(), Operands { a: 2.0, b: 4.0 });

    let sum = EventFactory::<AddV1>::new()
        .emits(Sum { sum: 6.0 }, Event::builder().source("com.calc.add").subject(init.subject()))
        .unwrap();
    assert!(matches!(Average::decode(&sum), Ok(AverageEvent::AddSum(Sum { sum: 6.0 }))));
    m.send_wire(&sum).unwrap();
    assert_eq!(m.state(), AverageState::Dividing);

    let quotient = EventFactory::<DivideV1>::new()
        .emits(Quotient { quotient: 3.0 }, Event::builder().source("com.calc.divide").subject(init.subject()))
        .unwrap();
    m.send_wire(&quotient).unwrap();
    assert_eq!(m.output(), Some(AverageOutput { average: 3.0 }));
}

fn raw(event_type: &str, dataschema: Option<&str>, data: serde_json::Value) -> Event {
    let mut b = client().r#type(event_type).subject("s").data_json(data);
    if let Some(ds) = dataschema {
        b = b.dataschema(ds);
    }
    b.build().unwrap()
}

#[test]
fn decode_validates_against_the_service_contract() {
    // Wrong payload for `evt.calc.add.success`.
    let bad = raw("evt.calc.add.success", Some("#/calc/add/1.0.0"), serde_json::json!({"sum": "six"}));
    assert!(matches!(Average::decode(&bad), Err(Violation::Contract { .. })));
    let (mut m, _) = start_average(&[1.0]);
    let err = m.send_wire(&bad).unwrap_err();
    assert!(matches!(err, MachineError::Violation(Violation::Contract { .. })), "{err:?}");
    assert_eq!(m.state(), AverageState::Adding);

    // A dataschema naming the wrong version.
    let wrong_version =
        raw("evt.calc.divide.success", Some("#/calc/divide/2.0.0"), serde_json::json!({"quotient": 1}));
    assert!(Average::decode(&wrong_version).is_err());

    // The system error of a service, with its wildcard dataschema.
    let error = raw(
        "sys.com.calc.add.error",
        Some("#/calc/add/0.0.0"),
        serde_json::json!({"errorName": "E", "errorMessage": "m", "errorStack": null}),
    );
    match Average::decode(&error).unwrap() {
        AverageEvent::AddError(e) => assert_eq!(e.error_message, "m"),
        other => panic!("{other:?}"),
    }

    // A service's type under another contract's dataschema: a contract violation, as a
    // resumable answers it (the type is declared, the contract named is not the service's).
    let foreign = raw("evt.calc.add.success", Some("#/other/thing/1.0.0"), serde_json::json!({"sum": 6}));
    match Average::decode(&foreign) {
        Err(Violation::Contract { message, .. }) => assert!(message.contains("URI mismatch"), "{message}"),
        other => panic!("expected a contract violation, got {other:?}"),
    }
    let malformed = raw("evt.calc.add.success", Some("#/calc/add"), serde_json::json!({"sum": 6}));
    assert!(matches!(Average::decode(&malformed), Err(Violation::Contract { .. })));

    // A type no contract of the machine declares.
    let unknown = raw("com.other.thing", None, serde_json::json!({}));
    assert!(matches!(Average::decode(&unknown), Err(Violation::Config { .. })));

    // The init event, validated against the self contract.
    let init = raw("arvo.orc.calc.average", None, serde_json::json!({"parentSubject$$": null, "values": []}));
    assert!(matches!(Average::decode(&init), Err(Violation::Contract { .. })), "values must not be empty");
}

#[test]
fn contracts_json_lists_self_and_services() {
    let doc = Average::contracts_json();
    assert_eq!(doc["self"]["uri"], "#/orc/calc/average");
    assert_eq!(doc["services"]["add"]["accepts"]["type"], "com.calc.add");
    assert_eq!(doc["services"]["divide"]["version"], "1.0.0");
    let names: Vec<&str> = Average::services().iter().map(|s| s.name).collect();
    assert_eq!(names, ["add", "divide"]);
}

// ---------------------------------------------------------------------------------------------
// Child orchestrations: a service that is an orchestrator contract takes its init payload.

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
/// Starts a report.
pub struct ReportInput {
    /// Numbers to average.
    pub values: Vec<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
/// A finished report.
pub struct ReportOutput {
    /// The average computed by the child workflow.
    pub average: f64,
}

orchestrator::orchestrator_contract! {
    /// Reports the average of numbers by running the averaging workflow as a child.
    pub contract ReportContract {
        uri: "#/orc/report",
        name: "report",
        versions: { ReportV1 = "1.0.0" { init: ReportInput, complete: ReportOutput } },
    }
}

orchestrator::machine! {
    /// Runs [`Average`] as a child workflow.
    pub machine Report {
        contract: ReportV1,
        services: { average: AverageV1 },
        context: ReportInput,
        init: |input| input.clone(),
        output: |_| ReportOutput { average: 0.0 },
        states: {
            running: {
                entry: [|ctx, _, out| out.average(AverageInput { values: ctx.values.clone() })],
                on: { average::AverageOutput => finished, average::error => finished },
            },
            finished: { type: final },
        },
    }
}

#[test]
fn child_orchestration_gets_the_parent_subject() {
    let init = EventFactory::<ReportV1>::new().init(ReportInput { values: vec![1.0] }, client()).unwrap();
    let (mut m, requests) = MachineInstance::<Report>::start_wire(&init).unwrap();
    assert_eq!(requests.len(), 1);
    let child = &requests[0];
    assert_eq!(child.event_type, "arvo.orc.calc.average");
    assert_eq!(child.parent_subject(), Some(init.subject()));
    let event = child.to_event(Event::builder().source("arvo.orc.report")).unwrap();
    let parsed = AverageV1::parse_accepts(&event).unwrap();
    assert_eq!(parsed.parent_subject.as_deref(), Some(init.subject()));
    assert_eq!(parsed.data.values, vec![1.0]);

    let done = EventFactory::<AverageV1>::new()
        .complete(
            AverageOutput { average: 1.0 },
            Event::builder().source("arvo.orc.calc.average").subject(init.subject()),
        )
        .unwrap();
    m.send_wire(&done).unwrap();
    assert_eq!(m.state(), ReportState::Finished);
}

// ---------------------------------------------------------------------------------------------
// Nested, parallel and history states; done events; eventless transitions; built-in actions.

#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
/// No input.
pub struct Empty {}

orchestrator::orchestrator_contract! {
    /// A test workflow.
    pub contract PlayerContract {
        uri: "#/orc/player",
        name: "player",
        versions: { PlayerV1 = "1.0.0" { init: Empty, complete: Empty } },
    }
}

/// The context of [`Player`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PlayerContext {
    /// Tracks played.
    pub played: u32,
    /// Events seen by the `log` action, by name.
    pub log: Vec<String>,
}

fn log(ctx: &mut PlayerContext, event: &PlayerEvent, _: &mut PlayerOutbox<'_>) {
    log_name(ctx, event);
}

fn log_name<E: orchestrator::machine::MachineEvent>(ctx: &mut PlayerContext, event: &E) {
    ctx.log.push(event.name().to_owned());
}

orchestrator::machine! {
    /// A media player: nested modes, a parallel deck, shallow and deep history.
    pub machine Player {
        contract: PlayerV1,
        context: PlayerContext,
        output: |_| Empty {},
        states: {
            on: {
                initial: deck,
                states: {
                    deck: {
                        type: parallel,
                        states: {
                            playback: {
                                states: {
                                    stopped: { on: { "play" => on.deck.playback.playing } },
                                    playing: {
                                        on: { "pause" => on.deck.playback.paused, "next" => { actions: [|c, _, _| c.played += 1] } },
                                        always: [{ target: on.deck.playback.finished, guard: |c, _| c.played >= 3 }],
                                    },
                                    paused: { on: { "play" => on.deck.playback.playing } },
                                    finished: { type: final },
                                },
                            },
                            volume: {
                                states: {
                                    normal: { on: { "loud" => on.deck.volume.loud } },
                                    loud: { on: { "quiet" => on.deck.volume.normal } },
                                },
                            },
                        },
                        on_done: { target: on.idle, actions: [log] },
                    },
                    idle: { entry: [raise("idle.entered")], on: { "idle.entered" => { actions: [log] } } },
                    deep: { type: history, history: deep },
                    shallow: { type: history, target: on.idle },
                },
                on: {
                    "menu" => menu,
                    "check" => { actions: [log], guard: in(on.deck.volume.loud) },
                },
            },
            menu: {
                on: {
                    "back" => on.deep,
                    "back.shallow" => on.shallow,
                    "quit" => off,
                },
            },
            off: { type: final },
        },
    }
}

fn playing(volume: PlayerOnDeckVolume) -> PlayerState {
    PlayerState::On(PlayerOn::Deck(PlayerOnDeck { playback: PlayerOnDeckPlayback::Playing, volume }))
}

#[test]
fn nested_parallel_and_deep_history() {
    let (mut m, _) = MachineInstance::<Player>::start(Empty {}).unwrap();
    assert_eq!(
        m.state(),
        PlayerState::On(PlayerOn::Deck(PlayerOnDeck {
            playback: PlayerOnDeckPlayback::Stopped,
            volume: PlayerOnDeckVolume::Normal
        }))
    );
    m.send_named("play").unwrap();
    m.send_named("loud").unwrap();
    assert_eq!(m.state(), playing(PlayerOnDeckVolume::Loud));
    m.send_named("check").unwrap();
    assert_eq!(m.context().log, ["check"], "the `in` guard held");

    m.send_named("menu").unwrap();
    assert_eq!(m.state(), PlayerState::Menu);
    m.send_named("back").unwrap();
    assert_eq!(m.state(), playing(PlayerOnDeckVolume::Loud), "deep history restores both regions");
    assert_eq!(m.active_paths(), ["on.deck.playback.playing", "on.deck.volume.loud"]);
}

#[test]
fn shallow_history_restores_the_child_with_its_defaults() {
    let (mut m, _) = MachineInstance::<Player>::start(Empty {}).unwrap();
    m.send_named("play").unwrap();
    m.send_named("loud").unwrap();
    m.send_named("menu").unwrap();
    m.send_named("back.shallow").unwrap();
    // Shallow: `deck` is restored, its regions start over.
    assert_eq!(
        m.state(),
        PlayerState::On(PlayerOn::Deck(PlayerOnDeck {
            playback: PlayerOnDeckPlayback::Stopped,
            volume: PlayerOnDeckVolume::Normal
        }))
    );
}

orchestrator::machine! {
    /// Resumes work where it was left, or at `b` the first time.
    pub machine Resume {
        contract: PlayerV1,
        output: |_| Empty {},
        states: {
            start: { on: { "resume" => work.hist } },
            work: {
                states: {
                    a: { on: { "next" => work.b } },
                    b: { on: { "prev" => work.a } },
                    hist: { type: history, target: work.b },
                },
                on: { "leave" => start },
            },
        },
    }
}

#[test]
fn history_default_then_stored_history() {
    let (mut m, _) = MachineInstance::<Resume>::start(Empty {}).unwrap();
    m.send_named("resume").unwrap();
    assert_eq!(m.state(), ResumeState::Work(ResumeWork::B), "nothing stored: the default target");
    m.send_named("prev").unwrap();
    m.send_named("leave").unwrap();
    assert_eq!(m.state(), ResumeState::Start);
    m.send_named("resume").unwrap();
    assert_eq!(m.state(), ResumeState::Work(ResumeWork::A), "the stored history");
}

#[test]
fn eventless_transition_and_done_event_of_a_parallel_state() {
    let (mut m, _) = MachineInstance::<Player>::start(Empty {}).unwrap();
    m.send_named("play").unwrap();
    m.send_named("next").unwrap();
    m.send_named("next").unwrap();
    assert_eq!(m.state(), playing(PlayerOnDeckVolume::Normal));
    m.send_named("next").unwrap();
    // played = 3: `always` moves playback to `finished`; the volume region has no final state,
    // so the deck is not done.
    assert_eq!(
        m.state(),
        PlayerState::On(PlayerOn::Deck(PlayerOnDeck {
            playback: PlayerOnDeckPlayback::Finished,
            volume: PlayerOnDeckVolume::Normal
        }))
    );
    assert!(m.context().log.is_empty());
}

// A parallel state whose regions all finish raises its done event.
orchestrator::machine! {
    /// Two jobs in parallel; done when both are.
    pub machine Jobs {
        contract: PlayerV1,
        context: PlayerContext,
        output: |_| Empty {},
        states: {
            running: {
                type: parallel,
                states: {
                    a: { states: { work: { on: { "a.done" => running.a.end } }, end: { type: final } } },
                    b: { states: { work: { on: { "b.done" => running.b.end } }, end: { type: final } } },
                },
                on_done: { target: cleanup, actions: [|c, e, _| log_name(c, e)] },
            },
            cleanup: {
                entry: [raise("cleaned")],
                on: { "cleaned" => { target: finished, actions: [|c, e, _| log_name(c, e)] } },
            },
            finished: { type: final },
        },
    }
}

#[test]
fn done_events_and_raised_events() {
    let (mut m, _) = MachineInstance::<Jobs>::start(Empty {}).unwrap();
    m.send_named("a.done").unwrap();
    assert_eq!(m.state(), JobsState::Running(JobsRunning { a: JobsRunningA::End, b: JobsRunningB::Work }));
    m.send_named("b.done").unwrap();
    assert_eq!(m.state(), JobsState::Finished);
    assert_eq!(m.context().log, ["done.state.running", "cleaned"]);
    assert!(m.is_done());
}

// ---------------------------------------------------------------------------------------------
// Timers, snapshots.

orchestrator::machine! {
    /// A traffic light with timers and a delayed, cancellable send.
    pub machine Light {
        contract: PlayerV1,
        context: PlayerContext,
        output: |_| Empty {},
        states: {
            green: { after: { 3000 => yellow }, on: { "walk" => { actions: [send("walk.now", delay = 500, id = "w")] }, "walk.now" => yellow } },
            yellow: { entry: [cancel("w")], after: { 1000 => red } },
            red: { after: { 2000 => green }, on: { "off" => dark } },
            dark: { type: final },
        },
    }
}

fn light_trace(m: &mut MachineInstance<Light>, steps: &[(&str, u64)]) -> Vec<(LightState, u64)> {
    steps
        .iter()
        .map(|(event, ms)| {
            if event.is_empty() {
                m.advance(*ms).unwrap();
            } else {
                m.send_named(event).unwrap();
            }
            (m.state(), m.now_ms())
        })
        .collect()
}

#[test]
fn timers_and_delayed_sends() {
    let (mut m, _) = MachineInstance::<Light>::start(Empty {}).unwrap();
    let trace = light_trace(&mut m, &[("", 2999), ("", 1), ("", 1000), ("", 2000), ("walk", 0), ("", 500)]);
    assert_eq!(
        trace,
        [
            (LightState::Green, 2999),
            (LightState::Yellow, 3000),
            (LightState::Red, 4000),
            (LightState::Green, 6000),
            (LightState::Green, 6000),
            (LightState::Yellow, 6500),
        ]
    );
}

#[test]
fn snapshot_bytes_restore_continues_identically() {
    let (mut m, _) = MachineInstance::<Light>::start(Empty {}).unwrap();
    light_trace(&mut m, &[("", 1500), ("walk", 0)]);
    // Pending: the `after` timer of green (due 3000) and the delayed send (due 2000).
    assert_eq!(m.machine_state().pending_timers().len(), 2);
    let bytes = m.snapshot().to_bytes().unwrap();
    let mut restored = MachineInstance::<Light>::restore(Snapshot::from_bytes(&bytes).unwrap()).unwrap();
    assert_eq!(restored.state(), m.state());
    assert_eq!(restored.now_ms(), 1500);
    let rest = [("", 400), ("", 100), ("", 1000), ("off", 0), ("", 10_000)];
    assert_eq!(light_trace(&mut restored, &rest), light_trace(&mut m, &rest));
    assert!(restored.is_done());
    assert_eq!(restored.snapshot(), m.snapshot());
}

#[test]
fn snapshot_json_is_the_serialized_snapshot() {
    let (mut m, _) = MachineInstance::<Light>::start(Empty {}).unwrap();
    m.set_epoch_ms(Some(1_700_000_000_000));
    light_trace(&mut m, &[("", 1500), ("walk", 0)]);
    let json = |m: &MachineInstance<Light>| serde_json::to_string(&m.snapshot()).unwrap();
    assert_eq!(m.snapshot_json().unwrap().to_string(), json(&m));
    let init =
        EventFactory::<AverageV1>::new().init(AverageInput { values: vec![1.0, 2.0] }, client()).unwrap();
    let (mut m, _) = MachineInstance::<Average>::start_wire(&init).unwrap();
    m.send(AverageEvent::AddSum(Sum { sum: 3.0 })).unwrap();
    assert_eq!(m.snapshot_json().unwrap(), serde_json::to_value(m.snapshot()).unwrap());
    assert_eq!(m.snapshot_json().unwrap().to_string(), serde_json::to_string(&m.snapshot()).unwrap());
}

#[test]
fn snapshot_of_a_typed_workflow_keeps_context_and_subject() {
    let init =
        EventFactory::<AverageV1>::new().init(AverageInput { values: vec![1.0, 2.0] }, client()).unwrap();
    let (mut m, _) = MachineInstance::<Average>::start_wire(&init).unwrap();
    m.send(AverageEvent::AddSum(Sum { sum: 3.0 })).unwrap();
    let bytes = m.snapshot().to_bytes().unwrap();
    let mut restored = MachineInstance::<Average>::restore(Snapshot::from_bytes(&bytes).unwrap()).unwrap();
    assert_eq!(restored.subject(), Some(init.subject()));
    assert_eq!(restored.context(), m.context());
    assert_eq!(restored.next_due(), Some(5000));
    restored.advance(5000).unwrap();
    assert_eq!(restored.state(), AverageState::Failed);
}

#[test]
fn restore_refuses_a_state_of_another_machine() {
    let (m, _) = MachineInstance::<Light>::start(Empty {}).unwrap();
    let snapshot = m.snapshot();
    let foreign = Snapshot {
        subject: None,
        context: PlayerContext::default(),
        state: snapshot.state,
        epoch_ms: None,
        value: Vec::new(),
    };
    assert!(matches!(MachineInstance::<Player>::restore(foreign), Err(MachineError::State(_))));
    assert!(Snapshot::<PlayerContext>::from_bytes(b"not json").is_err());
}

// ---------------------------------------------------------------------------------------------
// A runaway eventless cycle is an error, and the step is rolled back.

orchestrator::machine! {
    /// Loops forever once `go` is received.
    pub machine Spin {
        contract: PlayerV1,
        output: |_| Empty {},
        states: {
            idle: { on: { "go" => a } },
            a: { always: b },
            b: { always: a },
        },
    }
}

#[test]
fn step_limit_rolls_back() {
    let (mut m, _) = MachineInstance::<Spin>::start(Empty {}).unwrap();
    m.set_step_limit(50);
    assert!(matches!(m.send_named("go"), Err(MachineError::Run(_))));
    assert_eq!(m.state(), SpinState::Idle);
}

// ---------------------------------------------------------------------------------------------
// A declared service event no transition names is validated, then known by its name only.

orchestrator::machine! {
    /// Counts every event it sees.
    pub machine Watcher {
        contract: PlayerV1,
        services: { mul: MulV1 },
        context: PlayerContext,
        output: |_| Empty {},
        states: {
            watching: { on: { "*" => { actions: [|c, e, _| log_name(c, e)] } } },
        },
    }
}

#[test]
fn unnamed_service_events_match_wildcards() {
    let product = EventFactory::<MulV1>::new()
        .emits(Product { product: 6.0 }, Event::builder().source("com.calc.mul").subject("s"))
        .unwrap();
    match Watcher::decode(&product).unwrap() {
        WatcherEvent::Internal(name) => assert_eq!(&*name, "evt.calc.mul.success"),
        other => panic!("{other:?}"),
    }
    let bad = raw("evt.calc.mul.success", None, serde_json::json!({"product": "six"}));
    assert!(matches!(Watcher::decode(&bad), Err(Violation::Contract { .. })));

    let (mut m, _) = MachineInstance::<Watcher>::start(Empty {}).unwrap();
    m.send_wire(&product).unwrap();
    m.send(WatcherEvent::MulError(SystemErrorPayload::new("E", "m"))).unwrap();
    assert_eq!(m.context().log, ["evt.calc.mul.success", "sys.com.calc.mul.error"]);
    assert_eq!(
        format!("{:?}", WatcherEvent::MulError(SystemErrorPayload::new("E", "m"))),
        r#"MulError({"errorName":"E","errorMessage":"m","errorStack":null})"#
    );
}

// ---------------------------------------------------------------------------------------------
// `init` with the start's meta.

/// What a two-argument `init` saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Origin {
    /// The input's values.
    pub values: Vec<f64>,
    /// The meta it was given.
    pub subject: Option<String>,
    /// The init event's source.
    pub source: Option<String>,
    /// The subject's initiator.
    pub initiator: Option<String>,
    /// The parent workflow's subject.
    pub parent: Option<String>,
    /// `redirectto` of the subject's meta.
    pub redirect: Option<String>,
}

orchestrator::machine! {
    /// Records where it started from.
    pub machine Traced {
        contract: AverageV1,
        context: Origin,
        init: |input, meta| Origin {
            values: input.values.clone(),
            subject: meta.subject.clone(),
            source: meta.source.clone(),
            initiator: meta.initiator.clone(),
            parent: meta.parent_subject.clone(),
            redirect: meta.meta("redirectto").map(str::to_owned),
        },
        output: |_| AverageOutput { average: 0.0 },
        states: { open: {} },
    }
}

#[test]
fn init_sees_the_init_events_subject_source_and_parent() {
    let parent = orchestrator::subject::Subject::builder("arvo.orc.parent", "1.0.0", "com.test.client")
        .build()
        .unwrap();
    let init = EventFactory::<AverageV1>::new()
        .init_child(AverageInput { values: vec![1.0] }, &parent, Event::builder().source("arvo.orc.parent"))
        .unwrap();
    let (m, _) = MachineInstance::<Traced>::start_wire(&init).unwrap();
    let c = m.context();
    assert_eq!(c.values, [1.0]);
    assert_eq!(c.subject.as_deref(), Some(init.subject()));
    assert_eq!(c.source.as_deref(), Some("arvo.orc.parent"));
    assert_eq!(c.initiator.as_deref(), Some("arvo.orc.parent"));
    assert_eq!(c.parent.as_deref(), Some(parent.as_str()));
    assert_eq!(c.redirect.as_deref(), Some("com.test.client"));

    // A root workflow has no parent; started without an event, the meta is empty.
    let root = EventFactory::<AverageV1>::new().init(AverageInput { values: vec![2.0] }, client()).unwrap();
    let (m, _) = MachineInstance::<Traced>::start_wire(&root).unwrap();
    assert_eq!(m.context().parent, None);
    assert_eq!(m.context().initiator.as_deref(), Some("com.test.client"));
    let (m, _) = MachineInstance::<Traced>::start(AverageInput { values: vec![] }).unwrap();
    assert_eq!((m.context().subject.as_ref(), m.context().source.as_ref()), (None, None));
}

// ---------------------------------------------------------------------------------------------
// Computed `after` delays: a closure, a function, a `Duration` and a `u64` of ms.

const GRACE: std::time::Duration = std::time::Duration::from_millis(300);
const SHORT_MS: u64 = 50;

#[allow(clippy::ptr_arg)] // a delay function takes `&Context`, here `&Vec<u64>`
fn twice(ctx: &Vec<u64>) -> std::time::Duration {
    std::time::Duration::from_millis(ctx.first().copied().unwrap_or(0) * 2)
}

orchestrator::machine! {
    /// Steps through its delays.
    pub machine Stepper {
        contract: AverageV1,
        context: Vec<u64>,
        init: |input| input.values.iter().map(|v| *v as u64).collect(),
        output: |_| AverageOutput { average: 0.0 },
        states: {
            a: { after: { first = |ctx| std::time::Duration::from_millis(ctx[0]) => b } },
            b: { after: { twice => c } },
            c: { after: { GRACE => d, 1000 => a } },
            d: { after: { SHORT_MS => e } },
            e: { type: final },
        },
    }
}

#[test]
fn computed_delays_are_evaluated_on_entry() {
    let (mut m, _) = MachineInstance::<Stepper>::start(AverageInput { values: vec![100.0] }).unwrap();
    m.advance(99).unwrap();
    assert_eq!(m.state(), StepperState::A);
    m.advance(1).unwrap();
    assert_eq!(m.state(), StepperState::B);
    m.advance(199).unwrap();
    assert_eq!(m.state(), StepperState::B);
    m.advance(1).unwrap();
    assert_eq!(m.state(), StepperState::C);
    m.advance(300).unwrap();
    assert_eq!(m.state(), StepperState::D);
    m.advance(50).unwrap();
    assert!(m.is_done());

    let mermaid = orchestrator::machine::chart::export::to_mermaid(Stepper::chart(), &Stepper::names());
    for label in ["after first", "after twice", "after GRACE", "after 1000ms", "after SHORT_MS"] {
        assert!(mermaid.contains(label), "{label}: {mermaid}");
    }
}
