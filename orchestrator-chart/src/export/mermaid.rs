//! A chart as a Mermaid `stateDiagram-v2`.
//!
//! * Every state is declared `state "<key>" as <id>`, compound and parallel states with a
//!   `{ ... }` block. Ids are the path with `.` (and any other character Mermaid does not
//!   accept in an id) replaced by `_` (`p.a.a1` → `p_a_a1`), made unique with a `_2`, `_3`, …
//!   suffix where two paths collide, and prefixed `s_` where they would start with Mermaid's
//!   `default` keyword.
//! * A compound state starts with `[*] --> <initial>` (one arrow per target of a deep /
//!   multi-target initial, labelled `/ <actions>` when the initial transition has actions); a
//!   final state gets `<id> --> [*]`; the regions of a parallel state are separated by `--`.
//! * A history state is `state "H" as <id>` (`"H*"` when deep) with an arrow to its default.
//! * Transitions are `<source> --> <target> : <label>` (see
//!   [`transition_label`]); a targetless transition is a loop on its
//!   source; one arrow per target of a multi-target transition. Each arrow is written in the
//!   block of the innermost non-parallel state enclosing both ends.
//! * Entry / exit actions are state descriptions, `<id> : entry / a, b`, or for compound and
//!   parallel states (where Mermaid refuses descriptions) a `note right of <id>` block.
//! * When the root is parallel or has transitions or entry / exit actions, the whole machine is
//!   one outer state named after the machine id.
//!
//! Mermaid ends a label at `:` or `;` (and its entity codes contain `;`), so in labels they are
//! written as the full-width `：` and `；`; a `"` in a state name is written `'`.

use std::collections::HashSet;
use std::fmt::Write as _;

use crate::export::{Names, actions_label, all_children, entry_exit_lines, root_needs_box, transition_label};
use crate::model::{Chart, StateId, StateKind};

/// The Mermaid `stateDiagram-v2` of `chart` (see the [module docs](self)).
pub fn to_mermaid(chart: &Chart, names: &dyn Names) -> String {
    let ids = Ids::new(chart);
    let boxed = root_needs_box(chart);
    let mut edges: Vec<(Option<StateId>, String)> = Vec::new();
    let m = Mermaid { chart, names, ids: &ids };
    m.collect_edges(&mut edges);
    let mut out = String::from("stateDiagram-v2\n");
    let mut w = Writer { m: &m, edges: &edges, out: &mut out };
    if boxed {
        w.line(1, &format!("[*] --> {}", ids.root));
        w.declare(StateId::ROOT, 1);
    } else {
        w.content(StateId::ROOT, 1);
    }
    w.edges_of(None, 1);
    out
}

/// Mermaid ids of the states (index = state id) and of the root box.
struct Ids {
    states: Vec<String>,
    root: String,
}

fn sanitize(text: &str) -> String {
    let mut id: String =
        text.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    if id.is_empty() {
        id.push('s');
    }
    if id.to_ascii_lowercase().starts_with("default") {
        id.insert_str(0, "s_");
    }
    id
}

fn unique(base: String, used: &mut HashSet<String>) -> String {
    let mut id = base.clone();
    let mut n = 2;
    while used.contains(&id) {
        id = format!("{base}_{n}");
        n += 1;
    }
    used.insert(id.clone());
    id
}

impl Ids {
    fn new(chart: &Chart) -> Self {
        let mut used = HashSet::new();
        let mut states = vec![String::new()];
        for st in &chart.states()[1..] {
            states.push(unique(sanitize(st.path()), &mut used));
        }
        let root = unique(sanitize(chart.machine_id()), &mut used);
        states[0] = root.clone();
        Self { states, root }
    }
}

/// Text after a `:` (transition labels, descriptions): Mermaid ends it at `:` or `;` (so its
/// `#58;` entity codes cannot be used there either).
fn label_text(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            ':' => '\u{ff1a}',
            ';' => '\u{ff1b}',
            c => c,
        })
        .collect()
}

/// A line of a multi-line note, which ends at the first `end note` (in any case): its space
/// becomes a no-break space.
fn note_text(text: &str) -> String {
    let mut out = text.to_owned();
    while let Some(pos) = out.to_ascii_lowercase().find("end note") {
        out.replace_range(pos + 3..pos + 4, "\u{a0}");
    }
    out
}

/// Text inside `state "..."`, which ends at `"`.
fn name_text(text: &str) -> String {
    text.replace('"', "'")
}

struct Mermaid<'a> {
    chart: &'a Chart,
    names: &'a dyn Names,
    ids: &'a Ids,
}

impl Mermaid<'_> {
    fn id(&self, s: StateId) -> &str {
        &self.ids.states[s.index()]
    }

    /// The block an arrow between `ends` belongs in: the innermost non-parallel state that is a
    /// proper ancestor of every end (`None` = the top level: an arrow from the root, or inside
    /// a parallel root).
    fn owner(&self, ends: &[StateId]) -> Option<StateId> {
        let (first, rest) = ends.split_first()?;
        let mut owner = self
            .chart
            .proper_ancestors(*first)
            .find(|a| rest.iter().all(|e| self.chart.is_descendant(*e, *a)));
        while let Some(o) = owner.filter(|o| self.chart.state(*o).kind() == StateKind::Parallel) {
            owner = self.chart.state(o).parent();
        }
        owner
    }

    /// Every arrow that is not an initial or final arrow, in document order, with its block.
    fn collect_edges(&self, edges: &mut Vec<(Option<StateId>, String)>) {
        for st in self.chart.states() {
            let s = st.id();
            if let (StateKind::History { .. }, Some(default)) = (st.kind(), st.history_default()) {
                let label = if default.actions().is_empty() {
                    String::new()
                } else {
                    format!(" : / {}", label_text(&actions_label(self.chart, self.names, default.actions())))
                };
                for t in default.targets() {
                    edges.push((self.owner(&[s, *t]), format!("{} --> {}{label}", self.id(s), self.id(*t))));
                }
            }
            for t in self.chart.transitions_of(s) {
                let label = label_text(&transition_label(self.chart, self.names, t));
                if t.targets().is_empty() {
                    edges.push((self.owner(&[s]), format!("{0} --> {0} : {label}", self.id(s))));
                }
                for target in t.targets() {
                    let line = format!("{} --> {} : {label}", self.id(s), self.id(*target));
                    edges.push((self.owner(&[s, *target]), line));
                }
            }
        }
    }
}

struct Writer<'a, 'b> {
    m: &'a Mermaid<'a>,
    edges: &'a [(Option<StateId>, String)],
    out: &'b mut String,
}

impl Writer<'_, '_> {
    fn line(&mut self, depth: usize, text: &str) {
        let _ = writeln!(self.out, "{:indent$}{text}", "", indent = depth * 4);
    }

    fn edges_of(&mut self, owner: Option<StateId>, depth: usize) {
        for (o, e) in self.edges {
            if *o == owner {
                self.line(depth, e);
            }
        }
    }

    /// A state's declaration (with its block), then its descriptions.
    fn declare(&mut self, s: StateId, depth: usize) {
        let chart = self.m.chart;
        let st = chart.state(s);
        let id = self.m.id(s).to_owned();
        let name = name_text(if s == StateId::ROOT { chart.machine_id() } else { st.key() });
        match st.kind() {
            StateKind::Compound | StateKind::Parallel => {
                self.line(depth, &format!("state \"{name}\" as {id} {{"));
                self.content(s, depth + 1);
                self.line(depth, "}");
            }
            StateKind::History { deep } => {
                self.line(depth, &format!("state \"{}\" as {id}", if deep { "H*" } else { "H" }));
            }
            StateKind::Atomic | StateKind::Final => self.line(depth, &format!("state \"{name}\" as {id}")),
        }
        let lines = entry_exit_lines(chart, self.m.names, s);
        if matches!(st.kind(), StateKind::Compound | StateKind::Parallel) {
            // Mermaid refuses descriptions on composite states.
            if !lines.is_empty() {
                self.line(depth, &format!("note right of {id}"));
                for text in &lines {
                    self.line(depth + 1, &note_text(text));
                }
                self.line(depth, "end note");
            }
        } else {
            for text in &lines {
                self.line(depth, &format!("{id} : {}", label_text(text)));
            }
        }
    }

    /// The inside of a compound or parallel state (or of the unboxed root).
    fn content(&mut self, s: StateId, depth: usize) {
        let chart = self.m.chart;
        let st = chart.state(s);
        if let Some(init) = st.initial() {
            let label = if init.actions().is_empty() {
                String::new()
            } else {
                format!(" : / {}", label_text(&actions_label(chart, self.m.names, init.actions())))
            };
            for t in init.targets() {
                self.line(depth, &format!("[*] --> {}{label}", self.m.id(*t)));
            }
        }
        let parallel = st.kind() == StateKind::Parallel;
        let mut first = true;
        for c in all_children(chart, s) {
            let child = chart.state(c);
            let is_region = parallel && !matches!(child.kind(), StateKind::History { .. });
            if is_region && !first {
                self.line(depth, "--");
            }
            first &= !is_region;
            self.declare(c, depth);
            if child.kind() == StateKind::Final {
                self.line(depth, &format!("{} --> [*]", self.m.id(c)));
            }
        }
        self.edges_of(Some(s), depth);
    }
}
