//! Accumulates every error of one macro invocation, so all are reported in one compile.

use proc_macro2::TokenStream;
use quote::ToTokens;
use std::fmt::Display;

/// Collects errors; [`Ctxt::check`] turns them into one combined `syn::Error`.
#[derive(Default)]
pub(crate) struct Ctxt {
    errors: Vec<syn::Error>,
}

impl Ctxt {
    /// Records an error spanned on `tokens`.
    pub(crate) fn error_spanned_by<T: ToTokens, M: Display>(&mut self, tokens: T, message: M) {
        self.errors.push(syn::Error::new_spanned(tokens.into_token_stream(), message));
    }

    /// `Ok` when no error was recorded, else all of them combined.
    pub(crate) fn check(self) -> Result<(), syn::Error> {
        let mut errors = self.errors.into_iter();
        let Some(mut combined) = errors.next() else { return Ok(()) };
        for error in errors {
            combined.combine(error);
        }
        Err(combined)
    }
}

/// Renders errors as `compile_error!` invocations.
pub(crate) fn to_compile_errors(error: syn::Error) -> TokenStream {
    error.to_compile_error()
}
