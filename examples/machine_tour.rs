//! A tour of `machine!`: a video call with nested and parallel states, deep history, guards,
//! actions on a typed context, `after` timers and a final state with an output.
//!
//! Prints the trace (event → active states) and the chart as a Mermaid diagram.
//!
//! ```text
//! cargo run --example machine_tour
//! ```

use orchestrator::machine::chart::export::to_mermaid;
use orchestrator::machine::{MachineError, MachineInstance, Snapshot};
use orchestrator::prelude::*;

/// Starts a call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CallStart {
    /// How many times the call may be put on hold.
    pub max_holds: u32,
}

/// How the call went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CallSummary {
    /// Times the call was put on hold.
    pub holds: u32,
    /// Times the microphone was unmuted.
    pub unmutes: u32,
}

orchestrator::orchestrator_contract! {
    /// A video call.
    pub contract Call {
        uri: "#/orc/call",
        name: "call",
        versions: { CallV1 = "1.0.0" { init: CallStart, complete: CallSummary } },
    }
}

/// The call's context.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CallContext {
    /// Holds left.
    pub holds_left: u32,
    /// Holds taken.
    pub holds: u32,
    /// Unmutes.
    pub unmutes: u32,
}

fn can_hold(ctx: &CallContext, _: &VideoCallEvent) -> bool {
    ctx.holds_left > 0
}

fn take_hold(ctx: &mut CallContext, _: &VideoCallEvent, _: &mut VideoCallOutbox<'_>) {
    ctx.holds_left -= 1;
    ctx.holds += 1;
}

fn count_unmute(ctx: &mut CallContext, _: &VideoCallEvent, _: &mut VideoCallOutbox<'_>) {
    ctx.unmutes += 1;
}

orchestrator::machine! {
    /// A video call: audio and video are independent regions; a hold remembers both.
    pub machine VideoCall {
        version: "1.0.0",
        contract: CallV1,
        context: CallContext,
        init: |start| CallContext { holds_left: start.max_holds, ..CallContext::default() },
        output: |ctx| CallSummary { holds: ctx.holds, unmutes: ctx.unmutes },
        states: {
            lobby: { on: { "join" => call } },
            call: {
                initial: media,
                states: {
                    media: {
                        type: parallel,
                        states: {
                            audio: {
                                states: {
                                    muted: { on: { "unmute" => { target: call.media.audio.live, actions: [count_unmute] } } },
                                    live: { on: { "mute" => call.media.audio.muted } },
                                },
                            },
                            video: {
                                states: {
                                    off: { on: { "camera" => call.media.video.on } },
                                    on: { on: { "camera" => call.media.video.off } },
                                },
                            },
                        },
                    },
                    resume: { type: history, history: deep },
                },
                on: {
                    "hold" => [{ target: held, guard: can_hold, actions: [take_hold] }],
                    "hangup" => ended,
                },
                after: { 60000 => ended },
            },
            held: {
                on: { "resume" => call.resume, "hangup" => ended },
                after: { 30000 => ended },
            },
            ended: { type: final },
        },
    }
}

fn main() -> Result<(), MachineError> {
    let (mut call, _) = MachineInstance::<VideoCall>::start(CallStart { max_holds: 1 })?;
    println!("{:<18} {}", "(start)", call.active_paths().join(", "));

    let steps: &[&str] = &["join", "unmute", "camera", "hold", "resume", "hold", "mute", "+30000", "+30000"];
    for step in steps {
        match step.strip_prefix('+') {
            Some(ms) => {
                call.advance(ms.parse().unwrap_or(0))?;
            }
            None => {
                call.send_named(step)?;
            }
        }
        println!("{step:<18} {}", call.active_paths().join(", "));
        if *step == "resume" {
            // What a store would keep between two events: chart state and context only.
            let bytes = call.snapshot().to_bytes()?;
            call = MachineInstance::restore(Snapshot::from_bytes(&bytes)?)?;
            println!("{:<18} {:?}", "(typed state)", call.state());
        }
    }
    println!("done: {}, output: {:?}", call.is_done(), call.output());

    println!("\n{}", to_mermaid(VideoCall::chart(), &VideoCall::names()));
    Ok(())
}
