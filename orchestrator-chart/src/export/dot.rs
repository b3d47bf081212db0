//! A chart as a Graphviz digraph.
//!
//! * Nodes are named by the state path (`"p.a.a1"`); a state's label is its key, followed by
//!   its `entry / ...` and `exit / ...` lines.
//! * A compound or parallel state is a `cluster_<path>` subgraph (`rounded`; `bold` for a
//!   parallel state; `dashed` for a region, i.e. a child of a parallel state). A compound state
//!   has an initial point node `"<path>#initial"` with an arrow to its initial state(s).
//! * Atomic states are rounded boxes, final states rounded boxes with a double border
//!   (`peripheries=2`: as large as their label, unlike a `doublecircle` sized to hold it), history
//!   states circles labelled `H` / `H*` with a dashed arrow to their default.
//! * Transitions are edges labelled as in Mermaid (see
//!   [`transition_label`]); a targetless transition is a loop. An edge to
//!   or from a compound or parallel state ends at its cluster's border (`compound=true` with
//!   `lhead` / `ltail`, attached to the initial point node of a compound state, or to the first
//!   region of a parallel state).
//! * When the root is parallel or has transitions or entry / exit actions, the whole machine is
//!   the cluster `cluster_#root`, labelled with the machine id.
//!
//! Every name and label is a DOT double-quoted string: `\` and `"` are escaped, line breaks and
//! other control characters become spaces (a label's own lines are joined with `\n`), so no
//! text can end a string, start an escape sequence such as `\N` or `\l`, or break a line.

use std::fmt::Write as _;

use crate::export::{Names, actions_label, all_children, entry_exit_lines, root_needs_box, transition_label};
use crate::model::{Chart, StateId, StateKind};

/// The Graphviz digraph of `chart` (see the [module docs](self)).
pub fn to_dot(chart: &Chart, names: &dyn Names) -> String {
    let d = Dot { chart, names, boxed: root_needs_box(chart) };
    let mut out = String::new();
    let _ = writeln!(out, "digraph {} {{", quote(chart.machine_id()));
    out.push_str("    compound=true;\n    rankdir=LR;\n");
    out.push_str("    node [shape=box, style=rounded];\n");
    if d.boxed {
        d.declare(&mut out, StateId::ROOT, 1);
    } else {
        d.content(&mut out, StateId::ROOT, 1);
    }
    d.edges(&mut out);
    out.push_str("}\n");
    out
}

/// The inside of a DOT double-quoted string: `\` and `"` escaped, control characters (line
/// breaks included) as spaces.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// A DOT double-quoted string.
fn quote(text: &str) -> String {
    format!("\"{}\"", escape(text))
}

/// A label from lines (escaped, joined with `\n`).
fn label(lines: &[String]) -> String {
    let escaped: Vec<String> = lines.iter().map(|l| escape(l)).collect();
    format!("\"{}\"", escaped.join("\\n"))
}

struct Dot<'a> {
    chart: &'a Chart,
    names: &'a dyn Names,
    boxed: bool,
}

fn indent(out: &mut String, depth: usize) {
    out.extend(std::iter::repeat_n("    ", depth));
}

impl Dot<'_> {
    fn is_cluster(&self, s: StateId) -> bool {
        match self.chart.state(s).kind() {
            StateKind::Compound | StateKind::Parallel => s != StateId::ROOT || self.boxed,
            _ => false,
        }
    }

    fn cluster(&self, s: StateId) -> String {
        if s == StateId::ROOT {
            quote("cluster_#root")
        } else {
            quote(&format!("cluster_{}", self.chart.path(s)))
        }
    }

    fn initial_node(&self, s: StateId) -> String {
        quote(&format!("{}#initial", self.chart.path(s)))
    }

    /// The node an edge to or from `s` attaches to.
    fn anchor(&self, s: StateId) -> String {
        let st = self.chart.state(s);
        match st.kind() {
            StateKind::Compound => self.initial_node(s),
            StateKind::Parallel => self.anchor(st.children()[0]),
            _ => quote(st.path()),
        }
    }

    fn declare(&self, out: &mut String, s: StateId, depth: usize) {
        let st = self.chart.state(s);
        let name = if s == StateId::ROOT { self.chart.machine_id() } else { st.key() };
        let mut lines = vec![name.to_owned()];
        lines.extend(entry_exit_lines(self.chart, self.names, s));
        let in_parallel = st.parent().is_some_and(|p| self.chart.state(p).kind() == StateKind::Parallel);
        indent(out, depth);
        match st.kind() {
            StateKind::Compound | StateKind::Parallel => {
                let mut style = vec!["rounded"];
                if st.kind() == StateKind::Parallel {
                    style.push("bold");
                }
                if in_parallel {
                    style.push("dashed");
                }
                let _ = writeln!(out, "subgraph {} {{", self.cluster(s));
                indent(out, depth + 1);
                let _ = writeln!(out, "label={};", label(&lines));
                indent(out, depth + 1);
                let _ = writeln!(out, "style={};", quote(&style.join(",")));
                self.content(out, s, depth + 1);
                indent(out, depth);
                out.push_str("}\n");
            }
            StateKind::Atomic => {
                let _ = writeln!(out, "{} [label={}];", quote(st.path()), label(&lines));
            }
            StateKind::Final => {
                let _ = writeln!(out, "{} [label={}, peripheries=2];", quote(st.path()), label(&lines));
            }
            StateKind::History { deep } => {
                let _ = writeln!(
                    out,
                    "{} [shape=circle, label={}];",
                    quote(st.path()),
                    quote(if deep { "H*" } else { "H" })
                );
            }
        }
    }

    fn content(&self, out: &mut String, s: StateId, depth: usize) {
        if self.chart.state(s).initial().is_some() {
            indent(out, depth);
            let _ = writeln!(out, "{} [shape=point, width=0.15];", self.initial_node(s));
        }
        for c in all_children(self.chart, s) {
            self.declare(out, c, depth);
        }
    }

    /// `tail -> head [attrs]`, clipped at the clusters of `from` / `to` where they are clusters
    /// that do not contain the other end.
    fn edge(&self, out: &mut String, tail: String, from: Option<StateId>, to: StateId, attrs: Vec<String>) {
        let mut attrs = attrs;
        if self.is_cluster(to) && from.is_none_or(|f| !self.chart.is_descendant_or_self(f, to)) {
            attrs.push(format!("lhead={}", self.cluster(to)));
        }
        if let Some(f) = from.filter(|f| self.is_cluster(*f) && !self.chart.is_descendant_or_self(to, *f)) {
            attrs.push(format!("ltail={}", self.cluster(f)));
        }
        let attrs = if attrs.is_empty() { String::new() } else { format!(" [{}]", attrs.join(", ")) };
        let _ = writeln!(out, "    {tail} -> {}{attrs};", self.anchor(to));
    }

    fn edges(&self, out: &mut String) {
        let chart = self.chart;
        for st in chart.states() {
            let s = st.id();
            if let Some(init) = st.initial() {
                let attrs = if init.actions().is_empty() {
                    Vec::new()
                } else {
                    vec![format!(
                        "label={}",
                        label(&[format!("/ {}", actions_label(chart, self.names, init.actions()))])
                    )]
                };
                for t in init.targets() {
                    self.edge(out, self.initial_node(s), None, *t, attrs.clone());
                }
            }
            if let (StateKind::History { .. }, Some(default)) = (st.kind(), st.history_default()) {
                let mut attrs = vec!["style=dashed".to_owned()];
                if !default.actions().is_empty() {
                    let text = format!("/ {}", actions_label(chart, self.names, default.actions()));
                    attrs.push(format!("label={}", label(&[text])));
                }
                for t in default.targets() {
                    self.edge(out, quote(st.path()), Some(s), *t, attrs.clone());
                }
            }
            for t in chart.transitions_of(s) {
                let text = label(&[transition_label(chart, self.names, t)]);
                if t.targets().is_empty() {
                    let a = self.anchor(s);
                    let _ = writeln!(out, "    {a} -> {a} [label={text}];");
                }
                for target in t.targets() {
                    self.edge(out, self.anchor(s), Some(s), *target, vec![format!("label={text}")]);
                }
            }
        }
    }
}
