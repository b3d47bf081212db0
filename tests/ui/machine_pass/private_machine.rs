//! A private machine (no `pub`): its generated types are private too.

use orchestrator::machine::MachineInstance;
use orchestrator_examples::calculator::*;

mod inner {
    use orchestrator_examples::calculator::*;

    orchestrator::machine! {
        machine Quiet {
            contract: AverageV1,
            output: |_| AverageOutput { average: 0.0 },
            states: { only: { on: { "stop" => stopped } }, stopped: { type: final } },
        }
    }

    pub(crate) fn run() -> bool {
        let (mut m, _) = super::MachineInstance::<Quiet>::start(AverageInput { values: vec![1.0] }).unwrap();
        m.send_named("stop").unwrap();
        m.state() == QuietState::Stopped
    }
}

orchestrator::machine! {
    pub(crate) machine Visible {
        contract: AverageV1,
        output: |_| AverageOutput { average: 1.0 },
        states: { only: { type: final } },
    }
}

fn main() {
    assert!(inner::run());
    let (m, _) = MachineInstance::<Visible>::start(AverageInput { values: vec![1.0] }).unwrap();
    assert!(m.is_done());
    assert_eq!(m.output(), Some(AverageOutput { average: 1.0 }));
}
