//! Procedural macros of the `orchestrator` crate. Use them through `orchestrator::contract!` etc.
use proc_macro::TokenStream;

/// Placeholder.
#[proc_macro]
pub fn contract(_input: TokenStream) -> TokenStream {
    TokenStream::new()
}
/// Placeholder.
#[proc_macro]
pub fn simple_contract(_input: TokenStream) -> TokenStream {
    TokenStream::new()
}
/// Placeholder.
#[proc_macro]
pub fn orchestrator_contract(_input: TokenStream) -> TokenStream {
    TokenStream::new()
}
