//! The `machine!` macro: parse (`ast`) → check (`valid`, then `chart`: the statechart built with
//! `orchestrator_chart::ChartBuilder`) → generate (`expand`).

pub(crate) mod ast;
pub(crate) mod chart;
pub(crate) mod expand;
pub(crate) mod model;
pub(crate) mod names;
pub(crate) mod retry;
pub(crate) mod signals;
pub(crate) mod valid;

use proc_macro2::TokenStream;

use crate::ctxt::{Ctxt, to_compile_errors};

pub(crate) fn run(input: TokenStream) -> TokenStream {
    let decl = match syn::parse2::<ast::MachineDecl>(input) {
        Ok(decl) => decl,
        Err(error) => return to_compile_errors(error),
    };
    let mut cx = Ctxt::default();
    let valid::Checked { mut model, tree_reliable } = valid::check(&mut cx, decl);
    model.fingerprint = chart::validate(&mut cx, &model, tree_reliable);
    match cx.check() {
        Ok(()) => expand::expand(&model),
        Err(error) => {
            // The fallback: the same expansion without the chart, so that the types exist and
            // the user's functions are still checked, and one mistake gives one error.
            model.fingerprint = None;
            let mut out = to_compile_errors(error);
            out.extend(expand::expand(&model));
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use proc_macro2::{TokenStream, TokenTree};

    /// The messages of the `compile_error!`s `machine!` expands `input` to.
    pub(super) fn errors(input: &str) -> Vec<String> {
        let input: TokenStream = input.parse().expect("test input tokenizes");
        let mut out = Vec::new();
        collect(super::run(input), &mut out);
        out
    }

    fn collect(tokens: TokenStream, out: &mut Vec<String>) {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        for (i, t) in tokens.iter().enumerate() {
            match t {
                TokenTree::Ident(id) if id == "compile_error" => {
                    if let Some(TokenTree::Group(g)) = tokens.get(i + 2) {
                        let lit: syn::LitStr = syn::parse2(g.stream()).expect("a message");
                        out.push(lit.value());
                    }
                }
                TokenTree::Group(g) => collect(g.stream(), out),
                _ => {}
            }
        }
    }

    fn machine(states: &str) -> String {
        format!("pub machine M {{ contract: C, services: {{ svc: S }}, output: f, states: {{ {states} }} }}")
    }

    fn one_error(states: &str, expected: &str) {
        let errs = errors(&machine(states));
        assert_eq!(errs.len(), 1, "{errs:#?}");
        assert!(errs[0].contains(expected), "expected {expected:?} in {:?}", errs[0]);
    }

    #[test]
    fn a_valid_machine_has_no_errors() {
        let errs = errors(&machine(
            r#"a: { on: { svc::P => b, svc::error => c, "x.*" => { target: [p.r1.y, p.r2], guard: in(a) } } },
               b: { after: { 10 => c }, always: { target: c, guard: g }, entry: [raise("e"), send("f", delay = 5, id = "i"), cancel("i")] },
               p: { type: parallel, states: { r1: { states: { x: {}, y: {} } }, r2: {} }, on_done: c },
               c: { type: final }"#,
        ));
        assert!(errs.is_empty(), "{errs:#?}");
    }

    #[test]
    fn chart_errors_are_mapped() {
        one_error("a: { on: { \"t\" => { target: [a, b] } } }, b: {}", "cannot be active together");
        one_error(
            "a: { initial: [b], states: { x: {} } }, b: { on: { \"t\" => a } }",
            "not one of its descendants",
        );
        one_error(
            "a: { states: { x: {}, h: { type: history, target: b } } }, b: { on: { \"t\" => a.h } }",
            "outside its parent",
        );
        one_error(
            "a: { initial: [a.h], states: { x: {}, h: { type: history } } }",
            "needs a default `target`",
        );
        one_error("a: { initial: x }, b: { on: { \"t\" => a } }", "`initial` is not allowed on atomic");
        one_error(
            "a: { on: { \"t\" => { target: a, guard: not_in(zz) } } }",
            "unknown state `zz` in a guard",
        );
        one_error("a: { on: { \"a*\" => a } }", "invalid event name");
        one_error("a: { type: parallel }", "has no regions");
    }

    #[test]
    fn every_chart_error_is_reported_once() {
        let errs = errors(&machine(
            r#"a: { on: { "t" => zz, "u" => { target: [a, b] }, "v" => yy }, initial: [q] , states: { x: {} } },
               b: { on: { "w" => { target: a, guard: in(nowhere) } } }"#,
        ));
        assert_eq!(errs.len(), 5, "{errs:#?}");
        for expected in ["`zz`", "cannot be active together", "`yy`", "`q`", "`nowhere`"] {
            assert_eq!(errs.iter().filter(|e| e.contains(expected)).count(), 1, "{expected}: {errs:#?}");
        }
    }

    #[test]
    fn macro_checks() {
        one_error("a: { states: {} }", "empty `states` block");
        one_error("a: { on_done: a }", "`on_done` is only meaningful");
        one_error("a: { entry: [raise(\"x.*\")] }", "not a wildcard");
        one_error("a: { entry: [cancel(\"\")] }", "cannot be empty");
        one_error("a: { type: finl }", "did you mean `final`?");
        one_error("a: { type: history }", "outside any compound state");
        one_error("a: { history: deep }", "only allowed on history states");
        one_error("a: { on: { \"t\" => { target: a, guardd: g } } }", "did you mean `guard`?");
        one_error("a: {}, a: {}", "duplicate state `a`");
        one_error(
            "a: { on: { \"t\" => b_c, \"u\" => bC } }, b_c: {}, bC: {}",
            "would both be the variant `BC`",
        );
        one_error("event: { states: { x: {} } }", "already the event enum");
        one_error("a: { on: { nope::P => a } }", "unknown service `nope`");
        one_error("a: { on: { svc::Error => a } }", "clashes with another variant");
    }

    #[test]
    fn machine_level_checks() {
        let errs = errors("pub machine M { states: { a: {} } }");
        assert_eq!(errs.len(), 2, "{errs:#?}");
        assert!(errs[0].contains("missing `contract"));
        assert!(errs[1].contains("missing `output"));
        let errs =
            errors("pub machine M { contract: C, output: f, services: { request: S }, states: { a: {} } }");
        assert!(errs[0].contains("cannot name a service"), "{errs:#?}");
        let errs =
            errors("pub machine M { contract: C, output: f, services: { a: S, b: S }, states: { a: {} } }");
        assert!(errs[0].contains("duplicate service"), "{errs:#?}");
        let errs = errors("pub machine M { version: \"1.0\", contract: C, output: f, states: { a: {} } }");
        assert!(errs[0].contains("semantic version"), "{errs:#?}");
        let errs = errors("pub machine M { contract: C, output: f }");
        assert_eq!(errs, ["machine `M` is missing `states: { ... }`"]);
    }

    #[test]
    fn computed_delays() {
        let errs = errors(&machine(
            "a: { after: { t = |c| d(c) => b, twice => b, 10 => b, |c| d(c) => b } }, b: { after: { t = f => a } }",
        ));
        assert!(errs.is_empty(), "{errs:#?}");
        one_error("a: { after: { t = f => a, t = g => a } }", "duplicate delay `t`");
        one_error("a: { after: { x.y = f => a } }", "the name of a delay is an identifier");
    }

    #[test]
    fn init_takes_one_or_two_parameters() {
        let with = |init: &str| {
            errors(&format!(
                "pub machine M {{ contract: C, init: {init}, output: f, states: {{ a: {{}} }} }}"
            ))
        };
        assert!(with("|i| c(i)").is_empty());
        assert!(with("|i, m| c(i, m)").is_empty());
        assert!(with("make").is_empty());
        for bad in ["|| c()", "|i, m, x| c(i)"] {
            let errs = with(bad);
            assert_eq!(errs.len(), 1, "{errs:#?}");
            assert!(errs[0].contains("`|input, meta| …`"), "{errs:#?}");
        }
    }

    #[test]
    fn unreachable_states_are_reported_once_per_subtree() {
        let errs = errors(&machine("a: {}, b: { states: { x: {}, y: {} } }"));
        assert_eq!(
            errs,
            ["state `b` is unreachable: no initial state, transition target or history default leads to it"]
        );
        // A misspelled key may hide the transition: no unreachable state is reported then.
        let errs = errors(&machine("a: { onn: { \"t\" => b } }, b: {}"));
        assert_eq!(errs.len(), 1, "{errs:#?}");
    }

    #[test]
    fn syntax_errors_are_recovered() {
        let errs =
            errors(&machine("a: { on: { \"t\" => { target: a, reenter: 1 } } }, b: { after: { => a } }"));
        assert_eq!(errs.len(), 2, "{errs:#?}");
    }

    /// The string literals of the generated `fn <name>() -> &'static [&'static str]`.
    fn names_of(expansion: &str, name: &str) -> Vec<String> {
        let start = expansion.find(&format!("fn {name}")).expect("the function is generated");
        let body = &expansion[start..];
        let body = &body[body.find("{ & [").expect("a slice")..];
        let list = &body[..body.find(']').expect("a slice")];
        list.split('"').skip(1).step_by(2).map(str::to_owned).collect()
    }

    #[test]
    fn exported_names_never_hold_source_text() {
        let input = machine(
            r#"a: { entry: [count = |c, _, _| { *c += 1; }, |c, _, _| {
                       let s = "|\"<>;#";
                       c.push_str(s);
                   }, Self::log, r#type = f, crate::util::note::<u8>],
                   on: { "t" => { target: a, guard: |c, _| c.len() > 1 }, "u" => { target: a, guard: in_stock = |c, _| c.is_empty() } } }"#,
        );
        let out = super::run(input.parse().expect("tokens")).to_string();
        assert_eq!(
            names_of(&out, "action_names"),
            ["count", "action1", "Self::log", "type", "crate::util::note"]
        );
        assert_eq!(names_of(&out, "guard_names"), ["guard0", "in_stock"]);
    }

    #[test]
    fn bad_names_are_reported() {
        one_error(r#"a: { entry: ["n" = |_, _, _| {}] }"#, "the name of an action is an identifier");
        one_error(
            r#"a: { on: { "t" => { target: a, guard: a.b = check } } }"#,
            "the name of a guard is an identifier",
        );
        one_error(r#"a: { entry: [n = raise("x")] }"#, "cannot be named");
    }
}
