//! Differential test: the optimized interpreter against a naive, literal transcription of the
//! SCXML 1.0 Appendix D pseudo-code (ordered sets as `Vec`s, no memoization, exit sets
//! intersected literally, ancestry by walking parents), on random charts and event sequences.
//! Both must produce the same configurations, the same action trace, the same history values
//! and the same done flag after every event.
//!
//! The reference includes the crate's documented choices (nested parallel done walk, exit
//! actions on halt, `reenter`, history domains computed once and history entries kept below the
//! transition domain), so any difference is an implementation bug in one of them. The algorithm
//! itself is checked too: every configuration must be legal, and no microstep may enter a state
//! that is still active.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{HashMap, VecDeque};

use orchestrator_chart::{
    Action, ActionId, ActionKind, ActionSpec, Chart, ChartBuilder, EventRef, Guard, GuardId, GuardSpec, Host,
    Interpreter, NodeKind, NodeRef, RunError, StateId, StateKind, Transition, TransitionSpec, Trigger,
};
use proptest::prelude::*;

const LIMIT: u32 = 200;
const EVENTS: &[&str] = &["a", "b", "c", "a.x", "d"];

// ---------------------------------------------------------------- random charts

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

#[derive(Clone)]
struct Node {
    path: String,
    parent: Option<usize>,
    kind: NodeKind,
    children: Vec<usize>,
}

fn gen_tree(rng: &mut Rng) -> Vec<Node> {
    let mut nodes = vec![Node { path: String::new(), parent: None, kind: NodeKind::State, children: vec![] }];
    let mut queue = vec![(0usize, 0usize)];
    let mut counter = 0;
    while let Some((n, depth)) = queue.pop() {
        let is_container = matches!(nodes[n].kind, NodeKind::State | NodeKind::Parallel);
        if !is_container {
            continue;
        }
        let want = if n == 0 {
            2 + rng.below(3)
        } else if nodes[n].kind == NodeKind::Parallel {
            2 + rng.below(2)
        } else if depth >= 4 {
            0
        } else {
            [0, 0, 2, 3][rng.below(4)]
        };
        let mut has_history = false;
        for i in 0..want {
            counter += 1;
            let key = format!("s{counter}");
            let path = if nodes[n].path.is_empty() { key } else { format!("{}.{key}", nodes[n].path) };
            let roll = rng.below(100);
            let kind = if i == 0 {
                if roll < 25 && depth < 3 { NodeKind::Parallel } else { NodeKind::State }
            } else if roll < 20 && depth < 3 {
                NodeKind::Parallel
            } else if roll < 35 && nodes[n].kind != NodeKind::Parallel {
                NodeKind::Final
            } else if roll < 50 && n != 0 && !has_history {
                has_history = true;
                NodeKind::History { deep: rng.chance(50) }
            } else {
                NodeKind::State
            };
            let idx = nodes.len();
            nodes.push(Node { path, parent: Some(n), kind, children: vec![] });
            nodes[n].children.push(idx);
            queue.push((idx, depth + 1));
        }
    }
    nodes
}

fn is_history(n: &Node) -> bool {
    matches!(n.kind, NodeKind::History { .. })
}

fn descendants(nodes: &[Node], n: usize, out: &mut Vec<usize>) {
    for &c in &nodes[n].children {
        out.push(c);
        descendants(nodes, c, out);
    }
}

fn gen_chart(seed: u64) -> Chart {
    let mut rng = Rng(seed);
    let nodes = gen_tree(&mut rng);
    let mut b = ChartBuilder::new("m");
    let mut refs: Vec<NodeRef> = vec![b.root()];
    // Add in index order: parents always come before children and sibling order is kept.
    for n in nodes.iter().skip(1) {
        let parent = refs[n.parent.unwrap_or(0)];
        let key = n.path.rsplit('.').next().unwrap_or(&n.path);
        refs.push(b.add_state(parent, key, n.kind).unwrap());
    }
    let non_root: Vec<usize> = (1..nodes.len()).collect();
    let real: Vec<usize> = non_root.iter().copied().filter(|i| !is_history(&nodes[*i])).collect();
    let parallels: Vec<usize> = (0..nodes.len())
        .filter(|i| nodes[*i].kind == NodeKind::Parallel && nodes[*i].children.len() > 1)
        .collect();
    let mut next_action = 0u32;
    let mut fresh_action = |rng: &mut Rng| {
        next_action += 1;
        let mut a = ActionSpec::custom(ActionId(next_action));
        if rng.chance(10) {
            let e: &str = EVENTS[rng.below(EVENTS.len())];
            a = ActionSpec::raise(e);
        }
        a
    };
    let random_guard = |rng: &mut Rng| -> Option<GuardSpec> {
        match rng.below(6) {
            0 => Some(GuardSpec::In(nodes[*rng.pick(&real)].path.clone())),
            1 => Some(GuardSpec::NotIn(nodes[*rng.pick(&real)].path.clone())),
            2 => Some(GuardSpec::Const(rng.chance(50))),
            _ => None,
        }
    };
    for (i, n) in nodes.iter().enumerate() {
        if is_history(n) {
            let parent = n.parent.unwrap_or(0);
            if rng.chance(60) {
                let mut desc = Vec::new();
                descendants(&nodes, parent, &mut desc);
                desc.retain(|d| !is_history(&nodes[*d]));
                let t = nodes[*rng.pick(&desc)].path.clone();
                let actions = if rng.chance(50) { vec![fresh_action(&mut rng)] } else { vec![] };
                b.set_history_default(refs[i], [t], actions).unwrap();
            }
            continue;
        }
        // Entry / exit actions.
        for _ in 0..rng.below(3) {
            let a = fresh_action(&mut rng);
            b.add_entry(refs[i], a).unwrap();
        }
        for _ in 0..rng.below(2) {
            let a = fresh_action(&mut rng);
            b.add_exit(refs[i], a).unwrap();
        }
        // Explicit (possibly deep) initial.
        if n.kind == NodeKind::State && !n.children.is_empty() && rng.chance(30) {
            let mut desc = Vec::new();
            descendants(&nodes, i, &mut desc);
            desc.retain(|d| !is_history(&nodes[*d]));
            let t = nodes[*rng.pick(&desc)].path.clone();
            let actions = if rng.chance(50) { vec![fresh_action(&mut rng)] } else { vec![] };
            b.set_initial(refs[i], [t], actions).unwrap();
        }
        for _ in 0..rng.below(4) {
            let mut spec = match rng.below(10) {
                0 => TransitionSpec::always(),
                1 => TransitionSpec::on("*"),
                2 => TransitionSpec::on("a.*"),
                3 => TransitionSpec::on_done(),
                _ => TransitionSpec::on(*rng.pick(EVENTS)),
            };
            match rng.below(10) {
                0..=1 => {}
                2 if !parallels.is_empty() => {
                    let p = *rng.pick(&parallels);
                    let regions: Vec<usize> =
                        nodes[p].children.iter().copied().filter(|c| !is_history(&nodes[*c])).collect();
                    if regions.len() >= 2 {
                        let r1 = rng.below(regions.len());
                        let r2 = (r1 + 1 + rng.below(regions.len() - 1)) % regions.len();
                        for r in [regions[r1], regions[r2]] {
                            let mut pool = vec![r];
                            descendants(&nodes, r, &mut pool);
                            pool.retain(|d| !is_history(&nodes[*d]));
                            spec = spec.target(nodes[*rng.pick(&pool)].path.clone());
                        }
                    }
                }
                _ => spec = spec.target(nodes[*rng.pick(&non_root)].path.clone()),
            }
            if let Some(g) = random_guard(&mut rng) {
                spec = spec.guard(g);
            }
            if matches!(spec.trigger, orchestrator_chart::TriggerSpec::Always) && spec.guard.is_none() {
                spec = spec.guard(GuardSpec::NotIn(nodes[*rng.pick(&real)].path.clone()));
            }
            for _ in 0..rng.below(3) {
                spec = spec.action(fresh_action(&mut rng));
            }
            spec = spec.reenter(rng.chance(40));
            b.add_transition(refs[i], spec).unwrap();
        }
    }
    b.build().unwrap()
}

// ---------------------------------------------------------------- the interpreter under test

#[derive(Default)]
struct Logger(Vec<u32>);

impl Host for Logger {
    type Context = ();
    fn guard(&mut self, _: GuardId, _: &(), _: &EventRef<'_>) -> bool {
        false
    }
    fn action(&mut self, id: ActionId, _: &mut (), _: &EventRef<'_>) {
        self.0.push(id.0);
    }
}

// ---------------------------------------------------------------- the naive reference

struct Reference<'c> {
    chart: &'c Chart,
    configuration: Vec<StateId>,
    history: HashMap<StateId, Vec<StateId>>,
    internal: VecDeque<String>,
    external: VecDeque<String>,
    log: Vec<u32>,
    done: bool,
    /// States entered while still active. Must stay empty: every state a microstep enters was
    /// inactive or exited by that microstep (otherwise its entry actions run twice).
    reentered: Vec<StateId>,
    steps: u32,
}

fn add<T: PartialEq>(set: &mut Vec<T>, x: T) {
    if !set.contains(&x) {
        set.push(x);
    }
}

impl<'c> Reference<'c> {
    fn new(chart: &'c Chart) -> Self {
        Self {
            chart,
            configuration: vec![],
            history: HashMap::new(),
            internal: VecDeque::new(),
            external: VecDeque::new(),
            log: vec![],
            done: false,
            reentered: vec![],
            steps: 0,
        }
    }

    fn kind(&self, s: StateId) -> StateKind {
        self.chart.state(s).kind()
    }
    fn parent(&self, s: StateId) -> Option<StateId> {
        self.chart.state(s).parent()
    }
    fn is_descendant(&self, a: StateId, b: StateId) -> bool {
        let mut p = self.parent(a);
        while let Some(x) = p {
            if x == b {
                return true;
            }
            p = self.parent(x);
        }
        false
    }
    fn proper_ancestors(&self, s: StateId, stop: Option<StateId>) -> Vec<StateId> {
        let mut out = vec![];
        let mut p = self.parent(s);
        while let Some(x) = p {
            if Some(x) == stop {
                break;
            }
            out.push(x);
            p = self.parent(x);
        }
        out
    }
    fn is_atomic(&self, s: StateId) -> bool {
        matches!(self.kind(s), StateKind::Atomic | StateKind::Final)
    }
    fn active(&self, s: StateId) -> bool {
        self.configuration.contains(&s)
    }

    fn guard(&self, g: &Guard) -> bool {
        match g {
            Guard::Custom(_) => false,
            Guard::In(s) => self.active(*s),
            Guard::NotIn(s) => !self.active(*s),
            Guard::Const(b) => *b,
        }
    }

    fn exec(&mut self, actions: &[Action]) {
        for a in actions {
            if let Some(g) = &a.guard
                && !self.guard(g)
            {
                continue;
            }
            match &a.kind {
                ActionKind::Custom(id) => self.log.push(id.0),
                ActionKind::Raise(e) => self.internal.push_back(e.to_string()),
                ActionKind::Send { event, .. } => self.external.push_back(event.to_string()),
                ActionKind::Cancel(_) => {}
            }
        }
    }

    fn matches(t: &Transition, event: Option<&str>) -> bool {
        match (event, t.trigger()) {
            (None, Trigger::Eventless) => true,
            (Some(e), Trigger::Events(ds)) => ds.iter().any(|d| d.matches(e)),
            _ => false,
        }
    }

    fn select(&self, event: Option<&str>) -> Vec<&'c Transition> {
        let mut enabled: Vec<&Transition> = vec![];
        let mut atomic: Vec<StateId> =
            self.configuration.iter().copied().filter(|s| self.is_atomic(*s)).collect();
        atomic.sort();
        for state in atomic {
            let mut chain = vec![state];
            chain.extend(self.proper_ancestors(state, None));
            'outer: for s in chain {
                for t in self.chart.transitions_of(s) {
                    if Self::matches(t, event) && t.guard().is_none_or(|g| self.guard(g)) {
                        if !enabled.iter().any(|e| e.id() == t.id()) {
                            enabled.push(t);
                        }
                        break 'outer;
                    }
                }
            }
        }
        self.remove_conflicting(enabled)
    }

    fn effective_targets(&self, targets: &[StateId]) -> Vec<StateId> {
        let mut out = vec![];
        for &s in targets {
            if matches!(self.kind(s), StateKind::History { .. }) {
                match self.history.get(&s) {
                    Some(v) => v.iter().for_each(|x| add(&mut out, *x)),
                    None => {
                        let d = self
                            .chart
                            .state(s)
                            .history_default()
                            .map(|d| d.targets().to_vec())
                            .unwrap_or_default();
                        self.effective_targets(&d).into_iter().for_each(|x| add(&mut out, x));
                    }
                }
            } else {
                add(&mut out, s);
            }
        }
        out
    }

    fn find_lcca(&self, head: StateId, tail: &[StateId]) -> StateId {
        for anc in self.proper_ancestors(head, None) {
            if (anc == StateId::ROOT || self.kind(anc) == StateKind::Compound)
                && tail.iter().all(|s| self.is_descendant(*s, anc))
            {
                return anc;
            }
        }
        StateId::ROOT
    }

    fn domain(&self, t: &Transition) -> Option<StateId> {
        let targets = self.effective_targets(t.targets());
        if targets.is_empty() {
            return None;
        }
        if !t.reenter()
            && self.kind(t.source()) == StateKind::Compound
            && targets.iter().all(|s| self.is_descendant(*s, t.source()))
        {
            return Some(t.source());
        }
        if t.source() == StateId::ROOT {
            return Some(StateId::ROOT);
        }
        Some(self.find_lcca(t.source(), &targets))
    }

    fn exit_set(&self, ts: &[&Transition]) -> Vec<StateId> {
        let mut out = vec![];
        for t in ts {
            if t.targets().is_empty() {
                continue;
            }
            let Some(d) = self.domain(t) else { continue };
            for s in &self.configuration {
                if self.is_descendant(*s, d) {
                    add(&mut out, *s);
                }
            }
        }
        out
    }

    fn remove_conflicting(&self, enabled: Vec<&'c Transition>) -> Vec<&'c Transition> {
        let mut filtered: Vec<&Transition> = vec![];
        for t1 in enabled {
            let mut preempted = false;
            let mut to_remove = vec![];
            for t2 in &filtered {
                let e1 = self.exit_set(&[t1]);
                let e2 = self.exit_set(&[t2]);
                if e1.iter().any(|s| e2.contains(s)) {
                    if self.is_descendant(t1.source(), t2.source()) {
                        to_remove.push(t2.id());
                    } else {
                        preempted = true;
                        break;
                    }
                }
            }
            if !preempted {
                filtered.retain(|t| !to_remove.contains(&t.id()));
                filtered.push(t1);
            }
        }
        filtered
    }

    fn microstep(&mut self, ts: &[&'c Transition]) {
        // The crate computes each transition's domain once, before exiting (see the crate docs:
        // the pseudo-code's recomputation after history recording can leave a parallel state
        // exited but not re-entered).
        let domains: Vec<Option<StateId>> = ts.iter().map(|t| self.domain(t)).collect();
        // exitStates
        let mut to_exit = self.exit_set(ts);
        to_exit.sort_by(|a, b| b.cmp(a));
        for &s in &to_exit {
            for &h in self.chart.state(s).history_children() {
                let deep = matches!(self.kind(h), StateKind::History { deep: true });
                let mut value: Vec<StateId> = self
                    .configuration
                    .iter()
                    .copied()
                    .filter(|x| {
                        if deep {
                            self.is_atomic(*x) && self.is_descendant(*x, s)
                        } else {
                            self.parent(*x) == Some(s)
                        }
                    })
                    .collect();
                value.sort();
                self.history.insert(h, value);
            }
        }
        for &s in &to_exit {
            self.exec(self.chart.state(s).exit());
            self.configuration.retain(|x| *x != s);
        }
        for t in ts {
            self.exec(t.actions());
        }
        // enterStates
        let mut to_enter = vec![];
        let mut default_entry = vec![];
        let mut default_history: HashMap<StateId, StateId> = HashMap::new();
        for (t, d) in ts.iter().zip(domains) {
            let Some(d) = d else { continue };
            for &s in t.targets() {
                self.add_descendants(s, d, &mut to_enter, &mut default_entry, &mut default_history);
            }
            for s in self.effective_targets(t.targets()) {
                self.add_ancestors(s, d, d, &mut to_enter, &mut default_entry, &mut default_history);
            }
        }
        self.enter(to_enter, default_entry, default_history);
    }

    /// `domain` is the domain of the transition being taken (the root at start-up).
    fn add_descendants(
        &self,
        s: StateId,
        domain: StateId,
        to_enter: &mut Vec<StateId>,
        default_entry: &mut Vec<StateId>,
        default_history: &mut HashMap<StateId, StateId>,
    ) {
        let st = self.chart.state(s);
        let parent = st.parent().unwrap_or(StateId::ROOT);
        if matches!(st.kind(), StateKind::History { .. }) {
            let targets = match self.history.get(&s) {
                Some(v) => v.clone(),
                None => {
                    default_history.insert(parent, s);
                    st.history_default().map(|d| d.targets().to_vec()).unwrap_or_default()
                }
            };
            // The crate's choice (see its docs): stop at the transition domain when it lies
            // strictly inside the history's parent; the states from the domain up to the parent
            // are active and not exited.
            let stop = if self.is_descendant(domain, parent) { domain } else { parent };
            for &x in &targets {
                self.add_descendants(x, domain, to_enter, default_entry, default_history);
            }
            for &x in &targets {
                self.add_ancestors(x, stop, domain, to_enter, default_entry, default_history);
            }
            return;
        }
        add(to_enter, s);
        match st.kind() {
            StateKind::Compound => {
                add(default_entry, s);
                let init = st.initial().map(|d| d.targets().to_vec()).unwrap_or_default();
                for &x in &init {
                    self.add_descendants(x, domain, to_enter, default_entry, default_history);
                }
                for &x in &init {
                    self.add_ancestors(x, s, domain, to_enter, default_entry, default_history);
                }
            }
            StateKind::Parallel => {
                for &c in st.children() {
                    if !to_enter.iter().any(|x| self.is_descendant(*x, c)) {
                        self.add_descendants(c, domain, to_enter, default_entry, default_history);
                    }
                }
            }
            _ => {}
        }
    }

    fn add_ancestors(
        &self,
        s: StateId,
        ancestor: StateId,
        domain: StateId,
        to_enter: &mut Vec<StateId>,
        default_entry: &mut Vec<StateId>,
        default_history: &mut HashMap<StateId, StateId>,
    ) {
        for anc in self.proper_ancestors(s, Some(ancestor)) {
            if anc == StateId::ROOT {
                break;
            }
            add(to_enter, anc);
            if self.kind(anc) == StateKind::Parallel {
                for &c in self.chart.state(anc).children() {
                    if !to_enter.iter().any(|x| self.is_descendant(*x, c)) {
                        self.add_descendants(c, domain, to_enter, default_entry, default_history);
                    }
                }
            }
        }
    }

    fn in_final(&self, s: StateId) -> bool {
        match self.kind(s) {
            StateKind::Compound => self
                .chart
                .state(s)
                .children()
                .iter()
                .any(|c| self.kind(*c) == StateKind::Final && self.active(*c)),
            StateKind::Parallel => self.chart.state(s).children().iter().all(|c| self.in_final(*c)),
            StateKind::Final => true,
            _ => false,
        }
    }

    fn enter(
        &mut self,
        mut to_enter: Vec<StateId>,
        default_entry: Vec<StateId>,
        default_history: HashMap<StateId, StateId>,
    ) {
        to_enter.sort();
        let was_done = self.done;
        let mut completed: Vec<StateId> = vec![];
        for s in to_enter {
            if self.active(s) {
                self.reentered.push(s);
            }
            add(&mut self.configuration, s);
            let st = self.chart.state(s);
            self.exec(st.entry());
            if default_entry.contains(&s)
                && let Some(i) = st.initial()
            {
                self.exec(i.actions());
            }
            if let Some(h) = default_history.get(&s)
                && let Some(d) = self.chart.state(*h).history_default()
            {
                self.exec(d.actions());
            }
            if st.kind() == StateKind::Final {
                let parent = st.parent().unwrap_or(StateId::ROOT);
                if self.kind(parent) == StateKind::Compound {
                    if parent == StateId::ROOT {
                        self.done = true;
                        continue;
                    }
                    self.internal.push_back(format!("done.state.{}", self.chart.path(parent)));
                }
                let mut marker =
                    if self.kind(parent) == StateKind::Parallel { Some(parent) } else { self.parent(parent) };
                while let Some(m) = marker {
                    if self.kind(m) != StateKind::Parallel || completed.contains(&m) || !self.in_final(m) {
                        break;
                    }
                    completed.push(m);
                    if m == StateId::ROOT {
                        self.done = true;
                        break;
                    }
                    self.internal.push_back(format!("done.state.{}", self.chart.path(m)));
                    marker = self.parent(m);
                }
            }
        }
        if self.done && !was_done {
            let mut all = self.configuration.clone();
            all.sort_by(|a, b| b.cmp(a));
            for s in all {
                self.exec(self.chart.state(s).exit());
            }
        }
    }

    fn step(&mut self) -> Result<(), RunError> {
        self.steps += 1;
        if self.steps > LIMIT { Err(RunError::StepLimit { limit: LIMIT }) } else { Ok(()) }
    }

    fn macrostep(&mut self) -> Result<(), RunError> {
        while !self.done {
            let mut enabled = self.select(None);
            if enabled.is_empty() {
                let Some(e) = self.internal.pop_front() else { break };
                enabled = self.select(Some(&e));
                if enabled.is_empty() {
                    continue;
                }
            }
            self.step()?;
            self.microstep(&enabled);
        }
        self.halt_cleanup();
        Ok(())
    }

    fn halt_cleanup(&mut self) {
        if self.done {
            self.internal.clear();
            self.external.clear();
        }
    }

    fn external_event(&mut self, e: &str) -> Result<(), RunError> {
        if self.done {
            return Ok(());
        }
        let enabled = self.select(Some(e));
        if !enabled.is_empty() {
            self.step()?;
            self.microstep(&enabled);
        }
        self.macrostep()
    }

    fn drain(&mut self) -> Result<(), RunError> {
        while let Some(e) = self.external.pop_front() {
            if self.done {
                break;
            }
            self.external_event(&e)?;
        }
        self.halt_cleanup();
        Ok(())
    }

    fn start(&mut self) -> Result<(), RunError> {
        self.steps = 0;
        let (mut to_enter, mut de, mut dh) = (vec![], vec![], HashMap::new());
        self.add_descendants(StateId::ROOT, StateId::ROOT, &mut to_enter, &mut de, &mut dh);
        self.enter(to_enter, de, dh);
        self.macrostep()?;
        self.drain()
    }

    fn send(&mut self, e: &str) -> Result<(), RunError> {
        self.steps = 0;
        self.external_event(e)?;
        self.drain()
    }

    fn sorted_configuration(&self) -> Vec<StateId> {
        let mut c = self.configuration.clone();
        c.sort();
        c
    }
}

// ---------------------------------------------------------------- the comparison

fn compare(seed: u64, events: &[usize]) -> Result<(), TestCaseError> {
    let chart = gen_chart(seed);
    let mut fast = Interpreter::new(&chart, Logger::default(), ());
    fast.set_step_limit(LIMIT);
    let mut slow = Reference::new(&chart);
    let check =
        |fast: &Interpreter<Logger, &Chart>, slow: &Reference<'_>, what: &str| -> Result<(), TestCaseError> {
            let fast_config: Vec<StateId> = fast.state().active().iter().collect();
            prop_assert_eq!(&fast_config, &slow.sorted_configuration(), "configuration after {}", what);
            prop_assert!(
                chart.is_legal_configuration(fast.state().active()),
                "illegal configuration after {}",
                what
            );
            prop_assert_eq!(&fast.host().0, &slow.log, "action trace after {}", what);
            prop_assert_eq!(fast.is_done(), slow.done, "done after {}", what);
            prop_assert!(
                slow.reentered.is_empty(),
                "active states {:?} entered again by {}",
                slow.reentered,
                what
            );
            for &h in chart.history_nodes() {
                let fast_h: Option<Vec<StateId>> =
                    fast.state().history_of(&chart, h).map(|s| s.iter().collect());
                prop_assert_eq!(
                    fast_h.as_ref(),
                    slow.history.get(&h),
                    "history of {} after {}",
                    chart.path(h),
                    what
                );
            }
            Ok(())
        };
    let (a, b) = (fast.start(), slow.start());
    prop_assert_eq!(&a, &b, "start result");
    if a.is_err() {
        return Ok(());
    }
    check(&fast, &slow, "start")?;
    for (i, e) in events.iter().enumerate() {
        let name = EVENTS[*e % EVENTS.len()];
        let (a, b) = (fast.send(name), slow.send(name));
        prop_assert_eq!(&a, &b, "result of event {} ({})", i, name);
        if a.is_err() {
            return Ok(());
        }
        check(&fast, &slow, &format!("event {i} ({name})"))?;
    }
    Ok(())
}

proptest! {
    // PROPTEST_CASES overrides the default of 3000 for longer campaigns.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(3000),
        ..ProptestConfig::default()
    })]

    #[test]
    fn interpreter_matches_naive_reference(seed in any::<u64>(), events in proptest::collection::vec(0usize..50, 1..25)) {
        compare(seed, &events)?;
    }
}

#[test]
fn generator_makes_varied_charts() {
    // Sanity: the generator produces parallel states, history states and finals.
    let mut kinds = [0usize; 5];
    for seed in 0..200 {
        let chart = gen_chart(seed);
        for s in chart.states() {
            let k = match s.kind() {
                StateKind::Atomic => 0,
                StateKind::Compound => 1,
                StateKind::Parallel => 2,
                StateKind::Final => 3,
                StateKind::History { .. } => 4,
            };
            kinds[k] += 1;
        }
    }
    assert!(kinds.iter().all(|k| *k > 50), "{kinds:?}");
}

#[test]
#[ignore]
fn debug_dump() {
    let seed: u64 = std::env::var("SEED").unwrap().parse().unwrap();
    let chart = gen_chart(seed);
    for s in chart.states() {
        println!(
            "{:>3} {:<30} {:?} entry={:?} exit={:?} init={:?} hist={:?}",
            s.id().0,
            s.path(),
            s.kind(),
            s.entry().iter().map(|a| format!("{:?}", a.kind)).collect::<Vec<_>>(),
            s.exit().iter().map(|a| format!("{:?}", a.kind)).collect::<Vec<_>>(),
            s.initial().map(|i| (i.targets().to_vec(), i.actions().len())),
            s.history_default().map(|i| (i.targets().to_vec(), i.actions().len())),
        );
        for t in chart.transitions_of(s.id()) {
            println!(
                "      {:?} -> {:?} guard={:?} reenter={} actions={:?} domain={:?}",
                t.trigger(),
                t.targets().iter().map(|x| chart.path(*x)).collect::<Vec<_>>(),
                t.guard(),
                t.reenter(),
                t.actions().iter().map(|a| format!("{:?}", a.kind)).collect::<Vec<_>>(),
                t.static_domain()
            );
        }
    }
}
