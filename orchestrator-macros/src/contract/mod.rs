//! The contract macros: parse → check → generate.

pub(crate) mod ast;
pub(crate) mod expand;
pub(crate) mod valid;

use proc_macro2::TokenStream;

use crate::ctxt::{Ctxt, to_compile_errors};

/// Which contract macro is expanding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavor {
    /// `contract!`
    Plain,
    /// `simple_contract!`
    Simple,
    /// `orchestrator_contract!`
    Orchestrator,
}

impl Flavor {
    pub(crate) fn macro_name(self) -> &'static str {
        match self {
            Self::Plain => "contract!",
            Self::Simple => "simple_contract!",
            Self::Orchestrator => "orchestrator_contract!",
        }
    }
}

pub(crate) fn run(input: TokenStream, flavor: Flavor) -> TokenStream {
    let decl = match syn::parse2::<ast::ContractDecl>(input) {
        Ok(decl) => decl,
        Err(error) => return to_compile_errors(error),
    };
    let mut cx = Ctxt::default();
    let model = valid::check(&mut cx, decl, flavor);
    match cx.check() {
        Ok(()) => expand::expand(&model),
        Err(error) => {
            let mut out = to_compile_errors(error);
            out.extend(expand::fallback(&model));
            out
        }
    }
}
