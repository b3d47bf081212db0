//! A chart as a Mermaid `stateDiagram-v2`.
//!
//! * Every state is declared `state "<key>" as <id>`, compound and parallel states with a
//!   `{ ... }` block, in document order. Ids are the path with `.` (and any other character
//!   Mermaid does not accept in an id) replaced by `_` (`p.a.a1` → `p_a_a1`), prefixed `s_` where
//!   they would be a Mermaid keyword (`note`, `state`, `class`, `root`, …) or start with
//!   `default`, suffixed `_s` where they would end like the ids Mermaid gives pseudo-states
//!   (`_start`, `_end`), and made unique with a `_2`, `_3`, … suffix where two paths collide.
//! * A compound state starts with `[*] --> <child>`, an arrow to the child holding its initial
//!   state(s); the arrow is labelled with the initial targets when they lie deeper (a deep /
//!   multi-target initial), and `/ <actions>` when the initial transition has actions. A final
//!   state gets `<id> --> [*]`.
//! * The regions of a parallel state are separated by `--`, except where an arrow starts or ends
//!   at a compound or parallel state nested inside one of its regions: Mermaid 11's layout crashes
//!   on such an arrow inside a `--` region (mermaid-js/mermaid#4052: "Cannot set properties of
//!   undefined (setting 'rank')"), so those regions are drawn as plain nested boxes.
//! * A history state is `state "H" as <id>` (`"H*"` when deep) with an arrow to its default.
//! * Transitions are `<source> --> <target> : <label>` (see [`transition_label`]); a
//!   targetless transition is a loop on its source; one arrow per target of a multi-target
//!   transition. Every such arrow is written at the top level, after the declarations: Mermaid
//!   moves a state into the block where an arrow names it, so an arrow inside a block would pull
//!   states out of their own parents.
//! * Entry / exit actions are state descriptions, `<id> : entry / a, b`, or for compound and
//!   parallel states (where Mermaid refuses descriptions) a `note right of <id>` block.
//! * When the root is parallel or has transitions or entry / exit actions, the whole machine is
//!   one outer state named after the machine id.
//!
//! All text (state names, labels, descriptions, notes) goes through [`escape`]: characters that
//! end a label or a statement (`;`, `:`, `"`), start an entity code or a directive (`#`, `%`),
//! or would be read as HTML (`<`, `>`, `&`) are written as Mermaid entity codes (`#59;`, `#lt;`,
//! …), and line breaks and other control characters as spaces.

use std::collections::HashSet;
use std::fmt::Write as _;

use crate::export::{Names, actions_label, all_children, entry_exit_lines, root_needs_box, transition_label};
use crate::model::{Chart, StateId, StateKind};

/// The Mermaid `stateDiagram-v2` of `chart` (see the [module docs](self)).
pub fn to_mermaid(chart: &Chart, names: &dyn Names) -> String {
    let ids = Ids::new(chart);
    let mut m = Mermaid { chart, names, ids: &ids, plain: HashSet::new() };
    let (arrows, endpoints) = m.arrows();
    m.plain = m.plain_parallels(&endpoints);
    let mut out = String::from("stateDiagram-v2\n");
    let mut w = Writer { m: &m, out: &mut out };
    if root_needs_box(chart) {
        w.line(1, &format!("[*] --> {}", ids.root));
        w.declare(StateId::ROOT, 1);
    } else {
        w.content(StateId::ROOT, 1);
    }
    for arrow in &arrows {
        w.line(1, arrow);
    }
    out
}

/// Text for a Mermaid label, description, note line or quoted state name: Mermaid entity codes
/// for `# ; : " < > & % \`, a space for line breaks and other control characters.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '#' => out.push_str("#35;"),
            ';' => out.push_str("#59;"),
            ':' => out.push_str("#58;"),
            '"' => out.push_str("#quot;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '&' => out.push_str("#amp;"),
            '%' => out.push_str("#37;"),
            '\\' => out.push_str("#92;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Words Mermaid's state diagram grammar reads as keywords (or uses for its own root) where an
/// id is expected; compared case-insensitively.
const RESERVED: &[&str] = &[
    "note",
    "state",
    "class",
    "classdef",
    "style",
    "click",
    "default",
    "root",
    "end",
    "direction",
    "as",
    "hide",
    "acctitle",
    "accdescr",
    "left",
    "right",
    "of",
    "fork",
    "join",
    "choice",
    "concurrent",
    "divider",
];

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
    let lower = id.to_ascii_lowercase();
    if lower.starts_with("default") || RESERVED.contains(&lower.as_str()) {
        id.insert_str(0, "s_");
    }
    if lower.ends_with("_start") || lower.ends_with("_end") {
        id.push_str("_s");
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

/// A line of a multi-line note, which ends at the first `end note` (in any case): its space
/// becomes a no-break space.
fn note_text(text: &str) -> String {
    let mut out = escape(text);
    while let Some(pos) = out.to_ascii_lowercase().find("end note") {
        out.replace_range(pos + 3..pos + 4, "\u{a0}");
    }
    out
}

struct Mermaid<'a> {
    chart: &'a Chart,
    names: &'a dyn Names,
    ids: &'a Ids,
    /// Parallel states drawn without `--` between their regions.
    plain: HashSet<StateId>,
}

impl Mermaid<'_> {
    fn id(&self, s: StateId) -> &str {
        &self.ids.states[s.index()]
    }

    fn is_composite(&self, s: StateId) -> bool {
        matches!(self.chart.state(s).kind(), StateKind::Compound | StateKind::Parallel)
    }

    /// The child of `parent` that is `s` or holds it.
    fn child_holding(&self, parent: StateId, s: StateId) -> StateId {
        std::iter::once(s)
            .chain(self.chart.proper_ancestors(s))
            .find(|a| self.chart.state(*a).parent() == Some(parent))
            .unwrap_or(s)
    }

    /// The `[*]` arrows of compound state `s`: `(child, label)` per child holding initial targets.
    fn initial_arrows(&self, s: StateId) -> Vec<(StateId, String)> {
        let Some(init) = self.chart.state(s).initial() else { return Vec::new() };
        let mut groups: Vec<(StateId, Vec<StateId>)> = Vec::new();
        for t in init.targets() {
            let child = self.child_holding(s, *t);
            match groups.iter_mut().find(|(c, _)| *c == child) {
                Some((_, targets)) => targets.push(*t),
                None => groups.push((child, vec![*t])),
            }
        }
        let actions = if init.actions().is_empty() {
            String::new()
        } else {
            format!("/ {}", actions_label(self.chart, self.names, init.actions()))
        };
        groups
            .into_iter()
            .map(|(child, targets)| {
                let mut label = String::new();
                if targets.iter().any(|t| *t != child) {
                    let paths: Vec<&str> = targets.iter().map(|t| self.chart.path(*t)).collect();
                    label.push_str(&paths.join(", "));
                }
                if !actions.is_empty() {
                    if !label.is_empty() {
                        label.push(' ');
                    }
                    label.push_str(&actions);
                }
                (child, label)
            })
            .collect()
    }

    /// Every transition and history-default arrow (written at the top level), and every state
    /// an arrow (initial arrows included) starts or ends at.
    fn arrows(&self) -> (Vec<String>, Vec<StateId>) {
        let mut arrows = Vec::new();
        let mut endpoints = Vec::new();
        for st in self.chart.states() {
            let s = st.id();
            endpoints.extend(self.initial_arrows(s).into_iter().map(|(c, _)| c));
            if let (StateKind::History { .. }, Some(default)) = (st.kind(), st.history_default()) {
                let label = if default.actions().is_empty() {
                    String::new()
                } else {
                    format!(" : / {}", escape(&actions_label(self.chart, self.names, default.actions())))
                };
                for t in default.targets() {
                    arrows.push(format!("{} --> {}{label}", self.id(s), self.id(*t)));
                    endpoints.extend([s, *t]);
                }
            }
            for t in self.chart.transitions_of(s) {
                let label = escape(&transition_label(self.chart, self.names, t));
                endpoints.push(s);
                if t.targets().is_empty() {
                    arrows.push(format!("{0} --> {0} : {label}", self.id(s)));
                }
                for target in t.targets() {
                    arrows.push(format!("{} --> {} : {label}", self.id(s), self.id(*target)));
                    endpoints.push(*target);
                }
            }
        }
        (arrows, endpoints)
    }

    /// The parallel states whose regions cannot be separated by `--`: those with an arrow
    /// endpoint that is a compound or parallel state nested inside one of their regions.
    fn plain_parallels(&self, endpoints: &[StateId]) -> HashSet<StateId> {
        let mut plain = HashSet::new();
        for e in endpoints.iter().copied().filter(|e| self.is_composite(*e)) {
            // The parallel ancestors of `e` other than its parent (a region itself is safe).
            let parent = self.chart.state(e).parent();
            for a in self.chart.proper_ancestors(e) {
                if Some(a) != parent && self.chart.state(a).kind() == StateKind::Parallel {
                    plain.insert(a);
                }
            }
        }
        plain
    }
}

struct Writer<'a, 'b> {
    m: &'a Mermaid<'a>,
    out: &'b mut String,
}

impl Writer<'_, '_> {
    fn line(&mut self, depth: usize, text: &str) {
        let _ = writeln!(self.out, "{:indent$}{text}", "", indent = depth * 4);
    }

    /// A state's declaration (with its block), then its descriptions.
    fn declare(&mut self, s: StateId, depth: usize) {
        let chart = self.m.chart;
        let st = chart.state(s);
        let id = self.m.id(s).to_owned();
        let name = escape(if s == StateId::ROOT { chart.machine_id() } else { st.key() });
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
                self.line(depth, &format!("{id} : {}", escape(text)));
            }
        }
    }

    /// The inside of a compound or parallel state (or of the unboxed root).
    fn content(&mut self, s: StateId, depth: usize) {
        let chart = self.m.chart;
        let st = chart.state(s);
        for (child, label) in self.m.initial_arrows(s) {
            let label = if label.is_empty() { String::new() } else { format!(" : {}", escape(&label)) };
            self.line(depth, &format!("[*] --> {}{label}", self.m.id(child)));
        }
        let dividers = st.kind() == StateKind::Parallel && !self.m.plain.contains(&s);
        let mut first = true;
        for c in all_children(chart, s) {
            let child = chart.state(c);
            let is_region = dividers && !matches!(child.kind(), StateKind::History { .. });
            if is_region && !first {
                self.line(depth, "--");
            }
            first &= !is_region;
            self.declare(c, depth);
            if child.kind() == StateKind::Final {
                self.line(depth, &format!("{} --> [*]", self.m.id(c)));
            }
        }
    }
}
